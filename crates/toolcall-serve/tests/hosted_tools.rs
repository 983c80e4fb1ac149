//! Hosted tools (`web_search`, …) are never dropped in silence: under `hosted_tools = "warn"`
//! they are left out of the upstream request, logged once per request and named in
//! `x-toolcall-dropped-tools`; under `"reject"` the request is a 400 in the front end's
//! error shape naming them.
//!
//! The only test in its binary: it installs a global log subscriber (see `logs.rs` for why).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use toolcall_serve::{HostedTools, ModelRoute};

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

async fn post_to(url: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .unwrap()
}

fn function_tool() -> Value {
    json!({"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

#[test]
fn hosted_tools_are_named_under_warn_and_refused_under_reject() {
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (url, standin) = gateway(|c| {
            c.models = vec![ModelRoute {
                pattern: "strict-*".into(),
                upstream: None,
                format: None,
                upstream_api_key_env: None,
                emulate_tools: None,
                upstream_api: None,
                reasoning_calls: None,
                constrain: None,
                hosted_tools: Some(HostedTools::Reject),
            }];
        })
        .await;

        // warn (the default): Responses, with Codex's hosted web_search.
        let body = json!({"model": "plain", "input": "hi",
            "tools": [function_tool(), {"type": "web_search"},
                      {"type": "file_search", "vector_store_ids": ["v"]}]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["x-toolcall-dropped-tools"],
            "web_search, file_search"
        );
        let sent = standin.requests().pop().unwrap();
        let tools = sent["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{sent}");
        assert_eq!(tools[0]["function"]["name"], "get_weather");

        // warn, Anthropic's versioned server tools.
        let body = json!({"model": "plain", "max_tokens": 50,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
                      {"type": "web_fetch_20250910", "name": "web_fetch"},
                      {"type": "code_execution_20250825", "name": "code_execution"}]});
        let r = post_to(&url, "/v1/messages", &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["x-toolcall-dropped-tools"],
            "web_search, web_fetch, code_execution"
        );
        assert!(
            standin
                .requests()
                .pop()
                .unwrap()
                .get("tools")
                .is_none_or(|t| t == &json!([]))
        );

        // A request without hosted tools has no header.
        let body = json!({"model": "plain", "input": "hi", "tools": [function_tool()]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert!(r.headers().get("x-toolcall-dropped-tools").is_none());

        // reject: a 400 naming the tool, in each front end's error shape; nothing sent.
        let before = standin.requests().len();
        let body = json!({"model": "strict-1", "input": "hi",
            "tools": [function_tool(), {"type": "web_search"}]});
        let r = post_to(&url, "/v1/responses", &body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search"),
            "{e}"
        );
        let body = json!({"model": "strict-1", "max_tokens": 50,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]});
        let r = post_to(&url, "/v1/messages", &body).await;
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["type"], "error", "{e}");
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("web_search"),
            "{e}"
        );
        assert_eq!(standin.requests().len(), before);
    });
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("hosted tools left out"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per request:\n{logs}");
    assert!(lines[0].contains("web_search, file_search"), "{}", lines[0]);
    assert!(
        lines[1].contains("web_search, web_fetch, code_execution"),
        "{}",
        lines[1]
    );
}
