//! Every tool kind and request field a client declares, and what reaches the upstream:
//! Responses-only fields never cross to a Chat upstream.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

async fn post_responses(url: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap()
}

// Codex CLI's request fields: before, `prompt_cache_key` and `client_metadata` reached the
// upstream Chat request and `reasoning.effort` did not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_fields_the_upstream_dialect_defines_cross() {
    let (url, standin) = gateway(|_| {}).await;
    let body = json!({"model": "plain", "input": "hi", "stream": false,
        "store": false, "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high", "summary": "auto"},
        "prompt_cache_key": "k1", "client_metadata": {"session": "s"},
        "previous_response_id": null, "truncation": "auto",
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}},
        "max_output_tokens": 64, "temperature": 0.2, "parallel_tool_calls": true});
    let r = post_responses(&url, &body).await;
    assert_eq!(r.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let keys: Vec<&str> = sent
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for responses_only in [
        "store",
        "include",
        "reasoning",
        "prompt_cache_key",
        "client_metadata",
        "previous_response_id",
        "truncation",
        "text",
        "max_output_tokens",
        "input",
    ] {
        assert!(
            !keys.contains(&responses_only),
            "{responses_only} in {sent}"
        );
    }
    for key in &keys {
        assert!(
            toolcall_wire::crossing::is_neutral(key)
                || [
                    "model",
                    "messages",
                    "tools",
                    "tool_choice",
                    "parallel_tool_calls",
                    "stream"
                ]
                .contains(key),
            "{key} is no Chat request field: {sent}"
        );
    }
    assert_eq!(sent["reasoning_effort"], "high");
    assert_eq!(sent["max_tokens"], 64);
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["response_format"]["json_schema"]["name"], "n");
}

/// A Lark grammar for Codex's patch format, cut down to added files.
const PATCH_GRAMMAR: &str = r#"start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?
hunk: "*** Add File: " filename LF add_line+
filename: /(.+)/
add_line: "+" /(.*)/ LF
%import common.LF
"#;

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch";
const BAD_PATCH: &str = "*** Begin Patch\n*** Remove Everything\n*** End Patch";

/// The model's call to `apply_patch` in Qwen3-Coder's XML, its one parameter the raw patch.
fn xml_call(patch: &str) -> String {
    format!(
        "<tool_call>\n<function=apply_patch>\n<parameter=input>\n{patch}\n</parameter>\n</function>\n</tool_call>"
    )
}

