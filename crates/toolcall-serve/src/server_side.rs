//! Server-side tools and the inspector (`toolcall serve --pack NAME --tools FILE`).
//!
//! With server-side tools, a Chat Completions request is answered by an agent turn
//! ([`toolcall_run::server::ServerTools`]): the model is offered the server's tools (as the
//! inspector's switches leave them) next to the client's; calls to server tools run here and
//! their results go back to the model under the same `call_id`, up to `max_rounds`; calls
//! to the client's tools come back to the client as `tool_calls`. Each conversation is an
//! archived session: the response carries its id in `x-toolcall-session`, and a request
//! with that header continues it.
//!
//! A streamed request (`"stream": true`) gets the final reply as Chat Completions chunks.
//! Progress extension, off by default so plain OpenAI clients see nothing new: with the
//! header `x-toolcall-progress: 1`, the stream first carries one SSE event named
//! `toolcall.progress` per step of the turn, its data an agent event with secrets redacted
//! (`{"event":"call_completed","call_id":..,"name":..,"result":..,"duration_ms":..}`, see
//! `toolcall_run::events`).
//!
//! The inspector (`/inspector`) shows these turns live, the archived sessions and the
//! tools with their switches. It is open on a loopback listener, and needs a client API key
//! otherwise (none configured: not served).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolcall_core::Registry;
use toolcall_inspector::{Hub, Inspector, ToolSwitches};
use toolcall_run::server::{ServerTools, ServerTurnError, SessionPack};
use toolcall_run::{AgentError, AgentEvent, Archive, ChatCompletionsClient};

use crate::{ApiError, AppState, auth};

/// The session header: sent back with every answer, read to continue a conversation.
pub const SESSION_HEADER: &str = "x-toolcall-session";
/// Opts a streamed request into progress events.
pub const PROGRESS_HEADER: &str = "x-toolcall-progress";
/// The SSE event name of a progress event.
pub const PROGRESS_EVENT: &str = "toolcall.progress";
/// Session ids accepted in the header.
const MAX_SESSION_ID: usize = 128;

/// The server's own tools, their switches, the live hub and the archive.
pub struct ServerSide {
    pub tools: Arc<Registry>,
    pub switches: Arc<ToolSwitches>,
    pub hub: Arc<Hub>,
    pub runner: ServerTools,
    pub archive: Option<Arc<Archive>>,
}

impl ServerSide {
    /// `tools` run here; the tools of `packs` run on each session's own instance of the
    /// pack, its state archived with the session.
    pub fn new(
        tools: Registry,
        packs: Vec<SessionPack>,
        archive: Option<Arc<Archive>>,
        switches: ToolSwitches,
        max_rounds: usize,
        approver: Arc<dyn toolcall_run::Approver>,
    ) -> Self {
        let hub = Hub::new();
        let runner = ServerTools {
            max_rounds,
            archive: archive.clone(),
            observers: vec![hub.observer()],
            packs,
            approver,
        };
        ServerSide {
            tools: Arc::new(tools),
            switches: Arc::new(switches),
            hub,
            runner,
            archive,
        }
    }

    pub fn inspector(&self) -> Inspector {
        Inspector::new(
            self.hub.clone(),
            self.switches.clone(),
            self.tools.clone(),
            self.archive.clone(),
        )
    }
}

/// An inspector with nothing to show but the page itself: the gateway without tools.
pub fn empty_inspector() -> Inspector {
    Inspector::new(
        Hub::new(),
        Arc::new(ToolSwitches::in_memory()),
        Arc::new(Registry::new()),
        None,
    )
}

/// Whether `listen` is a loopback address (`127.0.0.0/8`, `[::1]`, `localhost`): decided on
/// the parsed address, so a host name that merely starts with `127.` is not one.
pub fn is_loopback(listen: &str) -> bool {
    if let Ok(addr) = listen.parse::<std::net::SocketAddr>() {
        return addr.ip().is_loopback();
    }
    if let Ok(ip) = listen.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    let host = listen
        .rsplit_once(':')
        .map_or(listen, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The inspector's guard: open on loopback, else the client API key.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let keys = &state.upstreams.client_keys;
    let open = is_loopback(&state.config.listen) && keys.is_empty();
    if open || (!keys.is_empty() && auth::authorized(request.headers(), keys)) {
        return next.run(request).await;
    }
    if keys.is_empty() {
        return (
            StatusCode::FORBIDDEN,
            "the inspector is served on loopback, or with client API keys configured",
        )
            .into_response();
    }
    ApiError::unauthorized().into_response()
}

fn turn_error(e: ServerTurnError) -> ApiError {
    match e {
        ServerTurnError::Agent(AgentError::Client(c)) => ApiError::upstream(&c),
        ServerTurnError::Agent(other) => {
            ApiError::upstream_reply(&format!("the turn failed: {other}"))
        }
        ServerTurnError::UnknownSession(id) => ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: Some("session_not_found"),
            message: format!(
                "{SESSION_HEADER} {id:?} names no session here: leave the header out to start one"
            ),
        },
        e @ ServerTurnError::Pack { .. } => ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: Some("pack_failed"),
            message: e.to_string(),
        },
        other => ApiError::bad_request(other.to_string()),
    }
}

