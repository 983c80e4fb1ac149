#![cfg(feature = "image")]
//! The highlight pack through the agent loop: the highlight app's key/value reply
//! (`TOOL_CALL: highlight_object` / `OBJECT: headphones`) replayed from the shipped session.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use toolcall_run::{Mode, SessionFile};

// covers P-HL, F-KV (highlight app reply through the parser), R-8
#[tokio::test]
async fn key_value_reply_highlights_the_headphones() {
    let dir = common::example("highlight");
    let session = SessionFile::load(&dir.join("session.json")).unwrap();
    assert_eq!(session.mode, Mode::Text);
    let out = tempfile::tempdir().unwrap();
    let mut options = common::options_of(&session.setup.packs["highlight"]);
    // Keep the example folder clean: draw into a temp dir.
    options.insert("output".into(), json!(out.path().join("highlighted.png")));
    let pack = common::load("highlight", &dir, options);
    let report = common::run_recorded(&session, &[&pack], false).await;
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