fn apply_patch_tool() -> Value {
    json!({"type": "custom", "name": "apply_patch", "description": "Edit files with a patch.",
        "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}})
}

async fn patch_gateway() -> (String, StandIn) {
    let s = StandIn::default();
    s.reply("coder-patch", &xml_call(PATCH));
    // A grammar-violating patch first, a good one on the retry.
    s.reply("coder-bad-then-good", &xml_call(BAD_PATCH));
    s.reply("coder-bad-then-good", &xml_call(PATCH));
    s.reply("coder-bad", &xml_call(BAD_PATCH));
    gateway_over(s, |c| c.format = Some("qwen3_coder".into())).await
}

// Before: the custom tool reached the upstream as `tools: []` and the model's call to it was
// answered "no tool named apply_patch".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_grammar_tool_is_offered_and_its_call_comes_back_raw() {
    let (url, standin) = patch_gateway().await;
    let body = json!({"model": "coder-patch", "input": "add hello.txt",
        "tools": [apply_patch_tool()]});
    let r = post_responses(&url, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let sent = standin.requests().pop().unwrap();
    assert_eq!(sent["tools"][0]["type"], "function", "{sent}");
    assert_eq!(sent["tools"][0]["function"]["name"], "apply_patch");
    assert_eq!(
        sent["tools"][0]["function"]["parameters"]["required"],
        json!(["input"])
    );
    let calls: Vec<&Value> = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "custom_tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(calls[0]["name"], "apply_patch");
    assert_eq!(calls[0]["input"], PATCH);
    let call_id = calls[0]["call_id"].as_str().unwrap().to_owned();
    assert!(!call_id.is_empty());

    // Streamed: the item, its input delta and done, and the completed response.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = sse_events(post_responses(&url, &streamed).await).await;
    let of = |t: &str| events.iter().filter(|e| e["type"] == t).collect::<Vec<_>>();
    assert_eq!(
        of("response.output_item.added").last().unwrap()["item"]["type"],
        "custom_tool_call"
    );
    let delta: String = of("response.custom_tool_call_input.delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(delta, PATCH);
    assert_eq!(
        of("response.custom_tool_call_input.done")[0]["input"],
        PATCH
    );
    let done = of("response.completed");
    let output = done[0]["response"]["output"].as_array().unwrap();
    let item = output
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .unwrap();
    assert_eq!(item["input"], PATCH);

    // The output goes back paired by call_id; the earlier call reaches the upstream as a
    // call of the function it was offered as.
    let body = json!({"model": "coder-patch", "tools": [apply_patch_tool()], "input": [
        {"role": "user", "content": "add hello.txt"},
        {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": call_id, "output": "Done!"}]});
    assert_eq!(post_responses(&url, &body).await.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let call = &messages[1]["tool_calls"][0];
    assert_eq!(call["type"], "function", "{sent}");
    assert_eq!(call["id"], call_id.as_str());
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"input": PATCH}));
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], call_id.as_str());
    assert_eq!(messages[2]["content"], "Done!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_that_breaks_the_grammar_goes_through_the_invalid_call_policy() {
    let (url, standin) = patch_gateway().await;
    // retry (the default): asked again with the grammar's complaint; the good patch wins.
    let body = json!({"model": "coder-bad-then-good", "input": "add hello.txt",
        "tools": [apply_patch_tool()]});
    let v: Value = post_responses(&url, &body).await.json().await.unwrap();
    let retry = standin.requests().pop().unwrap();
    let said = retry["messages"].to_string();
    assert!(said.contains("does not match its grammar"), "{said}");
    let item = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .unwrap();
    assert_eq!(item["input"], PATCH);

    // Still wrong after the retry: dropped, said in the text, never a call.
    let body = json!({"model": "coder-bad", "input": "add hello.txt",
        "tools": [apply_patch_tool()]});
    let v: Value = post_responses(&url, &body).await.json().await.unwrap();
    assert!(!v["output"].to_string().contains("custom_tool_call"), "{v}");
    assert!(
        v["output"]
            .to_string()
            .contains("does not match its grammar"),
        "{v}"
    );
}

// Streamed, as Codex asks: the grammar-violating patch never reaches the client, not even as
// a delta; the retry's good patch does, or nothing when the model stays wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_patch_that_breaks_the_grammar_never_reaches_the_client() {
    let (url, standin) = patch_gateway().await;
    let body = json!({"model": "coder-bad-then-good", "input": "add hello.txt", "stream": true,
        "tools": [apply_patch_tool()]});
    let events = sse_events(post_responses(&url, &body).await).await;
    assert_eq!(standin.requests().len(), 2, "one retry: {events:?}");
    assert!(
        !serde_json::to_string(&events)
            .unwrap()
            .contains("Remove Everything"),
        "{events:?}"
    );
    let delta: String = events
        .iter()
        .filter(|e| e["type"] == "response.custom_tool_call_input.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(delta, PATCH);
    let completed = events
        .iter()
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    let calls: Vec<&Value> = completed["response"]["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "custom_tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "{completed}");
    assert_eq!(calls[0]["input"], PATCH);

    let body = json!({"model": "coder-bad", "input": "add hello.txt", "stream": true,
        "tools": [apply_patch_tool()]});
    let events = sse_events(post_responses(&url, &body).await).await;
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("custom_tool_call"), "{all}");
    assert!(!all.contains("Remove Everything"), "{all}");
    assert!(all.contains("does not match its grammar"), "{all}");
}

// Before: `missing field 'function' at line 1 column …`, a parser error for a valid request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_custom_tool_is_read_and_its_call_written_as_chat_does() {
    let (url, _standin) = patch_gateway().await;
    let tool = json!({"type": "custom", "custom": {"name": "apply_patch",
        "description": "Edit files.",
        "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": PATCH_GRAMMAR}}}});
    let body = json!({"model": "coder-patch", "tools": [tool],
        "messages": [{"role": "user", "content": "add hello.txt"}]});
    let r = post(&url, body.clone()).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["type"], "custom", "{v}");
    assert_eq!(call["custom"]["name"], "apply_patch");
    assert_eq!(call["custom"]["input"], PATCH);
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let events = sse_events(post(&url, streamed).await).await;
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    assert_eq!(calls[0]["type"], "custom", "{calls:?}");
    assert_eq!(calls[0]["custom"]["name"], "apply_patch");
    let input: String = calls
        .iter()
        .filter_map(|c| c["custom"]["input"].as_str())
        .collect();
    assert_eq!(input, PATCH);
}

