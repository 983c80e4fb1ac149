//! Tool switches: a person's enable/disable choice per tool, kept across restarts.
//!
//! A switch overrides the `enabled` flag a tool's spec ships with. [`ToolSwitches::apply`]
//! gives the registry a turn should use: a disabled tool is then neither offered to the model
//! (V-4) nor run — a call to it is answered `tool_disabled` by validation.
//!
//! Where they are kept:
//! - a JSON file, `{"tools": {"move_player": false}}` (one machine: `toolcall serve
//!   --tool-switches`, followed by `toolcall mcp --tool-switches`), rewritten whole through
//!   a temporary file and a rename, so a crash leaves either the old or the new choice;
//! - a shared archive (replicas on one PostgreSQL database), one row per tool: a flip
//!   writes only that tool's row, and every replica sees it at its next [`ToolSwitches::refresh`];
//! - nowhere (in memory, for tests and the gateway without tools).
//!
//! Whatever the store, the gateway does the same: [`ToolSwitches::refresh`] at the start of
//! each server-side turn and before the tools page, then [`ToolSwitches::apply`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use toolcall_core::Registry;
use toolcall_run::Archive;
use toolcall_run::archive::ArchiveError;

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
    #[error("tool switches in the shared archive: {0}")]
    Archive(#[from] ArchiveError),
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

/// Where the switches are kept (see the module doc).
#[derive(Default)]
enum Store {
    #[default]
    Memory,
    File(PathBuf),
    Archive(Arc<Archive>),
}

/// The enable/disable overrides, as last read from their store.
#[derive(Default)]
pub struct ToolSwitches {
    store: Store,
    overrides: RwLock<BTreeMap<String, bool>>,
}

impl std::fmt::Debug for ToolSwitches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let store = match &self.store {
            Store::Memory => "memory".to_owned(),
            Store::File(path) => path.display().to_string(),
            Store::Archive(_) => "shared archive".to_owned(),
        };
        f.debug_struct("ToolSwitches")
            .field("store", &store)
            .field("overrides", &self.overrides)
            .finish()
    }
}

