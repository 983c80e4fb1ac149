//! Helpers shared by the CLI tests: the built binary, where the examples and fixtures are,
//! and reading a finished process's output.
// Each test file uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The built `toolcall` binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolcall"))
}

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/<path>` of the repository.
pub fn example(path: &str) -> PathBuf {
    repo_root().join("examples").join(path)
}

/// `tests/fixtures/<path>` of this crate.
pub fn fixture_path(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// `toolcall run --replay examples/sessions/echo.json <args>` from the repository root.
pub fn run_echo_session(args: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.current_dir(repo_root())
        .args(["run", "--replay", "examples/sessions/echo.json"])
        .args(args);
    cmd
}

/// Stdout of a process that must have succeeded (else both streams are shown).
pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Stdout of a process that must have succeeded, as JSON.
pub fn json_of(out: Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// `toolcall sessions show <id> --json` over `archive`.
pub fn show_session(id: &str, archive: &Path) -> Value {
    json_of(
        bin()
            .args(["sessions", "show", id, "--json", "--archive"])
            .arg(archive)
            .output()
            .unwrap(),
    )
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}
