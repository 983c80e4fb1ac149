//! The one repair pass (V-5): turns the near-JSON models commonly write into JSON.
//!
//! Repairs, each recorded as a [`Repair`]: trailing commas, single-quoted strings, Python
//! `True`/`False`/`None`, unquoted keys, `//` and `/* */` comments, literal newlines and tabs
//! inside strings. The output is always re-parsed by serde_json; whatever still fails is an
//! error for the caller, never a guess. Valid JSON takes the fast path (one serde_json parse).
//! Hand-written because the crates tried (jsonrepair, llm_json) either produced invalid
//! output or silently dropped data (see CRATES.md), and we need the list of repairs made.

use serde_json::Value;
use toolcall_core::Repair;

/// Parses `s` as JSON, repairing it when it is not. Returns the value and the repairs made.
pub(crate) fn parse_lenient(s: &str) -> Result<(Value, Vec<Repair>), String> {
    match serde_json::from_str::<Value>(s) {
        Ok(v) => Ok((v, Vec::new())),
        Err(first) => {
            // No byte any repair starts from: `repair_text` would find nothing to repair,
            // and the error stands (a flood of `[TOOL_CALLS]` reads `[TOOL_CALLS]` as a
            // broken list once a region).
            if !might_repair(s) {
                return Err(message(&first));
            }
            let (fixed, kinds) = repair_text(s);
            if kinds.is_empty() {
                return Err(message(&first));
            }
            match serde_json::from_str::<Value>(&fixed) {
                Ok(v) => Ok((v, kinds.into_iter().map(describe).collect())),
                Err(_) => Err(message(&first)),
            }
        }
    }
}

/// [`parse_lenient`], for a text likely to fail as the last one did: a text (of at most
/// [`FAILED_MAX`] bytes) that failed last time fails again with the same message (the
/// result is a function of the text alone), without serde_json's failed parse and the
/// formatting of its error. For a reader's value that the one-shot decode already failed
/// on: a flood of one broken value (`[TOOL_CALLS][TOOL_CALLS]…` reads `[TOOL_CALLS]` once
/// a region) measured 24.54 → 14.98 M instructions one-shot at 128 KB; checked first in
/// every `parse_lenient` it cost `pythonic/small` 1.6 %.
pub(crate) fn parse_lenient_recalling(s: &str) -> Result<(Value, Vec<Repair>), String> {
    if s.len() > FAILED_MAX {
        return parse_lenient(s);
    }
    if let Some(message) = LAST_FAILED
        .with_borrow(|(text, message)| (!text.is_empty() && text == s).then(|| message.clone()))
    {
        return Err(message);
    }
    let out = parse_lenient(s);
    if let Err(message) = &out {
        LAST_FAILED.with_borrow_mut(|(text, last)| {
            text.clear();
            text.push_str(s);
            last.clear();
            last.push_str(message);
        });
    }
    out
}

/// The longest text whose failure [`parse_lenient_recalling`] remembers (a flood's unit,
/// not a long value: the compare is cheap next to what it saves only for short texts).
const FAILED_MAX: usize = 64;

thread_local! {
    /// The last text (at most [`FAILED_MAX`] bytes, non-empty) [`parse_lenient_recalling`]
    /// failed on, with its error message.
    static LAST_FAILED: std::cell::RefCell<(String, String)> =
        const { std::cell::RefCell::new((String::new(), String::new())) };
}

/// Whether `s` holds something [`repair_text`] could repair: a quote `'`, a `/` (comments),
/// a `,` (trailing commas), a `:` (unquoted keys), a control character (raw inside a
/// string) or `True`/`False`/`None`. A superset of what it notes, checked without its
/// copy of the text: `false` only where it would note no repair.
fn might_repair(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| match c {
        b'\'' | b'/' | b',' | b':' | 0..=0x1f => true,
        b'T' => b.get(i..).is_some_and(|r| r.starts_with(b"True")),
        b'F' => b.get(i..).is_some_and(|r| r.starts_with(b"False")),
        b'N' => b.get(i..).is_some_and(|r| r.starts_with(b"None")),
        _ => false,
    })
}

/// A decode error's message, written into room for it (`to_string` grows its string from
/// nothing, reallocating several times: a flood of broken markup writes one per opener).
fn message(e: &serde_json::Error) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(64);
    // Writing to a `String` cannot fail.
    let _ = write!(out, "{e}");
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    TrailingComma,
    SingleQuotes,
    PythonLiterals,
    UnquotedKeys,
    Comments,
    LiteralNewlines,
}

