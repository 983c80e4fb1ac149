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
    let Some(python) = toolcall_testkit::require("python", toolcall_testkit::python()) else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let more: Vec<Fixture> =
        serde_json::from_str(include_str!("fixtures/replies_more.json")).unwrap();
    let standin = StandIn::default();
    for f in &more {
        standin.reply(&f.model, &f.text);
    }
    let (url, standin) = gateway_over(standin, |c| {
        c.retries = 0;
        c.api_keys = vec!["sk-test".into()];
    })
    .await;
    let out = tokio::process::Command::new(python)
        .arg(dir.join("genai_client.py"))
        .arg(&url)
        .arg(dir.join("fixtures/tools.json"))
        .arg(dir.join("fixtures/replies.json"))
        .arg(dir.join("fixtures/replies_more.json"))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let n = fixtures().len() + more.len();
    assert!(stdout.contains(&format!("ok {n} fixtures")), "{stdout}");

    // Each function response reached the upstream as a `tool` message paired with its call.
    let ids: Vec<String> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("function call ids: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
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
