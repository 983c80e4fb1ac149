//! Test support shared by toolcall's integration tests (a dev-dependency only, never shipped).
//!
//! Owns the one Python virtual environment that tests drive toolcall with: the official
//! `openai` package as a gateway client, the official MCP SDK as an MCP peer, `pytest` and
//! `maturin` for the Python package. [`python`] creates it once per checkout under
//! `target/test-venv` (or `$TOOLCALL_TEST_VENV`), under a file lock so parallel test binaries
//! wait for one installer, and reinstalls when `python-requirements.txt` changes.
//!
//! Real-component policy, the same for every component (Xvfb, Python, Chromium): a test whose
//! component cannot be had prints why and returns, unless the component's `TOOLCALL_REQUIRE_*`
//! variable is `1` (set by `.ci/run`), when it fails. See [`require`].
//!
//! [`postgres`] starts a throwaway PostgreSQL server for the archive's tests; [`world`] writes
//! the world pack's moves as a model does.

pub mod postgres;
pub mod world;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the test venv could not be made ready.
#[derive(Debug, thiserror::Error)]
pub enum VenvError {
    #[error("cannot prepare the test venv at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
}

const REQUIREMENTS: &str = include_str!("../python-requirements.txt");

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn venv_dir() -> PathBuf {
    std::env::var_os("TOOLCALL_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target").join("test-venv"))
}

fn run(cmd: &mut Command) -> Result<(), VenvError> {
    let out = cmd.output().map_err(|source| VenvError::Io {
        path: PathBuf::from(format!("{:?}", cmd.get_program())),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(VenvError::Command {
        command: format!("{cmd:?}"),
        status: out.status.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr)
            .chars()
            .take(4000)
            .collect(),
    })
}

/// The test venv's `python`, with every package of `python-requirements.txt` installed.
pub fn python() -> Result<PathBuf, VenvError> {
    let dir = venv_dir();
    let io = |source| VenvError::Io {
        path: dir.clone(),
        source,
    };
    fs::create_dir_all(dir.parent().unwrap_or(Path::new("."))).map_err(io)?;
    let lock = File::create(dir.with_extension("lock")).map_err(io)?;
    lock.lock().map_err(io)?;
    let py = dir.join("bin").join("python");
    let stamp = dir.join("toolcall-requirements.txt");
    if fs::read_to_string(&stamp).ok().as_deref() == Some(REQUIREMENTS) && py.exists() {
        return Ok(py);
    }
    if !py.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
    }
    let req = dir.join("requirements.in");
    fs::write(&req, REQUIREMENTS).map_err(io)?;
    run(Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&req))?;
    fs::write(&stamp, REQUIREMENTS).map_err(io)?;
    Ok(py)
}

/// Applies the real-component policy: `Some(value)` when the component is there; `None`
/// (after printing why) when it is not and `TOOLCALL_REQUIRE_<NAME>` is not `1`.
///
/// # Panics
/// When the component is missing and required: that is the test failing, on purpose.
pub fn require<T, E: std::fmt::Display>(name: &str, got: Result<T, E>) -> Option<T> {
    match got {
        Ok(v) => Some(v),
        Err(e) => {
            let var = format!("TOOLCALL_REQUIRE_{}", name.to_ascii_uppercase());
            if std::env::var(&var).as_deref() == Ok("1") {
                panic!("{var}=1 but {name} is not available: {e}");
            }
            eprintln!("skipped: {name} is not available ({e}); set {var}=1 to make this fail");
            None
        }
    }
}
