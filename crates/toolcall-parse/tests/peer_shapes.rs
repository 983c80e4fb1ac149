//! Shapes other engines' parsers accept that toolcall missed, found by scoring toolcall in
//! auto mode on the outputs in those engines' own parser tests (BENCHMARKS.md, "accuracy
//! on peers' test outputs"). The texts here are our own, written from each family's chat
//! template and model card; each case is checked one-shot and at several chunkings.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::{Parsed, Registry, StreamEvent, ToolSpec};
use toolcall_parse::{ParseOptions, StreamParser, parse};

fn options(tools: &[(&str, Value)]) -> ParseOptions {
    let mut r = Registry::new();
    for (name, params) in tools {
        r.add_spec(ToolSpec::new(*name, "", params.clone()))
            .unwrap();
    }
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

fn streamed(text: &str, size: usize, o: &ParseOptions) -> Vec<(String, Value)> {
    let mut p = StreamParser::new(o.clone());
    let mut events = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(size) {
        events.extend(p.push(&chunk.iter().collect::<String>()));
    }
    events.extend(p.finish());
    events
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::CallFinished { call, .. } => Some((call.name, call.arguments)),
            _ => None,
        })
        .collect()
}

/// Auto mode, one-shot and chunked (1, 2, 3, 7 and 13 characters), gives `want`.
fn check(text: &str, o: &ParseOptions, want: &[(&str, Value)]) {
    let want: Vec<(String, Value)> = want
        .iter()
        .map(|(n, a)| ((*n).to_owned(), a.clone()))
        .collect();
    assert_eq!(calls(&parse(text, o)), want, "one-shot: {text}");
    for size in [1, 2, 3, 7, 13] {
        assert_eq!(streamed(text, size, o), want, "{size}-char chunks: {text}");
    }
}

/// Pydantic writes a nested model as `{"$ref": "#/$defs/Model"}` and an optional one as
/// `anyOf: [{"$ref": …}, {"type": "null"}]`: the value is typed by the schema the `$ref`
/// names, not kept as text because the property itself has no `type`.
#[test]
fn a_value_is_typed_by_the_schema_its_ref_names() {
    let schema = json!({
        "type": "object",
        "$defs": {
            "Place": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}},
            "Unit": {"enum": ["c", "f"], "type": "string"},
            "Days": {"type": "integer"}
        },
        "properties": {
            "place": {"$ref": "#/$defs/Place"},
            "unit": {"$ref": "#/$defs/Unit"},
            "days": {"anyOf": [{"$ref": "#/$defs/Days"}, {"type": "null"}]},
            "stops": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]}
        }
    });
    let o = options(&[("plan_trip", schema)]);
    // Qwen3-Coder's template: <tool_call><function=NAME><parameter=KEY>VALUE</parameter>…
    let text = "Planning it now.\n<tool_call>\n<function=plan_trip>\n\
        <parameter=place>\n{\"city\": \"Porto\", \"zip\": \"4000\"}\n</parameter>\n\
        <parameter=unit>\nc\n</parameter>\n\
        <parameter=days>\n4\n</parameter>\n\
        <parameter=stops>\n{\"city\": \"Braga\", \"zip\": \"4700\"}\n</parameter>\n\
        </function>\n</tool_call>";
    check(
        text,
        &o,
        &[(
            "plan_trip",
            json!({"place": {"city": "Porto", "zip": "4000"}, "unit": "c", "days": 4,
                   "stops": {"city": "Braga", "zip": "4700"}}),
        )],
    );
}