fn session_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let v = v
        .to_str()
        .ok()
        .filter(|s| s.len() <= MAX_SESSION_ID)
        .ok_or_else(|| ApiError::bad_request(format!("{SESSION_HEADER} is not a session id")))?;
    Ok(Some(v.to_owned()))
}

fn with_session(mut response: Response, session: Option<&str>) -> Response {
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

/// `POST /v1/chat/completions` with server-side tools.
pub async fn chat(
    state: &AppState,
    side: &ServerSide,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let request: Value = crate::chat::parse_request(body)?;
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("`model` is required"))?
        .to_owned();
    let route = state.upstreams.route(&model);
    let client = ChatCompletionsClient::new(&route.base_url, model)
        .and_then(|c| {
            c.with_api_key(route.api_key.clone())
                .with_transport(state.config.timeouts(), state.config.retry_policy())
        })
        .map_err(|e| ApiError::upstream(&e))?;
    let client = Arc::new(client);
    let session = session_of(headers)?;
    let tools = side.switches.apply(&side.tools);
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    if !streamed {
        let turn = side
            .runner
            .chat(&request, client, &tools, session.as_deref())
            .await
            .map_err(turn_error)?;
        let id = turn.session_id.clone();
        return Ok(with_session(
            Json(turn.completion).into_response(),
            id.as_deref(),
        ));
    }
    let progress = headers
        .get(PROGRESS_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches!(v, "1" | "true"));
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let mut runner = side.runner.clone();
    if progress {
        let progress_tx = tx.clone();
        runner.observers.push(Arc::new(move |e: &AgentEvent| {
            let data = serde_json::to_string(&e.redacted()).unwrap_or_default();
            let _ = progress_tx.send(Event::default().event(PROGRESS_EVENT).data(data));
        }));
    }
    // The stream's headers go out before the turn runs: a new conversation's session is
    // made now so the header can name it.
    let session = match (session, &side.archive) {
        (None, Some(archive)) => Some(
            archive
                .create_session("gateway turn")
                .map_err(|e| ApiError::upstream_reply(&e.to_string()))?,
        ),
        (Some(id), Some(archive))
            if !archive
                .has_session(&id)
                .map_err(|e| ApiError::upstream_reply(&e.to_string()))? =>
        {
            return Err(turn_error(ServerTurnError::UnknownSession(id)));
        }
        (s, _) => s,
    };
    let header = session.clone();
    // The turn runs on its own task and ends even if the client goes away, so the
    // archive and the pack state stay consistent.
    tokio::spawn(async move {
        let result = runner
            .chat(&request, client, &tools, session.as_deref())
            .await;
        for event in final_events(result) {
            let _ = tx.send(event);
        }
    });
    let events = tokio_stream_from(rx).map(Ok::<_, Infallible>);
    Ok(with_session(
        Sse::new(events).into_response(),
        header.as_deref(),
    ))
}

fn tokio_stream_from(
    rx: mpsc::UnboundedReceiver<Event>,
) -> impl futures::Stream<Item = Event> + Send {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
}

/// The turn's answer as Chat Completions chunks, or an error event (and no `[DONE]`).
fn final_events(result: Result<toolcall_run::server::ServerTurn, ServerTurnError>) -> Vec<Event> {
    let turn = match result {
        Ok(t) => t,
        Err(e) => {
            let e = turn_error(e);
            return vec![Event::default().data(e.body().to_string())];
        }
    };
    let c = &turn.completion;
    let base = |delta: Value, finish: Value| {
        json!({"id": c["id"], "object": "chat.completion.chunk", "created": c["created"],
               "model": c["model"],
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let message = &c["choices"][0]["message"];
    let mut out = Vec::new();
    let delta = match message.get("tool_calls").and_then(Value::as_array) {
        Some(calls) => json!({"role": "assistant", "tool_calls": calls.iter().enumerate()
            .map(|(i, call)| json!({"index": i, "id": call["id"], "type": "function",
                                    "function": call["function"]}))
            .collect::<Vec<_>>()}),
        None => json!({"role": "assistant", "content": message["content"]}),
    };
    out.push(Event::default().data(base(delta, Value::Null).to_string()));
    let finish = c["choices"][0]["finish_reason"].clone();
    out.push(Event::default().data(base(json!({}), finish).to_string()));
    out.push(Event::default().data("[DONE]"));
    out
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_is_decided_on_the_address() {
        for yes in [
            "127.0.0.1:8090",
            "127.1.2.3:1",
            "[::1]:8090",
            "localhost:8090",
            "LOCALHOST:1",
            "127.0.0.1",
            "::1",
        ] {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in [
            "0.0.0.0:8090",
            "[::]:8090",
            "10.0.0.1:80",
            "127.example.com:8090",
            "localhost.example.com:80",
            "",
        ] {
            assert!(!is_loopback(no), "{no}");
        }
    }
}
