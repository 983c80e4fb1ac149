//! `toolcall parse` and `toolcall formats`: a thin shell over `toolcall_parse`.
//!
//! Output contract (the Python package's `parse` and `StreamParser` give the same shapes):
//! one JSON object `{"text","calls":[CALL],"diagnostics":[{"level","message","span"}],
//! "reasoning":[block, ...]}`, a call being `{"call_id","name","arguments","format","span",
//! "repairs"}`; with `--stream`, one JSON line per parser event as input arrives, a
//! `call_finished` event carrying its call in that same shape. Zero calls is success.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use toolcall_core::{Parsed, Registry, StreamEvent};
use toolcall_parse::{
    FormatId, FormatSelection, ParseOptions, ReplyEnd, StreamParser, formats as all_formats,
};

#[derive(clap::Args)]
pub struct ParseArgs {
    /// `auto`, a format id, or a comma-separated priority list (see `toolcall formats`).
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: FormatSelection,
    /// The model that wrote the output: its family is chosen by name (`toolcall parse --model
    /// Qwen/Qwen3-Coder-30B-A3B-Instruct`); an unknown name means auto.
    #[arg(long, value_name = "NAME", conflicts_with = "format")]
    model: Option<String>,
    /// Tools file: an OpenAI Chat `tools` array, a Responses `tools` array, or a list of
    /// `{name, description, parameters}`.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Fallback rules file (JSON list of `{tool, rule, argument, ...}`); off unless given.
    #[arg(long, value_name = "FILE")]
    fallbacks: Option<PathBuf>,
    /// Read standard input as it arrives and print events as JSON lines.
    #[arg(long)]
    stream: bool,
    /// The reply starts inside a reasoning block (the chat template opened `<think>`).
    #[arg(long)]
    starts_in_reasoning: bool,
    /// How the reply ended: the server's `finish_reason` (`stop`, `tool_calls`, `length`,
    /// `max_tokens`, ...). A call whose closing marker is missing at the end is a call when
    /// the model stopped, truncated when the reply was cut (`length`); unknown (the default)
    /// reads as stopped.
    #[arg(long, value_name = "REASON")]
    finish_reason: Option<String>,
    /// Calls written inside reasoning: `ignore` (drafts), or `take_if_none_after` (taken
    /// when the reply makes no call after them). Default: the family's (Qwen3-Coder XML
    /// takes them; auto mode ignores them).
    #[arg(long, value_name = "ignore|take_if_none_after")]
    reasoning_calls: Option<toolcall_parse::ReasoningCalls>,
    /// Model output to parse; `-` or absent for standard input.
    #[arg(value_name = "FILE|-")]
    input: Option<PathBuf>,
}

fn parse_format(s: &str) -> Result<FormatSelection, String> {
    FormatSelection::from_name(s).map_err(|e| e.to_string())
}

