//! `move_object`: give an object to a player, put it in a location or inside another object.

use serde_json::{Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{World, str_arg};

pub struct MoveObject;

impl StateTool<World> for MoveObject {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "move_object",
            "Move an object to a player (they carry it), into a location, or inside another object.",
            json!({
                "type": "object",
                "properties": {
                    "objectId": {"type": "string", "description": "id of the object to move"},
                    "targetId": {"type": "string", "description": "id of the player, location or object that will hold it"}
                },
                "required": ["objectId", "targetId"]
            }),
        )
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(true),
        })
    }

    fn apply(&self, w: &mut World, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let object_id = str_arg(&args, "objectId")?;
        let target_id = str_arg(&args, "targetId")?;
        let Some(obj) = w.object(object_id) else {
            return Err(ToolError::failed(format!(
                "object \"{object_id}\" not found"
            )));
        };
        let obj_name = obj.name.clone();
        let Some(kind) = w.kind_of(target_id) else {
            return Err(ToolError::failed(format!(
                "target \"{target_id}\" not found (no player, location or object has this id)"
            )));
        };
        if object_id == target_id {
            return Err(ToolError::failed(format!(
                "object \"{obj_name}\" cannot be moved into itself"
            )));
        }
        if w.holder_chain_reaches(target_id, object_id) {
            return Err(ToolError::failed(format!(
                "object \"{obj_name}\" cannot be moved into {}, which is inside it",
                w.describe(target_id)
            )));
        }
        if obj.holder == target_id {
            return Err(ToolError::failed(format!(
                "object \"{obj_name}\" is already held by {}",
                w.describe(target_id)
            )));
        }
        let target = w.describe(target_id);
        if let Some(o) = w.objects.iter_mut().find(|o| o.id == object_id) {
            o.holder = target_id.to_owned();
        }
        let sentence = match kind {
            super::EntityKind::Player => format!("Object \"{obj_name}\" given to {target}."),
            super::EntityKind::Location => format!("Object \"{obj_name}\" placed in {target}."),
            super::EntityKind::Object => format!("Object \"{obj_name}\" put inside {target}."),
        };
        Ok(json!(sentence).into())
    }
}
