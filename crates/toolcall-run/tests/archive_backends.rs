//! One archive test suite, run against every backend: each case gets a fresh, empty
//! archive from the backend under test and checks what `Archive` promises (sessions,
//! turns, calls, results, pack state snapshots, schema version), whatever stores the rows.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use toolcall_core::{CallId, ToolCall, ToolResult};
use toolcall_run::Archive;
use toolcall_run::archive::feed::Feed;
use toolcall_run::archive::{ArchiveError, CallRow, Delivery, ResultRow, SCHEMA_VERSION};
use toolcall_run::client::Message;

type Case = fn(&Archive);

/// Every case of the suite, by name.
const CASES: &[(&str, Case)] = &[
    ("schema_version", schema_version),
    ("sessions", sessions),
    ("turns", turns),
    ("calls_and_results", calls_and_results),
    ("reused_call_ids", reused_call_ids),
    ("last_reply", last_reply),
    ("pack_states", pack_states),
    ("sessions_are_apart", sessions_are_apart),
    ("leases", leases),
    ("claims", claims),
    ("tool_switches", tool_switches),
    ("feed", feed),
];

/// Runs every case, each on a new archive from `fresh`.
fn run_suite(backend: &str, mut fresh: impl FnMut(&str) -> Archive) {
    for (name, case) in CASES {
        eprintln!("{backend}: {name}");
        case(&fresh(name));
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        call_id: CallId::from(id),
        ..ToolCall::new(name, args, "hermes")
    }
}

fn schema_version(a: &Archive) {
    assert_eq!(a.schema_version().unwrap(), SCHEMA_VERSION as i64);
}

fn sessions(a: &Archive) {
    assert!(a.list_sessions().unwrap().is_empty());
    let first = a.create_session("first").unwrap();
    let second = a.create_session("second").unwrap();
    assert_ne!(first, second);
    assert!(first.starts_with("ses_"), "{first}");
    assert!(a.has_session(&first).unwrap());
    assert!(!a.has_session("ses_unknown").unwrap());
    let list = a.list_sessions().unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "newest first");
    assert_eq!(list[1].description, "first");
    assert_eq!((list[1].messages, list[1].calls), (0, 0));
    assert!(
        matches!(a.show_session("ses_unknown"), Err(ArchiveError::NoSession(id)) if id == "ses_unknown")
    );
}

fn turns(a: &Archive) {
    let s = a.create_session("turns").unwrap();
    let login = call("c1", "login", json!({"user": "ann", "password": "hunter2"}));
    let conversation = [
        Message::System {
            content: "be brief".into(),
        },
        Message::user("hi"),
        Message::Assistant {
            text: Some("let me".into()),
            calls: vec![login],
        },
        Message::Tool {
            call_id: "c1".into(),
            name: "login".into(),
            content: json!({"status": "ok", "data": {"token": "abc"}}),
        },
        Message::Assistant {
            text: Some("done".into()),
            calls: vec![],
        },
    ];
    for m in &conversation {
        a.add_message(&s, m).unwrap();
    }
    let stored = a.load_messages(&s).unwrap();
    assert_eq!(stored.len(), conversation.len());
    assert_eq!(stored[0], conversation[0]);
    assert_eq!(stored[1], conversation[1]);
    assert_eq!(stored[4], conversation[4]);
    // Secrets in arguments are stored redacted.
    let Message::Assistant { calls, .. } = &stored[2] else {
        panic!("not an assistant message: {:?}", stored[2]);
    };
    assert_eq!(calls[0].arguments["password"], json!("[REDACTED]"));
    assert_eq!(calls[0].arguments["user"], json!("ann"));
    assert_eq!(a.show_session(&s).unwrap().session.messages, 5);
}

