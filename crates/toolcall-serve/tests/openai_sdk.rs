//! The official `openai` Python package as the client of the gateway (issue: real parts):
//! whole and streamed Chat Completions and Responses for every recorded model output, and
//! upstream faults as the SDK's errors. The checks live in `sdk_client.py`.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

/// A call `get_weather` without its required `city`: it fails the schema after its name.
const MISSING_CITY: &str =
    "Let me look.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_gets_native_calls_whole_and_streamed() {
    sdk_client(StandIn::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_gets_the_same_from_one_byte_upstream_chunks() {
    let s = StandIn::default();
    s.one_byte.store(true, std::sync::atomic::Ordering::SeqCst);
    sdk_client(s).await;
}

/// Runs `sdk_client.py` against the gateway in front of `standin`.
async fn sdk_client(standin: StandIn) {
    let Some(python) = toolcall_testkit::require("python", toolcall_testkit::python()) else {
        return;
    };
    let (url, standin) = gateway_over(standin, |c| c.retries = 0).await;
    standin.reply("qwen3-late", MISSING_CITY);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let out = tokio::process::Command::new(python)
        .arg(dir.join("sdk_client.py"))
        .arg(&url)
        .arg(dir.join("fixtures/replies.json"))
        .arg(dir.join("fixtures/tools.json"))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok 6 fixtures"), "{stdout}");
}
