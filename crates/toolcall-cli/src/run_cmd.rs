//! `toolcall run`: one turn of the agent loop against a model server or a recorded session,
//! printed round by round (or as the `TurnReport` JSON with `--json`).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use base64::Engine;
use serde_json::{Map, Value};
use toolcall_core::{McpServer, Registry, ToolCall, ToolSpec};
use toolcall_packs::{PackConfig, PackState, load_pack};
use toolcall_run::client::images::find_images;
use toolcall_run::{
    Agent, AgentConfig, ApproveAll, Approver, Archive, ChatCompletionsClient, DenyAll, Executor,
    Mode, ModelClient, ReplayClient, ResponsesClient, SessionFile, TurnReport,
};

use crate::sessions_cmd::archive_path;
use crate::toolset::ToolsetArgs;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Api {
    /// `/v1/chat/completions` (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio).
    Chat,
    /// `/v1/responses`.
    Responses,
}

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    toolset: ToolsetArgs,
    #[command(flatten)]
    extra: RunToolsetArgs,
    /// Model server base URL, e.g. http://127.0.0.1:11434 (Ollama).
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "replay",
        requires = "model_name"
    )]
    model: Option<String>,
    /// Model name sent to the server.
    #[arg(long = "model-name", value_name = "NAME")]
    model_name: Option<String>,
    /// Which API the server speaks.
    #[arg(long, value_enum, default_value = "chat")]
    api: Api,
    /// Environment variable holding the API key (sent as a bearer token).
    #[arg(long = "api-key-env", value_name = "VAR")]
    api_key_env: Option<String>,
    /// Stream the reply (SSE).
    #[arg(long)]
    stream: bool,
    /// Play a recorded session file instead of calling a model.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// native | text | auto [default: the replay file's mode, else auto].
    #[arg(long)]
    mode: Option<Mode>,
    /// Text format for text mode: the system prompt teaches it and the parser reads only it
    /// [default: Hermes `<tool_call>` instructions, any format parsed].
    #[arg(long)]
    format: Option<String>,
    /// Tool rounds per turn.
    #[arg(long = "max-rounds", value_name = "N", default_value_t = toolcall_run::agent::DEFAULT_MAX_ROUNDS)]
    max_rounds: usize,
    /// Session archive [default: $TOOLCALL_ARCHIVE or ./toolcall-sessions.sqlite].
    #[arg(long, value_name = "PATH")]
    archive: Option<PathBuf>,
    /// Continue an archived session (its conversation and pack states).
    #[arg(long, value_name = "SESSION_ID")]
    resume: Option<String>,
    /// Write every image found in results to DIR/<call_id>.png.
    #[arg(long = "save-images", value_name = "DIR")]
    save_images: Option<PathBuf>,
    /// Approve every tool that requires approval.
    #[arg(long)]
    yes: bool,
    /// Print the turn report as JSON.
    #[arg(long)]
    json: bool,
    /// The user's message [default: the replay file's prompt].
    prompt: Option<String>,
}

/// Toolset options beyond [`ToolsetArgs`]: pack options, the display, MCP servers.
#[derive(clap::Args, Default)]
pub struct RunToolsetArgs {
    /// A pack option, `PACK.KEY=VALUE` (VALUE is read as JSON when it parses, else as text).
    #[arg(long = "pack-opt", value_name = "PACK.KEY=VALUE")]
    pub pack_opts: Vec<String>,
    /// X display for the computer pack, e.g. `:1` [default: the pack's `display` option, else
    /// $DISPLAY].
    #[arg(long, value_name = "DISPLAY")]
    pub display: Option<String>,
    /// An MCP server whose tools join the toolset as `NAME.tool`: `NAME=URL` (Streamable
    /// HTTP) or `NAME=PROGRAM ARG…` (stdio; split on spaces, never run through a shell).
    /// Repeatable.
    #[arg(long = "mcp", value_name = "NAME=COMMAND|URL")]
    pub mcp: Vec<String>,
}

/// Loaded packs whose state is saved with the session.
pub struct LoadedState {
    pub name: String,
    pub state: Arc<dyn PackState>,
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    if let Some(f) = &args.format {
        toolcall_parse::FormatSelection::from_name(f).context("--format")?;
    }
    let session = match &args.replay {
        Some(p) => Some(SessionFile::load(p)?),
        None => None,
    };
    let replay = session.as_ref().zip(args.replay.as_deref());
    let (registry, states) = build_registry(&args.toolset, &args.extra, replay).await?;
    let registry = Arc::new(registry);

