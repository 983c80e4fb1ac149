//! Streamed and whole parses must agree (R-1): the four disagreements found by trying to
//! break the parser (issue #10), each with the split that exposed it. The same inputs are
//! the seed corpus of the `stream_equals_whole` fuzz target (`fuzz/`).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::streamed;

use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::{Level, Parsed, Registry, ToolSpec};
use toolcall_parse::{ParseOptions, parse};

fn echo_tools() -> ParseOptions {
    let mut r = Registry::new();
    r.add_spec(ToolSpec::new(
        "echo",
        "Echo text",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    ))
    .unwrap();
    ParseOptions {
        tools: Some(Arc::new(r)),
        ..ParseOptions::default()
    }
}

fn calls(p: &Parsed) -> Vec<(String, Value)> {
    p.calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

fn errors(p: &Parsed) -> usize {
    p.diagnostics
        .iter()
        .filter(|d| d.level == Level::Error)
        .count()
}

/// Whole and streamed at `chunks` agree on calls, text and errors; returns the whole parse.
fn agree(chunks: &[&str], options: &ParseOptions) -> Parsed {
    let whole = parse(&chunks.concat(), options);
    let split = streamed(chunks, options);
    assert_eq!(calls(&whole), calls(&split), "calls of {chunks:?}");
    assert_eq!(whole.text, split.text, "text of {chunks:?}");
    assert_eq!(errors(&whole), errors(&split), "errors of {chunks:?}");
    whole
}

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/disagreements")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// covers R-1: a backtick at the end of a chunk may be the start of ``` (not inline code)
#[test]
fn partial_fence_at_a_chunk_end_does_not_hide_the_call() {
    let text = fixture("partial_backticks.txt");
    let (a, b) = text.split_at(2);
    let p = agree(&[a, b], &echo_tools());
    assert_eq!(calls(&p), vec![("echo".into(), json!({"text": "hi"}))]);
}

// covers R-1: whitespace after [ARGS] is skipped whatever the split
#[test]
fn whitespace_after_args_does_not_depend_on_the_split() {
    let text = fixture("mistral_args_space.txt");
    let at = text.find("[ARGS]").unwrap() + "[ARGS] ".len();
    let (a, b) = text.split_at(at);
    let p = agree(&[a, b], &ParseOptions::default());
    assert!(p.calls.is_empty());
    assert_eq!(p.text, text, "broken markup stays visible");
    assert_eq!(errors(&p), 1);
}

// covers F-KV-1: a second TOOL_CALL: header starts a second call, registry or not
#[test]
fn consecutive_key_value_blocks_are_two_calls() {
    let text = fixture("two_key_value_blocks.txt");
    for options in [ParseOptions::default(), echo_tools()] {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let p = agree(&lines, &options);
        assert_eq!(
            calls(&p),
            vec![
                ("echo".into(), json!({"text": "a"})),
                ("echo".into(), json!({"text": "b"}))
            ]
        );
    }
}

// covers R-6: a closing tag cut by the end of output closes the call, with no error
#[test]
fn a_cut_closing_tag_is_not_an_error() {
    let text = fixture("cut_closing_tag.txt");
    let (a, b) = text.split_at(text.len() - 3);
    let p = agree(&[a, b], &ParseOptions::default());
    assert_eq!(calls(&p), vec![("get_time".into(), json!({}))]);
    assert_eq!(errors(&p), 0, "{:?}", p.diagnostics);
    assert_eq!(p.text, "");
}

// covers R-1: the name of `<function=NAME>` is looked for in a window of 256 bytes; cut
// inside a multi-byte character, the window read as "no name" and a long non-ASCII tail
// made the whole call prose one-shot, while a push ending after the `{` had already read
// the name (the call is truncated either way: its arguments never close)
#[test]
fn a_long_non_ascii_tail_does_not_hide_a_truncated_call() {
    let text = fixture("functionary_non_ascii_tail.txt");
    let at = text.find('{').unwrap() + 1;
    for options in [ParseOptions::default(), echo_tools()] {
        for chunks in [vec![text.as_str()], vec![&text[..at], &text[at..]]] {
            let p = agree(&chunks, &options);
            assert!(p.calls.is_empty());
            assert_eq!(p.text, text, "the broken markup stays visible");
            assert_eq!(errors(&p), 1, "{:?}", p.diagnostics);
            assert!(
                p.diagnostics[0].message.contains("<function=sweall>"),
                "{:?}",
                p.diagnostics
            );
        }
    }
}

// covers R-1: a name whose end is not yet in sight was refused at its first Unicode blank,
// while the whole lead's name refuses only ASCII blanks and markup; a vertical tab (no ASCII
// blank) after FunctionGemma's `call:` or Seed-OSS's `<function=` made a call one-shot and
// text streamed (the fuzzer's input: `call:]` then 103 vertical tabs, cut among them). Both
// now ask one rule (`tags::name_until`), checked at every split.
#[test]
fn a_vertical_tab_in_a_name_reads_the_same_at_every_split() {
    for name in [
        "functiongemma_vertical_tab.txt",
        "seed_oss_vertical_tab.txt",
    ] {
        let text = fixture(name);
        for options in [ParseOptions::default(), echo_tools()] {
            let whole = parse(&text, &options);
            assert_eq!(
                calls(&whole),
                vec![("get\u{b}weather".into(), json!({"city": "Paris"}))],
                "{name}: {:?}",
                whole.diagnostics
            );
            for at in (1..text.len()).filter(|&at| text.is_char_boundary(at)) {
                agree(&[&text[..at], &text[at..]], &options);
            }
        }
    }
}

// covers the cap on diagnostics: one summary instead of millions of findings
#[test]
fn diagnostics_are_capped_per_kind() {
    let text = "echo(".repeat(20_000);
    let p = parse(&text, &echo_tools());
    assert!(p.diagnostics.len() < 200, "{}", p.diagnostics.len());
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.message.contains("further diagnostics not reported")),
        "{:?}",
        p.diagnostics.last()
    );
}

