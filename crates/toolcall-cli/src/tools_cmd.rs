//! `toolcall tools`: list the tools of a toolset, render them for a provider (O-1) or as
//! system-prompt instructions (O-2), and check a call against them (V-1, V-3).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Subcommand;
use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::render::{self, NameMap, Provider};
use toolcall_core::{Backend, Registry, ToolCall, ToolKind};
use toolcall_run::{Executor, SessionContext};

use crate::approve::approver;
use crate::display::first_line;
use crate::toolset::{McpServerArgs, ToolsetArgs, load_with_mcp_servers};
use toolcall_packs::toolset::ToolsetSpec;

#[derive(clap::Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    command: ToolsCommand,
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// List the tools: name, enabled, kind, backend, the name sent to providers,
    /// description. MCP servers (`--mcp`, tools files' MCP entries) are started and their
    /// tools listed as `SERVER.tool`.
    List {
        #[command(flatten)]
        toolset: ToolsetArgs,
        #[command(flatten)]
        mcp: McpServerArgs,
        /// Print the tool specs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the enabled tools for a provider, or the system-prompt instructions of a text
    /// format. MCP servers' tools are included (`SERVER.tool`, sent under their provider
    /// names).
    Render {
        /// openai | responses | gemini | anthropic | prompt:FORMAT (tools_envelope, hermes,
        /// key_value, call_syntax, pythonic, mistral, llama, json, action_response).
        #[arg(long)]
        provider: String,
        #[command(flatten)]
        toolset: ToolsetArgs,
        #[command(flatten)]
        mcp: McpServerArgs,
    },
    /// Validate a call against the toolset (MCP servers' tools included, by id), printing
    /// the checked arguments and any repairs.
    Check {
        /// The tool id.
        name: String,
        /// The arguments, as JSON.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Also run the tool (its pack implementation or program/HTTP backend) through the
        /// executor, as `toolcall run` would, and print the result.
        #[arg(long)]
        run: bool,
        /// With --run: approve a tool that requires approval (otherwise asked on a terminal,
        /// denied when stdin is not one).
        #[arg(long, requires = "run")]
        yes: bool,
        #[command(flatten)]
        toolset: ToolsetArgs,
        #[command(flatten)]
        mcp: McpServerArgs,
    },
}

pub async fn run(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ToolsCommand::List { toolset, mcp, json } => list(&toolset, &mcp, json).await,
        ToolsCommand::Render {
            provider,
            toolset,
            mcp,
        } => render_cmd(&toolset, &mcp, &provider).await,
        ToolsCommand::Check {
            name,
            arguments,
            run,
            yes,
            toolset,
            mcp,
        } => check(&toolset, &mcp, name, &arguments, run.then_some(yes)).await,
    }
}

/// The toolset the options give, MCP servers' tools included, and which server each of
/// those comes from (tool id → server name).
async fn load(
    toolset: &ToolsetArgs,
    mcp: &McpServerArgs,
) -> anyhow::Result<(Registry, BTreeMap<String, String>)> {
    let spec = toolset.spec(ToolsetSpec::default())?;
    if spec.is_empty() && mcp.mcp.is_empty() {
        bail!("no tools: give --tools FILE, --pack NAME or --mcp NAME=...");
    }
    let (loaded, origins) = load_with_mcp_servers(&spec, mcp.servers()?).await?;
    Ok((loaded.registry, origins))
}

async fn list(
    toolset: &ToolsetArgs,
    mcp: &McpServerArgs,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let (registry, mcp_origins) = load(toolset, mcp).await?;
    // The aliases every provider gets for ids they forbid (`calc.add` -> `calc_add`).
    let names = NameMap::new(&registry);
    if as_json {
        let mut specs = Vec::new();
        for s in registry.specs() {
            let mut v = serde_json::to_value(s)?;
            v["provider_name"] = json!(names.to_provider(&s.name));
            if let Some(server) = mcp_origins.get(&s.name) {
                v["mcp_server"] = json!(server);
            }
            specs.push(v);
        }
        println!("{}", serde_json::to_string_pretty(&specs)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 6]> = registry
        .specs()
        .map(|s| {
            [
                s.name.clone(),
                if s.enabled { "yes" } else { "no" }.to_owned(),
                match s.kind {
                    ToolKind::Immediate => "immediate",
                    ToolKind::Job => "job",
                }
                .to_owned(),
                match (&s.backend, mcp_origins.get(&s.name)) {
                    (_, Some(server)) => format!("mcp:{server}"),
                    (Some(Backend::Program { .. }), None) => "program".to_owned(),
                    (Some(Backend::Http { .. }), None) => "http".to_owned(),
                    (None, None) => "-".to_owned(),
                },
                names.to_provider(&s.name).into_owned(),
                first_line(&s.description, 70),
            ]
        })
        .collect();
    let header = [
        "NAME",
        "ENABLED",
        "KIND",
        "BACKEND",
        "PROVIDER_NAME",
        "DESCRIPTION",
    ]
    .map(str::to_owned);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        println!("{}", line.trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

async fn render_cmd(
    toolset: &ToolsetArgs,
    mcp: &McpServerArgs,
    provider: &str,
) -> anyhow::Result<ExitCode> {
    let (registry, _) = load(toolset, mcp).await?;
    if let Some(format) = provider.strip_prefix("prompt:") {
        let id = toolcall_parse::FormatId::from_name(format).ok_or_else(|| {
            let ids: Vec<&str> = toolcall_parse::text_formats()
                .iter()
                .map(|f| f.as_str())
                .collect();
            anyhow!(
                "unknown text format {format:?}; expected one of {}",
                ids.join(", ")
            )
        })?;
        print!("{}", toolcall_parse::render_prompt(&registry, id)?);
        return Ok(ExitCode::SUCCESS);
    }
    let provider: Provider = provider
        .parse()
        .map_err(|e: String| anyhow!("{e}, or prompt:FORMAT"))?;
    let (tools, names) = render::render(&registry, provider);
    println!("{}", serde_json::to_string_pretty(&tools)?);
    // The aliases go to stderr so stdout stays the exact JSON to send.
    for spec in registry.enabled_specs() {
        let alias = names.to_provider(&spec.name);
        if alias != spec.name {
            eprintln!("note: {:?} is sent as {alias:?}", spec.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Validates a call; with `run` (`Some(approve_all)`), runs it through the executor.
async fn check(
    toolset: &ToolsetArgs,
    mcp: &McpServerArgs,
    name: String,
    arguments: &str,
    run: Option<bool>,
) -> anyhow::Result<ExitCode> {
    let (registry, _) = load(toolset, mcp).await?;
    let arguments: Value = serde_json::from_str(arguments)
        .with_context(|| format!("the arguments are not JSON: {arguments}"))?;
    let mut call = ToolCall::new(name, arguments, "cli");
    if let Err(e) = registry.validate_call(&mut call) {
        println!("{}", serde_json::to_string_pretty(&json!({"error": e}))?);
        return Ok(ExitCode::FAILURE);
    }
    let mut out = json!({
        "status": "valid",
        "name": call.name,
        "arguments": call.arguments,
        "repairs": call.origin.repairs,
    });
    let mut code = ExitCode::SUCCESS;
    if let Some(yes) = run {
        let executor = Executor::new(Arc::new(registry)).with_approver(approver(yes));
        let timed = executor.execute_one(call, &SessionContext::default()).await;
        if !timed.result.is_ok() {
            code = ExitCode::FAILURE;
        }
        out["result"] = timed.result.to_json();
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(code)
}
