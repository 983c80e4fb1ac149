//! The route setting `constrain` in front of the stand-in model server: the upstream request
//! carries the constraint in the field its engine reads (recorded by the stand-in), a
//! client's own `response_format` is left as it was, the `x-toolcall-constrain` header says
//! what happened, and the reply path (parse, validate, native calls) is unchanged.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use toolcall_serve::constrain::{CONSTRAIN_HEADER, Constrain};

const HERMES_CALL: &str =
    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";

fn body(model: &str, choice: Value, stream: bool) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "weather in Paris?"}],
        "tools": tools(), "tool_choice": choice, "stream": stream})
}

fn header(r: &reqwest::Response) -> String {
    r.headers()
        .get(CONSTRAIN_HEADER)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn gateway_with(setting: Constrain, format: &str) -> (String, StandIn) {
    let s = StandIn::default();
    s.reply("constrained", HERMES_CALL);
    // A GBNF route renders the tools into the prompt (emulation): calls follow its trigger.
    s.reply("constrained-emulated", &format!("{{trigger}}{HERMES_CALL}"));
    s.reply(
        "json-doc",
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
    );
    let format = format.to_owned();
    gateway_over(s, move |c| {
        c.constrain = setting;
        c.format = Some(format);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structural_tag_goes_in_response_format_with_the_tools_still_sent() {
    let (url, standin) = gateway_with(Constrain::StructuralTag, "hermes").await;
    let r = post(&url, body("constrained", json!("required"), false)).await;
    assert_eq!(header(&r), "structural_tag");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    let sent = standin.requests().last().cloned().unwrap();
    let format = &sent["response_format"];
    assert_eq!(format["type"], "structural_tag", "{sent}");
    assert_eq!(format["format"]["type"], "triggered_tags");
    assert_eq!(format["format"]["triggers"], json!(["<tool_call>"]));
    assert_eq!(format["format"]["at_least_one"], true);
    assert!(
        sent["tools"].is_array(),
        "vLLM and SGLang still parse the calls themselves"
    );

    // Streamed: the same constraint, the header on the stream's response.
    let r = post(&url, body("constrained", json!("required"), true)).await;
    assert_eq!(header(&r), "structural_tag");
    let (_, _, calls, _) = accumulate(&sse_data(r).await);
    assert_eq!(calls.len(), 1);
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(sent["response_format"]["type"], "structural_tag");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gbnf_goes_in_grammar_with_the_tools_in_the_prompt() {
    let (url, standin) = gateway_with(Constrain::Gbnf, "hermes").await;
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    let r = post(&url, body("constrained-emulated", named, false)).await;
    assert_eq!(header(&r), "gbnf");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    let sent = standin.requests().last().cloned().unwrap();
    let grammar = sent["grammar"].as_str().unwrap();
    assert!(grammar.starts_with("root ::= "), "{grammar}");
    assert!(grammar.contains("<tool_call>\""), "{grammar}");
    assert!(
        !grammar.contains("get_time"),
        "a named tool leaves the others out"
    );
    // llama.cpp refuses a grammar together with `tools`: they went into the prompt.
    assert!(
        sent.get("tools").is_none() && sent.get("tool_choice").is_none(),
        "{sent}"
    );
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("get_weather"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_schema_for_a_json_document_family_and_off_with_the_reason_otherwise() {
    let (url, standin) = gateway_with(Constrain::JsonSchema, "json").await;
    let r = post(&url, body("json-doc", json!("required"), false)).await;
    assert_eq!(header(&r), "json_schema");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(sent["response_format"]["type"], "json_schema", "{sent}");
    let schema = &sent["response_format"]["json_schema"]["schema"];
    assert!(schema["anyOf"].is_array(), "{schema}");

    // Hermes cannot be one JSON document: nothing is sent, the header says why, the reply
    // is read as ever.
    let (url, standin) = gateway_with(Constrain::JsonSchema, "hermes").await;
    let r = post(&url, body("constrained", json!("required"), false)).await;
    assert!(header(&r).starts_with("off: "), "{}", header(&r));
    let v: Value = r.json().await.unwrap();
    assert_eq!(calls_of(&v["choices"][0]["message"]).len(), 1);
    let sent = standin.requests().last().cloned().unwrap();
    assert!(sent.get("response_format").is_none(), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_own_response_format_wins_untouched() {
    let (url, standin) = gateway_with(Constrain::StructuralTag, "hermes").await;
    let own = json!({"type": "json_schema", "json_schema": {"name": "mine", "schema": {"type": "object"}}});
    let mut b = body("constrained", json!("required"), false);
    b["response_format"] = own.clone();
    let r = post(&url, b).await;
    assert_eq!(header(&r), "client");
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(sent["response_format"], own);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_is_constrained_only_with_strict_tools_and_off_sends_nothing() {
    let (url, standin) = gateway_with(Constrain::StructuralTag, "hermes").await;
    let r = post(&url, body("constrained", json!("auto"), false)).await;
    assert_eq!(header(&r), "off: tool_choice auto without strict tools");
    assert!(
        standin
            .requests()
            .last()
            .unwrap()
            .get("response_format")
            .is_none()
    );

    let mut b = body("constrained", json!("auto"), false);
    b["tools"][0]["function"]["strict"] = json!(true);
    let r = post(&url, b).await;
    assert_eq!(header(&r), "structural_tag");
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(sent["response_format"]["format"]["at_least_one"], false);

    let (url, standin) = gateway_with(Constrain::Off, "hermes").await;
    let r = post(&url, body("constrained", json!("required"), false)).await;
    assert!(r.headers().get(CONSTRAIN_HEADER).is_none());
    let sent = standin.requests().last().cloned().unwrap();
    assert!(sent.get("response_format").is_none() && sent.get("grammar").is_none());
}