fn calls_and_results(a: &Archive) {
    let s = a.create_session("calls").unwrap();
    let login = ToolCall {
        origin: toolcall_core::Origin {
            format: "hermes".into(),
            span: 0..0,
            repairs: vec![toolcall_core::Repair::new("trailing_comma", "removed")],
        },
        ..call("c1", "login", json!({"user": "ann", "password": "hunter2"}))
    };
    a.add_message(
        &s,
        &Message::Assistant {
            text: None,
            calls: vec![login.clone()],
        },
    )
    .unwrap();
    a.record_call(&s, 1, &login).unwrap();
    let ok = ToolResult::ok("c1".into(), "login", json!({"ok": true}));
    a.record_result(&s, &ok, Duration::from_millis(7), Delivery::Inline)
        .unwrap();
    let job = call("c2", "build", json!({}));
    a.record_call(&s, 2, &job).unwrap();
    a.record_outcome(
        &s,
        "c2",
        "build",
        &json!({"status": "running"}),
        1,
        Delivery::Inline,
    )
    .unwrap();
    a.record_outcome(
        &s,
        "c2",
        "build",
        &json!({"status": "ok", "data": "built", "api_key": "k-123"}),
        900,
        Delivery::Job,
    )
    .unwrap();

    let rec = a.show_session(&s).unwrap();
    assert_eq!(rec.session.calls, 2);
    assert_eq!(rec.calls.len(), 2);
    let first = &rec.calls[0];
    assert_eq!(
        (first.round, first.call_id.as_str(), first.name.as_str()),
        (1, "c1", "login")
    );
    assert_eq!(first.arguments["password"], json!("[REDACTED]"));
    assert_eq!(first.format, "hermes");
    assert_eq!(first.repairs[0]["kind"], json!("trailing_comma"));
    assert_eq!(first.results.len(), 1);
    assert_eq!(first.results[0].outcome, ok.to_json());
    assert_eq!(first.results[0].duration_ms, 7);
    assert_eq!(first.results[0].delivery, "inline");
    let second = &rec.calls[1];
    let deliveries: Vec<&str> = second.results.iter().map(|r| r.delivery.as_str()).collect();
    assert_eq!(deliveries, ["inline", "job"]);
    assert_eq!(second.results[1].outcome["api_key"], json!("[REDACTED]"));
    // The inline answer is what the model was told, not the job's later delivery.
    assert_eq!(
        a.inline_result(&s, "c2").unwrap(),
        Some(json!({"status": "running"}))
    );
    assert_eq!(a.inline_result(&s, "c9").unwrap(), None);
}

fn reused_call_ids(a: &Archive) {
    let s = a.create_session("reuse").unwrap();
    for (round, n) in [(1, 1), (2, 2)] {
        a.record_call(&s, round, &call("call_0", "t", json!({"n": n})))
            .unwrap();
        let r = ToolResult::ok("call_0".into(), "t", json!(n));
        a.record_result(&s, &r, Duration::ZERO, Delivery::Inline)
            .unwrap();
    }
    let rec = a.show_session(&s).unwrap();
    assert_eq!(rec.calls.len(), 2);
    assert_eq!(rec.calls[0].results.len(), 1);
    assert_eq!(rec.calls[0].results[0].outcome["data"], 1);
    assert_eq!(rec.calls[1].results[0].outcome["data"], 2);
    assert_eq!(
        a.inline_result(&s, "call_0").unwrap().unwrap()["data"],
        json!(2)
    );
}

fn last_reply(a: &Archive) {
    let s = a.create_session("reply").unwrap();
    let old = call("c1", "old", json!({}));
    a.add_message(
        &s,
        &Message::Assistant {
            text: None,
            calls: vec![old.clone()],
        },
    )
    .unwrap();
    a.record_call(&s, 1, &old).unwrap();
    a.add_message(&s, &Message::user("again")).unwrap();
    let (x, y) = (call("c2", "x", json!({})), call("c3", "y", json!({})));
    a.add_message(
        &s,
        &Message::Assistant {
            text: Some("two calls".into()),
            calls: vec![x.clone(), y.clone()],
        },
    )
    .unwrap();
    a.record_call(&s, 2, &x).unwrap();
    a.record_call(&s, 2, &y).unwrap();
    a.record_result(
        &s,
        &ToolResult::ok("c2".into(), "x", json!("done")),
        Duration::ZERO,
        Delivery::Inline,
    )
    .unwrap();
    let reply = a.calls_of_last_reply(&s).unwrap();
    let ids: Vec<&str> = reply.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["c2", "c3"]);
    assert_eq!(reply[0].name, "x");
    assert_eq!(reply[0].format, "hermes");
    assert_eq!(
        reply[0].outcome,
        Some(json!({"status": "ok", "data": "done"}))
    );
    assert_eq!(reply[1].outcome, None);
}

fn pack_states(a: &Archive) {
    let s = a.create_session("packs").unwrap();
    assert_eq!(a.load_state(&s, "world").unwrap(), None);
    a.save_state(&s, "world", &json!({"v": 1})).unwrap();
    a.save_state(&s, "world", &json!({"v": 2})).unwrap();
    a.save_state(&s, "desk", &json!(["a", "b"])).unwrap();
    assert_eq!(a.load_state(&s, "world").unwrap(), Some(json!({"v": 2})));
    let rec = a.show_session(&s).unwrap();
    let packs: Vec<&str> = rec.pack_states.keys().map(String::as_str).collect();
    assert_eq!(packs, ["desk", "world"]);
    assert_eq!(rec.pack_states["world"], json!({"v": 2}));
}

