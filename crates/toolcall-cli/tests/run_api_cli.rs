//! `toolcall run --api chat|responses|anthropic|gemini` against a loopback stand-in speaking
//! that dialect, whole and `--stream`: the call reaches the tool, its result goes back
//! paired with the call in the dialect's shape, the final text is printed; a cut stream is
//! an error. And `toolcall run` picks the text format by the model's name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

/// One SSE event: its `event:` name (if any) and its data.
fn sse(events: &[(Option<&str>, Value)], done: bool) -> (&'static str, String) {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    ("text/event-stream", body)
}

fn whole(v: Value) -> (&'static str, String) {
    ("application/json", v.to_string())
}

/// What one dialect's stand-in says and how its requests look.
struct Dialect {
    api: &'static str,
    /// The base URL's suffix (Gemini's version).
    base: &'static str,
    /// The reply calling `text_word_count` on "a b c" (id `m1` where the dialect has ids),
    /// then the final reply, whole.
    whole: [(&'static str, String); 2],
    /// The same, streamed.
    streamed: [(&'static str, String); 2],
    /// A stream cut before it says it finished.
    cut: (&'static str, String),
    /// The request line's start, whole and streamed.
    path: [&'static str; 2],
    /// The key's header line (lowercase).
    key_header: &'static str,
    /// The call id and the result content the second request carries.
    result: fn(&Value) -> (String, Value),
}

fn dialects() -> Vec<Dialect> {
    let args = r#"{"text":"a b c"}"#;
    let chat_whole = |message: Value, finish: &str| {
        whole(
            json!({"id": "c", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}),
        )
    };
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let completed = |output: Value| {
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": {"id": "r", "output": output}}),
        )
    };
    let responses_call = json!([{"type": "function_call", "id": "fc1", "call_id": "m1",
        "name": "text_word_count", "arguments": args}]);
    let responses_text = json!([{"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "Three words."}]}]);
    let message = |content: Value, stop: &str| {
        whole(
            json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
            "content": content, "stop_reason": stop}),
        )
    };
    let event = |name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        (Some(name), data)
    };
    let candidate = |parts: Value, finish: Option<&str>| {
        let mut c = json!({"content": {"role": "model", "parts": parts}});
        if let Some(f) = finish {
            c["finishReason"] = json!(f);
        }
        json!({"candidates": [c]})
    };
    vec![
        Dialect {
            api: "chat",
            base: "",
            whole: [
                chat_whole(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": "m1",
                        "type": "function", "function": {"name": "text_word_count", "arguments": args}}]}),
                    "tool_calls",
                ),
                chat_whole(
                    json!({"role": "assistant", "content": "Three words."}),
                    "stop",
                ),
            ],
            streamed: [
                sse(
                    &[
                        chunk(
                            json!({"tool_calls": [{"index": 0, "id": "m1", "type": "function",
                            "function": {"name": "text_word_count", "arguments": "{\"text\":"}}]}),
                            Value::Null,
                        ),
                        chunk(
                            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a b c\"}"}}]}),
                            Value::Null,
                        ),
                        chunk(json!({}), json!("tool_calls")),
                    ],
                    true,
                ),
                sse(
                    &[
                        chunk(json!({"content": "Three "}), Value::Null),
                        chunk(json!({"content": "words."}), json!("stop")),
                    ],
                    true,
                ),
            ],
            cut: sse(&[chunk(json!({"content": "Three "}), Value::Null)], false),
            path: ["POST /v1/chat/completions ", "POST /v1/chat/completions "],
            key_header: "authorization: bearer sk-test",
            result: |body| {
                let m = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["role"] == "tool")
                    .unwrap();
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(m["content"].as_str().unwrap()).unwrap(),
                )
            },
        },
        Dialect {
            api: "responses",
            base: "",
            whole: [
                whole(json!({"id": "r", "output": responses_call})),
                whole(json!({"id": "r", "output": responses_text})),
            ],
            streamed: [
                sse(
                    &[
                        event(
                            "response.output_item.added",
                            json!({"item": {"type": "function_call", "id": "fc1",
                            "call_id": "m1", "name": "text_word_count", "arguments": ""}}),
                        ),
                        event(
                            "response.function_call_arguments.delta",
                            json!({"item_id": "fc1", "delta": args}),
                        ),
                        completed(responses_call.clone()),
                    ],
                    false,
                ),
                sse(
                    &[
                        event(
                            "response.output_text.delta",
                            json!({"item_id": "m", "delta": "Three words."}),
                        ),
                        completed(responses_text.clone()),
                    ],
                    false,
                ),
            ],
            cut: sse(
                &[event(
                    "response.output_text.delta",
                    json!({"item_id": "m", "delta": "Three"}),
                )],
                false,
            ),
            path: ["POST /v1/responses ", "POST /v1/responses "],
            key_header: "authorization: bearer sk-test",
            result: |body| {
                let item = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|i| i["type"] == "function_call_output")
                    .unwrap();
                (
                    item["call_id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(item["output"].as_str().unwrap()).unwrap(),
                )
            },
        },
        Dialect {
            api: "anthropic",
            base: "",
            whole: [
                message(
                    json!([{"type": "tool_use", "id": "m1", "name": "text_word_count",
                        "input": {"text": "a b c"}}]),
                    "tool_use",
                ),
                message(
                    json!([{"type": "text", "text": "Three words."}]),
                    "end_turn",
                ),
            ],
            streamed: [
                sse(
                    &[
                        event(
                            "message_start",
                            json!({"message": {"id": "msg", "usage": {"input_tokens": 3}}}),
                        ),
                        event(
                            "content_block_start",
                            json!({"index": 0, "content_block": {"type": "tool_use",
                            "id": "m1", "name": "text_word_count", "input": {}}}),
                        ),
                        event(
                            "content_block_delta",
                            json!({"index": 0, "delta": {"type": "input_json_delta",
                            "partial_json": args}}),
                        ),
                        event("content_block_stop", json!({"index": 0})),
                        event(
                            "message_delta",
                            json!({"delta": {"stop_reason": "tool_use"}}),
                        ),
                        event("message_stop", json!({})),
                    ],
                    false,
                ),
                sse(
                    &[
                        event(
                            "content_block_start",
                            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
                        ),
                        event(
                            "content_block_delta",
                            json!({"index": 0, "delta": {"type": "text_delta", "text": "Three words."}}),
                        ),
                        event(
                            "message_delta",
                            json!({"delta": {"stop_reason": "end_turn"}}),
                        ),
                        event("message_stop", json!({})),
                    ],
                    false,
                ),
            ],
            cut: sse(
                &[event(
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta", "text": "Three"}}),
                )],
                false,
            ),
            path: ["POST /v1/messages ", "POST /v1/messages "],
            key_header: "x-api-key: sk-test",
            result: |body| {
                let block = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .find(|b| b["type"] == "tool_result")
                    .unwrap();
                (
                    block["tool_use_id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(block["content"].as_str().unwrap()).unwrap(),
                )
            },
        },
        Dialect {
            api: "gemini",
            base: "/v1beta",
            whole: [
                whole(candidate(
                    json!([{"functionCall": {"id": "m1", "name": "text_word_count",
                        "args": {"text": "a b c"}}}]),
                    Some("STOP"),
                )),
                whole(candidate(json!([{"text": "Three words."}]), Some("STOP"))),
            ],
            streamed: [
                sse(
                    &[(
                        None,
                        candidate(
                            json!([{"functionCall": {"id": "m1", "name": "text_word_count",
                            "args": {"text": "a b c"}}}]),
                            Some("STOP"),
                        ),
                    )],
                    false,
                ),
                sse(
                    &[
                        (None, candidate(json!([{"text": "Three "}]), None)),
                        (None, candidate(json!([{"text": "words."}]), Some("STOP"))),
                    ],
                    false,
                ),
            ],
            cut: sse(
                &[(None, candidate(json!([{"text": "Three "}]), None))],
                false,
            ),
            path: [
                "POST /v1beta/models/test-model:generateContent ",
                "POST /v1beta/models/test-model:streamGenerateContent?alt=sse ",
            ],
            key_header: "x-goog-api-key: sk-test",
            result: |body| {
                let part = body["contents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                    .find(|p| p.get("functionResponse").is_some())
                    .unwrap();
                let r = &part["functionResponse"];
                assert_eq!(r["name"], "text_word_count");
                (
                    r["id"].as_str().unwrap().to_owned(),
                    serde_json::from_str(r["response"]["output"].as_str().unwrap()).unwrap(),
                )
            },
        },
    ]
}

