//! Tool declarations are never dropped in silence:
//! - hosted tools (`web_search`, …): under `hosted_tools = "warn"` they are left out of the
//!   upstream request, logged once per request and named in `x-toolcall-dropped-tools`;
//!   under `"reject"` the request is a 400 in the front end's error shape naming them (Chat,
//!   Responses, Messages, Gemini);
//! - an unknown version of a known built-in client tool (`computer_20990101`) is offered
//!   with the nearest known schema, and logged;
//! - a request field the upstream's dialect does not define (Codex's `prompt_cache_key`,
//!   `client_metadata`, `store`, `include`) never reaches it, and is logged once.
//!
//! The tests share one global log subscriber (installed once; see `logs.rs` for why it is
//! global) and tell their lines apart by model or tool names, so they may run in any order.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use serde_json::{Value, json};
use toolcall_serve::{HostedTools, ModelRoute};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines written so far by every test in this binary (JSON, one per line).
fn logs() -> String {
    static BUF: OnceLock<Buf> = OnceLock::new();
    let buf = BUF.get_or_init(|| {
        let buf = Buf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buf
    });
    String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn post_to(url: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .unwrap()
}

fn function_tool() -> Value {
    json!({"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

fn strict_route() -> ModelRoute {
    ModelRoute {
        pattern: "strict-*".into(),
        upstream: None,
        format: None,
        upstream_api_key_env: None,
        emulate_tools: None,
        upstream_api: None,
        reasoning_calls: None,
        constrain: None,
        hosted_tools: Some(HostedTools::Reject),
    }
}

#[test]
fn hosted_tools_are_named_under_warn_and_refused_under_reject() {
    logs();
    runtime().block_on(async {
        let (url, standin) = gateway(|c| c.models = vec![strict_route()]).await;

        // warn (the default): Responses, with Codex's hosted web_search.
        let body = json!({"model": "plain", "input": "hi",
            "tools": [function_tool(), {"type": "web_search"},
                      {"type": "file_search", "vector_store_ids": ["v"]}]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["x-toolcall-dropped-tools"],
            "web_search, file_search"
        );
        let sent = standin.requests().pop().unwrap();
        let tools = sent["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{sent}");
        assert_eq!(tools[0]["function"]["name"], "get_weather");

        // warn, Anthropic's versioned server tools.
        let body = json!({"model": "plain", "max_tokens": 50,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                      {"type": "web_fetch_20250910", "name": "web_fetch"},
                      {"type": "code_execution_20250825", "name": "code_execution"}]});
        let r = post_to(&url, "/v1/messages", &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["x-toolcall-dropped-tools"],
            "web_search, web_fetch, code_execution"
        );
        assert!(
            standin
                .requests()
                .pop()
                .unwrap()
                .get("tools")
                .is_none_or(|t| t == &json!([]))
        );

        // A request without hosted tools has no header.
        let body = json!({"model": "plain", "input": "hi", "tools": [function_tool()]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert!(r.headers().get("x-toolcall-dropped-tools").is_none());

        // reject: a 400 naming the tool, in each front end's error shape; nothing sent.
        let before = standin.requests().len();
        let body = json!({"model": "strict-1", "input": "hi",
            "tools": [function_tool(), {"type": "web_search"}]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search"),
            "{e}"
        );
        let body = json!({"model": "strict-1", "max_tokens": 50,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]});
        let r = post_to(&url, "/v1/messages", &body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["type"], "error", "{e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search"),
            "{e}"
        );
        assert_eq!(standin.requests().len(), before);
    });
    let logs = logs();
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("hosted tools left out") && l.contains(r#""model":"plain""#))
        .collect();
    assert_eq!(lines.len(), 2, "one line per request:\n{logs}");
    assert!(lines[0].contains("web_search, file_search"), "{}", lines[0]);
    assert!(
        lines[1].contains("web_search, web_fetch, code_execution"),
        "{}",
        lines[1]
    );
}

// The other two front ends: Gemini's hosted tools (`googleSearch`, `codeExecution`) and a
// Chat request's hosted tool, named under warn and refused under reject in Gemini's and
// Chat's own error shapes.
#[test]
fn chat_and_gemini_front_ends_name_hosted_tools_in_their_own_shapes() {
    logs();
    runtime().block_on(async {
        let (url, standin) = gateway(|c| c.models = vec![strict_route()]).await;
        let gemini_body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]},
                      {"googleSearch": {}}, {"codeExecution": {}}]});
        let r = post_to(&url, "/v1beta/models/gem-warn:generateContent", &gemini_body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["x-toolcall-dropped-tools"],
            "googleSearch, codeExecution"
        );
        let sent = standin.requests().pop().unwrap();
        let names: Vec<&str> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_weather"], "{sent}");

        let chat_body = json!({"model": "chat-warn",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "get_weather",
                        "parameters": {"type": "object", "properties": {}}}},
                      {"type": "web_search"}]});
        let r = post_to(&url, "/v1/chat/completions", &chat_body).await;
        let status = r.status();
        let header = r.headers().get("x-toolcall-dropped-tools").cloned();
        let text = r.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
        assert_eq!(header.unwrap(), "web_search");

        // reject: nothing sent, a 400 naming the tool in each front end's shape.
        let before = standin.requests().len();
        let r = post_to(&url, "/v1beta/models/strict-gem:generateContent", &gemini_body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["code"], 400, "{e}");
        assert_eq!(e["error"]["status"], "INVALID_ARGUMENT", "{e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains("googleSearch, codeExecution"), "{e}");

        let mut chat_body = chat_body;
        chat_body["model"] = json!("strict-chat");
        let r = post_to(&url, "/v1/chat/completions", &chat_body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search"),
            "{e}"
        );
        assert_eq!(standin.requests().len(), before);
    });
    let logs = logs();
    for (model, named) in [
        ("gem-warn", "googleSearch, codeExecution"),
        ("chat-warn", "web_search"),
    ] {
        let lines: Vec<&str> = logs
            .lines()
            .filter(|l| l.contains("hosted tools left out"))
            .filter(|l| l.contains(&format!(r#""model":"{model}""#)))
            .collect();
        assert_eq!(lines.len(), 1, "one line for {model}:\n{logs}");
        assert!(lines[0].contains(named), "{}", lines[0]);
    }
}

// Before: one schema per type whatever its version; the log line did not say whose schema
// an unknown version was given, and a later text editor was offered undo_edit.
#[test]
fn an_unknown_version_of_a_built_in_tool_gets_the_nearest_schema_and_a_log_line() {
    logs();
    runtime().block_on(async {
        let s = StandIn::default();
        s.reply(
            "computer-later",
            r#"<tool_call>{"name": "computer", "arguments": {"action": "left_click", "coordinate": [10, 20]}}</tool_call>"#,
        );
        let (url, standin) = gateway_over(s, |_| {}).await;
        let body = json!({"model": "computer-later", "max_tokens": 100,
            "messages": [{"role": "user", "content": "click the button"}],
            "tools": [{"type": "computer_20990101", "name": "computer",
                       "display_width_px": 1280, "display_height_px": 800},
                      {"type": "text_editor_20991231", "name": "str_replace_based_edit_tool"},
                      {"type": "bash_20250124", "name": "bash"}]});
        let r = post_to(&url, "/v1/messages", &body).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["stop_reason"], "tool_use", "{v}");
        let call = v["content"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "tool_use")
            .unwrap_or_else(|| panic!("{v}"));
        assert_eq!(call["name"], "computer");
        assert_eq!(
            call["input"],
            json!({"action": "left_click", "coordinate": [10, 20]})
        );

        // Offered with the newest known versions' schemas (the nearest before 2099).
        let sent = standin.requests().pop().unwrap();
        let tool = |name: &str| {
            sent["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["function"]["name"] == name)
                .unwrap_or_else(|| panic!("no {name} in {sent}"))
                .clone()
        };
        let computer = tool("computer");
        assert_eq!(computer["type"], "function");
        let actions = computer["function"]["parameters"]["properties"]["action"]["enum"].clone();
        assert!(actions.as_array().unwrap().contains(&json!("triple_click")));
        assert!(
            computer["function"]["description"]
                .as_str()
                .unwrap()
                .contains("1280x800")
        );
        let editor = tool("str_replace_based_edit_tool");
        let params = &editor["function"]["parameters"];
        assert!(
            !params["properties"]["command"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!("undo_edit")),
            "{editor}"
        );
        assert_eq!(params["properties"]["insert_text"]["type"], "string");
    });
    let logs = logs();
    let unknown = |kind: &str| -> Vec<String> {
        logs.lines()
            .filter(|l| l.contains("unknown version of a built-in tool") && l.contains(kind))
            .map(str::to_owned)
            .collect()
    };
    for (kind, nearest) in [
        ("computer_20990101", "computer_20251124"),
        ("text_editor_20991231", "text_editor_20250728"),
    ] {
        let lines = unknown(kind);
        assert_eq!(lines.len(), 1, "one line for {kind}:\n{logs}");
        assert!(lines[0].contains(nearest), "{}", lines[0]);
    }
    // A known version is not logged as unknown.
    assert!(unknown("bash_20250124").is_empty(), "{logs}");
}

// Codex's Responses-only fields, whole and streamed: none reaches the upstream's recorded
// Chat request, and each is logged once for the process, not once per request.
#[test]
fn responses_only_fields_never_reach_a_chat_upstream_and_are_logged_once() {
    logs();
    runtime().block_on(async {
        let (url, standin) = gateway(|_| {}).await;
        for stream in [false, true, false] {
            let body = json!({"model": "codex-fields", "input": "hi", "stream": stream,
                "store": false, "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "k1", "client_metadata": {"session": "s"},
                "parallel_tool_calls": true, "tools": [function_tool()]});
            let r = post_to(&url, "/v1/responses", &body).await;
            assert_eq!(r.status(), 200);
            let _ = r.text().await.unwrap();
            let sent = standin.requests().pop().unwrap();
            assert_eq!(sent["model"], "codex-fields");
            for field in ["store", "include", "prompt_cache_key", "client_metadata"] {
                assert!(
                    sent.get(field).is_none(),
                    "{field} reached the upstream: {sent}"
                );
            }
        }
    });
    let logs = logs();
    for field in ["store", "include", "prompt_cache_key", "client_metadata"] {
        let lines = logs
            .lines()
            .filter(|l| l.contains("no upstream equivalent"))
            .filter(|l| l.contains(&format!(r#""field":"{field}""#)))
            .count();
        assert_eq!(lines, 1, "{field}:\n{logs}");
    }
}
