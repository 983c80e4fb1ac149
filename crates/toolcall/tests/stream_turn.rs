//! The builder's streamed variant against the stand-in model server on loopback: the turn's
//! events arrive in order and end with the report.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/support/stand_in.rs"]
mod stand_in;

use futures::StreamExt;
use serde_json::json;
use stand_in::StandIn;
use toolcall::{Agent, AgentEvent, OpenAi, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn a_streamed_turn_tells_each_step_and_ends_with_the_report() {
    let server = StandIn::start("add", json!({"a": 2, "b": "40"})).await;
    let mut agent = Agent::builder()
        .model(OpenAi::chat(&server.url, "stand-in"))
        .tool(tool("add", "Add two integers", |x: Add| async move {
            Ok(x.a + x.b)
        }))
        .max_tokens(64)
        .build()
        .unwrap();
    let mut kinds = Vec::new();
    let mut report = None;
    let mut events = agent.run_stream("What is 2 + 40?");
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        kinds.push(event.kind());
        if let AgentEvent::TurnFinished { report: r } = event {
            report = Some(r);
        }
    }
    let report = report.expect("the stream ends with the report");
    // The string "40" was coerced to the integer the schema asks for before the tool ran.
    assert_eq!(report.rounds[0].results[0].to_json()["data"], 42);
    assert_eq!(
        report.final_text.as_deref(),
        Some("The tool says: {\"status\":\"ok\",\"data\":42}")
    );
    let first = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert_eq!(kinds.first(), Some(&"turn_started"));
    assert_eq!(kinds.last(), Some(&"turn_finished"));
    assert!(first("call_started") < first("call_completed"), "{kinds:?}");
    assert_eq!(server.requests()[0]["max_tokens"], 64);
}
