//! `set_attribute`: create or change a narrative attribute of a player, object or location.

use serde_json::{Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{EntityKind, MAX_ATTRIBUTES, World, str_arg};

pub struct SetAttribute;

pub(crate) fn entity_schema() -> Value {
    json!({"type": "string", "enum": ["player", "object", "location"]})
}

impl StateTool<World> for SetAttribute {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "set_attribute",
            "Set a narrative attribute (any name, a short description as value) on a player, object or location.",
            json!({
                "type": "object",
                "properties": {
                    "entityType": entity_schema(),
                    "entityId": {"type": "string"},
                    "attributeName": {"type": "string", "description": "e.g. health, condition, mood"},
                    "value": {"type": "string", "description": "a short description, e.g. \"wounded in the shoulder\""}
                },
                "required": ["entityType", "entityId", "attributeName", "value"]
            }),
        )
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(true),
        })
    }

    fn apply(&self, w: &mut World, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let kind = EntityKind::parse(str_arg(&args, "entityType")?)?;
        let id = str_arg(&args, "entityId")?;
        let name = str_arg(&args, "attributeName")?;
        let value = str_arg(&args, "value")?;
        let entity = w.describe(id);
        let Some(attributes) = w.attributes_mut(kind, id) else {
            return Err(ToolError::failed(format!(
                "{} \"{id}\" not found",
                kind.as_str()
            )));
        };
        if !attributes.contains_key(name) && attributes.len() >= MAX_ATTRIBUTES {
            return Err(ToolError::failed(format!(
                "{entity} already has {MAX_ATTRIBUTES} attributes; delete one first"
            )));
        }
        let old = attributes.insert(name.to_owned(), Value::String(value.to_owned()));
        let sentence = match old {
            Some(Value::String(old)) => {
                format!("{entity}: {name} changed from \"{old}\" to \"{value}\".")
            }
            Some(old) => format!("{entity}: {name} changed from {old} to \"{value}\"."),
            None => format!("{entity}: {name} set to \"{value}\"."),
        };
        Ok(json!(capitalise(&sentence)).into())
    }
}

pub(crate) fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
