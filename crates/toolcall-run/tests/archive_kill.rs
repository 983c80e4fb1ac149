//! X-8: a process killed with SIGKILL in the middle of a turn loses no finished call, and
//! a resumed text-format session answers every call of the interrupted reply.
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
use toolcall_run::client::Message;
use toolcall_run::client::to_chat_messages;
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
    // Killed once the hanging call of round 2 is recorded: round 1 is then complete.
    kill_when_recorded("child_turn_for_kill_test", ENV, &path, 3);

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

const TEXT_ENV: &str = "TOOLCALL_KILL_CHILD_ARCHIVE_TEXT";

/// One text-format reply with three calls: the first finishes, the second never does,
/// the third never starts.
const TEXT_REPLY: &str = "Working.\n\
    <tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"1\"}}</tool_call>\n\
    <tool_call>{\"name\": \"sleep\", \"arguments\": {\"ms\": 600000}}</tool_call>\n\
    <tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"3\"}}</tool_call>";

fn text_agent(replay: Arc<ReplayClient>) -> Agent {
    Agent::new(
        replay,
        Arc::new(
            Executor::new(Arc::new(registry())).with_default_timeout(Duration::from_secs(3600)),
        ),
        AgentConfig {
            mode: Mode::Text,
            ..AgentConfig::default()
        },
    )
}

#[tokio::test]
async fn child_text_turn_for_kill_test() {
    let Ok(path) = std::env::var(TEXT_ENV) else {
        return;
    };
    let replay = ReplayClient::from_replies(vec![
        text_message(TEXT_REPLY),
        text_message("never reached"),
    ]);
    let mut agent = text_agent(Arc::new(replay));
    agent
        .archive_new(Arc::new(Archive::open(path.as_ref()).unwrap()), "killed")
        .unwrap();
    agent.run_turn("work").await.unwrap();
    panic!("the hanging call finished");
}

// covers X-8, X-2
#[tokio::test]
async fn resume_after_a_kill_mid_text_round_sends_every_result_in_the_text_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill-text.sqlite");
    // Killed once the hanging second call is recorded: the first has its result then.
    let session = kill_when_recorded("child_text_turn_for_kill_test", TEXT_ENV, &path, 2);

    let archive = Arc::new(Archive::open(&path).unwrap());
    let archived = archive.show_session(&session).unwrap().calls;
    let replay = Arc::new(ReplayClient::from_replies(vec![text_message("Resumed.")]));
    let mut agent = text_agent(replay.clone());
    agent.archive_resume(archive.clone(), &session).unwrap();
    agent.run_turn("go on").await.unwrap();

    let sent = &replay.requests()[0].messages;
    let n = sent.len();
    assert!(
        matches!(&sent[n - 3], Message::Assistant { text: Some(t), calls } if t.contains("Working.") && calls.is_empty()),
        "{sent:?}"
    );
    let Message::TextResults { results } = &sent[n - 2] else {
        panic!("the reply's calls are not answered: {sent:?}")
    };
    assert!(matches!(&sent[n - 1], Message::User { content } if content == "go on"));
    // One answer per call written, in order, under the ids the calls ran with.
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0].call_id.as_str(), archived[0].call_id);
    assert_eq!(results[0].content["data"]["echo"]["text"], "1");
    assert_eq!(results[1].call_id.as_str(), archived[1].call_id);
    assert_eq!(results[1].name, "sleep");
    assert_eq!(results[1].content["error"]["code"], "cancelled");
    // The hanging call may well have done its work: never tell the model it did not run.
    for unanswered in &results[1..] {
        let message = unanswered.content["error"]["message"].as_str().unwrap();
        assert!(message.contains("may have run"), "{message}");
        assert!(!message.contains("not run"), "{message}");
        assert_eq!(unanswered.content["error"]["details"]["outcome"], "unknown");
    }
    assert_eq!(results[2].name, "echo");
    assert_eq!(results[2].content["error"]["code"], "cancelled");
    assert_ne!(results[2].call_id, results[0].call_id);
    // On the wire they are the text format's results message.
    let wire = serde_json::to_value(to_chat_messages(sent, &Default::default())).unwrap();
    let wire = wire.as_array().unwrap();
    let text = wire[n - 2]["content"].as_str().unwrap();
    assert_eq!(text.matches("<tool_response").count(), 3, "{text}");
    // The answers are archived, so the next resume finds the conversation whole.
    let stored = archive.load_messages(&session).unwrap();
    assert_eq!(&stored[n - 2], &sent[n - 2]);
    // And the hanging call is paired with the one answer it was given.
    let calls = archive.show_session(&session).unwrap().calls;
    assert_eq!(calls[1].results.len(), 1, "{:?}", calls[1]);
    assert_eq!(calls[1].results[0].outcome, results[1].content);
}

/// Runs the child test `name` (archive path in `env`), SIGKILLs it once its session has
/// `calls` calls archived, and returns that session's id.
fn kill_when_recorded(name: &str, env: &str, path: &std::path::Path, calls: usize) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture"])
        .env(env, path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let session = loop {
        assert!(
            Instant::now() < deadline,
            "{name} never archived {calls} calls"
        );
        assert!(child.try_wait().unwrap().is_none(), "child exited early");
        if path.exists()
            && let Ok(a) = Archive::open(path)
            && let Some(s) = a.list_sessions().ok().and_then(|l| l.into_iter().next())
            && a.show_session(&s.id).map(|r| r.calls.len()).unwrap_or(0) == calls
        {
            break s.id;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    session
}
