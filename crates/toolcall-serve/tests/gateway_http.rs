//! The gateway over HTTP in front of the stand-in model server: replies of several families
//! become native, checked calls, whole and streamed alike; upstream faults give clear
//! OpenAI-shaped errors; keys, metrics, models and health.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use toolcall_serve::InvalidCallPolicy;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_gives_the_same_native_calls_whole_and_streamed() {
    let (url, standin) = gateway(|_| {}).await;
    for f in fixtures() {
        let r = post(&url, request(&f.model, false)).await;
        assert_eq!(r.status(), 200, "{}", f.about);
        let v: Value = r.json().await.unwrap();
        let message = &v["choices"][0]["message"];
        assert_eq!(calls_of(message), f.calls, "{}", f.about);
        let content = message["content"].as_str().unwrap_or_default();
        assert_eq!(content.trim(), f.content, "{}", f.about);
        assert_eq!(
            message["reasoning_content"].is_string(),
            f.reasoning,
            "{}",
            f.about
        );
        let finish = if f.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        assert_eq!(v["choices"][0]["finish_reason"], finish, "{}", f.about);

        let data = sse_data(post(&url, request(&f.model, true)).await).await;
        assert_eq!(
            data.last().map(String::as_str),
            Some("[DONE]"),
            "{}",
            f.about
        );
        let (s_content, s_reasoning, s_calls, s_finish) = accumulate(&data);
        assert_eq!(s_calls, f.calls, "{}", f.about);
        assert_eq!(s_content.trim(), content.trim(), "{}", f.about);
        assert_eq!(!s_reasoning.is_empty(), f.reasoning, "{}", f.about);
        assert_eq!(s_finish.as_deref(), Some(finish), "{}", f.about);
    }
    // The client's fields reach the upstream untouched.
    let first = &standin.requests()[0];
    assert_eq!(first["temperature"], 0.1);
    assert_eq!(first["tools"], tools());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coercions_are_reported_in_a_header() {
    let (url, _) = gateway(|_| {}).await;
    let r = post(&url, request("llama-3.1-8b-instruct", false)).await;
    let header = r.headers()["x-toolcall-repairs"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(header.contains("call_"), "{header}");
    // The reply is written as JSON text without axum's `Json`: the type is still stated.
    assert_eq!(r.headers()["content-type"], "application/json");
    let metrics = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("toolcall_repairs_total 1"), "{metrics}");
    assert!(
        metrics.contains("toolcall_requests_total{endpoint=\"chat\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_call_is_retried_once_with_the_error() {
    let (url, standin) = gateway(|_| {}).await;
    let bad =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}</tool_call>";
    let good =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    standin.reply("qwen3-retry", bad);
    standin.reply("qwen3-retry", good);
    let v: Value = post(&url, request("qwen3-retry", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    let reqs: Vec<Value> = standin
        .requests()
        .into_iter()
        .filter(|r| r["model"] == "qwen3-retry")
        .collect();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["content"].as_str().unwrap().contains("city"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_and_pass_policies() {
    let hallucinated = "<tool_call>{\"name\": \"launch_rocket\", \"arguments\": {}}</tool_call>";
    let (url, standin) = gateway(|c| c.invalid_calls = InvalidCallPolicy::Drop).await;
    standin.reply("qwen3-x", hallucinated);
    let v: Value = post(&url, request("qwen3-x", false))
        .await
        .json()
        .await
        .unwrap();
    let m = &v["choices"][0]["message"];
    assert!(m["tool_calls"].is_null(), "{m}");
    assert!(
        m["content"].as_str().unwrap().contains("launch_rocket"),
        "{m}"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    let (url, standin) = gateway(|c| c.invalid_calls = InvalidCallPolicy::Pass).await;
    standin.reply("qwen3-x", hallucinated);
    let v: Value = post(&url, request("qwen3-x", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "launch_rocket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tool_calls_false_keeps_the_first_call() {
    let (url, _) = gateway(|c| c.invalid_calls = InvalidCallPolicy::Drop).await;
    let mut body = request("qwen2.5-7b-instruct", false);
    body["parallel_tool_calls"] = json!(false);
    let v: Value = post(&url, body).await.json().await.unwrap();
    assert_eq!(calls_of(&v["choices"][0]["message"]).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_faults_are_clear_errors() {
    let (url, _) = gateway(|c| c.retries = 1).await;
    let check = |status: u16, code: &'static str, needle: &'static str| {
        move |r: (u16, Value)| {
            assert_eq!(r.0, status, "{}", r.1);
            assert_eq!(r.1["error"]["code"], code, "{}", r.1);
            let m = r.1["error"]["message"].as_str().unwrap();
            assert!(m.contains(needle), "{m}");
        }
    };
    let call = |model: &'static str| {
        let url = url.clone();
        async move {
            let r = post(&url, request(model, false)).await;
            let s = r.status().as_u16();
            (s, r.json::<Value>().await.unwrap())
        }
    };
    check(502, "upstream_error", "500")(call("fault-500").await);
    check(502, "upstream_error", "not JSON")(call("fault-json").await);
    check(502, "upstream_error", "not JSON")(call("fault-cut").await);
    check(504, "upstream_timeout", "timeout")(call("fault-hang").await);
    // 429 with Retry-After: 1 is waited for and retried.
    assert_eq!(call("fault-429").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_429_is_the_apis_rate_limit_error() {
    let (url, _) = gateway(|c| c.retries = 0).await;
    let r = post(&url, request("fault-429", false)).await;
    assert_eq!(r.status(), 429);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_kept_alive_with_comments_meets_the_request_deadline() {
    // The idle read timeout (2 s) never fires: the upstream sends a comment every 100 ms.
    let (url, _) = gateway(|c| {
        c.retries = 0;
        c.request_timeout_secs = 1;
    })
    .await;
    let whole = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        post(&url, request("fault-keepalive", false)),
    )
    .await
    .expect("the whole request was held past its deadline");
    assert_eq!(whole.status(), 504);
    let body: Value = whole.json().await.unwrap();
    assert_eq!(body["error"]["code"], "upstream_timeout", "{body}");
    let streamed = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        sse_data(post(&url, request("fault-keepalive", true)).await),
    )
    .await
    .expect("the stream was held past its deadline");
    assert!(
        streamed
            .iter()
            .any(|d| d.contains("\"error\"") && d.contains("timeout")),
        "{streamed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_the_client_key_off_loopback() {
    let metrics = |url: String, key: Option<&'static str>| async move {
        let mut r = reqwest::Client::new().get(format!("{url}/metrics"));
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        r.send().await.unwrap().status().as_u16()
    };
    let (local, _) = gateway(|_| {}).await;
    assert_eq!(metrics(local, None).await, 200);
    let (public, _) = gateway(|c| c.listen = "0.0.0.0:8090".into()).await;
    assert_eq!(metrics(public, None).await, 403);
    let (keyed, _) = gateway(|c| {
        c.listen = "0.0.0.0:8090".into();
        c.api_keys = vec!["sk-ops".into()];
    })
    .await;
    assert_eq!(metrics(keyed.clone(), None).await, 401);
    assert_eq!(metrics(keyed, Some("sk-ops")).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_ends_with_an_error_and_no_finish() {
    let (url, _) = gateway(|c| c.retries = 0).await;
    let data = sse_data(post(&url, request("fault-cut", true)).await).await;
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert!(
        last["error"]["message"].as_str().unwrap().contains("cut"),
        "{last}"
    );
    assert!(
        !data
            .iter()
            .any(|d| d == "[DONE]" || d.contains("finish_reason\":\""))
    );
    assert!(!data.iter().any(|d| d.contains("tool_calls")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_keys_are_required_when_configured() {
    let (url, _) = gateway(|c| c.api_keys = vec!["sk-test".into()]).await;
    let c = reqwest::Client::new();
    let r = c
        .post(format!("{url}/v1/chat/completions"))
        .json(&request("qwen3-8b", false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth("sk-test")
        .json(&request("qwen3-8b", false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let models = c
        .get(format!("{url}/v1/models"))
        .bearer_auth("sk-test")
        .send()
        .await
        .unwrap();
    assert_eq!(
        models.json::<Value>().await.unwrap()["data"][0]["id"],
        "qwen3-8b"
    );
    assert_eq!(
        reqwest::get(format!("{url}/health"))
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_400() {
    let (url, _) = gateway(|_| {}).await;
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_whole_and_streamed() {
    let (url, standin) = gateway(|_| {}).await;
    let body = json!({"model": "qwen3-8b", "instructions": "be brief", "input": "weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather", "parameters": tools()[0]["function"]["parameters"]}]});
    let c = reqwest::Client::new();
    let v: Value = c
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let types: Vec<&str> = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["reasoning", "function_call"], "{v}");
    // The response echoes its request's tools and parallel_tool_calls, as the API does.
    assert_eq!(v["tools"], body["tools"], "{v}");
    assert_eq!(v["parallel_tool_calls"], true, "{v}");
    assert_eq!(v["output"][1]["name"], "get_weather");
    assert!(
        v["output"][1]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("call_")
    );
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = c
        .post(format!("{url}/v1/responses"))
        .json(&streamed)
        .send()
        .await
        .unwrap();
    let data = sse_data(r).await;
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["output"][1]["name"], "get_weather");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_stream_cancels_the_upstream_request() {
    let (url, standin) = gateway(|_| {}).await;
    let mut r = post(&url, request("slow-stream", true)).await;
    // Read the first bytes, then leave.
    let first = r.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("data:"));
    assert_eq!(
        standin
            .open_streams
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    drop(r);
    // The gateway drops its upstream request: the stand-in's stream ends, and the gateway's
    // open-stream gauge is back to 0 (polled, bounded: the drop is asynchronous).
    let mut left = 1;
    for _ in 0..100 {
        left = standin
            .open_streams
            .load(std::sync::atomic::Ordering::SeqCst);
        let metrics = reqwest::get(format!("{url}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if left == 0 && metrics.contains("toolcall_open_streams 0") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(left, 0, "the upstream stream is still being read");
}

/// curl, as a shell user would call the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_native_calls() {
    let curl = std::process::Command::new("curl").arg("--version").output();
    let Some(_) = toolcall_testkit::require("curl", curl) else {
        return;
    };
    let (url, _) = gateway(|_| {}).await;
    let run = |stream: bool| {
        let url = url.clone();
        async move {
            let out = tokio::process::Command::new("curl")
                .args(["-sS", "-N", "-H", "content-type: application/json", "-d"])
                .arg(request("qwen3-8b", stream).to_string())
                .arg(format!("{url}/v1/chat/completions"))
                .output()
                .await
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        }
    };
    let whole: Value = serde_json::from_str(&run(false).await).unwrap();
    assert_eq!(
        whole["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let streamed = run(true).await;
    assert!(streamed.contains("\"name\":\"get_weather\""), "{streamed}");
    assert!(streamed.trim_end().ends_with("data: [DONE]"), "{streamed}");
}

// Emulated tools round trip: the tools reach the upstream in its prompt, an earlier call and its
// result reach it in the family's format, and its text reply comes back as native calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emulated_tools_round_trip() {
    let s = StandIn::default();
    s.reply(
        "emulated",
        "{trigger}<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}</tool_call>",
    );
    let (url, standin) = gateway_over(s, |c| c.emulate_tools = true).await;
    let body = json!({"model": "emulated", "tools": tools(), "tool_choice": "auto", "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "weather in Rome?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"sunny\"}"}
    ]});
    let v: Value = post(&url, body).await.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})]
    );
    let sent = standin.requests().last().cloned().unwrap();
    assert!(
        sent.get("tools").is_none() && sent.get("tool_choice").is_none(),
        "{sent}"
    );
    let m = sent["messages"].as_array().unwrap();
    let system = m[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are terse.") && system.contains("get_weather"),
        "{system}"
    );
    assert!(system.contains("<tool_call>"), "{system}");
    let call = m[2]["content"].as_str().unwrap();
    assert!(
        call.contains("<tool_call>") && call.contains("Rome"),
        "{call}"
    );
    assert_eq!(m[3]["role"], "user");
    let result = m[3]["content"].as_str().unwrap();
    assert!(
        result.contains("<tool_response call_id=\"call_1\" name=\"get_weather\">")
            && result.contains("sunny"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_is_asked_to_stream_exactly_when_the_client_asked() {
    let (url, standin) = gateway(|_| {}).await;
    let model = &fixtures()[0].model;
    let mut whole = request(model, false);
    whole["stream_options"] = json!({"include_usage": true});
    assert_eq!(post(&url, whole).await.status(), 200);
    let sent = standin.requests().last().cloned().unwrap();
    assert!(sent.get("stream").is_none(), "{sent}");
    assert!(sent.get("stream_options").is_none(), "{sent}");
    assert_eq!(sent["temperature"], json!(0.1));

    let mut streamed = request(model, true);
    streamed["stream_options"] = json!({"include_usage": true});
    let data = sse_data(post(&url, streamed).await).await;
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let sent = standin.requests().last().cloned().unwrap();
    assert_eq!(sent["stream"], json!(true));
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));

    // The same over /v1/responses: streamed there means streamed upstream.
    let c = reqwest::Client::new();
    let body = json!({"model": model, "input": "weather?", "stream": true,
        "tools": [{"type": "function", "name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]});
    let r = c
        .post(format!("{url}/v1/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
    sse_data(r).await;
    assert_eq!(standin.requests().last().unwrap()["stream"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_choice_required_and_named_are_honoured_on_the_way_out() {
    let good =
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    let other =
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
    let (url, standin) = gateway(|_| {}).await;
    let asked = |model: &str| -> Vec<Value> {
        standin
            .requests()
            .into_iter()
            .filter(|r| r["model"] == model)
            .collect()
    };

    // `required`, answered in prose: asked again with the reason, and the call comes back.
    standin.reply("qwen3-required", "It is probably sunny in Paris.");
    standin.reply("qwen3-required", good);
    let mut body = request("qwen3-required", false);
    body["tool_choice"] = json!("required");
    let v: Value = post(&url, body).await.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let reqs = asked("qwen3-required");
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["tool_choice"], "required", "forwarded as asked");
    let last = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("required"),
        "{last}"
    );

    // A named tool, answered with a call to another: asked again, the named call comes back.
    standin.reply("qwen3-named", other);
    standin.reply("qwen3-named", good);
    let mut body = request("qwen3-named", false);
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let v: Value = post(&url, body).await.json().await.unwrap();
    assert_eq!(
        calls_of(&v["choices"][0]["message"]),
        vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})]
    );
    assert_eq!(asked("qwen3-named").len(), 2);

    // `required` answered in prose twice: the prose, with a note saying no call was made.
    standin.reply("qwen3-stubborn", "No tools today.");
    standin.reply("qwen3-stubborn", "Still no tools.");
    let mut body = request("qwen3-stubborn", false);
    body["tool_choice"] = json!("required");
    let v: Value = post(&url, body).await.json().await.unwrap();
    let m = &v["choices"][0]["message"];
    assert!(m["tool_calls"].is_null(), "{m}");
    let content = m["content"].as_str().unwrap();
    assert!(content.starts_with("Still no tools."), "{content}");
    assert!(content.contains("without a tool call"), "{content}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    // `auto` in prose is a plain answer: no retry, no note.
    standin.reply("qwen3-auto", "It is probably sunny in Paris.");
    let v: Value = post(&url, request("qwen3-auto", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "It is probably sunny in Paris."
    );
    assert_eq!(asked("qwen3-auto").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_reply_without_the_required_call_ends_with_the_note() {
    let (url, standin) = gateway(|_| {}).await;
    standin.reply("qwen3-prose", "It is probably sunny in Paris.");
    let mut body = request("qwen3-prose", true);
    body["tool_choice"] = json!("required");
    let (content, _, calls, finish) = accumulate(&sse_data(post(&url, body).await).await);
    assert!(calls.is_empty());
    assert!(
        content.starts_with("It is probably sunny in Paris.\n\n[toolcall:"),
        "{content}"
    );
    assert!(content.contains("without a tool call"), "{content}");
    assert_eq!(finish.as_deref(), Some("stop"));

    // With `pass`, the reply is passed as it came.
    let (url, standin) = gateway(|c| c.invalid_calls = InvalidCallPolicy::Pass).await;
    standin.reply("qwen3-prose", "It is probably sunny in Paris.");
    let mut body = request("qwen3-prose", true);
    body["tool_choice"] = json!("required");
    let (content, _, _, _) = accumulate(&sse_data(post(&url, body).await).await);
    assert_eq!(content, "It is probably sunny in Paris.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_offering_more_tools_than_the_limit_is_a_clear_400() {
    let (url, standin) = gateway(|c| c.max_tools = 100).await;
    let many = |n: usize| -> Value {
        (0..n)
            .map(|i| {
                json!({"type": "function", "function": {"name": format!("t{i}"),
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}})
            })
            .collect()
    };
    let mut body = request("qwen3-8b", false);
    body["tools"] = many(101);
    let r = post(&url, body.clone()).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("101 tools") && message.contains("100"),
        "{message}"
    );
    assert!(standin.requests().is_empty());
    body["tools"] = many(100);
    assert_eq!(post(&url, body).await.status(), 200);
}

// Issue #21: servers strip end tokens, so a call whose closing marker is missing at the end
// is a call when the upstream stopped, and truncated (never a finished call) when its
// finish_reason says the reply was cut; whole and streamed alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_finish_reason_decides_a_call_missing_its_end_token() {
    let (url, standin) = gateway(|_| {}).await;
    let text = r#"<|python_start|>[get_weather(city="Paris")]"#;
    standin.reply("llama4-stripped", text);
    standin.reply("llama4-stripped-cut", text);
    let want = vec![json!({"name": "get_weather", "arguments": {"city": "Paris"}})];
    let v: Value = post(&url, request("llama4-stripped", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(calls_of(&v["choices"][0]["message"]), want);
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let (_, _, calls, finish) =
        accumulate(&sse_data(post(&url, request("llama4-stripped", true)).await).await);
    assert_eq!(calls, want);
    assert_eq!(finish.as_deref(), Some("tool_calls"));

    let v: Value = post(&url, request("llama4-stripped-cut", false))
        .await
        .json()
        .await
        .unwrap();
    assert!(calls_of(&v["choices"][0]["message"]).is_empty(), "{v}");
    assert_ne!(v["choices"][0]["finish_reason"], "tool_calls", "{v}");
    // Streamed, the call was announced while it arrived: the stream ends with an error,
    // never with a finished call.
    let data = sse_data(post(&url, request("llama4-stripped-cut", true)).await).await;
    assert!(data.iter().any(|d| d.contains("\"error\"")), "{data:?}");
    assert!(
        !data
            .iter()
            .any(|d| d.contains("\"finish_reason\":\"tool_calls\"")),
        "{data:?}"
    );
}
