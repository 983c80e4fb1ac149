//! `POST /v1/chat/completions`, whole and streamed (SSE).
//!
//! Whole: the upstream is asked for a whole reply, which is parsed and checked; with the
//! `retry` policy, rejected calls make one more upstream request carrying the errors.
//! Streamed ([`crate::stream`]): text and reasoning deltas go out as they arrive; a call's
//! chunk with `index`, `id`, `type` and `function.name` goes out as soon as the model wrote
//! the name and the name passed its checks, then its checked arguments in one fragment once
//! the call is complete (see [`crate::turn::StreamTurn`] for why and for the invalid-call
//! policy in streams); `finish_reason` is `tool_calls` when there are calls, and `length`
//! stays `length` (a call cut inside its arguments is never delivered). A cut upstream
//! stream ends the client's stream with an `error` event and no `finish_reason`, so no
//! client takes it for a reply. A client that goes away drops the stream, which drops the
//! upstream request.

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use toolcall_core::CallId;
use toolcall_run::ClientError;
use toolcall_wire::chat::{
    ChatChunk, ChatCompletion, ChatDelta, ChatMessage, ChatRequest, ChatToolCall, Choice,
    FunctionDelta, ToolCallDelta,
};
use toolcall_wire::{Limits, encode_arguments};

use crate::config::InvalidCallPolicy;
use crate::metrics::Metrics;
use crate::stream::{End, TurnStream};
use crate::turn::{Checked, Out, Turn, log_call};
use crate::upstream::Route;
use crate::{ApiError, AppState, auth};

/// The response header listing repairs applied to calls.
pub const REPAIRS_HEADER: &str = "x-toolcall-repairs";

pub async fn handle(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    Metrics::add(&state.metrics.chat_requests, 1);
    let result = async {
        if !auth::authorized(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        if let Some(side) = &state.server_side {
            return crate::server_side::chat(&state, side, &headers, &body).await;
        }
        let request = parse_request::<ChatRequest>(&body)?;
        if request.stream == Some(true) {
            Metrics::add(&state.metrics.streamed_requests, 1);
            stream(&state, request).await
        } else {
            let (completion, checked) = whole(&state, request).await?;
            let mut response = Json(completion).into_response();
            add_repairs_header(&mut response, &checked);
            Ok(response)
        }
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.into_response()
    })
}

/// A request body as JSON of type `T`, with a clear error.
pub fn parse_request<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid: {e}")))
}

