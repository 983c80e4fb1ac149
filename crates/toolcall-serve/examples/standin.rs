//! A stand-in model server for benchmarks and demos: answers every Chat Completions request
//! with one recorded Qwen3 reply (a think block and a `<tool_call>`), whole or streamed in
//! 1–5 byte chunks, optionally pausing between chunks.
//!
//! `cargo run --release -p toolcall-serve --example standin -- 127.0.0.1:9100 [chunk_delay_ms]`

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::{Value, json};

const REPLY: &str = "<think>\nThe user wants the weather in Paris.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";

fn pieces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut k = 0usize;
    while !rest.is_empty() {
        let mut n = (1 + (k * 7 + 3) % 5).min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        k += 1;
        out.push(rest[..n].to_owned());
        rest = &rest[n..];
    }
    out
}

fn chunk(delta: Value, finish: Option<&str>) -> Bytes {
    let c = json!({"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1,
        "model": "standin", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    Bytes::from(format!("data: {c}\n\n"))
}

async fn completions(State(delay): State<Duration>, Json(body): Json<Value>) -> Response {
    if body["stream"] != json!(true) {
        return Json(
            json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1,
            "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": REPLY}}]}),
        )
        .into_response();
    }
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    chunks.extend(
        pieces(REPLY)
            .into_iter()
            .map(|p| chunk(json!({"content": p}), None)),
    );
    chunks.push(chunk(json!({}), Some("stop")));
    chunks.push(Bytes::from_static(b"data: [DONE]\n\n"));
    let stream = futures::stream::unfold(chunks.into_iter(), move |mut it| async move {
        let next = it.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<_, Infallible>(next), it))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9100".into());
    let delay = Duration::from_millis(args.next().and_then(|d| d.parse().ok()).unwrap_or(0));
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(delay);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("stand-in listening on http://{}", listener.local_addr()?);
    // Like a real model server's streaming, each chunk goes out as written: without
    // TCP_NODELAY the chunks after the first wait for the client's delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
