//! O-2 meets the parser: every worked example the system-prompt renderer teaches a model
//! (for every text format and several kinds of tools) parses back to exactly that call.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// covers O-2, F-AUTO-1
use serde_json::json;
use std::sync::Arc;
use toolcall_core::render::prompt::example_arguments;
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{
    FormatId, FormatSelection, ParseOptions, example_call, parse, render_prompt, text_formats,
};

fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_spec(ToolSpec::new(
        "computer_use",
        "Use the computer",
        json!({
        "type":"object","properties":{
            "action":{"type":"string","enum":["left_click","screenshot"]},
            "coordinate":{"type":"array","items":{"type":"integer"},"minItems":2},
            "text":{"type":"string"},
            "hold":{"type":"boolean"}
        },"required":["action","coordinate","hold"]}),
    ))
    .unwrap();
    r.add_spec(ToolSpec::new(
        "vista.command.start_workflow::triage",
        "Triage",
        json!({
        "type":"object","properties":{"patient_id":{"type":"string"},"priority":{"type":"integer"}},
        "required":["patient_id","priority"]}),
    ))
    .unwrap();
    r.add_spec(ToolSpec::new("highlight_object", "hl", json!({
        "type":"object","properties":{"object":{"type":"string","examples":["cup"]}},"required":["object"]}))).unwrap();
    // Values a text syntax could misread: strings that look like numbers, booleans or null,
    // Unicode and quotes, and nested objects and arrays.
    r.add_spec(ToolSpec::new(
        "file_order",
        "File an order",
        json!({
        "type":"object","properties":{
            "zip":{"type":"string","examples":["02139"]},
            "amount":{"type":"string","examples":["12.50"]},
            "flag":{"type":"string","examples":["true"]},
            "nothing":{"type":"string","examples":["null"]},
            "city":{"type":"string","examples":["Zürich – 東京 ✓ \"quoted\""]},
            "count":{"type":"integer","examples":[3]},
            "ratio":{"type":"number","examples":[-0.25]},
            "shipping":{"type":"object","examples":[{"address":{"lines":["1 Main St", "Apt \"B\""],"code":"007"},"express":false,"notes":null}]},
            "items":{"type":"array","examples":[[{"sku":"A-1","qty":2},{"sku":"ß","qty":0}]]}
        },"required":["zip","amount","flag","nothing","city","count","ratio","shipping","items"]}),
    ))
    .unwrap();
    r.add_spec(ToolSpec::new(
        "get_time",
        "Current time",
        json!({"type":"object","properties":{}}),
    ))
    .unwrap();
    r
}

/// Families without text-mode instructions, and why: native provider JSON shapes (read from
/// API bodies, never written in text), the opt-in fallback reader, and Llama 3's built-in
/// tools (its template writes custom tools in the `llama` JSON syntax, which is taught).
const NOT_TEXT_FORMATS: &[&str] = &[
    "openai_chat",
    "responses",
    "gemini",
    "anthropic",
    "fallback",
    "llama3_builtin",
];

#[test]
fn every_family_with_a_text_syntax_teaches_it() {
    let text = text_formats();
    let missing: Vec<&str> = FormatId::all()
        .filter(|f| !text.contains(f) && !NOT_TEXT_FORMATS.contains(&f.as_str()))
        .map(|f| f.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "families without instructions/example: {missing:?}"
    );
    let stale: Vec<&&str> = NOT_TEXT_FORMATS
        .iter()
        .filter(|id| text.iter().any(|f| f.as_str() == **id))
        .collect();
    assert!(stale.is_empty(), "exempt but teachable: {stale:?}");
    for id in NOT_TEXT_FORMATS {
        assert!(
            FormatId::all().any(|f| f.as_str() == *id),
            "unknown family {id}"
        );
    }
}

#[test]
fn every_prompt_example_parses_back() {
    let r = registry();
    let reg = Arc::new(r.clone());
    let mut failures = vec![];
    let formats = text_formats();
    assert!(formats.len() >= 9, "{formats:?}");
    for f in formats {
        assert!(render_prompt(&r, f).unwrap().contains("## Example"), "{f}");
        for spec in r.enabled_specs() {
            let args = example_arguments(&spec.parameters);
            let text = example_call(f, &spec.name, &args).unwrap();
            for (mode, sel) in [
                ("only", FormatSelection::Only(f.as_str().to_owned())),
                ("auto", FormatSelection::Auto),
            ] {
                let opts = ParseOptions {
                    format: sel,
                    tools: Some(reg.clone()),
                    ..Default::default()
                };
                let p = parse(&text, &opts);
                let ok = p.calls.len() == 1
                    && p.calls[0].name == spec.name
                    && p.calls[0].arguments == serde_json::Value::Object(args.clone());
                if !ok {
                    failures.push(format!(
                        "{f} [{mode}] {}:\n  text: {text}\n  calls: {:?}\n  diags: {:?}",
                        spec.name,
                        p.calls
                            .iter()
                            .map(|c| (&c.name, &c.arguments, &c.origin.format))
                            .collect::<Vec<_>>(),
                        p.diagnostics
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn hard_values_reach_the_examples() {
    // The round trip above only proves something if the synthesised arguments really carry
    // the misreadable values.
    let r = registry();
    let spec = r.enabled_specs().find(|s| s.name == "file_order").unwrap();
    let args = example_arguments(&spec.parameters);
    assert_eq!(args["zip"], json!("02139"));
    assert_eq!(args["flag"], json!("true"));
    assert_eq!(args["nothing"], json!("null"));
    assert!(args["shipping"]["address"]["lines"].is_array());
    let time = r.enabled_specs().find(|s| s.name == "get_time").unwrap();
    assert!(example_arguments(&time.parameters).is_empty());
}
