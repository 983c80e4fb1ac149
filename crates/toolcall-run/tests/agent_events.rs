//! The loop as an event producer: the order of a turn's events, the stream API, observers,
//! text-format spans, failures, jobs, and errors ending the stream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_core::{ErrorCode, ToolKind, ToolSpec};
use toolcall_run::client::Message;
use toolcall_run::{
    Agent, AgentConfig, AgentError, AgentEvent, Executor, Mode, ReplayClient, TurnReport,
};

fn agent(replies: Vec<Value>, mode: Mode) -> Agent {
    agent_with(registry(), replies, mode)
}

fn agent_with(reg: toolcall_core::Registry, replies: Vec<Value>, mode: Mode) -> Agent {
    Agent::new(
        Arc::new(ReplayClient::from_replies(replies)),
        Arc::new(Executor::new(Arc::new(reg))),
        AgentConfig {
            mode,
            ..AgentConfig::default()
        },
    )
}

async fn collect(agent: &mut Agent, input: &str) -> Vec<AgentEvent> {
    agent
        .run_turn_stream(input)
        .map(|e| e.expect("the turn succeeds"))
        .collect()
        .await
}

fn kinds(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.call_id() {
            Some(id) => format!("{}:{}", e.kind(), id),
            None => e.kind().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn a_turn_streams_its_steps_in_order_and_ends_with_the_report() {
    let mut agent = agent(
        vec![
            calls_message(vec![
                tool_call("call_a", "echo", r#"{"text":"hi"}"#),
                tool_call("call_b", "flaky", "{}"),
            ]),
            text_message("Done."),
        ],
        Mode::Native,
    );
    let events = collect(&mut agent, "go").await;
    assert_eq!(
        kinds(&events),
        [
            "turn_started",
            "message_added",
            "round_started",
            "reply_parsed",
            "call_parsed:call_a",
            "call_parsed:call_b",
            "message_added",
            "call_validated:call_a",
            "call_started:call_a",
            "call_completed:call_a",
            "call_validated:call_b",
            "call_started:call_b",
            "call_failed:call_b",
            "message_added",
            "message_added",
            "round_finished",
            "round_started",
            "text_delta",
            "reply_parsed",
            "message_added",
            "turn_finished",
        ]
    );
    let AgentEvent::RoundStarted { round, tools, .. } = &events[2] else {
        panic!("{:?}", events[2])
    };
    assert_eq!(*round, 1);
    assert!(tools.contains(&"echo".to_owned()));
    let AgentEvent::CallCompleted { result, .. } = &events[9] else {
        panic!("{:?}", events[9])
    };
    assert_eq!(
        result,
        &json!({"status":"ok","data":{"echo":{"text":"hi"}}})
    );
    let AgentEvent::CallFailed { error, .. } = &events[12] else {
        panic!("{:?}", events[12])
    };
    assert_eq!(error.code, ErrorCode::ToolFailed);
    // The results joined the conversation under their calls' ids, in call order.
    let added: Vec<&Message> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageAdded { message, .. } => Some(message),
            _ => None,
        })
        .collect();
    assert!(matches!(added[0], Message::User { content } if content == "go"));
    assert!(matches!(added[1], Message::Assistant { calls, .. } if calls.len() == 2));
    assert!(matches!(added[2], Message::Tool { call_id, .. } if call_id.as_str() == "call_a"));
    assert!(matches!(added[3], Message::Tool { call_id, .. } if call_id.as_str() == "call_b"));
    assert!(matches!(
        &events[15],
        AgentEvent::RoundFinished { round: 1 }
    ));
    let AgentEvent::TextDelta { round, text } = &events[17] else {
        panic!("{:?}", events[17])
    };
    assert_eq!((*round, text.as_str()), (2, "Done."));
    let AgentEvent::TurnFinished { report } = events.last().unwrap() else {
        panic!("last event")
    };
    assert_eq!(report.final_text.as_deref(), Some("Done."));
    assert_eq!(report.rounds[0].results.len(), 2);
    // The conversation is kept: the stream is a turn like any other.
    assert!(agent.conversation().len() >= 4);
}

#[tokio::test]
async fn observers_see_the_same_events_as_the_stream_and_plain_turns() {
    let seen: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let mut agent = agent(
        vec![
            calls_message(vec![tool_call("call_a", "echo", "{}")]),
            text_message("One."),
            text_message("Two."),
        ],
        Mode::Native,
    );
    let sink = seen.clone();
    agent.add_observer(Arc::new(move |e: &AgentEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    let streamed = collect(&mut agent, "first").await;
    assert_eq!(*seen.lock().unwrap(), streamed);
    seen.lock().unwrap().clear();
    let report: TurnReport = agent.run_turn("second").await.unwrap();
    let observed = seen.lock().unwrap().clone();
    assert_eq!(
        kinds(&observed),
        [
            "turn_started",
            "message_added",
            "round_started",
            "text_delta",
            "reply_parsed",
            "message_added",
            "turn_finished"
        ]
    );
    assert_eq!(
        observed.last(),
        Some(&AgentEvent::TurnFinished {
            report: Box::new(report)
        })
    );
}

#[tokio::test]
async fn text_format_calls_carry_their_format_span_and_repairs() {
    let raw = "Let me look. <tool_call>{'name': 'echo', 'arguments': {'text': 'x',}}</tool_call>";
    let mut agent = agent(
        vec![text_message(raw), text_message("It says x.")],
        Mode::Text,
    );
    let events = collect(&mut agent, "echo x").await;
    let parsed = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ReplyParsed { raw: Some(r), .. } => Some(r.clone()),
            _ => None,
        })
        .expect("the raw reply is told");
    assert_eq!(parsed, raw);
    let call = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::CallParsed { call, .. } => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.origin.format, "hermes");
    assert!(raw[call.origin.span.clone()].starts_with("<tool_call>"));
    assert!(!call.origin.repairs.is_empty());
    let delta = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::TextDelta { round: 1, text } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!delta.contains("<tool_call>"), "{delta}");
}

