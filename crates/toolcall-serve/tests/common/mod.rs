//! A stand-in model server on loopback that replays real model outputs as plain text (whole,
//! or streamed in 1–5 byte chunks), with fault modes chosen by model name, and the gateway
//! started in front of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post as route_post};
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_serve::{AppState, Config};

/// One recorded model output.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Fixture {
    pub about: String,
    pub model: String,
    pub text: String,
    pub content: String,
    pub reasoning: bool,
    pub calls: Vec<Value>,
}

pub fn fixtures() -> Vec<Fixture> {
    serde_json::from_str(include_str!("../fixtures/replies.json")).unwrap()
}

pub fn tools() -> Value {
    serde_json::from_str(include_str!("../fixtures/tools.json")).unwrap()
}

/// What the stand-in received and answers.
#[derive(Clone, Default)]
pub struct StandIn {
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Model name → reply text; unknown models get their name back as text.
    pub replies: Arc<Mutex<Vec<(String, String)>>>,
    /// Slow streams (model `slow-stream`) still being sent.
    pub open_streams: Arc<AtomicUsize>,
    /// Streams of model `gated-call` stop after the call's name until this is notified.
    pub gate: Arc<tokio::sync::Notify>,
    /// Stream replies one byte (one char) per chunk instead of 1–5 bytes.
    pub one_byte: Arc<std::sync::atomic::AtomicBool>,
    /// TCP connections accepted so far.
    pub connections: Arc<AtomicUsize>,
}

/// Counts a stand-in stream while it is being sent.
struct Sending(Arc<AtomicUsize>);

impl Drop for Sending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl StandIn {
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    fn text_for(&self, model: &str, attempt: usize) -> String {
        let replies = self.replies.lock().unwrap();
        let mut matching = replies.iter().filter(|(m, _)| m == model);
        // A model listed twice answers its entries in turn (a retry sees the second).
        let all: Vec<&String> = matching.by_ref().map(|(_, t)| t).collect();
        match all.len() {
            0 => format!("echo: {model}"),
            n => all[attempt.min(n - 1)].clone(),
        }
    }

    pub fn reply(&self, model: &str, text: &str) {
        self.replies
            .lock()
            .unwrap()
            .push((model.to_owned(), text.to_owned()));
    }
}

/// The emulated-tools call trigger (`<call_…/>`) a request's messages teach, if any.
pub fn trigger_in(request: &Value) -> Option<String> {
    request["messages"].as_array()?.iter().find_map(|m| {
        let text = m["content"].as_str()?;
        let start = text.find("<call_")?;
        let len = text[start..].find("/>")? + 2;
        Some(text[start..start + len].to_owned())
    })
}

/// The reasoning and answer of the `native-reasoning` model.
pub const NATIVE_REASONING: &str = "The user greets me; a short answer will do.";
pub const NATIVE_ANSWER: &str = "Hello! How can I help?";

