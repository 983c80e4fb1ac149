//! Runs the Python package's pytest suite (`python/tests/test_*.py`) against a wheel built
//! here, so `cargo test --workspace` covers the package.
//!
//! The wheel is built by maturin (the `dev` profile, named because pyproject.toml makes
//! `wheel`, with LTO, the default; in the workspace's target directory, so the
//! dependencies `cargo test` already compiled are reused; cargo has released its lock by the
//! time tests run), installed with pip into a fresh directory (as a user's `pip install`
//! would lay it out: compiled module, Python layer, stubs, `py.typed`), and pytest runs from
//! the test venv with that directory first on `sys.path`.
//!
//! The archive tests (`test_archive.py`) read sessions written here beforehand by a real agent
//! run (toolcall-run's loop, a replayed model, Rust tools) into an SQLite file and into a test
//! PostgreSQL server started by the testkit; `TOOLCALL_TEST_ARCHIVES` tells pytest where.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use toolcall_run::{Agent, AgentConfig, Archive, Executor, Mode, ReplayClient};
use toolcall_testkit::postgres::Postgres;

/// Adds two integers.
struct Add;

#[async_trait::async_trait]
impl Tool for Add {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "add",
            "Adds two integers",
            json!({"type": "object", "required": ["a", "b"],
                   "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                  "token": {"type": "string"}}}),
        )
    }
    async fn call(&self, _: &ToolContext, a: Value) -> Result<ToolOutput, ToolError> {
        let (Some(x), Some(y)) = (a["a"].as_i64(), a["b"].as_i64()) else {
            return Err(ToolError::failed("a and b are integers"));
        };
        Ok(json!({"sum": x + y}).into())
    }
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function",
           "function": {"name": name, "arguments": arguments.to_string()}})
}

/// Runs one agent turn archived at `location` (three model rounds: two calls, then a call
/// with a secret argument beside a call to an unknown tool, then the answer); the session id.
fn write_session(location: &str) -> String {
    let replies = vec![
        json!({"role": "assistant", "content": null, "tool_calls": [
            call("call_one", "add", json!({"a": 2, "b": 3})),
            call("call_two", "add", json!({"a": 10, "b": -4})),
        ]}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            call("call_three", "add", json!({"a": 1, "b": 1, "token": "sk-secret"})),
            call("call_four", "subtract", json!({"a": 1, "b": 1})),
        ]}),
        json!({"role": "assistant", "content": "The sums are 5, 6 and 2."}),
    ];
    let mut registry = Registry::new();
    registry.add_tool(Arc::new(Add)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut agent = Agent::new(
            Arc::new(ReplayClient::from_replies(replies)),
            Arc::new(Executor::new(Arc::new(registry))),
            AgentConfig {
                mode: Mode::Native,
                ..AgentConfig::default()
            },
        );
        let archive = Arc::new(Archive::connect(location).unwrap());
        let id = agent.archive_new(archive, "python archive test").unwrap();
        let report = agent.run_turn("add them up").await.unwrap();
        assert_eq!(report.rounds.len(), 3, "{report:?}");
        id
    })
}

/// The archives pytest reads, as `TOOLCALL_TEST_ARCHIVES`' JSON: a list of `{"backend",
/// "location", "session"[, "newer"]}` (`newer`: an archive with a newer schema). The
/// PostgreSQL server is returned to be kept running while pytest runs.
fn write_archives(dir: &Path) -> (Value, Option<Postgres>) {
    let sqlite = dir.join("sessions.sqlite");
    if sqlite.exists() {
        fs::remove_file(&sqlite).unwrap();
    }
    let sqlite = sqlite.to_str().unwrap().to_owned();
    let mut archives = vec![json!({
        "backend": "sqlite", "location": sqlite, "session": write_session(&sqlite),
    })];
    let server = toolcall_testkit::require("postgres", Postgres::start());
    if let Some(server) = &server {
        let url = server.create_database("sessions").unwrap();
        let newer = server.create_database("newer").unwrap();
        server
            .psql(
                "newer",
                "CREATE TABLE toolcall_schema (version BIGINT NOT NULL); \
                 INSERT INTO toolcall_schema VALUES (1000)",
            )
            .unwrap();
        archives.push(json!({
            "backend": "postgres", "location": url, "session": write_session(&url),
            "newer": newer,
        }));
    }
    (Value::Array(archives), server)
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Shown by the harness only when the test fails (or with --nocapture).
    println!("--- {what} ---\n{stdout}\n{stderr}");
    assert!(out.status.success(), "{what} failed ({})", out.status);
}

#[test]
fn pytest_suite_passes_on_a_freshly_built_wheel() {
    let Some(python) = toolcall_testkit::require("python", toolcall_testkit::python()) else {
        return;
    };
    let root = toolcall_testkit::workspace_root();
    let target = target_dir(&root);
    let work = target.join("python-wheel");
    let wheels = work.join("wheels");
    let site = work.join("site");
    for dir in [&wheels, &site] {
        if dir.exists() {
            fs::remove_dir_all(dir).expect("clear the previous wheel");
        }
    }

    run(
        "maturin build",
        Command::new(&python)
            .args([
                "-m",
                "maturin",
                "build",
                "--quiet",
                "--profile",
                "dev",
                "--features",
                "archive",
                "--interpreter",
            ])
            .arg(&python)
            .arg("--manifest-path")
            .arg(root.join("python").join("Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", &target),
    );
    let wheel = fs::read_dir(&wheels)
        .expect("maturin wrote the wheel directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin built a wheel");

    run(
        "pip install",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-index",
                "--target",
            ])
            .arg(&site)
            .arg(&wheel),
    );

    // From the workspace root, so `import toolcall` cannot find the source tree's
    // `python/toolcall` (which lacks the compiled module) before the installed package.
    let (archives, _postgres) = write_archives(&work);

    run(
        "pytest",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir"])
            .arg(root.join("python"))
            .arg("-c")
            .arg(root.join("python").join("pyproject.toml"))
            .arg(root.join("python").join("tests"))
            .current_dir(&root)
            .env("PYTHONPATH", &site)
            .env("TOOLCALL_ROOT", &root)
            .env("TOOLCALL_TEST_ARCHIVES", archives.to_string()),
    );
}
