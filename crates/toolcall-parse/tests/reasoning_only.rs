//! `ParseOptions::reasoning_only` (a reply to a request that offered no tools): the chosen
//! families' reasoning markers and control tokens are read exactly as in a full parse, and
//! no call markup is ever taken; one-shot and streamed alike.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::registry;
use toolcall_core::{Parsed, StreamEvent};
use toolcall_parse::{FormatSelection, ParseOptions, ReasoningCalls, StreamParser, parse};

fn reasoning_only(format: FormatSelection) -> ParseOptions {
    ParseOptions {
        format,
        reasoning_only: true,
        ..ParseOptions::default()
    }
}

fn only(family: &str) -> FormatSelection {
    FormatSelection::Only(family.into())
}

/// What a stream gave: (text, reasoning, calls started or finished), `text` pushed one
/// character at a time.
fn streamed(text: &str, options: &ParseOptions) -> (String, String, usize) {
    let mut p = StreamParser::new(options.clone());
    let mut events = Vec::new();
    let mut buf = [0u8; 4];
    for c in text.chars() {
        events.extend(p.push(c.encode_utf8(&mut buf)));
    }
    events.extend(p.finish());
    let (mut t, mut r, mut calls) = (String::new(), String::new(), 0);
    for e in events {
        match e {
            StreamEvent::Text { text } => t.push_str(&text),
            StreamEvent::Reasoning { text } => r.push_str(&text),
            StreamEvent::CallStarted { .. } | StreamEvent::CallFinished { .. } => calls += 1,
            StreamEvent::ArgumentsDelta { .. } | StreamEvent::Diagnostic { .. } => {}
        }
    }
    (t, r, calls)
}

/// Parses whole and streamed, checks they agree and that no call was taken; the whole parse.
fn both(text: &str, options: &ParseOptions) -> Parsed {
    let whole = parse(text, options);
    assert!(whole.calls.is_empty(), "{text:?}: {:?}", whole.calls);
    let (t, r, calls) = streamed(text, options);
    assert_eq!(calls, 0, "{text:?}");
    assert_eq!(t, whole.text, "{text:?}");
    assert_eq!(r, whole.reasoning.concat(), "{text:?}");
    whole
}

const HERMES_CALL: &str =
    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";

#[test]
fn think_is_reasoning_and_call_markup_stays_text() {
    let reply = format!("<think>The user wants Paris.</think>Let me check. {HERMES_CALL}");
    for format in [FormatSelection::Auto, only("hermes")] {
        let p = both(&reply, &reasoning_only(format.clone()));
        assert_eq!(p.reasoning, ["The user wants Paris."]);
        assert_eq!(p.text, format!("Let me check. {HERMES_CALL}"));
        // Reasoning is split as in a full parse, which takes the call.
        let full = parse(
            &reply,
            &ParseOptions {
                format,
                ..ParseOptions::default()
            },
        );
        assert_eq!(full.reasoning, p.reasoning);
        assert_eq!(full.calls.len(), 1);
    }
}

