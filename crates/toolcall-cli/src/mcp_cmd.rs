//! `toolcall mcp serve`: the toolset served to MCP clients, over stdio (default; the protocol
//! owns stdout, logs go to stderr) or Streamable HTTP (`--http ADDR`, at `/mcp`, with client
//! API keys from `--api-key-env`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use tokio_util::sync::CancellationToken;
use toolcall_inspector::ToolSwitches;
use toolcall_mcp::McpToolServer;
use toolcall_run::{ApproveAll, Approver, DenyAll, Executor};

use crate::run_cmd::init_logging;
use crate::toolset::{McpServerArgs, ToolsetArgs, load_runnable_with_mcp};
use toolcall_packs::toolset::ToolsetSpec;

#[derive(clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(clap::Subcommand)]
enum McpCommand {
    /// Serve the toolset's enabled tools to MCP clients (stdio unless --http).
    Serve(Box<ServeArgs>),
}

#[derive(clap::Args)]
struct ServeArgs {
    #[command(flatten)]
    toolset: ToolsetArgs,
    #[command(flatten)]
    mcp: McpServerArgs,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8765.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Environment variable holding the client API keys (comma-separated) that HTTP clients
    /// must send as `Authorization: Bearer KEY`; required unless ADDR is loopback.
    #[arg(long = "api-key-env", value_name = "VAR", requires = "http")]
    api_key_env: Option<String>,
    /// Follow this tool switches file (the inspector's, `{"tools": {"NAME": false}}`): its
    /// switches apply at start, and a later change hides or shows tools while serving, telling
    /// clients with `notifications/tools/list_changed`.
    #[arg(long, value_name = "FILE")]
    tool_switches: Option<PathBuf>,
    /// Approve every tool that requires approval (otherwise such calls are denied: an MCP
    /// server has no terminal to ask on).
    #[arg(long)]
    yes: bool,
}

pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Serve(args) => serve(*args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    let spec = args.toolset.spec(ToolsetSpec::default())?;
    if spec.is_empty() && args.mcp.mcp.is_empty() {
        bail!("no tools: give --tools FILE, --pack NAME or --mcp NAME=...");
    }
    let mut registry = load_runnable_with_mcp(&spec, &args.mcp).await?.registry;
    if let Some(path) = &args.tool_switches {
        // Switched on: enabled in the registry even if the toolset disables them. Switched
        // off: hidden by the server below, so they can come back while serving.
        let switches = ToolSwitches::open(path)?;
        let on: Vec<String> = registry
            .specs()
            .filter(|s| switches.get(&s.name) == Some(true))
            .map(|s| s.name.clone())
            .collect();
        for name in on {
            registry.set_enabled(&name, true)?;
        }
    }
    let approver: Arc<dyn Approver> = if args.yes {
        Arc::new(ApproveAll)
    } else {
        Arc::new(DenyAll)
    };
    let executor = Arc::new(Executor::new(Arc::new(registry)).with_approver(approver));
    let server = McpToolServer::new(executor);
    let stop = CancellationToken::new();
    // Stops following the switches when serving ends.
    let _stop_following = stop.clone().drop_guard();
    if let Some(path) = args.tool_switches.clone() {
        toolcall_mcp::switches::apply_file(&server, &path).await;
        tokio::spawn(toolcall_mcp::follow_switches(
            server.clone(),
            path,
            toolcall_mcp::switches::DEFAULT_POLL,
            stop.clone(),
        ));
    }
    let Some(addr) = args.http else {
        toolcall_mcp::serve_stdio(server).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let keys: Vec<String> = match &args.api_key_env {
        Some(var) => std::env::var(var)
            .map(|v| toolcall_serve::auth::split_keys(&v))
            .with_context(|| format!("--api-key-env {var}: the variable is not set"))?,
        None => Vec::new(),
    };
    if keys.is_empty() && !addr.ip().is_loopback() {
        bail!(
            "--http {addr} is not a loopback address: give client API keys with --api-key-env VAR"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!("toolcall mcp: serving MCP at http://{local}/mcp");
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        wait_for_stop().await;
        on_signal.cancel();
    });
    toolcall_mcp::serve_http(server, listener, keys, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C or SIGTERM.
async fn wait_for_stop() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
