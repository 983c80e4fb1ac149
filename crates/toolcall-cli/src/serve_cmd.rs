//! `toolcall serve`: the OpenAI-compatible gateway (the `toolcall-serve` crate).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use std::sync::Arc;

use toolcall_inspector::ToolSwitches;
use toolcall_packs::toolset::ToolsetSpec;
use toolcall_packs::{PackConfig, PackState, load_pack};
use toolcall_run::server::{PackInstance, SessionPack};
use toolcall_serve::server_side::ServerSide;
use toolcall_serve::{AppState, Config, InvalidCallPolicy};

use crate::approve::approver;
use crate::sessions_cmd::{archive_location, open_archive};
use crate::toolset::{McpServerArgs, ToolsetArgs, load_runnable_with_servers};

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
    /// Seconds a client may take to send a request's head (0: none) [default: 10].
    #[arg(long)]
    header_read_timeout_secs: Option<u64>,
    /// Seconds a client may take to send a request's whole body, else 408 (0: none)
    /// [default: 60].
    #[arg(long)]
    body_read_timeout_secs: Option<u64>,
    /// Seconds an idle client connection is kept open (0: none) [default: 75].
    #[arg(long)]
    keep_alive_timeout_secs: Option<u64>,
    /// Most client connections open at once; more wait to be accepted [default: 512].
    #[arg(long)]
    max_connections: Option<usize>,
    /// MiB of estimated heap the request bodies in flight may take at once; a body that does
    /// not fit waits briefly, then gets 503 [default: 64].
    #[arg(long)]
    bodies_memory_mib: Option<u64>,
    /// MiB of estimated heap the requests' compiled tools may take at once [default: 128].
    #[arg(long)]
    tools_memory_mib: Option<u64>,
    /// Tools the gateway runs itself (`--pack`, `--tools`, ...): offered to the model next to
    /// the client's tools, their calls run here and answered to the model, up to
    /// `--max-rounds`; calls to the client's tools still go to the client.
    #[command(flatten)]
    toolset: ToolsetArgs,
    /// MCP servers whose tools the gateway runs as server-side tools (with the config file's
    /// `[[mcp]]` entries).
    #[command(flatten)]
    mcp: McpServerArgs,
    /// Tool rounds per turn for server-side tools.
    #[arg(long, default_value_t = toolcall_run::agent::DEFAULT_MAX_ROUNDS)]
    max_rounds: usize,
    /// Approve server-side tools marked `requires_approval` (otherwise they are denied).
    #[arg(long)]
    yes: bool,
    /// Session archive for server-side turns: a file, or a `postgres://` URL that several
    /// replicas share [default: $TOOLCALL_ARCHIVE, else the config's `archive`, else
    /// ./toolcall-sessions.sqlite].
    #[arg(long)]
    archive: Option<String>,
    /// Where the inspector keeps its tool switches [default: ./toolcall-tool-switches.json].
    /// With a `postgres://` archive the switches live in it, shared by every replica, and
    /// this option is refused.
    #[arg(long)]
    tool_switches: Option<PathBuf>,
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
        // The same lines as `.json()` alone, written without serde_json's adaptor.
        .event_format(toolcall_serve::log_lines::JsonLines::default())
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
    if let Some(s) = args.header_read_timeout_secs {
        config.header_read_timeout_secs = s;
    }
    if let Some(s) = args.body_read_timeout_secs {
        config.body_read_timeout_secs = s;
    }
    if let Some(s) = args.keep_alive_timeout_secs {
        config.keep_alive_timeout_secs = s;
    }
    if let Some(n) = args.max_connections {
        config.max_connections = n;
    }
    if let Some(n) = args.bodies_memory_mib {
        config.bodies_memory_mib = n;
    }
    if let Some(n) = args.tools_memory_mib {
        config.tools_memory_mib = n;
    }
    let listen = config.listen.clone();
    let archive_at = archive_location(args.archive.clone(), config.archive.clone());
    let mut servers = config.mcp.clone();
    servers.extend(args.mcp.servers()?);
    let mut state = AppState::new(config)?;
    let spec = args.toolset.spec(ToolsetSpec::default())?;
    if !spec.is_empty() || !servers.is_empty() {
        let toolset = load_runnable_with_servers(&spec, servers).await?;
        let archive = Arc::new(open_archive(&archive_at)?);
        // Replicas on one shared archive share their switches through it; one machine
        // keeps them in a file (which `toolcall mcp --tool-switches` can follow).
        let switches = if archive.is_shared() {
            anyhow::ensure!(
                args.tool_switches.is_none(),
                "--tool-switches: with a shared (postgres://) archive the tool switches \
                 live in the archive, shared by every replica; leave the option out"
            );
            let archive = archive.clone();
            tokio::task::spawn_blocking(move || ToolSwitches::shared(archive)).await??
        } else {
            ToolSwitches::open(
                args.tool_switches
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("toolcall-tool-switches.json")),
            )?
        };
        let packs = session_packs(&spec, &toolset.pack_states)?;
        state = state.with_server_side(ServerSide::new(
            toolset.registry,
            packs,
            Some(archive),
            switches,
            args.max_rounds,
            approver(args.yes),
        ));
    }
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    // The first line on stdout says where the gateway listens (port 0 picks a free one).
    println!("listening on http://{addr}");
    tracing::info!(%addr, upstream = %state.config.upstream, "toolcall serve started");
    give_memory_back();
    toolcall_serve::serve(listener, state, shutdown_signal()).await?;
    tracing::info!("toolcall serve stopped");
    Ok(ExitCode::SUCCESS)
}

/// The stateful packs as the gateway runs them: every session on its own instance, made
/// at the state the pack loaded with.
fn session_packs(
    spec: &ToolsetSpec,
    states: &[(String, Arc<dyn PackState>)],
) -> anyhow::Result<Vec<SessionPack>> {
    let mut packs = Vec::with_capacity(states.len());
    for (name, state) in states {
        let config = spec
            .packs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone())
            .with_context(|| format!("pack {name} has state but no configuration"))?;
        packs.push(session_pack(name.clone(), config, state.snapshot()));
    }
    Ok(packs)
}

/// Pack `name` loaded anew for each session, its state set to `initial`.
fn session_pack(name: String, config: PackConfig, initial: serde_json::Value) -> SessionPack {
    let pack_name = name.clone();
    let make = move || -> Result<PackInstance, String> {
        let pack = load_pack(&pack_name, &config).map_err(|e| e.to_string())?;
        let state = pack
            .state
            .ok_or_else(|| "the pack has no state to give a session".to_owned())?;
        state.restore(initial.clone()).map_err(|e| e.to_string())?;
        let saved = state.clone();
        Ok(PackInstance {
            tools: pack.registry,
            snapshot: Arc::new(move || saved.snapshot()),
            restore: Box::new(move |snapshot| state.restore(snapshot).map_err(|e| e.to_string())),
        })
    };
    SessionPack {
        name,
        make: Arc::new(make),
    }
}

/// How often freed heap is handed back to the system.
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Hands freed heap back to the system every few seconds. glibc's malloc keeps what a
/// spike of requests freed (compiled schemas, bodies) in its per-thread arenas and returns
/// only the top of the main heap, so after a spike the gateway stayed at its peak resident
/// set while idle (205 MB measured, `tests/serve_memory.rs`); `malloc_trim(0)` releases
/// every arena's free pages. Cheap when little is free; only in this binary, never in the
/// libraries.
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::spawn(async {
        let mut every = tokio::time::interval(TRIM_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            // SAFETY: malloc_trim only walks and releases the allocator's own free memory.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    });
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