// covers R-7 and linear time: unbalanced bracket soup keeps its text and later calls
#[test]
fn bracket_soup_keeps_text_and_later_markup() {
    // A JSON region opened by the soup never closes; the markup after it is still found.
    let soup = "{'b':'".repeat(5_000);
    let call = "<tool_call>\n<function=get_time>\n</function>\n</tool_call>";
    let p = parse(&format!("{soup}{call}"), &ParseOptions::default());
    assert_eq!(calls(&p), vec![("get_time".into(), json!({}))]);
    assert!(p.text == soup, "the soup stays text");
    let brackets = "[".repeat(100_000);
    let p = parse(&brackets, &ParseOptions::default());
    assert!(p.calls.is_empty());
    assert!(p.text == brackets, "brackets stay text");
}

// The fuzz target's seed corpus holds these inputs (options, split fraction, text): each
// seed decodes back to its fixture, so the corpus and the tests stay the same cases.
#[test]
fn fuzz_seeds_are_the_fixtures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let corpus = root.join("fuzz/corpus/stream_equals_whole");
    let mut seen = 0;
    for e in std::fs::read_dir(&corpus).unwrap() {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let fixture_name = format!("{}.txt", name.rsplit_once('_').unwrap().0);
        let body = &data[2 + usize::from(data[1])..];
        assert_eq!(body, fixture(&fixture_name).as_bytes(), "{name}");
        let text = std::str::from_utf8(body).unwrap();
        let at = text.len() * usize::from(data[2]) / 255;
        let options = if data[0] & 1 == 1 {
            echo_tools()
        } else {
            ParseOptions::default()
        };
        agree(&[&text[..at], &text[at..]], &options);
        seen += 1;
    }
    assert_eq!(seen, 26);
}
