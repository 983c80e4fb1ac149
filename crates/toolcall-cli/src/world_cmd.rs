//! `toolcall world` (skeleton; its issue fills it in).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct WorldArgs {}

pub async fn run(_args: WorldArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall world` is not built yet")
}
