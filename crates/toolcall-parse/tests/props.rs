//! Property tests: chunking never changes the result (R-1, R-2), render → parse round-trips
//! for every format, and arbitrary input never panics (R-7).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{auto, chunk, fixture, with_tools};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolcall_core::{StreamEvent, ToolCall};
use toolcall_parse::{ParseOptions, StreamParser, parse, parse_native};

/// name, arguments, format, span, repair kinds, model-given id.
type CallKey = (
    String,
    Value,
    String,
    std::ops::Range<usize>,
    Vec<String>,
    Option<String>,
);

/// What must not depend on chunking: text, reasoning, diagnostics and the calls (ids only
/// when the model gave them; generated ids are random by design).
#[derive(Debug, PartialEq)]
struct Outcome {
    text: String,
    reasoning: String,
    calls: Vec<CallKey>,
    diagnostics: Vec<String>,
}

fn key(c: &ToolCall, provided_ids: bool) -> CallKey {
    (
        c.name.clone(),
        c.arguments.clone(),
        c.origin.format.to_string(),
        c.origin.span.clone(),
        c.origin.repairs.iter().map(|r| r.kind.clone()).collect(),
        provided_ids.then(|| c.call_id.to_string()),
    )
}

fn provided(c: &ToolCall) -> bool {
    !c.call_id.as_str().starts_with("call_") || c.call_id.as_str().len() != 29
}

/// [`with_tools`] with a reply stopping at its second failed call attempt
/// (`Limits::max_failed_calls`): where it stops must not depend on chunking either.
fn failing_soon() -> ParseOptions {
    let mut o = with_tools();
    o.limits.max_failed_calls = 1;
    o
}

fn one_shot(text: &str, o: &ParseOptions) -> Outcome {
    let p = parse(text, o);
    Outcome {
        text: p.text,
        reasoning: p.reasoning.concat(),
        calls: p.calls.iter().map(|c| key(c, provided(c))).collect(),
        diagnostics: p
            .diagnostics
            .iter()
            .map(|d| serde_json::to_string(d).unwrap())
            .collect(),
    }
}

fn streamed(chunks: &[&str], o: &ParseOptions) -> Outcome {
    let mut sp = StreamParser::new(o.clone());
    let mut events = Vec::new();
    for c in chunks {
        events.extend(sp.push(c));
    }
    events.extend(sp.finish());
    let mut out = Outcome {
        text: String::new(),
        reasoning: String::new(),
        calls: vec![],
        diagnostics: vec![],
    };
    let mut started: Vec<(toolcall_core::CallId, String, String)> = Vec::new();
    let mut last_finished = None;
    for e in events {
        match e {
            StreamEvent::Text { text } => out.text.push_str(&text),
            StreamEvent::Reasoning { text } => out.reasoning.push_str(&text),
            StreamEvent::CallStarted {
                index,
                call_id,
                name,
            } => {
                assert_eq!(index, started.len(), "indexes are dense and in order");
                started.push((call_id, name, String::new()));
            }
            StreamEvent::ArgumentsDelta { index, fragment } => {
                started[index].2.push_str(&fragment);
            }
            StreamEvent::CallFinished { index, call } => {
                // Finished calls come in index order; each was started with its id and name,
                // and its fragments make up its arguments (raw text when announced early).
                assert!(last_finished.is_none_or(|l| l < index));
                last_finished = Some(index);
                let (id, name, fragments) = &started[index];
                assert_eq!(id, &call.call_id);
                assert_eq!(name, &call.name);
                let decoded: Value = serde_json::from_str(fragments).unwrap_or(Value::Null);
                if call.origin.repairs.is_empty() {
                    assert_eq!(decoded, call.arguments, "fragments {fragments:?}");
                }
                // R-3: arguments are always an object.
                assert!(call.arguments.is_object());
                out.calls.push(key(&call, provided(&call)));
            }
            StreamEvent::Diagnostic { diagnostic } => out
                .diagnostics
                .push(serde_json::to_string(&diagnostic).unwrap()),
        }
    }
    out
}

