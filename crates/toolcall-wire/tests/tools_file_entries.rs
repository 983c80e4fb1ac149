//! A tools file's entries are read by the dialect whose declaration shape they are: one tool
//! declared in each registered dialect's own shape reads back as the same flat declaration.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolcall_wire::chat::ChatTool;
use toolcall_wire::{anthropic, chat, gemini, responses, tools_file_entry};

fn flat(entry: Value) -> Vec<Map<String, Value>> {
    let entry = entry.as_object().unwrap().clone();
    tools_file_entry(&entry)
        .unwrap_or_else(|| panic!("no dialect reads {entry:?}"))
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn one_tool_in_every_dialects_shape_reads_back_the_same() {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string"}},
        "required": ["q"]});
    let tool = ChatTool::function("search", Some("Search".into()), schema.clone());
    let want = json!({"name": "search", "description": "Search", "parameters": schema});
    for (shape, entry) in [
        ("chat", chat::tool_declaration(&tool)),
        ("responses", responses::tool_declaration(&tool)),
        ("anthropic", anthropic::tool_declaration(&tool)),
        (
            "gemini",
            gemini::function_declarations(std::slice::from_ref(&tool)),
        ),
    ] {
        let read = flat(entry.clone());
        assert_eq!(read.len(), 1, "{shape}: {entry}");
        let mut got = read[0].clone();
        got.remove("strict");
        assert_eq!(Value::Object(got), want, "{shape}: {entry}");
    }
}

#[test]
fn gemini_declarations_take_their_json_schema_or_their_openapi_types_lower_cased() {
    let read = flat(json!({"functionDeclarations": [
        {"name": "a", "parameters": {"type": "OBJECT", "properties": {
            "type": {"type": "STRING"}}}},
        {"name": "b", "parametersJsonSchema": {"type": "object", "properties": {
            "n": {"type": "integer"}}}}]}));
    assert_eq!(read.len(), 2);
    assert_eq!(
        read[0]["parameters"],
        json!({"type": "object", "properties": {"type": {"type": "string"}}})
    );
    assert_eq!(
        read[1]["parameters"],
        json!({"type": "object", "properties": {"n": {"type": "integer"}}})
    );
    assert!(!read[1].contains_key("parametersJsonSchema"));
    // A declaration that is no object is refused on its own.
    let entry = json!({"functionDeclarations": [{"name": "a"}, 7]});
    let read = tools_file_entry(entry.as_object().unwrap()).unwrap();
    assert!(read[0].is_ok() && read[1].is_err(), "{read:?}");
}

#[test]
fn the_own_format_and_other_kinds_are_no_dialects_declarations() {
    for entry in [
        json!({"name": "own", "parameters": {"type": "object"}, "enabled": false}),
        json!({"type": "web_search"}),
        json!({"type": "custom", "name": "apply_patch"}),
    ] {
        assert!(
            tools_file_entry(entry.as_object().unwrap()).is_none(),
            "{entry}"
        );
    }
}
