//! The apps pack through the agent loop: action-response replies (parsed by the
//! `action_response` format) open and close a real process, and each round's reply becomes
//! `__MCP__` lines and speech.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use toolcall_core::Parsed;
use toolcall_packs::apps;
use toolcall_run::SessionFile;

use common::proc_dir;

// covers P-APP, F-ACT-1, F-ACT-2, R-8
#[tokio::test]
async fn action_responses_open_and_close_the_test_app() {
    let dir = common::example("apps");
    let session = SessionFile::load(&dir.join("session.json")).unwrap();
    let pack = common::load(
        "apps",
        &dir,
        common::options_of(&session.setup.packs["apps"]),
    );
    let report = common::run_recorded(&session, &[&pack], false).await;
    assert_eq!(report.rounds.len(), 3);

    let open = &report.rounds[0];
    assert_eq!(open.calls.len(), 1);
    assert_eq!(open.calls[0].name, "open_app");
    assert_eq!(open.calls[0].arguments, json!({"app_name": "Test App"}));
    let pid = open.results[0].outcome.as_ref().unwrap().data["pid"]
        .as_u64()
        .unwrap();

    let close = &report.rounds[1];
    assert_eq!(close.calls[0].name, "close_app");
    let closed = &close.results[0].outcome.as_ref().unwrap().data;
    assert_eq!(closed["closed"][0]["pid"].as_u64(), Some(pid));
    assert_eq!(closed["closed"][0]["ending"], "closed");
    assert!(
        !proc_dir(pid).exists(),
        "pid {pid} still exists after close_app"
    );

    // The client side of each round: one __MCP__ line per command, the text for speech.
    let sid = "session_1764210832.530743";
    let client_out = |i: usize| {
        let r = &report.rounds[i];
        let parsed = Parsed {
            text: r.assistant_text.clone().unwrap_or_default(),
            calls: r.calls.clone(),
            ..Parsed::default()
        };
        apps::respond(&parsed, &r.results, sid)
    };
    let first = client_out(0);
    assert_eq!(first.speech, "Opening Test App.");
    assert_eq!(first.mcp_lines.len(), 1);
    let payload = apps::respond::parse_mcp_line(&first.mcp_lines[0]).unwrap();
    assert_eq!(payload["command"], "open_app");
    assert_eq!(payload["session_id"], sid);
    assert_eq!(payload["args"], json!({"app_name": "Test App"}));
    assert_eq!(client_out(1).speech, "Closing Test App.");
    assert!(
        apps::respond::parse_mcp_line(&client_out(1).mcp_lines[0]).unwrap()["command"]
            == "close_app"
    );
    // F-ACT-2: the last reply is text only.
    let last = client_out(2);
    assert!(last.mcp_lines.is_empty());
    assert_eq!(
        report.final_text.as_deref(),
        Some("Test App was opened and closed again.")
    );
}
