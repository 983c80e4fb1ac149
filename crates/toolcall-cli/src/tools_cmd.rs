//! `toolcall tools` (skeleton; its issue fills it in).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ToolsArgs {}

pub async fn run(_args: ToolsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolcall tools` is not built yet")
}
