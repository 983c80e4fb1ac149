//! One way to assemble the tools of a session, whoever asks (every CLI subcommand, the
//! gateway, the MCP bridge, library users): packs with their options, then tools files,
//! then enable/disable switches.
//!
//! Switch rules: prefix patterns first (`vista.command.*`; disable, then enable), then exact
//! ids (disable, then enable), so the more specific switch wins; a switch that matches no
//! tool is an error naming the tools there are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolcall_core::{Registry, RegistryError};

use crate::{PackConfig, PackError, PackState, RoundOutput, SessionEnd, load_pack};

/// Why a toolset could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum ToolsetError {
    #[error("pack {name:?}: {source}")]
    Pack {
        name: String,
        #[source]
        source: PackError,
    },
    #[error("tools file {}: {source}", path.display())]
    ToolsFile {
        path: PathBuf,
        #[source]
        source: RegistryError,
    },
    #[error("pack option {0:?}: expected PACK.KEY=VALUE")]
    BadPackOption(String),
    #[error("pack option {option:?}: pack {pack:?} is not loaded (add --pack {pack})")]
    PackNotLoaded { option: String, pack: String },
    #[error("--{switch} {name:?} matches no tool; tools: {known}")]
    NoMatch {
        switch: &'static str,
        name: String,
        known: String,
    },
    #[error("cannot set up the tools' backends: {0}")]
    Backend(#[from] crate::backend::BackendError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// What a toolset is made of, in the order it is assembled.
#[derive(Debug, Clone, Default)]
pub struct ToolsetSpec {
    /// Packs by name, each with its options (a name given twice is loaded once).
    pub packs: Vec<(String, PackConfig)>,
    pub tools_files: Vec<PathBuf>,
    /// Tool ids to enable; a trailing `*` matches a prefix.
    pub enable: Vec<String>,
    /// Tool ids to disable; a trailing `*` matches a prefix (`*` alone: every tool).
    pub disable: Vec<String>,
}

/// An assembled toolset: the registry, the state handles of its stateful packs (saved and
/// restored with a session), and the packs' round-output and end hooks.
pub struct Toolset {
    pub registry: Registry,
    pub pack_states: Vec<(String, Arc<dyn PackState>)>,
    pub round_outputs: Vec<Arc<dyn RoundOutput>>,
    /// Call each once when the run using the toolset ends ([`SessionEnd`]).
    pub on_end: Vec<Arc<dyn SessionEnd>>,
}

impl ToolsetSpec {
    /// Adds a pack with no options yet, relative paths resolving against `base_dir`; a pack
    /// already added keeps its configuration.
    pub fn add_pack(&mut self, name: &str, base_dir: &Path) {
        if !self.packs.iter().any(|(n, _)| n == name) {
            self.packs.push((
                name.to_owned(),
                PackConfig {
                    base_dir: base_dir.to_owned(),
                    options: Map::new(),
                },
            ));
        }
    }

    /// Sets one pack option from `PACK.KEY=VALUE` (VALUE is read as JSON when it parses,
    /// else as text); the pack must have been added.
    pub fn set_pack_option(&mut self, option: &str) -> Result<(), ToolsetError> {
        let bad = || ToolsetError::BadPackOption(option.to_owned());
        let (key, value) = option.split_once('=').ok_or_else(bad)?;
        let (pack, key) = key.split_once('.').ok_or_else(bad)?;
        if pack.is_empty() || key.is_empty() {
            return Err(bad());
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        let Some((_, config)) = self.packs.iter_mut().find(|(n, _)| n == pack) else {
            return Err(ToolsetError::PackNotLoaded {
                option: option.to_owned(),
                pack: pack.to_owned(),
            });
        };
        config.options.insert(key.to_owned(), value);
        Ok(())
    }

    /// Whether nothing at all was asked for.
    pub fn is_empty(&self) -> bool {
        self.packs.is_empty() && self.tools_files.is_empty()
    }

    /// Loads the packs, then the tools files (tools declared with a program or HTTP backend
    /// get it attached), then applies the switches.
    pub fn load(&self) -> Result<Toolset, ToolsetError> {
        let mut registry = Registry::new();
        let mut pack_states = Vec::new();
        let mut on_end = Vec::new();
        let mut round_outputs = Vec::new();
        for (name, config) in &self.packs {
            let pack = load_pack(name, config).map_err(|source| ToolsetError::Pack {
                name: name.clone(),
                source,
            })?;
            registry
                .merge(pack.registry)
                .map_err(|source| ToolsetError::Pack {
                    name: name.clone(),
                    source: source.into(),
                })?;
            on_end.extend(pack.on_end);
            if let Some(state) = pack.state {
                pack_states.push((name.clone(), state));
            }
            round_outputs.extend(pack.round_output);
        }
        for path in &self.tools_files {
            let file_error = |source| ToolsetError::ToolsFile {
                path: path.clone(),
                source,
            };
            let loaded = Registry::from_tools_file(path).map_err(file_error)?;
            registry.merge(loaded).map_err(file_error)?;
        }
        crate::backend::attach_backends(&mut registry)?;
        self.apply_switches(&mut registry)?;
        Ok(Toolset {
            registry,
            pack_states,
            on_end,
            round_outputs,
        })
    }

    /// Applies `enable`/`disable` (see the module doc for the order).
    pub fn apply_switches(&self, registry: &mut Registry) -> Result<(), ToolsetError> {
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
                    return Err(ToolsetError::NoMatch {
                        switch: if enabled { "enable" } else { "disable" },
                        name,
                        known: registry.names().collect::<Vec<_>>().join(", "),
                    });
                }
                for t in targets {
                    registry.set_enabled(&t, enabled)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(packs: &[&str]) -> ToolsetSpec {
        let mut spec = ToolsetSpec::default();
        for p in packs {
            spec.add_pack(p, Path::new("."));
        }
        spec
    }

    #[test]
    fn every_pack_loads_with_no_options() {
        for name in crate::pack_names() {
            let toolset = spec_with(&[name])
                .load()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!toolset.registry.is_empty(), "{name} lists no tools");
        }
    }

    #[test]
    fn pack_options_are_json_when_they_parse_and_need_a_loaded_pack() {
        let mut spec = spec_with(&["world"]);
        spec.set_pack_option("world.ids={\"seed\":1}").unwrap();
        spec.set_pack_option("world.name=Cave").unwrap();
        let options = &spec.packs[0].1.options;
        assert_eq!(options["ids"], serde_json::json!({"seed": 1}));
        assert_eq!(options["name"], "Cave");
        assert!(matches!(
            spec.set_pack_option("apps.allow=[]"),
            Err(ToolsetError::PackNotLoaded { pack, .. }) if pack == "apps"
        ));
        assert!(matches!(
            spec.set_pack_option("world=1"),
            Err(ToolsetError::BadPackOption(_))
        ));
    }

    #[test]
    fn the_more_specific_switch_wins_and_unmatched_switches_are_errors() {
        let mut spec = spec_with(&["world"]);
        spec.disable = vec!["*".into()];
        spec.enable = vec!["move_player".into()];
        let toolset = spec.load().unwrap();
        let enabled: Vec<&str> = toolset
            .registry
            .enabled_specs()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(enabled, ["move_player"]);
        spec.enable = vec!["fly".into()];
        assert!(matches!(
            spec.load(),
            Err(ToolsetError::NoMatch { switch: "enable", name, .. }) if name == "fly"
        ));
    }
}
