//! `toolcall serve`: an OpenAI-compatible gateway in front of any model server.
//!
//! A client on the OpenAI API points its base URL here; requests go to the upstream with
//! their own fields untouched, and replies come back as the OpenAI API defines them, with the
//! tool calls the upstream wrote as text (any family toolcall reads) turned into native,
//! validated `tool_calls`, and reasoning kept out of the text.
//!
//! This crate owns the HTTP surface (axum): the router ([`router`]) over an [`AppState`];
//! configuration ([`config`]); client API keys ([`auth`]); upstream routing by model name
//! ([`upstream`]); the turn logic shared by every endpoint ([`turn`]: parse the reply, check
//! each call against the request's tools, apply the invalid-call policy); the request's tools
//! compiled once per distinct declaration ([`tools_cache`]); the streamed turn's
//! driver every front end shares ([`stream`]: calls announced when the name is known, their
//! arguments once checked, `retry` before anything of a bad call went out); the one turn
//! driver ([`front`]: a front end decodes its dialect into the neutral request, the turn runs
//! against the route's upstream in the upstream's dialect, the reply is encoded back); one
//! thin module per front end ([`chat`], [`responses`], [`messages`] for Anthropic Messages,
//! [`gemini`]), the dialects themselves living in `toolcall-wire`; tools for models without native calling
//! ([`emulate`]); OpenAI-shaped errors ([`error`]) and Prometheus
//! metrics ([`metrics`]); server-side tools and the inspector page ([`server_side`]); the
//! DNS-rebinding guard on `Host` ([`host`]).
//! Provider wire types come from `toolcall-wire`, upstream HTTP
//! (timeouts, retries) from `toolcall-run`'s transport, the same code the model clients use.
//!
//! Without server-side tools the gateway is stateless: any number of replicas can sit behind
//! a load balancer. With them, sessions, pack state and tool switches live in this process.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub mod auth;
pub mod body;
pub mod budget;
pub mod chat;
pub mod config;
pub mod constrain;
pub mod emulate;
pub mod error;
pub mod front;
pub mod gemini;
pub mod host;
pub mod listen;
pub mod log_lines;
pub mod messages;
pub mod metrics;
pub mod responses;
pub mod server_side;
pub mod stream;
pub mod tool_kinds;
pub mod tools_cache;
pub mod turn;
pub mod upstream;

pub use config::{AnnounceCalls, Config, ConfigError, HostedTools, InvalidCallPolicy, ModelRoute};
pub use error::ApiError;
pub use metrics::Metrics;
pub use upstream::{Route, Upstreams};

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub upstreams: Arc<Upstreams>,
    pub metrics: Arc<Metrics>,
    /// The requests' tools, compiled once per distinct declaration.
    pub tools: Arc<tools_cache::ToolsCache>,
    /// The request bodies in flight, each holding its estimated size ([`body`]).
    pub bodies: Arc<budget::MemoryBudget>,
    /// Tools the gateway runs itself (`--pack`, `--tools`); `None`: a pure proxy.
    pub server_side: Option<Arc<server_side::ServerSide>>,
    /// The inspector page (`/inspector`).
    pub inspector: toolcall_inspector::Inspector,
}

impl AppState {
    /// The state for `config`: its upstream clients built, its API keys read.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        let upstreams = Upstreams::new(&config)?;
        let tools = Arc::new(tools_cache::ToolsCache::new(
            config.tools_memory_mib.saturating_mul(1024 * 1024),
        ));
        let bodies = config.bodies_memory_mib.saturating_mul(1024 * 1024);
        let bodies = Arc::new(budget::MemoryBudget::new(
            budget::Budgeted::Bodies,
            bodies,
            bodies,
        ));
        Ok(AppState {
            config: Arc::new(config),
            upstreams: Arc::new(upstreams),
            metrics: Arc::new(Metrics::default()),
            tools,
            bodies,
            server_side: None,
            inspector: server_side::empty_inspector(),
        })
    }

    /// Runs `side`'s tools in the gateway and shows them in the inspector.
    pub fn with_server_side(mut self, side: server_side::ServerSide) -> Self {
        self.inspector = side.inspector();
        self.server_side = Some(Arc::new(side));
        self
    }
}

/// The gateway's routes: `POST /v1/chat/completions`, `POST /v1/responses`,
/// `POST /v1/messages` (Anthropic Messages, and its `count_tokens`), Gemini's
/// `POST /{v1,v1beta}/[models/]{model}:{generateContent,streamGenerateContent}`,
/// `GET /v1/models` (passed through), `GET /health`, and the operator's `GET /metrics` and
/// inspector under `/inspector` (open on loopback, behind the client API keys otherwise).
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    let inspector = state
        .inspector
        .router()
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            server_side::guard,
        ));
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/responses", post(responses::handle))
        .route("/v1/messages", post(messages::handle))
        .route("/v1/messages/count_tokens", post(messages::count_tokens))
        .route("/v1beta/{*rest}", post(gemini::handle))
        .route("/v1/{*rest}", post(gemini::handle))
        .route("/v1/models", get(upstream::models))
        .route("/health", get(|| async { "ok" }))
        .route(
            "/metrics",
            get(metrics::handle).layer(axum::middleware::from_fn_with_state(
                state.clone(),
                server_side::guard,
            )),
        )
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state.clone())
        .nest(toolcall_inspector::BASE, inspector)
        // `/inspector/` as typed by hand: the page lives at `/inspector`.
        .route(
            "/inspector/",
            get(|| async { axum::response::Redirect::permanent(toolcall_inspector::BASE) }),
        )
        .layer(axum::middleware::from_fn_with_state(
            state,
            body::read_whole,
        ))
}

/// Serves `router(state)` on `listener` until `shutdown` resolves; open streams are finished
/// before this returns.
///
/// Requests naming a foreign `Host` are refused ([`host`]: the DNS-rebinding guard).
/// Connections are capped and held to the header and keep-alive timeouts ([`listen`]);
/// bodies to the body timeout ([`body`]).
/// Accepted connections get `TCP_NODELAY`: a streamed reply is many small SSE events, and
/// with Nagle's algorithm each one after the first waits for the client's delayed
/// acknowledgement (about 40 ms on Linux) whenever the previous one is still unacknowledged.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let hosts = Arc::new(host::HostCheck::new(local, &state.config.allowed_hosts));
    let limits = state.config.conn_limits();
    let app = router(state).layer(axum::middleware::from_fn_with_state(
        hosts,
        host::check_host,
    ));
    listen::serve(listener, app, limits, shutdown).await
}
