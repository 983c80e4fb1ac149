//! The gateway's logs: structured, with call ids, and never a secret (the client's API key,
//! the upstream's key, credentials in an upstream URL, argument fields named like
//! `password` or `api_key`).
//!
//! This is the only test in its binary on purpose: `tracing` caches each callsite's interest
//! process-wide, so a thread-scoped subscriber loses events that other tests' threads hit
//! first. Alone in its process, the test installs a global subscriber before any thread runs.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use toolcall_serve::ModelRoute;

const CLIENT_KEY: &str = "sk-client-7f3a9c";
const UPSTREAM_KEY: &str = "sk-upstream-51d2e8";
const UPSTREAM_KEY_VAR: &str = "TOOLCALL_LOGS_TEST_UPSTREAM_KEY";
const URL_SECRET: &str = "url-pw-0b7e44";
const ARG_PASSWORD: &str = "hunter2-pass-93c1";
const ARG_API_KEY: &str = "sk-arg-key-6e0f";

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

fn login_tools() -> Value {
    json!([{"type": "function", "function": {"name": "login", "parameters": {"type": "object",
        "properties": {"user": {"type": "string"}, "password": {"type": "string"},
        "api_key": {"type": "string"}}, "required": ["user"]}}}])
}

#[test]
fn the_gateways_logs_carry_call_ids_and_no_secret() {
    // SAFETY: set before this process starts any other thread (the only test in its binary).
    unsafe { std::env::set_var(UPSTREAM_KEY_VAR, UPSTREAM_KEY) };
    let buf = Buf::default();
    let writer = buf.clone();
    // As `toolcall serve` logs (crates/toolcall-cli/src/serve_cmd.rs).
    let subscriber = tracing_subscriber::fmt()
        .json()
        .event_format(toolcall_serve::log_lines::JsonLines::default())
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "info,toolcall_serve=debug,toolcall_parse=debug,toolcall_run=debug",
        ))
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let call_ids = runtime.block_on(async {
        let s = StandIn::default();
        let text = format!(
            "Logging in.\n<tool_call>{{\"name\": \"login\", \"arguments\": {{\"user\": \"ann\", \"password\": \"{ARG_PASSWORD}\", \"api_key\": \"{ARG_API_KEY}\"}}}}</tool_call>"
        );
        s.reply("qwen3-login", &text);
        // A call that fails its schema is logged too (`user` missing).
        s.reply(
            "qwen3-bad-login",
            &format!("<tool_call>{{\"name\": \"login\", \"arguments\": {{\"password\": \"{ARG_PASSWORD}\"}}}}</tool_call>"),
        );
        let (url, _) = gateway_over(s, |c| {
            c.api_keys = vec![CLIENT_KEY.into()];
            c.upstream_api_key_env = Some(UPSTREAM_KEY_VAR.into());
            c.retries = 0;
            c.models = vec![ModelRoute {
                pattern: "down-*".into(),
                // Nothing listens on port 1: the connection error names this URL.
                upstream: Some(format!("http://admin:{URL_SECRET}@127.0.0.1:1")),
                format: None,
                upstream_api_key_env: None,
                emulate_tools: None,
                upstream_api: None,
                reasoning_calls: None,
                constrain: None,
                hosted_tools: None,
            }];
        })
        .await;
        let client = reqwest::Client::new();
        let send = |model: &str, stream: bool| {
            client
                .post(format!("{url}/v1/chat/completions"))
                .bearer_auth(CLIENT_KEY)
                .json(&json!({"model": model, "stream": stream, "tools": login_tools(),
                    "messages": [{"role": "user", "content": "log me in"}]}))
                .send()
        };
        let mut ids = Vec::new();
        let whole: Value = send("qwen3-login", false).await.unwrap().json().await.unwrap();
        let call = &whole["choices"][0]["message"]["tool_calls"][0];
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["password"], ARG_PASSWORD, "the client gets the call whole");
        ids.push(call["id"].as_str().unwrap().to_owned());
        let data = sse_data(send("qwen3-login", true).await.unwrap()).await;
        let id = data
            .iter()
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find_map(|v| v["choices"][0]["delta"]["tool_calls"][0]["id"].as_str().map(str::to_owned))
            .unwrap();
        ids.push(id);
        send("qwen3-bad-login", false).await.unwrap();
        sse_data(send("qwen3-bad-login", true).await.unwrap()).await;
        let down = send("down-1", false).await.unwrap();
        assert_eq!(down.status(), 502);
        let body = down.text().await.unwrap();
        assert!(!body.contains(URL_SECRET), "{body}");
        assert!(body.contains("***@127.0.0.1:1"), "{body}");
        ids
    });
    drop(runtime);
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for id in &call_ids {
        let logged = lines
            .iter()
            .find(|l| l["fields"]["message"] == "call" && l["fields"]["call_id"] == id.as_str());
        let logged = logged.unwrap_or_else(|| panic!("no call line for {id}:\n{logs}"));
        assert_eq!(logged["fields"]["tool"], "login");
        let args: Value =
            serde_json::from_str(logged["fields"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args["user"], "ann", "what is not secret stays readable");
    }
    assert!(
        lines.iter().any(|l| l["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("invalid call"))),
        "{logs}"
    );
    assert!(logs.contains("upstream failed"), "{logs}");
    for secret in [
        CLIENT_KEY,
        UPSTREAM_KEY,
        URL_SECRET,
        ARG_PASSWORD,
        ARG_API_KEY,
    ] {
        assert!(!logs.contains(secret), "{secret} in the logs:\n{logs}");
    }
}
