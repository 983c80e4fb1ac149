//! `StreamParser::push_into` / `finish_into` (the caller's reused event buffer) give exactly
//! the events of `push` / `finish`, keep what the buffer already held, and shift spans the
//! same way when an implied opener is fed ahead of the reply.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{auto, comparable, only, pieces, with_tools};
use toolcall_core::{Event, StreamEvent};
use toolcall_parse::{FormatSelection, ParseOptions, StreamParser};

fn with_vec(pieces: &[&str], options: &ParseOptions) -> Vec<StreamEvent> {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    for p in pieces {
        events.extend(parser.push(p));
    }
    events.extend(parser.finish());
    events
}

/// One buffer for the whole reply, drained after every push as a streaming caller does.
fn with_buffer(pieces: &[&str], options: &ParseOptions) -> Vec<StreamEvent> {
    let mut parser = StreamParser::new(options.clone());
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    for p in pieces {
        parser.push_into(p, &mut buffer);
        events.append(&mut buffer);
    }
    parser.finish_into(&mut buffer);
    events.append(&mut buffer);
    events
}

/// `push_events` / `finish_events`, each event converted to its owned form.
fn with_events(pieces: &[&str], options: &ParseOptions) -> Vec<StreamEvent> {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    for p in pieces {
        events.extend(parser.push_events(p).map(Event::into_owned));
    }
    events.extend(parser.finish_events().map(StreamEvent::from));
    events
}

/// One buffer never drained: every push appends after the events already there.
fn appended(pieces: &[&str], options: &ParseOptions) -> Vec<StreamEvent> {
    let mut parser = StreamParser::new(options.clone());
    let mut events = Vec::new();
    for p in pieces {
        parser.push_into(p, &mut events);
    }
    parser.finish_into(&mut events);
    events
}

fn cases() -> Vec<(&'static str, String, ParseOptions)> {
    let unknown_format = ParseOptions {
        format: FormatSelection::Priority(vec!["no_such_format".into(), "hermes".into()]),
        ..ParseOptions::default()
    };
    vec![
        (
            "hermes with text and reasoning",
            r#"<think>plan</think>Checking. <tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call> done"#.into(),
            auto(),
        ),
        (
            "fenced JSON and prose with call syntax",
            "See:\n```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\nthen get_weather(city=\"Rome\") ok".into(),
            with_tools(),
        ),
        (
            "an implied opener shifts spans (functionary v3.2 without the leading >>>)",
            "get_weather\n{\"city\": \"Paris\"}>>>all\nDone.".into(),
            only("functionary_v3_2", false),
        ),
        (
            "diagnostics held from construction come first",
            r#"<tool_call>{"name":"get_weather","arguments":{"city":"Lima",}}</tool_call>"#.into(),
            unknown_format,
        ),
        (
            "calls taken from the reasoning at the end (take_if_none_after)",
            r#"<think>I will call <tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call></think>Done."#.into(),
            ParseOptions {
                reasoning_calls: Some(toolcall_parse::ReasoningCalls::TakeIfNoneAfter),
                ..auto()
            },
        ),
        (
            "a truncated call",
            r#"Sure <tool_call>{"name":"get_weather","arguments":{"city":"Pa"#.into(),
            auto(),
        ),
    ]
}

#[test]
fn push_into_gives_the_events_of_push_at_every_push_size() {
    for (label, text, options) in cases() {
        for size in [1, 2, 3, 7, 64, text.len()] {
            let chunks = pieces(&text, size);
            let expected = comparable(&with_vec(&chunks, &options));
            assert!(!expected.is_empty(), "{label}: no events");
            assert_eq!(
                comparable(&with_buffer(&chunks, &options)),
                expected,
                "{label}, {size}-byte pushes, drained buffer"
            );
            assert_eq!(
                comparable(&appended(&chunks, &options)),
                expected,
                "{label}, {size}-byte pushes, one growing buffer"
            );
            assert_eq!(
                comparable(&with_events(&chunks, &options)),
                expected,
                "{label}, {size}-byte pushes, borrowed events"
            );
        }
    }
}

#[test]
fn push_into_keeps_what_the_buffer_held() {
    let earlier = StreamEvent::Text {
        text: "from before".into(),
    };
    let mut parser = StreamParser::new(auto());
    let mut events = vec![earlier.clone()];
    parser.push_into(r#"Hi <tool_call>{"name":"a","arguments":{}}"#, &mut events);
    parser.push_into("</tool_call>", &mut events);
    parser.finish_into(&mut events);
    assert_eq!(events.first(), Some(&earlier));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::CallFinished { call, .. } if call.name == "a"))
    );
}

/// A stream parser may be moved to and shared with other threads (a server's task, the
/// Python package's stream class, which requires `Send + Sync`): session 41's opener
/// memo held a `Cell` and made it `!Sync`, which only the Python build caught.
#[test]
fn a_stream_parser_is_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<toolcall_parse::StreamParser>();
}
