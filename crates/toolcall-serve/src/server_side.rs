//! Server-side tools and the inspector (`toolcall serve --pack NAME --tools FILE`).
//!
//! With server-side tools, a request is answered by an agent turn
//! ([`toolcall_run::server::ServerTools`]): the model is offered the server's tools (as the
//! inspector's switches leave them) next to the client's; calls to server tools run here and
//! their results go back to the model under the same `call_id`, up to `max_rounds`; calls
//! to the client's tools come back to the client as `tool_calls`. Each conversation is an
//! archived session: the response carries its id in `x-toolcall-session`, a request with
//! that header continues it, and an id the archive does not know is a `404`. Each session
//! runs the stateful packs on its own instance (see `toolcall_run::server`).
//!
//! This is a layer under every front end: a front end decodes its request to Chat
//! Completions and hands it to a [`ServerTurnJob`], whose [`ServerAnswer`] it writes in its
//! own shape (every front end: Chat Completions, Responses, Messages, Gemini). The client's
//! tools of every kind are offered as a turn without server-side tools offers them
//! (`ClientView`), and its calls written back as declared. Each model request of the turn is one
//! gateway turn on the client's route (`GatewayModel`), so server-side tools get the
//! route's format, emulation, invalid-call policy, `tool_choice`, tools cache and pooled
//! upstream client exactly as a request without them does.
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
//! otherwise (none configured: not served). The switches are read again from their store
//! at the start of every turn; with a shared (PostgreSQL) archive they live in it, so a flip
//! on any replica applies to every turn that starts after it, and the inspector also shows
//! the other replicas' calls ([`toolcall_inspector::follow`]). A store that cannot be read
//! is a `503` `archive_unavailable`, never an upstream error.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use toolcall_core::Registry;
use toolcall_inspector::{Hub, Inspector, ToolSwitches};
use toolcall_run::client::{ModelReply, ModelRequest, NameMap};
use toolcall_run::client::{chat_tools, to_messages_for};
use toolcall_run::server::{ServerTools, ServerTurnError, SessionPack};
use toolcall_run::{AgentError, AgentEvent, Archive, ClientError, Mode, ModelClient};
use toolcall_wire::Api;
use toolcall_wire::chat::{ChatRequest, ChatTool};
use toolcall_wire::dialect::{End, Out, ReplyMeta};

use crate::metrics::Metrics;
use crate::turn::Checked;

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
    /// One turn at a time per session in this process (see [`SessionLocks`]).
    sessions: Arc<SessionLocks>,
}

/// A lock per session id: two requests continuing one session at once would each start
/// from the same archived conversation and pack state, and the later save would drop the
/// other's changes; so the second waits for the first. Entries live while a turn holds or
/// waits for them (the map keeps weak references, pruned as it grows).
#[derive(Default)]
pub struct SessionLocks {
    locks: Mutex<std::collections::HashMap<String, std::sync::Weak<tokio::sync::Mutex<()>>>>,
}

/// Entries kept before dead ones are pruned.
const SESSION_LOCKS_PRUNE_AT: usize = 1024;