    let client: Arc<dyn ModelClient> = match (&session, &args.model) {
        (Some(s), _) => Arc::new(ReplayClient::new(s)),
        (None, Some(url)) => {
            let name = args.model_name.clone().unwrap_or_default();
            match args.api {
                Api::Chat => {
                    let mut c = ChatCompletionsClient::new(url, name)?.streaming(args.stream);
                    if let Some(var) = &args.api_key_env {
                        c = c.with_api_key_env(var)?;
                    }
                    Arc::new(c)
                }
                Api::Responses => {
                    let mut c = ResponsesClient::new(url, name)?.streaming(args.stream);
                    if let Some(var) = &args.api_key_env {
                        c = c.with_api_key_env(var)?;
                    }
                    Arc::new(c)
                }
            }
        }
        (None, None) => bail!("give --model URL --model-name NAME, or --replay FILE"),
    };

    let prompt = args
        .prompt
        .clone()
        .or_else(|| session.as_ref().map(|s| s.prompt.clone()))
        .filter(|p| !p.trim().is_empty())
        .context("no prompt: pass one, or use a replay file that has one")?;
    let mode = args
        .mode
        .or_else(|| session.as_ref().map(|s| s.mode))
        .unwrap_or_default();

    let approver: Arc<dyn Approver> = if args.yes {
        Arc::new(ApproveAll)
    } else if std::io::stdin().is_terminal() {
        Arc::new(TtyApprover)
    } else {
        Arc::new(DenyAll)
    };
    let executor = Arc::new(Executor::new(registry.clone()).with_approver(approver));
    let config = AgentConfig {
        mode,
        max_rounds: args.max_rounds,
        text_format: args.format.clone(),
        await_jobs_before_request: session.is_some(),
        ..AgentConfig::default()
    };
    let mut agent = Agent::new(client, executor.clone(), config);