fn multi_agent() -> Value {
    json!({"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
        "tools": [
            {"type": "function", "name": "spawn_agent", "description": "Spawns an agent.",
             "parameters": {"type": "object", "properties": {"message": {"type": "string"}},
                            "required": ["message"]}},
            {"type": "function", "name": "wait_agent",
             "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}]})
}

// Before: the namespace reached the upstream as nothing, so the model never saw its tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_is_offered_qualified_and_its_calls_come_back_as_declared() {
    let s = StandIn::default();
    s.reply(
        "coder-spawn",
        "<tool_call>\n<function=multi_agent_v1__spawn_agent>\n<parameter=message>\nfix the bug\n</parameter>\n</function>\n</tool_call>",
    );
    let (url, standin) = gateway_over(s, |c| c.format = Some("qwen3_coder".into())).await;
    let body = json!({"model": "coder-spawn", "input": "delegate", "tools": [multi_agent()]});
    let v: Value = post_responses(&url, &body).await.json().await.unwrap();
    let sent = standin.requests().pop().unwrap();
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent"]
    );
    assert_eq!(
        sent["tools"][0]["function"]["parameters"]["required"],
        json!(["message"])
    );
    let call = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(call["name"], "spawn_agent");
    assert_eq!(call["namespace"], "multi_agent_v1");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"message": "fix the bug"}));

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = sse_events(post_responses(&url, &streamed).await).await;
    let done = events
        .iter()
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    let item = &done["response"]["output"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(item["name"], "spawn_agent", "{item}");
    assert_eq!(item["namespace"], "multi_agent_v1");

    // The call and its output go back under the qualified name.
    let call_id = call["call_id"].as_str().unwrap();
    let body = json!({"model": "coder-spawn", "tools": [multi_agent()], "input": [
        {"role": "user", "content": "delegate"},
        {"type": "function_call", "call_id": call_id, "name": "spawn_agent",
         "namespace": "multi_agent_v1", "arguments": "{\"message\":\"fix the bug\"}"},
        {"type": "function_call_output", "call_id": call_id, "output": "agent 7"}]});
    assert_eq!(post_responses(&url, &body).await.status(), 200);
    let sent = standin.requests().pop().unwrap();
    assert_eq!(
        sent["messages"][1]["tool_calls"][0]["function"]["name"],
        "multi_agent_v1__spawn_agent"
    );
}

fn anthropic_built_ins() -> Value {
    json!([
        {"type": "computer_20250124", "name": "computer",
         "display_width_px": 1280, "display_height_px": 800, "display_number": 1},
        {"type": "bash_20250124", "name": "bash"},
        {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}])
}

