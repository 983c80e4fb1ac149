//! The tools a command works with: tools files, packs, and enable/disable switches, shared by
//! `toolcall tools` and `toolcall run`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use toolcall_core::Registry;
use toolcall_packs::{PackConfig, PackState, load_pack};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ToolsetArgs {
    /// A tools file: an OpenAI Chat, Responses or Anthropic `tools` array, or toolcall's own
    /// format (tools with `enabled`, `kind`, `timeout_ms`, `backend`, ...). Repeatable.
    #[arg(long = "tools", value_name = "FILE")]
    pub tools: Vec<PathBuf>,
    /// A built-in tool pack (computer, apps, slash, world, highlight). Repeatable.
    #[arg(long = "pack", value_name = "NAME")]
    pub packs: Vec<String>,
    /// Enable a tool by id; a trailing `*` matches a prefix (`vista.command.*`). Repeatable.
    #[arg(long = "enable", value_name = "NAME")]
    pub enable: Vec<String>,
    /// Disable a tool by id; a trailing `*` matches a prefix (`--disable '*'` disables all,
    /// then `--enable` picks some back). Repeatable.
    #[arg(long = "disable", value_name = "NAME")]
    pub disable: Vec<String>,
}

/// A loaded toolset: the registry and the state handles of the packs in it.
pub struct Toolset {
    pub registry: Registry,
    // Read by `toolcall run` to save and resume pack state with the session.
    #[allow(dead_code)]
    pub pack_states: Vec<(&'static str, Arc<dyn PackState>)>,
}

impl ToolsetArgs {
    /// Whether any tools file or pack was given.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.packs.is_empty()
    }

    /// The registry, with program/HTTP backends attached so every declared tool can run.
    // Used by `toolcall run`.
    #[allow(dead_code)]
    pub fn build(&self) -> anyhow::Result<Registry> {
        Ok(self.load()?.registry)
    }

    /// [`Self::build`] plus the packs' state handles.
    pub fn load(&self) -> anyhow::Result<Toolset> {
        let mut toolset = self.load_specs()?;
        toolcall_run::backend::attach_backends(&mut toolset.registry)
            .context("cannot set up the tools' backends")?;
        Ok(toolset)
    }

    /// The tools without attaching backends (for listing and rendering, which run nothing).
    pub fn load_specs(&self) -> anyhow::Result<Toolset> {
        if self.is_empty() {
            bail!("no tools: give --tools FILE or --pack NAME");
        }
        let mut registry = Registry::new();
        let mut pack_states = Vec::new();
        for path in &self.tools {
            let loaded = Registry::from_tools_file(path)?;
            registry
                .merge(loaded)
                .with_context(|| format!("tools file {}", path.display()))?;
        }
        let base_dir = std::env::current_dir().context("cannot read the current directory")?;
        for name in &self.packs {
            let config = PackConfig {
                base_dir: base_dir.clone(),
                options: Default::default(),
            };
            let pack = load_pack(name, &config).with_context(|| format!("pack {name:?}"))?;
            registry
                .merge(pack.registry)
                .with_context(|| format!("pack {name:?}"))?;
            if let Some(state) = pack.state {
                pack_states.push((pack.name, state));
            }
        }
        self.apply_switches(&mut registry)?;
        Ok(Toolset {
            registry,
            pack_states,
        })
    }

    /// Prefix patterns first (disable, then enable), then exact ids (disable, then enable):
    /// the more specific switch wins.
    fn apply_switches(&self, registry: &mut Registry) -> anyhow::Result<()> {
        let patterns = |v: &[String]| -> Vec<String> {
            v.iter().filter(|n| n.ends_with('*')).cloned().collect()
        };
        let exact = |v: &[String]| -> Vec<String> {
            v.iter().filter(|n| !n.ends_with('*')).cloned().collect()
        };
        let steps = [
            (patterns(&self.disable), false),
            (patterns(&self.enable), true),
            (exact(&self.disable), false),
            (exact(&self.enable), true),
        ];
        for (names, enabled) in steps {
            for name in names {
                let targets: Vec<String> = match name.strip_suffix('*') {
                    Some(prefix) => registry
                        .names()
                        .filter(|n| n.starts_with(prefix))
                        .map(str::to_owned)
                        .collect(),
                    None if registry.contains(&name) => vec![name.clone()],
                    None => Vec::new(),
                };
                if targets.is_empty() {
                    let known: Vec<&str> = registry.names().collect();
                    bail!(
                        "--{} {name:?} matches no tool; tools: {}",
                        if enabled { "enable" } else { "disable" },
                        known.join(", ")
                    );
                }
                for t in targets {
                    registry.set_enabled(&t, enabled)?;
                }
            }
        }
        Ok(())
    }
}
