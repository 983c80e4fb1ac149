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
    FormatSelection, ParseOptions, example_call, parse, render_prompt, text_formats,
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
    r
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