// Before: the three reached a Chat upstream as nothing (no schema is sent for them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_built_in_tools_are_expanded_and_their_calls_come_back_by_name() {
    let s = StandIn::default();
    s.reply(
        "coder-desktop",
        "<tool_call>\n<function=computer>\n<parameter=action>\nleft_click\n</parameter>\n<parameter=coordinate>\n[100, 200]\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=bash>\n<parameter=command>\nls /tmp\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=str_replace_based_edit_tool>\n<parameter=command>\nview\n</parameter>\n<parameter=path>\n/tmp/a.txt\n</parameter>\n</function>\n</tool_call>",
    );
    let (url, standin) = gateway_over(s, |c| c.format = Some("qwen3_coder".into())).await;
    let body = json!({"model": "coder-desktop", "max_tokens": 200, "tools": anthropic_built_ins(),
        "messages": [{"role": "user", "content": "open the menu"}]});
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/messages"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let sent = standin.requests().pop().unwrap();
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3, "{sent}");
    assert!(tools.iter().all(|t| t["type"] == "function"));
    let computer = &tools[0]["function"];
    assert_eq!(computer["name"], "computer");
    assert!(
        computer["description"]
            .as_str()
            .unwrap()
            .contains("1280x800")
    );
    assert!(
        computer["parameters"]["properties"]["action"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("left_click_drag"))
    );
    assert_eq!(
        tools[1]["function"]["parameters"]["properties"]["command"]["type"],
        "string"
    );
    assert_eq!(tools[2]["function"]["name"], "str_replace_based_edit_tool");

    let uses: Vec<&Value> = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(uses.len(), 3, "{v}");
    assert_eq!(uses[0]["name"], "computer");
    assert_eq!(
        uses[0]["input"],
        json!({"action": "left_click", "coordinate": [100, 200]})
    );
    assert_eq!(uses[1]["name"], "bash");
    assert_eq!(uses[1]["input"], json!({"command": "ls /tmp"}));
    assert_eq!(uses[2]["name"], "str_replace_based_edit_tool");
    assert_eq!(
        uses[2]["input"],
        json!({"command": "view", "path": "/tmp/a.txt"})
    );
    assert_eq!(v["stop_reason"], "tool_use");

    // The screenshot in the computer's result reaches the upstream as an image part.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let body = json!({"model": "coder-desktop", "max_tokens": 200, "tools": anthropic_built_ins(),
        "messages": [
            {"role": "user", "content": "open the menu"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                "name": "computer", "input": {"action": "screenshot"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "the screen"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                        "data": png}}]}]}]});
    let r = reqwest::Client::new()
        .post(format!("{url}/v1/messages"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let result = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(result["tool_call_id"], "toolu_1");
    let parts = result["content"].as_array().unwrap();
    assert_eq!(parts[0], json!({"type": "text", "text": "the screen"}));
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/png;base64,{png}")
    );
}

