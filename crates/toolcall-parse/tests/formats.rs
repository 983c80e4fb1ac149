//! Per-format tests: seed examples verbatim, model-family outputs, repairs, truncation.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{auto, fixture, only, registry, with_tools};
use serde_json::{Value, json};
use toolcall_core::{Level, StreamEvent};
use toolcall_parse::{
    FormatSelection, ParseOptions, StreamParser, load_fallback_rules, parse, parse_native,
};

fn names_args(p: &toolcall_core::Parsed) -> Vec<(String, Value, String)> {
    p.calls
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.arguments.clone(),
                c.origin.format.to_string(),
            )
        })
        .collect()
}

// covers F-JSON-1, F-JSON-3, F-JSON-4, F-AUTO-1
#[test]
fn seed_000_whole_document_yields_every_example_call_in_order() {
    let doc = fixture("seeds/000_535aa69eb329f4ca.txt");
    let p = parse(&doc, &auto());
    let actions: Vec<&str> = p
        .calls
        .iter()
        .map(|c| c.arguments["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "screenshot",
            "left_click",
            "double_click",
            "right_click",
            "mouse_move",
            "type",
            "key",
            "scroll",
            "left_click_drag",
            "wait",
            "left_click",
            "type",
            "key",
            "screenshot",
            "screenshot"
        ]
    );
    assert!(p.calls.iter().all(|c| c.origin.format == "tools_envelope"));
    assert_eq!(p.calls[6].arguments, json!({"action":"key","text":"enter"}));
    // The template block with `...parametry` is not JSON: reported, not run.
    assert!(p.diagnostics.iter().any(|d| d.level == Level::Error));
    // Markup is removed from the visible text, prose kept.
    assert!(p.text.contains("Dostępne Akcje"));
    assert!(!p.text.contains("\"tools\": [\n    {\n      \"name\": \"computer_use\",\n      \"arguments\": {\n        \"action\": \"screenshot\""));
}

// covers F-JSON-1, F-JSON-2
#[test]
fn seed_000_fenced_and_raw_envelopes() {
    let p = parse(&fixture("replies/seed000_fenced.txt"), &auto());
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].arguments, json!({"action":"screenshot"}));
    assert_eq!(
        p.text,
        "Sure, let me look at the screen first.\n\nThen I will click."
    );
    let p = parse(&fixture("replies/seed000_raw.txt"), &auto());
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.text, "Sure.  Done.");
    assert_eq!(p.calls[0].origin.format, "tools_envelope");
}

// covers F-JSON-4
#[test]
fn braces_in_strings_and_several_blocks() {
    let text = r#"A {"tools":[{"name":"computer_use","arguments":{"action":"type","text":"}{ \"x\" ]"}}]} B {"tools":[{"name":"computer_use","arguments":{"action":"key","text":"enter"}},{"name":"computer_use","arguments":{"action":"wait","duration":1}}]} C"#;
    let p = parse(text, &with_tools());
    assert_eq!(p.calls.len(), 3);
    assert_eq!(p.calls[0].arguments["text"], "}{ \"x\" ]");
    assert_eq!(p.text, "A  B  C");
}

// covers F-PY-1
#[test]
fn seed_000_call_syntax_maps_positionals_onto_the_schema() {
    let p = parse(
        "Let me look: computer_use(\"screenshot\")\nthen computer_use(\"left_click\", 100, 200) and computer_use(\"type\", \"text\")",
        &with_tools(),
    );
    assert_eq!(
        names_args(&p),
        vec![
            (
                "computer_use".into(),
                json!({"action":"screenshot"}),
                "call_syntax".into()
            ),
            (
                "computer_use".into(),
                json!({"action":"left_click","coordinate":[100,200]}),
                "call_syntax".into()
            ),
            (
                "computer_use".into(),
                json!({"action":"type","text":"text"}),
                "call_syntax".into()
            ),
        ]
    );
    assert_eq!(p.text, "Let me look: \nthen  and ");
    // Keyword arguments work too.
    let p = parse("get_weather(city='Paris', unit=\"celsius\")", &with_tools());
    assert_eq!(
        p.calls[0].arguments,
        json!({"city":"Paris","unit":"celsius"})
    );
    // Without a registry, auto mode does not read prose calls.
    assert!(
        parse("computer_use(\"screenshot\")", &auto())
            .calls
            .is_empty()
    );
    // Explicitly chosen, keywords work without a registry; positionals are reported.
    let p = parse("f(a=1) g(1)", &only("call_syntax", false));
    assert_eq!(p.calls.len(), 1);
    assert!(p.diagnostics.iter().any(|d| d.message.contains("schema")));
}

