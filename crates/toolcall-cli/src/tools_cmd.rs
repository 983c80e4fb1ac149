//! `toolcall tools`: list the tools of a toolset, render them for a provider (O-1) or as
//! system-prompt instructions (O-2), and check a call against them (V-1, V-3).

use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Subcommand;
use serde_json::{Value, json};
use std::time::Duration;
use toolcall_core::render::{self, Provider};

use toolcall_core::{
    Backend, ErrorCode, Registry, ToolCall, ToolContext, ToolError, ToolKind, ToolResult,
};

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
        /// Also run the tool (its pack implementation or program/HTTP backend) and print
        /// the result.
        #[arg(long)]
        run: bool,
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
            toolset,
        } => check(&toolset, name, &arguments, run).await,
    }
}

fn list(toolset: &ToolsetArgs, as_json: bool) -> anyhow::Result<ExitCode> {
    let registry = toolset.load_specs()?.registry;
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

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

fn render_cmd(toolset: &ToolsetArgs, provider: &str) -> anyhow::Result<ExitCode> {
    let registry = toolset.load_specs()?.registry;
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

async fn check(
    toolset: &ToolsetArgs,
    name: String,
    arguments: &str,
    run: bool,
) -> anyhow::Result<ExitCode> {
    let registry = if run {
        toolset.load()?.registry
    } else {
        toolset.load_specs()?.registry
    };
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
    if run {
        let result = run_one(&registry, &call).await;
        if !result.is_ok() {
            code = ExitCode::FAILURE;
        }
        out["result"] = result.to_json();
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(code)
}

/// Runs one validated call with the tool's timeout (30 s by default).
async fn run_one(registry: &Registry, call: &ToolCall) -> ToolResult {
    let fail = |e: ToolError| ToolResult::err(call.call_id.clone(), &call.name, e);
    let Some(entry) = registry.get(&call.name) else {
        return fail(ToolError::new(ErrorCode::UnknownTool, "no such tool"));
    };
    let Some(handler) = entry.handler.clone() else {
        return fail(ToolError::failed(format!(
            "tool {:?} has no implementation or backend in this toolset",
            call.name
        )));
    };
    let limit = entry.spec.timeout.unwrap_or(Duration::from_secs(30));
    let ctx = ToolContext::for_call(call.call_id.clone());
    match tokio::time::timeout(limit, handler.call(&ctx, call.arguments.clone())).await {
        Ok(Ok(output)) => ToolResult::ok(call.call_id.clone(), &call.name, output),
        Ok(Err(e)) => fail(e),
        Err(_) => fail(ToolError::new(
            ErrorCode::Timeout,
            format!("no result within {} ms", limit.as_millis()),
        )),
    }
}
