//! `toolcall sessions list|show ID`: reads the session archive.
//!
//! The archive is `--archive LOCATION`, else `$TOOLCALL_ARCHIVE`, else
//! `toolcall-sessions.sqlite` in the current directory (the same rule as `toolcall run` and
//! `toolcall serve`). A location is an SQLite file path or a `postgres://` URL (the archive
//! gateway replicas share).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use toolcall_run::Archive;
use toolcall_run::archive::{is_postgres_url, redact_url};
use toolcall_run::client::Message;

use crate::display::shorten;

/// Archive file used when neither `--archive` nor `$TOOLCALL_ARCHIVE` is given.
pub const DEFAULT_ARCHIVE: &str = "toolcall-sessions.sqlite";

/// Where the archive lives: `explicit`, else `$TOOLCALL_ARCHIVE`, else `configured` (a
/// config file's `archive`), else [`DEFAULT_ARCHIVE`].
pub fn archive_location(explicit: Option<String>, configured: Option<String>) -> String {
    explicit
        .filter(|v| !v.is_empty())
        .or_else(|| {
            std::env::var("TOOLCALL_ARCHIVE")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .or(configured.filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_ARCHIVE.to_owned())
}

/// Opens (creating if needed) the archive at `location`.
pub fn open_archive(location: &str) -> anyhow::Result<Archive> {
    Archive::connect(location)
        .with_context(|| format!("cannot open the archive {}", redact_url(location)))
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
    /// Archive: a file, or a `postgres://` URL [default: $TOOLCALL_ARCHIVE or
    /// ./toolcall-sessions.sqlite].
    #[arg(long)]
    archive: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn open(location: Option<String>) -> anyhow::Result<Archive> {
    let location = archive_location(location, None);
    anyhow::ensure!(
        is_postgres_url(&location) || Path::new(&location).exists(),
        "no session archive at {location} (set --archive or $TOOLCALL_ARCHIVE)"
    );
    open_archive(&location)
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
