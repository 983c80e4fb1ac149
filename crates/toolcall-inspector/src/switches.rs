//! Tool switches: a person's enable/disable choice per tool, kept across restarts.
//!
//! A switch overrides the `enabled` flag a tool's spec ships with. [`ToolSwitches::apply`]
//! gives the registry a turn should use: a disabled tool is then neither offered to the model
//! (V-4) nor run — a call to it is answered `tool_disabled` by validation. The file is small
//! JSON, `{"tools": {"move_player": false}}`, rewritten whole through a temporary file and a
//! rename, so a crash leaves either the old or the new choice, never a torn file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use toolcall_core::Registry;

/// Largest switches file read (1 MiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most switches kept; a tool name is at most 256 bytes (core's id rule).
pub const MAX_SWITCHES: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("tool switches file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("tool switches file {path} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("tool switches file {path} is not valid: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("more than {MAX_SWITCHES} tool switches")]
    TooMany,
    #[error("tool switches lock poisoned")]
    Poisoned,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct SwitchesFile {
    #[serde(default)]
    tools: BTreeMap<String, bool>,
}

/// The enable/disable overrides, optionally backed by a file.
#[derive(Debug, Default)]
pub struct ToolSwitches {
    path: Option<PathBuf>,
    overrides: RwLock<BTreeMap<String, bool>>,
}

impl ToolSwitches {
    /// Switches that live only as long as the process.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Switches kept in `path`; a missing file means no overrides yet.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, SwitchError> {
        let path = path.into();
        let io = |source| SwitchError::Io {
            path: path.clone(),
            source,
        };
        let overrides = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(io(e)),
            Ok(meta) if meta.len() > MAX_FILE_BYTES => {
                return Err(SwitchError::TooLarge { path });
            }
            Ok(_) => {
                let text = std::fs::read(&path).map_err(io)?;
                let file: SwitchesFile =
                    serde_json::from_slice(&text).map_err(|source| SwitchError::Json {
                        path: path.clone(),
                        source,
                    })?;
                if file.tools.len() > MAX_SWITCHES {
                    return Err(SwitchError::TooMany);
                }
                file.tools
            }
        };
        Ok(ToolSwitches {
            path: Some(path),
            overrides: RwLock::new(overrides),
        })
    }

    /// Where the switches are kept, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The override for `name`, if a person set one.
    pub fn get(&self, name: &str) -> Option<bool> {
        self.overrides.read().ok()?.get(name).copied()
    }

    /// Whether `name` is on: its override, else `spec_default`.
    pub fn is_enabled(&self, name: &str, spec_default: bool) -> bool {
        self.get(name).unwrap_or(spec_default)
    }

    /// Switches a tool on or off and writes the file before returning (blocking I/O: call it
    /// from `spawn_blocking` on an async runtime).
    pub fn set(&self, name: &str, enabled: bool) -> Result<(), SwitchError> {
        let mut overrides = self.overrides.write().map_err(|_| SwitchError::Poisoned)?;
        if !overrides.contains_key(name) && overrides.len() >= MAX_SWITCHES {
            return Err(SwitchError::TooMany);
        }
        let previous = overrides.insert(name.to_owned(), enabled);
        if let Err(e) = self.persist(&overrides) {
            // Keep memory and file in agreement.
            match previous {
                Some(p) => overrides.insert(name.to_owned(), p),
                None => overrides.remove(name),
            };
            return Err(e);
        }
        Ok(())
    }

    fn persist(&self, overrides: &BTreeMap<String, bool>) -> Result<(), SwitchError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let io = |source| SwitchError::Io {
            path: path.clone(),
            source,
        };
        let body = serde_json::to_vec_pretty(&SwitchesFile {
            tools: overrides.clone(),
        })
        .map_err(|source| SwitchError::Json {
            path: path.clone(),
            source,
        })?;
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, body).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// The registry with every override applied: what a turn offers and runs.
    pub fn apply(&self, registry: &Registry) -> Registry {
        let mut out = registry.clone();
        if let Ok(overrides) = self.overrides.read() {
            for (name, enabled) in overrides.iter() {
                // A switch for a tool this registry lacks (a tools file changed) is kept
                // for when it comes back, and ignored now.
                let _ = out.set_enabled(name, *enabled);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::ToolSpec;

    fn registry() -> Registry {
        let mut r = Registry::new();
        for name in ["a", "b"] {
            r.add_spec(ToolSpec::new(name, "", json!({"type": "object"})))
                .unwrap();
        }
        r
    }

    #[test]
    fn switches_persist_across_opens_and_apply_to_a_registry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("switches.json");
        let s = ToolSwitches::open(&path).unwrap();
        assert_eq!(s.get("a"), None);
        s.set("a", false).unwrap();
        s.set("gone", false).unwrap();
        drop(s);

        let s = ToolSwitches::open(&path).unwrap();
        assert_eq!(s.get("a"), Some(false));
        assert!(!s.is_enabled("a", true));
        assert!(s.is_enabled("b", true));
        let r = s.apply(&registry());
        let offered: Vec<_> = r.enabled_specs().map(|t| t.name.clone()).collect();
        assert_eq!(offered, ["b"]);
        s.set("a", true).unwrap();
        assert_eq!(s.apply(&registry()).enabled_specs().count(), 2);
    }

    #[test]
    fn a_damaged_or_huge_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("switches.json");
        std::fs::write(&path, "{\"tools\": [1, 2").unwrap();
        assert!(matches!(
            ToolSwitches::open(&path),
            Err(SwitchError::Json { .. })
        ));
        std::fs::write(&path, vec![b' '; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        assert!(matches!(
            ToolSwitches::open(&path),
            Err(SwitchError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_failed_write_leaves_the_switch_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // The file's folder does not exist: the write fails.
        let s = ToolSwitches::open(dir.path().join("missing/switches.json")).unwrap();
        assert!(s.set("a", false).is_err());
        assert_eq!(s.get("a"), None);
    }
}