fn sessions_are_apart(a: &Archive) {
    let (s1, s2) = (
        a.create_session("one").unwrap(),
        a.create_session("two").unwrap(),
    );
    a.save_state(&s1, "world", &json!(1)).unwrap();
    a.save_state(&s2, "world", &json!(2)).unwrap();
    a.add_message(&s1, &Message::user("one")).unwrap();
    a.record_call(&s2, 1, &call("c1", "t", json!({}))).unwrap();
    a.record_result(
        &s2,
        &ToolResult::ok("c1".into(), "t", json!(2)),
        Duration::ZERO,
        Delivery::Inline,
    )
    .unwrap();
    assert_eq!(a.load_state(&s1, "world").unwrap(), Some(json!(1)));
    assert_eq!(a.load_state(&s2, "world").unwrap(), Some(json!(2)));
    assert_eq!(a.load_messages(&s2).unwrap(), vec![]);
    assert!(a.show_session(&s1).unwrap().calls.is_empty());
    assert_eq!(a.inline_result(&s1, "c1").unwrap(), None);
}

fn leases(a: &Archive) {
    let s = a.create_session("lease").unwrap();
    let long = Duration::from_secs(60);
    assert!(a.acquire_lease(&s, "replica_a", long).unwrap());
    // The holder renews; another owner waits while the lease is valid.
    assert!(a.acquire_lease(&s, "replica_a", long).unwrap());
    assert!(!a.acquire_lease(&s, "replica_b", long).unwrap());
    // Another owner's release changes nothing; the holder's frees it.
    a.release_lease(&s, "replica_b").unwrap();
    assert!(!a.acquire_lease(&s, "replica_b", long).unwrap());
    a.release_lease(&s, "replica_a").unwrap();
    assert!(a.acquire_lease(&s, "replica_b", Duration::ZERO).unwrap());
    // An expired lease (a replica that died) is taken over.
    std::thread::sleep(Duration::from_millis(5));
    assert!(a.acquire_lease(&s, "replica_a", long).unwrap());
    assert!(!a.acquire_lease(&s, "replica_b", long).unwrap());
    // Leases are per session.
    let other = a.create_session("other").unwrap();
    assert!(a.acquire_lease(&other, "replica_b", long).unwrap());
}

fn claims(a: &Archive) {
    let s = a.create_session("claims").unwrap();
    assert_eq!(a.claim_call(&s, 2, "c1", "replica_a").unwrap(), None);
    assert_eq!(a.claim_call(&s, 2, "c2", "replica_a").unwrap(), None);
    // A call is claimed once: a second claim, from anyone, gets the first.
    let again = a.claim_call(&s, 2, "c1", "replica_b").unwrap().unwrap();
    assert_eq!(
        (again.owner.as_str(), again.state.as_str()),
        ("replica_a", "running")
    );
    // The same call id in a later reply is another call.
    assert_eq!(a.claim_call(&s, 4, "c1", "replica_b").unwrap(), None);
    a.finish_claim(&s, 2, "c1").unwrap();
    let done = a.claim_call(&s, 2, "c1", "replica_a").unwrap().unwrap();
    assert_eq!(done.state, "done");
    // The calls left running are recovered as interrupted, once.
    let mut recovered = a.recover_claims(&s).unwrap();
    recovered.sort();
    assert_eq!(recovered, ["c1", "c2"]);
    assert!(a.recover_claims(&s).unwrap().is_empty());
    let c2 = a.claim_call(&s, 2, "c2", "replica_b").unwrap().unwrap();
    assert_eq!(c2.state, "interrupted");
    // Claims are per session.
    let other = a.create_session("other").unwrap();
    assert_eq!(a.claim_call(&other, 2, "c1", "replica_b").unwrap(), None);
    assert!(a.recover_claims(&s).unwrap().is_empty());
}

fn tool_switches(a: &Archive) {
    assert!(a.tool_switches().unwrap().is_empty());
    a.set_tool_switch("move_player", false).unwrap();
    a.set_tool_switch("look", true).unwrap();
    a.set_tool_switch("move_player", true).unwrap();
    a.set_tool_switch("look", false).unwrap();
    let switches: Vec<(String, bool)> = a.tool_switches().unwrap().into_iter().collect();
    assert_eq!(
        switches,
        [("look".to_owned(), false), ("move_player".to_owned(), true)]
    );
}

/// A call row as replica `replica` records it.
fn row_of(call_id: &str, replica: &str) -> CallRow {
    CallRow {
        round: 1,
        call_id: call_id.into(),
        name: "t".into(),
        arguments: "{}".into(),
        format: "hermes".into(),
        repairs: "[]".into(),
        replica: replica.into(),
    }
}

fn result_of(call_id: &str) -> ResultRow {
    ResultRow {
        call_id: call_id.into(),
        name: "t".into(),
        outcome: r#"{"status":"ok","data":1}"#.into(),
        duration_ms: 5,
        delivery: "inline".into(),
    }
}

