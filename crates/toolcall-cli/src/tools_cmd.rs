//! `toolcall tools`: list the tools of a toolset, render them for a provider (O-1) or as
//! system-prompt instructions (O-2), and check a call against them (V-1, V-3).

use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Subcommand;
use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::render::{self, Provider};
use toolcall_core::{Backend, ToolCall, ToolKind};
use toolcall_run::{Executor, SessionContext};

use crate::approve::approver;
use crate::display::first_line;
use crate::toolset::ToolsetArgs;

#[derive(clap::Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    command: ToolsCommand,
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// List the tools: name, enabled, kind, backend, description.
    List {
        #[command(flatten)]
        toolset: ToolsetArgs,
        /// Print the tool specs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the enabled tools for a provider, or the system-prompt instructions of a text
    /// format.
    Render {
        /// openai | responses | gemini | anthropic | prompt:FORMAT (tools_envelope, hermes,
        /// key_value, call_syntax, pythonic, mistral, llama, json, action_response).
        #[arg(long)]
        provider: String,
        #[command(flatten)]
        toolset: ToolsetArgs,
    },
    /// Validate a call against the toolset, printing the checked arguments and any repairs.
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
    },
}

pub async fn run(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ToolsCommand::List { toolset, json } => list(&toolset, json),
        ToolsCommand::Render { provider, toolset } => render_cmd(&toolset, &provider),
        ToolsCommand::Check {
            name,
            arguments,
            run,
            yes,
            toolset,
        } => check(&toolset, name, &arguments, run.then_some(yes)).await,
    }
}

fn list(toolset: &ToolsetArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let registry = toolset.load()?.registry;
    if as_json {
        let specs: Vec<_> = registry.specs().collect();
        println!("{}", serde_json::to_string_pretty(&specs)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 5]> = registry
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
                match &s.backend {
                    Some(Backend::Program { .. }) => "program",
                    Some(Backend::Http { .. }) => "http",
                    None => "-",
                }
                .to_owned(),
                first_line(&s.description, 70),
            ]
        })
        .collect();
    let header = ["NAME", "ENABLED", "KIND", "BACKEND", "DESCRIPTION"].map(str::to_owned);
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

fn render_cmd(toolset: &ToolsetArgs, provider: &str) -> anyhow::Result<ExitCode> {
    let registry = toolset.load()?.registry;
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
    name: String,
    arguments: &str,
    run: Option<bool>,
) -> anyhow::Result<ExitCode> {
    let registry = toolset.load()?.registry;
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