// covers F-ACT-1, F-ACT-2, F-ACT-3
#[test]
fn seed_001_action_responses() {
    for tools in [false, true] {
        let o = if tools { with_tools() } else { auto() };
        let p = parse(&fixture("replies/seed001_open_app.json"), &o);
        assert_eq!(
            names_args(&p),
            vec![(
                "open_app".into(),
                json!({"app_name":"Safari"}),
                "action_response".into()
            )]
        );
        assert_eq!(p.text, "Открываю Safari.");
        let p = parse(&fixture("replies/seed001_text_only.json"), &o);
        assert!(p.calls.is_empty());
        assert_eq!(p.text, "Калькулятор уже открыт. Что вы хотите вычислить?");
        let p = parse(&fixture("replies/seed001_plain_string.txt"), &o);
        assert!(p.calls.is_empty());
        assert_eq!(p.text, "Привет! Как дела? Чем могу помочь?");
        let p = parse(&fixture("replies/seed001_empty_text.json"), &o);
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.text, "");
        // F-ACT-3: no session_id, or a required argument missing/empty → dropped, text kept.
        // "Required" comes from the registered schema only: without one the parser knows
        // no app, and the command passes (the validator judges it against the schema).
        let schema_bound = [
            r#"{"session_id":"s","command":"open_app","args":{"app_name":""},"text":"Открываю."}"#,
            r#"{"session_id":"s","command":"close_app","args":{"app_path":"/Applications/Safari.app"},"text":"Открываю."}"#,
        ];
        if !tools {
            for unchecked in schema_bound {
                assert_eq!(parse(unchecked, &o).calls.len(), 1, "{unchecked}");
            }
        }
        let session_missing =
            r#"{"command":"open_app","args":{"app_name":"Safari"},"text":"Открываю."}"#;
        let bad: &[&str] = if tools {
            &[session_missing, schema_bound[0], schema_bound[1]]
        } else {
            &[session_missing]
        };
        for &bad in bad {
            let p = parse(bad, &o);
            assert!(p.calls.is_empty(), "{bad}");
            assert_eq!(p.text, "Открываю.");
            assert!(
                p.diagnostics.iter().any(|d| d.message.contains("dropped")),
                "{bad}"
            );
        }
        let p = parse(
            r#"{"session_id":"s","command":"open_app","args":{"app_path":"/Applications/Safari.app"},"text":""}"#,
            &o,
        );
        assert_eq!(p.calls.len(), 1, "app_path satisfies open_app");
    }
}

// covers F-ACT-1
#[test]
fn seed_001_whole_document() {
    let p = parse(&fixture("seeds/001_b1c94ea93d6b3de7.txt"), &auto());
    let names: Vec<&str> = p.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "open_app",
            "open_app",
            "close_app",
            "open_app",
            "close_app",
            "open_app"
        ]
    );
}

// covers F-KV-1, F-KV-2
#[test]
fn seed_004_key_value_blocks() {
    for o in [auto(), with_tools()] {
        let p = parse(&fixture("replies/seed004_kv_with_text.txt"), &o);
        assert_eq!(
            names_args(&p),
            vec![(
                "highlight_object".into(),
                json!({"object":"headphones"}),
                "key_value".into()
            )]
        );
        assert_eq!(p.text, "I've highlighted them for you!");
        let p = parse(&fixture("replies/seed004_measure.txt"), &o);
        assert_eq!(p.calls[0].arguments, json!({"from":"cup","to":"laptop"}));
    }
    let p = parse("tool_call: highlight_object\nobject: cup", &with_tools());
    assert_eq!(p.calls[0].arguments, json!({"object":"cup"}));
    // Values take the property's type from the schema.
    let p = parse(
        "TOOL_CALL: computer_use\nACTION: left_click\nCoordinate: [100, 200]\nDone.",
        &with_tools(),
    );
    assert_eq!(
        p.calls[0].arguments,
        json!({"action":"left_click","coordinate":[100,200]})
    );
    assert_eq!(p.text, "Done.");
    // With a registry, an unregistered tool's block stays text.
    let p = parse("TOOL_CALL: launch_rockets\nCOUNT: 3", &with_tools());
    assert!(p.calls.is_empty());
    assert_eq!(p.text, "TOOL_CALL: launch_rockets\nCOUNT: 3");
    // Seed 004's documentation blocks (inside fences) are read too.
    let p = parse(&fixture("seeds/004_23823c78907e5650.txt"), &with_tools());
    let objs: Vec<String> = p.calls.iter().map(|c| c.arguments.to_string()).collect();
    assert!(
        objs.contains(&json!({"object":"cup"}).to_string()),
        "{objs:?}"
    );
    assert!(
        objs.contains(&json!({"object":"laptop"}).to_string()),
        "{objs:?}"
    );
    assert!(p.calls.iter().any(|c| c.name == "measure_distance"));
}

