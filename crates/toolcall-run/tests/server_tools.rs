//! Server-side tools: a client's Chat Completions request answered by a turn whose tools
//! run here, client tools returned to the client, sessions continued by id.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use toolcall_run::server::{ServerTools, ServerTurnError};
use toolcall_run::{AgentEvent, Archive, ReplayClient};

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
}

#[tokio::test]
async fn server_calls_run_here_and_the_client_sees_only_the_final_reply() {
    let archive = Arc::new(Archive::in_memory().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let server = ServerTools {
        archive: Some(archive.clone()),
        observers: vec![Arc::new(move |e: &AgentEvent| {
            sink.lock().unwrap().push(e.kind().to_owned())
        })],
        ..ServerTools::default()
    };
    let model = Arc::new(ReplayClient::from_replies(vec![
        calls_message(vec![
            tool_call("call_1", "echo", r#"{"text":"a"}"#),
            tool_call("call_2", "echo", r#"{"text":"b"}"#),
        ]),
        text_message("Both echoed."),
    ]));
    let request = json!({"model": "m", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "echo a and b"}]});
    let turn = server
        .chat(&req(&request), model.clone(), &registry(), None)
        .await
        .unwrap();
    assert_eq!(
        turn.completion["choices"][0]["message"],
        json!({"role": "assistant", "content": "Both echoed."})
    );
    assert_eq!(turn.completion["choices"][0]["finish_reason"], "stop");
    assert_eq!(turn.completion["object"], "chat.completion");
    // The second model request carried both results under their call ids.
    let second = &model.requests()[1];
    let ids: Vec<String> = second
        .messages
        .iter()
        .filter_map(|m| match m {
            toolcall_run::Message::Tool { call_id, .. } => Some(call_id.as_str().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    let session = turn.session_id.unwrap();
    let rec = archive.show_session(&session).unwrap();
    assert_eq!(rec.calls.len(), 2);
    assert_eq!(rec.session.description, "echo a and b");
    assert!(seen.lock().unwrap().contains(&"call_completed".to_owned()));
}

#[tokio::test]
async fn client_tools_are_offered_and_their_calls_returned_then_the_session_continues() {
    let archive = Arc::new(Archive::in_memory().unwrap());
    let server = ServerTools {
        archive: Some(archive.clone()),
        ..ServerTools::default()
    };
    let model = Arc::new(ReplayClient::from_replies(vec![
        // A server call and a client call in one reply.
        calls_message(vec![
            tool_call("call_s", "echo", r#"{"text":"x"}"#),
            tool_call("call_c", "get_weather", r#"{"city":"Paris"}"#),
        ]),
        text_message("Echoed x; Paris is sunny."),
    ]));
    let first = json!({"model": "m", "tools": weather_tool(), "messages": [
        {"role": "user", "content": "echo x and tell me the weather in Paris"}]});
    let turn = server
        .chat(&req(&first), model.clone(), &registry(), None)
        .await
        .unwrap();
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(offered.contains(&"get_weather".to_owned()) && offered.contains(&"echo".to_owned()));
    let msg = &turn.completion["choices"][0]["message"];
    assert_eq!(turn.completion["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(msg["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(msg["tool_calls"][0]["id"], "call_c");
    assert_eq!(msg["tool_calls"][0]["function"]["name"], "get_weather");
    let session = turn.session_id.unwrap();

    // The client answers its call and continues the session.
    let second = json!({"model": "m", "tools": weather_tool(), "messages": [
        {"role": "user", "content": "echo x and tell me the weather in Paris"},
        msg.clone(),
        {"role": "tool", "tool_call_id": "call_c", "content": "{\"sky\":\"sunny\"}"}]});
    let turn = server
        .chat(&req(&second), model.clone(), &registry(), Some(&session))
        .await
        .unwrap();
    assert_eq!(
        turn.completion["choices"][0]["message"]["content"],
        "Echoed x; Paris is sunny."
    );
    assert_eq!(turn.session_id.as_deref(), Some(session.as_str()));
    // The model saw both answers under their ids, the server's one from the archive.
    let ids: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            toolcall_run::Message::Tool { call_id, .. } => Some(call_id.as_str().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_s", "call_c"]);
}

#[tokio::test]
async fn clashing_names_and_malformed_requests_are_refused() {
    let server = ServerTools::default();
    let model = Arc::new(ReplayClient::from_replies(vec![]));
    let clash = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]});
    assert!(matches!(
        server.chat(&req(&clash), model.clone(), &registry(), None).await,
        Err(ServerTurnError::NameClash(n)) if n == "echo"
    ));
    for bad in [
        json!({"model": "m"}),
        json!({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}),
        json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}),
        json!({"model": "m", "messages": []}),
    ] {
        assert!(
            matches!(
                server
                    .chat(&req(&bad), model.clone(), &registry(), None)
                    .await,
                Err(ServerTurnError::BadRequest(_))
            ),
            "{bad}"
        );
    }
}

/// A Chat Completions body as the gateway hands it over, decoded by the wire module.
fn req(body: &Value) -> toolcall_wire::chat::ChatRequest {
    serde_json::from_value(body.clone()).unwrap()
}

/// What a replica killed mid-call leaves in a shared archive: the reply and its calls, the
/// first call's result, both calls claimed (the first done, the second still running), and
/// a lease that has expired. The next request for the session, on any replica, answers the
/// lost calls once (the archived result; "outcome unknown" for the running one) and runs
/// neither again.
#[tokio::test]
async fn calls_a_lost_turn_left_are_answered_once_and_never_run_again() {
    use std::time::Duration;
    use toolcall_run::archive::Delivery;
    let archive = Arc::new(Archive::in_memory().unwrap());
    let session = archive.create_session("lost").unwrap();
    let (one, two) = (
        toolcall_core::ToolCall {
            call_id: "call_1".into(),
            ..toolcall_core::ToolCall::new("echo", json!({"text": "a"}), "openai_chat")
        },
        toolcall_core::ToolCall {
            call_id: "call_2".into(),
            ..toolcall_core::ToolCall::new("echo", json!({"text": "b"}), "openai_chat")
        },
    );
    archive
        .add_message(&session, &toolcall_run::Message::user("echo a and b"))
        .unwrap();
    archive
        .add_message(
            &session,
            &toolcall_run::Message::Assistant {
                text: None,
                calls: vec![one.clone(), two.clone()],
            },
        )
        .unwrap();
    for call in [&one, &two] {
        archive.record_call(&session, 1, call).unwrap();
        assert_eq!(
            archive
                .claim_call(&session, 1, call.call_id.as_str(), "replica_dead")
                .unwrap(),
            None
        );
    }
    let echoed = json!({"status": "ok", "data": {"text": "a"}});
    archive
        .record_outcome(&session, "call_1", "echo", &echoed, 3, Delivery::Inline)
        .unwrap();
    archive.finish_claim(&session, 1, "call_1").unwrap();
    assert!(
        archive
            .acquire_lease(&session, "replica_dead", Duration::ZERO)
            .unwrap()
    );
    std::thread::sleep(Duration::from_millis(5));

    let started: Arc<Mutex<usize>> = Arc::default();
    let count = started.clone();
    let server = ServerTools {
        archive: Some(archive.clone()),
        observers: vec![Arc::new(move |e: &AgentEvent| {
            if e.kind() == "call_started" {
                *count.lock().unwrap() += 1;
            }
        })],
        ..ServerTools::default()
    };
    let model = Arc::new(ReplayClient::from_replies(vec![
        text_message("One echoed; the other may have run."),
        text_message("Still here."),
    ]));
    let retried = json!({"model": "m", "messages": [
        {"role": "user", "content": "echo a and b"}]});
    let turn = server
        .chat(&req(&retried), model.clone(), &registry(), Some(&session))
        .await
        .unwrap();
    assert_eq!(turn.session_id.as_deref(), Some(session.as_str()));
    let answers = |request: &toolcall_run::ModelRequest| -> Vec<(String, Value)> {
        request
            .messages
            .iter()
            .filter_map(|m| match m {
                toolcall_run::Message::Tool {
                    call_id, content, ..
                } => Some((call_id.as_str().to_owned(), content.clone())),
                _ => None,
            })
            .collect()
    };
    let first = answers(&model.requests()[0]);
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[0], ("call_1".to_owned(), echoed.clone()));
    assert_eq!(first[1].0, "call_2");
    assert_eq!(
        first[1].1["error"]["details"]["outcome"], "unknown",
        "{first:?}"
    );
    assert_eq!(*started.lock().unwrap(), 0, "a lost call ran again");

    // Reported once: the next turn sees the same two answers, not new ones.
    let next = json!({"model": "m", "messages": [
        {"role": "user", "content": "echo a and b"},
        {"role": "assistant", "content": "One echoed; the other may have run."},
        {"role": "user", "content": "and now?"}]});
    server
        .chat(&req(&next), model.clone(), &registry(), Some(&session))
        .await
        .unwrap();
    assert_eq!(answers(&model.requests()[1]), first);
    assert_eq!(*started.lock().unwrap(), 0);
    // Every call in the archive has exactly one inline answer to the model: the lost call's
    // is the "outcome unknown" it was given.
    let rec = archive.show_session(&session).unwrap();
    assert_eq!(rec.calls.len(), 2);
    for call in &rec.calls {
        assert_eq!(call.results.len(), 1, "{call:?}");
    }
    assert_eq!(rec.calls[0].results[0].outcome, echoed);
    assert_eq!(rec.calls[1].results[0].outcome, first[1].1);
}
