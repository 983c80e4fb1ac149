//! `toolcall run`: one turn of the agent loop against a model server or a recorded session,
//! printed as it happens by [`crate::run_printer`] (or as JSON lines of its events with
//! `--json`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use base64::Engine;
use futures::StreamExt;
use serde_json::{Map, Value};
use toolcall_core::Registry;
use toolcall_packs::toolset::ToolsetSpec;
use toolcall_packs::{PackConfig, PackState, RoundOutput};
use toolcall_run::client::images::find_images;
use toolcall_run::{
    Agent, AgentConfig, AgentEvent, Api, ApiClient, Executor, Mode, ModelClient, ReplayClient,
    SessionFile, TurnReport,
};

use crate::approve::approver;
use crate::display::shorten;
use crate::run_printer::{Printer, Style};
use crate::sessions_cmd::{archive_location, open_archive};
use crate::toolset::{McpServerArgs, ToolsetArgs, load_runnable_with_mcp};

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    toolset: ToolsetArgs,
    #[command(flatten)]
    mcp: McpServerArgs,
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
    /// Which API the server speaks: chat (`/v1/chat/completions`: OpenAI, Ollama, vLLM,
    /// llama.cpp server, LM Studio), responses (`/v1/responses`), anthropic
    /// (`/v1/messages`), gemini (`/v1beta/models/NAME:generateContent`; give the base URL
    /// with `/v1beta`).
    #[arg(long, default_value = "chat", value_parser = parse_api)]
    api: Api,
    /// Environment variable holding the API key (sent as the API sends keys: a bearer
    /// token, `x-api-key`, `x-goog-api-key`).
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
    /// Session archive: a file or a `postgres://` URL [default: $TOOLCALL_ARCHIVE or
    /// ./toolcall-sessions.sqlite].
    #[arg(long, value_name = "LOCATION")]
    archive: Option<String>,
    /// Continue an archived session (its conversation and pack states).
    #[arg(long, value_name = "SESSION_ID")]
    resume: Option<String>,
    /// Write every image found in results to DIR/<call_id>.png.
    #[arg(long = "save-images", value_name = "DIR")]
    save_images: Option<PathBuf>,
    /// Approve every tool that requires approval.
    #[arg(long)]
    yes: bool,
    /// Print the turn's events as JSON lines, as they happen: one object per line tagged by
    /// "event" (secrets redacted); the last, `turn_finished`, carries the turn report.
    #[arg(long)]
    json: bool,
    /// The user's message [default: the replay file's prompt].
    prompt: Option<String>,
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
    let base = match (&session, &args.replay) {
        (Some(s), Some(path)) => session_setup(s, path)?,
        _ => ToolsetSpec::default(),
    };
    let toolset = load_runnable_with_mcp(&args.toolset.spec(base)?, &args.mcp).await?;
    let on_end = toolset.on_end;
    let outcome = run_loaded(
        &args,
        session,
        toolset.registry,
        toolset.pack_states,
        toolset.round_outputs,
    )
    .await;
    // What the packs started (apps) ends with this run, whatever its outcome.
    for end in &on_end {
        end.end().await;
    }
    outcome
}

/// The run, once the packs and tools are loaded.
async fn run_loaded(
    args: &RunArgs,
    session: Option<SessionFile>,
    registry: Registry,
    states: Vec<(String, Arc<dyn PackState>)>,
    round_outputs: Vec<Arc<dyn RoundOutput>>,
) -> anyhow::Result<ExitCode> {
    let registry = Arc::new(registry);

    let client: Arc<dyn ModelClient> = match (&session, &args.model) {
        (Some(s), _) => Arc::new(ReplayClient::new(s)),
        (None, Some(url)) => {
            let name = args.model_name.clone().unwrap_or_default();
            let mut c = ApiClient::new(args.api, url, name)?.streaming(args.stream);
            if let Some(var) = &args.api_key_env {
                c = c.with_api_key_env(var)?;
            }
            Arc::new(c)
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

    let executor = Arc::new(Executor::new(registry.clone()).with_approver(approver(args.yes)));
    // Without --format, the model's name picks its family, by the same table as
    // `toolcall serve` and `toolcall parse` (unknown names: every format is tried).
    let text_format = args.format.clone().or_else(|| {
        args.model_name
            .as_deref()
            .and_then(toolcall_run::agent::text_format_for_model)
    });
    let config = AgentConfig {
        mode,
        max_rounds: args.max_rounds,
        text_format,
        await_jobs_before_request: session.is_some(),
        ..AgentConfig::default()
    };
    let mut agent = Agent::new(client, executor.clone(), config);

    let archive_at = archive_location(args.archive.clone(), None);
    let archive = Arc::new(open_archive(&archive_at)?);
    match &args.resume {
        Some(id) => {
            agent.archive_resume(archive.clone(), id)?;
            for (name, state) in &states {
                if let Some(snap) = archive.load_state(id, name)? {
                    state
                        .restore(snap)
                        .with_context(|| format!("restoring pack {name}"))?;
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
    for (name, state) in &states {
        let state = state.clone();
        agent.add_state_saver(name.clone(), Arc::new(move || state.snapshot()));
    }

    let style = if args.json {
        Style::JsonLines
    } else {
        Style::Human {
            archive: toolcall_run::archive::redact_url(&archive_at),
            hooks: round_outputs,
        }
    };
    let mut printer = Printer::new(std::io::stdout(), style);
    let mut report = None;
    let mut events = agent.run_turn_stream(prompt);
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                printer.finish()?;
                return Err(e.into());
            }
        };
        printer.event(&event)?;
        if let AgentEvent::TurnFinished { report: r } = event {
            report = Some(r);
        }
    }
    drop(events);
    let report = report.context("the turn ended without its report")?;
    let pending = executor.pending_jobs().await;

    if let Some(dir) = &args.save_images {
        save_images(dir, &report)?;
    }
    if pending > 0 && !args.json {
        println!("({pending} job(s) still running; their results arrive in the next turn)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--api`: a dialect registered in `toolcall-wire`.
fn parse_api(name: &str) -> Result<Api, String> {
    name.parse::<Api>().map_err(|e| e.to_string())
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

/// A recorded session's setup as a toolset: its packs (options as given) and tools files,
/// relative paths resolving against the session file's folder.
fn session_setup(session: &SessionFile, path: &Path) -> anyhow::Result<ToolsetSpec> {
    let base = SessionFile::base_dir(path);
    let mut spec = ToolsetSpec::default();
    for (name, options) in &session.setup.packs {
        let options = match options {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            other => bail!("pack {name}: options must be an object, got {other}"),
        };
        spec.packs.push((
            name.clone(),
            PackConfig {
                base_dir: base.clone(),
                options,
            },
        ));
    }
    spec.tools_files
        .extend(session.setup.tools.iter().map(|t| base.join(t)));
    Ok(spec)
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