/// FunctionGemma's model card reads each `key:<escape>value<escape>` pair and casts the
/// value (a number, `true`/`false`); vLLM and SGLang do the same. Without a schema type the
/// value is read as JSON, with one the schema decides (`"007"` stays text).
#[test]
fn functiongemma_escaped_values_without_a_schema_type_are_read_as_json() {
    let o = options(&[
        ("set_alarm", json!({"type": "object"})),
        (
            "lookup_code",
            json!({"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}),
        ),
    ]);
    check(
        "<start_function_call>call:set_alarm{hour:<escape>7<escape>,snooze:<escape>false<escape>,label:<escape>Wake up<escape>}<end_function_call>",
        &o,
        &[(
            "set_alarm",
            json!({"hour": 7, "snooze": false, "label": "Wake up"}),
        )],
    );
    check(
        "<start_function_call>call:lookup_code{code:<escape>007<escape>,n:<escape>2<escape>}<end_function_call>",
        &o,
        &[("lookup_code", json!({"code": "007", "n": 2}))],
    );
}

/// The pairs written without the comma between them, as the model card's reader (a
/// `key:<escape>value<escape>` pattern) accepts them.
#[test]
fn functiongemma_pairs_without_commas_are_read() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    check(
        "Let me look.<start_function_call>call:get_weather{city:<escape>Oslo<escape>unit:<escape>celsius<escape> days:<escape>3<escape>}<end_function_call>",
        &o,
        &[(
            "get_weather",
            json!({"city": "Oslo", "unit": "celsius", "days": 3}),
        )],
    );
}

/// A property that may be a string or a structure (`"type": ["string", "object"]`,
/// `anyOf: [string, array]`): text that is the structure in JSON is the structure, as
/// vLLM's readers take it; other text, numbers included, stays exactly the text.
#[test]
fn a_string_or_structure_value_written_as_json_is_the_structure() {
    let schema = json!({
        "type": "object",
        "properties": {
            "filter": {"type": ["string", "object"]},
            "tags": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
            "note": {"type": ["string", "object"]},
            "code": {"anyOf": [{"type": "string"}, {"type": "array"}]}
        }
    });
    let o = options(&[("find_notes", schema)]);
    let text = "<tool_call>\n<function=find_notes>\n\
        <parameter=filter>\n{\"folder\": \"work\", \"pinned\": true}\n</parameter>\n\
        <parameter=tags>\n[\"q3\", \"budget\"]\n</parameter>\n\
        <parameter=note>\nplain words {not json\n</parameter>\n\
        <parameter=code>\n007\n</parameter>\n\
        </function>\n</tool_call>";
    check(
        text,
        &o,
        &[(
            "find_notes",
            json!({"filter": {"folder": "work", "pinned": true}, "tags": ["q3", "budget"],
                   "note": "plain words {not json", "code": "007"}),
        )],
    );
}

/// A property that may be a string or another scalar (`["string", "null"]`,
/// `["string", "integer"]`, `anyOf` string | boolean): text that is a value of the other type
/// in JSON is that value, as llama.cpp's readers take it; other text (`1abc`, `007`, a JSON
/// string, words) stays exactly the text. The same in each text-valued family.
#[test]
fn a_string_or_scalar_value_written_as_the_scalar_is_the_scalar() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "count": {"type": ["string", "integer"]},
            "label": {"type": ["null", "string"]},
            "code": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "flag": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
            "quoted": {"type": ["string", "integer"]}
        }
    });
    let o = options(&[("set_record", schema)]);
    let want = json!({"name": null, "count": 42, "label": "123 Main St", "code": "007",
                      "flag": true, "quoted": "\"7\""});
    let qwen = "<tool_call>\n<function=set_record>\n\
        <parameter=name>\nnull\n</parameter>\n\
        <parameter=count>\n42\n</parameter>\n\
        <parameter=label>\n123 Main St\n</parameter>\n\
        <parameter=code>\n007\n</parameter>\n\
        <parameter=flag>\ntrue\n</parameter>\n\
        <parameter=quoted>\n\"7\"\n</parameter>\n\
        </function>\n</tool_call>";
    check(qwen, &o, &[("set_record", want.clone())]);
    let glm = "<tool_call>set_record\n\
        <arg_key>name</arg_key>\n<arg_value>null</arg_value>\n\
        <arg_key>count</arg_key>\n<arg_value>42</arg_value>\n\
        <arg_key>label</arg_key>\n<arg_value>123 Main St</arg_value>\n\
        <arg_key>code</arg_key>\n<arg_value>007</arg_value>\n\
        <arg_key>flag</arg_key>\n<arg_value>true</arg_value>\n\
        <arg_key>quoted</arg_key>\n<arg_value>\"7\"</arg_value>\n\
        </tool_call>";
    check(glm, &o, &[("set_record", want.clone())]);
    let count_words = "<tool_call>\n<function=set_record>\n<parameter=count>\n1abc\n</parameter>\n</function>\n</tool_call>";
    check(count_words, &o, &[("set_record", json!({"count": "1abc"}))]);
}

