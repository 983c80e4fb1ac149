//! A reply cut inside the last call of a block (issue 21: each call in a block stands
//! alone). For every registered family whose markup holds several calls, the block is
//! written from the family's own declared markup (`FormatId::constraint_shape`, the data
//! `toolcall-constrain` writes grammars from): two complete calls, then a third cut inside
//! its arguments. The two complete calls are returned and the cut one is reported as
//! truncated, one-shot and streamed alike, whatever the caller says of how the reply ended.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{chars, family_registry, streamed};

use serde_json::{Map, Value, json};
use toolcall_core::{Level, Parsed};
use toolcall_parse::shape::{Args, Piece, Shape};
use toolcall_parse::{FormatId, FormatSelection, ParseOptions, ReplyEnd, parse};

/// Where the third call is cut: never part of a complete call.
const CUT: &str = "\u{2042}";

/// The canonical layout of `pieces` for the call `n` of a block: optional pieces left out,
/// the first of two layouts.
fn render(pieces: &[Piece], n: usize, name: &str, args: &Map<String, Value>, out: &mut String) {
    for p in pieces {
        match p {
            Piece::Lit(s) | Piece::Ws(s) => out.push_str(s),
            Piece::Name => out.push_str(name),
            Piece::NameString => out.push_str(&json!(name).to_string()),
            Piece::Index => out.push_str(&n.to_string()),
            Piece::CallId => out.push_str(&format!("call{n}abcd")),
            Piece::Optional(_) => {}
            Piece::Either(first, _) => render(first, n, name, args, out),
            Piece::JsonCall {
                id_key,
                name_key,
                args_key,
            } => {
                let mut o = Map::new();
                if let Some(k) = id_key {
                    o.insert((*k).into(), json!(format!("call{n}abcd")));
                }
                o.insert((*name_key).into(), json!(name));
                o.insert((*args_key).into(), Value::Object(args.clone()));
                out.push_str(&Value::Object(o).to_string());
            }
            Piece::Args(Args::Json) => out.push_str(&Value::Object(args.clone()).to_string()),
            Piece::Args(Args::Text(t)) => {
                for (key, value) in args {
                    out.push('\n');
                    out.push_str(t.key_open);
                    out.push_str(key);
                    let close = if value.is_string() {
                        t.key_close_text
                    } else {
                        t.key_close_json
                    };
                    render(close, n, name, args, out);
                    match value {
                        Value::String(s) => out.push_str(s),
                        other => out.push_str(&other.to_string()),
                    }
                    out.push_str(t.value_close);
                }
            }
        }
    }
}

/// The calls of the block; the third one's arguments hold [`CUT`].
fn calls() -> Vec<(&'static str, Map<String, Value>)> {
    let obj = |v: Value| v.as_object().unwrap().clone();
    vec![
        ("get_weather", obj(json!({"city": "Paris"}))),
        ("search", obj(json!({"query": "rust"}))),
        ("lookup_code", obj(json!({"code": format!("ab{CUT}cd")}))),
    ]
}

/// Two complete calls and the third cut inside its arguments, in `shape`'s markup (the
/// section's close never written: the reply ends inside the block).
fn cut_block(shape: &Shape) -> String {
    let mut out = String::new();
    if let Some((open, _)) = shape.section {
        render(open, 0, "", &Map::new(), &mut out);
    }
    for (n, (name, args)) in calls().iter().enumerate() {
        if n > 0 {
            render(shape.separator, n, name, args, &mut out);
        }
        render(shape.call, n, name, args, &mut out);
    }
    let at = out.find(CUT).unwrap();
    out.truncate(at);
    out
}

/// The families whose markup holds several calls in one reply: a section of calls, or
/// calls one by one in prose. A shape with no prose is the whole reply (one call).
fn block_families() -> Vec<(FormatId, &'static Shape)> {
    FormatId::all()
        .filter_map(|f| Some((f, f.constraint_shape()?)))
        .filter(|(_, s)| s.prose)
        .collect()
}

/// What is wrong with `p` as the parse of a cut block, if anything.
fn fault(p: &Parsed) -> Option<String> {
    let got: Vec<(&str, &Value)> = p
        .calls
        .iter()
        .map(|c| (c.name.as_str(), &c.arguments))
        .collect();
    let want = calls();
    let want: Vec<(&str, Value)> = want[..2]
        .iter()
        .map(|(n, a)| (*n, Value::Object(a.clone())))
        .collect();
    let want: Vec<(&str, &Value)> = want.iter().map(|(n, a)| (*n, a)).collect();
    if got != want {
        return Some(format!("calls {got:?}"));
    }
    let errors: Vec<&str> = p
        .diagnostics
        .iter()
        .filter(|d| d.level == Level::Error)
        .map(|d| d.message.as_str())
        .collect();
    if errors.len() != 1 || !errors[0].contains("truncated") {
        return Some(format!("errors {errors:?}"));
    }
    let warnings: Vec<&str> = p
        .diagnostics
        .iter()
        .filter(|d| d.level == Level::Warning)
        .map(|d| d.message.as_str())
        .collect();
    if !warnings.is_empty() {
        return Some(format!("warnings {warnings:?}"));
    }
    None
}