fn describe(kind: Kind) -> Repair {
    match kind {
        Kind::TrailingComma => Repair::new("trailing_comma", "removed a trailing comma"),
        Kind::SingleQuotes => Repair::new(
            "single_quotes",
            "turned single-quoted strings into JSON strings",
        ),
        Kind::PythonLiterals => {
            Repair::new("python_literals", "turned Python True/False/None into JSON")
        }
        Kind::UnquotedKeys => Repair::new("unquoted_keys", "quoted unquoted object keys"),
        Kind::Comments => Repair::new("comments", "removed comments"),
        Kind::LiteralNewlines => Repair::new(
            "literal_newlines",
            "escaped raw control characters inside strings",
        ),
    }
}

fn note(kinds: &mut Vec<Kind>, k: Kind) {
    if !kinds.contains(&k) {
        kinds.push(k);
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// One pass over `s`; returns the rewritten text and what was changed.
fn repair_text(s: &str) -> (String, Vec<Kind>) {
    let mut out = String::with_capacity(s.len() + 16);
    let mut kinds = Vec::new();
    // Sized once (a character takes at least a byte): collecting grows it from a guess,
    // reallocating a few times per call, which showed in floods of broken markup.
    let mut chars: Vec<(usize, char)> = Vec::with_capacity(s.len());
    chars.extend(s.char_indices());
    let mut i = 0;
    let mut last_sig = ' ';
    while let Some(&(_, c)) = chars.get(i) {
        match c {
            '"' | '\'' => {
                let quote = c;
                if quote == '\'' {
                    note(&mut kinds, Kind::SingleQuotes);
                }
                out.push('"');
                i += 1;
                while let Some(&(_, d)) = chars.get(i) {
                    i += 1;
                    match d {
                        '\\' => {
                            if let Some(&(_, e)) = chars.get(i) {
                                i += 1;
                                if e == '\'' && quote == '\'' {
                                    out.push('\'');
                                } else {
                                    out.push('\\');
                                    out.push(e);
                                }
                            }
                        }
                        d if d == quote => break,
                        '"' => out.push_str("\\\""),
                        '\n' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\n");
                        }
                        '\r' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\r");
                        }
                        '\t' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\t");
                        }
                        d if (d as u32) < 0x20 => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str(&format!("\\u{:04x}", d as u32));
                        }
                        d => out.push(d),
                    }
                }
                out.push('"');
                last_sig = '"';
            }
            '/' if matches!(chars.get(i + 1), Some((_, '/'))) => {
                note(&mut kinds, Kind::Comments);
                while let Some(&(_, d)) = chars.get(i) {
                    if d == '\n' {
                        break;
                    }
                    i += 1;
                }
            }
            '/' if matches!(chars.get(i + 1), Some((_, '*'))) => {
                note(&mut kinds, Kind::Comments);
                i += 2;
                while let Some(&(_, d)) = chars.get(i) {
                    i += 1;
                    if d == '*' && matches!(chars.get(i), Some((_, '/'))) {
                        i += 1;
                        break;
                    }
                }
            }
            ',' => {
                let mut j = i + 1;
                while let Some(&(_, d)) = chars.get(j) {
                    if !d.is_whitespace() {
                        break;
                    }
                    j += 1;
                }
                if matches!(chars.get(j), Some((_, '}' | ']'))) {
                    note(&mut kinds, Kind::TrailingComma);
                } else {
                    out.push(',');
                    last_sig = ',';
                }
                i += 1;
            }
            c if is_ident_start(c) => {
                let start = i;
                while let Some(&(_, d)) = chars.get(i) {
                    if !is_ident(d) {
                        break;
                    }
                    i += 1;
                }
                // The word is `s`'s own bytes (ASCII identifier characters): a slice, not a
                // collected copy (a flood of broken `[TOOL_CALLS]` markup repairs one word
                // a region).
                let from = chars.get(start).map_or(s.len(), |&(b, _)| b);
                let to = chars.get(i).map_or(s.len(), |&(b, _)| b);
                let word = s.get(from..to).unwrap_or("");
                let mut j = i;
                while let Some(&(_, d)) = chars.get(j) {
                    if !d.is_whitespace() {
                        break;
                    }
                    j += 1;
                }
                let is_key =
                    matches!(last_sig, '{' | ',') && matches!(chars.get(j), Some((_, ':')));
                if is_key {
                    note(&mut kinds, Kind::UnquotedKeys);
                    out.push('"');
                    out.push_str(word);
                    out.push('"');
                } else {
                    match word {
                        "True" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("true");
                        }
                        "False" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("false");
                        }
                        "None" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("null");
                        }
                        _ => out.push_str(word),
                    }
                }
                last_sig = 'a';
            }
            c => {
                out.push(c);
                if !c.is_whitespace() {
                    last_sig = c;
                }
                i += 1;
            }
        }
    }
    kinds.sort();
    (out, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(r: &[Repair]) -> Vec<&str> {
        r.iter().map(|r| r.kind.as_str()).collect()
    }

    // covers V-5
    #[test]
    fn each_repair_is_applied_and_reported() {
        let cases = [
            (r#"{"a":1,}"#, json!({"a":1}), "trailing_comma"),
            (
                r#"{'a':'it\'s "x"'}"#,
                json!({"a":"it's \"x\""}),
                "single_quotes",
            ),
            (
                r#"{"a":True,"b":None}"#,
                json!({"a":true,"b":null}),
                "python_literals",
            ),
            (
                r#"{a: 1, b_2: "x"}"#,
                json!({"a":1,"b_2":"x"}),
                "unquoted_keys",
            ),
            (
                "{\"a\":1 // one\n, /* two */ \"b\":2}",
                json!({"a":1,"b":2}),
                "comments",
            ),
            (
                "{\"a\":\"line\nbreak\"}",
                json!({"a":"line\nbreak"}),
                "literal_newlines",
            ),
        ];
        for (input, want, kind) in cases {
            let (v, r) = parse_lenient(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(v, want, "{input}");
            assert_eq!(kinds(&r), [kind], "{input}");
        }
    }

    // covers V-5
    #[test]
    fn valid_json_needs_no_repair_and_strings_are_untouched() {
        let (v, r) = parse_lenient(r#"{"a":"True, // not a comment,}"}"#).unwrap();
        assert_eq!(v, json!({"a":"True, // not a comment,}"}));
        assert!(r.is_empty());
    }

    // `might_repair` is false only where `repair_text` notes no repair: every input of
    // these tests, each cut at every byte, and markup floods.
    #[test]
    fn might_repair_covers_every_repair() {
        let mut inputs: Vec<String> = vec![
            r#"{"a":1,}"#.into(),
            r#"{'a':'it\'s "x"'}"#.into(),
            r#"{"a":True,"b":None}"#.into(),
            "[False]".into(),
            r#"{a: 1, b_2: "x"}"#.into(),
            "{\"a\":1 // one\n, /* two */ \"b\":2}".into(),
            "{\"a\":\"line\nbreak\"}".into(),
            "[\"tab\there\", \"bell\u{7}\"]".into(),
            "[TOOL_CALLS]".into(),
            "[Nonesuch, Truer]".into(),
            r#"{"a":1,"b""#.into(),
            "{a b c}".into(),
        ];
        let whole = inputs.clone();
        for s in &whole {
            inputs.extend(
                (0..s.len())
                    .filter(|&i| s.is_char_boundary(i))
                    .map(|i| s[..i].to_owned()),
            );
            inputs.extend(
                (0..s.len())
                    .filter(|&i| s.is_char_boundary(i))
                    .map(|i| s[i..].to_owned()),
            );
        }
        let mut skipped = 0;
        for s in &inputs {
            if !might_repair(s) {
                skipped += 1;
                assert!(repair_text(s).1.is_empty(), "{s:?}");
            }
        }
        assert!(skipped > 20, "{skipped}");
    }

    // covers R-6
    #[test]
    fn unrepairable_input_is_an_error() {
        for bad in [r#"{"a":1,"b""#, r#"{"a": }"#, "{a b c}", r#"{"a":1"#] {
            assert!(parse_lenient(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_recalled_failure_is_the_failure() {
        // Each text twice in a row (the second recalled), then the next: the same result as
        // `parse_lenient`'s every time, failures and successes alike.
        let long = format!("[{}x]", "1, ".repeat(30));
        for text in [
            "[TOOL_CALLS]",
            "[TOOL_CALLS]",
            "{a b c}",
            "{'a': 1,}",
            "{'a': 1,}",
            "[1]",
            "[TOOL_CALLS]",
            &long,
            &long,
            "[x]",
        ] {
            assert_eq!(parse_lenient_recalling(text), parse_lenient(text), "{text}");
        }
    }
}
