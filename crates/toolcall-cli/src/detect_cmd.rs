//! `toolcall detect FILE`: which family a chat template writes its calls in, its reasoning
//! markers, and whether it opens `<think>` itself. A thin shell over
//! `toolcall_parse::detect_file_text`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolcall_parse::{TemplateInfo, detect_file_text, detect_template};

#[derive(clap::Args)]
pub struct DetectArgs {
    /// A `tokenizer_config.json` (its `chat_template`, and `response_template` when present)
    /// or a `.jinja` chat template.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: DetectArgs) -> anyhow::Result<ExitCode> {
    let text = tokio::fs::read_to_string(&args.file)
        .await
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let jinja = args
        .file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jinja"));
    let info = if jinja {
        detect_template(&text)
    } else {
        detect_file_text(&text)
    }
    .with_context(|| format!("in {}", args.file.display()))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&info)?)?;
    } else {
        write_human(&info, &mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_human(info: &TemplateInfo, out: &mut impl Write) -> std::io::Result<()> {
    match &info.family {
        Some(f) => writeln!(
            out,
            "family:          {f} (decided by {})",
            info.decided_by.join(", ")
        )?,
        None => writeln!(
            out,
            "family:          unknown (no family's call markers found; parse with auto)"
        )?,
    }
    if info.reasoning.is_empty() {
        writeln!(out, "reasoning:       none found")?;
    }
    for r in &info.reasoning {
        writeln!(out, "reasoning:       {} … {}", r.open, r.close)?;
    }
    let opens = if info.opens_reasoning {
        "yes (parse with --starts-in-reasoning)"
    } else {
        "no"
    };
    writeln!(out, "opens <think>:   {opens}")?;
    writeln!(out, "templates read:  {}", info.templates.join(", "))
}
