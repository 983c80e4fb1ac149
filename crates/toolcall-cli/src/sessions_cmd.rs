//! `toolcall sessions list|show ID`: reads the session archive.
//!
//! The archive is `--archive PATH`, else `$TOOLCALL_ARCHIVE`, else
//! `toolcall-sessions.sqlite` in the current directory (the same rule as `toolcall run`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolcall_run::Archive;
use toolcall_run::client::Message;

use crate::display::shorten;

/// Archive file used when neither `--archive` nor `$TOOLCALL_ARCHIVE` is given.
pub const DEFAULT_ARCHIVE: &str = "toolcall-sessions.sqlite";

/// Where the archive lives.
pub fn archive_path(explicit: Option<PathBuf>) -> PathBuf {
    explicit
        .or_else(|| {
            std::env::var_os("TOOLCALL_ARCHIVE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ARCHIVE))
}

#[derive(clap::Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(clap::Subcommand)]
enum SessionsCommand {
    /// List archived sessions, newest first.
    List(Common),
    /// Show one session: its messages, calls and results.
    Show {
        /// Session id (from `toolcall sessions list`).
        id: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args)]
struct Common {
    /// Archive file [default: $TOOLCALL_ARCHIVE or ./toolcall-sessions.sqlite].
    #[arg(long)]
    archive: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn open(path: Option<PathBuf>) -> anyhow::Result<Archive> {
    let path = archive_path(path);
    anyhow::ensure!(
        path.exists(),
        "no session archive at {} (set --archive or $TOOLCALL_ARCHIVE)",
        path.display()
    );
    Archive::open(&path).with_context(|| format!("opening {}", path.display()))
}

pub async fn run(args: SessionsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        SessionsCommand::List(c) => {
            let sessions = open(c.archive)?.list_sessions()?;
            if c.json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else if sessions.is_empty() {
                println!("no sessions");
            } else {
                for s in sessions {
                    println!(
                        "{}  {}  {} messages, {} calls  {}",
                        s.id, s.created_at, s.messages, s.calls, s.description
                    );
                }
            }
        }
        SessionsCommand::Show { id, common } => {
            let rec = open(common.archive)?.show_session(&id)?;
            if common.json {
                println!("{}", serde_json::to_string_pretty(&rec)?);
                return Ok(ExitCode::SUCCESS);
            }
            let s = &rec.session;
            println!("session {}  {}  {}", s.id, s.created_at, s.description);
            println!("\nmessages:");
            for m in &rec.messages {
                println!("  {}", describe(m));
            }
            println!("\ncalls:");
            for c in &rec.calls {
                println!(
                    "  round {} {} [{}] ({}) {}",
                    c.round, c.name, c.call_id, c.format, c.arguments
                );
                if c.results.is_empty() {
                    println!("    (no result: the process stopped before the call finished)");
                }
                for r in &c.results {
                    println!(
                        "    {} result in {} ms: {}",
                        r.delivery,
                        r.duration_ms,
                        shorten(&r.outcome.to_string(), 400)
                    );
                }
            }
            if !rec.pack_states.is_empty() {
                println!(
                    "\npack states: {}",
                    rec.pack_states
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(m: &Message) -> String {
    match m {
        Message::System { content } => format!("system: {}", shorten(content, 120)),
        Message::User { content } => format!("user: {}", shorten(content, 300)),
        Message::Assistant { text, calls } => {
            let mut s = format!("assistant: {}", shorten(text.as_deref().unwrap_or(""), 300));
            for c in calls {
                s.push_str(&format!("\n    call {} [{}]", c.name, c.call_id));
            }
            s
        }
        Message::Tool {
            call_id,
            name,
            content,
        } => format!(
            "tool {name} [{call_id}]: {}",
            shorten(&content.to_string(), 300)
        ),
        Message::JobResult {
            call_id,
            name,
            content,
        } => format!(
            "job result {name} [{call_id}]: {}",
            shorten(&content.to_string(), 300)
        ),
        Message::TextResults { results } => {
            let mut s = String::from("text-format results:");
            for r in results {
                s.push_str(&format!(
                    "\n    {} [{}]: {}",
                    r.name,
                    r.call_id,
                    shorten(&r.content.to_string(), 300)
                ));
            }
            s
        }
    }
}