/// Tool names OpenAI's and Anthropic's APIs accept.
fn provider_accepts(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// An upstream that checks tool names as OpenAI's and Anthropic's APIs do (a `400` naming
/// the bad one) and answers a native call of `multi_agent_v1__spawn_agent`: Anthropic
/// Messages (whole or streamed) on `/v1/messages`, OpenAI Responses (whole) on `/v1/responses`.
async fn provider_upstream() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::extract::State;
    use axum::response::IntoResponse;
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<Value>>>;
    fn bad_name(body: &Value) -> Option<axum::response::Response> {
        let names = body["tools"]
            .as_array()?
            .iter()
            .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()));
        for n in names {
            if !provider_accepts(n) {
                let e = json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": format!("tools.0.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$': {n}")}});
                return Some((axum::http::StatusCode::BAD_REQUEST, axum::Json(e)).into_response());
            }
        }
        None
    }
    const NAME: &str = "multi_agent_v1__spawn_agent";
    async fn messages(
        State(seen): State<Seen>,
        body: axum::Json<Value>,
    ) -> axum::response::Response {
        seen.lock().unwrap().push(body.0.clone());
        if let Some(r) = bad_name(&body) {
            return r;
        }
        if body["stream"] == true {
            let events = [
                json!({"type": "message_start", "message": {"id": "msg_up", "type": "message",
                    "role": "assistant", "content": [], "model": "m",
                    "usage": {"input_tokens": 5, "output_tokens": 0}}}),
                json!({"type": "content_block_start", "index": 0, "content_block":
                    {"type": "tool_use", "id": "toolu_up", "name": NAME, "input": {}}}),
                json!({"type": "content_block_delta", "index": 0, "delta":
                    {"type": "input_json_delta", "partial_json": "{\"message\": \"fix"}}),
                json!({"type": "content_block_delta", "index": 0, "delta":
                    {"type": "input_json_delta", "partial_json": " the bug\"}"}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 9}}),
                json!({"type": "message_stop"}),
            ];
            let mut text = String::new();
            for e in events {
                text.push_str(&format!(
                    "event: {}\ndata: {e}\n\n",
                    e["type"].as_str().unwrap()
                ));
            }
            return axum::response::Response::builder()
                .header("content-type", "text/event-stream")
                .body(axum::body::Body::from(text))
                .unwrap();
        }
        axum::Json(
            json!({"id": "msg_up", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_up", "name": NAME,
                "input": {"message": "fix the bug"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 9}}),
        )
        .into_response()
    }
    async fn responses(
        State(seen): State<Seen>,
        body: axum::Json<Value>,
    ) -> axum::response::Response {
        seen.lock().unwrap().push(body.0.clone());
        if let Some(r) = bad_name(&body) {
            return r;
        }
        axum::Json(
            json!({"id": "resp_up", "object": "response", "created_at": 1,
            "status": "completed", "model": "m", "output": [{"type": "function_call",
                "id": "fc_up", "call_id": "call_up", "name": NAME,
                "arguments": "{\"message\": \"fix the bug\"}", "status": "completed"}],
            "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14}}),
        )
        .into_response()
    }
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(messages))
        .route("/v1/responses", axum::routing::post(responses))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// The namespace call in a Responses reply (whole or `response.completed`).
fn namespaced_call(output: &Value) -> Value {
    output
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("{output}"))
        .clone()
}

// Before: offered as `multi_agent_v1.spawn_agent`, which OpenAI and Anthropic refuse with a
// 400 (the stand-in checks names as they do).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_tools_pass_the_name_rules_of_anthropic_and_openai_upstreams() {
    let (upstream, seen) = provider_upstream().await;
    for api in ["anthropic", "responses"] {
        let (url, _) = gateway(|c| {
            c.upstream = upstream.clone();
            c.upstream_api = api.parse().unwrap();
            c.retries = 0;
        })
        .await;
        let body = json!({"model": "m", "input": "delegate", "tools": [multi_agent()]});
        let r = post_responses(&url, &body).await;
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{api}: {v}");
        let sent = seen.lock().unwrap().pop().unwrap();
        let names: Vec<&str> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["name"]
                    .as_str()
                    .or(t["function"]["name"].as_str())
                    .unwrap()
            })
            .collect();
        assert_eq!(
            names,
            ["multi_agent_v1__spawn_agent", "multi_agent_v1__wait_agent"],
            "{api}"
        );
        let call = namespaced_call(&v["output"]);
        assert_eq!(call["name"], "spawn_agent", "{api}: {call}");
        assert_eq!(call["namespace"], "multi_agent_v1");
        let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"message": "fix the bug"}));
        if api == "anthropic" {
            let mut streamed = body.clone();
            streamed["stream"] = json!(true);
            let events = sse_events(post_responses(&url, &streamed).await).await;
            let added = events
                .iter()
                .find(|e| {
                    e["type"] == "response.output_item.added"
                        && e["item"]["type"] == "function_call"
                })
                .unwrap_or_else(|| panic!("{events:?}"));
            assert_eq!(added["item"]["name"], "spawn_agent");
            assert_eq!(added["item"]["namespace"], "multi_agent_v1");
            let done = events
                .iter()
                .find(|e| e["type"] == "response.completed")
                .unwrap();
            let call = namespaced_call(&done["response"]["output"]);
            assert_eq!(call["name"], "spawn_agent");
            assert_eq!(call["namespace"], "multi_agent_v1");
            let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(args, json!({"message": "fix the bug"}));
        }
    }
}