pub fn add_repairs_header(response: &mut Response, checked: &Checked) {
    if let Some(v) = checked.repairs_header()
        && let Ok(v) = HeaderValue::from_str(&v)
    {
        response.headers_mut().insert(REPAIRS_HEADER, v);
    }
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Sends `request` (a whole turn's, so not streamed) to the upstream and reads its whole
/// reply.
async fn ask(route: &Route, request: &ChatRequest) -> Result<ChatCompletion, ClientError> {
    let url = &route.chat_url;
    route
        .transport
        .retrying(|| async {
            let r = route
                .transport
                .post_json(url, route.api_key.as_deref(), request)
                .await?;
            let text = route.transport.read_bounded(r, url).await?;
            ChatCompletion::from_body(&text).map_err(|e| ClientError::from_wire(e, url))
        })
        .await
}

/// One whole turn: ask, check, retry once per policy, settle. Shared with `/v1/responses`.
pub async fn whole(
    state: &AppState,
    request: ChatRequest,
) -> Result<(ChatCompletion, Checked), ApiError> {
    let route = state.upstreams.route(&request.model);
    let turn = Turn::for_chat(request, route, &state.config, &state.tools)?;
    let upstream_error = |e: ClientError| {
        Metrics::add(&state.metrics.upstream_errors, 1);
        tracing::warn!(error = %crate::error::without_userinfo(&e.to_string()), "upstream failed");
        ApiError::upstream(&e)
    };
    let mut completion = ask(route, &turn.upstream_request)
        .await
        .map_err(upstream_error)?;
    let mut checked = check_completion(&turn, &completion)?;
    if checked.needs_retry() && turn.policy == InvalidCallPolicy::Retry {
        Metrics::add(&state.metrics.invalid_calls, checked.rejected.len() as u64);
        Metrics::add(&state.metrics.upstream_retries_for_validation, 1);
        let retry = turn.retry_request(&checked);
        completion = ask(route, &retry).await.map_err(upstream_error)?;
        checked = check_completion(&turn, &completion)?;
    }
    Metrics::add(&state.metrics.invalid_calls, checked.rejected.len() as u64);
    turn.settle(&mut checked);
    Metrics::add(&state.metrics.calls, checked.calls.len() as u64);
    Metrics::add(&state.metrics.repairs, checked.repair_count() as u64);
    checked.calls.iter().for_each(log_call);
    let out = client_completion(&turn, &checked, completion);
    Ok((out, checked))
}

/// The upstream's whole reply read (text, reasoning, native calls) and checked against the
/// turn's tools.
pub fn check_completion(turn: &Turn, completion: &ChatCompletion) -> Result<Checked, ApiError> {
    let reply = completion
        .to_reply(&Limits::default())
        .map_err(|e| ApiError::upstream_reply(&e.to_string()))?;
    Ok(turn.check_reply(reply))
}

/// The client's `chat.completion` for a settled turn: the checked calls as native
/// `tool_calls`, reasoning apart, the upstream's id, usage and unknown fields kept.
pub fn client_completion(
    turn: &Turn,
    checked: &Checked,
    mut completion: ChatCompletion,
) -> ChatCompletion {
    let message = ChatMessage {
        role: "assistant".into(),
        content: checked
            .text
            .clone()
            .filter(|t| !t.trim().is_empty() || checked.calls.is_empty())
            .map(serde_json::Value::String),
        reasoning_content: checked.reasoning.clone(),
        tool_calls: (!checked.calls.is_empty()).then(|| {
            checked
                .calls
                .iter()
                .map(|c| {
                    ChatToolCall::new(
                        c.call_id.as_str(),
                        c.name.clone(),
                        encode_arguments(&c.arguments),
                    )
                })
                .collect()
        }),
        ..ChatMessage::default()
    };
    ChatCompletion {
        id: if completion.id.is_empty() {
            format!("chatcmpl-{}", CallId::generate())
        } else {
            std::mem::take(&mut completion.id)
        },
        object: "chat.completion".into(),
        created: if completion.created == 0 {
            now()
        } else {
            completion.created
        },
        model: if completion.model.is_empty() {
            turn.upstream_request.model.clone()
        } else {
            std::mem::take(&mut completion.model)
        },
        choices: vec![Choice {
            index: 0,
            message,
            finish_reason: Some(checked.finish_reason()),
            extra: Default::default(),
        }],
        usage: completion.usage.take(),
        extra: std::mem::take(&mut completion.extra),
    }
}

/// Writes a streamed turn's outputs as `chat.completion.chunk` events.
pub struct ChunkWriter {
    id: String,
    created: u64,
    model: String,
    started: bool,
}

impl ChunkWriter {
    /// A writer for a stream of `model`, with a fresh id.
    pub fn new(model: String) -> Self {
        ChunkWriter {
            id: format!("chatcmpl-{}", CallId::generate()),
            created: now(),
            model,
            started: false,
        }
    }

    fn chunk(&self, delta: ChatDelta, finish: Option<String>) -> Event {
        let mut c = ChatChunk::new(&self.id, self.created, &self.model, delta);
        if let Some(choice) = c.choices.first_mut() {
            choice.finish_reason = finish;
        }
        data_event(&c)
    }

    /// The events for `outs`, then for `end` when the stream is over.
    pub fn events(&mut self, outs: Vec<Out>, end: Option<End>) -> Vec<Event> {
        let mut events = Vec::with_capacity(outs.len() + 2);
        self.emit(outs, &mut events);
        match end {
            None => {}
            Some(End::Finished(finish)) => {
                events.push(self.chunk(ChatDelta::default(), Some(finish)));
                events.push(Event::default().data("[DONE]"));
            }
            // An `error` event and no `finish_reason`: no client takes it for a reply.
            Some(End::Failed(message)) => {
                let e = ApiError::upstream_reply(&message);
                events.push(Event::default().data(e.body().to_string()));
            }
        }
        events
    }

    /// Chunks for `outs`.
    fn emit(&mut self, outs: Vec<Out>, events: &mut Vec<Event>) {
        for o in outs {
            let mut delta = ChatDelta::default();
            match o {
                Out::Text(t) if t.is_empty() => continue,
                Out::Text(t) => delta.content = Some(t),
                Out::Reasoning(r) if r.is_empty() => continue,
                Out::Reasoning(r) => delta.reasoning_content = Some(r),
                Out::CallStart { index, id, name } => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: index as u32,
                        id: Some(id.to_string()),
                        kind: Some("function".into()),
                        function: Some(FunctionDelta {
                            name: Some(name),
                            arguments: Some(String::new()),
                        }),
                    }]);
                }
                Out::CallEnd { index, arguments } => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: index as u32,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: Some(arguments),
                        }),
                        ..ToolCallDelta::default()
                    }]);
                }
            }
            if !self.started {
                delta.role = Some("assistant".into());
                self.started = true;
            }
            events.push(self.chunk(delta, None));
        }
    }
}

/// A streamed Chat Completions reply: the turn's outputs as chunks.
struct ChatStream {
    inner: TurnStream,
    writer: ChunkWriter,
}

impl ChatStream {
    /// The next batch of events; `None` once the stream is over.
    async fn step(&mut self) -> Option<Vec<Event>> {
        let (outs, end) = self.inner.next().await?;
        Some(self.writer.events(outs, end))
    }
}

fn data_event<T: serde::Serialize>(value: &T) -> Event {
    Event::default().data(serde_json::to_string(value).unwrap_or_default())
}

async fn stream(state: &AppState, request: ChatRequest) -> Result<Response, ApiError> {
    let route = state.upstreams.route(&request.model);
    let model = request.model.clone();
    let turn = Turn::for_chat(request, route, &state.config, &state.tools)?;
    let streaming = ChatStream {
        inner: TurnStream::open(state, route, turn).await?,
        writer: ChunkWriter::new(model),
    };
    let events = futures::stream::unfold(streaming, |mut s| async move {
        s.step().await.map(|batch| (batch, s))
    })
    .flat_map(|batch| futures::stream::iter(batch.into_iter().map(Ok::<_, Infallible>)));
    Ok(Sse::new(events).into_response())
}
