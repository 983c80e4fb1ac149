//! Every front end and every upstream dialect with images and with the client's tools of
//! every kind:
//! - a server-side tool's screenshot reaches each upstream inside its tool result, in the
//!   upstream's own shape (Chat Completions, which has no place there, gets it after the
//!   results in a user message);
//! - a client's tool result holding an image reaches each upstream dialect as an image,
//!   whichever front end it came through;
//! - in a server-side turn the client's custom, namespace and built-in tools are offered
//!   as a turn without server-side tools offers them, and their calls come back to the
//!   client in their declared shape (`custom_tool_call`, a `function_call` with its
//!   `namespace`, Anthropic's `tool_use`), a custom tool's grammar checked with the route's
//!   invalid-call policy;
//! - a hosted tool the client declares (`web_search`) that a server-side tool of the same
//!   name provides runs in the gateway, even where hosted tools are refused.
//!
//! The stand-in upstream speaks all four dialects, records each request and answers with
//! the next scripted text (calls written as Hermes markup, read by the gateway's turn).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use toolcall_inspector::ToolSwitches;
use toolcall_run::ApproveAll;
use toolcall_serve::server_side::ServerSide;
use toolcall_serve::{AppState, Config, HostedTools, InvalidCallPolicy, ModelRoute};

/// A 1×1 PNG's first bytes, base64: enough to follow through every shape.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUg==";
const DIALECTS: [&str; 4] = ["chat", "responses", "anthropic", "gemini"];

fn data_uri() -> String {
    format!("data:image/png;base64,{PNG}")
}

/// What the stand-in received (its dialect and body), and what it answers next.
#[derive(Clone, Default)]
struct Upstream {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    script: Arc<Mutex<VecDeque<String>>>,
}

impl Upstream {
    fn next(&self, dialect: &str, body: Value) -> String {
        self.seen.lock().unwrap().push((dialect.to_owned(), body));
        self.script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| "Done.".to_owned())
    }

    fn seen(&self) -> Vec<(String, Value)> {
        self.seen.lock().unwrap().clone()
    }
}

async fn chat(State(u): State<Upstream>, body: axum::Json<Value>) -> axum::Json<Value> {
    let text = u.next("chat", body.0);
    axum::Json(
        json!({"id": "chatcmpl-up", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]}),
    )
}

async fn responses(State(u): State<Upstream>, body: axum::Json<Value>) -> axum::Json<Value> {
    let text = u.next("responses", body.0);
    axum::Json(
        json!({"id": "resp_up", "object": "response", "status": "completed",
        "model": "m", "output": [{"type": "message", "id": "msg_up", "role": "assistant",
        "status": "completed", "content": [{"type": "output_text", "text": text}]}]}),
    )
}

async fn messages(State(u): State<Upstream>, body: axum::Json<Value>) -> axum::Json<Value> {
    let text = u.next("anthropic", body.0);
    axum::Json(
        json!({"id": "msg_up", "type": "message", "role": "assistant",
        "model": "m", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}}),
    )
}

async fn gemini(
    State(u): State<Upstream>,
    Path(_rest): Path<String>,
    body: axum::Json<Value>,
) -> axum::Json<Value> {
    let text = u.next("gemini", body.0);
    axum::Json(json!({"candidates": [{"content": {"role": "model",
        "parts": [{"text": text}]}, "finishReason": "STOP"}]}))
}

/// The stand-in's base URL.
async fn upstream(u: Upstream) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/responses", post(responses))
        .route("/v1/messages", post(messages))
        .route("/v1beta/{*rest}", post(gemini))
        .with_state(u);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Routes `up-{dialect}` to the stand-in in that dialect.
fn routes(base: &str) -> Vec<ModelRoute> {
    DIALECTS
        .iter()
        .map(|d| {
            let path = if *d == "gemini" { "v1beta" } else { "v1" };
            serde_json::from_value(json!({"match": format!("up-{d}"),
                "upstream": format!("{base}/{path}"), "upstream_api": d}))
            .unwrap()
        })
        .collect()
}

/// The gateway in front of the stand-in, with `side` as its server-side tools if any.
async fn gateway(
    script: &[&str],
    side: Option<ServerSide>,
    edit: impl FnOnce(&mut Config),
) -> (String, Upstream) {
    let u = Upstream::default();
    u.script
        .lock()
        .unwrap()
        .extend(script.iter().map(|s| (*s).to_owned()));
    let base = upstream(u.clone()).await;
    let mut config = Config {
        upstream: format!("{base}/v1"),
        retries: 0,
        read_timeout_secs: 5,
        models: routes(&base),
        ..Config::default()
    };
    edit(&mut config);
    let mut state = AppState::new(config).unwrap();
    if let Some(side) = side {
        state = state.with_server_side(side);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    (url, u)
}

/// A server-side tool that answers with a screenshot, as the computer pack does.
struct Snap;

#[async_trait::async_trait]
impl Tool for Snap {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "snap",
            "Takes a screenshot",
            json!({"type": "object", "properties": {}}),
        )
    }

    async fn call(&self, _: &ToolContext, _: Value) -> Result<ToolOutput, ToolError> {
        Ok(json!({"screen": {"type": "image", "media_type": "image/png", "data": PNG}}).into())
    }
}

