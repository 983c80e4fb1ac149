#![cfg(feature = "image")]
//! The highlight pack through the agent loop: seed 004's key/value reply
//! (`TOOL_CALL: highlight_object` / `OBJECT: headphones`) replayed from the shipped session.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolcall_core::Registry;
use toolcall_packs::{PackConfig, load_pack};
use toolcall_run::{Agent, AgentConfig, Executor, Mode, ReplayClient, SessionFile};

// covers P-HL, F-KV (seed 004 reply through the parser), R-8
#[tokio::test]
async fn key_value_reply_highlights_the_headphones() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/highlight");
    let session = SessionFile::load(&dir.join("session.json")).unwrap();
    assert_eq!(session.mode, Mode::Text);
    let out = tempfile::tempdir().unwrap();
    let Value::Object(mut options) = session.setup.packs["highlight"].clone() else {
        panic!()
    };
    // Keep the example folder clean: draw into a temp dir.
    options.insert("output".into(), json!(out.path().join("highlighted.png")));
    let pack = load_pack(
        "highlight",
        &PackConfig {
            base_dir: dir.clone(),
            options,
        },
    )
    .unwrap();
    let mut registry = Registry::new();
    registry.merge(pack.registry.clone()).unwrap();
    let client = Arc::new(ReplayClient::new(&session));
    let mut agent = Agent::new(
        client.clone(),
        Arc::new(Executor::new(Arc::new(registry))),
        AgentConfig {
            mode: session.mode,
            ..AgentConfig::default()
        },
    );
    let report = agent.run_turn(&session.prompt).await.unwrap();
    assert_eq!(client.remaining(), 0);
    let first = &report.rounds[0];
    assert_eq!(first.calls.len(), 1);
    assert_eq!(first.calls[0].name, "highlight_object");
    assert_eq!(first.calls[0].arguments, json!({"object": "headphones"}));
    // The friendly text after the call stays visible.
    assert!(
        first
            .assistant_text
            .as_deref()
            .unwrap_or("")
            .contains("I've highlighted them for you!")
    );
    let data = &first.results[0].outcome.as_ref().unwrap().data;
    assert_eq!(data["label"], "headphones");
    assert_eq!(data["box_2d"], json!([150, 630, 460, 950]));
    assert!(out.path().join("highlighted.png").exists());
    assert!(report.final_text.unwrap().contains("outlined in red"));
}
