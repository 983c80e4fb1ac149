//! The text-adventure world pack's moves as a model writes them (Hermes `<tool_call>`
//! markup), for the tests that drive sessions through the gateway: one copy instead of one
//! per test file.

use serde_json::{Value, json};

/// A call as a Hermes-family model writes it.
pub fn tool_call(name: &str, arguments: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// Jack (`char_001`) walks to `place`.
pub fn move_to(place: &str) -> String {
    tool_call(
        "move_player",
        json!({"playerId": "char_001", "targetLocationId": place}),
    )
}

/// The chest (`obj_chest`) is opened.
pub fn open_chest() -> String {
    tool_call(
        "set_attribute",
        json!({"entityType": "object", "entityId": "obj_chest",
               "attributeName": "condition", "value": "open"}),
    )
}
