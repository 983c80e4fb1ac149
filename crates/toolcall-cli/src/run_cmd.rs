//! `toolcall run` (skeleton; its issue fills it in).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {}

pub async fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall run` is not built yet")
}
