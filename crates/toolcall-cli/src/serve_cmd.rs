//! `toolcall serve`: the OpenAI-compatible gateway (the `toolcall-serve` crate).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolcall_serve::{AppState, Config, InvalidCallPolicy};

#[derive(Args)]
pub struct ServeArgs {
    /// The model server to forward to (its root or its /v1).
    #[arg(long, env = "TOOLCALL_UPSTREAM")]
    upstream: Option<String>,
    /// Address to listen on (default 127.0.0.1:8090).
    #[arg(long, env = "TOOLCALL_LISTEN")]
    listen: Option<String>,
    /// A TOML config file; flags and environment variables override it.
    #[arg(long, env = "TOOLCALL_SERVE_CONFIG")]
    config: Option<PathBuf>,
    /// The call format: `auto`, a family id or a comma-separated list (default: by model name).
    #[arg(long)]
    format: Option<String>,
    /// What to do with invalid calls: pass, drop or retry (default retry).
    #[arg(long, value_parser = parse_policy)]
    invalid_calls: Option<InvalidCallPolicy>,
    /// Put the tools into the system prompt in the family's text format (for models without
    /// native tool calling).
    #[arg(long)]
    emulate_tools: bool,
    /// Environment variable holding the upstream's API key.
    #[arg(long)]
    upstream_api_key_env: Option<String>,
    /// Environment variable holding client API keys, comma-separated.
    #[arg(long)]
    api_keys_env: Option<String>,
}

fn parse_policy(s: &str) -> Result<InvalidCallPolicy, String> {
    match s {
        "pass" => Ok(InvalidCallPolicy::Pass),
        "drop" => Ok(InvalidCallPolicy::Drop),
        "retry" => Ok(InvalidCallPolicy::Retry),
        other => Err(format!("{other:?} is not one of pass, drop, retry")),
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLCALL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .json()
        .try_init();
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(u) = args.upstream {
        config.upstream = u;
    }
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if args.format.is_some() {
        config.format = args.format;
    }
    if args.emulate_tools {
        config.emulate_tools = true;
    }
    if let Some(p) = args.invalid_calls {
        config.invalid_calls = p;
    }
    if args.upstream_api_key_env.is_some() {
        config.upstream_api_key_env = args.upstream_api_key_env;
    }
    if args.api_keys_env.is_some() {
        config.api_keys_env = args.api_keys_env;
    }
    let listen = config.listen.clone();
    let state = AppState::new(config)?;
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    // The first line on stdout says where the gateway listens (port 0 picks a free one).
    println!("listening on http://{addr}");
    tracing::info!(%addr, upstream = %state.config.upstream, "toolcall serve started");
    toolcall_serve::serve(listener, state, shutdown_signal()).await?;
    tracing::info!("toolcall serve stopped");
    Ok(ExitCode::SUCCESS)
}

/// SIGTERM or Ctrl-C: stop accepting, finish open requests and streams, then exit.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