/// Splits `s` into pieces of 1–5 bytes (on char boundaries), deterministically.
pub fn small_pieces(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut k = 0usize;
    while !rest.is_empty() {
        let mut n = 1 + (k * 7 + 3) % 5;
        k += 1;
        while n < rest.len() && !rest.is_char_boundary(n) {
            n += 1;
        }
        let n = n.min(rest.len());
        out.push(rest[..n].to_owned());
        rest = &rest[n..];
    }
    out
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1,
        "model": "standin", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn sse(body: String) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

async fn completions(State(s): State<StandIn>, Json(body): Json<Value>) -> Response {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let attempt = {
        let mut r = s.requests.lock().unwrap();
        r.push(body.clone());
        r.iter().filter(|b| b["model"] == model.as_str()).count() - 1
    };
    let stream = body["stream"] == json!(true);
    match model.as_str() {
        "fault-500" => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"error\":{\"message\":\"boom\"}}",
            )
                .into_response();
        }
        "fault-429" if attempt == 0 => {
            return Response::builder()
                .status(429)
                .header("retry-after", "1")
                .body(Body::from("{\"error\":{\"message\":\"slow down\"}}"))
                .unwrap();
        }
        // Rate-limited for longer than the gateway waits between retries: it gives up.
        "fault-429-wait" => {
            return Response::builder()
                .status(429)
                .header("retry-after", "120")
                .body(Body::from("{\"error\":{\"message\":\"slow down\"}}"))
                .unwrap();
        }
        "fault-json" => {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"choices\": [",
            )
                .into_response();
        }
        // Keeps the connection alive and never answers: SSE comments (a space in a JSON
        // body) every 100 ms, each restarting the idle read timeout.
        "fault-keepalive" => {
            let (content_type, beat) = if stream {
                ("text/event-stream", ": keep-alive\n\n")
            } else {
                ("application/json", " ")
            };
            let beats = futures::stream::unfold((), move |()| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((Ok::<_, std::convert::Infallible>(beat), ()))
            });
            return Response::builder()
                .header(header::CONTENT_TYPE, content_type)
                .body(Body::from_stream(beats))
                .unwrap();
        }
        "fault-hang" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        "slow-stream" => {
            s.open_streams.fetch_add(1, Ordering::SeqCst);
            let guard = Sending(s.open_streams.clone());
            let first = chunk(json!({"role": "assistant", "content": "tick "}), None);
            let body = futures::stream::unfold((guard, 0u32), |(guard, n)| async move {
                if n > 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                let c = chunk(json!({"content": format!("{n} ")}), None);
                Some((Ok::<_, std::convert::Infallible>(c), (guard, n + 1)))
            });
            let all = futures::stream::once(async move { Ok(first) }).chain(body);
            return Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(all))
                .unwrap();
        }
        "gated-call" if stream => {
            // The call's name, then nothing until the test opens the gate.
            let mut first = chunk(json!({"role": "assistant", "content": "Checking. "}), None);
            first.push_str(&chunk(
                json!({"content": "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"}),
                None,
            ));
            let gate = s.gate.clone();
            let rest = async move {
                gate.notified().await;
                let mut rest = chunk(json!({"content": "is\"}}</tool_call>"}), None);
                rest.push_str(&chunk(json!({}), Some("stop")));
                rest.push_str("data: [DONE]\n\n");
                Ok::<_, std::convert::Infallible>(rest)
            };
            let all =
                futures::stream::once(async move { Ok(first) }).chain(futures::stream::once(rest));
            return Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(all))
                .unwrap();
        }
        // A server with its own reasoning parser: reasoning apart from the text, under both
        // names vLLM used while renaming the field (`reasoning_content`, `reasoning`).
        "native-reasoning" if stream => {
            let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
            for p in small_pieces(NATIVE_REASONING) {
                out.push_str(&chunk(
                    json!({"reasoning_content": p, "reasoning": p}),
                    None,
                ));
            }
            for p in small_pieces(NATIVE_ANSWER) {
                out.push_str(&chunk(json!({"content": p}), None));
            }
            out.push_str(&chunk(json!({}), Some("stop")));
            out.push_str("data: [DONE]\n\n");
            return sse(out);
        }
        "native-reasoning" => {
            return Json(
                json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1,
                "model": model, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": NATIVE_ANSWER,
                "reasoning_content": NATIVE_REASONING, "reasoning": NATIVE_REASONING}}]}),
            )
            .into_response();
        }
        // Ollama's native field name.
        "ollama-thinking" if stream => {
            let mut out = chunk(
                json!({"role": "assistant", "thinking": NATIVE_REASONING}),
                None,
            );
            out.push_str(&chunk(json!({"content": NATIVE_ANSWER}), None));
            out.push_str(&chunk(json!({}), Some("stop")));
            out.push_str("data: [DONE]\n\n");
            return sse(out);
        }
        // A server with its own tool parser: native calls, arguments in fragments.
        "native-calls" if stream => {
            let mut out = chunk(json!({"role": "assistant", "content": "Two cities."}), None);
            for (i, (id, city)) in [("up-1", "Paris"), ("up-2", "Berlin")].iter().enumerate() {
                out.push_str(&chunk(
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                        "function": {"name": "get_weather", "arguments": ""}}]}),
                    None,
                ));
                let args = format!("{{\"city\": \"{city}\"}}");
                for p in small_pieces(&args) {
                    out.push_str(&chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                        None,
                    ));
                }
            }
            out.push_str(&chunk(json!({}), Some("tool_calls")));
            out.push_str("data: [DONE]\n\n");
            return sse(out);
        }
        "native-calls" => {
            let call = |id: &str, city: &str| {
                json!({"id": id, "type": "function",
                "function": {"name": "get_weather", "arguments": format!("{{\"city\": \"{city}\"}}")}})
            };
            return Json(
                json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1,
                "model": model, "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Two cities.",
                "tool_calls": [call("up-1", "Paris"), call("up-2", "Berlin")]}}]}),
            )
            .into_response();
        }
        // A server with its own tool parser whose reply is cut inside the second call's
        // arguments (llama.cpp at `max_tokens`): the finish reason follows the model name.
        m if m.starts_with("native-cut-") => {
            let finish = m.trim_start_matches("native-cut-");
            let calls = [
                ("up-1", "{\"city\": \"Paris\"}"),
                ("up-2", "{\"city\": \"Ber"),
            ];
            if !stream {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|(id, args)| {
                        json!({"id": id, "type": "function",
                        "function": {"name": "get_weather", "arguments": args}})
                    })
                    .collect();
                return Json(
                    json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1,
                    "model": model, "choices": [{"index": 0, "finish_reason": finish, "message": {
                    "role": "assistant", "content": "Two cities.", "tool_calls": calls}}]}),
                )
                .into_response();
            }
            let mut out = chunk(json!({"role": "assistant", "content": "Two cities."}), None);
            for (i, (id, args)) in calls.iter().enumerate() {
                out.push_str(&chunk(
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                        "function": {"name": "get_weather", "arguments": ""}}]}),
                    None,
                ));
                for p in small_pieces(args) {
                    out.push_str(&chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                        None,
                    ));
                }
            }
            out.push_str(&chunk(json!({}), Some(finish)));
            out.push_str("data: [DONE]\n\n");
            return sse(out);
        }
        "fault-cut" if stream => {
            let mut body = chunk(json!({"role": "assistant", "content": "Deleting "}), None);
            for p in small_pieces("<tool_call>{\"name\": \"get_weather\", \"argu") {
                body.push_str(&chunk(json!({"content": p}), None));
            }
            return sse(body);
        }
        "fault-cut" => {
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"id\":\"x\",\"choices\":[{\"message\":{\"role\":\"assis",
            )
                .into_response();
        }
        _ => {}
    }
    // Like a model following an emulated-tools prompt: `{trigger}` in a reply is the
    // request's call trigger.
    let text = s
        .text_for(&model, attempt)
        .replace("{trigger}", &trigger_in(&body).unwrap_or_default());
    // A model named `…-cut` ran out of tokens.
    let finish = if model.ends_with("-cut") {
        "length"
    } else {
        "stop"
    };
    if stream {
        let mut out = chunk(json!({"role": "assistant", "content": ""}), None);
        let pieces = if s.one_byte.load(Ordering::SeqCst) {
            text.chars().map(String::from).collect()
        } else {
            small_pieces(&text)
        };
        for p in pieces {
            out.push_str(&chunk(json!({"content": p}), None));
        }
        // A model named `…-dropped` loses its connection after the text: no finish, no
        // `[DONE]` (its whole reply is a normal one).
        if !model.ends_with("-dropped") {
            out.push_str(&chunk(json!({}), Some(finish)));
            out.push_str("data: [DONE]\n\n");
        }
        return sse(out);
    }
    Json(json!({"id": "chatcmpl-standin", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}))
    .into_response()
}

