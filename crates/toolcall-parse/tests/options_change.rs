//! Parses one after another on one thread with options that differ in one field each: every
//! parse reads its own options (a parse keeps the last options' resolved context for the
//! next one with the same options, and must never serve it to other options).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::json;
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{FallbackRule, FormatSelection, Limits, ParseOptions, parse};

fn registry(names: &[&str]) -> Arc<Registry> {
    let mut r = Registry::new();
    for n in names {
        r.add_spec(ToolSpec::new(*n, "", json!({"type": "object"})))
            .unwrap();
    }
    Arc::new(r)
}

fn names(text: &str, o: &ParseOptions) -> Vec<String> {
    parse(text, o).calls.into_iter().map(|c| c.name).collect()
}

#[test]
fn each_parse_reads_its_own_registry_limits_and_formats() {
    let two = r#"[{"name":"a","arguments":{}},{"name":"b","arguments":{}}]"#;
    let a = r#"{"name":"a","arguments":{}}"#;
    let with = |tools: Arc<Registry>| ParseOptions {
        format: FormatSelection::Only("json".into()),
        tools: Some(tools),
        ..ParseOptions::default()
    };
    let ab = with(registry(&["a", "b"]));
    let b = with(registry(&["b"]));
    // Twice each way: the second parse of the same options takes the kept context.
    for _ in 0..2 {
        assert_eq!(names(a, &ab), ["a"]);
        assert_eq!(names(a, &ab), ["a"]);
        assert!(names(a, &b).is_empty());
        // An equal registry in another `Arc` is read as itself, with the same result.
        assert_eq!(names(a, &with(registry(&["a"]))), ["a"]);
    }
    let one_call = ParseOptions {
        limits: Limits {
            max_calls: 1,
            ..Limits::default()
        },
        ..ab.clone()
    };
    assert_eq!(names(two, &one_call), ["a"]);
    assert_eq!(names(two, &ab), ["a", "b"]);
    // Another format: mistral needs its marker, json reads the bare list.
    let mistral = ParseOptions {
        format: FormatSelection::Only("mistral".into()),
        ..ab.clone()
    };
    assert!(names(two, &mistral).is_empty());
    assert_eq!(names(&format!("[TOOL_CALLS]{two}"), &mistral), ["a", "b"]);
    assert_eq!(names(two, &ab), ["a", "b"]);
    let priority = ParseOptions {
        format: FormatSelection::Priority(vec!["mistral".into(), "json".into()]),
        ..ab.clone()
    };
    assert_eq!(names(two, &priority), ["a", "b"]);
    assert!(names(two, &mistral).is_empty());
}

#[test]
fn each_parse_reads_its_own_reasoning_options_and_fallbacks() {
    let o = ParseOptions {
        format: FormatSelection::Only("hermes".into()),
        ..ParseOptions::default()
    };
    let call = r#"<tool_call>{"name":"a","arguments":{}}</tool_call>"#;
    let text = format!("thinking</think>{call}");
    let inside = ParseOptions {
        starts_in_reasoning: true,
        ..o.clone()
    };
    for _ in 0..2 {
        assert_eq!(names(&text, &o), ["a"]);
        assert_eq!(parse(&text, &o).text, "thinking");
        assert_eq!(parse(&text, &inside).reasoning, ["thinking"]);
        assert_eq!(parse(&text, &inside).text, "");
        assert_eq!(names(&text, &inside), ["a"]);
    }
    let only_reasoning = ParseOptions {
        reasoning_only: true,
        ..o.clone()
    };
    assert!(names(call, &only_reasoning).is_empty());
    assert_eq!(names(call, &o), ["a"]);
    // Fallback rules apply to the parse given them, never to the next one.
    let rules = r#"[{"tool": "highlight_object", "rule": "intent", "argument": "object"}]"#;
    let fallbacks: Vec<FallbackRule> = toolcall_parse::load_fallback_rules(rules).unwrap();
    let with_rules = ParseOptions {
        format: FormatSelection::Auto,
        fallbacks,
        ..ParseOptions::default()
    };
    let auto = ParseOptions::default();
    let reply = "Highlighting the red cup now.";
    for _ in 0..2 {
        assert_eq!(names(reply, &with_rules), ["highlight_object"]);
        assert!(names(reply, &auto).is_empty());
    }
}
