//! toolcall's tools served to MCP clients.
//!
//! [`McpToolServer`] lists the enabled tools of the executor's registry (name, description,
//! `inputSchema`, annotations) and runs each `tools/call` through the executor, so calls get
//! the same validation, timeouts and approval policy as in toolcall's own loop. Results and
//! failures are `CallToolResult`s (see [`crate::convert`]); a job tool's call waits for the
//! job's result, sending progress notifications while it runs when the client asked for them.
//! [`McpToolServer::set_enabled`] hides or shows a tool and tells connected clients with
//! `notifications/tools/list_changed`: sent to every client of the initialize handshake, and
//! on the `subscriptions/listen` streams of 2026-07-28 clients that asked for tool changes
//! (that protocol sends server notifications only on such a stream).
//!
//! Transports: [`serve_stdio`] (the protocol owns stdout; logs belong on stderr) and
//! [`serve_http`] (Streamable HTTP at `/mcp`, every request checked for a client API key by
//! the gateway's own check, `toolcall_serve::auth`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolcall_core::{CallId, ErrorCode, Repair, ToolCall, ToolError, ToolKind, ToolResult};
use toolcall_run::{Executor, SessionContext};

use crate::McpError;
use crate::convert::{call_tool_result_repaired, mcp_tool};

/// How often a waiting job call looks for its result and reports progress.
const JOB_POLL: Duration = Duration::from_millis(200);
/// Finished job results kept for callers that have not picked them up yet.
const MAX_PARKED_JOBS: usize = 1024;
/// Clients remembered for `list_changed` notifications.
const MAX_PEERS: usize = 256;

/// An MCP server over an executor. Cheap to clone: clones share the tools, the hidden set and
/// the connected clients (each HTTP session gets a clone).
#[derive(Clone)]
pub struct McpToolServer {
    inner: Arc<Inner>,
}

struct Inner {
    executor: Arc<Executor>,
    session: SessionContext,
    hidden: RwLock<BTreeSet<String>>,
    peers: Mutex<Vec<Peer<RoleServer>>>,
    parked: Mutex<HashMap<CallId, ToolResult>>,
    /// Counts listing changes; each `subscriptions/listen` stream watches it.
    changes: tokio::sync::watch::Sender<u64>,
}

impl McpToolServer {
    pub fn new(executor: Arc<Executor>) -> Self {
        Self::with_session(executor, SessionContext::default())
    }

