//! `toolcall constrain`: prints the decoding constraint for a family and a tools file.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use toolcall_constrain::{Dialect, Options, ToolChoice};
use toolcall_core::{Registry, ToolSpec};

#[derive(Debug, Args)]
pub struct ConstrainArgs {
    /// The family whose call markup to constrain to (`toolcall formats`).
    #[arg(long)]
    format: String,
    /// Tools file (OpenAI, Anthropic, Gemini or toolcall's own tool list).
    #[arg(long)]
    tools: PathBuf,
    /// structural_tag (vLLM, SGLang), gbnf (llama.cpp), lark (llguidance), json_schema.
    #[arg(long, default_value = "gbnf")]
    dialect: String,
    /// auto, required, none, or a tool's name (forces that tool).
    #[arg(long, default_value = "auto")]
    tool_choice: String,
    /// Allow one call only (`parallel_tool_calls: false`).
    #[arg(long)]
    single_call: bool,
    /// A literal every call must start with (the gateway's emulation trigger).
    #[arg(long)]
    trigger: Option<String>,
}

pub async fn run(args: ConstrainArgs) -> anyhow::Result<ExitCode> {
    let dialect: Dialect = args.dialect.parse()?;
    let registry = Registry::from_tools_file(&args.tools)
        .with_context(|| format!("reading {}", args.tools.display()))?;
    let tools: Vec<ToolSpec> = registry.enabled_specs().cloned().collect();
    let options = Options {
        choice: ToolChoice::parse(&args.tool_choice),
        parallel: !args.single_call,
        trigger: args.trigger,
    };
    let constraint = toolcall_constrain::build(&args.format, &tools, dialect, &options)?;
    let text = match constraint.response_format() {
        Some(v) if dialect == Dialect::StructuralTag => serde_json::to_string_pretty(&v)?,
        _ => match &constraint.body {
            toolcall_constrain::Body::Grammar(s) => s.clone(),
            toolcall_constrain::Body::Json(v) => serde_json::to_string_pretty(v)?,
        },
    };
    // A closed pipe (`| head`) is the reader's choice, not a failure.
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", text.trim_end()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
