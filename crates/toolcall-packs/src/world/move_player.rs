//! `move_player`: move a player along a link from their current location.

use serde_json::{Value, json};
use toolcall_core::{StateTool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{LinkKind, World, str_arg};

pub struct MovePlayer;

impl StateTool<World> for MovePlayer {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "move_player",
            "Move a player to a location linked to where they are now.",
            json!({
                "type": "object",
                "properties": {
                    "playerId": {"type": "string", "description": "id of the player"},
                    "targetLocationId": {"type": "string", "description": "id of a location linked to the player's current one"}
                },
                "required": ["playerId", "targetLocationId"]
            }),
        )
        .with_annotations(ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(true),
        })
    }

    fn apply(&self, w: &mut World, _: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let player_id = str_arg(&args, "playerId")?;
        let target_id = str_arg(&args, "targetLocationId")?;
        let Some(player) = w.player(player_id) else {
            return Err(ToolError::failed(format!(
                "player \"{player_id}\" not found"
            )));
        };
        let Some(target) = w.location(target_id) else {
            return Err(ToolError::failed(format!(
                "location \"{target_id}\" not found"
            )));
        };
        let Some(current) = w.location(&player.location) else {
            return Err(ToolError::failed(format!(
                "player \"{}\" is in unknown location \"{}\"",
                player.name, player.location
            )));
        };
        if current.id == target.id {
            return Err(ToolError::failed(format!(
                "player \"{}\" is already in location \"{}\"",
                player.name, target.name
            )));
        }
        // An `out` link leads only from its own location; a `bidirectional` one from either end.
        let linked = current.links.iter().any(|l| l.to == target.id)
            || target
                .links
                .iter()
                .any(|l| l.to == current.id && l.kind == LinkKind::Bidirectional);
        if !linked {
            return Err(ToolError::failed(format!(
                "no way leads from location \"{}\" to location \"{}\"",
                current.name, target.name
            )));
        }
        let sentence = format!(
            "Player \"{}\" moved from location \"{}\" to location \"{}\".",
            player.name, current.name, target.name
        );
        if let Some(p) = w.players.iter_mut().find(|p| p.id == player_id) {
            p.location = target_id.to_owned();
        }
        Ok(json!(sentence).into())
    }
}
