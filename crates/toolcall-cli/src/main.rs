//! The `toolcall` command: a thin shell over the library crates.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod alloc;
mod approve;
mod constrain_cmd;
mod detect_cmd;
mod display;
mod error_text;
mod mcp_cmd;
mod parse_cmd;
mod run_cmd;
mod run_printer;
mod serve_cmd;
mod sessions_cmd;
mod tools_cmd;
mod toolset;
mod world_cmd;

#[derive(Parser)]
#[command(
    name = "toolcall",
    version,
    about = "Find, validate and execute the tool calls in language-model output"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse model output and print the calls found, as JSON.
    Parse(parse_cmd::ParseArgs),
    /// List the formats the parser reads, with an example each.
    Formats,
    /// Print the decoding constraint (structural tag, GBNF, Lark, JSON Schema) that keeps a
    /// family's calls valid for a tools file.
    Constrain(constrain_cmd::ConstrainArgs),
    /// Name the call format, reasoning markers and `<think>` handling of a chat template.
    Detect(detect_cmd::DetectArgs),
    /// Run a turn of the agent loop: model -> calls -> results -> model.
    Run(Box<run_cmd::RunArgs>),
    /// Serve an OpenAI-compatible gateway that gives any model server checked tool calls.
    Serve(Box<serve_cmd::ServeArgs>),
    /// List tools or render them for a provider.
    Tools(tools_cmd::ToolsArgs),
    /// Inspect the session archive.
    Sessions(sessions_cmd::SessionsArgs),
    /// Inspect a text-adventure world file.
    World(world_cmd::WorldArgs),
    /// MCP: serve the toolset to MCP clients.
    Mcp(mcp_cmd::McpArgs),
}

impl Command {
    /// A command that only prints a result: a reader that stops reading (`| head -1`) ends it
    /// as it ends any Unix filter. `run`, `serve` and `mcp` are left out: they own children,
    /// sockets and archives that must be closed in order, so they handle a closed stdout
    /// as an error.
    fn only_prints(&self) -> bool {
        matches!(
            self,
            Command::Parse(_)
                | Command::Formats
                | Command::Constrain(_)
                | Command::Detect(_)
                | Command::Tools(_)
                | Command::Sessions(_)
                | Command::World(_)
        )
    }
}

/// Rust starts programs with `SIGPIPE` ignored, so `println!` to a closed pipe panics
/// ("failed printing to stdout"); the default action ends the process silently instead,
/// with the status a shell reports for any filter cut short (141).
fn end_quietly_on_a_closed_stdout() {
    // SAFETY: called once, before any thread is spawned; resetting a signal's disposition
    // to its default has no other effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    toolcall_alloc::purge_at_once();
    let cli = Cli::parse();
    if cli.command.only_prints() {
        end_quietly_on_a_closed_stdout();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolcall: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Parse(args) => parse_cmd::run(args).await,
            Command::Formats => parse_cmd::formats().await,
            Command::Constrain(args) => constrain_cmd::run(args).await,
            Command::Detect(args) => detect_cmd::run(args).await,
            Command::Run(args) => run_cmd::run(*args).await,
            Command::Serve(args) => serve_cmd::run(*args).await,
            Command::Tools(args) => tools_cmd::run(args).await,
            Command::Sessions(args) => sessions_cmd::run(args).await,
            Command::World(args) => world_cmd::run(args).await,
            Command::Mcp(args) => mcp_cmd::run(args).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolcall: {}", error_text::one_line(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
