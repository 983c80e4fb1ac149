//! A stand-in model server on loopback that replays real model outputs as plain text (whole,
//! or streamed in 1–5 byte chunks), with fault modes chosen by model name, and the gateway
//! started in front of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_serve::{AppState, Config};

/// One recorded model output.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Fixture {
    pub about: String,
    pub model: String,
    pub text: String,
    pub content: String,
    pub reasoning: bool,
    pub calls: Vec<Value>,
}

pub fn fixtures() -> Vec<Fixture> {
    serde_json::from_str(include_str!("../fixtures/replies.json")).unwrap()
}

pub fn tools() -> Value {
    serde_json::from_str(include_str!("../fixtures/tools.json")).unwrap()
}

/// What the stand-in received and answers.
#[derive(Clone, Default)]
pub struct StandIn {
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Model name → reply text; unknown models get their name back as text.
    pub replies: Arc<Mutex<Vec<(String, String)>>>,
    /// Slow streams (model `slow-stream`) still being sent.
    pub open_streams: Arc<AtomicUsize>,
}

/// Counts a stand-in stream while it is being sent.
struct Sending(Arc<AtomicUsize>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl StandIn {
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    fn text_for(&self, model: &str, attempt: usize) -> String {
        let replies = self.replies.lock().unwrap();
        let mut matching = replies.iter().filter(|(m, _)| m == model);
        // A model listed twice answers its entries in turn (a retry sees the second).
        let all: Vec<&String> = matching.by_ref().map(|(_, t)| t).collect();
        match all.len() {
            0 => format!("echo: {model}"),
            n => all[attempt.min(n - 1)].clone(),
        }
    }

    pub fn reply(&self, model: &str, text: &str) {
        self.replies
            .lock()
            .unwrap()
            .push((model.to_owned(), text.to_owned()));
    }
}

/// Splits `s` into pieces of 1–5 bytes (on char boundaries), deterministically.
pub fn small_pieces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut k = 0usize;
    while !rest.is_empty() {
        let mut n = 1 + (k * 7 + 3) % 5;
        k += 1;
        while n < rest.len() && !rest.is_char_boundary(n) {
            n += 1;
        }
        let n = n.min(rest.len());
        out.push(rest[..n].to_owned());
        rest = &rest[n..];
    }
    out
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1,
        "model": "standin", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn sse(body: String) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

async fn completions(State(s): State<StandIn>, Json(body): Json<Value>) -> Response {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let attempt = {
        let mut r = s.requests.lock().unwrap();
        r.push(body.clone());
        r.iter().filter(|b| b["model"] == model.as_str()).count() - 1
    };
    let stream = body["stream"] == json!(true);
    match model.as_str() {
        "fault-500" => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"error\":{\"message\":\"boom\"}}",
            )
                .into_response();
        }
        "fault-429" if attempt == 0 => {
            return Response::builder()
                .status(429)
                .header("retry-after", "1")
                .body(Body::from("{\"error\":{\"message\":\"slow down\"}}"))
                .unwrap();
        }
        "fault-json" => {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"choices\": [",
            )
                .into_response();
        }
        "fault-hang" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        "slow-stream" => {
            s.open_streams.fetch_add(1, Ordering::SeqCst);
            let guard = Sending(s.open_streams.clone());
            let first = chunk(json!({"role": "assistant", "content": "tick "}), None);
            let body = futures::stream::unfold((guard, 0u32), |(guard, n)| async move {
                if n > 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                let c = chunk(json!({"content": format!("{n} ")}), None);
                Some((Ok::<_, std::convert::Infallible>(c), (guard, n + 1)))
            });
            let all = futures::stream::once(async move { Ok(first) }).chain(body);
            return Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(all))
                .unwrap();
        }
        "fault-cut" if stream => {
            let mut body = chunk(json!({"role": "assistant", "content": "Deleting "}), None);
            for p in small_pieces("<tool_call>{\"name\": \"get_weather\", \"argu") {
                body.push_str(&chunk(json!({"content": p}), None));
            }
            return sse(body);
        }
        "fault-cut" => {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"id\":\"x\",\"choices\":[{\"message\":{\"role\":\"assis",
            )
                .into_response();
        }
        _ => {}
    }
    let text = s.text_for(&model, attempt);
    if stream {
        let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
        for p in small_pieces(&text) {
            out.push_str(&chunk(json!({"content": p}), None));
        }
        out.push_str(&chunk(json!({}), Some("stop")));
        out.push_str("data: [DONE]\n\n");
        return sse(out);
    }
    Json(json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))
    .into_response()
}

async fn models() -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": "qwen3-8b", "object": "model", "created": 1, "owned_by": "standin"}]}),
    )
}

/// Starts the stand-in; its base URL.
pub async fn stand_in(s: StandIn) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .with_state(s);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A stand-in with every fixture loaded, and the gateway in front of it (config adjusted by
/// `edit`); the gateway's base URL and the stand-in.
pub async fn gateway(edit: impl FnOnce(&mut Config)) -> (String, StandIn) {
    let s = StandIn::default();
    for f in fixtures() {
        s.reply(&f.model, &f.text);
    }
    let upstream = stand_in(s.clone()).await;
    let mut config = Config {
        upstream,
        read_timeout_secs: 2,
        ..Config::default()
    };
    edit(&mut config);
    let state = AppState::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    (format!("http://{addr}"), s)
}