impl SessionLocks {
    /// Waits for `session`'s turn; the guard holds it.
    pub async fn lock(&self, session: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
            match locks.get(session).and_then(std::sync::Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if locks.len() >= SESSION_LOCKS_PRUNE_AT {
                        locks.retain(|_, l| l.strong_count() > 0);
                    }
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(session.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
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
        // With a shared archive the inspector shows the other replicas' calls too.
        if let Some(archive) = archive.as_ref().filter(|a| a.is_shared())
            && tokio::runtime::Handle::try_current().is_ok()
        {
            toolcall_inspector::follow::follow(
                &hub,
                archive.clone(),
                toolcall_run::archive::replica_owner(),
            );
        }
        let runner = ServerTools {
            max_rounds,
            // The gateway's own turn reads the calls (see `GatewayModel`).
            mode: Mode::Native,
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
            sessions: Arc::default(),
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

/// The guard of the operator's pages (the inspector, `/metrics`): open on loopback, else
/// the client API key.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let keys = &state.upstreams.client_keys;
    let open = is_loopback(&state.config.listen) && keys.is_empty();
    if open || (!keys.is_empty() && auth::authorized(request.headers(), keys)) {
        return next.run(request).await;
    }
    if keys.is_empty() {
        return (
            StatusCode::FORBIDDEN,
            "the inspector and /metrics are served on loopback, or with client API keys configured",
        )
            .into_response();
    }
    ApiError::unauthorized().into_response()
}

fn turn_error(e: ServerTurnError) -> ApiError {
    match e {
        ServerTurnError::Agent(AgentError::Client(c)) => ApiError::upstream(&c),
        ServerTurnError::Agent(AgentError::Archive(a)) => ApiError::archive(&a.to_string()),
        ServerTurnError::UnknownSession(id) => ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: Some("session_not_found"),
            message: format!(
                "{SESSION_HEADER} {id:?} names no session here: leave the header out to start one"
            ),
            retry_after: None,
        },
        e @ ServerTurnError::SessionBusy(_) => ApiError {
            status: StatusCode::CONFLICT,
            kind: "invalid_request_error",
            code: Some("session_busy"),
            message: e.to_string(),
            retry_after: None,
        },
        e @ ServerTurnError::Pack { .. } => ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: Some("pack_failed"),
            message: e.to_string(),
            retry_after: None,
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

/// The model of a server-side turn: each request of the agent's loop is one gateway turn
/// ([`crate::chat::whole`]) on the client's route, the same path as a request without
/// server-side tools: the route's format and emulation, the invalid-call policy (with its
/// retry), `tool_choice` and `parallel_tool_calls`, the tools cache, and the route's pooled
/// upstream client. The calls it hands the loop are read and checked already.
struct GatewayModel {
    state: AppState,
    /// The client's request: its model, sampling and other fields go with every request,
    /// and its tools as the client declared them (custom, namespace and built-in tools
    /// included), so each request's turn offers and checks them as a turn without
    /// server-side tools does, and their calls come back in their declared shape.
    base: ChatRequest,
    /// The names the client's tools are called by ([`ClientView`]): the agent's other tools
    /// are the server's.
    client_names: std::collections::HashSet<String>,
    /// The route's upstream dialect: a result's images stay in it where the dialect carries
    /// them ([`toolcall_wire::Dialect::result_images`]).
    upstream: Api,
    /// Requests made so far: the client's `tool_choice` asks for the turn's first reply;
    /// the later ones, after server-side results, are the model's own choice.
    asked: AtomicUsize,
    /// The gateway's error behind a failed request, answered to the client as it is.
    error: Mutex<Option<ApiError>>,
}

impl GatewayModel {
    fn new(state: &AppState, mut base: ChatRequest, view: &ClientView) -> Self {
        base.stream = None;
        GatewayModel {
            state: state.clone(),
            upstream: state.upstreams.route(&base.model).api,
            client_names: view
                .request
                .tools
                .iter()
                .flatten()
                .map(|t| t.function.name.clone())
                .collect(),
            base,
            asked: AtomicUsize::new(0),
            error: Mutex::new(None),
        }
    }

    /// The upstream request for one request of the loop, as the client would have sent it.
    fn chat_request(
        &self,
        request: &ModelRequest,
        names: &NameMap,
    ) -> Result<ChatRequest, ClientError> {
        let mut chat = self.base.clone();
        chat.messages = to_messages_for(self.upstream, &request.messages, names);
        let first = self.asked.fetch_add(1, Ordering::Relaxed) == 0;
        if request.tools.is_empty() {
            chat.tools = None;
            chat.tool_choice = None;
            chat.parallel_tool_calls = None;
        } else {
            // The server's tools as functions, then the client's as it declared them.
            let server: Vec<_> = request
                .tools
                .iter()
                .filter(|t| !self.client_names.contains(&t.name))
                .cloned()
                .collect();
            let mut tools = chat_tools(&server, names);
            tools.extend(
                self.base
                    .tools
                    .iter()
                    .flatten()
                    .map(|t| provider_named(t, names)),
            );
            chat.tools = Some(tools);
            if !first {
                chat.tool_choice = None;
            }
        }
        Ok(chat)
    }

    fn take_error(&self) -> Option<ApiError> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }
}

/// A client's function tool under its provider name (a name no provider takes gets the
/// alias its calls are mapped back from); a tool of another kind as declared.
fn provider_named(tool: &ChatTool, names: &NameMap) -> ChatTool {
    let mut tool = tool.clone();
    if tool.kind == "function" {
        tool.function.name = names.to_provider(&tool.function.name).into_owned();
    }
    tool
}

/// The client's request as the agent's loop reads it: its tools as the model is offered
/// them by a turn (a namespace's tools under qualified names, a custom tool as a function
/// of one string, a built-in tool as a function of its documented schema), its earlier
/// custom calls and a custom `tool_choice` rewritten to match ([`crate::tool_kinds`]); and
/// what the answer needs to write the client's calls in their declared shape.
struct ClientView {
    request: ChatRequest,
    custom_tools: Vec<String>,
    namespaces: Vec<String>,
}

impl ClientView {
    fn of(request: &ChatRequest) -> Result<Self, ApiError> {
        let mut view = request.clone();
        let namespaces = crate::tool_kinds::expand_namespaces(&mut view);
        // Every built-in gets its function form here, whatever the upstream: the agent's
        // registry needs a name and a schema; the upstream gets the tool as declared.
        crate::tool_kinds::expand_built_ins(&mut view, Api::CHAT);
        let custom = crate::tool_kinds::CustomTools::take(&mut view)?;
        Ok(ClientView {
            request: view,
            custom_tools: custom.names(),
            namespaces,
        })
    }
}

#[async_trait::async_trait]
impl ModelClient for GatewayModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ClientError> {
        let names = NameMap::from_names(
            request
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .chain(request.known_names.iter().map(String::as_str)),
        );
        let chat = self.chat_request(request, &names)?;
        match crate::front::whole(&self.state, chat).await {
            Ok((checked, _, _)) => Ok(ModelReply {
                text: checked.text,
                reasoning: checked.reasoning,
                finish_reason: checked.finish_reason,
                calls: checked
                    .calls
                    .into_iter()
                    .map(|mut c| {
                        if let Some(id) = names.from_provider(&c.name) {
                            c.name = id.to_owned();
                        }
                        c
                    })
                    .collect(),
            }),
            Err(e) => {
                let message = e.message.clone();
                if let Ok(mut slot) = self.error.lock() {
                    *slot = Some(e);
                }
                Err(ClientError::Other(message))
            }
        }
    }
}

/// A server-side turn's answer, for any front end to write in its own shape.
pub struct ServerAnswer {
    /// The answer as a checked reply: the final text, or the client's calls.
    pub checked: Checked,
    /// The archived session, to continue with `x-toolcall-session`.
    pub session: Option<String>,
}

/// A server-side turn ready to run: what every front end hands over, its request decoded
/// to Chat Completions.
pub struct ServerTurnJob {
    runner: ServerTools,
    /// The client's request as the agent reads it ([`ClientView`]).
    request: ChatRequest,
    /// The client's custom tools and namespaces: its calls are written back as declared.
    custom_tools: Vec<String>,
    namespaces: Vec<String>,
    model: Arc<GatewayModel>,
    /// The server's tools as the switches leave them at the start of this turn.
    tools: Registry,
    sessions: Arc<SessionLocks>,
    /// The session it continues, or the one made for it up front ([`Self::name_session`]).
    pub session: Option<String>,
}

impl ServerTurnJob {
    /// The turn for `chat` (the client's request as Chat Completions) continuing the session
    /// `headers` name, if any. The switches are read again from their store first (a
    /// shared archive, or the file), so a flip made on any replica before this request
    /// applies to it.
    pub async fn new(
        state: &AppState,
        side: &ServerSide,
        headers: &HeaderMap,
        chat: ChatRequest,
    ) -> Result<Self, ApiError> {
        let session = session_of(headers)?;
        let switches = side.switches.clone();
        match tokio::task::spawn_blocking(move || switches.refresh()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ApiError::archive(&e.to_string())),
            Err(e) => return Err(ApiError::archive(&format!("reading tool switches: {e}"))),
        }
        let view = ClientView::of(&chat)?;
        Ok(ServerTurnJob {
            runner: side.runner.clone(),
            model: Arc::new(GatewayModel::new(state, chat, &view)),
            request: view.request,
            custom_tools: view.custom_tools,
            namespaces: view.namespaces,
            tools: side.switches.apply(&side.tools),
            sessions: side.sessions.clone(),
            session,
        })
    }

    /// Sends every event of the turn to `observer` too (progress events).
    pub fn observe(&mut self, observer: toolcall_run::Observer) {
        self.runner.observers.push(observer);
    }

    /// Makes the new conversation's session now, so a streamed answer's headers can name
    /// it; an unknown session id is refused here, before anything is sent.
    pub fn name_session(&mut self) -> Result<(), ApiError> {
        let Some(archive) = &self.runner.archive else {
            return Ok(());
        };
        let failed = |e: toolcall_run::ArchiveError| ApiError::archive(&e.to_string());
        match &self.session {
            None => self.session = Some(archive.create_session("gateway turn").map_err(failed)?),
            Some(id) if !archive.has_session(id).map_err(failed)? => {
                return Err(turn_error(ServerTurnError::UnknownSession(id.clone())));
            }
            Some(_) => {}
        }
        Ok(())
    }

    pub async fn run(self) -> Result<ServerAnswer, ApiError> {
        let client: Arc<dyn ModelClient> = self.model.clone();
        let _turn = match &self.session {
            Some(id) => Some(self.sessions.lock(id).await),
            None => None,
        };
        let result = self
            .runner
            .chat(&self.request, client, &self.tools, self.session.as_deref())
            .await;
        let turn = match result {
            Ok(turn) => turn,
            Err(e) => return Err(self.model.take_error().unwrap_or_else(|| turn_error(e))),
        };
        let calls = turn.report.client_calls.clone();
        let checked = Checked {
            text: turn.report.final_text.clone().filter(|_| calls.is_empty()),
            finish_reason: Some(
                if calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                }
                .into(),
            ),
            calls,
            ..Checked::default()
        };
        Ok(ServerAnswer {
            checked,
            session: turn.session_id,
        })
    }
}

/// A server-side turn for any front end ([`crate::front::run`] hands it over): `request` is
/// the client's request in neutral terms, the answer goes back in `front`'s dialect, whole,
/// or streamed once the turn is done. `echo`: fields the reply repeats from the request;
/// `openai_built_ins`: OpenAI's built-in tools offered as functions, whose calls go back as
/// their own items.
pub async fn run(
    state: &AppState,
    side: &ServerSide,
    headers: &HeaderMap,
    front: Api,
    request: ChatRequest,
    echo: Map<String, Value>,
    openai_built_ins: Vec<String>,
) -> Result<Response, ApiError> {
    let streamed = request.stream == Some(true);
    let model = request.model.clone();
    let mut job = ServerTurnJob::new(state, side, headers, request).await?;
    let meta = ReplyMeta {
        id: crate::front::fresh_id(front),
        model,
        created: crate::chat::now(),
        extra: echo,
        custom_tools: job.custom_tools.clone(),
        namespaces: job.namespaces.clone(),
        openai_built_ins,
        ..ReplyMeta::default()
    };
    if !streamed {
        let answer = job.run().await?;
        let body = front
            .dialect()
            .encode_reply(&crate::front::checked_reply(&answer.checked), &meta);
        return Ok(with_session(
            Json(body).into_response(),
            answer.session.as_deref(),
        ));
    }
    Metrics::add(&state.metrics.streamed_requests, 1);
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    if progress_asked(headers) {
        let progress_tx = tx.clone();
        job.observe(Arc::new(move |e: &AgentEvent| {
            let data = serde_json::to_string(&e.redacted()).unwrap_or_default();
            let _ = progress_tx.send(Event::default().event(PROGRESS_EVENT).data(data));
        }));
    }
    // The stream's headers go out before the turn runs: a new conversation's session is
    // made now so the header can name it.
    job.name_session()?;
    let header = job.session.clone();
    // The turn runs on its own task and ends even if the client goes away, so the
    // archive and the pack state stay consistent.
    tokio::spawn(async move {
        let mut writer = front.dialect().stream_encoder(meta);
        let mut events = Vec::new();
        match job.run().await {
            Ok(answer) => {
                writer.push(outs_of(&answer.checked), &mut events);
                writer.end(End::Finished(answer.checked.finish_reason()), &mut events);
            }
            Err(e) => writer.end(End::Failed(e.message), &mut events),
        }
        for event in events {
            let _ = tx.send(crate::front::sse_event(event));
        }
    });
    let events = tokio_stream_from(rx).map(Ok::<_, Infallible>);
    Ok(with_session(
        Sse::new(events).into_response(),
        header.as_deref(),
    ))
}

/// A settled turn as the stream outputs a front end writes: the text, then each call.
fn outs_of(checked: &Checked) -> Vec<Out> {
    let mut outs = Vec::with_capacity(2 + 2 * checked.calls.len());
    if let Some(r) = checked.reasoning.as_ref().filter(|r| !r.is_empty()) {
        outs.push(Out::Reasoning(r.clone()));
    }
    if let Some(t) = checked.text.as_ref().filter(|t| !t.is_empty()) {
        outs.push(Out::Text(t.clone()));
    }
    for (index, c) in checked.calls.iter().enumerate() {
        outs.push(Out::CallStart {
            index,
            id: c.call_id.to_string(),
            name: c.name.clone(),
        });
        outs.push(Out::CallEnd {
            index,
            arguments: toolcall_wire::encode_arguments(&c.arguments),
        });
    }
    outs
}

fn progress_asked(headers: &HeaderMap) -> bool {
    headers
        .get(PROGRESS_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches!(v, "1" | "true"))
}

fn tokio_stream_from(
    rx: mpsc::UnboundedReceiver<Event>,
) -> impl futures::Stream<Item = Event> + Send {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
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
