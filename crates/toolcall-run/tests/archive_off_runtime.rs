//! Archive writes and pack-state snapshots never run on the async runtime's threads: on a
//! one-thread runtime, another task keeps running while the archive is stuck on a locked
//! file, and while a snapshot is being taken.
//!
//! Each test's slow step waits for a signal that only the other task can send, so the
//! outcome depends on scheduling alone: when the step runs on the runtime's only thread,
//! the other task cannot run until the step gives up (a bounded wait, so a regression
//! fails instead of hanging).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolcall_run::{Agent, AgentConfig, Archive, Executor, Mode, ReplayClient};

/// A hang guard, never a speed claim: loose enough that a loaded machine never reaches it
/// when the step runs off the runtime (the other task then runs at once), while a
/// regression still ends in a failure instead of a hang.
const GIVE_UP: Duration = Duration::from_secs(30);

fn agent() -> Agent {
    Agent::new(
        Arc::new(ReplayClient::from_replies(vec![
            calls_message(vec![tool_call("call_a", "echo", r#"{"text":"hi"}"#)]),
            text_message("Done."),
        ])),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Native,
            ..AgentConfig::default()
        },
    )
}

/// A task on the test's runtime that says once it ran.
fn other_task() -> (Arc<AtomicBool>, mpsc::Receiver<()>) {
    let ran = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = ran.clone();
    tokio::spawn(async move {
        flag.store(true, Ordering::SeqCst);
        let _ = tx.send(());
    });
    (ran, rx)
}

// covers X-8
#[tokio::test(flavor = "current_thread")]
async fn the_runtime_keeps_running_while_an_archive_write_waits_for_a_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let mut agent = agent();
    let sid = agent
        .archive_new(Arc::new(Archive::open(&path).unwrap()), "locked")
        .unwrap();

    // Another connection holds the write lock until the other task has run.
    let (locked_tx, locked_rx) = mpsc::channel();
    let (ran, signal) = other_task();
    let holder_path = path.clone();
    let holder = std::thread::spawn(move || {
        let c = rusqlite::Connection::open(&holder_path).unwrap();
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        let in_time = signal.recv_timeout(GIVE_UP).is_ok();
        c.execute_batch("ROLLBACK").unwrap();
        in_time
    });
    locked_rx.recv().unwrap();

    // A write blocking the runtime would wait out the archive's busy timeout (shorter than
    // GIVE_UP) and fail the turn: the holder's verdict is checked first, as the cause.
    let report = agent.run_turn("go").await;
    assert!(
        holder.join().unwrap(),
        "the other task ran only after the lock was given up: a write blocked the runtime"
    );
    let report = report.unwrap();
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(report.final_text.as_deref(), Some("Done."));

    // Everything of the turn was written once the lock was free.
    drop(agent);
    let rec = Archive::open(&path).unwrap().show_session(&sid).unwrap();
    assert_eq!(rec.messages.len(), 4, "{:?}", rec.messages);
    assert_eq!(rec.calls.len(), 1);
    assert_eq!(
        rec.calls[0].results[0].outcome["data"]["echo"]["text"],
        "hi"
    );
}

// covers X-8
#[tokio::test(flavor = "current_thread")]
async fn the_runtime_keeps_running_while_a_pack_state_snapshot_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let mut agent = agent();
    let sid = agent
        .archive_new(Arc::new(Archive::open(&path).unwrap()), "snapshot")
        .unwrap();
    let runtime = tokio::runtime::Handle::current();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    agent.add_state_saver(
        "slow",
        Arc::new(move || -> Value {
            // A snapshot that cannot finish before a task it starts on the runtime ran.
            let (tx, rx) = mpsc::channel();
            let flag = flag.clone();
            runtime.spawn(async move {
                flag.store(true, Ordering::SeqCst);
                let _ = tx.send(());
            });
            let in_time = rx.recv_timeout(GIVE_UP).is_ok();
            json!({ "other_task_ran_first": in_time })
        }),
    );
    agent.run_turn("go").await.unwrap();
    drop(agent);
    assert!(ran.load(Ordering::SeqCst));
    let state = Archive::open(&path)
        .unwrap()
        .load_state(&sid, "slow")
        .unwrap()
        .unwrap();
    assert_eq!(
        state,
        json!({"other_task_ran_first": true}),
        "the snapshot blocked the runtime"
    );
}