fn openai_built_ins() -> Value {
    json!([{"type": "computer_use_preview", "display_width": 1280, "display_height": 800,
            "environment": "linux"},
        {"type": "local_shell"}])
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

// Before: both were logged and left out, so the model was never offered them and the client
// never got a computer_call or local_shell_call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_computer_and_local_shell_are_offered_and_come_back_as_their_items() {
    let s = StandIn::default();
    s.reply(
        "coder-desk",
        "<tool_call>\n<function=computer_use_preview>\n<parameter=type>\nclick\n</parameter>\n<parameter=x>\n10\n</parameter>\n<parameter=y>\n20\n</parameter>\n<parameter=button>\nleft\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=local_shell>\n<parameter=command>\n[\"ls\", \"-la\"]\n</parameter>\n</function>\n</tool_call>",
    );
    let (url, standin) = gateway_over(s, |c| c.format = Some("qwen3_coder".into())).await;
    let body = json!({"model": "coder-desk", "input": "look around", "tools": openai_built_ins()});
    let r = post_responses(&url, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let sent = standin.requests().pop().unwrap();
    let tools = sent["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2, "{sent}");
    assert_eq!(tools[0]["function"]["name"], "computer_use_preview");
    let about = tools[0]["function"]["description"].as_str().unwrap();
    assert!(
        about.contains("1280x800") && about.contains("linux"),
        "{about}"
    );
    assert!(
        tools[0]["function"]["parameters"]["properties"]["type"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("double_click"))
    );
    assert_eq!(tools[1]["function"]["name"], "local_shell");
    assert_eq!(
        tools[1]["function"]["parameters"]["required"],
        json!(["command"])
    );

    let check_items = |output: &Value| {
        let items = output.as_array().unwrap();
        let computer = items
            .iter()
            .find(|i| i["type"] == "computer_call")
            .unwrap_or_else(|| panic!("{output}"));
        assert_eq!(
            computer["action"],
            json!({"type": "click", "x": 10, "y": 20, "button": "left"})
        );
        assert!(computer["call_id"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(computer["pending_safety_checks"], json!([]));
        assert_eq!(computer["status"], "completed");
        let shell = items
            .iter()
            .find(|i| i["type"] == "local_shell_call")
            .unwrap_or_else(|| panic!("{output}"));
        assert_eq!(
            shell["action"],
            json!({"type": "exec", "command": ["ls", "-la"], "env": {}})
        );
        assert!(
            !items.iter().any(|i| i["type"] == "function_call"),
            "{output}"
        );
        (
            computer["call_id"].as_str().unwrap().to_owned(),
            shell["call_id"].as_str().unwrap().to_owned(),
        )
    };
    let (computer_id, shell_id) = check_items(&v["output"]);

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = sse_events(post_responses(&url, &streamed).await).await;
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "response.output_item.added"
                && e["item"]["type"] == "computer_call"),
        "{events:?}"
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "response.completed")
        .unwrap();
    check_items(&done["response"]["output"]);

    // The outputs go back paired by call id: the screenshot as an image part.
    let body = json!({"model": "coder-desk", "tools": openai_built_ins(), "input": [
        {"role": "user", "content": "look around"},
        {"type": "computer_call", "id": "cu_1", "call_id": computer_id,
         "action": {"type": "screenshot"}, "pending_safety_checks": [], "status": "completed"},
        {"type": "computer_call_output", "call_id": computer_id,
         "output": {"type": "computer_screenshot", "image_url": format!("data:image/png;base64,{PNG}")}},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": shell_id,
         "action": {"type": "exec", "command": ["ls"], "env": {}}, "status": "completed"},
        {"type": "local_shell_call_output", "call_id": shell_id, "output": "a.txt\n"}]});
    assert_eq!(post_responses(&url, &body).await.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let calls: Vec<&Value> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(
        calls[0]["function"]["name"], "computer_use_preview",
        "{sent}"
    );
    assert_eq!(calls[0]["id"], computer_id.as_str());
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"type": "screenshot"}));
    assert_eq!(calls[1]["function"]["name"], "local_shell");
    let args: Value =
        serde_json::from_str(calls[1]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": ["ls"], "env": {}}));
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results[0]["tool_call_id"], computer_id.as_str());
    let image = results[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "image_url")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(
        image["image_url"]["url"],
        format!("data:image/png;base64,{PNG}")
    );
    assert_eq!(results[1]["tool_call_id"], shell_id.as_str());
    assert_eq!(results[1]["content"], "a.txt\n");
}

