//! Streamed replies through the gateway: a call is announced when its name is known, its
//! arguments follow once checked; the invalid-call policy in streams (a call rejected before
//! anything of it went out is retried, one whose name is already out is completed with a
//! note); reasoning the upstream sends apart passes through; `/v1/responses` streams its
//! events as the upstream streams.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use toolcall_serve::{AnnounceCalls, InvalidCallPolicy};

/// Reads `r`'s SSE data payloads until `stop` accepts one; a bound only against a hang.
async fn read_until(
    r: &mut reqwest::Response,
    buffer: &mut String,
    stop: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    let read = async {
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                for line in event.lines() {
                    if let Some(d) = line.strip_prefix("data:")
                        && let Ok(v) = serde_json::from_str::<Value>(d.trim())
                    {
                        let hit = stop(&v);
                        seen.push(v);
                        if hit {
                            return;
                        }
                    }
                }
            }
            let bytes = r.chunk().await.unwrap().expect("the stream ended");
            buffer.push_str(&String::from_utf8_lossy(&bytes));
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the awaited event never came");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_announced_before_its_arguments_are_complete() {
    let (url, standin) = gateway(|_| {}).await;
    let mut body = post(&url, request("gated-call", true)).await;
    let mut buffer = String::new();
    // The upstream holds the rest of the call until the gate opens: the announcement must
    // come before that.
    let seen = read_until(&mut body, &mut buffer, |v| {
        v["choices"][0]["delta"]["tool_calls"][0]["function"]["name"].is_string()
    })
    .await;
    let announced = &seen.last().unwrap()["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(announced["index"], 0);
    assert_eq!(announced["type"], "function");
    assert_eq!(announced["function"]["name"], "get_weather");
    assert!(announced["id"].as_str().unwrap().starts_with("call_"));
    let text: String = seen
        .iter()
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text.trim(), "Checking.");
    standin.gate.notify_one();
    let rest = read_until(&mut body, &mut buffer, |v| {
        v["choices"][0]["finish_reason"].is_string()
    })
    .await;
    let args: String = rest
        .iter()
        .flat_map(|v| v["choices"][0]["delta"]["tool_calls"].as_array().cloned())
        .flatten()
        .map(|tc| {
            assert_eq!(tc["index"], 0);
            assert!(tc["id"].is_null(), "the id comes once: {tc}");
            tc["function"]["arguments"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(
        rest.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_chunks_give_the_same_calls_as_the_whole_reply() {
    let s = StandIn::default();
    s.one_byte.store(true, std::sync::atomic::Ordering::SeqCst);
    let (url, _) = gateway_over(s, |_| {}).await;
    for f in fixtures() {
        let whole: Value = post(&url, request(&f.model, false))
            .await
            .json()
            .await
            .unwrap();
        let data = sse_data(post(&url, request(&f.model, true)).await).await;
        let (content, _, calls, finish) = accumulate(&data);
        let message = &whole["choices"][0]["message"];
        assert_eq!(calls, calls_of(message), "{}", f.about);
        assert_eq!(
            content.trim(),
            message["content"].as_str().unwrap_or_default().trim(),
            "{}",
            f.about
        );
        assert_eq!(
            finish.as_deref(),
            whole["choices"][0]["finish_reason"].as_str(),
            "{}",
            f.about
        );
    }
}

/// A call the schema rejects once its name is out: `{}` lacks the required `city`.
const MISSING_CITY: &str =
    "Let me look.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_failing_its_schema_after_its_name_went_out_is_completed_with_a_note() {
    for policy in [InvalidCallPolicy::Drop, InvalidCallPolicy::Retry] {
        let (url, standin) = gateway(|c| c.invalid_calls = policy).await;
        standin.reply("qwen3-late", MISSING_CITY);
        let data = sse_data(post(&url, request("qwen3-late", true)).await).await;
        assert_eq!(data.last().unwrap(), "[DONE]");
        let (content, _, calls, finish) = accumulate(&data);
        assert_eq!(
            calls,
            vec![json!({"name": "get_weather", "arguments": {}})],
            "{policy:?}"
        );
        assert!(content.contains("does not pass its check"), "{content}");
        assert!(content.contains("city"), "{content}");
        assert_eq!(finish.as_deref(), Some("tool_calls"));
        // Nothing could be retried: the client had the call already.
        let asked = standin
            .requests()
            .iter()
            .filter(|r| r["model"] == "qwen3-late")
            .count();
        assert_eq!(asked, 1, "{policy:?}");
    }
    // `pass`: the same call, no note.
    let (url, standin) = gateway(|c| c.invalid_calls = InvalidCallPolicy::Pass).await;
    standin.reply("qwen3-late", MISSING_CITY);
    let data = sse_data(post(&url, request("qwen3-late", true)).await).await;
    let (content, _, calls, _) = accumulate(&data);
    assert_eq!(calls.len(), 1);
    assert_eq!(content.trim(), "Let me look.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_retries_a_call_rejected_before_anything_of_it_went_out() {
    let (url, standin) = gateway(|_| {}).await;
    let unknown = "Sure.\n<tool_call>{\"name\": \"launch_rocket\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
    let good =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    standin.reply("qwen3-stream-retry", unknown);
    standin.reply("qwen3-stream-retry", good);
    let data = sse_data(post(&url, request("qwen3-stream-retry", true)).await).await;
    assert_eq!(data.last().unwrap(), "[DONE]");
    let (content, _, calls, finish) = accumulate(&data);
    // The unknown tool's name never went out; the rest of the first reply was dropped and
    // the retried reply continued the stream.
    assert_eq!(content.trim(), "Sure.");
    assert_eq!(
        calls,
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    let reqs: Vec<Value> = standin
        .requests()
        .into_iter()
        .filter(|r| r["model"] == "qwen3-stream-retry")
        .collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1]["stream"], true);
    let messages = reqs[1]["messages"].as_array().unwrap();
    let said = messages[messages.len() - 2]["content"].as_str().unwrap();
    assert!(said.starts_with("Sure."), "{said}");
    let told = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(told.contains("launch_rocket"), "{told}");

    // A second rejection is not retried again: dropped with a note.
    let (url, standin) = gateway(|_| {}).await;
    standin.reply("qwen3-stubborn", unknown);
    let data = sse_data(post(&url, request("qwen3-stubborn", true)).await).await;
    let (content, _, calls, _) = accumulate(&data);
    assert!(content.contains("launch_rocket"), "{content}");
    assert_eq!(calls, vec![json!({"name": "get_time", "arguments": {}})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_checked_announcement_lets_a_stream_retry_bad_arguments() {
    let (url, standin) = gateway(|c| c.announce_calls = AnnounceCalls::WhenChecked).await;
    let good =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    standin.reply("qwen3-checked", MISSING_CITY);
    standin.reply("qwen3-checked", good);
    let data = sse_data(post(&url, request("qwen3-checked", true)).await).await;
    let (content, _, calls, _) = accumulate(&data);
    assert_eq!(content.trim(), "Let me look.");
    assert_eq!(
        calls,
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_from_the_upstream_passes_through() {
    let (url, _) = gateway(|_| {}).await;
    let whole: Value = post(&url, request("native-reasoning", false))
        .await
        .json()
        .await
        .unwrap();
    let m = &whole["choices"][0]["message"];
    assert_eq!(m["reasoning_content"], NATIVE_REASONING, "{whole}");
    assert_eq!(m["content"], NATIVE_ANSWER);
    for model in ["native-reasoning", "ollama-thinking"] {
        let data = sse_data(post(&url, request(model, true)).await).await;
        let (content, reasoning, calls, _) = accumulate(&data);
        assert_eq!(reasoning, NATIVE_REASONING, "{model}");
        assert_eq!(content, NATIVE_ANSWER, "{model}");
        assert!(calls.is_empty());
    }
    // Responses: a reasoning item, whole and streamed.
    let c = reqwest::Client::new();
    let body = json!({"model": "native-reasoning", "input": "hi"});
    let v: Value = c
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["output"][0]["type"], "reasoning", "{v}");
    assert_eq!(v["output"][0]["content"][0]["text"], NATIVE_REASONING);
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = c
        .post(format!("{url}/v1/responses"))
        .json(&streamed)
        .send()
        .await
        .unwrap();
    let events: Vec<Value> = sse_data(r)
        .await
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "response.reasoning_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, NATIVE_REASONING);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["output"][0]["type"], "reasoning");
    assert_eq!(
        last["response"]["output"][1]["content"][0]["text"],
        NATIVE_ANSWER
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_responses_announce_a_call_before_its_arguments_are_complete() {
    let (url, standin) = gateway(|_| {}).await;
    let body = json!({"model": "gated-call", "input": "weather?", "stream": true,
        "tools": [{"type": "function", "name": "get_weather", "parameters": tools()[0]["function"]["parameters"]}]});
    let mut stream = reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    let seen = read_until(&mut stream, &mut buffer, |v| {
        v["type"] == "response.output_item.added" && v["item"]["type"] == "function_call"
    })
    .await;
    let kinds: Vec<&str> = seen.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
        ]
    );
    let item = &seen.last().unwrap()["item"];
    assert_eq!(item["name"], "get_weather");
    assert_eq!(item["arguments"], "");
    standin.gate.notify_one();
    let rest = read_until(&mut stream, &mut buffer, |v| {
        v["type"] == "response.completed"
    })
    .await;
    let args: String = rest
        .iter()
        .filter(|v| v["type"] == "response.function_call_arguments.delta")
        .map(|v| v["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"city": "Paris"})
    );
    let done = &rest.last().unwrap()["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][1]["arguments"], args);
    let numbers: Vec<u64> = seen
        .iter()
        .chain(&rest)
        .map(|v| v["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_responses_stream_ends_failed() {
    let (url, _) = gateway(|c| c.retries = 0).await;
    let body = json!({"model": "fault-cut", "input": "weather?", "stream": true,
        "tools": [{"type": "function", "name": "get_weather", "parameters": tools()[0]["function"]["parameters"]}]});
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let kinds: Vec<String> = sse_data(r)
        .await
        .iter()
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(kinds.contains(&"response.failed".to_owned()), "{kinds:?}");
    assert!(
        !kinds.contains(&"response.completed".to_owned()),
        "{kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_calls_from_the_upstream_stream_through_checked_under_their_ids() {
    let (url, _) = gateway(|_| {}).await;
    let whole: Value = post(&url, request("native-calls", false))
        .await
        .json()
        .await
        .unwrap();
    let message = &whole["choices"][0]["message"];
    let expected = vec![
        json!({"name": "get_weather", "arguments": {"city": "Paris"}}),
        json!({"name": "get_weather", "arguments": {"city": "Berlin"}}),
    ];
    assert_eq!(calls_of(message), expected);
    let data = sse_data(post(&url, request("native-calls", true)).await).await;
    let (content, _, calls, finish) = accumulate(&data);
    assert_eq!(calls, expected);
    assert_eq!(content, "Two cities.");
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    // Announced as the upstream named them, under the upstream's ids: both before any
    // arguments, which come once the calls are complete and checked.
    let chunks: Vec<Value> = data
        .iter()
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let ids: Vec<&str> = chunks
        .iter()
        .filter_map(|v| v["choices"][0]["delta"]["tool_calls"][0]["id"].as_str())
        .collect();
    assert_eq!(ids, ["up-1", "up-2"]);
    let position = |f: &dyn Fn(&Value) -> bool| chunks.iter().position(f).unwrap();
    let second_named = position(&|v| v["choices"][0]["delta"]["tool_calls"][0]["id"] == "up-2");
    let first_arguments = position(&|v| {
        v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .is_some_and(|a| !a.is_empty())
    });
    assert!(second_named < first_arguments, "{data:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_an_open_stream_before_the_server_returns() {
    // What SIGTERM does in `toolcall serve`: the shutdown future resolves while a stream is
    // open; the stream must still end whole, and the server return only after it.
    let standin = StandIn::default();
    let upstream = stand_in(standin.clone()).await;
    let state = toolcall_serve::AppState::new(toolcall_serve::Config {
        upstream,
        read_timeout_secs: 30,
        ..toolcall_serve::Config::default()
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(toolcall_serve::serve(listener, state, async move {
        let _ = stopped.await;
    }));

    let mut body = post(&url, request("gated-call", true)).await;
    let mut buffer = String::new();
    read_until(&mut body, &mut buffer, |v| {
        v["choices"][0]["delta"]["tool_calls"][0]["function"]["name"].is_string()
    })
    .await;
    stop.send(()).unwrap();
    // The stream is still open, so the server is still serving it.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut server)
            .await
            .is_err(),
        "the server returned with a stream open"
    );
    standin.gate.notify_one();
    let rest = read_until(&mut body, &mut buffer, |v| {
        v["choices"][0]["finish_reason"].is_string()
    })
    .await;
    assert_eq!(
        rest.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    while let Some(bytes) = body.chunk().await.unwrap() {
        buffer.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(buffer.contains("data: [DONE]"), "{buffer}");
    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server did not return after its last stream")
        .unwrap()
        .unwrap();
}

/// The SSE `type`s of a `/v1/responses` stream, and its data payloads.
async fn responses_stream(url: &str, model: &str) -> (Vec<String>, Vec<Value>) {
    let body = json!({"model": model, "input": "weather?", "stream": true,
        "tools": [{"type": "function", "name": "get_weather", "parameters": tools()[0]["function"]["parameters"]}]});
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let events: Vec<Value> = sse_data(r)
        .await
        .iter()
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .collect();
    let kinds = events
        .iter()
        .map(|v| v["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    (kinds, events)
}

/// Every `function_call_arguments.done` must carry a JSON object: a cut call never finishes.
fn assert_no_broken_call_done(events: &[Value]) {
    for v in events {
        if v["type"] == "response.function_call_arguments.done" {
            let args = v["arguments"].as_str().unwrap();
            assert!(
                serde_json::from_str::<Value>(args).is_ok_and(|a| a.is_object()),
                "a cut call delivered as finished: {v}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_call_cut_inside_its_arguments_is_never_delivered_as_finished() {
    let (url, _) = gateway(|_| {}).await;
    for finish in ["length", "tool_calls"] {
        let model = format!("native-cut-{finish}");
        // Announced at its name: the client holds the call open, so only an error ends it.
        let data = sse_data(post(&url, request(&model, true)).await).await;
        let chunks: Vec<Value> = data
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
        assert!(
            chunks.iter().any(|v| v.get("error").is_some()),
            "{finish}: {data:?}"
        );
        assert!(
            chunks
                .iter()
                .all(|v| v["choices"][0]["finish_reason"].is_null()),
            "{finish}: {data:?}"
        );
        let (kinds, events) = responses_stream(&url, &model).await;
        assert!(kinds.contains(&"response.failed".to_owned()), "{kinds:?}");
        assert!(
            !kinds.contains(&"response.completed".to_owned()),
            "{kinds:?}"
        );
        assert_no_broken_call_done(&events);
        // Whole: the complete call is a call, the cut one is reported, not delivered.
        let whole: Value = post(&url, request(&model, false))
            .await
            .json()
            .await
            .unwrap();
        let choice = &whole["choices"][0];
        assert_eq!(
            calls_of(&choice["message"]),
            vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})],
            "{finish}"
        );
        assert!(
            choice["message"]["content"]
                .as_str()
                .unwrap()
                .contains("was cut off"),
            "{choice}"
        );
        let expected = if finish == "length" {
            "length"
        } else {
            "tool_calls"
        };
        assert_eq!(choice["finish_reason"], expected, "{choice}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_at_the_token_limit_ends_as_length_when_announced_only_once_checked() {
    for policy in [InvalidCallPolicy::Retry, InvalidCallPolicy::Pass] {
        let (url, _) = gateway(|c| {
            c.announce_calls = AnnounceCalls::WhenChecked;
            c.invalid_calls = policy;
        })
        .await;
        let data = sse_data(post(&url, request("native-cut-length", true)).await).await;
        let (content, _, calls, finish) = accumulate(&data);
        assert_eq!(
            calls,
            vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})],
            "{policy:?}"
        );
        assert_eq!(finish.as_deref(), Some("length"), "{policy:?}");
        assert!(content.contains("was cut off"), "{content}");
        let (kinds, events) = responses_stream(&url, "native-cut-length").await;
        assert!(
            kinds.contains(&"response.incomplete".to_owned()),
            "{kinds:?}"
        );
        assert!(
            !kinds.contains(&"response.completed".to_owned()),
            "{kinds:?}"
        );
        assert_no_broken_call_done(&events);
        let incomplete = events
            .iter()
            .find(|v| v["type"] == "response.incomplete")
            .unwrap();
        assert_eq!(incomplete["response"]["status"], "incomplete");
        assert_eq!(
            incomplete["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
    }
}
