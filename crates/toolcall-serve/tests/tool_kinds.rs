//! Every tool kind and request field a client declares, and what reaches the upstream:
//! Responses-only fields never cross to a Chat upstream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

async fn post_responses(url: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap()
}

// Codex CLI's request fields: before, `prompt_cache_key` and `client_metadata` reached the
// upstream Chat request and `reasoning.effort` did not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_fields_the_upstream_dialect_defines_cross() {
    let (url, standin) = gateway(|_| {}).await;
    let body = json!({"model": "plain", "input": "hi", "stream": false,
        "store": false, "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
        "prompt_cache_key": "k1", "client_metadata": {"session": "s"},
        "previous_response_id": null, "truncation": "auto",
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}},
        "max_output_tokens": 64, "temperature": 0.2, "parallel_tool_calls": true});
    let r = post_responses(&url, &body).await;
    assert_eq!(r.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let keys: Vec<&str> = sent
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for responses_only in [
        "store",
        "include",
        "reasoning",
        "prompt_cache_key",
        "client_metadata",
        "previous_response_id",
        "truncation",
        "text",
        "max_output_tokens",
        "input",
    ] {
        assert!(
            !keys.contains(&responses_only),
            "{responses_only} in {sent}"
        );
    }
    for key in &keys {
        assert!(
            toolcall_wire::crossing::is_neutral(key)
                || [
                    "model",
                    "messages",
                    "tools",
                    "tool_choice",
                    "parallel_tool_calls",
                    "stream"
                ]
                .contains(key),
            "{key} is no Chat request field: {sent}"
        );
    }
    assert_eq!(sent["reasoning_effort"], "high");
    assert_eq!(sent["max_tokens"], 64);
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["response_format"]["json_schema"]["name"], "n");
}