// covers F-KV-2 and issue #9's rule for text values: read by the schema like the tag
// families, strings kept exactly, a repair where a value is not what the schema asked.
#[test]
fn key_value_reads_values_by_the_schema() {
    let mut r = toolcall_core::Registry::new();
    r.add_spec(toolcall_core::ToolSpec::new(
        "lookup",
        "",
        json!({"type": "object", "properties": {
            "code": {"type": "string"}, "count": {"type": "integer"},
            "exact": {"type": "boolean"}, "filter": {"type": "object"},
            "limit": {"type": ["integer", "null"]}
        }}),
    ))
    .unwrap();
    let opts = ParseOptions {
        tools: Some(std::sync::Arc::new(r)),
        ..ParseOptions::default()
    };
    let p = parse(
        "TOOL_CALL: lookup\nCODE: 007\nCOUNT: 3\nEXACT: true\nFILTER: {\"k\": [1]}\nLIMIT: null",
        &opts,
    );
    assert_eq!(
        p.calls[0].arguments,
        json!({"code": "007", "count": 3, "exact": true, "filter": {"k": [1]}, "limit": null})
    );
    assert!(
        p.calls[0].origin.repairs.is_empty(),
        "{:?}",
        p.calls[0].origin.repairs
    );
    // Not what the schema asked: kept as text, with a repair saying so.
    let p = parse("TOOL_CALL: lookup\nCOUNT: many\nEXACT: [1]", &opts);
    assert_eq!(
        p.calls[0].arguments,
        json!({"count": "many", "exact": "[1]"})
    );
    let kinds: Vec<&str> = p.calls[0]
        .origin
        .repairs
        .iter()
        .map(|r| r.kind.as_str())
        .collect();
    assert_eq!(kinds, ["text_value", "text_value"]);
}

// covers F-FB-1
#[test]
fn seed_004_fallbacks_are_opt_in_and_name_the_rule() {
    let rules = load_fallback_rules(&fixture("fallbacks.json")).unwrap();
    let on = ParseOptions {
        tools: Some(registry()),
        fallbacks: rules,
        ..ParseOptions::default()
    };
    let cases = [
        (
            r#"[{"box_2d": [182, 110, 808, 882], "label": "headphones"}]"#,
            "headphones",
            "label_list",
        ),
        (r#"[{"label": "cup"}]"#, "cup", "label_list"),
        ("I'll highlight the cup for you", "cup", "intent"),
        (
            "the headphones are now highlighted",
            "headphones",
            "completion",
        ),
    ];
    for (text, object, rule) in cases {
        let p = parse(text, &on);
        assert_eq!(
            names_args(&p),
            vec![(
                "highlight_object".into(),
                json!({"object": object}),
                "fallback".into()
            )],
            "{text}"
        );
        assert!(
            p.diagnostics.iter().any(|d| d.message.contains(rule)),
            "{text}: {:?}",
            p.diagnostics
        );
        // Off unless enabled.
        assert!(parse(text, &with_tools()).calls.is_empty(), "{text}");
    }
    // A structured call wins; the fallback does not fire.
    let p = parse(
        "TOOL_CALL: highlight_object\nOBJECT: lamp\nI'll highlight the lamp",
        &on,
    );
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].origin.format, "key_value");
}

// covers F-AUTO-1, R-5
#[test]
fn qwen_hermes_with_reasoning() {
    let p = parse(&fixture("replies/qwen_hermes.txt"), &with_tools());
    assert_eq!(
        names_args(&p),
        vec![
            (
                "get_weather".into(),
                json!({"city":"Paris","unit":"celsius"}),
                "hermes".into()
            ),
            ("get_time".into(), json!({}), "hermes".into()),
        ]
    );
    assert_eq!(p.reasoning.len(), 1);
    assert!(p.reasoning[0].contains("The user wants the weather"));
    assert!(!p.text.contains("user wants"));
    assert!(p.text.contains("I'll check both for you."));
    assert!(!p.text.contains("tool_call"));
}

// covers R-6, R-7
#[test]
fn hermes_unclosed_and_truncated() {
    let p = parse(
        r#"ok <tool_call>{"name":"get_time","arguments":{}}"#,
        &auto(),
    );
    assert_eq!(p.calls.len(), 1, "{:?}", p.diagnostics);
    let p = parse(
        r#"<tool_call>{"name":"get_time","arguments":{}}</tool_call><tool_call>{"name":"get_weather","arguments":{"city":"Par"#,
        &auto(),
    );
    assert_eq!(p.calls.len(), 1);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == Level::Error && d.message.contains("truncated"))
    );
    // A malformed call in the middle does not stop the rest (R-7).
    let p = parse(
        "<tool_call>{\"name\": oops}</tool_call> text <tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>",
        &auto(),
    );
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].name, "get_time");
    assert!(p.diagnostics.iter().any(|d| d.level == Level::Error));
    // The malformed call is not run and its raw text stays where the user can see it.
    assert_eq!(p.text, "<tool_call>{\"name\": oops}</tool_call> text ");
}

