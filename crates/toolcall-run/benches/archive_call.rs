//! What archiving one server-side call costs on each archive backend, in one run: claim the
//! call, record it, record its result, settle the claim (the four writes a gateway turn makes
//! per call, each committed before the next). SQLite: a WAL file in a temp dir. PostgreSQL: a
//! throwaway local server on loopback (`toolcall_testkit::postgres`, started with `fsync`
//! off like every test cluster, so its figure is the client and protocol cost, not a disk
//! flush), skipped with a message when PostgreSQL is not installed.
//! `cargo bench -p toolcall-run --bench archive_call`
// Bench code: a failed unwrap is a failed bench.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolcall_core::{CallId, ToolCall, ToolResult};
use toolcall_run::Archive;
use toolcall_run::archive::Delivery;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// One call's four archive writes.
fn archive_one_call(archive: &Archive, session: &str) {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let id = format!("call_{n}");
    let call = ToolCall {
        call_id: CallId::from(id.as_str()),
        ..ToolCall::new(
            "move_player",
            json!({"playerId": "char_001", "to": "loc_beach"}),
            "hermes",
        )
    };
    assert!(
        archive
            .claim_call(session, 1, &id, "bench")
            .unwrap()
            .is_none()
    );
    archive.record_call(session, 1, &call).unwrap();
    let result = ToolResult::ok(call.call_id.clone(), "move_player", json!({"moved": true}));
    archive
        .record_result(session, &result, Duration::from_millis(1), Delivery::Inline)
        .unwrap();
    archive.finish_claim(session, 1, &id).unwrap();
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("archive_one_call");
    group.measurement_time(Duration::from_secs(5));

    let dir = tempfile::tempdir().unwrap();
    let sqlite = Archive::open(&dir.path().join("bench.sqlite")).unwrap();
    let session = sqlite.create_session("bench").unwrap();
    group.bench_function("sqlite_file", |b| {
        b.iter(|| archive_one_call(&sqlite, &session))
    });

    let server =
        toolcall_testkit::require("postgres", toolcall_testkit::postgres::Postgres::start());
    if let Some(server) = &server {
        let url = server.create_database("bench").unwrap();
        let pg = Archive::connect(&url).unwrap();
        let session = pg.create_session("bench").unwrap();
        group.bench_function("postgres_loopback", |b| {
            b.iter(|| archive_one_call(&pg, &session))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
