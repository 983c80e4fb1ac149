//! A run of brackets (`[[[…`, `{{{…`, mixed) is read one-shot without a bare JSON region
//! at each of its bytes where the outcome is known (`Engine::pass_brackets`): the text,
//! the calls, the diagnostics and the rescan budget's warning are those of a stream, whose
//! small pushes read the same bytes region by region.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{assert_stream_equals_one_shot, chars, pieces, streamed};
use toolcall_parse::{FormatSelection, Limits, ParseOptions, parse};

const LIST_CALL: &str = r#"[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#;
const OBJECT_CALL: &str = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;

fn options(max_depth: usize) -> ParseOptions {
    ParseOptions {
        format: FormatSelection::Auto,
        limits: Limits {
            max_depth,
            ..Limits::default()
        },
        ..ParseOptions::default()
    }
}

#[test]
fn a_run_of_brackets_reads_as_its_regions_would() {
    for max_depth in [1, 2, 3, 8, 128] {
        let o = options(max_depth);
        for n in [0, 1, 2, 3, 4, 7, 9, 17, 127, 128, 129, 130, 300] {
            for run in ["[".repeat(n), "{".repeat(n), "[{".repeat(n / 2 + 1)] {
                for after in [LIST_CALL, OBJECT_CALL, "]] x", " [ 1, 2 ] {\"a\": 1}"] {
                    let text = format!("a {run}{after} b");
                    let context = format!("max_depth {max_depth}, {text:.40}…");
                    assert_stream_equals_one_shot(&text, &o, &context);
                }
            }
        }
    }
}

#[test]
fn a_call_after_a_run_of_brackets_is_found() {
    let o = options(128);
    let hermes = format!("<tool_call>{OBJECT_CALL}</tool_call>");
    // `{{{…` opens no region. A bracket left open swallows a bare call after it (cut at the
    // end), so a run of `[` ends at a byte that fails its regions' scans; each failed
    // region is charged to the rescan budget, so a bare call comes after a run the budget
    // covers, and markup after any run.
    for (run, n, close, call) in [
        ("{", 1000, "", OBJECT_CALL),
        ("{", 9000, " ", LIST_CALL),
        ("[", 1, "}", LIST_CALL),
        ("[", 300, "}", OBJECT_CALL),
        ("[{", 150, "]", LIST_CALL),
        ("[", 1000, "}", hermes.as_str()),
        ("[", 9000, "}", hermes.as_str()),
    ] {
        let text = format!("x {}{close} {call} y", run.repeat(n));
        let context = format!("{run} × {n}");
        let whole = parse(&text, &o);
        assert_eq!(whole.calls.len(), 1, "{context}: {:?}", whole.diagnostics);
        assert_eq!(whole.calls[0].name, "get_weather");
        for pushes in [chars(&text), pieces(&text, 7), pieces(&text, 64)] {
            let s = streamed(&pushes, &o);
            assert_eq!(s.calls.len(), 1, "{context}: streamed in {}", pushes.len());
            assert_eq!(
                s.text,
                whole.text,
                "{context}: streamed in {}",
                pushes.len()
            );
        }
    }
}

#[test]
fn a_long_run_of_lists_runs_out_of_the_rescan_budget() {
    let o = options(128);
    // Past the budget (8 a byte of the input up to the bytes a region read, and 64 KiB) the
    // warning is written once, and bare JSON is no longer read after it.
    let text = format!("x {}}} {LIST_CALL} y", "[".repeat(9000));
    let whole = parse(&text, &o);
    for p in [whole, streamed(&pieces(&text, 64), &o)] {
        assert!(p.calls.is_empty(), "{:?}", p.calls);
        let warnings = p
            .diagnostics
            .iter()
            .filter(|d| d.message.starts_with("too many unbalanced brackets"))
            .count();
        assert_eq!(warnings, 1, "{:?}", p.diagnostics);
        assert_eq!(p.text, text);
    }
}

// The rescan budget runs out at the same region one-shot and in any pushes: its warning has
// the same text and span (the budget counts the input up to the bytes each region read, not
// the bytes received, which one-shot are all of them and pushed depend on the pushes).
#[test]
fn the_rescan_budget_runs_out_at_the_same_region_however_pushed() {
    for max_depth in [2, 5, 128] {
        let o = options(max_depth);
        for (unit, n) in [
            ("[", 9000),
            ("[[x", 12000),
            ("{\"", 12000),
            ("[1,[", 9000),
            ("[{", 6000),
        ] {
            let text = format!("x {} {LIST_CALL} y", unit.repeat(n));
            let context = format!("max_depth {max_depth}: {unit:?} × {n}");
            let whole = assert_stream_equals_one_shot(&text, &o, &context);
            let warned = whole
                .diagnostics
                .iter()
                .any(|d| d.message.starts_with("too many unbalanced brackets"));
            // Each region reads more than 8 bytes a byte of input only when nested deep.
            assert_eq!(
                warned,
                max_depth == 128,
                "{context}: {:?}",
                whole.diagnostics
            );
        }
    }
}
