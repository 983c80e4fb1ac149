//! Calls as real model servers deliver them (issue #21, issue #20's truncated envelope), for
//! the families without a fixture directory (Hermes, the bare Python list, the `tools`
//! envelope) and for shapes that cross families: end tokens stripped by the server (how
//! the reply ended decides), a broken call among good siblings, a closing marker inside a
//! JSON string. Every case is parsed one-shot, one character at a time and at random
//! chunkings, and each run must match the case.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{chars, chunk, family_registry};

use proptest::prelude::*;
use serde_json::{Value, json};

use toolcall_core::{Level, StreamEvent};
use toolcall_parse::{FormatSelection, ParseOptions, ReplyEnd, StreamParser, parse};

struct Case {
    name: &'static str,
    /// `auto` or one format id.
    format: &'static str,
    end: ReplyEnd,
    output: &'static str,
    /// `[{"name", "arguments"}]` in order.
    calls: Value,
    /// The most severe diagnostic other than info.
    worst: &'static str,
    /// The visible text, when the case pins it.
    text: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        // End tokens stripped by the server.
        Case {
            name: "hermes_unclosed_after_stop",
            format: "hermes",
            end: ReplyEnd::Stopped,
            output: r#"<tool_call>{"name": "get_time", "arguments": {}}"#,
            calls: json!([{"name": "get_time", "arguments": {}}]),
            worst: "none",
            text: Some(""),
        },
        Case {
            name: "hermes_unclosed_after_a_cut",
            format: "auto",
            end: ReplyEnd::Cut,
            output: r#"<tool_call>{"name": "get_time", "arguments": {}}"#,
            calls: json!([]),
            worst: "error",
            text: Some(r#"<tool_call>{"name": "get_time", "arguments": {}}"#),
        },
        // A closing marker inside a JSON string does not end the call.
        Case {
            name: "hermes_closing_tag_inside_a_string",
            format: "auto",
            end: ReplyEnd::Unknown,
            output: r#"Looking. <tool_call>{"name": "search", "arguments": {"query": "what does </tool_call> mean \"here\""}}</tool_call> Done."#,
            calls: json!([{"name": "search", "arguments": {"query": "what does </tool_call> mean \"here\""}}]),
            worst: "none",
            text: Some("Looking.  Done."),
        },
        Case {
            name: "hermes_closing_tag_inside_a_string_two_calls",
            format: "hermes",
            end: ReplyEnd::Stopped,
            output: "<tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"a </tool_call> b\\\\\"}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
            calls: json!([
                {"name": "search", "arguments": {"query": "a </tool_call> b\\"}},
                {"name": "get_time", "arguments": {}}
            ]),
            worst: "none",
            text: Some(""),
        },
        Case {
            name: "hermes_unbalanced_quote_falls_back_to_the_first_tag",
            format: "hermes",
            end: ReplyEnd::Stopped,
            output: r#"<tool_call>{"name": "get_time", "arguments": {"x": "}}</tool_call> after"#,
            calls: json!([]),
            worst: "error",
            text: None,
        },
        // One broken call does not drop its good siblings.
        Case {
            name: "pythonic_bad_entry_keeps_its_sibling",
            format: "pythonic",
            end: ReplyEnd::Unknown,
            output: "[get_time(x=b'z'), get_weather(city='SF')]",
            calls: json!([{"name": "get_weather", "arguments": {"city": "SF"}}]),
            worst: "error",
            text: Some("get_time(x=b'z')"),
        },
        Case {
            name: "pythonic_out_of_range_number_keeps_its_sibling",
            format: "auto",
            end: ReplyEnd::Stopped,
            output: "[get_weather(city='SF'), search(query='x', limit=1e999)]",
            calls: json!([{"name": "get_weather", "arguments": {"city": "SF"}}]),
            worst: "error",
            text: Some("search(query='x', limit=1e999)"),
        },
    ]
}

fn options(case: &Case) -> ParseOptions {
    ParseOptions {
        format: if case.format == "auto" {
            FormatSelection::Auto
        } else {
            FormatSelection::Only(case.format.into())
        },
        tools: Some(family_registry()),
        reply_end: case.end,
        ..ParseOptions::default()
    }
}

#[derive(Debug, PartialEq)]
struct Seen {
    text: String,
    calls: Value,
    worst: &'static str,
}

fn worst(levels: impl Iterator<Item = Level>) -> &'static str {
    let mut w = "none";
    for l in levels {
        match l {
            Level::Error => w = "error",
            Level::Warning if w == "none" => w = "warning",
            _ => {}
        }
    }
    w
}

fn one_shot(case: &Case) -> Seen {
    let p = parse(case.output, &options(case));
    Seen {
        text: p.text,
        calls: p
            .calls
            .iter()
            .map(|c| json!({"name": c.name, "arguments": c.arguments}))
            .collect(),
        worst: worst(p.diagnostics.iter().map(|d| d.level)),
    }
}

/// Streams `chunks`, ending the stream with `finish_as` (the options say the same end).
fn streamed(case: &Case, chunks: &[&str]) -> Seen {
    let mut sp = StreamParser::new(ParseOptions {
        reply_end: ReplyEnd::Unknown,
        ..options(case)
    });
    let mut events = Vec::new();
    for c in chunks {
        events.extend(sp.push(c));
    }
    events.extend(sp.finish_as(case.end));
    let (mut text, mut calls, mut levels) = (String::new(), Vec::new(), Vec::new());
    for e in events {
        match e {
            StreamEvent::Text { text: t } => text.push_str(&t),
            StreamEvent::CallFinished { call, .. } => {
                calls.push(json!({"name": call.name, "arguments": call.arguments}))
            }
            StreamEvent::Diagnostic { diagnostic } => levels.push(diagnostic.level),
            _ => {}
        }
    }
    Seen {
        text,
        calls: Value::Array(calls),
        worst: worst(levels.into_iter()),
    }
}

fn check(case: &Case, how: &str, seen: &Seen) {
    let at = format!("{} ({how})", case.name);
    assert_eq!(seen.calls, case.calls, "{at}: calls");
    assert_eq!(seen.worst, case.worst, "{at}: worst diagnostic");
    if let Some(text) = case.text {
        assert_eq!(seen.text.trim(), text, "{at}: text");
    }
}

#[test]
fn every_case_one_shot_and_char_by_char() {
    for case in cases() {
        check(&case, "one-shot", &one_shot(&case));
        check(&case, "char by char", &streamed(&case, &chars(case.output)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn every_case_at_random_chunkings(cuts in proptest::collection::vec(any::<usize>(), 0..10)) {
        for case in cases() {
            check(&case, &format!("chunks {cuts:?}"), &streamed(&case, &chunk(case.output, &cuts)));
        }
    }
}
