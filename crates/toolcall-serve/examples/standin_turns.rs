//! A stand-in model server for server-side turns (bench/replicas.sh): a Chat Completions
//! request whose last message is a tool result gets a short text answer; any other gets one
//! native call to the world pack's `set_attribute` (so a turn is two model requests and one
//! server-side call that changes the pack's state). Whole or streamed (one content or call
//! chunk, then the finish chunk).
//!
//! `cargo run --release -p toolcall-serve --example standin_turns -- 127.0.0.1:9200`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

async fn completions(State(next): State<Arc<AtomicU64>>, Json(body): Json<Value>) -> Response {
    let answered = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let (message, finish) = if answered {
        (
            json!({"role": "assistant", "content": "The mood is set."}),
            "stop",
        )
    } else {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let arguments = json!({"entityType": "player", "entityId": "char_001",
                               "attributeName": "mood", "value": format!("calm {n}")});
        (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": "set_attribute", "arguments": arguments.to_string()}}]}),
            "tool_calls",
        )
    };
    if body["stream"] != json!(true) {
        return Json(
            json!({"id": "chatcmpl-turns", "object": "chat.completion", "created": 1,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": finish, "message": message}]}),
        )
        .into_response();
    }
    let mut delta = message;
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (i, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(i);
        }
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-turns", "object": "chat.completion.chunk", "created": 1,
               "model": "standin", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let sse = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(delta, Value::Null),
        chunk(json!({}), json!(finish))
    );
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9200".into());
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(Arc::new(AtomicU64::new(0)));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app).await
}
