//! The negatives corpus: prose, code samples and JSON that merely looks like a call
//! produce zero calls, and their text is kept.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{auto, fixture, with_tools};
use toolcall_parse::parse;

//
#[test]
fn negatives_corpus_yields_zero_calls() {
    let corpus: Vec<String> = serde_json::from_str(&fixture("negatives.json")).unwrap();
    assert!(corpus.len() >= 15);
    for text in &corpus {
        let p = parse(text, &with_tools());
        assert!(
            p.calls.is_empty(),
            "with registry: {text:?} gave {:?}",
            p.calls
        );
    }
    // Without a registry the shape rules alone must reject everything except the example
    // with a plausible tool name given as bare JSON (documented: needs a registry).
    for text in &corpus {
        let p = parse(text, &auto());
        if text.contains("launch_rockets\", \"arguments") {
            continue;
        }
        assert!(
            p.calls.is_empty(),
            "without registry: {text:?} gave {:?}",
            p.calls
        );
    }
}

//
#[test]
fn non_calls_keep_their_text_verbatim() {
    let corpus: Vec<String> = serde_json::from_str(&fixture("negatives.json")).unwrap();
    for text in &corpus {
        let p = parse(text, &with_tools());
        // Text-only replies only lose markup that is never prose (none here) and the
        // content of {"text": ...} objects is not involved.
        if text.starts_with("{\"text\"") {
            continue;
        }
        assert_eq!(&p.text, text);
    }
}

//
#[test]
fn reasoning_is_never_parsed_as_calls() {
    let text = "<think>maybe <tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call> or TOOL_CALL: get_time</think>Answer: none needed.";
    let p = parse(text, &with_tools());
    assert!(p.calls.is_empty());
    assert_eq!(p.text, "Answer: none needed.");
    assert_eq!(p.reasoning.len(), 1);
    // A real call after the reasoning block is kept.
    let p = parse(
        &format!("{text}<tool_call>{{\"name\":\"get_time\"}}</tool_call>"),
        &with_tools(),
    );
    assert_eq!(p.calls.len(), 1);
}

// covers R-4, F-NAT-1
#[test]
fn seed_002_function_call_outputs_are_not_calls() {
    let doc = fixture("seeds/002_ea63df6607fe6187.txt");
    assert!(parse(&doc, &auto()).calls.is_empty());
    let out: serde_json::Value = serde_json::json!({"type": "function_call_output", "call_id": "toolu_01", "output": "{\"status\":\"ok\"}"});
    assert!(toolcall_parse::parse_native(&out, &auto()).calls.is_empty());
}

//
#[test]
fn replies_that_start_inside_reasoning() {
    let text = "I could call {\"name\":\"get_time\",\"arguments\":{}} here.\n</think>\n\nHere you go.<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>";
    let o = toolcall_parse::ParseOptions {
        starts_in_reasoning: true,
        ..with_tools()
    };
    let p = parse(text, &o);
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].origin.format, "hermes");
    assert_eq!(p.text, "\n\nHere you go.");
    assert!(p.reasoning[0].starts_with("I could call"));
}
