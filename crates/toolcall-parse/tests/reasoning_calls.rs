//! Calls written inside reasoning (`ParseOptions::reasoning_calls`): drafts by default, taken
//! when the reply makes no call after them under `take_if_none_after` (a family's default
//! or the caller's choice), one-shot and streamed alike.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolcall_core::{Level, StreamEvent};
use toolcall_parse::{FormatSelection, ParseOptions, ReasoningCalls, StreamParser, parse};

const HERMES_IN_THINK: &str = "<think>The user wants Paris.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call></think>";
const QWEN35_IN_THINK: &str = "<think>Paris.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call></think>";

fn options(format: FormatSelection, policy: Option<ReasoningCalls>) -> ParseOptions {
    ParseOptions {
        format,
        reasoning_calls: policy,
        ..ParseOptions::default()
    }
}

fn names(text: &str, o: &ParseOptions) -> Vec<String> {
    parse(text, o).calls.into_iter().map(|c| c.name).collect()
}

/// Calls finished when `text` is pushed one character at a time, with their indices.
fn streamed(text: &str, o: &ParseOptions) -> Vec<(usize, String)> {
    let mut p = StreamParser::new(o.clone());
    let mut events = Vec::new();
    let mut buf = [0u8; 4];
    for c in text.chars() {
        events.extend(p.push(c.encode_utf8(&mut buf)));
    }
    events.extend(p.finish());
    events
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::CallFinished { index, call } => Some((index, call.name)),
            _ => None,
        })
        .collect()
}

#[test]
fn calls_in_reasoning_are_drafts_by_default() {
    assert!(names(HERMES_IN_THINK, &ParseOptions::default()).is_empty());
    let hermes = options(FormatSelection::Only("hermes".into()), None);
    assert!(names(HERMES_IN_THINK, &hermes).is_empty());
}

#[test]
fn qwen3_coder_takes_its_only_call_from_reasoning_unless_told_to_ignore() {
    let only = FormatSelection::Only("qwen3_coder".into());
    let taken = options(only.clone(), None);
    let p = parse(QWEN35_IN_THINK, &taken);
    assert_eq!(p.calls.len(), 1, "{p:?}");
    assert_eq!(p.calls[0].arguments, serde_json::json!({"city": "Paris"}));
    assert!(p.reasoning.concat().contains("<function=get_weather>"));
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == Level::Info && d.message.contains("taken from the reasoning")),
        "{:?}",
        p.diagnostics
    );
    assert_eq!(
        streamed(QWEN35_IN_THINK, &taken),
        [(0, "get_weather".into())]
    );
    let ignored = options(only, Some(ReasoningCalls::Ignore));
    assert!(names(QWEN35_IN_THINK, &ignored).is_empty());
    assert!(streamed(QWEN35_IN_THINK, &ignored).is_empty());
}

#[test]
fn the_caller_can_take_calls_from_reasoning_in_auto_mode() {
    let take = options(FormatSelection::Auto, Some(ReasoningCalls::TakeIfNoneAfter));
    assert_eq!(names(HERMES_IN_THINK, &take), ["get_weather"]);
    assert_eq!(
        streamed(HERMES_IN_THINK, &take),
        [(0, "get_weather".into())]
    );
    // A call after the reasoning: the one inside stays a draft.
    let both = format!(
        "{HERMES_IN_THINK}<tool_call>{{\"name\": \"get_time\", \"arguments\": {{}}}}</tool_call>"
    );
    assert_eq!(names(&both, &take), ["get_time"]);
    assert_eq!(streamed(&both, &take), [(0, "get_time".into())]);
}

#[test]
fn the_policy_reads_from_its_config_names() {
    assert_eq!("ignore".parse(), Ok(ReasoningCalls::Ignore));
    assert_eq!(
        "take_if_none_after".parse(),
        Ok(ReasoningCalls::TakeIfNoneAfter)
    );
    assert!("sometimes".parse::<ReasoningCalls>().is_err());
    let v: ReasoningCalls = serde_json::from_str("\"take_if_none_after\"").unwrap();
    assert_eq!(v, ReasoningCalls::TakeIfNoneAfter);
}