// covers F-AUTO-1
#[test]
fn explicit_markup_accepts_unknown_names_with_a_warning() {
    let p = parse(
        r#"<tool_call>{"name":"launch","arguments":{}}</tool_call>"#,
        &with_tools(),
    );
    assert_eq!(p.calls.len(), 1);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == Level::Warning && d.message.contains("launch"))
    );
    // The same JSON bare in prose is not a call with a registry (R-4).
    let p = parse(r#"{"name":"launch","arguments":{}}"#, &with_tools());
    assert!(p.calls.is_empty());
}

// covers F-AUTO-1
#[test]
fn mistral_both_forms() {
    let p = parse(&fixture("replies/mistral_v3.txt"), &with_tools());
    assert_eq!(names_args(&p).len(), 2);
    assert_eq!(p.calls[0].call_id.as_str(), "a1b2c3d4e");
    assert!(p.calls.iter().all(|c| c.origin.format == "mistral"));
    assert_eq!(p.text, "");
    let p = parse(&fixture("replies/mistral_v11.txt"), &with_tools());
    assert_eq!(
        names_args(&p),
        vec![
            (
                "get_weather".into(),
                json!({"city":"Paris"}),
                "mistral".into()
            ),
            ("get_time".into(), json!({}), "mistral".into()),
        ]
    );
    let p = parse("[TOOL_CALLS]get_time[CALL_ID]abc123XYZ[ARGS]{}", &auto());
    assert_eq!(p.calls[0].call_id.as_str(), "abc123XYZ");
}

// covers F-AUTO-1
#[test]
fn llama_json_and_python_tag() {
    for f in ["llama_python_tag.txt", "llama_json.txt"] {
        let p = parse(&fixture(&format!("replies/{f}")), &with_tools());
        assert_eq!(
            names_args(&p),
            vec![(
                "get_weather".into(),
                json!({"city":"Paris"}),
                "llama".into()
            )],
            "{f}"
        );
        assert_eq!(p.text, "");
    }
    let p = parse(
        r#"<|python_tag|>{"name": "web.search", "parameters": {"q": "x"}}"#,
        &with_tools(),
    );
    assert_eq!(p.calls.len(), 1, "python_tag is explicit markup");
}

// covers F-AUTO-1
#[test]
fn pythonic_lists() {
    let p = parse(&fixture("replies/pythonic.txt"), &with_tools());
    assert_eq!(
        names_args(&p),
        vec![
            (
                "get_weather".into(),
                json!({"city":"Paris","unit":"celsius"}),
                "pythonic".into()
            ),
            ("get_time".into(), json!({}), "pythonic".into()),
        ]
    );
    let p = parse("[f(a=True, b=None, c=[1, 'x'], d={'k': 2})]", &auto());
    assert_eq!(
        p.calls[0].arguments,
        json!({"a":true,"b":null,"c":[1,"x"],"d":{"k":2}})
    );
    assert!(parse("[unknown_tool(a=1)]", &with_tools()).calls.is_empty());
}

// covers F-AUTO-1
#[test]
fn bare_json_objects_and_arrays() {
    let p = parse(
        r#"{"name":"get_weather","arguments":{"city":"Paris"}}"#,
        &with_tools(),
    );
    assert_eq!(p.calls[0].origin.format, "json");
    let p = parse(
        r#"[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_time","arguments":{}}]"#,
        &with_tools(),
    );
    assert_eq!(p.calls.len(), 2);
    let p = parse(
        r#"{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}"#,
        &with_tools(),
    );
    assert_eq!(p.calls[0].arguments, json!({"city":"Paris"}));
    assert_eq!(p.calls[0].origin.repairs[0].kind, "arguments_string");
}