#[tokio::test]
async fn the_raw_reply_masks_secret_arguments_and_keeps_the_calls_spans() {
    let raw = "Logging in. <tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\", \"api_token\": \"tok-9f8e7d\"}}</tool_call> Done.";
    let mut agent = agent(
        vec![text_message(raw), text_message("It says hi.")],
        Mode::Text,
    );
    let events = collect(&mut agent, "echo hi").await;
    let told = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ReplyParsed { raw: Some(r), .. } => Some(r.clone()),
            _ => None,
        })
        .expect("the raw reply is told");
    assert!(!told.contains("tok-9f8e7d"), "{told}");
    assert_eq!(told, raw.replace("tok-9f8e7d", "**********"));
    let call = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::CallParsed { call, .. } => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        told[call.origin.span.clone()].len(),
        raw[call.origin.span.clone()].len()
    );
    assert!(told[call.origin.span.clone()].starts_with("<tool_call>"));
    assert!(told[call.origin.span.clone()].ends_with("</tool_call>"));
    // The redacted copy consumers send elsewhere keeps the mask too.
    let redacted = events
        .iter()
        .find(|e| matches!(e, AgentEvent::ReplyParsed { .. }))
        .unwrap()
        .redacted();
    assert!(
        !serde_json::to_string(&redacted)
            .unwrap()
            .contains("tok-9f8e7d")
    );
}

#[tokio::test]
async fn a_rejected_call_is_validated_with_its_error_and_never_started() {
    let mut reg = registry();
    reg.set_enabled("echo", false).unwrap();
    let mut agent = agent_with(
        reg,
        vec![
            calls_message(vec![tool_call("call_off", "echo", "{}")]),
            text_message("Cannot."),
        ],
        Mode::Native,
    );
    let events = collect(&mut agent, "go").await;
    let k = kinds(&events);
    assert!(k.contains(&"call_validated:call_off".to_owned()));
    assert!(!k.contains(&"call_started:call_off".to_owned()));
    let error = events.iter().find_map(|e| match e {
        AgentEvent::CallValidated { error, .. } => error.clone(),
        _ => None,
    });
    assert_eq!(error.map(|e| e.code), Some(ErrorCode::ToolDisabled));
    assert!(k.contains(&"call_failed:call_off".to_owned()));
}

struct QuickJob;

#[async_trait::async_trait]
impl toolcall_core::Tool for QuickJob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("export", "A job", json!({"type":"object"})).with_kind(ToolKind::Job)
    }
    async fn call(
        &self,
        _: &toolcall_core::ToolContext,
        _: Value,
    ) -> Result<toolcall_core::ToolOutput, toolcall_core::ToolError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(json!({"rows": 3}).into())
    }
}