    let archive_file = archive_path(args.archive.clone());
    let archive = Arc::new(
        Archive::open(&archive_file)
            .with_context(|| format!("opening the archive {}", archive_file.display()))?,
    );
    match &args.resume {
        Some(id) => {
            agent.archive_resume(archive.clone(), id)?;
            for s in &states {
                if let Some(snap) = archive.load_state(id, &s.name)? {
                    s.state
                        .restore(snap)
                        .with_context(|| format!("restoring pack {}", s.name))?;
                }
            }
        }
        None => {
            let description = session
                .as_ref()
                .map(|s| s.description.clone())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| shorten(&prompt, 80));
            agent.archive_new(archive.clone(), &description)?;
        }
    }
    for s in &states {
        let state = s.state.clone();
        agent.add_state_saver(s.name.clone(), Arc::new(move || state.snapshot()));
    }

    let report = agent.run_turn(&prompt).await?;
    let pending = executor.pending_jobs().await;

    if let Some(dir) = &args.save_images {
        save_images(dir, &report)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, &archive_file);
        if pending > 0 {
            println!("({pending} job(s) still running; their results arrive in the next turn)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Tool-call events (`tool_call.started/completed/failed`, secrets redacted) go to stderr
/// as JSON lines when `TOOLCALL_LOG` is set, e.g. `TOOLCALL_LOG=info`.
pub fn init_logging() {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("TOOLCALL_LOG") else {
        return;
    };
    // Another subscriber may already be installed by the binary; keep it then.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The registry from the replay file's setup, `--pack`s (with `--pack-opt`s), `--tools`
/// files and MCP servers (`--mcp` and the tools files' `"type": "mcp"` entries), with
/// backends attached and `--enable`/`--disable` applied ([`ToolsetArgs`]'s rules).
pub async fn build_registry(
    toolset: &ToolsetArgs,
    args: &RunToolsetArgs,
    replay: Option<(&SessionFile, &Path)>,
) -> anyhow::Result<(Registry, Vec<LoadedState>)> {
    let mut registry = Registry::new();
    let mut states = Vec::new();
    let mut packs: Vec<(String, PackConfig)> = Vec::new();
    let mut tools_files: Vec<PathBuf> = Vec::new();
    if let Some((s, path)) = replay {
        let base = SessionFile::base_dir(path);
        for (name, options) in &s.setup.packs {
            let options = match options {
                Value::Object(m) => m.clone(),
                Value::Null => Map::new(),
                other => bail!("pack {name}: options must be an object, got {other}"),
            };
            packs.push((
                name.clone(),
                PackConfig {
                    base_dir: base.clone(),
                    options,
                },
            ));
        }
        tools_files.extend(s.setup.tools.iter().map(|t| base.join(t)));
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    for name in &toolset.packs {
        if !packs.iter().any(|(n, _)| n == name) {
            packs.push((
                name.clone(),
                PackConfig {
                    base_dir: cwd.clone(),
                    options: Map::new(),
                },
            ));
        }
    }
    for opt in &args.pack_opts {
        let (key, value) = opt
            .split_once('=')
            .with_context(|| format!("--pack-opt {opt:?}: expected PACK.KEY=VALUE"))?;
        let (pack, key) = key
            .split_once('.')
            .with_context(|| format!("--pack-opt {opt:?}: expected PACK.KEY=VALUE"))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        let Some((_, cfg)) = packs.iter_mut().find(|(n, _)| n == pack) else {
            bail!("--pack-opt {opt:?}: pack {pack:?} is not loaded (add --pack {pack})");
        };
        cfg.options.insert(key.to_owned(), value);
    }
    if let Some(display) = &args.display {
        let Some((_, cfg)) = packs.iter_mut().find(|(n, _)| n == "computer") else {
            bail!("--display is for the computer pack: add --pack computer");
        };
        cfg.options
            .insert("display".to_owned(), Value::String(display.clone()));
    }
    for (name, cfg) in &packs {
        let pack = load_pack(name, cfg).with_context(|| format!("loading pack {name}"))?;
        registry
            .merge(pack.registry)
            .with_context(|| format!("adding pack {name}"))?;
        if let Some(state) = pack.state {
            states.push(LoadedState {
                name: name.clone(),
                state,
            });
        }
    }
    tools_files.extend(toolset.tools.iter().cloned());
    let mut mcp_servers = args
        .mcp
        .iter()
        .map(|s| parse_mcp_flag(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for file in &tools_files {
        let loading = || format!("loading tools file {}", file.display());
        let doc = toolcall_core::tools_file::read_tools_document(file).with_context(loading)?;
        let r = Registry::from_tools_json(&doc).with_context(loading)?;
        registry
            .merge(r)
            .with_context(|| format!("adding tools from {}", file.display()))?;
        mcp_servers.extend(
            toolcall_core::tools_file::mcp_servers_from_tools_json(&doc).with_context(loading)?,
        );
    }
    toolcall_run::backend::attach_backends(&mut registry)
        .context("attaching program/HTTP backends")?;
    if !mcp_servers.is_empty() {
        let options = toolcall_mcp::ConnectOptions::default();
        let mcp = toolcall_mcp::connect_all(&mcp_servers, &options).await?;
        registry.merge(mcp).context("adding MCP servers' tools")?;
    }
    toolset.apply_switches(&mut registry)?;
    Ok((registry, states))
}

/// `--mcp NAME=URL` or `--mcp NAME=PROGRAM ARG…` (split on whitespace; no shell).
fn parse_mcp_flag(flag: &str) -> anyhow::Result<McpServer> {
    let (name, target) = flag
        .split_once('=')
        .with_context(|| format!("--mcp {flag:?}: expected NAME=COMMAND or NAME=URL"))?;
    if !toolcall_core::tools_file::is_valid_mcp_server_name(name) {
        bail!("--mcp {flag:?}: NAME must be 1-64 letters, digits, '_' or '-'");
    }
    let target = target.trim();
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok(McpServer::Http {
            name: name.to_owned(),
            url: target.to_owned(),
            headers: Default::default(),
        });
    }
    let argv: Vec<String> = target.split_whitespace().map(str::to_owned).collect();
    if argv.is_empty() {
        bail!("--mcp {flag:?}: no command after '='");
    }
    Ok(McpServer::Stdio {
        name: name.to_owned(),
        argv,
        env: Default::default(),
    })
}

/// Asks on the terminal before a tool that requires approval runs.
struct TtyApprover;

#[async_trait]
impl Approver for TtyApprover {
    async fn approve(&self, call: &ToolCall, spec: &ToolSpec) -> bool {
        let question = format!(
            "Run {} [{}] with {}? [y/N] ",
            spec.name,
            call.call_id,
            toolcall_run::redact::redact(&call.arguments)
        );
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
        })
        .await
        .unwrap_or(false)
    }
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

fn print_report(report: &TurnReport, archive: &Path) {
    if let Some(id) = &report.session_id {
        println!("session {id} (archive {})", archive.display());
    }
    let last = report.rounds.len().saturating_sub(1);
    for (i, round) in report.rounds.iter().enumerate() {
        // A closing round without calls is the final reply, printed below.
        if i == last
            && round.calls.is_empty()
            && round.job_results.is_empty()
            && !report.hit_round_limit
            && !report.breaker_tripped
        {
            break;
        }
        println!("\n── round {}", i + 1);
        for r in &round.job_results {
            println!(
                "  job result {} [{}]: {}",
                r.name,
                r.call_id,
                outcome_line(r)
            );
        }
        for r in &round.reasoning {
            println!("  reasoning: {}", shorten(r, 200));
        }
        if let Some(t) = round
            .assistant_text
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            println!("  assistant: {}", shorten(t.trim(), 500));
        }
        for d in &round.diagnostics {
            println!("  parser {:?}: {}", d.level, d.message);
        }
        for (call, result) in round.calls.iter().zip(&round.results) {
            println!(
                "  call {} [{}] via {}",
                call.name, call.call_id, call.origin.format
            );
            println!(
                "    arguments: {}",
                shorten(
                    &toolcall_run::redact::redact(&call.arguments).to_string(),
                    300
                )
            );
            for rep in &call.origin.repairs {
                println!("    repaired ({}): {}", rep.kind, rep.message);
            }
            println!("    validation: {}", validation_line(result));
            println!("    → {}", outcome_line(result));
        }
        print_action_response(report, round);
    }
    println!("\n── final reply");
    println!(
        "{}",
        report.final_text.as_deref().unwrap_or("(no text)").trim()
    );
    if report.hit_round_limit {
        println!("(round limit reached: the final reply was asked for without tools)");
    }
    if report.breaker_tripped {
        println!("(a call failed identically 3 times: tool calls were stopped)");
    }
}

/// Seed 001's client protocol for action responses: each command payload on its own line
/// prefixed `__MCP__` (unindented, for a client to pick up), the text for speech.
fn print_action_response(report: &TurnReport, round: &toolcall_run::agent::RoundReport) {
    if !round
        .calls
        .iter()
        .any(|c| c.origin.format == "action_response")
    {
        return;
    }
    let parsed = toolcall_core::Parsed {
        text: round.assistant_text.clone().unwrap_or_default(),
        calls: round.calls.clone(),
        ..Default::default()
    };
    let session = report.session_id.as_deref().unwrap_or("default");
    let out = toolcall_packs::apps::respond(&parsed, &round.results, session);
    for line in &out.mcp_lines {
        println!("{line}");
    }
    if !out.speech.is_empty() {
        println!("  speech: {}", out.speech);
    }
}

fn validation_line(r: &toolcall_core::ToolResult) -> &'static str {
    use toolcall_core::ErrorCode::*;
    match &r.outcome {
        Err(e) if e.code == UnknownTool => "rejected: unknown tool, not run",
        Err(e) if e.code == ToolDisabled => "rejected: tool disabled, not run",
        Err(e) if e.code == InvalidArguments => {
            "rejected: arguments do not match the schema, not run"
        }
        Err(e) if e.code == Cancelled => "not run: stopped by the repeat-failure breaker",
        _ => "valid",
    }
}

fn outcome_line(r: &toolcall_core::ToolResult) -> String {
    match &r.outcome {
        Ok(out) => {
            let mut data = out.data.clone();
            let _ = toolcall_run::client::images::take_images(&mut data);
            format!("ok {}", shorten(&data.to_string(), 300))
        }
        Err(e) => format!("error {}: {}", e.code, shorten(&e.message, 300)),
    }
}

/// Writes images in results to `dir/<call_id>.png` (`-N` suffixes for several per call).
fn save_images(dir: &Path, report: &TurnReport) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let results = report
        .rounds
        .iter()
        .flat_map(|r| r.results.iter().chain(&r.job_results));
    for r in results {
        let Ok(out) = &r.outcome else { continue };
        // The call id is the model's: keep only filename-safe characters.
        let stem: String = r
            .call_id
            .as_str()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            .take(100)
            .collect();
        let stem = if stem.is_empty() { "call".into() } else { stem };
        for (i, img) in find_images(&out.data).iter().enumerate() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(img.data.trim())
                .with_context(|| format!("image of call {} is not base64", r.call_id))?;
            let ext = img.media_type.strip_prefix("image/").unwrap_or("png");
            let ext: String = ext.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            let name = if i == 0 {
                format!("{stem}.{ext}")
            } else {
                format!("{stem}-{i}.{ext}")
            };
            let path = dir.join(name);
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}