/// MiniMax M3: a text leaf is typed by all of its node's alternatives: `oneOf` integer |
/// object given `5` is 5 (it was kept as the text "5", typed by the object branch alone),
/// and the object branch still reads child elements.
#[test]
fn minimax_m3_a_text_leaf_is_typed_by_every_alternative() {
    let schema = json!({
        "type": "object",
        "properties": {
            "limit": {"oneOf": [{"type": "integer"}, {"type": "object", "properties": {"max": {"type": "integer"}}}]},
            "name": {"type": ["string", "null"]}
        }
    });
    let o = options(&[("list_items", schema)]);
    let m = "]<]minimax[>[";
    let call = |body: &str| {
        format!(
            "{m}<tool_call>\n{m}<invoke name=\"list_items\">{body}{m}</invoke>\n{m}</tool_call>"
        )
    };
    check(
        &call(&format!("{m}<limit>5{m}</limit>{m}<name>null{m}</name>")),
        &o,
        &[("list_items", json!({"limit": 5, "name": null}))],
    );
    check(
        &call(&format!("{m}<limit>{m}<max>10{m}</max>{m}</limit>")),
        &o,
        &[("list_items", json!({"limit": {"max": 10}}))],
    );
}

/// Harmony: a message addressed to a tool on the analysis channel is a call (gpt-oss writes
/// them there too, and harmony readers take them), and LLM-jp's dialect writes one space
/// after each control token; its analysis stays reasoning.
#[test]
fn harmony_calls_on_the_analysis_channel_and_with_spaced_headers() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    let want = [("get_weather", json!({"city": "Paris"}))];
    check(
        "<|channel|>analysis to=functions.get_weather<|message|>{\"city\": \"Paris\"}<|call|>",
        &o,
        &want,
    );
    check(
        "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
        &o,
        &want,
    );
    check(
        "<|channel|> commentary to=functions.get_weather<|message|> {\"city\": \"Paris\"}",
        &o,
        &want,
    );
    let spaced = "<|channel|> analysis<|message|> Paris, then.<|end|>\
        <|start|> assistant to=functions.get_weather<|channel|> commentary <|constrain|>  json<|message|> {\"city\": \"Paris\"}<|call|>";
    check(spaced, &o, &want);
    let p = parse(spaced, &o);
    assert!(!p.text.contains("Paris, then."), "{:?}", p.text);
}

/// Kimi K2: a call written without its section (`<|tool_call_begin|>` first), closed or at
/// the end of the reply, is read as llama.cpp's reader takes it; prose around it stays.
#[test]
fn kimi_k2_a_call_without_its_section_is_read() {
    let o = options(&[
        ("get_weather", json!({"type": "object"})),
        ("execute_command", json!({"type": "object"})),
    ]);
    check(
        "Checking.<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>",
        &o,
        &[("get_weather", json!({"city": "Paris"}))],
    );
    check(
        "<|tool_call_begin|>functions.execute_command:0<|tool_call_argument_begin|>{\"command\": \"ls -lah\", \"timeout\": 10}",
        &o,
        &[(
            "execute_command",
            json!({"command": "ls -lah", "timeout": 10}),
        )],
    );
    check(
        "<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Oslo\"}<|tool_call_end|>\
         <|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{\"city\": \"Rome\"}<|tool_call_end|>",
        &o,
        &[
            ("get_weather", json!({"city": "Oslo"})),
            ("get_weather", json!({"city": "Rome"})),
        ],
    );
}

/// A reply that starts inside the role header a harmony-style template opened (its
/// generation prompt ends `<|start|>assistant`, so the model's first bytes are
/// ` to=RECIPIENT<|channel|>…` or ` to=RECIPIENT<|message|>…`) is read as that header in auto
/// mode too: a gpt-oss call addressed there is a call, a MuseGlimmer `to=self` message is
/// reasoning (its quoted ATEM markup no call), a `to=user` one the reply. Prose that merely
/// starts with ` to` is untouched.
#[test]
fn a_reply_starting_inside_the_role_header_is_read_in_auto_mode() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    check(
        " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\": \"Paris\"}",
        &o,
        &[("get_weather", json!({"city": "Paris"}))],
    );
    check(
        " to=functions.get_weather<|channel|>analysis<|message|>{\"city\": \"Paris\"}<|call|>",
        &o,
        &[("get_weather", json!({"city": "Paris"}))],
    );
    let atem = "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n\
        <atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
    let musing = format!(
        " to=self<|message|>I could use {atem} here<|eom|><|start|>assistant to=user<|message|>Hello!<|eot|>"
    );
    check(&musing, &o, &[]);
    assert_eq!(parse(&musing, &o).text, "Hello!");
    let answer = " to=user<|message|>Sunny.<|eot|>";
    check(answer, &o, &[]);
    assert_eq!(parse(answer, &o).text, "Sunny.");
    for prose in [" to be or not to be", " to=x is an assignment", " to"] {
        check(prose, &o, &[]);
        assert_eq!(parse(prose, &o).text, prose);
    }
}