fn snap_side() -> ServerSide {
    let mut tools = Registry::new();
    tools.add_tool(Arc::new(Snap)).unwrap();
    ServerSide::new(
        tools,
        Vec::new(),
        None,
        ToolSwitches::in_memory(),
        4,
        Arc::new(ApproveAll),
    )
}

fn hermes(name: &str, arguments: Value) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// The image data inside the tool result of an upstream request in `dialect`, if any.
fn image_in_result(dialect: &str, body: &Value) -> Option<String> {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let found = match dialect {
        "chat" => list(&body["messages"])
            .into_iter()
            .filter(|m| m["role"] == "tool")
            .flat_map(|m| list(&m["content"]))
            .find_map(|p| p["image_url"]["url"].as_str().map(str::to_owned)),
        "responses" => list(&body["input"])
            .into_iter()
            .filter(|i| i["type"] == "function_call_output")
            .flat_map(|i| list(&i["output"]))
            .find(|p| p["type"] == "input_image")
            .and_then(|p| p["image_url"].as_str().map(str::to_owned)),
        "anthropic" => list(&body["messages"])
            .into_iter()
            .flat_map(|m| list(&m["content"]))
            .filter(|b| b["type"] == "tool_result")
            .flat_map(|b| list(&b["content"]))
            .find(|b| b["type"] == "image")
            .and_then(|b| b["source"]["data"].as_str().map(str::to_owned)),
        "gemini" => list(&body["contents"])
            .into_iter()
            .flat_map(|c| list(&c["parts"]))
            .flat_map(|p| list(&p["functionResponse"]["parts"]))
            .find_map(|p| p["inlineData"]["data"].as_str().map(str::to_owned)),
        other => panic!("{other}"),
    };
    found.map(|s| s.trim_start_matches("data:image/png;base64,").to_owned())
}

/// Whether a user message of a Chat request holds the image.
fn image_in_user_message(body: &Value) -> bool {
    body["messages"].as_array().unwrap().iter().any(|m| {
        m["role"] == "user"
            && m["content"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["image_url"]["url"] == data_uri()))
    })
}

// Before: the server-side path moved every result's images into a user message after the
// results, whatever the upstream's dialect; the three dialects with a place for them in
// the result got none there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_tools_screenshot_reaches_each_upstream_inside_its_tool_result() {
    for dialect in DIALECTS {
        let call = hermes("snap", json!({}));
        let (url, u) = gateway(&[&call, "I see the screen."], Some(snap_side()), |_| {}).await;
        let r = reqwest::Client::new()
            .post(format!("{url}/v1/chat/completions"))
            .json(&json!({"model": format!("up-{dialect}"),
                "messages": [{"role": "user", "content": "What is on the screen?"}]}))
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{dialect}: {body}");
        assert_eq!(
            body["choices"][0]["message"]["content"], "I see the screen.",
            "{dialect}: {body}"
        );
        let seen = u.seen();
        assert_eq!(seen.len(), 2, "{dialect}: {seen:?}");
        let (spoken, second) = &seen[1];
        assert_eq!(spoken, dialect);
        let text = second.to_string();
        // The result's JSON no longer holds the bytes, only a note where they went.
        assert_eq!(text.matches(PNG).count(), 1, "{dialect}: {text}");
        if dialect == "chat" {
            assert_eq!(image_in_result(dialect, second), None, "{text}");
            assert!(image_in_user_message(second), "{text}");
            assert!(text.contains("attached in the next message"), "{text}");
        } else {
            assert_eq!(
                image_in_result(dialect, second).as_deref(),
                Some(PNG),
                "{dialect}: {text}"
            );
            assert!(text.contains("attached to this result"), "{text}");
        }
    }
}

// An emulated route reads results from a user message: the screenshot goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emulated_route_gets_the_screenshot_with_the_results_message() {
    let (url, u) = gateway(&[], None, |c| c.emulate_tools = true).await;
    // The client's own history holds the call and its screenshot result.
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(
            &json!({"model": "up-anthropic", "tools": [{"type": "function",
            "function": {"name": "look", "parameters": {"type": "object"}}}],
            "messages": [{"role": "user", "content": "look"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": [
                    {"type": "text", "text": "the screen"},
                    {"type": "image_url", "image_url": {"url": data_uri()}}]}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let seen = u.seen();
    let (_, body) = &seen[0];
    let results = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    let blocks = results["content"].as_array().unwrap();
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("<tool_response"),
        "{body}"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["source"]["data"] == PNG),
        "{body}"
    );
}

