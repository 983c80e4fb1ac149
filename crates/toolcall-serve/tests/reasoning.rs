//! Reasoning written as text (`<think>` blocks, harmony `analysis` channels) is split out of a
//! reply the same way whether the request offered tools or not, in every front end's
//! dialect, whole and streamed: Chat `reasoning_content`, Responses reasoning items,
//! Messages `thinking` blocks, Gemini `thought` parts. Without tools, call-like text stays
//! text. A reply cut by its token limit inside its reasoning ends as `length`; a stream cut
//! inside it ends with an error, never as a reply.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{StandIn, gateway_over, request, sse_data};
use serde_json::{Value, json};

/// A `<think>` block, then an answer that quotes call markup.
const THINK: &str = "<think>They greet me; a short answer will do.</think>Hello! A call would read \
    <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>.";
const THINK_REASONING: &str = "They greet me; a short answer will do.";
const THINK_ANSWER: &str = "Hello! A call would read \
    <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>.";

/// gpt-oss's harmony: the analysis channel, then the final one.
const HARMONY: &str = "<|channel|>analysis<|message|>They greet me.<|end|>\
    <|start|>assistant<|channel|>final<|message|>Hello!<|return|>";

/// A reply that stops inside its reasoning.
const CUT: &str = "<think>First, weigh the";

#[derive(Debug, Clone, Copy)]
enum Front {
    Chat,
    Responses,
    Messages,
    Gemini,
}

const FRONTS: [Front; 4] = [
    Front::Chat,
    Front::Responses,
    Front::Messages,
    Front::Gemini,
];

/// What a client of one front end saw, in neutral terms. `end`: `stop`, `length`, `failed`
/// (an error ended the stream), or `none`.
#[derive(Debug, PartialEq)]
struct Seen {
    reasoning: String,
    text: String,
    calls: usize,
    end: String,
}

impl Front {
    /// The front end's request for `model`, without tools.
    async fn ask(self, url: &str, model: &str, stream: bool) -> reqwest::Response {
        let hi = "hi";
        let (path, body) = match self {
            Front::Chat => (
                "/v1/chat/completions".to_owned(),
                json!({"model": model, "stream": stream,
                    "messages": [{"role": "user", "content": hi}]}),
            ),
            Front::Responses => (
                "/v1/responses".to_owned(),
                json!({"model": model, "stream": stream, "input": hi}),
            ),
            Front::Messages => (
                "/v1/messages".to_owned(),
                json!({"model": model, "stream": stream, "max_tokens": 256,
                    "messages": [{"role": "user", "content": hi}]}),
            ),
            Front::Gemini => (
                if stream {
                    format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
                } else {
                    format!("/v1beta/models/{model}:generateContent")
                },
                json!({"contents": [{"role": "user", "parts": [{"text": hi}]}]}),
            ),
        };
        let r = reqwest::Client::new()
            .post(format!("{url}{path}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{self:?} {model}");
        r
    }

    /// A whole reply as the client reads it.
    fn whole(self, v: &Value) -> Seen {
        let mut seen = Seen {
            reasoning: String::new(),
            text: String::new(),
            calls: 0,
            end: "none".into(),
        };
        let texts = |parts: &Value, key: &str| -> String {
            parts
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p[key].as_str())
                .collect()
        };
        match self {
            Front::Chat => {
                let c = &v["choices"][0];
                let m = &c["message"];
                seen.reasoning = m["reasoning_content"].as_str().unwrap_or("").into();
                seen.text = m["content"].as_str().unwrap_or("").into();
                seen.calls = m["tool_calls"].as_array().map_or(0, Vec::len);
                seen.end = end_of(c["finish_reason"].as_str());
            }
            Front::Responses => {
                for item in v["output"].as_array().unwrap() {
                    match item["type"].as_str().unwrap() {
                        "reasoning" => seen.reasoning += &texts(&item["content"], "text"),
                        "message" => seen.text += &texts(&item["content"], "text"),
                        _ => seen.calls += 1,
                    }
                }
                seen.end = match v["status"].as_str() {
                    Some("completed") => "stop".into(),
                    Some("incomplete") => "length".into(),
                    other => format!("{other:?}"),
                };
            }
            Front::Messages => {
                for block in v["content"].as_array().unwrap() {
                    match block["type"].as_str().unwrap() {
                        "thinking" => seen.reasoning += block["thinking"].as_str().unwrap(),
                        "text" => seen.text += block["text"].as_str().unwrap(),
                        _ => seen.calls += 1,
                    }
                }
                seen.end = end_of(v["stop_reason"].as_str());
            }
            Front::Gemini => {
                let c = &v["candidates"][0];
                for p in c["content"]["parts"].as_array().into_iter().flatten() {
                    read_gemini_part(p, &mut seen);
                }
                seen.end = end_of(c["finishReason"].as_str());
            }
        }
        seen
    }

