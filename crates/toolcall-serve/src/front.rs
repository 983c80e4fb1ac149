//! The one turn driver every front end shares: a front end decodes its dialect's request
//! into the neutral request ([`toolcall_wire::dialect::Decoded`]), calls [`run`], and gets its
//! reply back in its own dialect: [`run`] asks the route's upstream (in the upstream's
//! dialect, whole or streamed), checks the reply through the one [`Turn`], and encodes the
//! checked reply, or the stream of [`crate::turn::Out`]s, with the front end's dialect.
//!
//! The seam for server-side tools is [`run`]'s input and output: a neutral request in, a
//! checked turn out; nothing in between knows which dialect the client speaks.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Mutex;

use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Map, Value};
use toolcall_core::CallId;
use toolcall_run::ClientError;
use toolcall_wire::chat::ChatRequest;
use toolcall_wire::dialect::{Decoded, End, ReplyMeta, SseEvent, StreamEncoder};
use toolcall_wire::{Api, Limits, Reply, WireCall, WireError};

use crate::config::InvalidCallPolicy;
use crate::metrics::Metrics;
use crate::stream::TurnStream;
use crate::turn::{Checked, Turn, log_call};
use crate::upstream::Route;
use crate::{ApiError, AppState};

/// A fresh reply id in `front`'s style.
pub fn fresh_id(front: Api) -> String {
    let random = CallId::generate();
    let random = random.as_str().trim_start_matches("call_");
    match front.name() {
        "chat" => format!("chatcmpl-call_{random}"),
        "responses" => format!("resp_{random}"),
        "anthropic" => format!("msg_{random}"),
        "gemini" => format!("resp_{random}"),
        _ => random.to_owned(),
    }
}

/// Logs, once per process and field, a request field the front end's dialect knows but the
/// neutral request cannot carry.
pub fn log_ignored(front: Api, ignored: &[String]) {
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if ignored.is_empty() {
        return;
    }
    let Ok(mut seen) = SEEN.lock() else {
        return;
    };
    let seen = seen.get_or_insert_with(HashSet::new);
    for field in ignored.iter().take(32) {
        // Bounded: the set holds at most 256 names, whatever clients send.
        if seen.len() < 256 && seen.insert(format!("{front}.{field}")) {
            tracing::info!(api = %front, field = %field,
                "request field has no upstream equivalent: ignored (logged once)");
        }
    }
}

/// A decoded request's turn, answered in `front`'s dialect. `echo`: fields the reply
/// repeats from the request (Responses' `tools`, `parallel_tool_calls`).
pub async fn run(
    state: &AppState,
    headers: &HeaderMap,
    front: Api,
    decoded: Decoded,
    echo: Map<String, Value>,
) -> Result<Response, ApiError> {
    let Decoded {
        mut request,
        mut ignored,
    } = decoded;
    // What crosses to the upstream is decided here, once: a non-Chat front end's request
    // keeps only the neutral fields (a Chat client's is the neutral request already).
    if front != Api::CHAT {
        toolcall_wire::crossing::keep_neutral(&mut request, &mut ignored);
    }
    log_ignored(front, &ignored);
    let policy = state.upstreams.route(&request.model).hosted_tools;
    let dropped = crate::tool_kinds::take_hosted(&mut request, policy, |name| {
        state
            .server_side
            .as_ref()
            .is_some_and(|side| side.tools.contains(name))
    })?;
    let mut response = turn(state, headers, front, request, echo).await?;
    crate::tool_kinds::add_dropped_header(&mut response, &dropped);
    Ok(response)
}

