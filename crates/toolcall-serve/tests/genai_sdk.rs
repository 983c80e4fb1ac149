//! The official `google-genai` Python package as the client of the gateway's Gemini routes,
//! in front of a stand-in Chat upstream answering in plain text (Hermes, Qwen3-Coder XML,
//! gpt-oss markup, …). The checks live in `genai_client.py`; this side checks what reached the
//! upstream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_genai_sdk_gets_function_calls_whole_and_streamed() {
    let Some(SdkRun { standin, ids, .. }) =
        run_sdk_client_with("genai_client.py", "function call ids: ", CHOICE_REPLIES).await
    else {
        return;
    };
    // ANY with one allowed name is that tool (`choice-tool`); with several (`choice-any`),
    // only those are offered.
    check_choices(&standin);
    let several = standin
        .requests()
        .into_iter()
        .find(|r| r["model"] == "choice-any")
        .unwrap();
    let offered: Vec<&str> = several["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["get_weather", "get_forecast"], "{several}");
    // Each function response reached the upstream as a `tool` message paired with its call.
    let requests = standin.requests();
    let follow = requests
        .iter()
        .find(|r| r["model"] == "followup-check")
        .unwrap();
    let messages = follow["messages"].as_array().unwrap();
    let sent: Vec<&str> = messages[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ids);
    for (i, (m, id)) in messages[2..].iter().zip(&ids).enumerate() {
        assert_eq!(m["role"], "tool");
        assert_eq!(m["tool_call_id"], json!(id));
        assert_eq!(m["content"], json!(format!("result {i}")));
    }
    assert_eq!(messages.len(), 2 + ids.len());
    assert!(requests.iter().any(|r| r["model"] == "org/plain-model"));
}
