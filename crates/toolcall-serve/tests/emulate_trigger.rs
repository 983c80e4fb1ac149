//! Emulated tools with a per-request random trigger, through the gateway in front of the
//! stand-in model server: markup the model quotes without the trigger stays text, markup
//! after it is a call (whole and streamed, the trigger split across stream chunks), and a
//! constrained route's grammar starts calls with the same trigger the prompt taught.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use toolcall_serve::constrain::Constrain;

const CALL: &str =
    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
const QUOTED: &str =
    "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Rome\"}}</tool_call>";

fn body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "tools": tools(),
        "messages": [{"role": "user", "content": "weather in Paris?"}]})
}

/// The calls and the text of a reply, whole or streamed.
async fn reply(url: &str, model: &str, stream: bool) -> (Vec<Value>, String) {
    let r = post(url, body(model, stream)).await;
    assert_eq!(r.status(), 200);
    if stream {
        let (content, _, calls, _) = accumulate(&sse_data(r).await);
        (calls, content)
    } else {
        let v: Value = r.json().await.unwrap();
        let m = &v["choices"][0]["message"];
        (
            calls_of(m),
            m["content"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

async fn emulating() -> (String, StandIn) {
    let s = StandIn::default();
    s.reply(
        "quotes",
        &format!("To call a tool one writes {QUOTED} like that."),
    );
    s.reply("calls", &format!("Checking.\n{{trigger}}{CALL}"));
    s.reply(
        "calls-then-quotes",
        &format!("{{trigger}}{CALL}\nThe syntax is {QUOTED}, by the way."),
    );
    gateway_over(s, |c| {
        c.emulate_tools = true;
        c.format = Some("hermes".into());
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markup_without_the_trigger_is_text_and_with_it_a_call() {
    let (url, standin) = emulating().await;
    for one_byte in [false, true] {
        standin
            .one_byte
            .store(one_byte, std::sync::atomic::Ordering::SeqCst);
        for stream in [false, true] {
            let (calls, text) = reply(&url, "quotes", stream).await;
            assert!(calls.is_empty(), "stream {stream}: {calls:?}");
            assert!(text.contains(QUOTED), "stream {stream}: {text}");

            let (calls, text) = reply(&url, "calls", stream).await;
            assert_eq!(
                calls,
                vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})],
                "stream {stream}"
            );
            assert_eq!(text.trim(), "Checking.", "stream {stream}");

            let (calls, text) = reply(&url, "calls-then-quotes", stream).await;
            assert_eq!(calls.len(), 1, "stream {stream}: {calls:?}");
            assert_eq!(calls[0]["name"], "get_weather");
            assert!(
                text.contains(QUOTED) && !text.contains("<call_"),
                "stream {stream}: {text}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_gets_its_own_trigger_in_the_prompt_and_the_history() {
    let (url, standin) = emulating().await;
    let mut b = body("calls", false);
    b["messages"] = json!([
        {"role": "user", "content": "weather in Rome?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    ]);
    post(&url, b.clone()).await;
    post(&url, b).await;
    let sent = standin.requests();
    let first = trigger_in(&sent[0]).unwrap();
    let second = trigger_in(&sent[1]).unwrap();
    assert_ne!(first, second, "the same conversation gets a fresh trigger");
    assert!(first.len() >= 22, "{first}");
    let m = sent[1]["messages"].as_array().unwrap();
    let system = m[0]["content"].as_str().unwrap();
    assert!(system.contains(&format!("{second}<tool_call>")), "{system}");
    // The earlier call is written back as the model should write calls now.
    let earlier = m[2]["content"].as_str().unwrap();
    assert!(
        earlier.starts_with(&format!("{second}<tool_call>")),
        "{earlier}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_constraint_starts_calls_with_the_prompts_trigger() {
    let s = StandIn::default();
    s.reply("calls", &format!("{{trigger}}{CALL}"));
    let (url, standin) = gateway_over(s, |c| {
        c.emulate_tools = true;
        c.constrain = Constrain::Gbnf;
        c.format = Some("hermes".into());
    })
    .await;
    let mut b = body("calls", false);
    b["tool_choice"] = json!("required");
    let v: Value = post(&url, b).await.json().await.unwrap();
    assert_eq!(calls_of(&v["choices"][0]["message"]).len(), 1, "{v}");
    let sent = standin.requests().last().cloned().unwrap();
    let trigger = trigger_in(&sent).unwrap();
    let grammar = sent["grammar"].as_str().unwrap();
    let quoted = serde_json::to_string(&format!("{trigger}<tool_call>")).unwrap();
    assert!(grammar.contains(&quoted), "{trigger} not in {grammar}");
}