#[tokio::test]
async fn a_job_is_acknowledged_then_delivered_under_its_call_id() {
    let mut reg = registry();
    reg.add_tool(Arc::new(QuickJob)).unwrap();
    let mut agent = Agent::new(
        Arc::new(ReplayClient::from_replies(vec![
            calls_message(vec![tool_call("call_job", "export", "{}")]),
            text_message("Exporting."),
            text_message("3 rows."),
        ])),
        Arc::new(Executor::new(Arc::new(reg))),
        AgentConfig {
            mode: Mode::Native,
            await_jobs_before_request: true,
            ..AgentConfig::default()
        },
    );
    let events = collect(&mut agent, "export").await;
    let ack = events.iter().find_map(|e| match e {
        AgentEvent::CallCompleted { job, result, .. } => Some((*job, result.clone())),
        _ => None,
    });
    assert_eq!(
        ack,
        Some((
            true,
            json!({"status":"ok","data":{"job_id":"job_call_job","state":"running"}})
        ))
    );
    let delivered = events.iter().find_map(|e| match e {
        AgentEvent::JobDelivered {
            call_id, result, ..
        } => Some((call_id.as_str().to_owned(), result.clone())),
        _ => None,
    });
    assert_eq!(
        delivered,
        Some((
            "call_job".to_owned(),
            json!({"status":"ok","data":{"rows":3}})
        ))
    );
}

#[tokio::test]
async fn an_error_ends_the_stream_after_the_events_before_it() {
    // One recorded reply; the loop asks for a second: the client fails.
    let mut agent = agent(
        vec![calls_message(vec![tool_call("call_a", "echo", "{}")])],
        Mode::Native,
    );
    let items: Vec<Result<AgentEvent, AgentError>> = agent.run_turn_stream("go").collect().await;
    let (last, before) = items.split_last().unwrap();
    assert!(matches!(last, Err(AgentError::Client(_))), "{last:?}");
    assert!(before.iter().all(Result::is_ok));
    assert!(
        before
            .iter()
            .any(|e| matches!(e, Ok(AgentEvent::CallCompleted { .. })))
    );
    assert!(
        !before
            .iter()
            .any(|e| matches!(e, Ok(AgentEvent::TurnFinished { .. })))
    );
}

/// The turn's events of `round` of one kind, e.g. its text deltas.
fn deltas(events: &[AgentEvent], round: usize) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { round: r, text } if *r == round => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streamed_replies_tell_their_text_as_it_arrives_without_call_markup() {
    let chunk = |text: &str| json!({"choices":[{"index":0,"delta":{"content":text}}]});
    let (url, _script) = serve(
        vec![
            Answer::Sse(vec![
                chunk("Let me "),
                chunk("look. <tool_"),
                chunk("call>{\"name\": \"echo\", \"arguments\": {\"text\": \"x\"}}</tool_call>"),
                chunk(" Back soon."),
            ]),
            Answer::Sse(vec![chunk("It "), chunk("says "), chunk("x.")]),
        ],
        false,
    )
    .await;
    let client = toolcall_run::ApiClient::chat(&url, "m")
        .unwrap()
        .streaming(true);
    let mut agent = Agent::new(
        Arc::new(client),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Text,
            ..AgentConfig::default()
        },
    );
    let events = collect(&mut agent, "echo x").await;
    let AgentEvent::TurnFinished { report } = events.last().unwrap() else {
        panic!("last event")
    };
    // Round 1: the text in pieces, as streamed, none of the call markup; together they
    // are the reply's visible text.
    let first = deltas(&events, 1);
    assert!(first.len() >= 2, "{first:?}");
    assert!(first.iter().all(|t| !t.contains("tool_call")), "{first:?}");
    assert_eq!(
        Some(first.concat()),
        report.rounds[0].assistant_text,
        "{first:?}"
    );
    assert_eq!(report.rounds[0].calls.len(), 1);
    // The text came before the reply was parsed, and only once.
    let parsed_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ReplyParsed { round: 1, .. }))
        .unwrap();
    let last_delta = events
        .iter()
        .rposition(|e| matches!(e, AgentEvent::TextDelta { round: 1, .. }))
        .unwrap();
    assert!(last_delta < parsed_at);
    assert_eq!(deltas(&events, 2), ["It ", "says ", "x."]);
    assert_eq!(report.final_text.as_deref(), Some("It says x."));
}
