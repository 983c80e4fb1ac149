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

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-WORLD (`toolcall world show`)
    #[tokio::test]
    async fn show_accepts_a_valid_world_and_refuses_a_broken_one() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        std::fs::write(
            &good,
            r#"{"locations":[{"id":"l","name":"Hall"}],"players":[{"id":"p","name":"Jack","location":"l"}]}"#,
        )
        .unwrap();
        let run_show = |file: PathBuf| {
            run(WorldArgs {
                command: WorldCommand::Show { file },
            })
        };
        assert!(run_show(good).await.is_ok());
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"players":[{"id":"p","name":"Jack","location":"nowhere"}]}"#,
        )
        .unwrap();
        let err = run_show(bad).await.unwrap_err();
        assert!(format!("{err:#}").contains("unknown location"), "{err:#}");
        assert!(run_show(dir.path().join("missing.json")).await.is_err());
    }
}
