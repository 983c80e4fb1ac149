//! Per-family fixtures (`tests/fixtures/<family>/cases.txt`, format in
//! `tests/fixtures/FAMILIES.md`): every case is parsed one-shot, byte by byte and at random
//! chunkings, and each result must match the case's expectation (R-1, R-2, W-FAM).
//!
//! The family list is the registry's (`toolcall_parse::formats()`): every model family has
//! fixtures, model names and template markers, or states why not. `PENDING` holds
//! registered families whose fixtures describe variants the reader does not read yet.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{chars, chunk, comparable, family_registry};

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use toolcall_core::{Level, StreamEvent};
use toolcall_parse::{
    FormatId, FormatSelection, ParseOptions, ReplyEnd, StreamParser, Untyped, parse,
};

/// Every model family in the registry: those with no fixtures of their own say why
/// (`FormatInfo::generic_because`).
fn model_families() -> Vec<&'static str> {
    toolcall_parse::formats()
        .into_iter()
        .filter(|f| f.generic_because.is_none())
        .map(|f| f.id)
        .collect()
}

/// Registered, but the fixtures describe variants its reader does not read yet.
const PENDING: &[&str] = &[];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    text: String,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    calls: Vec<ExpectedCall>,
    #[serde(default = "none")]
    diagnostics: String,
    #[serde(default)]
    starts_in_reasoning: bool,
    #[serde(default = "yes")]
    tools: bool,
    #[serde(default = "yes")]
    auto: bool,
    /// How the reply ended (`ReplyEnd::from_finish_reason`); absent: unknown.
    #[serde(default)]
    end: Option<String>,
}

fn none() -> String {
    "none".into()
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct ExpectedCall {
    name: String,
    arguments: Value,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug)]
struct Case {
    family: String,
    name: String,
    output: String,
    expect: Expect,
}

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Reads one `cases.txt`: `=== case NAME`, the output lines, `=== expect`, one JSON value.
fn read_cases(family: &str, path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cases = Vec::new();
    let mut name: Option<String> = None;
    let mut output: Vec<&str> = Vec::new();
    let mut expect: Option<Vec<&str>> = None;
    let mut finish = |name: Option<String>, output: &[&str], expect: Option<Vec<&str>>| {
        let Some(name) = name else { return };
        let json = expect
            .unwrap_or_else(|| panic!("{family}/{name}: no `=== expect` section"))
            .join("\n");
        let expect: Expect = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{family}/{name}: bad expectation: {e}"));
        assert!(
            ["none", "warning", "error"].contains(&expect.diagnostics.as_str()),
            "{family}/{name}: diagnostics is none, warning or error"
        );
        cases.push(Case {
            family: family.to_owned(),
            name,
            output: output.join("\n"),
            expect,
        });
    };
    for line in text.split('\n') {
        if let Some(n) = line.strip_prefix("=== case ") {
            finish(name.take(), &output, expect.take());
            output.clear();
            name = Some(n.trim().to_owned());
        } else if line == "=== expect" {
            assert!(name.is_some(), "{family}: `=== expect` before a case");
            expect = Some(Vec::new());
        } else if let Some(e) = expect.as_mut() {
            e.push(line);
        } else if name.is_some() {
            output.push(line);
        }
    }
    finish(name, &output, expect);
    cases
}

fn all_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cases.txt").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let family = dir.file_name().unwrap().to_str().unwrap().to_owned();
        out.extend(read_cases(&family, &dir.join("cases.txt")));
    }
    out
}

fn enabled(family: &str) -> bool {
    FormatId::from_name(family).is_some() && !PENDING.contains(&family)
}

fn enabled_cases() -> Vec<Case> {
    all_cases()
        .into_iter()
        .filter(|c| enabled(&c.family))
        .collect()
}

/// The option sets a case runs under: its family alone, and auto mode unless opted out.
fn option_sets(case: &Case) -> Vec<(&'static str, ParseOptions)> {
    let base = ParseOptions {
        tools: case.expect.tools.then(family_registry),
        starts_in_reasoning: case.expect.starts_in_reasoning,
        reply_end: case
            .expect
            .end
            .as_deref()
            .map_or(ReplyEnd::Unknown, ReplyEnd::from_finish_reason),
        ..ParseOptions::default()
    };
    let mut sets = vec![(
        "only",
        ParseOptions {
            format: FormatSelection::Only(case.family.clone()),
            ..base.clone()
        },
    )];
    if case.expect.auto {
        sets.push(("auto", base));
    }
    sets
}