pub async fn run(args: ParseArgs) -> anyhow::Result<ExitCode> {
    let format = match &args.model {
        Some(name) => {
            match toolcall_parse::model_family(name) {
                None => {
                    eprintln!("toolcall: no family known for model {name:?}; parsing in auto mode")
                }
                Some(m) if FormatId::from_name(m.family).is_none() => eprintln!(
                    "toolcall: model {name:?} writes the {} format, which this build does not read; parsing in auto mode",
                    m.family
                ),
                Some(_) => {}
            }
            FormatSelection::for_model(name)
        }
        None => args.format,
    };
    let mut options = ParseOptions {
        format,
        starts_in_reasoning: args.starts_in_reasoning,
        reply_end: args
            .finish_reason
            .as_deref()
            .map_or(ReplyEnd::Unknown, ReplyEnd::from_finish_reason),
        reasoning_calls: args.reasoning_calls,
        ..ParseOptions::default()
    };
    if let Some(path) = &args.tools {
        options.tools = Some(Arc::new(
            Registry::from_tools_file(path)
                .with_context(|| format!("tools file {}", path.display()))?,
        ));
    }
    if let Some(path) = &args.fallbacks {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read fallback rules {}", path.display()))?;
        options.fallbacks = toolcall_parse::load_fallback_rules(&text)
            .with_context(|| format!("in {}", path.display()))?;
    }
    let from_stdin = args.input.as_deref().is_none_or(|p| p == Path::new("-"));
    let mut reader: Box<dyn tokio::io::AsyncRead + Unpin> = if from_stdin {
        Box::new(tokio::io::stdin())
    } else {
        let path = args.input.as_deref().unwrap_or(Path::new("-"));
        Box::new(
            tokio::fs::File::open(path)
                .await
                .with_context(|| format!("cannot read {}", path.display()))?,
        )
    };
    // Past the parser's input limit the rest is not even read (bounded memory).
    let limit = options.limits.max_input_bytes;
    let mut parser = StreamParser::new(options);
    let mut stdout = std::io::stdout().lock();
    let mut parsed = Parsed::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut offset = 0usize;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = reader
            .read(&mut chunk)
            .await
            .context("cannot read the input")?;
        if n == 0 {
            break;
        }
        pending.extend_from_slice(&chunk[..n]);
        let valid = match std::str::from_utf8(&pending) {
            Ok(_) => pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(e) => bail!(
                "input is not valid UTF-8 (at byte {})",
                offset + e.valid_up_to()
            ),
        };
        let text = std::str::from_utf8(&pending[..valid]).unwrap_or_default();
        let events = parser.push(text);
        offset += valid;
        pending.drain(..valid);
        emit(events, args.stream, &mut stdout, &mut parsed)?;
        if offset > limit {
            pending.clear();
            break;
        }
    }
    if !pending.is_empty() {
        bail!("input is not valid UTF-8 (truncated character at byte {offset})");
    }
    emit(parser.finish(), args.stream, &mut stdout, &mut parsed)?;
    if !args.stream {
        writeln!(stdout, "{}", render(&parsed))?;
    }
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn emit(
    events: Vec<StreamEvent>,
    stream: bool,
    out: &mut impl Write,
    parsed: &mut Parsed,
) -> anyhow::Result<()> {
    for e in events {
        if stream {
            writeln!(out, "{}", event_json(&e)?)?;
            continue;
        }
        match e {
            StreamEvent::Text { text } => parsed.text.push_str(&text),
            StreamEvent::Reasoning { text } => parsed.reasoning.push(text),
            StreamEvent::CallFinished { call, .. } => parsed.calls.push(call),
            StreamEvent::Diagnostic { diagnostic } => parsed.diagnostics.push(diagnostic),
            StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
        }
    }
    if stream {
        out.flush()?;
    }
    Ok(())
}

/// A call as every output shows it: flat, its origin's format, span and repairs beside its
/// name and arguments.
fn call_json(c: &toolcall_core::ToolCall) -> Value {
    json!({
        "call_id": c.call_id,
        "name": c.name,
        "arguments": c.arguments,
        "format": c.origin.format,
        "span": [c.origin.span.start, c.origin.span.end],
        "repairs": c.origin.repairs,
    })
}

/// One `--stream` line: the event as serialised, its call (if any) in [`call_json`]'s shape.
fn event_json(e: &StreamEvent) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(e)?;
    if let StreamEvent::CallFinished { call, .. } = e {
        v["call"] = call_json(call);
    }
    Ok(v)
}

/// The documented output object.
fn render(p: &Parsed) -> Value {
    json!({
        "text": p.text,
        "calls": p.calls.iter().map(call_json).collect::<Vec<_>>(),
        "diagnostics": p.diagnostics,
        "reasoning": p.reasoning,
    })
}

pub async fn formats() -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    for f in all_formats() {
        writeln!(out, "{:<16} {}", f.id, f.description)?;
        writeln!(out, "{:<16} e.g. {}", "", f.example)?;
    }
    Ok(ExitCode::SUCCESS)
}
