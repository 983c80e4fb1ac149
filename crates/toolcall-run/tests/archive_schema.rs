//! Archive schema versions: an archive written before versions were recorded (today's
//! DDL, frozen in `tests/fixtures/archive_schema_unversioned.sql`) opens with everything in
//! it, is brought to the current version, and takes new writes; an archive from a newer
//! build is refused untouched.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rusqlite::Connection;
use serde_json::json;
use toolcall_core::{ToolCall, ToolResult};
use toolcall_run::Archive;
use toolcall_run::archive::{ArchiveError, Delivery, SCHEMA_VERSION, schema_version};
use toolcall_run::client::Message;

const UNVERSIONED: &str = include_str!("fixtures/archive_schema_unversioned.sql");

// covers X-8
#[test]
fn an_archive_written_before_schema_versions_opens_with_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    {
        // What the archive code wrote before versions: rows in today's exact shape.
        let c = Connection::open(&path).unwrap();
        let _: String = c
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        c.execute_batch(UNVERSIONED).unwrap();
        c.execute_batch(
            r#"
            INSERT INTO sessions (id, description) VALUES ('ses_old', 'before versions');
            INSERT INTO messages (session_id, role, message)
                VALUES ('ses_old', 'user', '{"role":"user","content":"hello"}');
            INSERT INTO calls (session_id, round, call_id, name, arguments, format, repairs)
                VALUES ('ses_old', 1, 'call_1', 'echo', '{"text":"hi"}', 'hermes', '[]');
            INSERT INTO results (session_id, call_id, call_row, name, outcome, duration_ms, delivery)
                VALUES ('ses_old', 'call_1', 1, 'echo', '{"status":"ok","data":"hi"}', 4, 'inline');
            INSERT INTO pack_states (session_id, pack, snapshot)
                VALUES ('ses_old', 'world', '{"room":"hall"}');
            "#,
        )
        .unwrap();
        assert_eq!(
            c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            0
        );
    }

    let archive = Archive::open(&path).unwrap();
    let rec = archive.show_session("ses_old").unwrap();
    assert_eq!(rec.session.description, "before versions");
    assert_eq!(rec.messages, vec![Message::user("hello")]);
    assert_eq!(rec.calls[0].call_id, "call_1");
    assert_eq!(
        rec.calls[0].results[0].outcome,
        json!({"status":"ok","data":"hi"})
    );
    assert_eq!(rec.pack_states["world"], json!({"room": "hall"}));
    assert_eq!(
        archive.inline_result("ses_old", "call_1").unwrap(),
        Some(json!({"status":"ok","data":"hi"}))
    );

    // It takes new writes, and records that it has the current schema.
    let call = ToolCall::new("echo", json!({"text": "again"}), "hermes");
    archive.record_call("ses_old", 1, &call).unwrap();
    let result = ToolResult::ok(call.call_id.clone(), "echo", json!("again"));
    archive
        .record_result("ses_old", &result, Duration::ZERO, Delivery::Inline)
        .unwrap();
    assert_eq!(archive.show_session("ses_old").unwrap().calls.len(), 2);
    drop(archive);
    assert_eq!(schema_version(&path).unwrap(), SCHEMA_VERSION as i64);
    // Opening again changes nothing.
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.list_sessions().unwrap().len(), 1);
}

// covers X-8
#[test]
fn an_archive_from_a_newer_build_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.sqlite");
    let newer = SCHEMA_VERSION as i64 + 1;
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE future (x INTEGER);").unwrap();
        c.pragma_update(None, "user_version", newer).unwrap();
    }
    let err = match Archive::open(&path) {
        Err(e) => e,
        Ok(_) => panic!("a newer archive was opened"),
    };
    assert!(
        matches!(err, ArchiveError::NewerSchema { found, .. } if found == newer),
        "{err}"
    );
    assert!(err.to_string().contains("newer"), "{err}");
    assert_eq!(schema_version(&path).unwrap(), newer);
    let c = Connection::open(&path).unwrap();
    let tables: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'sessions'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
}