#[test]
fn a_cut_last_call_keeps_the_complete_calls_before_it() {
    let families = block_families();
    assert!(families.len() >= 25, "{} families", families.len());
    let mut faults = Vec::new();
    for (format, shape) in families {
        let text = cut_block(shape);
        for (sel, selection) in [
            ("only", FormatSelection::Only(format.as_str().into())),
            ("auto", FormatSelection::Auto),
        ] {
            for end in [ReplyEnd::Unknown, ReplyEnd::Stopped, ReplyEnd::Cut] {
                let options = ParseOptions {
                    format: selection.clone(),
                    tools: Some(family_registry()),
                    reply_end: end,
                    ..ParseOptions::default()
                };
                let mid = text.len() / 2;
                let mid = (0..=mid).rev().find(|&i| text.is_char_boundary(i)).unwrap();
                let runs = [
                    ("one-shot", parse(&text, &options)),
                    ("one push", streamed(&[&text], &options)),
                    ("halves", streamed(&[&text[..mid], &text[mid..]], &options)),
                    ("by char", streamed(&chars(&text), &options)),
                ];
                for (how, p) in runs {
                    if let Some(f) = fault(&p) {
                        faults.push(format!("{format} ({sel}, {end:?}, {how}): {f}\n  {text:?}"));
                    }
                }
            }
        }
    }
    assert!(faults.is_empty(), "{}\n{}", faults.len(), faults.join("\n"));
}

/// Families with no constraint shape whose fixtures' last call has no text argument to cut
/// (`families::a_cut_last_call_keeps_the_calls_before_it` covers the others): two complete
/// calls and a third cut inside its arguments, written by hand from their fixtures.
const UNSHAPED: &[(&str, &str)] = &[
    (
        "minicpm3",
        "<|tool_call_start|>\n```python\nget_weather(city=\"Paris\")\nsearch(query=\"rust\")\nlookup_code(code=\"ab",
    ),
    (
        "granite_20b_fc",
        "<function_call> {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n<function_call> {\"name\": \"search\", \"arguments\": {\"query\": \"rust\"}}\n<function_call> {\"name\": \"lookup_code\", \"arguments\": {\"code\": \"ab",
    ),
    (
        "inkling",
        "<|message_model|>get_weather<|content_invoke_tool_json|>{\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}<|end_message|><|message_model|>search<|content_invoke_tool_json|>{\"name\": \"search\", \"args\": {\"query\": \"rust\"}}<|end_message|><|message_model|>lookup_code<|content_invoke_tool_json|>{\"name\": \"lookup_code\", \"args\": {\"code\": \"ab",
    ),
    (
        "muse_glimmer",
        "<|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n<atem:invoke name=\"search\">\n<atem:parameter name=\"query\">rust</atem:parameter>\n</atem:invoke>\n<atem:invoke name=\"lookup_code\">\n<atem:parameter name=\"code\">ab",
    ),
    (
        "k2_horizon",
        "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call>\n<ifm|tool_call>search<ifm|arg_key>query</ifm|arg_key><ifm|arg_value>rust</ifm|arg_value></ifm|tool_call>\n<ifm|tool_call>lookup_code<ifm|arg_key>code</ifm|arg_key><ifm|arg_value>ab",
    ),
];

/// Second layouts a family reads beside the one its shape declares: Cohere's one object a
/// line (beside the JSON list).
const SECOND_LAYOUTS: &[(&str, &str)] = &[(
    "cohere",
    "<|START_ACTION|>\n{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n{\"tool_call_id\": \"1\", \"tool_name\": \"search\", \"parameters\": {\"query\": \"rust\"}}\n{\"tool_call_id\": \"2\", \"tool_name\": \"lookup_code\", \"parameters\": {\"code\": \"ab",
)];

#[test]
fn families_without_a_shape_keep_the_calls_before_a_cut_one() {
    let mut faults = Vec::new();
    for (family, text) in UNSHAPED.iter().chain(SECOND_LAYOUTS) {
        assert!(FormatId::from_name(family).is_some(), "{family}");
        for end in [ReplyEnd::Unknown, ReplyEnd::Stopped, ReplyEnd::Cut] {
            let options = ParseOptions {
                format: FormatSelection::Only((*family).into()),
                tools: Some(family_registry()),
                reply_end: end,
                ..ParseOptions::default()
            };
            let runs = [
                ("one-shot", parse(text, &options)),
                ("by char", streamed(&chars(text), &options)),
            ];
            for (how, p) in runs {
                if let Some(f) = fault(&p) {
                    faults.push(format!("{family} ({end:?}, {how}): {f}"));
                }
            }
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}