fn corpus() -> Vec<String> {
    let mut v: Vec<String> = [
        "replies/qwen_hermes.txt",
        "replies/mistral_v3.txt",
        "replies/mistral_v11.txt",
        "replies/llama_python_tag.txt",
        "replies/llama_json.txt",
        "replies/pythonic.txt",
        "replies/seed000_fenced.txt",
        "replies/seed000_raw.txt",
        "replies/seed001_open_app.json",
        "replies/seed001_text_only.json",
        "replies/seed004_kv_with_text.txt",
        "replies/seed004_measure.txt",
        "replies/openai_chat.json",
        "replies/responses.json",
        "replies/anthropic.json",
        "replies/gemini.json",
        "seeds/000_535aa69eb329f4ca.txt",
        "seeds/001_b1c94ea93d6b3de7.txt",
        "seeds/004_23823c78907e5650.txt",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    v.push("Click: computer_use(\"left_click\", 100, 200) then computer_use(\"type\", \"hi\") `code(x)` done".into());
    v.push(r#"{"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}}]} {"name":"get_time","arguments":{}} <tool_call>{"name":"get_time","arguments":{}}</tool_call>"#.into());
    v.push("truncated <tool_call>{\"name\":\"get_time\",\"arguments\":{\"a\":".into());
    // A list of calls cut inside its second entry (issue 20): the first is a call.
    v.push(r#"Doing both. {"tools":[{"name":"get_time","arguments":{}},{"name":"computer_use","arguments":{"action":"left_cl"#.into());
    v.push("```json\n[{\"name\":\"get_time\",\"arguments\":{}}, {\"name\":\"get_weather\",\"arguments\":{\"city\":\"Par".into());
    v.push("{'name': 'get_weather', 'arguments': {'city': 'Paris',},} // c\n".into());
    let negatives: Vec<String> = serde_json::from_str(&fixture("negatives.json")).unwrap();
    v.extend(negatives);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    // covers R-1, R-2, R-3
    #[test]
    fn chunking_never_changes_the_result(cuts in proptest::collection::vec(any::<usize>(), 0..12), which in any::<usize>()) {
        let corpus = corpus();
        let text = &corpus[which % corpus.len()];
        for o in [auto(), with_tools(), failing_soon()] {
            let whole = one_shot(text, &o);
            let parts = chunk(text, &cuts);
            prop_assert_eq!(&streamed(&parts, &o), &whole);
        }
    }

    // covers R-1, R-2
    #[test]
    fn byte_by_byte_equals_one_shot(which in any::<usize>()) {
        let corpus = corpus();
        let text = &corpus[which % corpus.len()];
        let o = with_tools();
        let mut parts = Vec::new();
        let mut from = 0;
        for (i, _) in text.char_indices().skip(1) {
            parts.push(&text[from..i]);
            from = i;
        }
        parts.push(&text[from..]);
        prop_assert_eq!(streamed(&parts, &o), one_shot(text, &o));
    }

    // covers R-7, R-1
    #[test]
    fn arbitrary_markup_soup_never_panics_and_chunking_agrees(
        pieces in proptest::collection::vec(prop_oneof![
            Just("<tool_call>"), Just("</tool_call>"), Just("<think>"), Just("</think>"),
            Just("[TOOL_CALLS]"), Just("[ARGS]"), Just("<|python_tag|>"), Just("```json\n"), Just("```\n"),
            Just("`"), Just("{"), Just("}"), Just("["), Just("]"), Just("("), Just(")"), Just("\""),
            Just("'"), Just(","), Just(":"), Just("\n"), Just(" "), Just("\\"), Just("//"), Just("/*"), Just("*/"),
            Just("\"name\""), Just("\"arguments\""), Just("\"tools\""), Just("get_time"), Just("computer_use"),
            Just("TOOL_CALL: highlight_object\n"), Just("OBJECT: cup\n"), Just("True"), Just("1"), Just("é"), Just("ж"),
        ], 0..40),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let text: String = pieces.concat();
        for o in [auto(), with_tools(), failing_soon()] {
            let whole = one_shot(&text, &o);
            prop_assert_eq!(&streamed(&chunk(&text, &cuts), &o), &whole);
        }
    }

    // covers R-7
    #[test]
    fn arbitrary_strings_never_panic(s in any::<String>(), cuts in proptest::collection::vec(any::<usize>(), 0..4)) {
        let whole = one_shot(&s, &with_tools());
        prop_assert_eq!(streamed(&chunk(&s, &cuts), &with_tools()), whole);
    }

    // covers R-7
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let s = String::from_utf8_lossy(&bytes);
        let _ = parse(&s, &auto());
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            let _ = parse_native(&v, &auto());
        }
    }
}

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-zA-Z0-9 _.,:;!?'\"\\\\{}\\[\\]()<>/-]{0,16}".prop_map(Value::String),
        any::<i32>().prop_map(|i| json!(i)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn arb_args() -> impl Strategy<Value = Map<String, Value>> {
    let value = arb_scalar().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::collection::btree_map("[a-z][a-z_]{0,7}", value, 0..4)
        .prop_map(|m| m.into_iter().collect())
}

/// Python literal rendering for the pythonic and call-syntax formats.
fn py(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Array(a) => format!("[{}]", a.iter().map(py).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", json!(k), py(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn kwargs(args: &Map<String, Value>) -> String {
    args.iter()
        .map(|(k, v)| format!("{k}={}", py(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    // covers F-JSON-1, F-JSON-3, F-ACT-1, F-KV-1, F-PY-1, F-NAT-1, R-3
    #[test]
    fn render_then_parse_round_trips(args in arb_args(), args2 in arb_args(), cuts in proptest::collection::vec(any::<usize>(), 0..6)) {
        let a = Value::Object(args.clone());
        let b = Value::Object(args2.clone());
        let name = "tool_a";
        let name2 = "tool_b";
        let renders: Vec<(&str, String, usize)> = vec![
            ("hermes", format!("pre <tool_call>\n{}\n</tool_call>\n<tool_call>{}</tool_call> post",
                json!({"name": name, "arguments": a}), json!({"name": name2, "arguments": b})), 2),
            ("mistral", format!("[TOOL_CALLS]{}", json!([{"name": name, "arguments": a}, {"name": name2, "arguments": b}])), 2),
            ("mistral", format!("[TOOL_CALLS]{name}[ARGS]{a}[TOOL_CALLS]{name2}[ARGS]{b}"), 2),
            ("llama", format!("<|python_tag|>{}", json!({"name": name, "parameters": a})), 1),
            ("json", json!([{"name": name, "arguments": a}, {"name": name2, "arguments": b}]).to_string(), 2),
            ("tools_envelope", format!("Sure.\n```json\n{}\n```\n", json!({"tools": [{"name": name, "arguments": a}, {"name": name2, "arguments": b}]})), 2),
            ("pythonic", format!("[{name}({}), {name2}({})]", kwargs(&args), kwargs(&args2)), 2),
            ("llama3_builtin", format!("<|python_tag|>{name}.call({})", kwargs(&args)), 1),
            ("action_response", json!({"session_id": "s1", "command": name, "args": a, "text": "ok"}).to_string(), 1),
        ];
        for (format, text, n) in renders {
            let p = parse(&text, &auto());
            prop_assert_eq!(p.calls.len(), n, "{} {} {:?}", format, text, p.diagnostics);
            prop_assert_eq!(&p.calls[0].name, name);
            prop_assert_eq!(&p.calls[0].arguments, &a, "{}", text);
            prop_assert_eq!(&*p.calls[0].origin.format, format);
            if n == 2 {
                prop_assert_eq!(&p.calls[1].arguments, &b);
            }
            let whole = one_shot(&text, &auto());
            prop_assert_eq!(streamed(&chunk(&text, &cuts), &auto()), whole);
        }
        // Call syntax needs to be chosen explicitly without a registry.
        let cs = toolcall_parse::ParseOptions { format: toolcall_parse::FormatSelection::Only("call_syntax".into()), ..Default::default() };
        let p = parse(&format!("Doing it: {name}({})", kwargs(&args)), &cs);
        prop_assert_eq!(&p.calls[0].arguments, &a);
        // Key/value carries strings.
        let strings: Map<String, Value> = args.iter().filter_map(|(k, v)| {
            v.as_str().filter(|s| !s.trim().is_empty() && s.trim() == *s && !s.contains('\n')).map(|s| (k.clone(), json!(s)))
        }).collect();
        let kv = format!("TOOL_CALL: {name}\n{}Thanks!", strings.iter().map(|(k, v)| format!("{}: {}\n", k.to_uppercase(), v.as_str().unwrap_or(""))).collect::<String>());
        let p = parse(&kv, &auto());
        prop_assert_eq!(&p.calls[0].arguments, &Value::Object(strings), "{}", kv);
        prop_assert_eq!(p.text.as_str(), "Thanks!");
        // Native shapes.
        let natives = [
            json!({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":name,"arguments":a.to_string()}}]}),
            json!({"output":[{"type":"function_call","call_id":"c1","name":name,"arguments":a.to_string()}]}),
            json!({"candidates":[{"content":{"parts":[{"functionCall":{"name":name,"args":a}}]}}]}),
            json!({"content":[{"type":"tool_use","id":"c1","name":name,"input":a}]}),
        ];
        for v in natives {
            let p = parse_native(&v, &auto());
            prop_assert_eq!(&p.calls[0].arguments, &a);
            let p2 = parse(&v.to_string(), &auto());
            prop_assert_eq!(&p2.calls[0].arguments, &a);
        }
    }
}

/// One `KEY: value` line of a key_value block and the JSON value it stands for.
fn arb_kv_field() -> impl Strategy<Value = (String, String, Value)> {
    let text = "[a-zA-Z0-9_.,;!?'\"{}()<>/é-][a-zA-Z0-9 _.,:;!?'\"{}()<>/é-]{0,14}[a-zA-Z0-9.!?é]"
        .prop_map(|s| (s.clone(), json!(s)));
    ("[a-z][a-z_]{0,7}", text).prop_map(|(k, (raw, v))| (k, raw, v))
}

/// Pushes `text` in the given chunks; each event with how many bytes had been pushed.
fn events_by_offset(text: &str, cuts: &[usize], o: &ParseOptions) -> Vec<(usize, StreamEvent)> {
    let mut sp = StreamParser::new(o.clone());
    let mut out = Vec::new();
    let mut at = 0;
    for c in chunk(text, cuts) {
        at += c.len();
        out.extend(sp.push(c).into_iter().map(|e| (at, e)));
    }
    out.extend(sp.finish().into_iter().map(|e| (text.len(), e)));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    // key_value streams per field: `CallStarted` when the header line is complete, one JSON
    // fragment per field once its line is, the fragments so far always one `}` short of the
    // fields so far, and all of them the final arguments, whatever the chunking.
    #[test]
    fn key_value_streams_a_fragment_per_field(
        fields in proptest::collection::vec(arb_kv_field(), 0..5),
        typed in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..10),
    ) {
        let (name, opts, fields): (&str, ParseOptions, Vec<(String, String, Value)>) = if typed {
            // With the schema: values read by type (array, string), keys matched in any case.
            let f = vec![
                ("action".to_owned(), "left_click".to_owned(), json!("left_click")),
                ("coordinate".to_owned(), "[10, 20]".to_owned(), json!([10, 20])),
                ("text".to_owned(), "007".to_owned(), json!("007")),
            ];
            let n = fields.len().min(3);
            ("computer_use", with_tools(), f.into_iter().take(n).collect())
        } else {
            ("tool_a", auto(), fields)
        };
        let mut text = format!("Sure.\nTOOL_CALL: {name}\n");
        let header_end = text.len();
        let mut ends = Vec::new();
        let mut expected = Map::new();
        let mut so_far = Vec::new();
        for (k, raw, v) in &fields {
            text.push_str(&format!("{}: {raw}\n", k.to_uppercase()));
            ends.push(text.len());
            expected.insert(k.clone(), v.clone());
            so_far.push(Value::Object(expected.clone()));
        }
        text.push_str("Thanks!");
        let events = events_by_offset(&text, &cuts, &opts);
        let mut fragments = String::new();
        let mut started = None;
        let mut finished = false;
        // After each push: announced once the header line is in, and the fragments one `}`
        // short of the fields whose lines are in.
        let check = |at: usize, started: Option<usize>, finished: bool, fragments: &str| -> Result<(), TestCaseError> {
            if finished {
                return Ok(());
            }
            prop_assert_eq!(started.is_some(), at >= header_end, "announced iff the header is in (at {})", at);
            let k = ends.iter().filter(|e| **e <= at).count();
            if k == 0 {
                prop_assert_eq!(fragments, "");
            } else {
                let got: Value = serde_json::from_str(&format!("{fragments}}}")).unwrap_or(Value::Null);
                prop_assert_eq!(&got, &so_far[k - 1], "{:?} at {}", fragments, at);
            }
            Ok(())
        };
        let mut group = None;
        for (at, e) in &events {
            if let Some(g) = group && g != *at {
                check(g, started, finished, &fragments)?;
            }
            group = Some(*at);
            match e {
                StreamEvent::CallStarted { index, name: n, .. } => {
                    prop_assert!(started.is_none());
                    prop_assert_eq!(n.as_str(), name);
                    started = Some(*index);
                }
                StreamEvent::ArgumentsDelta { index, fragment } => {
                    prop_assert_eq!(Some(*index), started);
                    fragments.push_str(fragment);
                }
                StreamEvent::CallFinished { index, call } => {
                    prop_assert_eq!(Some(*index), started);
                    let decoded: Value = serde_json::from_str(&fragments).unwrap();
                    prop_assert_eq!(&decoded, &call.arguments);
                    prop_assert_eq!(&call.arguments, &Value::Object(expected.clone()));
                    finished = true;
                }
                _ => {}
            }
        }
        prop_assert!(finished, "{}", text);
    }
}

proptest! {
    // Every family each case: fewer cases than the single-text properties above.
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    // covers R-1, R-7 for every registered family (the list is the registry's, so a new
    // family is covered when it registers): its example, cut at any point, with prose
    // around it, in auto mode and chosen alone, streamed at any chunking equals one-shot.
    #[test]
    fn every_registered_family_streams_like_one_shot(
        cut in any::<usize>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        for f in toolcall_parse::formats() {
            let example = f.example.replace("\\n", "\n");
            let mut at = cut % (example.len() + 1);
            while !example.is_char_boundary(at) {
                at -= 1;
            }
            let only = ParseOptions {
                format: toolcall_parse::FormatSelection::Only(f.id.to_owned()),
                ..with_tools()
            };
            for text in [format!("Sure. {example} Done."), format!("Sure. {}", &example[..at])] {
                for o in [auto(), only.clone()] {
                    let whole = one_shot(&text, &o);
                    prop_assert_eq!(&streamed(&chunk(&text, &cuts), &o), &whole, "{} {:?}", f.id, text);
                }
            }
        }
    }
}

// The one-shot readers of `[TOOL_CALLS]` and `<|python_tag|>` (and Hermes's blocks, one-shot
// or streamed) decode call-shaped JSON
// typed (no map per call object) and fall back to a `Value` for any other shape; the
// streamed parse never takes that path, so each shape the call reader tells apart, after
// each marker, must parse alike both ways (with and without a registry).
#[test]
fn call_object_shapes_parse_alike_one_shot_and_streamed() {
    let shapes = [
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
        r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#,
        r#"{"arguments": {"city": "Paris"}, "name": "get_weather"}"#,
        r#"{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}"#,
        r#"{"name": "get_weather", "arguments": null}"#,
        r#"{"name": "get_weather", "arguments": [1]}"#,
        r#"{"name": "get_weather"}"#,
        r#"{"name": "nope", "arguments": {}}"#,
        r#"{"name": 7, "arguments": {}}"#,
        r#"{"name": "get_weather", "arguments": {}, "parameters": {}}"#,
        r#"{"id": "c1", "name": "get_weather", "arguments": {}}"#,
        r#"{"name": "get_weather", "arguments": {}, "id": "c1"}"#,
        r#"{"call_id": "c2", "id": "c1", "name": "get_weather", "arguments": {}}"#,
        r#"{"type": "function", "name": "get_weather", "arguments": {}}"#,
        r#"{"type": "tool", "name": "get_weather", "arguments": {}}"#,
        r#"{"na\u006de": "get_weather", "arguments": {}}"#,
        r#"{}"#,
        r#"[]"#,
        r#"[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "nope", "parameters": {}}]"#,
        r#"[{"name": "get_weather", "arguments": {}, "id": "a"}, {"id": "b", "name": "get_weather"}]"#,
        r#"[{"name": "get_weather", "arguments": {}}, {}]"#,
        r#"{"name": "get_weather", "arguments": {}, "extra": 1}"#,
        r#"{"name": "get_weather", "name": "other", "arguments": {}}"#,
        r#"{"$serde_json::private::RawValue": "{\"name\": \"get_weather\"}"}"#,
        r#"[{"name": "get_weather", "arguments": {}}, "text"]"#,
        r#"[{"name": "get_weather", "arguments": {}}, {"name": "get_weather", "Arguments": {}}]"#,
        r#"{"name": "get_weather", "arguments": {"a": 1},}"#,
    ];
    let mut registry = toolcall_core::Registry::new();
    registry
        .add_spec(toolcall_core::ToolSpec::new(
            "get_weather",
            "weather",
            serde_json::json!({"type": "object", "properties": {}}),
        ))
        .unwrap();
    let registry = std::sync::Arc::new(registry);
    for text in shapes {
        for (format, marker, close) in [
            ("mistral", "[TOOL_CALLS] ", ""),
            ("llama", "<|python_tag|>", ""),
            ("hermes", "<tool_call>\n", "\n</tool_call>"),
        ] {
            for tools in [None, Some(registry.clone())] {
                let o = ParseOptions {
                    format: toolcall_parse::FormatSelection::Only(format.to_owned()),
                    tools,
                    ..Default::default()
                };
                let reply = format!("Sure. {marker}{text}{close}");
                let whole = one_shot(&reply, &o);
                let chunks: Vec<&str> = reply
                    .as_bytes()
                    .chunks(5)
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect();
                assert_eq!(whole, streamed(&[reply.as_str()], &o), "{reply}");
                assert_eq!(whole, streamed(&chunks, &o), "{reply}");
            }
        }
    }
}