/// The turn of a request whose tools and fields are settled.
async fn turn(
    state: &AppState,
    headers: &HeaderMap,
    front: Api,
    request: ChatRequest,
    echo: Map<String, Value>,
) -> Result<Response, ApiError> {
    if let Some(side) = &state.server_side {
        let mut request = request;
        crate::tool_kinds::take_served_computer(&mut request, &side.tools);
        // Built-in client tools become functions before the server-side turn reads the
        // client's tools, so their calls come back to the client as declared.
        let api = state.upstreams.route(&request.model).api;
        let openai = crate::tool_kinds::expand_built_ins(&mut request, api);
        // Boxed: its future is several kilobytes, which every request's future would
        // otherwise carry (and copy when axum boxes the handler's future).
        return Box::pin(crate::server_side::run(
            state, side, headers, front, request, echo, openai,
        ))
        .await;
    }
    if request.stream == Some(true) {
        Metrics::add(&state.metrics.streamed_requests, 1);
        return stream(state, front, request, echo).await;
    }
    let model = request.model.clone();
    let (mut checked, mut meta, upstream) = whole(state, request).await?;
    if upstream != front {
        // The upstream's own fields mean nothing in another dialect.
        meta.raw_usage = None;
        meta.extra = Map::new();
    }
    if meta.id.is_empty() || upstream != front {
        meta.id = fresh_id(front);
    }
    if meta.model.is_empty() {
        meta.model = model;
    }
    if meta.created == 0 {
        meta.created = crate::chat::now();
    }
    meta.extra.extend(echo);
    let repairs = checked.repairs_header();
    let constrain_note = checked.constrain_note.take();
    // Written as JSON text straight from the reply, as `Json` of its `Value` would be.
    let body = front
        .dialect()
        .encode_reply_bytes(&into_reply(checked), &meta);
    let mut response = (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    crate::chat::add_repairs_header(&mut response, repairs.as_deref());
    crate::chat::add_constrain_header(&mut response, constrain_note.as_deref());
    Ok(response)
}

/// A settled turn as a neutral reply, taking its parts ([`checked_reply`] copies them).
pub fn into_reply(checked: Checked) -> Reply {
    let finish_reason = Some(checked.finish_reason());
    Reply {
        text: checked.text,
        reasoning: checked.reasoning,
        calls: checked
            .calls
            .into_iter()
            .map(|c| WireCall {
                id: Some(c.call_id.to_string()),
                name: c.name,
                arguments: match c.arguments {
                    Value::Object(m) => Ok(m),
                    other => toolcall_wire::decode_arguments(Some(&other)),
                },
            })
            .collect(),
        finish_reason,
    }
}

/// A settled turn as a neutral reply.
pub fn checked_reply(checked: &Checked) -> Reply {
    Reply {
        text: checked.text.clone(),
        reasoning: checked.reasoning.clone(),
        calls: checked
            .calls
            .iter()
            .map(|c| WireCall {
                id: Some(c.call_id.to_string()),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    Value::Object(m) => Ok(m.clone()),
                    other => toolcall_wire::decode_arguments(Some(other)),
                },
            })
            .collect(),
        finish_reason: Some(checked.finish_reason()),
    }
}

/// Sends `request` (a whole turn's) to `route` in its dialect and reads the whole reply.
async fn ask(route: &Route, request: &ChatRequest) -> Result<(Reply, ReplyMeta), ClientError> {
    let url = route.turn_url(&request.model, false)?;
    let dialect = route.api.dialect();
    let body = dialect
        .encode_request_bytes(request)
        .map_err(|e| ClientError::from_wire(e, url.as_str()))?;
    let headers = route.auth_headers();
    route
        .transport
        .retrying(|| async {
            let r = route
                .transport
                .post_json_text_to(&url, &headers, &body)
                .await?;
            let text = route.transport.read_bounded(r, url.as_str()).await?;
            dialect
                .decode_reply(&text, &Limits::default())
                .map_err(|e| ClientError::from_wire(e, url.as_str()))
        })
        .await
}

