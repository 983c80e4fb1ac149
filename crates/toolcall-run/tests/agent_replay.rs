//! The loop with the replay client: jobs delivered under their call id, archive contents,
//! pack-state snapshots, resume, and replay exhaustion.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolcall_core::{ToolKind, ToolSpec};
use toolcall_run::client::Message;
use toolcall_run::{
    Agent, AgentConfig, AgentError, Archive, ClientError, Executor, Mode, ReplayClient, SessionFile,
};

struct SlowJob;

#[async_trait::async_trait]
impl toolcall_core::Tool for SlowJob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("render_video", "A long job", json!({"type":"object"}))
            .with_kind(ToolKind::Job)
    }
    async fn call(
        &self,
        _: &toolcall_core::ToolContext,
        a: Value,
    ) -> Result<toolcall_core::ToolOutput, toolcall_core::ToolError> {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok(json!({"frames": a["frames"]}).into())
    }
}

// covers X-4, X-8
#[tokio::test]
async fn job_results_reach_the_model_and_the_archive_under_the_call_id() {
    let mut reg = registry();
    reg.add_tool(Arc::new(SlowJob)).unwrap();
    let replay = Arc::new(ReplayClient::from_replies(vec![
        calls_message(vec![tool_call(
            "call_job",
            "render_video",
            r#"{"frames":24}"#,
        )]),
        text_message("Rendering has started."),
        text_message("The video has 24 frames."),
    ]));
    let mut agent = Agent::new(
        replay.clone(),
        Arc::new(Executor::new(Arc::new(reg))),
        AgentConfig {
            mode: Mode::Native,
            ..AgentConfig::default()
        },
    );
    let archive = Arc::new(Archive::in_memory().unwrap());
    let sid = agent.archive_new(archive.clone(), "jobs").unwrap();
    let report = agent.run_turn("render it").await.unwrap();
    assert_eq!(
        report.final_text.as_deref(),
        Some("The video has 24 frames.")
    );
    assert_eq!(
        report.rounds[0].results[0].to_json(),
        json!({"status":"ok","data":{"job_id":"job_call_job","state":"running"}})
    );
    let delivered: Vec<_> = report.rounds.iter().flat_map(|r| &r.job_results).collect();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].call_id.as_str(), "call_job");
    // The third request carries the job result tagged with the call id.
    let reqs = replay.requests();
    assert_eq!(reqs.len(), 3);
    let job_msg = reqs[2]
        .messages
        .iter()
        .find_map(|m| match m {
            Message::JobResult {
                call_id, content, ..
            } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(job_msg.0.as_str(), "call_job");
    assert_eq!(job_msg.1, json!({"status":"ok","data":{"frames":24}}));
    let rec = archive.show_session(&sid).unwrap();
    let c = &rec.calls[0];
    assert_eq!(c.call_id, "call_job");
    let deliveries: Vec<&str> = c.results.iter().map(|r| r.delivery.as_str()).collect();
    assert_eq!(deliveries, ["inline", "job"]);
    assert_eq!(c.results[1].outcome["data"]["frames"], 24);
}

// covers X-8, X-7
#[tokio::test]
async fn archive_keeps_calls_results_messages_and_pack_states_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let replay = Arc::new(ReplayClient::from_replies(vec![
        calls_message(vec![
            tool_call("c1", "echo", r#"{"text":"a","api_key":"sk-secret"}"#),
            tool_call("c2", "flaky", "{}"),
        ]),
        text_message("first turn over"),
    ]));
    let counter = Arc::new(Mutex::new(0u32));
    let mut agent = Agent::new(
        replay.clone(),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let sid = agent
        .archive_new(Arc::new(Archive::open(&path).unwrap()), "demo")
        .unwrap();
    let c2 = counter.clone();
    agent.add_state_saver(
        "world",
        Arc::new(move || {
            let mut n = c2.lock().unwrap();
            *n += 1;
            json!({"saves": *n})
        }),
    );
    agent.run_turn("hello").await.unwrap();
    drop(agent);

    let archive = Arc::new(Archive::open(&path).unwrap());
    let rec = archive.show_session(&sid).unwrap();
    assert_eq!(rec.session.description, "demo");
    let ids: Vec<&str> = rec.calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    assert_eq!(rec.calls[0].arguments["api_key"], "[REDACTED]");
    assert_eq!(rec.calls[0].format, "openai_chat");
    assert_eq!(
        rec.calls[1].results[0].outcome["error"]["code"],
        "tool_failed"
    );
    assert_eq!(rec.pack_states["world"], json!({"saves": 1}));
    let raw = std::fs::read(&path).unwrap();
    let wal = std::fs::read(dir.path().join("s.sqlite-wal")).unwrap_or_default();
    for bytes in [raw, wal] {
        assert!(!String::from_utf8_lossy(&bytes).contains("sk-secret"));
    }
    let roles: Vec<&str> = rec
        .messages
        .iter()
        .map(|m| match m {
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
            _ => "other",
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);

    // Resume: the next turn sees the whole earlier conversation.
    let replay2 = Arc::new(ReplayClient::from_replies(vec![text_message("second")]));
    let mut agent = Agent::new(
        replay2.clone(),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    agent.archive_resume(archive.clone(), &sid).unwrap();
    agent.run_turn("again").await.unwrap();
    assert_eq!(replay2.requests()[0].messages.len(), 6);
    assert_eq!(archive.load_messages(&sid).unwrap().len(), 7);
    assert!(matches!(
        Agent::new(
            replay2,
            Arc::new(Executor::new(Arc::new(registry()))),
            AgentConfig::default()
        )
        .archive_resume(archive, "ses_missing"),
        Err(AgentError::Archive(_))
    ));
}

// covers R-7
#[tokio::test]
async fn replay_says_when_it_runs_out_of_replies() {
    let replay = Arc::new(ReplayClient::from_replies(vec![calls_message(vec![
        tool_call("c1", "echo", "{}"),
    ])]));
    let mut agent = Agent::new(
        replay,
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let err = agent.run_turn("x").await.unwrap_err();
    assert!(matches!(
        err,
        AgentError::Client(ClientError::ReplayExhausted {
            recorded: 1,
            asked: 2
        })
    ));
    assert!(err.to_string().contains("1 replies"));
}

// covers X-6
#[test]
fn session_files_load_with_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(
        &p,
        r#"{"description":"d","prompt":"p","setup":{"packs":{"world":{"world":"w.json"}},"tools":["t.json"]},
            "replies":[{"role":"assistant","content":"hi"}]}"#,
    )
    .unwrap();
    let s = SessionFile::load(&p).unwrap();
    assert_eq!(s.mode, Mode::Auto);
    assert_eq!(s.setup.tools[0].to_str(), Some("t.json"));
    assert_eq!(s.setup.packs["world"]["world"], "w.json");
    assert_eq!(SessionFile::base_dir(&p), dir.path());
    std::fs::write(&p, "{}").unwrap();
    assert!(
        SessionFile::load(&p)
            .unwrap_err()
            .to_string()
            .contains("not a session file")
    );
}

// covers O-2, V-5, X-2
#[tokio::test]
async fn text_mode_prompts_with_instructions_and_parses_calls_from_text() {
    let replay = Arc::new(ReplayClient::from_replies(vec![
        text_message(
            "Sure.\n<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\",}}\n</tool_call>",
        ),
        text_message("Echoed."),
    ]));
    let mut agent = Agent::new(
        replay.clone(),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Text,
            text_format: Some("hermes".into()),
            ..AgentConfig::default()
        },
    );
    let report = agent.run_turn("say hi").await.unwrap();
    let r0 = &report.rounds[0];
    assert_eq!(r0.calls.len(), 1);
    assert_eq!(r0.calls[0].name, "echo");
    assert_eq!(r0.calls[0].origin.format, "hermes");
    assert!(
        !r0.calls[0].origin.repairs.is_empty(),
        "trailing comma repair is reported"
    );
    assert_eq!(r0.results[0].to_json()["data"]["echo"]["text"], "hi");
    assert_eq!(r0.assistant_text.as_deref().map(str::trim), Some("Sure."));
    assert_eq!(report.final_text.as_deref(), Some("Echoed."));
    let reqs = replay.requests();
    assert!(reqs[0].tools.is_empty(), "text mode offers no native tools");
    let Message::System { content } = &reqs[0].messages[0] else {
        panic!("no system prompt")
    };
    assert!(content.contains("echo") && content.contains("<tool_call>"));
    let Some(Message::TextResults { results }) = reqs[1].messages.last() else {
        panic!("results not sent back")
    };
    assert_eq!(results[0].call_id, r0.calls[0].call_id);
    assert_eq!(results[0].content["status"], "ok");
    let wire = serde_json::to_value(toolcall_run::client::to_chat_messages(
        &reqs[1].messages,
        &Default::default(),
    ))
    .unwrap();
    let wire = wire.as_array().unwrap();
    let content = wire.last().unwrap()["content"].as_str().unwrap();
    let id = r0.calls[0].call_id.as_str();
    assert!(content.contains(&format!("call_id=\"{id}\"")), "{content}");
    assert!(content.contains("\"status\":\"ok\""));
}

// covers F-NAT-1, X-6
#[tokio::test]
async fn auto_mode_falls_back_to_parsing_text_when_no_native_calls_come() {
    let replay = Arc::new(ReplayClient::from_replies(vec![
        text_message("<tool_call>{\"name\": \"sleep\", \"arguments\": {\"ms\": 1}}</tool_call>"),
        calls_message(vec![tool_call("n1", "echo", r#"{"text":"native"}"#)]),
        text_message("Both done."),
    ]));
    let mut agent = Agent::new(
        replay.clone(),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let report = agent.run_turn("go").await.unwrap();
    assert_eq!(report.rounds.len(), 3);
    assert_eq!(report.rounds[0].calls[0].name, "sleep");
    assert!(report.rounds[0].results[0].is_ok());
    assert_eq!(report.rounds[1].calls[0].origin.format, "openai_chat");
    assert!(
        !replay.requests()[0].tools.is_empty(),
        "auto mode offers tools natively"
    );
    assert_eq!(report.final_text.as_deref(), Some("Both done."));
}

// covers V-5, V-1, X-8
#[tokio::test]
async fn validation_coercions_show_in_the_report_and_the_archive() {
    let replay = Arc::new(ReplayClient::from_replies(vec![
        calls_message(vec![tool_call("c1", "sleep", r#"{"ms":"5"}"#)]),
        text_message("slept"),
    ]));
    let mut agent = Agent::new(
        replay,
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let archive = Arc::new(Archive::in_memory().unwrap());
    let sid = agent.archive_new(archive.clone(), "coerce").unwrap();
    let report = agent.run_turn("sleep").await.unwrap();
    let call = &report.rounds[0].calls[0];
    assert_eq!(call.arguments, json!({"ms": 5}));
    assert!(!call.origin.repairs.is_empty());
    assert_eq!(report.rounds[0].results[0].to_json()["data"]["slept_ms"], 5);
    let rec = archive.show_session(&sid).unwrap();
    assert_eq!(rec.calls[0].arguments, json!({"ms": 5}));
    assert!(!rec.calls[0].repairs.as_array().unwrap().is_empty());
}

// covers R-8, X-2
#[tokio::test]
async fn a_repeated_call_id_in_one_reply_is_made_unique() {
    let replay = Arc::new(ReplayClient::from_replies(vec![
        calls_message(vec![
            tool_call("dup", "echo", r#"{"text":"1"}"#),
            tool_call("dup", "echo", r#"{"text":"2"}"#),
        ]),
        text_message("ok"),
    ]));
    let mut agent = Agent::new(
        replay.clone(),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let report = agent.run_turn("x").await.unwrap();
    let r0 = &report.rounds[0];
    assert_eq!(r0.calls[0].call_id.as_str(), "dup");
    assert_ne!(r0.calls[1].call_id.as_str(), "dup");
    for (c, r) in r0.calls.iter().zip(&r0.results) {
        assert_eq!(c.call_id, r.call_id);
    }
    assert!(r0.diagnostics[0].message.contains("used twice"));
    // The next request pairs each result with the id the model now sees.
    let msgs = &replay.requests()[1].messages;
    let Message::Assistant { calls, .. } = &msgs[1] else {
        panic!("assistant")
    };
    let tool_ids: Vec<_> = msgs
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let call_ids: Vec<_> = calls.iter().map(|c| c.call_id.clone()).collect();
    assert_eq!(tool_ids, call_ids);
}

// A server that keeps reasoning apart (`reasoning_content`, `reasoning`): the round reports
// it as reasoning, never as text, native and text mode alike.
#[tokio::test]
async fn reasoning_the_server_kept_apart_reaches_the_round_not_the_text() {
    let mut native = calls_message(vec![tool_call("n1", "echo", r#"{"text":"x"}"#)]);
    native["reasoning_content"] = json!("call echo first");
    let mut text = text_message("<think>inline</think>All done.");
    text["reasoning"] = json!("then answer");
    let replay = Arc::new(ReplayClient::from_replies(vec![native, text]));
    let mut agent = Agent::new(
        replay,
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let report = agent.run_turn("go").await.unwrap();
    assert_eq!(report.rounds[0].reasoning, ["call echo first"]);
    assert_eq!(report.rounds[1].reasoning, ["then answer", "inline"]);
    assert_eq!(report.final_text.as_deref(), Some("All done."));
}