/// A request in `front`'s dialect whose history holds a call of `snap` and its result: some
/// text and a screenshot. The path to post it to.
fn with_image_result(front: &str, model: &str) -> (String, Value) {
    match front {
        "chat" => (
            "/v1/chat/completions".into(),
            json!({"model": model, "messages": [{"role": "user", "content": "look"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "snap", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": [
                    {"type": "text", "text": "the screen"},
                    {"type": "image_url", "image_url": {"url": data_uri()}}]}]}),
        ),
        "responses" => (
            "/v1/responses".into(),
            json!({"model": model, "input": [{"role": "user", "content": "look"},
                {"type": "function_call", "call_id": "c1", "name": "snap", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": [
                    {"type": "input_text", "text": "the screen"},
                    {"type": "input_image", "image_url": data_uri()}]}]}),
        ),
        "anthropic" => (
            "/v1/messages".into(),
            json!({"model": model, "max_tokens": 100, "messages": [
                {"role": "user", "content": "look"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "snap", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "the screen"},
                        {"type": "image", "source": {"type": "base64",
                            "media_type": "image/png", "data": PNG}}]}]}]}),
        ),
        "gemini" => (
            format!("/v1beta/models/{model}:generateContent"),
            json!({"contents": [{"role": "user", "parts": [{"text": "look"}]},
                {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "snap",
                    "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "snap",
                    "response": {"output": "the screen"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}]}}]}]}),
        ),
        other => panic!("{other}"),
    }
}

// With server-side tools the client's result reaches the agent's conversation with its
// image (before, only its text) and goes on as that upstream's tool results carry images;
// Chat Completions gets it after the results, as the server's own results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_image_result_reaches_every_upstream_dialect_from_every_front_end() {
    let http = reqwest::Client::new();
    for server_side in [false, true] {
        let (url, u) = gateway(&[], server_side.then(snap_side), |_| {}).await;
        for front in DIALECTS {
            for upstream in DIALECTS {
                let (path, body) = with_image_result(front, &format!("up-{upstream}"));
                let r = http
                    .post(format!("{url}{path}"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let about = format!("{front} → {upstream}, server-side tools {server_side}");
                assert_eq!(r.status(), 200, "{about}: {:?}", r.text().await);
                let seen = u.seen();
                let (spoken, sent) = seen.last().unwrap();
                assert_eq!(spoken, upstream, "{about}");
                if server_side && upstream == "chat" {
                    assert!(image_in_user_message(sent), "{about}: {sent}");
                } else {
                    assert_eq!(
                        image_in_result(upstream, sent).as_deref(),
                        Some(PNG),
                        "{about}: {sent}"
                    );
                }
            }
        }
        assert_eq!(u.seen().len(), 16);
    }
}

/// A Responses request of the server-side turn with the client's custom tool (a regex
/// grammar) and a namespace's function.
fn custom_and_namespace(model: &str) -> Value {
    json!({"model": model, "input": "List the files, then spawn a helper",
        "tools": [
            {"type": "custom", "name": "shell", "description": "Runs a command",
             "format": {"type": "grammar", "syntax": "regex", "definition": "ls( -la)?"}},
            {"type": "namespace", "name": "agents", "description": "Helpers", "tools": [
                {"type": "function", "name": "spawn", "description": "Spawns one",
                 "parameters": {"type": "object", "properties": {"task": {"type": "string"}},
                    "required": ["task"]}}]}]})
}

// Before: the server-side turn refused a custom or namespace client tool with a 400 ("tool
// type … cannot be called through toolcall").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_turns_offer_custom_and_namespace_tools_and_answer_in_their_shape() {
    let bad = hermes("shell", json!({"input": "rm -rf /"}));
    let good = hermes("shell", json!({"input": "ls -la"}));
    let spawn = hermes("agents__spawn", json!({"task": "tidy"}));
    let (url, u) = gateway(&[&bad, &good, &spawn], Some(snap_side()), |c| {
        c.invalid_calls = InvalidCallPolicy::Retry;
    })
    .await;
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{url}/v1/responses"))
        .json(&custom_and_namespace("up-chat"))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    let output = body["output"].as_array().unwrap();
    let call = output
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(call["name"], "shell");
    assert_eq!(call["input"], "ls -la", "{body}");
    // Offered as a turn offers them: the server's tool, the custom tool as a function of
    // one string, the namespace's tool under its qualified name.
    let seen = u.seen();
    assert_eq!(
        seen.len(),
        2,
        "the grammar's violation was retried: {seen:?}"
    );
    let offered: Vec<&str> = seen[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["snap", "shell", "agents__spawn"]);
    assert!(
        seen[1].1["messages"].to_string().contains("grammar"),
        "{}",
        seen[1].1
    );

    // The namespace's call comes back under its own name with its namespace.
    let r = http
        .post(format!("{url}/v1/responses"))
        .json(&custom_and_namespace("up-chat"))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    let call = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("{body}"))
        .clone();
    assert_eq!(call["name"], "spawn", "{body}");
    assert_eq!(call["namespace"], "agents", "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"task": "tidy"})
    );
}