    /// A server whose calls carry `session` (its id and metadata reach every tool).
    pub fn with_session(executor: Arc<Executor>, session: SessionContext) -> Self {
        McpToolServer {
            inner: Arc::new(Inner {
                executor,
                session,
                hidden: RwLock::new(BTreeSet::new()),
                peers: Mutex::new(Vec::new()),
                parked: Mutex::new(HashMap::new()),
                changes: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// The registry the executor runs.
    pub fn registry(&self) -> &Arc<toolcall_core::Registry> {
        self.inner.executor.registry()
    }

    fn is_hidden(&self, name: &str) -> bool {
        self.inner
            .hidden
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
    }

    /// The tools a client sees: enabled in the registry and not hidden.
    pub fn listed_tools(&self) -> Vec<Tool> {
        self.inner
            .executor
            .registry()
            .enabled_specs()
            .filter(|s| !self.is_hidden(&s.name))
            .map(mcp_tool)
            .collect()
    }

    /// Shows or hides a tool (hidden tools are not listed and their calls are
    /// `tool_disabled`); connected clients get `notifications/tools/list_changed` when the
    /// listing changes. A tool disabled in the registry cannot be shown.
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<bool, McpError> {
        let registry = self.inner.executor.registry();
        let Some(spec) = registry.spec(name) else {
            return Err(McpError::Registry(toolcall_core::RegistryError::Unknown(
                name.to_owned(),
            )));
        };
        if enabled && !spec.enabled {
            return Err(McpError::Config {
                server: "toolcall".into(),
                message: format!("tool {name:?} is disabled in the toolset"),
            });
        }
        Ok(self.switch(&[(name.to_owned(), enabled)]).await > 0)
    }

    /// Shows or hides several tools at once, with one `list_changed` notification when the
    /// listing changed; returns how many tools changed. Unknown tools, and tools the registry
    /// disables (they cannot be shown), are left out.
    pub async fn switch(&self, switches: &[(String, bool)]) -> usize {
        let registry = self.inner.executor.registry();
        let changed = {
            let mut hidden = self.inner.hidden.write().unwrap_or_else(|p| p.into_inner());
            switches
                .iter()
                .filter(|(name, _)| registry.spec(name).is_some_and(|s| s.enabled))
                .filter(|(name, enabled)| {
                    if *enabled {
                        hidden.remove(name)
                    } else {
                        hidden.insert(name.clone())
                    }
                })
                .count()
        };
        if changed > 0 {
            self.notify_list_changed().await;
        }
        changed
    }

    /// Tells every connected client that the listing changed, forgetting the gone ones.
    async fn notify_list_changed(&self) {
        self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        let peers: Vec<Peer<RoleServer>> = self
            .inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for peer in peers.iter().filter(|p| !p.is_transport_closed()) {
            // A client that went away is forgotten below.
            let _ = peer.notify_tool_list_changed().await;
        }
        self.inner
            .peers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| !p.is_transport_closed());
    }

    /// Runs a call; its result and the repairs validation made to its arguments (a
    /// coercion such as `5` to `"5"`), which the client is told about.
    async fn run_call(
        &self,
        call: ToolCall,
        progress: Option<(Peer<RoleServer>, ProgressToken)>,
        cancel: &CancellationToken,
    ) -> (ToolResult, Vec<Repair>) {
        if self.is_hidden(&call.name) {
            let message = format!("tool {:?} is disabled", call.name);
            let result = ToolResult::err(
                call.call_id,
                call.name,
                ToolError::new(ErrorCode::ToolDisabled, message),
            );
            return (result, Vec::new());
        }
        let is_job = self
            .inner
            .executor
            .registry()
            .spec(&call.name)
            .is_some_and(|s| s.kind == ToolKind::Job);
        let (call_id, name) = (call.call_id.clone(), call.name.clone());
        let timed = tokio::select! {
            t = self.inner.executor.execute_one(call, &self.inner.session) => t,
            () = cancel.cancelled() => return (cancelled(call_id, name), Vec::new()),
        };
        let repairs = timed.call.origin.repairs;
        if !is_job || !timed.result.is_ok() {
            return (timed.result, repairs);
        }
        (
            self.wait_job(call_id, name, progress, cancel).await,
            repairs,
        )
    }

    /// Waits for a job's result, picking up (and parking for their callers) any other job
    /// results that finish meanwhile.
    async fn wait_job(
        &self,
        call_id: CallId,
        name: String,
        progress: Option<(Peer<RoleServer>, ProgressToken)>,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let mut ticks = 0u32;
        loop {
            let finished = self.inner.executor.finished_jobs().await;
            {
                let mut parked = self.inner.parked.lock().unwrap_or_else(|p| p.into_inner());
                for t in finished {
                    if parked.len() >= MAX_PARKED_JOBS {
                        // Results nobody waits for any more; the oldest go first.
                        if let Some(k) = parked.keys().next().cloned() {
                            parked.remove(&k);
                        }
                    }
                    parked.insert(t.result.call_id.clone(), t.result);
                }
                if let Some(result) = parked.remove(&call_id) {
                    return result;
                }
            }
            ticks = ticks.saturating_add(1);
            if let Some((peer, token)) = &progress {
                let note = ProgressNotificationParam::new(token.clone(), f64::from(ticks))
                    .with_message(format!("{name} running"));
                // A client that stopped listening does not stop the job.
                let _ = peer.notify_progress(note).await;
            }
            tokio::select! {
                () = tokio::time::sleep(JOB_POLL) => {}
                () = cancel.cancelled() => return cancelled(call_id, name),
            }
        }
    }
}

fn cancelled(call_id: CallId, name: String) -> ToolResult {
    ToolResult::err(
        call_id,
        name,
        ToolError::new(ErrorCode::Cancelled, "the client cancelled the call"),
    )
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_instructions(
            "toolcall's tools. Failed calls are results with isError set, carrying an error code \
             (unknown_tool, invalid_arguments, timeout, tool_failed, denied, ...) and a message.",
        );
        info.server_info = Implementation::new("toolcall", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(request.name.to_string(), arguments, "mcp");
        let progress = context
            .meta
            .get_progress_token()
            .map(|t| (context.peer.clone(), t));
        let (result, repairs) = self.run_call(call, progress, &context.ct).await;
        Ok(call_tool_result_repaired(&result, &repairs).into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.remember(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.inner.changes.subscribe();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    // A stream that cannot be written to any more ends with its client.
                    if subscription.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                () = subscription.cancelled() => return Ok(()),
            }
        }
    }
}

impl McpToolServer {
    fn remember(&self, peer: Peer<RoleServer>) {
        let mut peers = self.inner.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        if peers.len() < MAX_PEERS {
            peers.push(peer);
        }
    }
}

/// Serves `server` on stdin/stdout until the client goes away; every request gets an
/// answer, also a malformed one ([`crate::stdio`]).
pub async fn serve_stdio(server: McpToolServer) -> Result<(), McpError> {
    serve_lines(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves `server` on any newline-delimited JSON-RPC stream pair, as [`serve_stdio`] does
/// on stdin/stdout.
pub async fn serve_lines<R, W>(server: McpToolServer, read: R, write: W) -> Result<(), McpError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (transport, writer) = crate::stdio::line_transport(read, write);
    let running = server
        .serve(transport)
        .await
        .map_err(|e| McpError::Transport(e.to_string()))?;
    let ended = running
        .waiting()
        .await
        .map_err(|e| McpError::Transport(e.to_string()));
    // Every answer is written before we return (the process may exit right after).
    let _ = writer.await;
    ended.map(|_| ())
}

/// Serves `server` over Streamable HTTP at `http://ADDR/mcp` until `shutdown` is cancelled.
/// Every request must carry `Authorization: Bearer KEY` with one of `api_keys`; with no keys
/// the endpoint is open (the caller decides whether that is acceptable, e.g. loopback only).
pub async fn serve_http(
    server: McpToolServer,
    listener: tokio::net::TcpListener,
    api_keys: Vec<String>,
    shutdown: CancellationToken,
) -> Result<(), McpError> {
    let local = listener
        .local_addr()
        .map_err(|e| McpError::Transport(e.to_string()))?;
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_allowed_hosts(toolcall_serve::host::allowed_hosts(local, &[]));
    let service: StreamableHttpService<McpToolServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
    let keys = Arc::new(api_keys);
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(session_delete_ok))
        .layer(axum::middleware::from_fn_with_state(keys, check_key));
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| McpError::Transport(e.to_string()))
}

/// A session `DELETE` that ended the session is answered `200 OK`: rmcp answers `202
/// Accepted`, which the official Python SDK logs as a failed termination (it expects 200 or
/// 204; the request is done, not queued).
async fn session_delete_ok(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

async fn check_key(State(keys): State<Arc<Vec<String>>>, request: Request, next: Next) -> Response {
    if toolcall_serve::auth::authorized(request.headers(), &keys) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
            "a client API key is required: Authorization: Bearer KEY\n",
        )
            .into_response()
    }
}
