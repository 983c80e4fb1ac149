//! The official `anthropic` Python package as the client of the gateway's `/v1/messages`, in
//! front of a stand-in Chat upstream answering in plain text (Hermes, Qwen3-Coder XML, gpt-oss
//! markup, …). The checks live in `anthropic_client.py`; this side checks what reached the
//! upstream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_gets_tool_use_blocks_whole_and_streamed() {
    let Some(SdkRun { standin, ids, .. }) =
        run_sdk_client("anthropic_client.py", "tool_use ids: ").await
    else {
        return;
    };
    // The tool results reached the upstream as `tool` messages paired with the calls the
    // assistant message (the SDK's own reply, sent back) holds, in order, after it.
    let requests = standin.requests();
    let follow = requests
        .iter()
        .find(|r| r["model"] == "followup-check")
        .unwrap();
    let messages = follow["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    let mut want = vec!["user", "assistant"];
    want.extend(ids.iter().map(|_| "tool"));
    assert_eq!(roles, want, "{follow}");
    let sent: Vec<&str> = messages[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ids);
    for (m, id) in messages[2..].iter().zip(&ids) {
        assert_eq!(m["tool_call_id"], json!(id));
    }
    assert_eq!(messages[2]["content"], "sunny, 21 C");
    if ids.len() > 1 {
        assert_eq!(messages[3]["content"], "Error: no such city");
    }

    // Claude Code's shape: system blocks joined, the mid-conversation system message kept,
    // max_tokens and the thinking budget mapped, nothing Anthropic-only passed on.
    let cc = requests.iter().find(|r| r["max_tokens"] == 32000).unwrap();
    assert_eq!(
        cc["messages"][0],
        json!({"role": "system", "content": "You are a coding agent.\nBe brief."})
    );
    assert_eq!(cc["messages"][2]["role"], "system");
    assert_eq!(cc["reasoning_effort"], "low");
    for field in [
        "thinking",
        "metadata",
        "context_management",
        "output_config",
        "system",
    ] {
        assert!(cc.get(field).is_none(), "{field} went upstream: {cc}");
    }
    assert!(
        cc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("cache_control").is_none()
                && t["function"].get("cache_control").is_none())
    );
    let _: &Value = cc;
}
