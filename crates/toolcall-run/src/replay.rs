//! The recorded-session file: a prompt, optional setup (packs and tools files), and one
//! OpenAI Chat assistant message per model request.
//!
//! ```json
//! {"description": "...", "prompt": "...", "mode": "auto",
//!  "setup": {"packs": {"world": {"world": "world.json"}}, "tools": ["tools.json"]},
//!  "replies": [{"role":"assistant","content":null,"tool_calls":[...]}, ...]}
//! ```
//! Relative paths in `setup` resolve against the file's directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::Mode;

/// Largest session file read (32 MiB).
pub const MAX_SESSION_FILE_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionFile {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub setup: Setup,
    pub replies: Vec<Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Setup {
    /// Pack name → pack options.
    #[serde(default)]
    pub packs: Map<String, Value>,
    /// Tools files, relative to the session file.
    #[serde(default)]
    pub tools: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionFileError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is larger than {MAX_SESSION_FILE_BYTES} bytes")]
    TooLarge { path: PathBuf },
    #[error("{path} is not a session file: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl SessionFile {
    pub fn load(path: &Path) -> Result<Self, SessionFileError> {
        let io = |source| SessionFileError::Io {
            path: path.to_owned(),
            source,
        };
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_SESSION_FILE_BYTES {
            return Err(SessionFileError::TooLarge {
                path: path.to_owned(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        serde_json::from_str(&text).map_err(|source| SessionFileError::Json {
            path: path.to_owned(),
            source,
        })
    }

    /// The directory relative paths resolve against.
    pub fn base_dir(path: &Path) -> PathBuf {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
}
