//! `toolcall world show FILE`: prints a text-adventure world (the `world` pack's file) as an
//! indented tree of who is where and what holds what.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolcall_packs::world::World;

#[derive(clap::Args)]
pub struct WorldArgs {
    #[command(subcommand)]
    pub command: WorldCommand,
}

#[derive(clap::Subcommand)]
pub enum WorldCommand {
    /// Print a world file as a tree: locations and their links, players and what they
    /// carry, objects nested by holder.
    Show {
        /// The world file (JSON).
        file: PathBuf,
    },
}

pub async fn run(args: WorldArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        WorldCommand::Show { file } => {
            let world = World::load(&file)
                .with_context(|| format!("cannot show world {}", file.display()))?;
            print!("{}", world.render_tree());
            Ok(ExitCode::SUCCESS)
        }
    }
}
