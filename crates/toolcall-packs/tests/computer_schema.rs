//! The `computer_use` schema is a valid JSON Schema that accepts every call of the computer-use app and
//! of the widely used computer-use definition, and rejects malformed shapes before the tool
//! runs (V-1).
#![cfg(feature = "computer")]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use toolcall_packs::{PackConfig, load_pack};

fn validator() -> jsonschema::Validator {
    let pack = load_pack("computer", &PackConfig::default()).unwrap();
    let spec = pack.registry.spec("computer_use").unwrap().clone();
    jsonschema::validator_for(&spec.parameters).unwrap()
}

// covers P-CU, V-1
#[test]
fn seed_000_calls_validate() {
    let v = validator();
    let seed: Vec<Value> = vec![
        json!({"action": "screenshot"}),
        json!({"action": "left_click", "coordinate": [512, 384]}),
        json!({"action": "double_click", "coordinate": [512, 384]}),
        json!({"action": "right_click", "coordinate": [512, 384]}),
        json!({"action": "mouse_move", "coordinate": [100, 200]}),
        json!({"action": "type", "text": "Hello World"}),
        json!({"action": "key", "text": "enter"}),
        json!({"action": "scroll", "delta_y": 100}),
        json!({"action": "left_click_drag", "start_coordinate": [100, 200], "coordinate": [300, 400]}),
        json!({"action": "wait", "duration": 1}),
        // The widely used extras.
        json!({"action": "triple_click", "coordinate": [1, 2]}),
        json!({"action": "middle_click"}),
        json!({"action": "cursor_position"}),
        json!({"action": "left_mouse_down"}),
        json!({"action": "left_mouse_up"}),
        json!({"action": "hold_key", "text": "shift", "duration": 0.5}),
        json!({"action": "scroll", "coordinate": [5, 5], "scroll_direction": "down", "scroll_amount": 3}),
        json!({"action": "left_click", "coordinate": [5, 5], "text": "shift"}),
    ];
    for args in seed {
        assert!(v.is_valid(&args), "{args} rejected");
    }
}

// covers P-CU, V-1, R-6
#[test]
fn malformed_shapes_are_rejected_by_the_schema() {
    let v = validator();
    for args in [
        json!({}),
        json!({"action": "fly"}),
        json!({"action": "left_click", "coordinate": [1, 2, 3]}),
        json!({"action": "left_click", "coordinate": [1]}),
        json!({"action": "left_click", "coordinate": [1.5, 2]}),
        json!({"action": "left_click", "coordinate": "1,2"}),
        json!({"action": "scroll", "scroll_direction": "sideways"}),
        json!({"action": "type", "text": 5}),
        json!({"action": "wait", "duration": "1"}),
    ] {
        assert!(!v.is_valid(&args), "{args} accepted");
    }
}