/// A MiniCPM5 value written as an XML CDATA section is the section's content exactly, a
/// `</param>` inside it included (llama.cpp's reader takes it so); a section never closed
/// leaves the call unread rather than cut at the `</param>` inside it.
#[test]
fn a_cdata_value_holds_its_closing_tag_as_text() {
    let o = options(&[
        (
            "write_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "lines": {"type": "integer"}}}),
        ),
        ("get_weather", json!({"type": "object"})),
    ]);
    check(
        "<function name=\"write_file\"><param name=\"path\">a.xml</param><param name=\"content\">\
         <![CDATA[<p>end a value with </param> & go</p>]]></param><param name=\"lines\"><![CDATA[3]]></param>\
         </function>\n<function name=\"get_weather\"><param name=\"city\">Oslo</param></function>",
        &o,
        &[
            (
                "write_file",
                json!({"path": "a.xml", "content": "<p>end a value with </param> & go</p>", "lines": 3}),
            ),
            ("get_weather", json!({"city": "Oslo"})),
        ],
    );
    check(
        "<function name=\"write_file\"><param name=\"content\"><![CDATA[x</param></function>",
        &o,
        &[],
    );
}

/// LLM-jp's harmony dialect ends a call message with `<|end|>` instead of `<|call|>` and
/// writes parallel calls as the next messages: each message is a call, whether the last
/// one ends with `<|call|>`, `<|end|>` or the stripped end of the reply.
#[test]
fn harmony_calls_ended_by_end_tokens_are_each_a_call() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    let call = |city: &str| {
        format!(
            "<|start|> assistant to=functions.get_weather<|channel|> commentary <|constrain|> json<|message|> {{\"city\": \"{city}\"}}"
        )
    };
    let two = format!(
        "<|channel|> analysis<|message|> Two cities.<|end|>{}<|end|>{}",
        call("Oslo"),
        call("Rome")
    );
    let want = [
        ("get_weather", json!({"city": "Oslo"})),
        ("get_weather", json!({"city": "Rome"})),
    ];
    for tail in ["", "<|end|>", "<|call|>"] {
        check(&format!("{two}{tail}"), &o, &want);
    }
}

/// ATEM markup quoted inside MuseGlimmer's `to=user` reply is text (vLLM's reader refuses
/// it there); in a tool's message after that reply it is still a call.
#[test]
fn atem_markup_in_the_user_message_stays_text() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    let atem = "<atem:function_calls>\n<atem:invoke name=\"get_weather\">\n\
        <atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>";
    for head in [
        " to=user<|message|>",
        "<|start|>assistant to=user<|message|>",
    ] {
        let quoted = format!("{head}Write it so:\n{atem}<|eot|>");
        check(&quoted, &o, &[]);
        assert!(
            parse(&quoted, &o)
                .text
                .contains("<atem:invoke name=\"get_weather\">")
        );
        let then_call = format!(
            "{head}Checking.<|eom|><|start|>assistant to=get_weather<|message|>{atem}<|eom|>"
        );
        check(&then_call, &o, &[("get_weather", json!({"city": "Paris"}))]);
    }
}

/// Kimi K2 Thinking opens its tool section inside a `<think>` it never closes (vLLM's
/// Kimi K2 reasoning reader ends the reasoning at `<|tool_calls_section_begin|>`,
/// llama.cpp's also at a bare `<|tool_call_begin|>`): the reasoning ends there and the
/// calls run. A `<think>` closed before the section is unchanged.
#[test]
fn kimi_k2_a_tool_section_ends_an_open_think() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    let call = |i: u32, city: &str| {
        format!(
            "<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>{{\"city\": \"{city}\"}}<|tool_call_end|>"
        )
    };
    let want = [
        ("get_weather", json!({"city": "Oslo"})),
        ("get_weather", json!({"city": "Rome"})),
    ];
    let sectioned = format!(
        "<think>Two cities to look up<|tool_calls_section_begin|>{}{}<|tool_calls_section_end|>",
        call(0, "Oslo"),
        call(1, "Rome")
    );
    check(&sectioned, &o, &want);
    assert_eq!(parse(&sectioned, &o).reasoning, ["Two cities to look up"]);
    let bare = format!(
        "<think>Two cities to look up{}{}",
        call(0, "Oslo"),
        call(1, "Rome")
    );
    check(&bare, &o, &want);
    let closed = format!(
        "<think>Plan first.</think><|tool_calls_section_begin|>{}<|tool_calls_section_end|>",
        call(0, "Oslo")
    );
    check(&closed, &o, &want[..1]);
    assert_eq!(parse(&closed, &o).reasoning, ["Plan first."]);
}

