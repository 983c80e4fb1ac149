//! `toolcall parse` (skeleton; its issue fills it in).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ParseArgs {}

pub async fn run(_args: ParseArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall parse` is not built yet")
}

pub async fn formats() -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall formats` is not built yet")
}
