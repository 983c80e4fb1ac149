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
//! each call against the request's tools, apply the invalid-call policy); one module per
//! endpoint ([`chat`], [`responses`]); tools for models without native calling
//! ([`emulate`]); OpenAI-shaped errors ([`error`]) and Prometheus
//! metrics ([`metrics`]). Provider wire types come from `toolcall-wire`, upstream HTTP
//! (timeouts, retries) from `toolcall-run`'s transport, the same code the model clients use.
//!
//! The gateway is stateless: any number of replicas can sit behind a load balancer.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub mod auth;
pub mod chat;
pub mod config;
pub mod emulate;
pub mod error;
pub mod metrics;
pub mod responses;
pub mod turn;
pub mod upstream;

pub use config::{Config, ConfigError, InvalidCallPolicy, ModelRoute};
pub use error::ApiError;
pub use metrics::Metrics;
pub use upstream::{Route, Upstreams};

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub upstreams: Arc<Upstreams>,
    pub metrics: Arc<Metrics>,
}

impl AppState {
    /// The state for `config`: its upstream clients built, its API keys read.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        let upstreams = Upstreams::new(&config)?;
        Ok(AppState {
            config: Arc::new(config),
            upstreams: Arc::new(upstreams),
            metrics: Arc::new(Metrics::default()),
        })
    }
}

/// The gateway's routes: `POST /v1/chat/completions`, `POST /v1/responses`,
/// `GET /v1/models` (passed through), `GET /health`, `GET /metrics`.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/responses", post(responses::handle))
        .route("/v1/models", get(upstream::models))
        .route("/health", get(|| async { "ok" }))
        .route("/metrics", get(metrics::handle))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Serves `router(state)` on `listener` until `shutdown` resolves; open streams are finished
/// before this returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