fn run(api: &str, url: &str, stream: bool, archive: &std::path::Path) -> std::process::Output {
    let mut cmd = bin();
    cmd.current_dir(repo_root())
        .env("MY_TEST_KEY", "sk-test")
        .args(["run", "--tools", "examples/tools/echo-tools.json"])
        .args(["--model", url, "--model-name", "test-model", "--api", api])
        .args(["--api-key-env", "MY_TEST_KEY", "--mode", "native"])
        .arg("--archive")
        .arg(archive);
    if stream {
        cmd.arg("--stream");
    }
    cmd.arg("How many words in 'a b c'?").output().unwrap()
}

// covers R-18
#[test]
fn every_api_runs_a_tool_round_whole_and_streamed() {
    let dir = tempfile::tempdir().unwrap();
    for d in dialects() {
        for stream in [false, true] {
            let script = if stream { &d.streamed } else { &d.whole };
            let (url, seen) = scripted_raw_server(script.to_vec());
            let base = format!("{url}{}", d.base);
            let out = run(d.api, &base, stream, &dir.path().join("a.sqlite"));
            let what = format!("--api {} stream={stream}", d.api);
            let text = ok(out);
            assert!(text.contains("Three words."), "{what}: {text}");
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 2, "{what}");
            let head = seen[0].0.to_ascii_lowercase();
            assert!(
                seen[0].0.starts_with(d.path[usize::from(stream)]),
                "{what}: {}",
                seen[0].0
            );
            assert!(head.contains(d.key_header), "{what}: {head}");
            let (id, result) = (d.result)(&seen[1].1);
            assert_eq!(id, "m1", "{what}");
            assert_eq!(result["data"]["words"], 3, "{what}: {result}");
        }
    }
}