/// A MiniMax M3 block whose last invoke the end of the output cut: the whole invokes
/// before it run and the cut one is reported (as the complete entries of a cut JSON list
/// do), however the output ended.
#[test]
fn minimax_m3_whole_invokes_before_a_cut_one_run() {
    let o = options(&[(
        "create_order",
        json!({"type": "object", "properties": {"user_id": {"type": "integer"}}}),
    )]);
    let ns = "]<]minimax[>[";
    let invoke = |u: u32| {
        format!("{ns}<invoke name=\"create_order\">{ns}<user_id>{u}{ns}</user_id>{ns}</invoke>\n")
    };
    let text = format!(
        "Ordering.\n{ns}<tool_call>\n{}{}{ns}<invoke name=\"create_order\">{ns}<user_id>3",
        invoke(1),
        invoke(2)
    );
    check(
        &text,
        &o,
        &[
            ("create_order", json!({"user_id": 1})),
            ("create_order", json!({"user_id": 2})),
        ],
    );
    let p = parse(&text, &o);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == toolcall_core::Level::Error)
    );
    // Cut by length too: the cut call is itself cut, the whole ones before it stand alone
    // (as a JSON list of calls cut inside an entry).
    let cut = ParseOptions {
        reply_end: toolcall_parse::ReplyEnd::from_finish_reason("length"),
        ..o.clone()
    };
    check(
        &text,
        &cut,
        &[
            ("create_order", json!({"user_id": 1})),
            ("create_order", json!({"user_id": 2})),
        ],
    );
}

/// Kimi K2 calls whose `<|tool_call_end|>` is left out before the next call (llama.cpp's
/// reader takes them): each call's arguments end where its JSON object does.
#[test]
fn kimi_k2_calls_without_their_end_markers_are_read() {
    let o = options(&[("get_weather", json!({"type": "object"}))]);
    let head = |i: u32| {
        format!("<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>")
    };
    let want = [
        ("get_weather", json!({"city": "Oslo"})),
        ("get_weather", json!({"city": "Rome"})),
    ];
    let two = format!(
        "{}{{\"city\": \"Oslo\"}}{}{{\"city\": \"Rome\"}}",
        head(0),
        head(1)
    );
    check(&two, &o, &want);
    check(&format!("<think>Two cities.{two}"), &o, &want);
    check(
        &format!("<|tool_calls_section_begin|>{two}<|tool_call_end|><|tool_calls_section_end|>"),
        &o,
        &want,
    );
}

// vLLM's Hunyuan v4 tests give tools whose schemas use their language's type names ("int",
// "list", "uint32"): the registry reads them as JSON Schema types (with a warning) instead
// of refusing the tool, so the values are typed by the schema.
#[test]
fn hunyuan_v4_values_typed_by_common_type_names() {
    let o = options(&[(
        "configure",
        json!({"type": "object", "properties": {
            "retries": {"type": "int"}, "tags": {"type": "list"}, "port": {"type": "uint32"},
            "ratio": {"type": "double"}, "verbose": {"type": "bool"}, "label": {"type": "str"}
        }}),
    )]);
    let arg = |k: &str, v: &str| {
        format!(
            "<arg_key:opensource>{k}</arg_key:opensource><arg_value:opensource>{v}</arg_value:opensource>"
        )
    };
    let text = format!(
        "<tool_calls:opensource><tool_call:opensource>configure{}{}{}{}{}{}</tool_call:opensource></tool_calls:opensource>",
        arg("retries", "-3"),
        arg("tags", "[\"a\", \"b\"]"),
        arg("port", "8080"),
        arg("ratio", "0.25"),
        arg("verbose", "true"),
        arg("label", "42"),
    );
    check(
        &text,
        &o,
        &[(
            "configure",
            json!({"retries": -3, "tags": ["a", "b"], "port": 8080, "ratio": 0.25, "verbose": true, "label": "42"}),
        )],
    );
    let p = parse(&text, &o);
    assert!(
        p.diagnostics
            .iter()
            .any(|d| d.level == toolcall_core::Level::Warning
                && d.message
                    .contains("\"uint32\" read as \"integer\" at /properties/port")),
        "{:?}",
        p.diagnostics
    );
}