/// What a parse produced, in the terms of an expectation.
#[derive(Debug, PartialEq)]
struct Seen {
    text: String,
    reasoning: String,
    calls: Vec<(String, Value, String, String)>,
    worst: String,
}

/// Whitespace runs collapse to one space and the ends are trimmed: where the newlines
/// around a removed block go is the engine's policy, not the family's.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn worst(levels: impl Iterator<Item = Level>) -> String {
    let mut w = "none";
    for l in levels {
        match l {
            Level::Error => w = "error",
            Level::Warning if w == "none" => w = "warning",
            _ => {}
        }
    }
    w.to_owned()
}

fn one_shot(case: &Case, o: &ParseOptions) -> Seen {
    let p = parse(&case.output, o);
    Seen {
        text: squeeze(&p.text),
        reasoning: squeeze(&p.reasoning.concat()),
        calls: p
            .calls
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.arguments.clone(),
                    c.call_id.to_string(),
                    c.origin.format.to_string(),
                )
            })
            .collect(),
        worst: worst(p.diagnostics.iter().map(|d| d.level)),
    }
}

fn streamed(chunks: &[&str], o: &ParseOptions) -> Seen {
    let mut sp = StreamParser::new(o.clone());
    let mut events = Vec::new();
    for c in chunks {
        events.extend(sp.push(c));
    }
    events.extend(sp.finish());
    let (mut text, mut reasoning, mut calls, mut levels) =
        (String::new(), String::new(), Vec::new(), Vec::new());
    let mut started: Vec<(String, String)> = Vec::new();
    for e in events {
        match e {
            StreamEvent::Text { text: t } => text.push_str(&t),
            StreamEvent::Reasoning { text: t } => reasoning.push_str(&t),
            StreamEvent::CallStarted { index, name, .. } => {
                assert_eq!(index, started.len(), "call indexes are dense");
                started.push((name, String::new()));
            }
            StreamEvent::ArgumentsDelta { index, fragment } => started[index].1.push_str(&fragment),
            StreamEvent::CallFinished { index, call } => {
                assert_eq!(started[index].0, call.name, "announced under its name");
                if call.origin.repairs.is_empty() {
                    let fragments: Value =
                        serde_json::from_str(&started[index].1).unwrap_or(Value::Null);
                    assert_eq!(fragments, call.arguments, "fragments make the arguments");
                }
                calls.push((
                    call.name.clone(),
                    call.arguments.clone(),
                    call.call_id.to_string(),
                    call.origin.format.to_string(),
                ));
            }
            StreamEvent::Diagnostic { diagnostic } => levels.push(diagnostic.level),
        }
    }
    Seen {
        text: squeeze(&text),
        reasoning: squeeze(&reasoning),
        calls,
        worst: worst(levels.into_iter()),
    }
}

/// Checks a parse against the case; `how` names the run in the failure message.
fn check(case: &Case, how: &str, seen: &Seen) {
    let at = format!("{}/{} ({how})", case.family, case.name);
    let e = &case.expect;
    assert_eq!(seen.text, squeeze(&e.text), "{at}: visible text");
    assert_eq!(seen.reasoning, squeeze(&e.reasoning), "{at}: reasoning");
    assert_eq!(seen.worst, e.diagnostics, "{at}: worst diagnostic");
    assert_eq!(
        seen.calls.len(),
        e.calls.len(),
        "{at}: calls {:?}",
        seen.calls
    );
    for (got, want) in seen.calls.iter().zip(&e.calls) {
        assert_eq!(got.0, want.name, "{at}: name");
        assert_eq!(got.1, want.arguments, "{at}: arguments of {}", want.name);
        assert_eq!(got.3, case.family, "{at}: format of {}", want.name);
        if let Some(id) = &want.id {
            assert_eq!(&got.2, id, "{at}: call id of {}", want.name);
        }
    }
}

#[test]
fn every_fixture_file_is_well_formed() {
    let cases = all_cases();
    assert!(cases.len() >= 100, "fixtures found: {}", cases.len());
    for c in &cases {
        assert!(
            FormatId::from_name(&c.family).is_some(),
            "{}: not a registered family id",
            c.family
        );
        assert!(
            !c.output.is_empty(),
            "{}/{}: empty output",
            c.family,
            c.name
        );
        for call in &c.expect.calls {
            assert!(
                call.arguments.is_object(),
                "{}/{}: arguments",
                c.family,
                c.name
            );
        }
        if c.expect.diagnostics == "error" && c.expect.calls.is_empty() {
            // A broken call keeps its raw text in the reply.
            assert!(
                !c.expect.text.is_empty(),
                "{}/{}: raw text kept",
                c.family,
                c.name
            );
        }
    }
    for family in model_families() {
        assert!(
            cases.iter().any(|c| c.family == family),
            "no fixtures for {family}"
        );
    }
}

