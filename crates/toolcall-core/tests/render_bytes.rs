//! `render` writes each provider's declarations byte for byte as before its shapes moved to
//! toolcall-wire: key order included (serde_json keeps insertion order here, and value
//! equality ignores it, so the text is compared).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolcall_core::render::{Provider, render};
use toolcall_core::{Registry, ToolSpec};

fn registry() -> Registry {
    let mut r = Registry::new();
    // No `type`: render adds it after the properties.
    r.add_spec(ToolSpec::new(
        "files.read::text",
        "Read a file",
        json!({"properties": {"path": {"type": "string", "format": "uri"},
            "mode": {"enum": [1, 2]}, "ref": {"$ref": "#/$defs/r"}},
            "required": ["path", "ghost"], "additionalProperties": false,
            "$defs": {"r": {"type": ["string", "null"]}}}),
    ))
    .unwrap();
    r.add_spec(ToolSpec::new("screenshot", "", json!({})))
        .unwrap();
    r
}

fn text(p: Provider) -> String {
    render(&registry(), p).0.to_string()
}

#[test]
fn each_provider_renders_the_same_bytes() {
    let params = r##"{"properties":{"path":{"type":"string","format":"uri"},"mode":{"enum":[1,2]},"ref":{"$ref":"#/$defs/r"}},"required":["path","ghost"],"additionalProperties":false,"$defs":{"r":{"type":["string","null"]}},"type":"object"}"##;
    let empty = r#"{"type":"object","properties":{}}"#;
    let name = "files_read__text";
    assert_eq!(
        text(Provider::OPENAI_CHAT),
        format!(
            r#"[{{"type":"function","function":{{"name":"{name}","description":"Read a file","parameters":{params}}}}},{{"type":"function","function":{{"name":"screenshot","description":"","parameters":{empty}}}}}]"#
        )
    );
    assert_eq!(
        text("responses".parse::<Provider>().unwrap()),
        format!(
            r#"[{{"type":"function","name":"{name}","description":"Read a file","parameters":{params}}},{{"type":"function","name":"screenshot","description":"","parameters":{empty}}}]"#
        )
    );
    assert_eq!(
        text("anthropic".parse::<Provider>().unwrap()),
        format!(
            r#"[{{"name":"{name}","description":"Read a file","input_schema":{params}}},{{"name":"screenshot","description":"","input_schema":{empty}}}]"#
        )
    );
    // Gemini gets the same object schema as the others (a missing `type` added first), so its
    // `type` now leads; only the key order differs from the bytes it had before.
    assert_eq!(
        text("gemini".parse::<Provider>().unwrap()),
        format!(
            r#"{{"functionDeclarations":[{{"name":"{name}","description":"Read a file","parameters":{{"type":"object","required":["path"],"properties":{{"path":{{"type":"string"}},"mode":{{"description":"One of: 1, 2."}},"ref":{{"nullable":true,"type":"string"}}}}}}}},{{"name":"screenshot","description":""}}]}}"#
        )
    );
}