// Before: a 400 for the app's `bash_20250124` tool behind an Anthropic upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_built_in_client_tool_goes_upstream_as_declared_and_comes_back_as_tool_use() {
    let bash = hermes("bash", json!({"command": "ls"}));
    let (url, u) = gateway(&[&bash, &bash], Some(snap_side()), |_| {}).await;
    for stream in [false, true] {
        let r = reqwest::Client::new()
            .post(format!("{url}/v1/messages"))
            .json(
                &json!({"model": "up-anthropic", "max_tokens": 100, "stream": stream,
                "tools": [{"type": "bash_20250124", "name": "bash"}],
                "messages": [{"role": "user", "content": "List the files"}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "stream {stream}");
        let text = r.text().await.unwrap();
        if stream {
            assert!(text.contains("\"type\":\"tool_use\""), "{text}");
            assert!(text.contains("\"name\":\"bash\""), "{text}");
            assert!(text.contains("\"stop_reason\":\"tool_use\""), "{text}");
        } else {
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["stop_reason"], "tool_use", "{body}");
            let block = body["content"].as_array().unwrap().last().unwrap().clone();
            assert_eq!(block["type"], "tool_use", "{body}");
            assert_eq!(block["name"], "bash");
            assert_eq!(block["input"], json!({"command": "ls"}));
        }
    }
    // The Anthropic upstream got the built-in as declared, next to the server's tool.
    let seen = u.seen();
    let tools = &seen[0].1["tools"];
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == &json!({"type": "bash_20250124", "name": "bash"})),
        "{tools}"
    );
    assert!(tools.to_string().contains("\"snap\""), "{tools}");
}

/// A server-side tool named as OpenAI's and Anthropic's hosted search.
struct Search;

#[async_trait::async_trait]
impl Tool for Search {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_search",
            "Searches the team's own index",
            json!({"type": "object", "properties": {"query": {"type": "string"}},
                "required": ["query"]}),
        )
    }

    async fn call(&self, _: &ToolContext, input: Value) -> Result<ToolOutput, ToolError> {
        Ok(
            json!({"results": format!("own index: {}", input["query"].as_str().unwrap_or(""))})
                .into(),
        )
    }
}

// The client's hosted web_search (Responses' and Anthropic's declarations) is neither
// dropped nor refused when the gateway's own tools hold one of that name: the model is
// offered the server's declaration and its call runs here, under `hosted_tools = "reject"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_tool_a_server_side_tool_provides_runs_in_the_gateway() {
    let mut tools = Registry::new();
    tools.add_tool(Arc::new(Search)).unwrap();
    let side = ServerSide::new(
        tools,
        Vec::new(),
        None,
        ToolSwitches::in_memory(),
        4,
        Arc::new(ApproveAll),
    );
    let search = hermes("web_search", json!({"query": "toolcall"}));
    let (url, u) = gateway(
        &[&search, "Found it.", &search, "Found it."],
        Some(side),
        |c| {
            c.hosted_tools = HostedTools::Reject;
        },
    )
    .await;
    let http = reqwest::Client::new();
    for (path, body) in [
        (
            "/v1/responses",
            json!({"model": "up-chat", "input": "search for toolcall",
                "tools": [{"type": "web_search"}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "up-chat", "max_tokens": 100,
                "messages": [{"role": "user", "content": "search for toolcall"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]}),
        ),
    ] {
        let r = http
            .post(format!("{url}{path}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let dropped = r.headers().get("x-toolcall-dropped-tools").cloned();
        let text = r.text().await.unwrap();
        assert_eq!(status, 200, "{path}: {text}");
        assert!(dropped.is_none(), "{path}: {dropped:?}");
        assert!(text.contains("Found it."), "{path}: {text}");
    }
    let seen = u.seen();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (i, (_, body)) in seen.iter().enumerate() {
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{body}");
        assert_eq!(tools[0]["function"]["name"], "web_search");
        assert_eq!(
            tools[0]["function"]["description"],
            "Searches the team's own index"
        );
        if i % 2 == 1 {
            assert!(
                body["messages"].to_string().contains("own index: toolcall"),
                "the server's tool did not run: {body}"
            );
        }
    }
}
