//! The toolset options every subcommand that loads tools takes, turned into the library's
//! [`ToolsetSpec`] (which owns the assembly rules).

use std::path::PathBuf;

use anyhow::{Context, bail};
use serde_json::Value;
use toolcall_packs::toolset::{Toolset, ToolsetSpec};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ToolsetArgs {
    /// A tools file: an OpenAI Chat, Responses or Anthropic `tools` array, or toolcall's own
    /// format (tools with `enabled`, `kind`, `timeout_ms`, `backend`, ...). Repeatable.
    #[arg(long = "tools", value_name = "FILE")]
    pub tools: Vec<PathBuf>,
    /// A built-in tool pack (computer, apps, slash, world, highlight); each works without
    /// options. Repeatable.
    #[arg(long = "pack", value_name = "NAME")]
    pub packs: Vec<String>,
    /// A pack option, `PACK.KEY=VALUE` (VALUE is read as JSON when it parses, else as text).
    /// Repeatable.
    #[arg(long = "pack-opt", value_name = "PACK.KEY=VALUE")]
    pub pack_opts: Vec<String>,
    /// X display for the computer pack, e.g. `:1` [default: the pack's `display` option, else
    /// $DISPLAY].
    #[arg(long, value_name = "DISPLAY")]
    pub display: Option<String>,
    /// Enable a tool by id; a trailing `*` matches a prefix (`vista.command.*`). Repeatable.
    #[arg(long = "enable", value_name = "NAME")]
    pub enable: Vec<String>,
    /// Disable a tool by id; a trailing `*` matches a prefix (`--disable '*'` disables all,
    /// then `--enable` picks some back). Repeatable.
    #[arg(long = "disable", value_name = "NAME")]
    pub disable: Vec<String>,
}

impl ToolsetArgs {
    /// The toolset these options describe, added to `base` (a recorded session's setup).
    pub fn spec(&self, mut base: ToolsetSpec) -> anyhow::Result<ToolsetSpec> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        for name in &self.packs {
            base.add_pack(name, &cwd);
        }
        for option in &self.pack_opts {
            base.set_pack_option(option)?;
        }
        if let Some(display) = &self.display {
            let Some((_, config)) = base.packs.iter_mut().find(|(n, _)| n == "computer") else {
                bail!("--display is for the computer pack: add --pack computer");
            };
            config
                .options
                .insert("display".to_owned(), Value::String(display.clone()));
        }
        base.tools_files.extend(self.tools.iter().cloned());
        base.enable.extend(self.enable.iter().cloned());
        base.disable.extend(self.disable.iter().cloned());
        Ok(base)
    }

    /// The toolset for listing and rendering (nothing runs): `--tools` or `--pack` needed.
    pub fn load_specs(&self) -> anyhow::Result<Toolset> {
        let spec = self.spec(ToolsetSpec::default())?;
        if spec.is_empty() {
            bail!("no tools: give --tools FILE or --pack NAME");
        }
        Ok(spec.load()?)
    }
}

/// Loads a toolset whose tools will run: program and HTTP backends are attached.
pub fn load_runnable(spec: &ToolsetSpec) -> anyhow::Result<Toolset> {
    let mut toolset = spec.load()?;
    toolcall_run::backend::attach_backends(&mut toolset.registry)
        .context("cannot set up the tools' backends")?;
    Ok(toolset)
}
