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
            toolcall_run::Message::Tool { call_id, .. } => Some(call_id.0.clone()),
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
            toolcall_run::Message::Tool { call_id, .. } => Some(call_id.0.clone()),
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