// covers F-NAT-1, X-2
#[test]
fn native_shapes_keep_their_ids() {
    let cases = [
        (
            "openai_chat.json",
            "openai_chat",
            ["call_abc123", "call_def456"],
            "",
        ),
        (
            "responses.json",
            "responses",
            ["toolu_01A", "toolu_01B"],
            "Checking.",
        ),
        (
            "anthropic.json",
            "anthropic",
            ["toolu_01XYZ", "toolu_01ABC"],
            "Let me check.",
        ),
    ];
    for (file, format, ids, text) in cases {
        let v: Value = serde_json::from_str(&fixture(&format!("replies/{file}"))).unwrap();
        for p in [
            parse_native(&v, &auto()),
            parse(&fixture(&format!("replies/{file}")), &auto()),
        ] {
            assert_eq!(p.calls.len(), 2, "{file}");
            assert_eq!(p.calls[0].call_id.as_str(), ids[0]);
            assert_eq!(p.calls[1].call_id.as_str(), ids[1]);
            assert_eq!(p.calls[0].arguments, json!({"city":"Paris"}));
            assert_eq!(p.calls[1].arguments, json!({}), "R-3: {file}");
            assert!(p.calls.iter().all(|c| c.origin.format == format));
            assert_eq!(p.text.trim(), text);
        }
    }
    let v: Value = serde_json::from_str(&fixture("replies/gemini.json")).unwrap();
    let p = parse_native(&v, &auto());
    assert_eq!(p.calls.len(), 2);
    assert_eq!(p.calls[0].origin.format, "gemini");
    assert!(p.calls[0].call_id.as_str().starts_with("call_"));
    assert_eq!(p.text, "Checking the weather.");
    // A single Responses item and a bare list of items.
    let item = json!({"type":"function_call","call_id":"c9","name":"get_time","arguments":"{}"});
    assert_eq!(parse_native(&item, &auto()).calls[0].call_id.as_str(), "c9");
    assert_eq!(parse_native(&json!([item]), &auto()).calls.len(), 1);
    // Selecting one native format restricts the shapes.
    let only_gemini = ParseOptions {
        format: FormatSelection::Only("gemini".into()),
        ..ParseOptions::default()
    };
    assert!(parse_native(&item, &only_gemini).calls.is_empty());
}

// covers V-5
#[test]
fn repairs_are_recorded_on_the_call() {
    let cases = [
        (
            "{'name': 'get_time', 'arguments': {},}",
            vec!["single_quotes", "trailing_comma"],
        ),
        (
            "{name: \"get_weather\", arguments: {city: \"Paris\"}}",
            vec!["unquoted_keys"],
        ),
        (
            "{\"name\": \"get_weather\", // the tool\n \"arguments\": {\"city\": \"Paris\" /* FR */}}",
            vec!["comments"],
        ),
        (
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa\nris\", \"x\": None}}",
            vec!["python_literals", "literal_newlines"],
        ),
    ];
    for (text, kinds) in cases {
        let p = parse(&format!("<tool_call>{text}</tool_call>"), &with_tools());
        assert_eq!(p.calls.len(), 1, "{text}: {:?}", p.diagnostics);
        let got: Vec<&str> = p.calls[0]
            .origin
            .repairs
            .iter()
            .map(|r| r.kind.as_str())
            .collect();
        for k in kinds {
            assert!(got.contains(&k), "{text}: {got:?}");
        }
    }
}

// covers R-6, R-7
#[test]
fn truncated_json_is_an_error_never_a_call_and_the_rest_is_parsed() {
    let p = parse(
        r#"first {"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}}]} then {"tools":[{"name":"computer_use","arguments":{"action":"ty"#,
        &auto(),
    );
    assert_eq!(p.calls.len(), 1);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == Level::Error && d.message.contains("truncated"))
    );
    let p = parse(
        r#"{"name":"get_weather","arguments":{"city": }} and <tool_call>{"name":"get_time","arguments":{}}</tool_call>"#,
        &with_tools(),
    );
    assert_eq!(p.calls.len(), 1);
    assert_eq!(p.calls[0].name, "get_time");
    assert!(p.diagnostics.iter().any(|d| d.level == Level::Error));
}

// Issue 20: a `tools` envelope cut inside an entry keeps the complete entries before the
// cut as calls and reports the cut one, whole and streamed alike.
#[test]
fn a_cut_tools_envelope_runs_its_complete_entries_and_reports_the_cut_one() {
    let text = r#"{"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}},{"name":"computer_use","arguments":{"action":"left_cl"#;
    for o in [auto(), with_tools(), only("tools_envelope", false)] {
        let p = parse(text, &o);
        assert_eq!(names_args(&p).len(), 1, "{p:?}");
        assert_eq!(p.calls[0].arguments, json!({"action": "screenshot"}));
        assert_eq!(p.calls[0].origin.format, "tools_envelope");
        let cut = p
            .diagnostics
            .iter()
            .find(|d| d.level == Level::Error)
            .expect("the cut entry is reported");
        assert!(cut.message.contains("entry 2"), "{cut:?}");
        assert_eq!(cut.span, text.rfind(",{").unwrap() + 1..text.len());
        // Streamed one character at a time: the same one finished call, nothing else.
        let mut sp = StreamParser::new(o.clone());
        let mut events = Vec::new();
        for part in common::chars(text) {
            events.extend(sp.push(part));
        }
        events.extend(sp.finish());
        let finished: Vec<&toolcall_core::ToolCall> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::CallFinished { call, .. } => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 1);
        assert_eq!(finished[0].arguments, p.calls[0].arguments);
    }
    // Cut before any entry is complete: no call, as before.
    let p = parse(r#"{"tools":[{"name":"computer_use","argu"#, &auto());
    assert!(p.calls.is_empty());
    assert!(p.diagnostics.iter().any(|d| d.level == Level::Error));
}