#[test]
fn harmony_analysis_is_reasoning_and_its_control_tokens_go() {
    let reply = "<|channel|>analysis<|message|>They greet me.<|end|>\
                 <|start|>assistant<|channel|>final<|message|>Hello!<|return|>";
    for format in [FormatSelection::Auto, only("gpt_oss")] {
        let p = both(reply, &reasoning_only(format));
        assert_eq!(p.reasoning, ["They greet me."]);
        assert_eq!(p.text, "Hello!");
    }
    // A harmony call is not taken: its markup stays in the text.
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json\
                <|message|>{\"city\": \"Paris\"}<|call|>";
    let p = both(call, &reasoning_only(only("gpt_oss")));
    assert_eq!(p.text, call);
}

#[test]
fn every_familys_reasoning_markers_are_read_and_its_example_call_is_not() {
    for f in toolcall_parse::formats() {
        let o = reasoning_only(only(f.id));
        let markers = std::iter::once(("<think>", "</think>"))
            .chain(f.reasoning.iter().map(|m| (m.open, m.close)));
        for (open, close) in markers {
            let reply = format!("{open}Plan it.{close}Done.");
            // The family alone, and auto mode (every family's markers).
            for o in [&o, &reasoning_only(FormatSelection::Auto)] {
                let p = both(&reply, o);
                assert_eq!(p.reasoning, ["Plan it."], "{}: {reply:?}", f.id);
                assert_eq!(p.text, "Done.", "{}: {reply:?}", f.id);
            }
        }
        // The family's own example call, which a full parse takes, stays text.
        let reply = format!("Here. {}", f.example);
        let p = both(&reply, &o);
        assert!(p.text.starts_with("Here. "), "{}: {:?}", f.id, p.text);
    }
}

#[test]
fn no_reader_of_calls_applies() {
    let cases = [
        // Bare JSON, a JSON fence, a pythonic list and call syntax with a registry.
        (
            "auto",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        ),
        (
            "auto",
            "```json\n{\"name\": \"get_weather\", \"arguments\": {}}\n```",
        ),
        ("pythonic", "[get_weather(city=\"Paris\")]"),
        ("call_syntax", "get_weather(city=\"Paris\")"),
        // Functionary v3.2's reply starts after its template's implied `>>>`.
        ("functionary_v3_2", "get_weather\n{\"city\": \"Paris\"}"),
    ];
    for (format, reply) in cases {
        let format = match format {
            "auto" => FormatSelection::Auto,
            f => only(f),
        };
        let full = ParseOptions {
            format: format.clone(),
            tools: Some(registry()),
            ..ParseOptions::default()
        };
        assert_eq!(parse(reply, &full).calls.len(), 1, "{reply:?}");
        let o = ParseOptions {
            reasoning_only: true,
            ..full
        };
        assert_eq!(both(reply, &o).text, reply);
    }
}

#[test]
fn calls_inside_reasoning_are_never_taken() {
    // qwen3_coder takes its only call from reasoning in a full parse.
    let reply = "<think>Paris.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n\
                 </parameter>\n</function>\n</tool_call></think>";
    for policy in [None, Some(ReasoningCalls::TakeIfNoneAfter)] {
        let o = ParseOptions {
            reasoning_calls: policy,
            ..reasoning_only(only("qwen3_coder"))
        };
        let p = both(reply, &o);
        assert!(p.reasoning.concat().contains("<function=get_weather>"));
        assert_eq!(p.text, "");
    }
}

#[test]
fn a_reply_cut_inside_its_reasoning_is_all_reasoning() {
    let p = both("<think>First, the", &reasoning_only(FormatSelection::Auto));
    assert_eq!(p.reasoning, ["First, the"]);
    assert_eq!(p.text, "");
    // A template that opened `<think>` already.
    let o = ParseOptions {
        starts_in_reasoning: true,
        ..reasoning_only(FormatSelection::Auto)
    };
    let p = both("Weighing it.</think>Yes.", &o);
    assert_eq!(p.reasoning, ["Weighing it."]);
    assert_eq!(p.text, "Yes.");
}

#[test]
fn prose_and_code_samples_pass_untouched() {
    let reply =
        "Use `<think>` tags like this:\n```xml\n<think>plan</think>\n```\nDone {ok} [1] f(x).";
    let p = both(reply, &reasoning_only(FormatSelection::Auto));
    assert_eq!(p.text, reply);
    assert!(p.reasoning.is_empty());
}

#[test]
fn a_code_sample_streams_before_its_fence_closes() {
    for o in [
        reasoning_only(FormatSelection::Auto),
        ParseOptions::default(),
    ] {
        let mut p = StreamParser::new(o);
        let mut text = String::new();
        for piece in ["Here:\n```python\n", "print('hello')\n", "print('again')\n"] {
            for e in p.push(piece) {
                if let StreamEvent::Text { text: t } = e {
                    text.push_str(&t);
                }
            }
        }
        assert!(text.contains("print('hello')"), "{text:?}");
    }
}

#[test]
fn a_reply_without_calls_reads_as_in_a_full_parse_headers_and_implied_openers_included() {
    let cases = [
        // The template wrote `<|start|>assistant`; message headers are removed.
        (
            "muse_glimmer",
            " to=self<|message|>Plan it.<|eom|><|start|>assistant to=user<|message|>Hello!<|eom|>",
        ),
        // The template wrote `<|message_model|>`; block headers are removed.
        (
            "inkling",
            "<|content_thinking|>Plan it.<|end_message|><|message_model|><|content_text|>Hello!<|end_message|>",
        ),
        (
            "gpt_oss",
            "<|channel|>analysis<|message|>Plan it.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
        ),
        ("functionary_v3_2", "all\nHello!"),
    ];
    for (family, reply) in cases {
        let full = parse(
            reply,
            &ParseOptions {
                format: only(family),
                ..ParseOptions::default()
            },
        );
        assert!(full.calls.is_empty(), "{family}");
        let p = both(reply, &reasoning_only(only(family)));
        assert_eq!(p.text, full.text, "{family}");
        assert_eq!(p.reasoning, full.reasoning, "{family}");
        assert_eq!(p.text.trim(), "Hello!", "{family}");
    }
    // A call after the template's implied opener stays text; the opener, which the model
    // never wrote, does not appear.
    let reply = "get_weather\n{\"city\": \"Paris\"}";
    let p = both(reply, &reasoning_only(only("functionary_v3_2")));
    assert_eq!(p.text, reply);
}
