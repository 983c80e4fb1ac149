//! A JSON value that breaks at a bracket behind an opener with no closing marker
//! (granite-20b-fc's `<function_call>`, Inkling's `<|content_invoke_tool_json|>`): the
//! broken region ends at the bad byte, not one byte past it, which depended on whether the
//! next byte had arrived yet; one-shot and streamed must agree for every split.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use serde_json::json;
use toolcall_core::{Level, Parsed, Registry, ToolSpec};
use toolcall_parse::{ParseOptions, parse};

fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    for (name, props) in [
        ("echo", json!({"text": {"type": "string"}})),
        ("get_time", json!({})),
        (
            "get_weather",
            json!({"city": {"type": "string"}, "days": {"type": "integer"}}),
        ),
    ] {
        let _ = r.add_spec(ToolSpec::new(
            name,
            "",
            json!({"type": "object", "properties": props}),
        ));
    }
    Arc::new(r)
}

fn run(data: &[u8]) {
    let (&opts, rest) = data.split_first().unwrap();
    let (&n, rest) = rest.split_first().unwrap();
    let n = usize::from(n % 16).min(rest.len());
    let (cuts, body) = rest.split_at(n);
    let text = String::from_utf8_lossy(body);
    let options = ParseOptions {
        tools: (opts & 1 == 1).then(registry),
        starts_in_reasoning: opts & 2 == 2,
        ..ParseOptions::default()
    };
    let whole = parse(&text, &options);
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut at = text.len() * usize::from(*c) / 255;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    points.sort_unstable();

    let mut chunks = Vec::new();
    let mut from = 0;
    for at in points.into_iter().chain([text.len()]) {
        chunks.push(&text[from..at]);
        from = at;
    }
    let split = common::streamed(&chunks, &options);
    let errors = |p: &Parsed| {
        p.diagnostics
            .iter()
            .filter(|d| d.level == Level::Error)
            .count()
    };
    assert_eq!(whole.calls.len(), split.calls.len());
    assert_eq!(whole.text, split.text);
    assert_eq!(
        errors(&whole),
        errors(&split),
        "whole {:#?}\nsplit {:#?}",
        whole.diagnostics,
        split.diagnostics
    );
}

#[test]
fn fuzz_mk2_split_agrees_with_one_shot() {
    run(MK2);
}

/// Fuzz input (stream_equals_whole) mk2: options, split points, then the text.
const MK2: &[u8] = &[
    0x61, 0x79, 0x22, 0x40, 0x20, 0x22, 0x50, 0x61, 0x72, 0x69, 0x73, 0x22, 0x7d, 0x7d, 0x20, 0x3c,
    0x66, 0x75, 0x6e, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x5f, 0x63, 0x61, 0x6c, 0x6c, 0x3e, 0x20, 0x7b,
    0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x6d,
    0x65, 0x22, 0x2c, 0x20, 0x22, 0x61, 0x72, 0x67, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb4,
    0xff, 0xff, 0xff, 0x3a, 0x20, 0x00, 0x01, 0x1b, 0x78, 0x60, 0x60, 0x5d, 0x65, 0x63, 0x68, 0x6f,
    0x28, 0x74, 0x65, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x78, 0x74, 0x3d, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x2c, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45, 0x45,
    0x45, 0x45, 0x45, 0x29,
];

/// One-shot against two pushes cut at every char boundary, calls, text and every
/// diagnostic (spans included).
fn every_split(text: &str, o: &ParseOptions) {
    let whole = common::found(&parse(text, o));
    for (at, _) in text.char_indices().skip(1) {
        let s = common::streamed(&[&text[..at], &text[at..]], o);
        assert_eq!(common::found(&s), whole, "split at {at} of {text:?}");
    }
}

#[test]
fn a_json_broken_at_a_bracket_ends_there_at_every_split() {
    let tools = ParseOptions {
        tools: Some(registry()),
        ..ParseOptions::default()
    };
    for o in [&ParseOptions::default(), &tools] {
        for text in [
            r#"<function_call> {"name": "echo", "arguments": {"text": "x"]echo(text="y")"#,
            r#"<function_call> {"name": "echo"]é tail"#,
            r#"a <function_call> {"name": "x", "args"}]``]echo(text=E) rest"#,
            r#"<|message_model|>echo<|content_invoke_tool_json|>{"name": "echo", "args": {"text": "x"]echo(text="y")"#,
            r#"<|message_model|>echo<|content_invoke_tool_json|>{"name": "echo"]é tail"#,
        ] {
            every_split(text, o);
        }
    }
}
