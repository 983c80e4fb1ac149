//! X-8: a process killed with SIGKILL in the middle of a turn loses no finished call.
//!
//! The test binary re-runs itself as the child (`child_turn_for_kill_test`, which does
//! nothing unless `TOOLCALL_KILL_CHILD_ARCHIVE` is set): round 1 runs two calls, round 2 a
//! call that never finishes. The parent kills the child once round 2 is under way and
//! reopens the archive.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use toolcall_run::{Agent, AgentConfig, Archive, Executor, Mode, ReplayClient};

const ENV: &str = "TOOLCALL_KILL_CHILD_ARCHIVE";

#[tokio::test]
async fn child_turn_for_kill_test() {
    let Ok(path) = std::env::var(ENV) else {
        return;
    };
    let replay = ReplayClient::from_replies(vec![
        calls_message(vec![
            tool_call("call_one", "echo", r#"{"text":"1"}"#),
            tool_call("call_two", "flaky", "{}"),
        ]),
        calls_message(vec![tool_call("call_hang", "sleep", r#"{"ms":600000}"#)]),
        text_message("never reached"),
    ]);
    let mut agent = Agent::new(
        Arc::new(replay),
        Arc::new(
            Executor::new(Arc::new(registry())).with_default_timeout(Duration::from_secs(3600)),
        ),
        AgentConfig {
            mode: Mode::Native,
            ..AgentConfig::default()
        },
    );
    agent
        .archive_new(Arc::new(Archive::open(path.as_ref()).unwrap()), "killed")
        .unwrap();
    agent.run_turn("work").await.unwrap();
    panic!("the hanging call finished");
}

// covers X-8
#[test]
fn killed_process_keeps_every_finished_call_and_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.sqlite");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_turn_for_kill_test", "--exact", "--nocapture"])
        .env(ENV, &path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Wait until the hanging call of round 2 is recorded: round 1 is then complete.
    loop {
        assert!(Instant::now() < deadline, "child never reached round 2");
        assert!(child.try_wait().unwrap().is_none(), "child exited early");
        if path.exists()
            && let Ok(a) = Archive::open(&path)
            && let Some(s) = a.list_sessions().ok().and_then(|l| l.into_iter().next())
            && a.show_session(&s.id).map(|r| r.calls.len()).unwrap_or(0) == 3
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();

    let a = Archive::open(&path).unwrap();
    let s = &a.list_sessions().unwrap()[0];
    let rec = a.show_session(&s.id).unwrap();
    let ids: Vec<&str> = rec.calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["call_one", "call_two", "call_hang"]);
    assert_eq!(rec.calls[0].results.len(), 1);
    assert_eq!(rec.calls[0].results[0].outcome["data"]["echo"]["text"], "1");
    assert_eq!(
        rec.calls[1].results[0].outcome["error"]["code"],
        "tool_failed"
    );
    assert!(
        rec.calls[2].results.is_empty(),
        "the unfinished call has no result"
    );
    // The conversation up to the kill is there too.
    assert!(rec.messages.len() >= 5);
}