// covers F-DIAG-1
#[test]
fn diagnostics_carry_byte_spans_of_the_source() {
    let text = r#"abc <tool_call>{"name":"x"</tool_call>"#;
    let p = parse(text, &auto());
    let d = p
        .diagnostics
        .iter()
        .find(|d| d.level == Level::Error)
        .unwrap();
    assert!(d.span.start >= 4 && d.span.end <= text.len(), "{d:?}");
    let p = parse(
        r#"xy {"tools":[{"name":"computer_use","arguments":{}}]}"#,
        &auto(),
    );
    assert_eq!(p.calls[0].origin.span, 3..p.calls[0].origin.span.end);
}

// covers F-AUTO-1
#[test]
fn priority_and_only_selection() {
    let text = r#"{"name":"get_weather","parameters":{"city":"Paris"}}"#;
    assert_eq!(parse(text, &auto()).calls[0].origin.format, "llama");
    let json_first = ParseOptions {
        format: FormatSelection::Priority(vec!["json".into(), "llama".into()]),
        ..ParseOptions::default()
    };
    assert_eq!(parse(text, &json_first).calls[0].origin.format, "json");
    assert!(parse(text, &only("hermes", false)).calls.is_empty());
    assert!(FormatSelection::from_name("nope").is_err());
}

// covers bounded input
#[test]
fn limits_are_enforced_with_diagnostics() {
    let mut o = auto();
    o.limits.max_calls = 2;
    let one = r#"<tool_call>{"name":"t","arguments":{}}</tool_call>"#;
    let p = parse(&format!("{}, then the end", one.repeat(5)), &o);
    assert_eq!(p.calls.len(), 2);
    // The third call is dropped with one error, and the rest of the reply (the fourth
    // and fifth calls' markup and the words after them) is text, unparsed.
    let errors: Vec<_> = p
        .diagnostics
        .iter()
        .filter(|d| d.level == Level::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].message.contains("passed through as text"));
    assert_eq!(p.text, format!("{}, then the end", one.repeat(2)));
    let deep = format!(
        "<tool_call>{}{}</tool_call>",
        "[".repeat(500),
        "]".repeat(500)
    );
    let p = parse(&deep, &auto());
    assert!(p.calls.is_empty());
    assert!(p.diagnostics.iter().any(|d| d.message.contains("nesting")));
    let mut o = auto();
    o.limits.max_input_bytes = 10;
    let p = parse(
        r#"hello <tool_call>{"name":"t","arguments":{}}</tool_call>"#,
        &o,
    );
    assert!(p.calls.is_empty());
    assert!(p.diagnostics.iter().any(|d| d.message.contains("exceeds")));
}

// covers R-1, R-3
#[test]
fn hermes_calls_are_announced_while_streaming() {
    use toolcall_core::StreamEvent;
    let mut sp = toolcall_parse::StreamParser::new(with_tools());
    let first = sp
        .push("Checking. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa");
    let started = first.iter().find_map(|e| match e {
        StreamEvent::CallStarted {
            index,
            call_id,
            name,
        } => Some((*index, call_id.clone(), name.clone())),
        _ => None,
    });
    let (index, call_id, name) = started.expect("announced before the body is complete");
    assert_eq!((index, name.as_str()), (0, "get_weather"));
    let mut fragments = String::new();
    let mut finished = None;
    let rest = sp.push(
        "ris\"}}\n</tool_call> and <tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>",
    );
    for e in first.into_iter().chain(rest).chain(sp.finish()) {
        match e {
            StreamEvent::ArgumentsDelta { index: 0, fragment } => fragments.push_str(&fragment),
            StreamEvent::CallFinished { index: 0, call } => finished = Some(call),
            _ => {}
        }
    }
    assert_eq!(fragments, "{\"city\": \"Paris\"}");
    let call = finished.unwrap();
    assert_eq!(call.call_id, call_id);
    assert_eq!(call.arguments, json!({"city":"Paris"}));
    // A parameterless call streams `{}` (R-3), and a cut-off one is never finished (R-6).
    let mut sp = toolcall_parse::StreamParser::new(auto());
    let mut events = sp.push("<tool_call>{\"name\": \"get_time\", \"arguments\": {");
    events.extend(sp.finish());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::CallStarted { .. }))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::CallFinished { .. }))
    );
    assert!(events.iter().any(
        |e| matches!(e, StreamEvent::Diagnostic { diagnostic } if diagnostic.level == Level::Error)
    ));
}

