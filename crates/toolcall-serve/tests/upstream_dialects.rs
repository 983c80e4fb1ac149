//! Any front end reaches any upstream (`upstream_api`): a stand-in that speaks Anthropic
//! Messages and Gemini, answering with calls written as text (Hermes markup, parsed by the
//! turn) or natively (`tool_use` blocks, `functionCall` parts), whole and streamed, behind
//! the Chat Completions and Messages front ends.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use toolcall_serve::{AppState, Config, ModelRoute};

const HERMES: &str = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

/// What the stand-in received: the dialect or path, the key header, the body.
type Request = (String, Option<String>, Value);

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Request>>>);

fn sse(events: &[(Option<&str>, Value)]) -> Response {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            body.push_str(&format!("event: {n}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

/// Anthropic Messages: the Hermes text, whole or as text_delta events.
async fn messages(
    State(seen): State<Seen>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> Response {
    let key = headers
        .get("x-api-key")
        .map(|v| v.to_str().unwrap().to_owned());
    seen.0
        .lock()
        .unwrap()
        .push(("anthropic".into(), key, body.0.clone()));
    if body["stream"] == true {
        let mut events = vec![
            (
                Some("message_start"),
                json!({"type": "message_start", "message": {"id": "msg_up",
                "type": "message", "role": "assistant", "content": [], "model": "m",
                "usage": {"input_tokens": 5, "output_tokens": 0}}}),
            ),
            (
                Some("content_block_start"),
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
        ];
        for piece in HERMES.as_bytes().chunks(7) {
            let text = String::from_utf8(piece.to_vec()).unwrap();
            events.push((
                Some("content_block_delta"),
                json!({"type": "content_block_delta",
                "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ));
        }
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ));
        events.push((
            Some("message_delta"),
            json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        ));
        events.push((Some("message_stop"), json!({"type": "message_stop"})));
        return sse(&events);
    }
    axum::Json(
        json!({"id": "msg_up", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": HERMES}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 9}}),
    )
    .into_response()
}

/// Gemini: a native functionCall, whole or as one chunk plus a finishing chunk.
async fn gemini(
    State(seen): State<Seen>,
    Path(rest): Path<String>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> Response {
    let key = headers
        .get("x-goog-api-key")
        .map(|v| v.to_str().unwrap().to_owned());
    seen.0
        .lock()
        .unwrap()
        .push((rest.clone(), key, body.0.clone()));
    let call = json!({"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}});
    if rest.ends_with(":streamGenerateContent") {
        return sse(&[
            (
                None,
                json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": "thinking", "thought": true}, call]}}]}),
            ),
            (
                None,
                json!({"candidates": [{"content": {"role": "model", "parts": []},
                "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3}}),
            ),
        ]);
    }
    axum::Json(
        json!({"candidates": [{"content": {"role": "model", "parts": [call]},
        "finishReason": "STOP"}]}),
    )
    .into_response()
}

async fn gateway() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1beta/{*rest}", post(gemini))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    // SAFETY: only this test binary reads this variable.
    unsafe { std::env::set_var("TOOLCALL_TEST_DIALECT_KEY", "up-key") };
    let config = Config {
        upstream: format!("{upstream}/v1"),
        upstream_api: "anthropic".parse().unwrap(),
        upstream_api_key_env: Some("TOOLCALL_TEST_DIALECT_KEY".into()),
        retries: 0,
        models: vec![ModelRoute {
            pattern: "gem*".into(),
            upstream: Some(format!("{upstream}/v1beta")),
            format: None,
            upstream_api_key_env: Some("TOOLCALL_TEST_DIALECT_KEY".into()),
            emulate_tools: None,
            upstream_api: Some("gemini".parse().unwrap()),
            reasoning_calls: None,
            constrain: None,
            hosted_tools: None,
        }],
        ..Config::default()
    };
    let state = AppState::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    (url, seen)
}

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
}

async fn send(url: String, body: Value) -> (reqwest::StatusCode, String) {
    let r = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_client_reaches_an_anthropic_upstream_whole_and_streamed() {
    let (url, seen) = gateway().await;
    let body = json!({"model": "qwen3-8b", "max_tokens": 50, "tools": tools(),
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "weather?"}]});
    let (status, text) = send(format!("{url}/v1/chat/completions"), body.clone()).await;
    assert!(status.is_success(), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Paris\"}");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 5);

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let (status, text) = send(format!("{url}/v1/chat/completions"), streamed).await;
    assert!(status.is_success(), "{text}");
    assert!(text.contains("\"name\":\"get_weather\""), "{text}");
    assert!(text.contains("{\\\"city\\\":\\\"Paris\\\"}"), "{text}");
    assert!(text.contains("\"finish_reason\":\"tool_calls\""), "{text}");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");

    // The upstream got Messages requests with its own key as x-api-key.
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (api, key, body) in &seen {
        assert_eq!(api, "anthropic");
        assert_eq!(key.as_deref(), Some("up-key"));
        assert_eq!(body["system"], "sys");
        assert_eq!(body["max_tokens"], 50);
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["tools"][0]["name"], "get_weather");
        assert!(body["tools"][0]["input_schema"].is_object(), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_client_reaches_a_gemini_upstream_whole_and_streamed() {
    let (url, seen) = gateway().await;
    let tools = json!([{"name": "get_weather", "input_schema": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}]);
    let body = json!({"model": "gemini-x", "max_tokens": 50, "tools": tools,
        "messages": [{"role": "user", "content": "weather?"}]});
    let (status, text) = send(format!("{url}/v1/messages?beta=true"), body.clone()).await;
    assert!(status.is_success(), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    let block = v["content"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["input"], json!({"city": "Oslo"}));
    assert!(
        block["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{block}"
    );

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let (status, text) = send(format!("{url}/v1/messages"), streamed).await;
    assert!(status.is_success(), "{text}");
    for needle in [
        "event: message_start",
        "\"thinking_delta\"",
        "\"type\":\"tool_use\"",
        "\"partial_json\":\"{\\\"city\\\":\\\"Oslo\\\"}\"",
        "\"stop_reason\":\"tool_use\"",
        "event: message_stop",
    ] {
        assert!(text.contains(needle), "{needle} missing: {text}");
    }
    let seen = seen.0.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "models/gemini-x:generateContent",
            "models/gemini-x:streamGenerateContent"
        ]
    );
    for (_, key, body) in &seen {
        assert_eq!(key.as_deref(), Some("up-key"));
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 50);
        assert_eq!(
            body["tools"][0]["functionDeclarations"][0]["name"],
            "get_weather"
        );
    }
}