impl ToolSwitches {
    /// Switches that live only as long as the process.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Switches kept in `path`; a missing file means no overrides yet.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, SwitchError> {
        let path = path.into();
        let overrides = read_file(&path)?;
        Ok(ToolSwitches {
            store: Store::File(path),
            overrides: RwLock::new(overrides),
        })
    }

    /// Switches kept in a shared archive, which every replica on it reads and writes.
    /// Blocking (call it from `spawn_blocking` on an async runtime).
    pub fn shared(archive: Arc<Archive>) -> Result<Self, SwitchError> {
        let switches = ToolSwitches {
            store: Store::Archive(archive),
            overrides: RwLock::default(),
        };
        switches.refresh()?;
        Ok(switches)
    }

    /// Where the switches are kept, if in a file.
    pub fn path(&self) -> Option<&Path> {
        match &self.store {
            Store::File(path) => Some(path),
            _ => None,
        }
    }

    /// Whether the switches live in a shared archive.
    pub fn is_shared(&self) -> bool {
        matches!(self.store, Store::Archive(_))
    }

    /// Reads the switches again from their store, so a flip made elsewhere (another
    /// replica, another process on the file) applies from now on. Blocking (call it from
    /// `spawn_blocking` on an async runtime); on an error the switches stay as last read.
    pub fn refresh(&self) -> Result<(), SwitchError> {
        let fresh = match &self.store {
            Store::Memory => return Ok(()),
            Store::File(path) => read_file(path)?,
            Store::Archive(archive) => archive.tool_switches()?,
        };
        if fresh.len() > MAX_SWITCHES {
            return Err(SwitchError::TooMany);
        }
        *self.overrides.write().map_err(|_| SwitchError::Poisoned)? = fresh;
        Ok(())
    }

    /// The override for `name`, if a person set one.
    pub fn get(&self, name: &str) -> Option<bool> {
        self.overrides.read().ok()?.get(name).copied()
    }

    /// Whether `name` is on: its override, else `spec_default`.
    pub fn is_enabled(&self, name: &str, spec_default: bool) -> bool {
        self.get(name).unwrap_or(spec_default)
    }

    /// Switches a tool on or off and writes it to the store before returning (blocking
    /// I/O: call it from `spawn_blocking` on an async runtime). In a shared archive only
    /// this tool's switch is written.
    pub fn set(&self, name: &str, enabled: bool) -> Result<(), SwitchError> {
        let mut overrides = self.overrides.write().map_err(|_| SwitchError::Poisoned)?;
        if !overrides.contains_key(name) && overrides.len() >= MAX_SWITCHES {
            return Err(SwitchError::TooMany);
        }
        match &self.store {
            Store::Memory => {}
            Store::File(path) => {
                // From the file as it is now, so a flip made through it meanwhile stays.
                let mut next = read_file(path)?;
                next.insert(name.to_owned(), enabled);
                write_file(path, &next)?;
                *overrides = next;
            }
            Store::Archive(archive) => archive.set_tool_switch(name, enabled)?,
        }
        // Memory follows the store only once the store has it.
        overrides.insert(name.to_owned(), enabled);
        Ok(())
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

fn read_file(path: &Path) -> Result<BTreeMap<String, bool>, SwitchError> {
    let io = |source| SwitchError::Io {
        path: path.to_owned(),
        source,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(io(e)),
        Ok(meta) if meta.len() > MAX_FILE_BYTES => Err(SwitchError::TooLarge {
            path: path.to_owned(),
        }),
        Ok(_) => {
            let text = std::fs::read(path).map_err(io)?;
            let file: SwitchesFile =
                serde_json::from_slice(&text).map_err(|source| SwitchError::Json {
                    path: path.to_owned(),
                    source,
                })?;
            if file.tools.len() > MAX_SWITCHES {
                return Err(SwitchError::TooMany);
            }
            Ok(file.tools)
        }
    }
}

fn write_file(path: &Path, overrides: &BTreeMap<String, bool>) -> Result<(), SwitchError> {
    let io = |source| SwitchError::Io {
        path: path.to_owned(),
        source,
    };
    let body = serde_json::to_vec_pretty(&SwitchesFile {
        tools: overrides.clone(),
    })
    .map_err(|source| SwitchError::Json {
        path: path.to_owned(),
        source,
    })?;
    let mut tmp = path.to_owned().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, body).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
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
    fn a_flip_made_elsewhere_applies_after_a_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("switches.json");
        let here = ToolSwitches::open(&path).unwrap();
        let there = ToolSwitches::open(&path).unwrap();
        there.set("a", false).unwrap();
        assert_eq!(here.get("a"), None);
        here.refresh().unwrap();
        assert_eq!(here.get("a"), Some(false));
        // A flip here keeps the one made there.
        there.set("b", false).unwrap();
        here.set("a", true).unwrap();
        there.refresh().unwrap();
        assert_eq!((there.get("a"), there.get("b")), (Some(true), Some(false)));
    }

    #[test]
    fn shared_switches_are_rows_of_the_archive() {
        let archive = Arc::new(Archive::in_memory().unwrap());
        let one = ToolSwitches::shared(archive.clone()).unwrap();
        let two = ToolSwitches::shared(archive.clone()).unwrap();
        assert!(one.is_shared() && one.path().is_none());
        archive.set_tool_switch("b", false).unwrap();
        one.set("a", false).unwrap();
        // A flip writes only its own switch: b stays as set beside it.
        assert_eq!(
            archive.tool_switches().unwrap(),
            BTreeMap::from([("a".to_owned(), false), ("b".to_owned(), false)])
        );
        two.refresh().unwrap();
        assert_eq!(two.apply(&registry()).enabled_specs().count(), 0);
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
