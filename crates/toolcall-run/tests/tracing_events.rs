//! The executor's tracing events carry the call id and never a secret.
//!
//! This is the only test in its binary on purpose: `tracing` caches each callsite's interest
//! process-wide, so a thread-scoped subscriber raced with other tests' threads hitting the same
//! callsites with no subscriber and lost events (CI saw `started` missing). Alone in its
//! process the test installs a global subscriber and every event reaches it.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolSpec};
use toolcall_run::{Executor, SessionContext};

/// Succeeds, or fails when its `mode` argument is `"fail"`.
struct Probe;

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("probe", "probe", json!({"type":"object"}))
    }
    async fn call(&self, _: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        match a["mode"].as_str() {
            Some("fail") => Err(ToolError::failed("it broke")),
            _ => Ok(json!({"echo": a}).into()),
        }
    }
}

fn call(id: &str, args: Value) -> ToolCall {
    let mut c = ToolCall::new("probe", args, "test");
    c.call_id = id.into();
    c
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

//
#[tokio::test(flavor = "current_thread")]
async fn tracing_events_carry_call_id_and_redact_secrets() {
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let mut registry = Registry::new();
    registry.add_tool(Arc::new(Probe)).unwrap();
    let ex = Executor::new(Arc::new(registry));
    ex.execute(
        vec![
            call(
                "s1",
                json!({"q": "weather", "API_KEY": "sk-live-123", "login": {"Password": "hunter2", "user": "ann"}}),
            ),
            call("s2", json!({"mode": "fail", "token": "tok-456"})),
        ],
        &SessionContext::default(),
    )
    .await;
    let out = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["fields"]["call_id"].is_string())
        .collect();
    let names: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["fields"]["event"].as_str().unwrap().to_owned(),
                e["fields"]["call_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("tool_call.started".into(), "s1".into()),
            ("tool_call.completed".into(), "s1".into()),
            ("tool_call.started".into(), "s2".into()),
            ("tool_call.failed".into(), "s2".into()),
        ]
    );
    for e in &events {
        assert_eq!(e["fields"]["tool"], json!("probe"));
    }
    assert!(events[1]["fields"]["duration_ms"].is_u64());
    assert!(events[3]["fields"]["duration_ms"].is_u64());
    for secret in ["sk-live-123", "hunter2", "tok-456"] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
    assert!(out.contains("[REDACTED]") && out.contains("weather") && out.contains("ann"));
}
