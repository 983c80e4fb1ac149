//! `delete_object`: remove an object; what it held moves to its holder.

use serde_json::{Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{World, str_arg};

pub struct DeleteObject;

impl StateTool<World> for DeleteObject {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "delete_object",
            "Delete an object from the world; objects inside it move to whoever held it.",
            json!({
                "type": "object",
                "properties": {
                    "objectId": {"type": "string", "description": "id of the object to delete"}
                },
                "required": ["objectId"]
            }),
        )
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(true),
        })
    }

    fn apply(&self, w: &mut World, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let id = str_arg(&args, "objectId")?;
        let Some(pos) = w.objects.iter().position(|o| o.id == id) else {
            return Err(ToolError::failed(format!("object \"{id}\" not found")));
        };
        let removed = w.objects.remove(pos);
        let parent = w.describe(&removed.holder);
        let mut moved = Vec::new();
        for o in w.objects.iter_mut().filter(|o| o.holder == removed.id) {
            o.holder = removed.holder.clone();
            moved.push(o.name.clone());
        }
        let mut sentence = format!("Object \"{}\" deleted.", removed.name);
        if !moved.is_empty() {
            let list: Vec<String> = moved.iter().map(|n| format!("\"{n}\"")).collect();
            sentence.push_str(&format!(
                " Its contents ({}) moved to {parent}.",
                list.join(", ")
            ));
        }
        Ok(json!(sentence).into())
    }
}
