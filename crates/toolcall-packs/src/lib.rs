//! Tool packs, one module per pack: real tools for five kinds of application (requirement
//! ids in `docs/requirements.md`).
//!
//! | pack | module | application |
//! |---|---|---|
//! | `computer` | [`computer`] | computer use on an X display (P-CU) |
//! | `apps` | [`apps`] | app launcher and the action-response flow (P-APP) |
//! | `slash` | [`slash`] | slash commands and mentions (P-SLASH) |
//! | `world` | [`world`] | text-adventure world (P-WORLD) |
//! | `highlight` | [`highlight`] | object highlight (P-HL) |
//!
//! Each pack is loaded by name with [`load_pack`] into a [`Pack`]: a registry of specs with
//! implementations, plus, for stateful packs, a handle to save and restore their state.
//! [`backend`] runs the tools a tools file declares with a program or an HTTP endpoint;
//! [`process_group`] is how both it and the app launcher start and end processes.
//! Every pack loads with no options at all (working defaults). [`toolset`] assembles packs,
//! tools files and enable/disable switches into one registry, the same way for every
//! caller.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use toolcall_core::{Registry, RegistryError, ToolCall, ToolResult};

pub mod apps;
pub mod backend;
#[cfg(feature = "computer")]
pub mod computer;
pub mod highlight;
pub mod process_group;
pub mod slash;
pub mod toolset;
pub mod world;

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("unknown pack {0:?}; packs: {list}", list = pack_names().join(", "))]
    UnknownPack(String),
    #[error("pack {pack}: {message}")]
    Config { pack: String, message: String },
    #[error("pack {pack}: cannot read {path}: {source}")]
    Io {
        pack: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// Options for loading a pack: relative paths in `options` resolve against `base_dir`.
#[derive(Debug, Clone, Default)]
pub struct PackConfig {
    pub base_dir: PathBuf,
    pub options: Map<String, Value>,
}

/// State a pack keeps across calls, saved with the session so it can be resumed.
pub trait PackState: Send + Sync {
    /// The current (committed) state as JSON.
    fn snapshot(&self) -> Value;
    /// Replaces the state with a saved snapshot.
    fn restore(&self, snapshot: Value) -> Result<(), PackError>;
}

/// What a pack does when the run using it ends: end what its tools started (the apps
/// pack closes the apps it opened). Whoever loads packs calls it once, at the end.
#[async_trait::async_trait]
pub trait SessionEnd: Send + Sync {
    async fn end(&self);
}

/// What an application around the loop shows after a round of calls ran, when one pack's
/// application has its own conventions (the apps pack: an `__MCP__` line per command for
/// the client, the reply's text for speech). The generic layers call every loaded pack's
/// hook and print what comes back, knowing nothing of any one application.
pub trait RoundOutput: Send + Sync {
    /// The output for one round: its visible assistant text, its calls as they ran and
    /// their results; empty when the round is none of this pack's business.
    fn round_output(
        &self,
        text: &str,
        calls: &[ToolCall],
        results: &[ToolResult],
        session_id: &str,
    ) -> RoundLines;
}

/// A pack's output for one round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundLines {
    /// Lines for a program reading the output, printed exactly as they are.
    pub client: Vec<String>,
    /// Notes for a person (`speech: ...`), printed with the round's other details.
    pub notes: Vec<String>,
}

/// A loaded pack.
pub struct Pack {
    pub name: &'static str,
    pub registry: Registry,
    pub state: Option<Arc<dyn PackState>>,
    /// Call [`SessionEnd::end`] when the run using the pack ends.
    pub on_end: Option<Arc<dyn SessionEnd>>,
    /// The pack's part in each round's output, if its application has one.
    pub round_output: Option<Arc<dyn RoundOutput>>,
}

/// The packs this build provides.
pub fn pack_names() -> &'static [&'static str] {
    &[
        #[cfg(feature = "computer")]
        "computer",
        "apps",
        "slash",
        "world",
        "highlight",
    ]
}

/// Loads a pack by name.
pub fn load_pack(name: &str, config: &PackConfig) -> Result<Pack, PackError> {
    match name {
        #[cfg(feature = "computer")]
        "computer" => computer::pack(config),
        "apps" => apps::pack(config),
        "slash" => slash::pack(config),
        "world" => world::pack(config),
        "highlight" => highlight::pack(config),
        other => Err(PackError::UnknownPack(other.to_owned())),
    }
}