async fn models() -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": "qwen3-8b", "object": "model", "created": 1, "owned_by": "standin"}]}),
    )
}

/// Starts the stand-in; its base URL.
pub async fn stand_in(s: StandIn) -> String {
    let app = Router::new()
        .route("/v1/chat/completions", route_post(completions))
        .route("/v1/models", get(models));
    let connections = s.connections.clone();
    let app = app.with_state(s);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = axum::serve::ListenerExt::tap_io(listener, move |_| {
        connections.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A stand-in with every fixture loaded, and the gateway in front of it (config adjusted by
/// `edit`); the gateway's base URL and the stand-in.
pub async fn gateway(edit: impl FnOnce(&mut Config)) -> (String, StandIn) {
    gateway_over(StandIn::default(), edit).await
}

/// [`gateway`] in front of the stand-in `s`.
pub async fn gateway_over(s: StandIn, edit: impl FnOnce(&mut Config)) -> (String, StandIn) {
    for f in fixtures() {
        s.reply(&f.model, &f.text);
    }
    let upstream = stand_in(s.clone()).await;
    let mut config = Config {
        upstream,
        read_timeout_secs: 2,
        ..Config::default()
    };
    edit(&mut config);
    let state = AppState::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    (format!("http://{addr}"), s)
}

pub async fn post(url: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub fn request(model: &str, stream: bool) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "weather?"}],
        "tools": tools(), "stream": stream, "temperature": 0.1})
}

