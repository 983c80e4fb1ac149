//! The gateway's memory budgets seen from a client (issue 20, fault 2): a request body
//! larger than the bodies' whole budget is `413`; one that does not fit beside the bodies
//! in flight (a stream's included, until its last event) waits briefly, then gets
//! `503 overloaded` with `Retry-After: 1`; both in the front end's error shape, naming
//! `bodies_memory_mib`. And an upstream 429's own `Retry-After` reaches the client, whole
//! and streamed, once the gateway gives up retrying.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{gateway, post, request};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A chat request whose one message is `len` bytes of text.
fn long(model: &str, len: usize, stream: bool) -> Value {
    json!({"model": model, "stream": stream,
        "messages": [{"role": "user", "content": "a".repeat(len)}]})
}

async fn error_of(r: reqwest::Response) -> (StatusCode, Option<String>, Value) {
    let status = r.status();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_larger_than_the_whole_budget_is_413_naming_the_setting() {
    let (url, _) = gateway(|c| c.bodies_memory_mib = 1).await;
    // Its length alone is too much (7x 200 KB): refused before it is read.
    let (status, retry_after, body) = error_of(post(&url, long("m", 200_000, false)).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(retry_after, None);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("bodies_memory_mib"), "{message}");
    // Few bytes of many values: too much once counted (50 KB of `0,`).
    let zeros = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "x": vec![0; 25_000]});
    let (status, _, body) = error_of(post(&url, zeros).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    // In the front end's own shape: Anthropic's for /v1/messages.
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/messages"))
        .json(&json!({"model": "m", "max_tokens": 10,
            "messages": [{"role": "user", "content": "a".repeat(200_000)}]}))
        .send()
        .await
        .unwrap();
    let (status, _, body) = error_of(r).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["type"], "error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bodies_memory_mib"),
        "{body}"
    );
    // A body that fits goes through.
    assert_eq!(post(&url, long("m", 10_000, false)).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_fit_beside_a_stream_in_flight_is_503_to_retry() {
    let (url, s) = gateway(|c| {
        c.bodies_memory_mib = 1;
        // The held stream stays open longer than the other body waits for room.
        c.read_timeout_secs = 60;
    })
    .await;
    // About 600 KiB estimated each (7x 80 KB): one fits the 1 MiB budget, two do not.
    let held = post(&url, long("gated-call", 80_000, true)).await;
    assert_eq!(held.status(), 200);
    let (status, retry_after, body) = error_of(post(&url, long("m", 80_000, false)).await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], "overloaded", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("bodies_memory_mib"), "{message}");
    // Once the stream has been sent to its end, its share is back.
    s.gate.notify_one();
    let events = common::sse_data(held).await;
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{events:?}"
    );
    assert_eq!(post(&url, long("m", 80_000, false)).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_429_s_retry_after_reaches_the_client_whole_and_streamed() {
    let (url, _) = gateway(|_| {}).await;
    for stream in [false, true] {
        let (status, retry_after, body) =
            error_of(post(&url, request("fault-429-wait", stream)).await).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(retry_after.as_deref(), Some("120"), "stream: {stream}");
        assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    }
}
