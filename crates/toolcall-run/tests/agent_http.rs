//! The agent loop against a scripted OpenAI-compatible server on loopback: what the model
//! receives, round by round.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use toolcall_run::{
    Agent, AgentConfig, AgentError, ApiClient, ClientError, Executor, Mode, ModelClient,
    RetryPolicy, Timeouts,
};

fn agent(client: impl ModelClient + 'static, mode: Mode, max_rounds: usize) -> Agent {
    Agent::new(
        Arc::new(client),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode,
            max_rounds,
            ..AgentConfig::default()
        },
    )
}

/// A native-mode agent talking Chat Completions to `url`.
fn chat_agent(url: &str, max_rounds: usize) -> Agent {
    agent(ApiClient::chat(url, "m").unwrap(), Mode::Native, max_rounds)
}

fn messages(req: &Value) -> &Vec<Value> {
    req["messages"].as_array().unwrap()
}

// covers R-8, R-10, X-1, X-2, X-3, R-6, V-1
#[tokio::test]
async fn results_go_back_paired_by_call_id_in_order_one_per_call() {
    let (url, script) = serve(
        vec![
            chat(calls_message(vec![
                tool_call("call_a", "echo", r#"{"text":"hi"}"#),
                tool_call("call_b", "teleport", r#"{}"#),
                tool_call("call_c", "echo", r#"{"text": "#),
                tool_call("call_d", "flaky", ""),
                tool_call("call_e", "echo", r#"{"text": {"not": "a string"}}"#),
            ])),
            chat(text_message("done")),
        ],
        false,
    )
    .await;
    let mut a = chat_agent(&url, 5);
    let report = a.run_turn("do things").await.unwrap();
    assert_eq!(report.final_text.as_deref(), Some("done"));
    assert!(!report.hit_round_limit);
    let reqs = script.requests();
    assert_eq!(reqs.len(), 2);
    // The first request offers the tools natively.
    let offered: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"echo") && offered.contains(&"flaky"));
    let m = messages(&reqs[1]);
    assert_eq!(m[0], json!({"role":"user","content":"do things"}));
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["tool_calls"].as_array().unwrap().len(), 5);
    let tool_msgs: Vec<&Value> = m[2..].iter().collect();
    assert_eq!(tool_msgs.len(), 5, "one tool message per call");
    let ids: Vec<&str> = tool_msgs
        .iter()
        .map(|t| t["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c", "call_d", "call_e"]);
    let contents: Vec<Value> = tool_msgs
        .iter()
        .map(|t| serde_json::from_str(t["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        contents[0],
        json!({"status":"ok","data":{"echo":{"text":"hi"}}})
    );
    assert_eq!(contents[1]["error"]["code"], "unknown_tool");
    let msg = contents[1]["error"]["message"].as_str().unwrap();
    assert!(msg.contains("teleport") && msg.contains("echo"), "{msg}");
    assert_eq!(contents[2]["error"]["code"], "invalid_arguments");
    assert_eq!(contents[3]["error"]["code"], "tool_failed");
    assert_eq!(contents[3]["error"]["message"], "the disk is full");
    // Schema violation: the error names the JSON pointer.
    assert_eq!(contents[4]["error"]["code"], "invalid_arguments");
    assert!(contents[4].to_string().contains("/text"), "{}", contents[4]);
    // The report mirrors it.
    let r0 = &report.rounds[0];
    assert_eq!(r0.calls.len(), 5);
    assert_eq!(r0.results.len(), 5);
    for (c, r) in r0.calls.iter().zip(&r0.results) {
        assert_eq!(c.call_id, r.call_id);
    }
}

// covers X-6, R-9
#[tokio::test]
async fn rounds_are_bounded_and_the_final_request_has_no_tools() {
    let (url, script) = serve(
        vec![chat(calls_message(vec![tool_call(
            "call_x",
            "echo",
            r#"{"text":"again"}"#,
        )]))],
        true,
    )
    .await;
    let mut a = chat_agent(&url, 3);
    let report = a.run_turn("loop forever").await.unwrap();
    assert!(report.hit_round_limit);
    assert_eq!(report.rounds.len(), 3);
    let reqs = script.requests();
    assert_eq!(reqs.len(), 4, "3 tool rounds + 1 final request");
    for r in &reqs[..3] {
        assert!(r.get("tools").is_some());
    }
    assert!(
        reqs[3].get("tools").is_none(),
        "final request must not offer tools"
    );
    // The model is told why.
    let last = messages(&reqs[3]).last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("without calling tools")
    );
    // The final reply's calls are not run.
    assert!(report.final_text.is_none() || report.final_text.as_deref() == Some(""));
}

// covers X-6
#[tokio::test]
async fn default_round_bound_is_five() {
    let (url, script) = serve(
        vec![chat(calls_message(vec![tool_call("c", "echo", "{}")]))],
        true,
    )
    .await;
    let mut a = Agent::new(
        Arc::new(ApiClient::chat(&url, "m").unwrap()),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig::default(),
    );
    let report = a.run_turn("go").await.unwrap();
    assert_eq!(report.rounds.len(), 5);
    assert_eq!(script.requests().len(), 6);
}

// covers R-9, X-6
#[tokio::test]
async fn repeat_failure_breaker_stops_an_identical_failing_call() {
    let (url, script) = serve(
        vec![chat(calls_message(vec![tool_call(
            "c",
            "flaky",
            r#"{"path":"/tmp/x"}"#,
        )]))],
        true,
    )
    .await;
    let mut a = chat_agent(&url, 10);
    let report = a.run_turn("write it").await.unwrap();
    assert!(report.breaker_tripped);
    assert!(!report.hit_round_limit);
    let codes: Vec<String> = report
        .rounds
        .iter()
        .map(|r| {
            r.results[0].to_json()["error"]["code"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        codes,
        ["tool_failed", "tool_failed", "tool_failed", "cancelled"]
    );
    let reqs = script.requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[4].get("tools").is_none());
    let cancelled = messages(&reqs[4])
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(cancelled["content"].as_str().unwrap().contains("cancelled"));
}

// covers X-2, R-2
#[tokio::test]
async fn streamed_tool_call_deltas_are_assembled_by_index() {
    let chunk = |delta: Value| json!({"choices":[{"index":0,"delta":delta}]});
    let (url, script) = serve(
        vec![
            Answer::Sse(vec![
                chunk(json!({"role":"assistant","content":"Let me "})),
                chunk(json!({"content":"check."})),
                chunk(json!({"tool_calls":[{"index":0,"id":"call_s1","type":"function","function":{"name":"echo","arguments":""}}]})),
                chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"te"}}]})),
                chunk(json!({"tool_calls":[{"index":1,"id":"call_s2","type":"function","function":{"name":"sleep","arguments":"{\"ms\":"}}]})),
                chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"xt\":\"a\"}"}},{"index":1,"id":"call_s2","type":"function","function":{"name":"sleep","arguments":"1}"}}]})),
            ]),
            Answer::Sse(vec![chunk(json!({"content":"all good"}))]),
        ],
        false,
    )
    .await;
    let client = ApiClient::chat(&url, "m").unwrap().streaming(true);
    let mut a = agent(client, Mode::Native, 5);
    let report = a.run_turn("stream").await.unwrap();
    let r0 = &report.rounds[0];
    assert_eq!(r0.assistant_text.as_deref(), Some("Let me check."));
    assert_eq!(r0.calls.len(), 2);
    assert_eq!(r0.calls[0].arguments, json!({"text":"a"}));
    assert_eq!(r0.calls[1].arguments, json!({"ms":1}));
    assert_eq!(report.final_text.as_deref(), Some("all good"));
    let reqs = script.requests();
    assert_eq!(reqs[0]["stream"], json!(true));
    let ids: Vec<&str> = messages(&reqs[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_s1", "call_s2"]);
}

// covers X-2, O-1
#[tokio::test]
async fn responses_api_gets_function_call_output_items() {
    let (url, script) = serve(
        vec![
            Answer::Json(json!({"id":"resp_1","output":[
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Calling."}]},
                {"type":"function_call","call_id":"fc_1","name":"echo","arguments":"{\"text\":\"r\"}"},
                {"type":"function_call","call_id":"fc_2","name":"nope","arguments":"{}"}
            ]})),
            Answer::Json(json!({"id":"resp_2","output":[
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Finished."}]}
            ]})),
        ],
        false,
    )
    .await;
    let mut a = agent(ApiClient::responses(&url, "m").unwrap(), Mode::Native, 5);
    let report = a.run_turn("respond").await.unwrap();
    assert_eq!(report.final_text.as_deref(), Some("Finished."));
    let reqs = script.requests();
    assert_eq!(reqs[0]["tools"][0]["type"], "function");
    assert!(reqs[0]["tools"][0].get("name").is_some());
    let input = reqs[1]["input"].as_array().unwrap();
    let calls: Vec<&str> = input
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| i["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["fc_1", "fc_2"]);
    let outputs: Vec<(&str, Value)> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            (
                i["call_id"].as_str().unwrap(),
                serde_json::from_str(i["output"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0].0, "fc_1");
    assert_eq!(outputs[0].1["data"]["echo"]["text"], "r");
    assert_eq!(outputs[1].0, "fc_2");
    assert_eq!(outputs[1].1["error"]["code"], "unknown_tool");
}

// covers O-1, V-2
#[tokio::test]
async fn dotted_tool_ids_travel_as_aliases_and_come_back_as_ids() {
    let (url, script) = serve(vec![chat(text_message("placeholder"))], false).await;
    // First find the alias the client offers.
    let mut a = chat_agent(&url, 5);
    a.run_turn("x").await.unwrap();
    let alias = script.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .find(|n| n.starts_with("vista"))
        .unwrap();
    assert!(
        alias
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    );
    let (url, script) = serve(
        vec![
            chat(calls_message(vec![tool_call(
                "c1",
                &alias,
                r#"{"text":"s"}"#,
            )])),
            chat(text_message("ok")),
        ],
        false,
    )
    .await;
    let mut a = chat_agent(&url, 5);
    let report = a.run_turn("summary").await.unwrap();
    assert_eq!(report.rounds[0].calls[0].name, "vista.command.summary");
    assert!(report.rounds[0].results[0].is_ok());
    // The echoed call in the next request uses the alias again.
    let m = messages(&script.requests()[1]).clone();
    assert_eq!(m[1]["tool_calls"][0]["function"]["name"], json!(alias));
}

// covers R-7
#[tokio::test]
async fn server_errors_are_clear() {
    let (url, _script) = serve(
        vec![Answer::Status(429, "rate limited: slow down".into())],
        true,
    )
    .await;
    let client = ApiClient::chat(&url, "m")
        .unwrap()
        .with_transport(Timeouts::default(), RetryPolicy::never())
        .unwrap();
    let err = client.complete(&Default::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Status { status: 429, .. }));
    assert!(err.to_string().contains("slow down"));
    let refused = ApiClient::chat("http://127.0.0.1:9", "m")
        .unwrap()
        .with_transport(Timeouts::default(), RetryPolicy::never())
        .unwrap();
    let err = refused.complete(&Default::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
}

// covers X-6
#[tokio::test]
async fn a_second_turn_continues_the_conversation() {
    let (url, script) = serve(
        vec![chat(text_message("first")), chat(text_message("second"))],
        false,
    )
    .await;
    let mut a = chat_agent(&url, 5);
    a.run_turn("one").await.unwrap();
    a.run_turn("two").await.unwrap();
    let m = messages(&script.requests()[1]).clone();
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(m[1]["content"], "first");
}

struct Camera;

#[async_trait::async_trait]
impl toolcall_core::Tool for Camera {
    fn spec(&self) -> toolcall_core::ToolSpec {
        toolcall_core::ToolSpec::new("screenshot", "", json!({"type":"object"}))
    }
    async fn call(
        &self,
        _: &toolcall_core::ToolContext,
        _: Value,
    ) -> Result<toolcall_core::ToolOutput, toolcall_core::ToolError> {
        let data = "A".repeat(200_000);
        Ok(
            json!({"width": 1024, "image": {"type":"image","media_type":"image/png","data": data}})
                .into(),
        )
    }
}

// covers P-CU, R-8
#[tokio::test]
async fn images_in_results_are_attached_not_pasted_into_tool_messages() {
    let (url, script) = serve(
        vec![
            chat(calls_message(vec![
                tool_call("shot", "screenshot", "{}"),
                tool_call("after", "echo", r#"{"text":"x"}"#),
            ])),
            chat(text_message("I see it.")),
        ],
        false,
    )
    .await;
    let mut reg = registry();
    reg.add_tool(Arc::new(Camera)).unwrap();
    let mut a = Agent::new(
        Arc::new(ApiClient::chat(&url, "m").unwrap()),
        Arc::new(Executor::new(Arc::new(reg))),
        AgentConfig::default(),
    );
    a.run_turn("look").await.unwrap();
    let m = messages(&script.requests()[1]).clone();
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap()).collect();
    // Tool messages stay directly after the assistant message; the image follows them.
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "user"]);
    let tool = m[2]["content"].as_str().unwrap();
    assert!(tool.len() < 1000, "base64 pasted into the tool message");
    assert!(tool.contains("attached"));
    let parts = m[4]["content"].as_array().unwrap();
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,AAAA"));
    assert_eq!(url.len(), "data:image/png;base64,".len() + 200_000);
}

// covers X-2
#[tokio::test]
async fn responses_api_streaming_takes_the_completed_output() {
    let done =
        |output: Value| json!({"type":"response.completed","response":{"id":"r","output":output}});
    let (url, script) = serve(
        vec![
            Answer::Sse(vec![
                json!({"type":"response.created","response":{"id":"r"}}),
                json!({"type":"response.function_call_arguments.delta","delta":"{\"te"}),
                done(json!([{"type":"function_call","call_id":"fs_1","name":"echo","arguments":"{\"text\":\"s\"}"}])),
            ]),
            Answer::Sse(vec![done(json!([
                {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Streamed."}]}
            ]))]),
            Answer::Sse(vec![json!({"type":"response.created","response":{"id":"r"}})]),
        ],
        true,
    )
    .await;
    let client = ApiClient::responses(&url, "m").unwrap().streaming(true);
    let mut a = agent(client, Mode::Native, 5);
    let report = a.run_turn("stream it").await.unwrap();
    assert_eq!(report.rounds[0].calls[0].call_id.as_str(), "fs_1");
    assert_eq!(report.final_text.as_deref(), Some("Streamed."));
    let reqs = script.requests();
    assert_eq!(reqs[0]["stream"], json!(true));
    let out = reqs[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()
        .clone();
    assert_eq!(out["call_id"], "fs_1");
    // A stream that stops early is an error, not an empty reply.
    let err = a.run_turn("again").await.unwrap_err();
    assert!(
        matches!(err, AgentError::Client(ClientError::Cut { .. })),
        "{err}"
    );
}

// The request options reach the server on every request; tool options only while tools are
// offered (the round-limit request has none).
#[tokio::test]
async fn request_options_reach_the_server_and_tool_options_only_with_tools() {
    let (url, script) = serve(
        vec![
            chat(calls_message(vec![tool_call(
                "c1",
                "echo",
                r#"{"text":"a"}"#,
            )])),
            chat(text_message("final")),
        ],
        false,
    )
    .await;
    let mut extra = serde_json::Map::new();
    extra.insert("seed".into(), json!(42));
    let mut a = Agent::new(
        Arc::new(ApiClient::chat(&url, "m").unwrap()),
        Arc::new(Executor::new(Arc::new(registry()))),
        AgentConfig {
            mode: Mode::Native,
            max_rounds: 1,
            request_options: toolcall_run::RequestOptions {
                temperature: Some(0.25),
                max_tokens: Some(100),
                tool_choice: Some(toolcall_run::ToolChoice::Tool(
                    "vista.command.summary".into(),
                )),
                parallel_tool_calls: Some(false),
                extra,
                ..Default::default()
            },
            ..AgentConfig::default()
        },
    );
    let report = a.run_turn("go").await.unwrap();
    assert!(report.hit_round_limit);
    let reqs = script.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0];
    assert_eq!(first["temperature"], 0.25);
    assert_eq!(first["max_tokens"], 100);
    assert_eq!(first["seed"], 42);
    assert_eq!(first["parallel_tool_calls"], false);
    let chosen = first["tool_choice"]["function"]["name"].as_str().unwrap();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&chosen),
        "tool_choice names an offered alias"
    );
    let last = &reqs[1];
    assert!(last.get("tools").is_none());
    assert!(last.get("tool_choice").is_none() && last.get("parallel_tool_calls").is_none());
    assert_eq!(last["temperature"], 0.25);
}