// covers R-18
#[test]
fn a_cut_stream_is_an_error_in_every_api() {
    let dir = tempfile::tempdir().unwrap();
    for d in dialects() {
        // The first attempt and every retry are cut.
        let (url, _) = scripted_raw_server(vec![d.cut.clone(); 4]);
        let base = format!("{url}{}", d.base);
        let out = run(d.api, &base, true, &dir.path().join("a.sqlite"));
        let err = stderr(&out);
        assert!(!out.status.success(), "--api {}: {}", d.api, stdout(&out));
        assert!(err.contains("was cut"), "--api {}: {err}", d.api);
    }
}

#[test]
fn an_unknown_api_is_refused_naming_the_known_ones() {
    let out = bin()
        .args(["run", "--model", "http://127.0.0.1:9", "--model-name", "m"])
        .args(["--api", "claude", "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("chat, responses, anthropic, gemini"), "{err}");
}

// `toolcall run` reads a model's text by the family its name says (the table `serve`,
// `toolcall parse` and Python use): in text mode it teaches that family's syntax and reads
// the calls written in it.
#[test]
fn the_model_name_picks_the_text_format() {
    let dir = tempfile::tempdir().unwrap();
    let chat = |content: &str| {
        json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content}}]})
    };
    let qwen_call = "<tool_call>\n<function=text_word_count>\n<parameter=text>\na b c\n\
                     </parameter>\n</function>\n</tool_call>";
    let run = |model: &str, first: &str| {
        let (url, seen) = scripted_server(vec![chat(first), chat("Three words.")]);
        let out = bin()
            .current_dir(repo_root())
            .args(["run", "--tools", "examples/tools/echo-tools.json"])
            .args([
                "--model",
                &url,
                "--model-name",
                model,
                "--mode",
                "text",
                "--json",
            ])
            .arg("--archive")
            .arg(dir.path().join("a.sqlite"))
            .arg("How many words in 'a b c'?")
            .output()
            .unwrap();
        let report = report_of(out);
        let system = seen.lock().unwrap()[0].1["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        (report, system)
    };
    let (report, system) = run("Qwen/Qwen3-Coder-30B-A3B-Instruct", qwen_call);
    assert!(system.contains("<function="), "{system}");
    let call = &report["rounds"][0]["calls"][0];
    assert_eq!(call["name"], "text_word_count", "{report}");
    assert_eq!(call["origin"]["format"], "qwen3_coder", "{report}");
    // A name the table does not know: Hermes is taught, every format is read.
    let (report, system) = run("my-own-model", qwen_call);
    assert!(system.contains("<tool_call>"), "{system}");
    assert!(!system.contains("<function="), "{system}");
    assert_eq!(report["rounds"][0]["calls"][0]["name"], "text_word_count");
}