    /// A streamed reply as the client accumulates it.
    fn streamed(self, data: &[String]) -> Seen {
        let mut seen = Seen {
            reasoning: String::new(),
            text: String::new(),
            calls: 0,
            end: "none".into(),
        };
        for d in data.iter().filter(|d| *d != "[DONE]") {
            let v: Value = serde_json::from_str(d).unwrap();
            if v.get("error").is_some() || v["type"] == "error" || v["type"] == "response.failed" {
                seen.end = "failed".into();
                continue;
            }
            match self {
                Front::Chat => {
                    let c = &v["choices"][0];
                    let delta = &c["delta"];
                    seen.reasoning += delta["reasoning_content"].as_str().unwrap_or("");
                    seen.text += delta["content"].as_str().unwrap_or("");
                    seen.calls += delta["tool_calls"].as_array().map_or(0, Vec::len);
                    if let Some(f) = c["finish_reason"].as_str() {
                        seen.end = end_of(Some(f));
                    }
                }
                Front::Responses => match v["type"].as_str().unwrap() {
                    "response.reasoning_text.delta" => {
                        seen.reasoning += v["delta"].as_str().unwrap();
                    }
                    "response.output_text.delta" => seen.text += v["delta"].as_str().unwrap(),
                    "response.function_call_arguments.done" => seen.calls += 1,
                    "response.completed" => seen.end = "stop".into(),
                    "response.incomplete" => seen.end = "length".into(),
                    _ => {}
                },
                Front::Messages => match v["type"].as_str().unwrap() {
                    "content_block_delta" => {
                        let delta = &v["delta"];
                        match delta["type"].as_str().unwrap() {
                            "thinking_delta" => {
                                seen.reasoning += delta["thinking"].as_str().unwrap()
                            }
                            "text_delta" => seen.text += delta["text"].as_str().unwrap(),
                            _ => {}
                        }
                    }
                    "content_block_start" if v["content_block"]["type"] == "tool_use" => {
                        seen.calls += 1;
                    }
                    "message_delta" => seen.end = end_of(v["delta"]["stop_reason"].as_str()),
                    _ => {}
                },
                Front::Gemini => {
                    let c = &v["candidates"][0];
                    for p in c["content"]["parts"].as_array().into_iter().flatten() {
                        read_gemini_part(p, &mut seen);
                    }
                    if let Some(f) = c["finishReason"].as_str() {
                        seen.end = end_of(Some(f));
                    }
                }
            }
        }
        seen
    }
}

fn read_gemini_part(p: &Value, seen: &mut Seen) {
    if p.get("functionCall").is_some() {
        seen.calls += 1;
    } else if p["thought"] == true {
        seen.reasoning += p["text"].as_str().unwrap_or("");
    } else {
        seen.text += p["text"].as_str().unwrap_or("");
    }
}

/// A finish reason in any dialect as `stop` or `length`.
fn end_of(reason: Option<&str>) -> String {
    match reason {
        Some("stop" | "end_turn" | "STOP") => "stop".into(),
        Some("length" | "max_tokens" | "MAX_TOKENS") => "length".into(),
        other => format!("{other:?}"),
    }
}

async fn gateway_with(replies: &[(&str, &str)]) -> String {
    let s = StandIn::default();
    for (model, text) in replies {
        s.reply(model, text);
    }
    gateway_over(s, |_| {}).await.0
}

fn seen(reasoning: &str, text: &str, end: &str) -> Seen {
    Seen {
        reasoning: reasoning.into(),
        text: text.into(),
        calls: 0,
        end: end.into(),
    }
}

/// Every front end, whole and streamed, sees `expected` for `model`'s reply.
async fn check_all(url: &str, model: &str, expected: &Seen) {
    for front in FRONTS {
        let v: Value = front.ask(url, model, false).await.json().await.unwrap();
        assert_eq!(&front.whole(&v), expected, "{front:?} whole {model}: {v}");
        let data = sse_data(front.ask(url, model, true).await).await;
        assert_eq!(
            &front.streamed(&data),
            expected,
            "{front:?} streamed {model}: {data:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn think_blocks_are_reasoning_without_tools_and_call_markup_stays_text() {
    // qwen3 picks hermes by name; an unknown name reads every family (auto).
    let url = gateway_with(&[("qwen3-think", THINK), ("mystery-think", THINK)]).await;
    for model in ["qwen3-think", "mystery-think"] {
        check_all(&url, model, &seen(THINK_REASONING, THINK_ANSWER, "stop")).await;
    }
    // With tools, the same reasoning; the call is taken.
    let v: Value = common::post(&url, request("qwen3-think", false))
        .await
        .json()
        .await
        .unwrap();
    let m = &v["choices"][0]["message"];
    assert_eq!(m["reasoning_content"], THINK_REASONING, "{v}");
    assert_eq!(m["tool_calls"].as_array().map_or(0, Vec::len), 1, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harmony_analysis_is_reasoning_without_tools() {
    let url = gateway_with(&[("gpt-oss-20b", HARMONY)]).await;
    check_all(
        &url,
        "gpt-oss-20b",
        &seen("They greet me.", "Hello!", "stop"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_by_its_token_limit_inside_reasoning_ends_as_length() {
    // `…-cut`: the stand-in's finish reason is `length`.
    let url = gateway_with(&[("qwen3-think-cut", CUT)]).await;
    check_all(
        &url,
        "qwen3-think-cut",
        &seen("First, weigh the", "", "length"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_inside_reasoning_ends_with_an_error() {
    // `…-dropped`: the stand-in's stream stops without a finish reason or `[DONE]`.
    let url = gateway_with(&[("qwen3-think-dropped", CUT)]).await;
    for front in FRONTS {
        let data = sse_data(front.ask(&url, "qwen3-think-dropped", true).await).await;
        let mut s = front.streamed(&data);
        // What went out was reasoning (the bytes that could begin `</think>` are held back,
        // and a cut stream is not finished).
        assert!(
            !s.reasoning.is_empty() && "First, weigh the".starts_with(&s.reasoning),
            "{front:?}: {data:?}"
        );
        s.reasoning.clear();
        assert_eq!(s, seen("", "", "failed"), "{front:?}: {data:?}");
    }
}
