//! Shared helpers for the integration tests: fixtures and a registry of the seed tools.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{Parsed, Registry, StreamEvent, ToolSpec};
use toolcall_parse::{FormatSelection, ParseOptions, StreamParser};

pub fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The tools of the seed apps (`tools.json`).
pub fn registry() -> Arc<Registry> {
    registry_from("tools.json")
}

/// The tools of the family fixtures (`families_tools.json`).
pub fn family_registry() -> Arc<Registry> {
    registry_from("families_tools.json")
}

fn registry_from(file: &str) -> Arc<Registry> {
    let list: Vec<Value> = serde_json::from_str(&fixture(file)).unwrap();
    let mut r = Registry::new();
    for t in list {
        r.add_spec(ToolSpec::new(
            t["name"].as_str().unwrap(),
            t["description"].as_str().unwrap_or(""),
            t["parameters"].clone(),
        ))
        .unwrap();
    }
    Arc::new(r)
}

pub fn auto() -> ParseOptions {
    ParseOptions::default()
}

pub fn with_tools() -> ParseOptions {
    ParseOptions {
        tools: Some(registry()),
        ..ParseOptions::default()
    }
}

pub fn only(format: &str, tools: bool) -> ParseOptions {
    ParseOptions {
        format: FormatSelection::Only(format.into()),
        tools: tools.then(registry),
        ..ParseOptions::default()
    }
}

/// `s` one character at a time.
pub fn chars(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut from = 0;
    for (i, _) in s.char_indices().skip(1) {
        parts.push(&s[from..i]);
        from = i;
    }
    parts.push(&s[from..]);
    parts
}

/// Splits `s` at the given cut points, moved back to char boundaries.
pub fn chunk<'a>(s: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = c % (s.len() + 1);
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for p in points {
        out.push(&s[from..p]);
        from = p;
    }
    out.push(&s[from..]);
    out
}

/// `chunks` pushed one after another into a [`StreamParser`], folded into the [`Parsed`] a
/// one-shot parse returns (text, finished calls, diagnostics) for comparing the two.
pub fn streamed(chunks: &[&str], options: &ParseOptions) -> Parsed {
    let mut p = StreamParser::new(options.clone());
    let mut events = Vec::new();
    for c in chunks {
        events.extend(p.push(c));
    }
    events.extend(p.finish());
    let mut out = Parsed::default();
    for e in events {
        match e {
            StreamEvent::Text { text } => out.text.push_str(&text),
            StreamEvent::CallFinished { call, .. } => out.calls.push(call),
            StreamEvent::Diagnostic { diagnostic } => out.diagnostics.push(diagnostic),
            _ => {}
        }
    }
    out
}

/// Events as JSON with generated call ids blanked (each parser draws its own).
pub fn comparable(events: &[StreamEvent]) -> Vec<Value> {
    fn blank_ids(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "id" || k == "call_id" {
                        *v = Value::Null;
                    } else {
                        blank_ids(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(blank_ids),
            _ => {}
        }
    }
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            blank_ids(&mut v);
            v
        })
        .collect()
}

/// Splits `text` into pushes of `size` bytes, each moved on to a char boundary.
pub fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// What a parse found, call ids left out (each parse draws its own): the text, each call
/// with its arguments and span, every diagnostic.
pub fn found(p: &Parsed) -> (String, Vec<String>, Vec<String>) {
    let calls = p
        .calls
        .iter()
        .map(|c| format!("{} {} {:?}", c.name, c.arguments, c.origin.span))
        .collect();
    let diagnostics = p.diagnostics.iter().map(|d| format!("{d:?}")).collect();
    (p.text.clone(), calls, diagnostics)
}

/// Parses `text` one-shot and in 1-char, 7- and 64-byte pushes, asserts the pushes find
/// what the one-shot parse does ([`found`]), and returns the one-shot result.
pub fn assert_stream_equals_one_shot(text: &str, o: &ParseOptions, context: &str) -> Parsed {
    let whole = toolcall_parse::parse(text, o);
    for pushes in [chars(text), pieces(text, 7), pieces(text, 64)] {
        let s = streamed(&pushes, o);
        assert_eq!(
            found(&s),
            found(&whole),
            "{context}: streamed in {} pushes",
            pushes.len()
        );
    }
    whole
}
