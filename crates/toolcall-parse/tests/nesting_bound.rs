//! `Limits::max_depth` bounds every call's arguments, whichever family's reader decoded
//! them (the bracket scanner's regions and the blocks decoded in one serde pass alike), and
//! a stream refuses what one-shot refuses.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{chars, chunk, fixture, streamed};
use serde_json::Value;
use toolcall_parse::{FormatSelection, Limits, ParseOptions, parse};

/// `n` levels of lists around `1`.
fn lists(n: usize) -> String {
    format!("{}1{}", "[".repeat(n), "]".repeat(n))
}

/// A call to `f` with arguments `{"a": <n lists>}` as each family's template writes it
/// (`tests/fixtures/nesting/calls.txt`).
fn calls(n: usize) -> Vec<(String, String)> {
    let lists = lists(n);
    let args = format!("{{\"a\": {lists}}}");
    fixture("nesting/calls.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (family, text) = l.split_once('\t').expect("FAMILY<tab>TEXT");
            let text = text.replace("@ARGS@", &args).replace("@LISTS@", &lists);
            (family.to_owned(), text)
        })
        .collect()
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn every_family_keeps_the_nesting_bound_one_shot_and_streamed() {
    assert!(calls(0).len() >= 13, "the fixture lists every family below");
    for max_depth in [3_usize, 5, 8] {
        for n in 0..max_depth + 3 {
            for (family, text) in calls(n) {
                let unbounded = ParseOptions {
                    format: FormatSelection::Only(family.as_str().into()),
                    ..ParseOptions::default()
                };
                assert_eq!(parse(&text, &unbounded).calls.len(), 1, "{family}: {text}");
                let o = ParseOptions {
                    limits: Limits {
                        max_depth,
                        ..Limits::default()
                    },
                    ..unbounded
                };
                let whole = parse(&text, &o);
                let context = format!("{family}, max_depth {max_depth}, {} levels", n + 1);
                for c in &whole.calls {
                    assert!(
                        depth(&c.arguments) <= max_depth,
                        "{context}: {:?}",
                        c.arguments
                    );
                }
                // Arguments within the bound by the wrappers' room run; past it none does,
                // and the reply says why.
                if n + 1 + 3 <= max_depth {
                    assert_eq!(whole.calls.len(), 1, "{context}: {whole:?}");
                }
                if n + 1 > max_depth {
                    assert!(whole.calls.is_empty(), "{context}");
                    assert!(
                        whole
                            .diagnostics
                            .iter()
                            .any(|d| d.message.contains(&format!("deeper than {max_depth}"))),
                        "{context}: {:?}",
                        whole.diagnostics
                    );
                }
                for pushes in [chars(&text), chunk(&text, &[4, 9, 17, 30, 41, 57])] {
                    let s = streamed(&pushes, &o);
                    let calls = |p: &toolcall_core::Parsed| {
                        p.calls
                            .iter()
                            .map(|c| (c.name.clone(), c.arguments.clone()))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(calls(&s), calls(&whole), "{context}: streamed");
                    let errors = |p: &toolcall_core::Parsed| {
                        p.diagnostics
                            .iter()
                            .filter(|d| d.level == toolcall_core::Level::Error)
                            .map(|d| d.message.clone())
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(errors(&s), errors(&whole), "{context}: streamed");
                }
            }
        }
    }
}
