//! Helpers shared by the pack tests: where the examples and fixtures are, loading a pack
//! from a session's options, calling one tool, replaying a recorded session through the
//! agent loop, and the "shipped tools file matches the pack" check.
// Each test file uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolcall_core::{CallId, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolResult};
use toolcall_packs::{Pack, PackConfig, load_pack};
use toolcall_run::{Agent, AgentConfig, Executor, ReplayClient, SessionFile, TurnReport};

/// `examples/<name>` of the repository.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// This crate's `tests/fixtures`.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `session.json` of a folder as plain JSON.
pub fn read_session(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap()
}

/// A pack's options as given in a session's `setup.packs` (must be an object).
pub fn options_of(options: &Value) -> Map<String, Value> {
    let Value::Object(options) = options.clone() else {
        panic!("pack options are not an object: {options}")
    };
    options
}

/// Options from `(key, string value)` pairs.
pub fn options(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect()
}

pub fn load(name: &str, base_dir: &Path, options: Map<String, Value>) -> Pack {
    load_pack(
        name,
        &PackConfig {
            base_dir: base_dir.to_owned(),
            options,
        },
    )
    .unwrap()
}

/// The world pack over `tests/fixtures/world.json`.
pub fn world_fixture_pack() -> Pack {
    load("world", &fixtures(), options(&[("world", "world.json")]))
}

/// The handler of one tool of a pack.
pub fn handler(p: &Pack, name: &str) -> Arc<dyn Tool> {
    p.registry.get(name).unwrap().handler.clone().unwrap()
}

/// Calls one tool of a pack directly (no executor).
pub async fn call_with(
    p: &Pack,
    ctx: &ToolContext,
    name: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    handler(p, name).call(ctx, args).await
}

/// A virtual X display; `None` (the test skips) when Xvfb cannot start, unless
/// `TOOLCALL_REQUIRE_XVFB=1`, which makes that a failure.
#[cfg(feature = "computer")]
pub fn start_xvfb(width: u32, height: u32) -> Option<toolcall_packs::computer::xvfb::Xvfb> {
    start_xvfb_with_fonts(
        width,
        height,
        toolcall_packs::computer::xvfb::Fonts::Installed,
    )
}

/// [`start_xvfb`] on a server offering `fonts`.
#[cfg(feature = "computer")]
pub fn start_xvfb_with_fonts(
    width: u32,
    height: u32,
    fonts: toolcall_packs::computer::xvfb::Fonts,
) -> Option<toolcall_packs::computer::xvfb::Xvfb> {
    match toolcall_packs::computer::xvfb::Xvfb::start_with_fonts(width, height, fonts) {
        Ok(x) => Some(x),
        Err(e) if std::env::var("TOOLCALL_REQUIRE_XVFB").as_deref() == Ok("1") => {
            panic!("TOOLCALL_REQUIRE_XVFB=1 but Xvfb did not start: {e}")
        }
        Err(e) => {
            eprintln!("skipping computer-use test: {e}");
            None
        }
    }
}

/// The `computer_use` tool of a computer pack with `options`.
#[cfg(feature = "computer")]
pub fn computer_tool(options: &Value) -> Arc<dyn Tool> {
    let pack = load(
        "computer",
        &std::env::temp_dir(),
        options.as_object().unwrap().clone(),
    );
    handler(&pack, "computer_use")
}

/// Replays `session` against `packs` through the agent loop and checks every recorded
/// reply was used.
pub async fn run_recorded(session: &SessionFile, packs: &[&Pack], await_jobs: bool) -> TurnReport {
    let mut registry = Registry::new();
    for pack in packs {
        registry.merge(pack.registry.clone()).unwrap();
    }
    let client = Arc::new(ReplayClient::new(session));
    let mut agent = Agent::new(
        client.clone(),
        Arc::new(Executor::new(Arc::new(registry))),
        AgentConfig {
            mode: session.mode,
            await_jobs_before_request: await_jobs,
            ..AgentConfig::default()
        },
    );
    let report = agent.run_turn(&session.prompt).await.unwrap();
    assert_eq!(client.remaining(), 0, "every recorded reply was used");
    report
}

/// The results come back with the calls' ids, in the calls' order.
pub fn assert_result_ids(results: &[ToolResult], ids: &[CallId]) {
    assert_eq!(
        results
            .iter()
            .map(|r| r.call_id.clone())
            .collect::<Vec<_>>(),
        ids
    );
}

pub fn proc_dir(pid: u64) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

/// The shipped `examples/<name>/tools.json` is exactly what the pack registers with the
/// example session's options. `UPDATE_TOOLS_FILES=1` rewrites it.
pub fn assert_shipped_tools_file_matches(name: &str) {
    let examples = example(name);
    let session = read_session(&examples);
    let pack = load(
        name,
        &examples,
        options_of(&session["setup"]["packs"][name]),
    );
    let specs: Vec<toolcall_core::ToolSpec> = pack.registry.specs().cloned().collect();
    let path = examples.join("tools.json");
    if std::env::var_os("UPDATE_TOOLS_FILES").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&specs).unwrap() + "\n").unwrap();
    }
    let shipped = Registry::from_tools_file(&path).unwrap();
    let shipped: Vec<toolcall_core::ToolSpec> = shipped.specs().cloned().collect();
    assert_eq!(
        shipped,
        specs,
        "run with UPDATE_TOOLS_FILES=1 to refresh {}",
        path.display()
    );
}
