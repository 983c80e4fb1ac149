//! `toolcall sessions` (skeleton; its issue fills it in).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SessionsArgs {}

pub async fn run(_args: SessionsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall sessions` is not built yet")
}