// covers R-2, R-3
#[test]
fn many_complete_calls_in_one_push_keep_all_arguments() {
    use toolcall_core::StreamEvent;
    let delta = concat!(
        r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#,
        r#"<tool_call>{"name":"get_time","arguments":{}}</tool_call>"#,
        r#"[TOOL_CALLS]get_weather[ARGS]{"city":"Oslo"}"#,
        " then ",
        r#"{"tools":[{"name":"get_time"},{"name":"get_weather","arguments":{"city":"Rome"}}]}"#,
    );
    let mut sp = toolcall_parse::StreamParser::new(with_tools());
    let mut events = sp.push(delta);
    events.extend(sp.finish());
    let calls: Vec<(usize, String, Value)> = events
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::CallFinished { index, call } => Some((index, call.name, call.arguments)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (0, "get_weather".into(), json!({"city":"Paris"})),
            (1, "get_time".into(), json!({})),
            (2, "get_weather".into(), json!({"city":"Oslo"})),
            (3, "get_time".into(), json!({})),
            (4, "get_weather".into(), json!({"city":"Rome"})),
        ]
    );
}

// covers R-1
#[test]
fn mistral_named_calls_are_announced_while_streaming() {
    use toolcall_core::StreamEvent;
    let mut sp = toolcall_parse::StreamParser::new(with_tools());
    let first = sp.push("[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Os");
    assert!(first.iter().any(|e| matches!(e,
        StreamEvent::CallStarted { index: 0, call_id, name } if call_id.as_str() == "abc123XYZ" && name == "get_weather")));
    let mut events = first;
    events.extend(sp.push("lo\"}"));
    events.extend(sp.finish());
    let fragments: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ArgumentsDelta { index: 0, fragment } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, "{\"city\": \"Oslo\"}");
    let call = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::CallFinished { call, .. } => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.call_id.as_str(), "abc123XYZ");
    assert_eq!(call.arguments, json!({"city":"Oslo"}));
}

// Issue #9: the Functionary v3.2 template's generation prompt ends with `>>>`, so a reply
// starts with the recipient; chosen by the model's name, the start reads as if `>>>`
// preceded it, with spans counted in the reply; in auto mode such a start stays prose.
#[test]
fn functionary_v3_2_reply_starts_after_the_implied_opener() {
    let by_name = ParseOptions {
        format: FormatSelection::for_model("meetkai/functionary-medium-v3.2"),
        ..ParseOptions::default()
    };
    assert!(matches!(&by_name.format, FormatSelection::Only(f) if f == "functionary_v3_2"));
    let reply = "all\nLet me check.>>>get_weather\n{\"city\": \"Paris\"}";
    let p = parse(reply, &by_name);
    assert_eq!(p.text.trim(), "Let me check.");
    assert_eq!(p.calls.len(), 1, "{p:?}");
    assert_eq!(p.calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(p.calls[0].origin.span, 17..reply.len());
    let p = parse("get_time\n{}", &by_name);
    assert_eq!((p.calls.len(), p.calls[0].origin.span.clone()), (1, 0..11));
    // Prose from a model not prompted that way stays prose, whole.
    let p = parse("all good here", &by_name);
    assert_eq!((p.text.as_str(), p.calls.len()), ("all good here", 0));
    // Auto mode never assumes the opener.
    for reply in ["all\nthe best", "get_time\n{}"] {
        let p = parse(reply, &auto());
        assert_eq!((p.text.as_str(), p.calls.len()), (reply, 0), "{reply:?}");
    }
}

// Issue #9: Llama 3's `<|python_tag|>{"name", "parameters"}` announces the call at its name
// and forwards the arguments as they arrive.
#[test]
fn llama_python_tag_json_streams_its_arguments() {
    let reply =
        r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}"#;
    let mut sp = toolcall_parse::StreamParser::new(only("llama", false));
    let (mut pushes_with_args, mut fragments, mut started_at) = (0, String::new(), None);
    let mut finished = None;
    let mut events: Vec<Vec<toolcall_core::StreamEvent>> = Vec::new();
    for (i, c) in reply.char_indices() {
        events.push(sp.push(&reply[i..i + c.len_utf8()]));
    }
    events.push(sp.finish());
    for (at, push) in events.into_iter().enumerate() {
        let mut had_args = false;
        for e in push {
            match e {
                toolcall_core::StreamEvent::CallStarted { name, .. } => {
                    assert_eq!(name, "get_weather");
                    started_at = Some(at);
                }
                toolcall_core::StreamEvent::ArgumentsDelta { fragment, .. } => {
                    fragments.push_str(&fragment);
                    had_args = true;
                }
                toolcall_core::StreamEvent::CallFinished { call, .. } => finished = Some(call),
                _ => {}
            }
        }
        pushes_with_args += usize::from(had_args);
    }
    let call = finished.unwrap();
    assert!(
        started_at.unwrap() < reply.find("Paris").unwrap(),
        "{started_at:?}"
    );
    assert!(pushes_with_args > 10, "{pushes_with_args}");
    let sent: Value = serde_json::from_str(&fragments).unwrap();
    assert_eq!(sent, call.arguments);
    assert_eq!(call.arguments, json!({"city": "Paris", "days": 3}));
}

