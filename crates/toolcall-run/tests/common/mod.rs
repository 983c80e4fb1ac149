//! Test helpers: a scripted OpenAI-compatible server on loopback, and simple tools.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// One scripted answer.
#[derive(Clone)]
pub enum Answer {
    /// A JSON body with status 200.
    Json(Value),
    /// An SSE stream of these `data:` payloads, then `[DONE]`.
    Sse(Vec<Value>),
    /// An error status with a body.
    Status(u16, String),
    /// A status with headers and a raw body, as given (no `[DONE]` added).
    Raw {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Never answers (the connection stays open).
    Hang,
    /// Answers 200 with this content type, then only keeps the connection alive: an SSE
    /// comment (or, for a JSON body, a space) every 100 ms, forever.
    KeepAlive(&'static str),
}

#[derive(Clone, Default)]
pub struct Script {
    answers: Arc<Mutex<Vec<Answer>>>,
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// When the script runs out, repeat the last answer.
    repeat_last: bool,
}

impl Script {
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

async fn answer(State(script): State<Script>, Json(body): Json<Value>) -> Response {
    script.requests.lock().unwrap().push(body);
    let next = {
        let mut a = script.answers.lock().unwrap();
        if a.len() > 1 || (!script.repeat_last && !a.is_empty()) {
            Some(a.remove(0))
        } else {
            a.first().cloned()
        }
    };
    match next {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response(),
        Some(Answer::Json(v)) => Json(v).into_response(),
        Some(Answer::Status(code, body)) => {
            (StatusCode::from_u16(code).unwrap(), body).into_response()
        }
        Some(Answer::Raw {
            status,
            headers,
            body,
        }) => {
            let mut r = Response::builder().status(status);
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.body(Body::from(body)).unwrap()
        }
        Some(Answer::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Some(Answer::KeepAlive(content_type)) => {
            let beat = if content_type == "text/event-stream" {
                ": keep-alive\n\n"
            } else {
                " "
            };
            let beats = futures::stream::unfold((), move |()| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((Ok::<_, std::convert::Infallible>(beat), ()))
            });
            Response::builder()
                .header(header::CONTENT_TYPE, content_type)
                .body(Body::from_stream(beats))
                .unwrap()
        }
        Some(Answer::Sse(chunks)) => {
            let mut text = String::new();
            for c in chunks {
                text.push_str(&format!("data: {c}\n\n"));
            }
            text.push_str("data: [DONE]\n\n");
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from(text))
                .unwrap()
        }
    }
}

/// Starts the server on 127.0.0.1:0; returns its base URL and the script handle.
pub async fn serve(answers: Vec<Answer>, repeat_last: bool) -> (String, Script) {
    let script = Script {
        answers: Arc::new(Mutex::new(answers)),
        requests: Arc::default(),
        repeat_last,
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .route("/v1/responses", post(answer))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), script)
}

/// A Chat Completions response with this assistant message.
pub fn chat(message: Value) -> Answer {
    Answer::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
    }))
}

pub fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

pub fn calls_message(calls: Vec<Value>) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

pub fn text_message(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// Returns its arguments.
pub struct Echo(pub &'static str);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            self.0,
            "Echo the arguments back",
            json!({"type":"object","properties":{"text":{"type":"string"}}}),
        )
    }
    async fn call(&self, _: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        Ok(json!({"echo": a}).into())
    }
}

/// Always fails the same way.
pub struct Fail;

#[async_trait]
impl Tool for Fail {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("flaky", "Always fails", json!({"type":"object"}))
    }
    async fn call(&self, _: &ToolContext, _: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed("the disk is full"))
    }
}

/// Sleeps for `ms` milliseconds.
pub struct Sleep;

#[async_trait]
impl Tool for Sleep {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "sleep",
            "Sleep",
            json!({"type":"object","properties":{"ms":{"type":"integer"}}}),
        )
    }
    async fn call(&self, _: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        let ms = a["ms"].as_u64().unwrap_or(10);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(json!({"slept_ms": ms}).into())
    }
}

pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.add_tool(Arc::new(Echo("echo"))).unwrap();
    r.add_tool(Arc::new(Echo("vista.command.summary"))).unwrap();
    r.add_tool(Arc::new(Fail)).unwrap();
    r.add_tool(Arc::new(Sleep)).unwrap();
    r
}
