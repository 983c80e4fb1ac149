//! `delete_attribute`: remove an attribute that no longer applies.

use serde_json::{Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::set_attribute::{capitalise, entity_schema};
use super::{EntityKind, World, str_arg};

pub struct DeleteAttribute;

impl StateTool<World> for DeleteAttribute {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "delete_attribute",
            "Delete an attribute of a player, object or location when it no longer applies (e.g. a poison wore off).",
            json!({
                "type": "object",
                "properties": {
                    "entityType": entity_schema(),
                    "entityId": {"type": "string"},
                    "attributeName": {"type": "string"}
                },
                "required": ["entityType", "entityId", "attributeName"]
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
        let entity = w.describe(id);
        let Some(attributes) = w.attributes_mut(kind, id) else {
            return Err(ToolError::failed(format!(
                "{} \"{id}\" not found",
                kind.as_str()
            )));
        };
        if attributes.shift_remove(name).is_none() {
            return Err(ToolError::failed(format!(
                "{entity} has no attribute \"{name}\""
            )));
        }
        Ok(json!(capitalise(&format!(
            "{entity}: attribute \"{name}\" deleted."
        )))
        .into())
    }
}