/// The call ids of `text` read whole and streamed a byte at a time; every streamed call
/// finishes under the id it was announced with.
fn ids_whole_and_by_byte(text: &str, options: &ParseOptions) -> (Vec<String>, Vec<String>) {
    use toolcall_core::StreamEvent;
    let whole: Vec<String> = parse(text, options)
        .calls
        .iter()
        .map(|c| c.call_id.to_string())
        .collect();
    let mut sp = toolcall_parse::StreamParser::new(options.clone());
    let mut events = Vec::new();
    for ch in text.chars() {
        events.extend(sp.push(&ch.to_string()));
    }
    events.extend(sp.finish());
    let mut announced = std::collections::HashMap::new();
    let mut streamed = Vec::new();
    for e in events {
        match e {
            StreamEvent::CallStarted { index, call_id, .. } => {
                announced.insert(index, call_id);
            }
            StreamEvent::CallFinished { index, call } => {
                if let Some(id) = announced.get(&index) {
                    assert_eq!(id, &call.call_id, "{call:?}");
                }
                streamed.push(call.call_id.to_string());
            }
            _ => {}
        }
    }
    (whole, streamed)
}

// covers R-1
#[test]
fn a_written_call_id_is_kept_or_not_alike_whole_and_streamed() {
    // Before the arguments: the model's id, in both readings.
    let before = "<tool_call>{\"id\": \"w1\", \"name\": \"get_weather\", \"arguments\": \
                  {\"city\": \"Paris\"}}</tool_call>";
    let (whole, streamed) = ids_whole_and_by_byte(before, &with_tools());
    assert_eq!(whole, ["w1"]);
    assert_eq!(streamed, ["w1"]);
    // After the arguments a streamed call was announced already, under a generated id:
    // reading the text whole does not take the late id either.
    let after = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \
                 \"id\": \"w2\"}</tool_call>";
    let (whole, streamed) = ids_whole_and_by_byte(after, &with_tools());
    assert_eq!((whole.len(), streamed.len()), (1, 1));
    assert_ne!(whole[0], "w2");
    assert_ne!(streamed[0], "w2");
    // The same in the lists behind a marker that stream entry by entry.
    for list in [
        "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \
         \"id\": \"w3\"}]</TOOLCALL>",
        "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \
         \"id\": \"w3\"}]</tool_calls>",
    ] {
        let (whole, streamed) = ids_whole_and_by_byte(list, &with_tools());
        assert_eq!((whole.len(), streamed.len()), (1, 1), "{list}");
        assert_eq!(
            whole[0] == "w3",
            streamed[0] == "w3",
            "{list}: {whole:?} {streamed:?}"
        );
    }
    // Mistral's list form writes its ids after the arguments and is read whole: kept.
    let mistral = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \
                   \"Paris\"}, \"id\": \"a1b2c3d4e\"}]";
    let (whole, streamed) = ids_whole_and_by_byte(mistral, &with_tools());
    assert_eq!(whole, ["a1b2c3d4e"]);
    assert_eq!(streamed, ["a1b2c3d4e"]);
}

// covers R-4 (markup never left in the text)
#[test]
fn llama3_builtin_alone_strips_its_end_of_message_token() {
    let text = "<|python_tag|>brave_search.call(query=\"weather in Paris\")<|eom_id|>";
    for options in [only("llama3_builtin", false), auto()] {
        let p = parse(text, &options);
        assert_eq!(p.calls.len(), 1, "{p:?}");
        assert_eq!(p.calls[0].name, "brave_search");
        assert_eq!(p.text, "", "{p:?}");
    }
}