// A family's knowledge lives in its module: every registered family has model names and
// template markers (so `toolcall detect` and `--model` can name it) and fixtures, or says
// why it has none.
#[test]
fn every_family_has_names_markers_and_fixtures_or_says_why() {
    let cases = all_cases();
    for f in toolcall_parse::formats() {
        if let Some(why) = f.generic_because {
            assert!(why.len() > 10, "{}: a reason, not a placeholder", f.id);
            continue;
        }
        assert!(!f.model_names.is_empty(), "{}: no model-name glob", f.id);
        assert!(
            !f.template_markers.is_empty(),
            "{}: no template marker",
            f.id
        );
        assert!(
            cases.iter().any(|c| c.family == f.id),
            "{}: no fixtures",
            f.id
        );
        for glob in f.model_names {
            let matched = toolcall_parse::model_family(&glob.replace(['*', '?'], "x"));
            assert_eq!(
                matched.map(|m| m.family),
                Some(f.id),
                "{}: {glob} names another family or none",
                f.id
            );
        }
        // A template writing the family's markers (and nothing else) names it: no other
        // family's markers outweigh or shadow them (`toolcall detect`).
        let template = f.template_markers.join(" {{ tc.name }} ");
        let detected = toolcall_parse::detect_template(&template).unwrap();
        assert_eq!(
            detected.family.as_deref(),
            Some(f.id),
            "{}: a template of its markers is detected as another family",
            f.id
        );
    }
}

#[test]
fn names_are_unique_within_a_family() {
    let cases = all_cases();
    for (i, a) in cases.iter().enumerate() {
        for b in &cases[i + 1..] {
            assert!(
                a.family != b.family || a.name != b.name,
                "{}/{} twice",
                a.family,
                a.name
            );
        }
    }
}

#[test]
fn one_shot_and_byte_by_byte_match_the_expectation() {
    for case in enabled_cases() {
        for (how, o) in option_sets(&case) {
            check(&case, &format!("{how}, one-shot"), &one_shot(&case, &o));
            let parts = chars(&case.output);
            check(&case, &format!("{how}, per char"), &streamed(&parts, &o));
        }
    }
}

// `push` takes its own path for a push that wakes no waiting reader
// (`ReadCx::wake`), and `push_into` does not: after every push of every fixture, at the
// small sizes where most pushes skip the reader, both send the same events.
#[test]
fn push_and_push_into_send_the_same_events_after_every_push() {
    for case in enabled_cases() {
        for (how, o) in option_sets(&case) {
            for size in [1, 3, 4, 7] {
                let mut by_vec = StreamParser::new(o.clone());
                let mut by_buffer = StreamParser::new(o.clone());
                let mut buffer = Vec::new();
                for (i, piece) in common::pieces(&case.output, size).into_iter().enumerate() {
                    buffer.clear();
                    by_buffer.push_into(piece, &mut buffer);
                    assert_eq!(
                        comparable(&by_vec.push(piece)),
                        comparable(&buffer),
                        "{}/{} ({how}), {size}-byte pushes, push {i}",
                        case.family,
                        case.name
                    );
                }
                buffer.clear();
                by_buffer.finish_into(&mut buffer);
                assert_eq!(
                    comparable(&by_vec.finish()),
                    comparable(&buffer),
                    "{}/{} ({how}), {size}-byte pushes, finish",
                    case.family,
                    case.name
                );
            }
        }
    }
}

/// The events of one `push_events` (or `finish_events`), as owned events.
fn owned(events: toolcall_parse::Events<'_>) -> Vec<StreamEvent> {
    events.map(toolcall_core::Event::into_owned).collect()
}

