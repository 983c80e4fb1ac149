//! `POST /v1/responses`: the request becomes a Chat Completions request to the upstream
//! (most model servers speak only Chat), goes through the same turn as `/v1/chat/completions`,
//! and comes back as Responses output items: a reasoning item, a message, `function_call`
//! items with their `call_id`s.
//!
//! Streamed (`stream: true`), the events follow the API's order (`response.created`, per item
//! `output_item.added` … `output_item.done`, `response.completed`) but are sent once the
//! turn is complete: the reply is checked as a whole before any of it goes out.

use std::convert::Infallible;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolcall_core::CallId;
use toolcall_wire::encode_arguments;
use toolcall_wire::responses::{
    OutputItem, OutputText, ReasoningText, Response as ApiResponse, ResponsesRequest,
};

use crate::chat::{add_repairs_header, now, parse_request, whole};
use crate::metrics::Metrics;
use crate::turn::Checked;
use crate::{ApiError, AppState, auth};

pub async fn handle(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    Metrics::add(&state.metrics.responses_requests, 1);
    let result = async {
        if !auth::authorized(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        let request = parse_request::<ResponsesRequest>(&body)?;
        let mut chat = request
            .to_chat()
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        chat.stream = None;
        let streamed = request.stream == Some(true);
        if streamed {
            Metrics::add(&state.metrics.streamed_requests, 1);
        }
        let (completion, checked) = whole(&state, chat).await?;
        let model = if completion.model.is_empty() {
            request.model.clone()
        } else {
            completion.model.clone()
        };
        let mut response = to_response(&checked, &model, completion.usage.clone());
        if let Some(m) = response.extra.get_mut("parallel_tool_calls") {
            *m = json!(request.parallel_tool_calls.unwrap_or(true));
        }
        if let Some(tools) = &request.tools {
            response.extra.insert("tools".into(), json!(tools));
        }
        let mut out = if streamed {
            Sse::new(futures::stream::iter(
                events(&response).into_iter().map(Ok::<_, Infallible>),
            ))
            .into_response()
        } else {
            Json(&response).into_response()
        };
        add_repairs_header(&mut out, &checked);
        Ok(out)
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.into_response()
    })
}

fn item_id(prefix: &str) -> String {
    let id = CallId::generate();
    format!("{prefix}_{}", id.as_str().trim_start_matches("call_"))
}

/// A checked turn as a Responses object.
pub fn to_response(checked: &Checked, model: &str, usage: Option<Value>) -> ApiResponse {
    let mut output = Vec::new();
    if let Some(r) = checked.reasoning.as_ref().filter(|r| !r.is_empty()) {
        output.push(OutputItem::Reasoning {
            id: item_id("rs"),
            summary: Vec::new(),
            content: vec![ReasoningText::new(r.clone())],
        });
    }
    if let Some(t) = checked.text.as_ref().filter(|t| !t.trim().is_empty()) {
        output.push(OutputItem::Message {
            id: item_id("msg"),
            role: "assistant".into(),
            status: "completed".into(),
            content: vec![OutputText::new(t.clone())],
        });
    }
    for c in &checked.calls {
        output.push(OutputItem::FunctionCall {
            id: item_id("fc"),
            call_id: c.call_id.to_string(),
            name: c.name.clone(),
            arguments: encode_arguments(&c.arguments),
            status: "completed".into(),
        });
    }
    let mut r = ApiResponse::completed(&item_id("resp"), now(), model, output);
    r.usage = usage.map(|u| {
        let input = u.get("prompt_tokens").cloned().unwrap_or(json!(0));
        let out = u.get("completion_tokens").cloned().unwrap_or(json!(0));
        let total = u.get("total_tokens").cloned().unwrap_or(json!(0));
        json!({"input_tokens": input, "output_tokens": out, "total_tokens": total,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}})
    });
    r
}

/// The event sequence of a completed response.
pub fn events(response: &ApiResponse) -> Vec<Event> {
    let mut seq = 0u64;
    let mut out = Vec::new();
    let mut push = |mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        out.push(Event::default().event(kind).data(v.to_string()));
    };
    let mut in_progress = serde_json::to_value(response).unwrap_or_default();
    in_progress["status"] = json!("in_progress");
    in_progress["output"] = json!([]);
    push(json!({"type": "response.created", "response": in_progress.clone()}));
    push(json!({"type": "response.in_progress", "response": in_progress}));
    for (i, item) in response.output.iter().enumerate() {
        let done = serde_json::to_value(item).unwrap_or_default();
        let item_id = done["id"].clone();
        match item {
            OutputItem::Message { content, .. } => {
                let mut added = done.clone();
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
                push(
                    json!({"type": "response.output_item.added", "output_index": i, "item": added}),
                );
                for (j, part) in content.iter().enumerate() {
                    let empty = json!({"type": "output_text", "text": "", "annotations": []});
                    push(
                        json!({"type": "response.content_part.added", "item_id": item_id,
                        "output_index": i, "content_index": j, "part": empty}),
                    );
                    push(
                        json!({"type": "response.output_text.delta", "item_id": item_id,
                        "output_index": i, "content_index": j, "delta": part.text, "logprobs": []}),
                    );
                    push(
                        json!({"type": "response.output_text.done", "item_id": item_id,
                        "output_index": i, "content_index": j, "text": part.text, "logprobs": []}),
                    );
                    push(
                        json!({"type": "response.content_part.done", "item_id": item_id,
                        "output_index": i, "content_index": j, "part": part}),
                    );
                }
            }
            OutputItem::FunctionCall { arguments, .. } => {
                let mut added = done.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                push(
                    json!({"type": "response.output_item.added", "output_index": i, "item": added}),
                );
                push(
                    json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                    "output_index": i, "delta": arguments}),
                );
                push(
                    json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                    "output_index": i, "arguments": arguments}),
                );
            }
            OutputItem::Reasoning { .. } => {
                push(
                    json!({"type": "response.output_item.added", "output_index": i, "item": done}),
                );
            }
        }
        push(json!({"type": "response.output_item.done", "output_index": i, "item": done}));
    }
    push(json!({"type": "response.completed", "response": response}));
    out
}