/// The calls of a whole reply as (name, arguments) pairs, ids checked.
pub fn calls_of(message: &Value) -> Vec<Value> {
    message["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    assert!(c["id"].as_str().is_some_and(|id| !id.is_empty()), "{c}");
                    assert_eq!(c["type"], "function");
                    let args: Value =
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                    json!({"name": c["function"]["name"], "arguments": args})
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reads an SSE body into its data payloads.
pub async fn sse_data(r: reqwest::Response) -> Vec<String> {
    let text = r.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.trim().to_owned())
        .collect()
}

/// Reads an SSE body into its events' JSON payloads (`[DONE]` left out).
pub async fn sse_events(r: reqwest::Response) -> Vec<Value> {
    sse_data(r)
        .await
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Accumulates streamed chunks as a client would: (content, reasoning, calls, finish).
pub fn accumulate(data: &[String]) -> (String, String, Vec<Value>, Option<String>) {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = None;
    for d in data {
        if d == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(d).unwrap();
        assert!(v.get("error").is_none(), "{v}");
        let c = &v["choices"][0];
        if let Some(f) = c["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
        let delta = &c["delta"];
        content.push_str(delta["content"].as_str().unwrap_or_default());
        reasoning.push_str(delta["reasoning_content"].as_str().unwrap_or_default());
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().unwrap() as usize;
            if i == calls.len() {
                // A call starts with its id, type and name.
                assert!(
                    tc["id"].is_string() && tc["function"]["name"].is_string(),
                    "{tc}"
                );
                assert_eq!(tc["type"], "function");
                calls.push((
                    tc["id"].as_str().unwrap().into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            }
            calls[i]
                .2
                .push_str(tc["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    let calls = calls
        .into_iter()
        .map(|(_, name, args)| {
            json!({"name": name, "arguments": serde_json::from_str::<Value>(&args).unwrap()})
        })
        .collect();
    (content, reasoning, calls, finish)
}

/// The stand-in's replies for the SDK clients' `tool_choice` checks: `choice-any` answers
/// in prose first, `choice-tool` with a call of another tool first, then each with the call
/// asked for; `choice-none` writes a call first, then prose.
pub const CHOICE_REPLIES: &[(&str, &str)] = &[
    ("choice-any", "It is probably sunny in Paris."),
    ("choice-any", CHOICE_WEATHER),
    (
        "choice-tool",
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
    ),
    ("choice-tool", CHOICE_WEATHER),
    ("choice-none", CHOICE_WEATHER),
    ("choice-none", "It is sunny in Paris."),
];

const CHOICE_WEATHER: &str =
    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";

/// What reached the stand-in for the `tool_choice` checks: each `choice-*` model's requests
/// in order (whole: the first and the retry; streamed: one more), and the `tool_choice` the
/// first carried. `named` is what `choice-tool` asked for.
pub fn check_choices(standin: &StandIn) {
    let asked = |model: &str| -> Vec<Value> {
        standin
            .requests()
            .into_iter()
            .filter(|r| r["model"] == model)
            .collect()
    };
    let any = asked("choice-any");
    assert_eq!(any.len(), 3, "{any:?}");
    assert_eq!(any[0]["tool_choice"], "required", "{}", any[0]);
    let reason = any[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(reason.contains("required"), "{reason}");
    let tool = asked("choice-tool");
    assert_eq!(tool.len(), 3, "{tool:?}");
    assert_eq!(
        tool[0]["tool_choice"]["function"]["name"], "get_weather",
        "{}",
        tool[0]
    );
    let none = asked("choice-none");
    assert_eq!(none.len(), 2, "{none:?}");
    assert_eq!(none[0]["tool_choice"], "none", "{}", none[0]);
}

/// What a Python SDK client script saw and what reached the upstream.
pub struct SdkRun {
    pub stdout: String,
    pub standin: StandIn,
    /// The call ids the script printed after its ids label, in order.
    pub ids: Vec<String>,
}

/// Runs the SDK client `script` (in `tests/`) against a gateway (client key `sk-test`, no
/// retries) in front of a stand-in that answers every recorded reply, `replies_more.json`'s
/// included; checks that it exited well having checked every fixture, and reads the call ids
/// it printed after `ids_label`. `None`: no Python here (the test skips).
/// `replies`: more (model, reply text) pairs for the stand-in.
pub async fn run_sdk_client_with(
    script: &str,
    ids_label: &str,
    replies: &[(&str, &str)],
) -> Option<SdkRun> {
    let python = toolcall_testkit::require("python", toolcall_testkit::python())?;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let more: Vec<Fixture> =
        serde_json::from_str(include_str!("../fixtures/replies_more.json")).unwrap();
    let standin = StandIn::default();
    for (model, text) in replies {
        standin.reply(model, text);
    }
    for f in &more {
        standin.reply(&f.model, &f.text);
    }
    let (url, standin) = gateway_over(standin, |c| {
        c.retries = 0;
        c.api_keys = vec!["sk-test".into()];
    })
    .await;
    let out = tokio::process::Command::new(python)
        .arg(dir.join(script))
        .arg(&url)
        .arg(dir.join("fixtures/tools.json"))
        .arg(dir.join("fixtures/replies.json"))
        .arg(dir.join("fixtures/replies_more.json"))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let n = fixtures().len() + more.len();
    assert!(stdout.contains(&format!("ok {n} fixtures")), "{stdout}");
    let ids = stdout
        .lines()
        .find_map(|l| l.strip_prefix(ids_label))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    Some(SdkRun {
        stdout,
        standin,
        ids,
    })
}

/// The world pack's tools, and the pack as the gateway runs it: loaded anew for each
/// session (what `toolcall serve --pack world` does).
pub fn world_pack() -> (toolcall_core::Registry, toolcall_run::server::SessionPack) {
    use toolcall_packs::{PackConfig, load_pack};
    use toolcall_run::server::{PackInstance, SessionPack};
    let mut options = serde_json::Map::new();
    options.insert("world".into(), json!("examples/world/world.json"));
    let config = PackConfig {
        base_dir: toolcall_testkit::workspace_root(),
        options,
    };
    let registry = load_pack("world", &config).unwrap().registry;
    let make = move || -> Result<PackInstance, String> {
        let pack = load_pack("world", &config).map_err(|e| e.to_string())?;
        let state = pack.state.unwrap();
        let saved = state.clone();
        Ok(PackInstance {
            tools: pack.registry,
            snapshot: Arc::new(move || saved.snapshot()),
            restore: Box::new(move |s| state.restore(s).map_err(|e| e.to_string())),
        })
    };
    let pack = SessionPack {
        name: "world".into(),
        make: Arc::new(make),
    };
    (registry, pack)
}