fn feed(a: &Archive) {
    let s = a.create_session("feed").unwrap();
    a.backend()
        .record_call(&s, &row_of("before", "replica_other"))
        .unwrap();
    let mut feed = Feed::start(a, "replica_me", 0).unwrap();
    let mut with_backlog = Feed::start(a, "replica_me", 10).unwrap();
    assert_eq!(feed.poll(a).unwrap(), Default::default());
    for (id, replica) in [("mine", "replica_me"), ("theirs", "replica_other")] {
        a.backend().record_call(&s, &row_of(id, replica)).unwrap();
        a.backend().record_outcome(&s, &result_of(id)).unwrap();
    }
    // Only the other replica's call and its result, each once.
    let batch = feed.poll(a).unwrap();
    let calls: Vec<&str> = batch
        .calls
        .iter()
        .map(|c| c.call.call_id.as_str())
        .collect();
    assert_eq!(calls, ["theirs"]);
    assert_eq!(batch.calls[0].session, s);
    assert_eq!(batch.calls[0].call.replica, "replica_other");
    assert_eq!(batch.results.len(), 1);
    assert_eq!(batch.results[0].result.call_id, "theirs");
    assert_eq!(batch.results[0].call_row, batch.calls[0].row);
    assert_eq!(feed.poll(a).unwrap(), Default::default());
    // A feed started with a backlog also hands out the calls before it started.
    let calls: Vec<String> = with_backlog
        .poll(a)
        .unwrap()
        .calls
        .into_iter()
        .map(|c| c.call.call_id)
        .collect();
    assert_eq!(calls, ["before", "theirs"]);
    // A call recorded through the archive names this process.
    a.record_call(&s, 2, &call("c9", "t", json!({}))).unwrap();
    let rec = a.backend().calls(&s).unwrap();
    assert_eq!(
        rec.last().unwrap().1.replica,
        toolcall_run::archive::replica_owner()
    );
}

#[test]
fn sqlite_file_backend() {
    let dir = tempfile::tempdir().unwrap();
    run_suite("sqlite", |name| {
        Archive::connect(dir.path().join(format!("{name}.sqlite")).to_str().unwrap()).unwrap()
    });
}

#[test]
fn sqlite_memory_backend() {
    run_suite("sqlite :memory:", |_| Archive::connect(":memory:").unwrap());
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_backend() {
    use toolcall_testkit::postgres::Postgres;
    let Some(server) = toolcall_testkit::require("postgres", Postgres::start()) else {
        return;
    };
    run_suite("postgres", |name| {
        let url = server.create_database(name).unwrap();
        Archive::connect(&url).unwrap()
    });

    // Two replicas opening one new database at once apply the migrations once.
    let url = server.create_database("racing").unwrap();
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Archive::connect(&url).map(|a| a.schema_version()))
        })
        .collect();
    for opener in openers {
        assert_eq!(
            opener.join().unwrap().unwrap().unwrap(),
            SCHEMA_VERSION as i64
        );
    }

    // A database from a newer build is refused, untouched.
    let newer = SCHEMA_VERSION as i64 + 1;
    server
        .psql(
            "racing",
            &format!("UPDATE toolcall_schema SET version = {newer}"),
        )
        .unwrap();
    let err = match Archive::connect(&url) {
        Err(e) => e,
        Ok(_) => panic!("a newer archive was opened"),
    };
    assert!(
        matches!(err, ArchiveError::NewerSchema { found, .. } if found == newer),
        "{err}"
    );
    assert_eq!(
        server
            .psql("racing", "SELECT version FROM toolcall_schema")
            .unwrap(),
        newer.to_string()
    );
}

/// PostgreSQL hands out row ids when rows are inserted, not when they commit: a feed still
/// reads a row that commits after a row with a higher id was read.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_feed_reads_a_row_that_commits_after_a_later_one() {
    use toolcall_testkit::postgres::Postgres;
    let Some(server) = toolcall_testkit::require("postgres", Postgres::start()) else {
        return;
    };
    let url = server.create_database("late").unwrap();
    let a = Archive::connect(&url).unwrap();
    let s = a.create_session("late").unwrap();
    let mut feed = Feed::start(&a, "replica_me", 0).unwrap();
    let (mut client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = client.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO calls (session_id, round, call_id, name, arguments, format, repairs, replica)
         VALUES ($1, 1, 'late', 't', '{}', 'hermes', '[]', 'replica_other')",
        &[&s],
    )
    .await
    .unwrap();
    a.backend()
        .record_call(&s, &row_of("early", "replica_other"))
        .unwrap();
    let ids = |batch: toolcall_run::archive::feed::FeedBatch| -> Vec<String> {
        batch.calls.into_iter().map(|c| c.call.call_id).collect()
    };
    assert_eq!(ids(feed.poll(&a).unwrap()), ["early"]);
    tx.commit().await.unwrap();
    assert_eq!(ids(feed.poll(&a).unwrap()), ["late"]);
    assert!(ids(feed.poll(&a).unwrap()).is_empty());
}
