//! MCP servers that misbehave, as tool backends run by the executor: one killed mid-call,
//! one that hangs, and results over the size limits. The peer is a small server written
//! with the official MCP Python SDK (the CLI tests' fixture).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolcall_core::{ErrorCode, McpServer, ToolCall, ToolResult};
use toolcall_mcp::{ConnectOptions, connect};
use toolcall_run::{Executor, SessionContext};

fn python() -> Option<PathBuf> {
    toolcall_testkit::require("python", toolcall_testkit::python())
}

fn calc_server(py: &Path, pid_file: &Path) -> McpServer {
    let script = toolcall_testkit::workspace_root()
        .join("crates/toolcall-cli/tests/fixtures/mcp/calc_server.py");
    McpServer::Stdio {
        name: "calc".into(),
        argv: vec![py.display().to_string(), script.display().to_string()],
        env: [("CALC_PID_FILE".to_owned(), pid_file.display().to_string())].into(),
    }
}

async fn executor(server: &McpServer, options: ConnectOptions) -> Executor {
    let registry = connect(server, options).await.unwrap();
    Executor::new(Arc::new(registry))
}

async fn call(executor: &Executor, name: &str, arguments: Value) -> ToolResult {
    let call = ToolCall::new(name, arguments, "test");
    executor
        .execute_one(call, &SessionContext::default())
        .await
        .result
}

/// The server process's id, asked of the server itself.
async fn server_pid(executor: &Executor) -> i64 {
    let r = call(executor, "calc.pid", json!({})).await;
    let data = &r.outcome.as_ref().unwrap().data;
    data["result"].as_i64().unwrap_or_else(|| panic!("{data}"))
}

fn error_of(r: &ToolResult) -> (ErrorCode, String) {
    let e = r.outcome.as_ref().unwrap_err();
    (e.code, e.message.clone())
}

// covers W-MCP, R-9
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_times_out_and_is_started_again() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = calc_server(&py, &dir.path().join("pid"));
    // Long enough for a busy machine to start the server again within a call; short next to
    // the 60 s the stall takes.
    let executor = executor(&server, ConnectOptions::default())
        .await
        .with_default_timeout(Duration::from_secs(15));
    let first = server_pid(&executor).await;
    let hung = call(&executor, "calc.stall", json!({})).await;
    assert_eq!(error_of(&hung).0, ErrorCode::Timeout, "{hung:?}");
    // The hung server is not asked again: the next call starts a new one.
    let second = server_pid(&executor).await;
    assert_ne!(first, second);
    let sum = call(&executor, "calc.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(sum.outcome.unwrap().data["result"], 3);
}

// covers W-MCP, X-2
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_that_call_and_is_started_again() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let server = calc_server(&py, &pid_file);
    let executor = Arc::new(executor(&server, ConnectOptions::default()).await);
    let first = server_pid(&executor).await;
    let stalled = {
        let executor = executor.clone();
        tokio::spawn(async move { call(&executor, "calc.stall", json!({})).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&pid_file)
        .unwrap_or_default()
        .trim()
        != first.to_string()
    {
        assert!(Instant::now() < deadline, "the stall call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let failed = stalled.await.unwrap();
    let (code, message) = error_of(&failed);
    assert_eq!(code, ErrorCode::ToolFailed, "{message}");
    assert!(message.contains("started again"), "{message}");
    assert_ne!(server_pid(&executor).await, first);
}

// covers W-MCP, R-10
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_over_the_limits_are_refused() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = calc_server(&py, &dir.path().join("pid"));
    // The transport's message limit: the connection ends at once (a timeout would be a
    // `timeout` result).
    let options = ConnectOptions {
        max_message_bytes: 64 * 1024,
        ..ConnectOptions::default()
    };
    let executor = executor(&server, options)
        .await
        .with_default_timeout(Duration::from_secs(120))
        .with_max_output_bytes(2000);
    let first = server_pid(&executor).await;
    let huge = call(&executor, "calc.big", json!({"n": 200_000})).await;
    let (code, message) = error_of(&huge);
    assert_eq!(code, ErrorCode::ToolFailed, "{message}");
    assert!(message.contains("larger than 65536 bytes"), "{message}");
    assert_ne!(server_pid(&executor).await, first);
    // Under the message limit but over the executor's output cap.
    let big = call(&executor, "calc.big", json!({"n": 5000})).await;
    let (code, message) = error_of(&big);
    assert_eq!(code, ErrorCode::ToolFailed, "{message}");
    assert!(message.contains("limit of 2000"), "{message}");
    let small = call(&executor, "calc.big", json!({"n": 10})).await;
    assert_eq!(small.outcome.unwrap().data["result"], "x".repeat(10));
}