// `push_events` records the engine's events in its own buffers (borrowed views), and
// `push_into` appends them as owned events: after every push of every fixture, at the sizes
// where most pushes skip the reader and at once, both send the same events.
#[test]
fn push_events_and_push_into_send_the_same_events_after_every_push() {
    for case in enabled_cases() {
        for (how, o) in option_sets(&case) {
            for size in [1, 3, 4, 7, case.output.len().max(1)] {
                let mut by_events = StreamParser::new(o.clone());
                let mut by_buffer = StreamParser::new(o.clone());
                let mut buffer = Vec::new();
                for (i, piece) in common::pieces(&case.output, size).into_iter().enumerate() {
                    buffer.clear();
                    by_buffer.push_into(piece, &mut buffer);
                    assert_eq!(
                        comparable(&owned(by_events.push_events(piece))),
                        comparable(&buffer),
                        "{}/{} ({how}), {size}-byte pushes, push {i}",
                        case.family,
                        case.name
                    );
                }
                buffer.clear();
                by_buffer.finish_into(&mut buffer);
                assert_eq!(
                    comparable(&owned(by_events.finish_events())),
                    comparable(&buffer),
                    "{}/{} ({how}), {size}-byte pushes, finish",
                    case.family,
                    case.name
                );
                assert_eq!(by_events.finish_events().len(), 0, "a second finish");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn any_chunking_matches_the_expectation(
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
        which in any::<usize>(),
    ) {
        let cases = enabled_cases();
        if cases.is_empty() {
            return Ok(());
        }
        let case = &cases[which % cases.len()];
        for (how, o) in option_sets(case) {
            let parts = chunk(&case.output, &cuts);
            check(case, &format!("{how}, chunks {parts:?}"), &streamed(&parts, &o));
        }
    }

    #[test]
    fn push_events_equal_push_into_at_any_chunking(
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
        which in any::<usize>(),
    ) {
        let cases = enabled_cases();
        if cases.is_empty() {
            return Ok(());
        }
        let case = &cases[which % cases.len()];
        for (how, o) in option_sets(case) {
            let parts = chunk(&case.output, &cuts);
            let mut by_events = StreamParser::new(o.clone());
            let mut by_buffer = StreamParser::new(o.clone());
            let (mut events, mut buffer) = (Vec::new(), Vec::new());
            for piece in &parts {
                events.extend(owned(by_events.push_events(piece)));
                by_buffer.push_into(piece, &mut buffer);
            }
            events.extend(owned(by_events.finish_events()));
            by_buffer.finish_into(&mut buffer);
            prop_assert_eq!(
                comparable(&events),
                comparable(&buffer),
                "{}/{} ({}), chunks {:?}",
                &case.family,
                &case.name,
                how,
                &parts
            );
        }
    }
}

/// Families whose arguments stream as the JSON their values convert to (text-valued tags,
/// Gemma 4, Python call lists), with their block's closing tag: a fragment at least per
/// completed parameter, and the fragments are exactly the final arguments.
const PARAM_STREAMING: &[(&str, &[&str])] = &[
    ("qwen3_coder", &["</tool_call>"]),
    ("seed_oss", &["</seed:tool_call>"]),
    ("glm", &["</tool_call>"]),
    ("minimax_m2", &["</minimax:tool_call>"]),
    ("hunyuan", &["</tool_calls>", "</tool_calls:"]),
    ("minimax_m3", &["]<]minimax[>[</tool_call>"]),
    ("kimi_k3", &["<|close|>tools<|sep|>"]),
    ("minicpm5", &["</function>"]),
    ("dots", &["</dots_function_call>"]),
    ("gigachat35", &["</｜GCML｜tool_calls>"]),
    ("k2_horizon", &["</ifm|tool_calls>"]),
    ("step3", &["<｜tool_calls_end｜>"]),
    (
        "deepseek_dsml",
        &["</｜DSML｜function_calls>", "</｜DSML｜tool_calls>"],
    ),
    ("gemma4", &["<tool_call|>"]),
    ("functiongemma", &["<end_function_call>"]),
    ("llama4_pythonic", &["<|python_end|>"]),
    ("lfm2", &["<|tool_call_end|>"]),
    ("olmo3", &["</function_calls>"]),
    // No closing marker: the pieces test shows its arguments arrive before the `)`.
    ("llama3_builtin", &[]),
];

/// Per finished call: (concatenated fragments, final arguments serialised), and the input
/// length pushed when each call's first fragment arrived.
fn fragments(chunks: &[&str], o: &ParseOptions) -> (Vec<(String, String)>, Vec<usize>) {
    let mut sp = StreamParser::new(o.clone());
    let mut started: Vec<String> = Vec::new();
    let mut first_at: Vec<usize> = Vec::new();
    let mut finished = Vec::new();
    let mut pushed = 0;
    let mut events = Vec::new();
    for c in chunks {
        pushed += c.len();
        for e in sp.push(c) {
            if let StreamEvent::ArgumentsDelta { index, .. } = &e
                && first_at.len() == *index
            {
                first_at.push(pushed);
            }
            events.push(e);
        }
    }
    events.extend(sp.finish());
    for e in events {
        match e {
            StreamEvent::CallStarted { .. } => started.push(String::new()),
            StreamEvent::ArgumentsDelta { index, fragment } => started[index].push_str(&fragment),
            StreamEvent::CallFinished { index, call } => {
                finished.push((started[index].clone(), call.arguments.to_string()));
            }
            _ => {}
        }
    }
    (finished, first_at)
}

fn param_streaming_cases() -> Vec<(Case, &'static [&'static str])> {
    enabled_cases()
        .into_iter()
        .filter_map(|c| {
            let close = PARAM_STREAMING.iter().find(|(f, _)| *f == c.family)?.1;
            Some((c, close))
        })
        .collect()
}

// Issue #9: text-valued families send a fragment as each parameter completes, before the
// block closes, and the fragments are the final arguments string exactly.
#[test]
fn text_valued_arguments_stream_before_the_block_closes() {
    let cases = param_streaming_cases();
    for (f, _) in PARAM_STREAMING {
        assert!(
            cases.iter().any(|(c, _)| c.family == *f),
            "no cases for {f}"
        );
    }
    let mut early = 0;
    for (case, close) in &cases {
        for (how, o) in option_sets(case) {
            let (calls, first_at) = fragments(&chars(&case.output), &o);
            for (sent, args) in &calls {
                assert_eq!(sent, args, "{}/{} ({how})", case.family, case.name);
            }
            let first_has_args = case
                .expect
                .calls
                .first()
                .is_some_and(|c| c.arguments.as_object().is_some_and(|m| !m.is_empty()));
            // Markup inside reasoning is no block of the reply: a call taken from there
            // arrives when the reply ends (`ReasoningCalls::TakeIfNoneAfter`).
            let markup_in_reasoning = close.iter().any(|t| case.expect.reasoning.contains(t));
            // K2 Horizon's JSON layout is sent whole when its group closes (its text-valued
            // layouts stream).
            // MiniCPM5's tags respelt by a detokenizer (`<functionname=`) are read whole
            // when the element closes.
            let whole_at_close = (case.family == "k2_horizon" && case.name.starts_with("json_"))
                || (case.family == "minicpm5" && case.name.starts_with("tags_"));
            if how == "only" && first_has_args && !markup_in_reasoning && !whole_at_close {
                // Llama 3's built-in call has no closing marker, and a server may strip
                // any family's: the output's end closes the block then.
                let closed_at = close
                    .iter()
                    .filter_map(|t| case.output.find(t))
                    .min()
                    .unwrap_or(case.output.len());
                assert!(
                    first_at.first().is_some_and(|&at| at <= closed_at),
                    "{}/{}: first fragment at {first_at:?}, block closes at {closed_at}",
                    case.family,
                    case.name
                );
                early += 1;
            }
        }
    }
    assert!(early >= PARAM_STREAMING.len() * 3, "{early}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    // Any chunking: the fragments of every call are exactly its final arguments.
    #[test]
    fn text_valued_fragments_are_the_final_arguments(
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
        which in any::<usize>(),
    ) {
        let cases = param_streaming_cases();
        let (case, _) = &cases[which % cases.len()];
        for (how, o) in option_sets(case) {
            let parts = chunk(&case.output, &cuts);
            let (calls, _) = fragments(&parts, &o);
            prop_assert_eq!(calls.len(), case.expect.calls.len(), "{} {}", how, case.name);
            for (sent, args) in &calls {
                prop_assert_eq!(sent, args, "{}/{} ({}) {:?}", &case.family, &case.name, how, &parts);
            }
        }
    }
}

/// Families whose arguments stream in pieces as they arrive (JSON after a name, or
/// `{name, arguments}` objects behind a marker: the raw JSON text; Gemma 4 and the Python
/// call lists: the JSON of each completed `key:value` / `key=value`), not in one piece when
/// the call ends.
const STREAMED_IN_PIECES: &[&str] = &[
    "functionary_v3_1",
    "functionary_v3_2",
    "mistral",
    "deepseek_v3",
    "deepseek_v3_1",
    "kimi_k2",
    "gpt_oss",
    "gemma4",
    "functiongemma",
    "nemotron",
    "tool_calls_tag",
    "longcat",
    "internlm",
    "granite",
    "functools",
    "cohere",
    "apertus",
    "llama4_pythonic",
    "lfm2",
    "olmo3",
    "llama3_builtin",
];

/// Per finished call, pushed char by char: (name, how many pushes carried a fragment of
/// its arguments, how many arguments).
fn pieces(output: &str, o: &ParseOptions) -> Vec<(String, usize, usize)> {
    let mut sp = StreamParser::new(o.clone());
    let mut counts: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let parts = chars(output);
    let mut events: Vec<Vec<StreamEvent>> = parts.iter().map(|c| sp.push(c)).collect();
    events.push(sp.finish());
    for push in events {
        let mut seen_here = std::collections::HashSet::new();
        for e in push {
            match e {
                StreamEvent::CallStarted { index, .. } => {
                    counts.resize(counts.len().max(index + 1), 0);
                }
                StreamEvent::ArgumentsDelta { index, .. } if seen_here.insert(index) => {
                    counts[index] += 1;
                }
                StreamEvent::CallFinished { index, call } => {
                    let keys = call.arguments.as_object().map_or(0, |m| m.len());
                    out.push((call.name.clone(), counts[index], keys));
                }
                _ => {}
            }
        }
    }
    out
}

// Issue #9: every family streams its arguments as they arrive; a family that sent them in
// one piece when the call closed fails here.
#[test]
fn arguments_stream_in_pieces_as_they_arrive() {
    for family in STREAMED_IN_PIECES {
        let cases: Vec<Case> = enabled_cases()
            .into_iter()
            .filter(|c| {
                c.family == *family
                    && c.expect
                        .calls
                        .iter()
                        .any(|k| k.arguments != serde_json::json!({}))
            })
            .collect();
        let mut streamed = 0;
        for case in &cases {
            let o = &option_sets(case)[0].1;
            let calls = pieces(&case.output, o);
            if calls.iter().any(|(_, n, keys)| *keys > 0 && *n >= 2) {
                streamed += 1;
            }
            for (name, n, keys) in &calls {
                // Gemma 4 and Python calls send per completed argument: one is one piece. Mistral's
                // `[TOOL_CALLS][…]` list gives each call's id after its arguments, so it is
                // sent whole (an announced call keeps the id it was announced with).
                let whole_list = *family == "mistral" && case.output.contains("[TOOL_CALLS][");
                let several = match *family {
                    _ if whole_list => usize::MAX,
                    "gemma4" | "functiongemma" | "llama4_pythonic" | "lfm2" | "olmo3"
                    | "llama3_builtin" => 2,
                    _ => 1,
                };
                assert!(
                    *keys < several || *n >= 2,
                    "{family}/{}: the arguments of {name} came in one piece",
                    case.name
                );
            }
        }
        assert!(
            streamed >= 3.min(cases.len()) && streamed * 2 >= cases.len(),
            "{family}: {streamed} of {} cases stream their arguments in pieces",
            cases.len()
        );
    }
}

/// Text-valued families: a call to `get_weather` whose `city` value goes between the two
/// strings, and a `days` integer after it.
const TEXT_VALUE_CALLS: &[(&str, &str, &str)] = &[
    (
        "qwen3_coder",
        "<tool_call>\n<function=get_weather>\n<parameter=city>",
        "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    ),
    (
        "seed_oss",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>",
        "</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>",
    ),
    (
        "glm",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>",
        "</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
    ),
    (
        "minimax_m2",
        "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">",
        "</parameter>\n<parameter name=\"days\">3</parameter>\n</invoke>\n</minimax:tool_call>",
    ),
    (
        "step3",
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"get_weather\"><steptml:parameter name=\"city\">",
        "</steptml:parameter><steptml:parameter name=\"days\">3</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
    ),
    (
        "deepseek_dsml",
        "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">",
        "</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    ),
    (
        "gigachat35",
        "<｜GCML｜tool_calls>\n<｜GCML｜invoke name=\"get_weather\">\n<｜GCML｜parameter name=\"city\" string=\"true\">",
        "</｜GCML｜parameter>\n<｜GCML｜parameter name=\"days\" string=\"false\">3</｜GCML｜parameter>\n</｜GCML｜invoke>\n</｜GCML｜tool_calls>",
    ),
    (
        "k2_horizon",
        "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>",
        "</ifm|arg_value><ifm|arg_key>days</ifm|arg_key><ifm|arg_type>integer</ifm|arg_type><ifm|arg_value>3</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
    ),
    (
        "kimi_k3",
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>",
        "<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"integer\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
    ),
];

/// Families whose text values are their bytes exactly (no layout newline dropped at either
/// end), as their reference readers keep them.
const VERBATIM: &[&str] = &["step3", "k2_horizon"];

/// The text `family` keeps of a value written `v`.
fn kept<'v>(family: &str, v: &'v str) -> &'v str {
    if VERBATIM.contains(&family) {
        v
    } else {
        layout_trimmed(v)
    }
}

/// Every fragment sent while `chunks` are pushed, concatenated, then the same after
/// `finish` with the finished calls' arguments.
fn sent_then_final(chunks: &[&str], o: &ParseOptions) -> (String, String, Vec<Value>) {
    let mut sp = StreamParser::new(o.clone());
    let frag = |events: Vec<StreamEvent>, into: &mut String, args: &mut Vec<Value>| {
        for e in events {
            match e {
                StreamEvent::ArgumentsDelta { fragment, .. } => into.push_str(&fragment),
                StreamEvent::CallFinished { call, .. } => args.push(call.arguments),
                _ => {}
            }
        }
    };
    let (mut sent, mut args) = (String::new(), Vec::new());
    for c in chunks {
        frag(sp.push(c), &mut sent, &mut args);
    }
    let before = sent.clone();
    frag(sp.finish(), &mut sent, &mut args);
    (before, sent, args)
}

// Issue #9: a text value streams as its bytes arrive (escaped JSON string pieces), holding
// back only what may still be its closing tag or its last layout newline; the fragments
// then make the final arguments exactly, at any chunking.
#[test]
fn text_values_stream_as_their_bytes_arrive() {
    let value = "\nLine \"one\" </para\tmid é 🌤 <b>x</b>\nend\n";
    for &(family, before, after) in TEXT_VALUE_CALLS {
        let trimmed = kept(family, value);
        for tools in [false, true] {
            let o = ParseOptions {
                format: FormatSelection::Only(family.to_owned()),
                tools: tools.then(family_registry),
                ..ParseOptions::default()
            };
            let open = format!("{before}{value}");
            let whole = format!("{open}{after}");
            // Up to the value's last byte, per char: everything but the last newline (all
            // of it where the family keeps values verbatim).
            let (sent, _, _) = sent_then_final(&chars(&open), &o);
            let escaped = serde_json::to_string(&Value::String(trimmed.into())).unwrap();
            let want = format!("{{\"city\":{}", &escaped[..escaped.len() - 1]);
            assert_eq!(sent, want, "{family} (tools: {tools})");
            // Part of the closing tag: nothing more.
            let cut = format!("{open}{}", &after[..after.find('>').unwrap()]);
            assert_eq!(
                sent_then_final(&chars(&cut), &o).0,
                want,
                "{family}: tag held"
            );
            // Whole, at several chunkings: the fragments are the final arguments.
            // DSML's `string="false"` and Kimi K3's `type="integer"` read `3` as JSON;
            // elsewhere the schema decides.
            // Without a schema, GLM reads JSON (its reference parser's rule, `Untyped`).
            let literal = FormatId::from_name(family).unwrap().untyped() == Untyped::Literal;
            let days = if tools
                || literal
                || ["deepseek_dsml", "kimi_k3", "gigachat35", "k2_horizon"].contains(&family)
            {
                serde_json::json!(3)
            } else {
                serde_json::json!("3")
            };
            for size in [1, 3, 7, 64] {
                let bytes: Vec<usize> = (size..whole.len()).step_by(size).collect();
                let parts = chunk(&whole, &bytes);
                let (_, all, args) = sent_then_final(&parts, &o);
                assert_eq!(
                    args,
                    vec![serde_json::json!({"city": trimmed, "days": days})],
                    "{family}"
                );
                assert_eq!(all, args[0].to_string(), "{family} at {size}-byte pushes");
            }
        }
    }
}

/// The text a family's value layout keeps of `v`: one newline of layout off each end.
fn layout_trimmed(v: &str) -> &str {
    let v = v
        .strip_prefix("\r\n")
        .or_else(|| v.strip_prefix('\n'))
        .unwrap_or(v);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    // Issue #9: whatever a text value holds (markup-like text, a cut closing tag, CR/LF at
    // its ends, quotes, any Unicode) and however the reply is chunked, the calls are the
    // one-shot calls and the fragments are the final arguments exactly.
    #[test]
    fn any_text_value_streams_to_the_final_arguments(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just("<".to_owned()), Just("</".to_owned()), Just("</para".to_owned()),
                Just("</parameter".to_owned()), Just("</arg_value".to_owned()),
                Just("</steptml:parameter".to_owned()), Just("</｜DSML｜param".to_owned()),
                Just("</｜GCML｜param".to_owned()), Just("</ifm|arg_val".to_owned()),
                Just("\n".to_owned()), Just("\r".to_owned()), Just("\r\n".to_owned()),
                Just("\"".to_owned()), Just("\\".to_owned()), Just("é🌤".to_owned()),
                "[a-z ]{1,6}",
            ],
            0..12,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        which in any::<usize>(),
        tools in any::<bool>(),
    ) {
        let value: String = pieces.concat();
        let (family, before, after) = TEXT_VALUE_CALLS[which % TEXT_VALUE_CALLS.len()];
        let whole = format!("{before}{value}{after}");
        let o = ParseOptions {
            format: FormatSelection::Only(family.to_owned()),
            tools: tools.then(family_registry),
            ..ParseOptions::default()
        };
        let one = parse(&whole, &o);
        let parts = chunk(&whole, &cuts);
        let (_, sent, args) = sent_then_final(&parts, &o);
        let want: Vec<Value> = one.calls.iter().map(|c| c.arguments.clone()).collect();
        prop_assert_eq!(&args, &want, "{} {:?}", family, &parts);
        if let [only] = &args[..] {
            // Without a schema the family's rule may read the text as JSON or null
            // (`Untyped`, its own tests); the fragments still make the final arguments.
            let untyped = FormatId::from_name(family).unwrap().untyped();
            if tools || untyped == Untyped::Text {
                prop_assert_eq!(&only["city"], &Value::String(kept(family, &value).to_owned()));
            }
            prop_assert_eq!(sent, only.to_string(), "{} {:?}", family, &parts);
        }
    }
}

/// Where a fixture of several calls is cut inside its last call: in the middle of a text
/// argument of it that the output writes as is (the last place it appears); `None` when it
/// has none.
fn cut_inside_last_call(case: &Case) -> Option<String> {
    let last = case.expect.calls.last()?.arguments.as_object()?;
    let value = last
        .values()
        .filter_map(Value::as_str)
        .find(|v| v.chars().count() >= 2 && v.chars().all(|c| c.is_alphanumeric() || c == ' '))?;
    let at = case.output.rfind(value)?;
    let mut cut = at + value.len() / 2;
    while !case.output.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(case.output[..cut].to_owned())
}

/// What is wrong with a parse of a block cut inside its last call: the calls before it are
/// returned, the cut one is reported as truncated (one error), nothing else is flagged.
fn cut_fault(
    calls: &[(String, Value)],
    diagnostics: &[toolcall_core::Diagnostic],
    want: &[ExpectedCall],
) -> Option<String> {
    let want: Vec<(String, Value)> = want
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect();
    if calls != want.as_slice() {
        return Some(format!("calls {calls:?}"));
    }
    let flagged: Vec<(Level, &str)> = diagnostics
        .iter()
        .filter(|d| d.level != Level::Info)
        .map(|d| (d.level, d.message.as_str()))
        .collect();
    match flagged.as_slice() {
        [(Level::Error, m)] if m.contains("truncated") => None,
        _ => Some(format!("diagnostics {flagged:?}")),
    }
}

// Issue 21, each call in a block stands alone: every fixture of several calls, cut inside
// its last call, returns the calls before it and reports the cut one as truncated, in every
// family, one-shot and streamed, however the reply ended.
#[test]
fn a_cut_last_call_keeps_the_calls_before_it() {
    let mut faults = Vec::new();
    let mut covered = std::collections::BTreeSet::new();
    for case in enabled_cases() {
        if case.expect.calls.len() < 2 || case.expect.diagnostics != "none" {
            continue;
        }
        let Some(text) = cut_inside_last_call(&case) else {
            continue;
        };
        covered.insert(case.family.clone());
        let want = &case.expect.calls[..case.expect.calls.len() - 1];
        for (how, o) in option_sets(&case) {
            for end in [ReplyEnd::Unknown, ReplyEnd::Stopped, ReplyEnd::Cut] {
                let o = ParseOptions {
                    reply_end: end,
                    ..o.clone()
                };
                let p = parse(&text, &o);
                let calls: Vec<(String, Value)> = p
                    .calls
                    .iter()
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .collect();
                if let Some(f) = cut_fault(&calls, &p.diagnostics, want) {
                    faults.push(format!(
                        "{}/{} ({how}, {end:?}, one-shot): {f}",
                        case.family, case.name
                    ));
                }
                let mut sp = StreamParser::new(o.clone());
                let mut events = Vec::new();
                for c in chars(&text) {
                    events.extend(sp.push(c));
                }
                events.extend(sp.finish());
                let (mut calls, mut diagnostics) = (Vec::new(), Vec::new());
                for e in events {
                    match e {
                        StreamEvent::CallFinished { call, .. } => {
                            calls.push((call.name, call.arguments))
                        }
                        StreamEvent::Diagnostic { diagnostic } => diagnostics.push(diagnostic),
                        _ => {}
                    }
                }
                if let Some(f) = cut_fault(&calls, &diagnostics, want) {
                    faults.push(format!(
                        "{}/{} ({how}, {end:?}, per char): {f}",
                        case.family, case.name
                    ));
                }
            }
        }
    }
    eprintln!("covered {}: {covered:?}", covered.len());
    assert!(faults.is_empty(), "{}\n{}", faults.len(), faults.join("\n"));
}