/// One whole turn: ask, check, retry once per policy, settle. The checked turn, what the
/// upstream said about its reply, and the upstream's dialect.
pub async fn whole(
    state: &AppState,
    request: ChatRequest,
) -> Result<(Checked, ReplyMeta, Api), ApiError> {
    let route = state.upstreams.route(&request.model);
    let turn = Turn::for_chat(request, route, &state.config, &state.tools)?;
    let custom_tools = turn.custom.names();
    let namespaces = turn.namespaces.clone();
    let openai_built_ins = turn.openai_built_ins.clone();
    let upstream_error = |e: ClientError| {
        Metrics::add(&state.metrics.upstream_errors, 1);
        tracing::warn!(error = %crate::error::without_userinfo(&e.to_string()), "upstream failed");
        ApiError::upstream(&e)
    };
    let (reply, mut meta) = ask(route, &turn.upstream_request)
        .await
        .map_err(upstream_error)?;
    let mut checked = turn.check_reply(reply);
    if checked.needs_retry() && turn.policy == InvalidCallPolicy::Retry {
        Metrics::add(&state.metrics.invalid_calls, checked.rejected.len() as u64);
        Metrics::add(&state.metrics.upstream_retries_for_validation, 1);
        let retry = turn.retry_request(&checked);
        let (reply, again) = ask(route, &retry).await.map_err(upstream_error)?;
        meta = again;
        checked = turn.check_reply(reply);
    }
    Metrics::add(&state.metrics.invalid_calls, checked.rejected.len() as u64);
    turn.settle(&mut checked);
    Metrics::add(&state.metrics.calls, checked.calls.len() as u64);
    Metrics::add(&state.metrics.repairs, checked.repair_count() as u64);
    checked.calls.iter().for_each(log_call);
    meta.custom_tools = custom_tools;
    meta.namespaces = namespaces;
    meta.openai_built_ins = openai_built_ins;
    Ok((checked, meta, route.api))
}

/// A streamed reply: the turn's outputs in the front end's events.
struct FrontStream {
    inner: TurnStream,
    writer: Box<dyn StreamEncoder>,
}

impl FrontStream {
    /// The next batch of events; `None` once the stream is over.
    async fn step(&mut self) -> Option<Vec<SseEvent>> {
        let (outs, end) = self.inner.next().await?;
        let mut events = Vec::with_capacity(outs.len() + 2);
        self.writer.push(outs, &mut events);
        match end {
            None => {}
            Some(End::Failed(message)) => {
                let e = ApiError::upstream_reply(&message);
                self.writer.end(End::Failed(e.message), &mut events);
            }
            Some(end) => self.writer.end(end, &mut events),
        }
        Some(events)
    }
}

/// An event for axum's SSE writer.
pub fn sse_event(e: SseEvent) -> Event {
    let event = Event::default().data(e.data);
    match e.event {
        Some(name) => event.event(name),
        None => event,
    }
}

async fn stream(
    state: &AppState,
    front: Api,
    request: ChatRequest,
    echo: Map<String, Value>,
) -> Result<Response, ApiError> {
    let route = state.upstreams.route(&request.model);
    let model = request.model.clone();
    let turn = Turn::for_chat(request, route, &state.config, &state.tools)?;
    let meta = ReplyMeta {
        id: fresh_id(front),
        model,
        created: crate::chat::now(),
        extra: echo,
        custom_tools: turn.custom.names(),
        namespaces: turn.namespaces.clone(),
        openai_built_ins: turn.openai_built_ins.clone(),
        ..ReplyMeta::default()
    };
    let constrain_note = turn.constrain_note.clone();
    let streaming = FrontStream {
        inner: TurnStream::open(state, route, turn).await?,
        writer: front.dialect().stream_encoder(meta),
    };
    // Boxed: `unfold` moves its state into each step's future and back out, and the
    // stream's state is kilobytes (a copy of it per upstream event was 1 k instructions).
    let events = futures::stream::unfold(Box::new(streaming), |mut s| async move {
        s.step().await.map(|batch| (batch, s))
    })
    .flat_map(|batch| {
        futures::stream::iter(batch.into_iter().map(|e| Ok::<_, Infallible>(sse_event(e))))
    });
    let mut response = Sse::new(events).into_response();
    crate::chat::add_constrain_header(&mut response, constrain_note.as_deref());
    Ok(response)
}

/// A request body in `front`'s dialect, with a clear error.
pub fn decode(front: Api, body: &[u8]) -> Result<Decoded, ApiError> {
    front.dialect().decode_request(body).map_err(not_valid)
}

/// A Chat request body, as [`decode`] reads it, its `tools` taken from those of an earlier
/// request with the same text when kept ([`crate::tools_cache::DecodedTools`]).
pub fn decode_chat(state: &AppState, body: &[u8]) -> Result<Decoded, ApiError> {
    toolcall_wire::chat::decode_request_keeping_tools(body, &state.tools.decoded).map_err(not_valid)
}

fn not_valid(e: WireError) -> ApiError {
    match e {
        WireError::NotJson { message, .. } => {
            ApiError::bad_request(format!("the request body is not valid: {message}"))
        }
        other => ApiError::bad_request(format!("the request body is not valid: {other}")),
    }
}