// Before: the constraint held the custom tool's input as any text up to its closing tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_tools_grammar_is_inside_the_constraint_sent_upstream() {
    let s = StandIn::default();
    s.reply("coder-patch", &xml_call(PATCH));
    let (url, standin) = gateway_over(s, |c| {
        c.format = Some("qwen3_coder".into());
        c.constrain = toolcall_serve::constrain::Constrain::StructuralTag;
    })
    .await;
    let body = json!({"model": "coder-patch", "input": "add hello.txt",
        "tools": [apply_patch_tool()], "tool_choice": {"type": "custom", "name": "apply_patch"}});
    let r = post_responses(&url, &body).await;
    assert_eq!(r.status(), 200);
    let sent = standin.requests().pop().unwrap();
    let format = &sent["response_format"];
    assert_eq!(format["type"], "structural_tag", "{sent}");
    let text = format.to_string();
    assert!(text.contains("*** Begin Patch"), "{text}");
    assert!(text.contains("*** Add File: "), "{text}");
}

// A computer_call_output's screenshot reaches an Anthropic upstream as an image block in
// the tool_result paired with the call (the Chat case is checked above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_computer_screenshot_reaches_an_anthropic_upstream_as_an_image_block() {
    let (upstream, seen) = provider_upstream().await;
    let (url, _) = gateway(|c| {
        c.upstream = upstream.clone();
        c.upstream_api = "anthropic".parse().unwrap();
        c.retries = 0;
    })
    .await;
    let body = json!({"model": "m", "tools": openai_built_ins(), "input": [
        {"role": "user", "content": "look"},
        {"type": "computer_call", "id": "cu_1", "call_id": "call_9",
         "action": {"type": "screenshot"}, "pending_safety_checks": [], "status": "completed"},
        {"type": "computer_call_output", "call_id": "call_9",
         "output": {"type": "computer_screenshot", "image_url": format!("data:image/png;base64,{PNG}")}}]});
    let r = post_responses(&url, &body).await;
    let answer = r.text().await.unwrap();
    let sent = seen
        .lock()
        .unwrap()
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("nothing reached the upstream: {answer}"));
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["computer_use_preview", "local_shell"], "{sent}");
    let messages = sent["messages"].as_array().unwrap();
    let call = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(call["id"], "call_9");
    assert_eq!(call["name"], "computer_use_preview");
    assert_eq!(call["input"], json!({"type": "screenshot"}));
    let result = messages[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_result")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(result["tool_use_id"], "call_9");
    let image = result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{result}"))
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(image["source"]["data"], PNG);
}
