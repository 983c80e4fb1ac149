//! `POST /v1/responses`: the request becomes a Chat Completions request to the upstream
//! (most model servers speak only Chat), goes through the same turn as `/v1/chat/completions`,
//! and comes back as Responses output items: a reasoning item, a message, `function_call`
//! items with their `call_id`s.
//!
//! Streamed (`stream: true`), the events go out as the upstream streams, through the same
//! driver as Chat Completions ([`crate::stream`]): `response.created`, then per item
//! `response.output_item.added`, its deltas (`response.reasoning_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`), its `.done`
//! events and `response.output_item.done`, and `response.completed` holding every item
//! (`response.incomplete` when the model stopped at its token limit). A
//! call's item is added when its name is known; its arguments come once checked. A failed
//! stream ends with `response.failed` (and an `error` event), never `response.completed`.

use std::collections::HashMap;
use std::convert::Infallible;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_core::CallId;
use toolcall_wire::chat::ChatRequest;
use toolcall_wire::encode_arguments;
use toolcall_wire::responses::{
    OutputItem, OutputText, ReasoningText, Response as ApiResponse, ResponsesRequest,
};

use crate::chat::{add_repairs_header, now, parse_request, whole};
use crate::metrics::Metrics;
use crate::stream::{End, TurnStream};
use crate::turn::{Checked, Out, Turn};
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
        // The turn asks the upstream to stream exactly when the client asked.
        chat.stream = (request.stream == Some(true)).then_some(true);
        if request.stream == Some(true) {
            Metrics::add(&state.metrics.streamed_requests, 1);
            return stream(&state, &request, chat).await;
        }
        let (completion, checked) = whole(&state, chat).await?;
        let model = if completion.model.is_empty() {
            request.model.clone()
        } else {
            completion.model.clone()
        };
        let mut response = to_response(&checked, &model, completion.usage.clone());
        dress(&mut response, &request);
        let mut out = Json(&response).into_response();
        add_repairs_header(&mut out, &checked);
        Ok(out)
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.into_response()
    })
}

/// Echoes the request's `parallel_tool_calls` and `tools` in `response`, as the API does.
fn dress(response: &mut ApiResponse, request: &ResponsesRequest) {
    if let Some(m) = response.extra.get_mut("parallel_tool_calls") {
        *m = json!(request.parallel_tool_calls.unwrap_or(true));
    }
    if let Some(tools) = &request.tools {
        response.extra.insert("tools".into(), json!(tools));
    }
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
    mark_incomplete(&mut r, &checked.finish_reason());
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

/// Marks `response` incomplete when the turn stopped at the token limit (`length`), as the
/// API does (`incomplete_details.reason: "max_output_tokens"`); whether it did.
fn mark_incomplete(response: &mut ApiResponse, finish_reason: &str) -> bool {
    if finish_reason != "length" {
        return false;
    }
    response.status = "incomplete".into();
    response.extra.insert(
        "incomplete_details".into(),
        json!({"reason": "max_output_tokens"}),
    );
    true
}

/// The item being written when it is a text: reasoning or a message.
struct OpenText {
    output_index: usize,
    id: String,
    reasoning: bool,
    text: String,
}

/// A call whose item was added and whose arguments are still to come.
struct OpenCall {
    output_index: usize,
    id: String,
    call_id: String,
    name: String,
}

/// A streamed Responses reply: the turn's outputs as Responses events.
struct ResponsesEvents {
    inner: TurnStream,
    /// The response as announced (`in_progress`, no output); completed at the end.
    response: ApiResponse,
    sequence: u64,
    text: Option<OpenText>,
    calls: HashMap<usize, OpenCall>,
    /// Finished items, by output index.
    done: Vec<(usize, OutputItem)>,
    next_index: usize,
    started: bool,
    /// Whitespace waiting for text before it opens a message.
    blank: String,
}

/// The most whitespace held back before a message.
const MAX_BLANK_BYTES: usize = 4096;

impl ResponsesEvents {
    fn push(&mut self, mut v: Value, events: &mut Vec<Event>) {
        v["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        events.push(Event::default().event(kind).data(v.to_string()));
    }

    fn lifecycle(&self, kind: &str, status: &str) -> Value {
        let mut r = serde_json::to_value(&self.response).unwrap_or_default();
        r["status"] = json!(status);
        json!({"type": kind, "response": r})
    }

    fn start(&mut self, events: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            let created = self.lifecycle("response.created", "in_progress");
            self.push(created, events);
            let progress = self.lifecycle("response.in_progress", "in_progress");
            self.push(progress, events);
        }
    }

    fn add_item(&mut self, item: Value, events: &mut Vec<Event>) -> usize {
        let i = self.next_index;
        self.next_index += 1;
        self.push(
            json!({"type": "response.output_item.added", "output_index": i, "item": item}),
            events,
        );
        i
    }

    fn finish_item(&mut self, i: usize, item: OutputItem, events: &mut Vec<Event>) {
        let v = serde_json::to_value(&item).unwrap_or_default();
        self.push(
            json!({"type": "response.output_item.done", "output_index": i, "item": v}),
            events,
        );
        self.done.push((i, item));
    }

    /// Text or reasoning: continues the open item of that kind, or opens one. Whitespace
    /// alone opens no message (as in a whole reply): it waits for text to lead.
    fn text(&mut self, mut delta: String, reasoning: bool, events: &mut Vec<Event>) {
        if delta.is_empty() {
            return;
        }
        let open_message = self.text.as_ref().is_some_and(|t| !t.reasoning);
        if !reasoning && !open_message {
            if delta.trim().is_empty() {
                if self.blank.len() < MAX_BLANK_BYTES {
                    self.blank.push_str(&delta);
                }
                return;
            }
            delta.insert_str(0, &std::mem::take(&mut self.blank));
        }
        if self.text.as_ref().is_some_and(|t| t.reasoning != reasoning) {
            self.close_text(events);
        }
        let open = match self.text.take() {
            Some(open) => open,
            None => {
                let (prefix, added) = if reasoning {
                    (
                        "rs",
                        json!({"type": "reasoning", "summary": [], "content": []}),
                    )
                } else {
                    (
                        "msg",
                        json!({"type": "message", "role": "assistant",
                        "status": "in_progress", "content": []}),
                    )
                };
                let id = item_id(prefix);
                let mut item = added;
                item["id"] = json!(id);
                let output_index = self.add_item(item, events);
                if !reasoning {
                    self.push(
                        json!({"type": "response.content_part.added", "item_id": id,
                        "output_index": output_index, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}}),
                        events,
                    );
                }
                OpenText {
                    output_index,
                    id,
                    reasoning,
                    text: String::new(),
                }
            }
        };
        let kind = if reasoning {
            "response.reasoning_text.delta"
        } else {
            "response.output_text.delta"
        };
        let mut v = json!({"type": kind, "item_id": open.id, "output_index": open.output_index,
            "content_index": 0, "delta": delta});
        if !reasoning {
            v["logprobs"] = json!([]);
        }
        self.push(v, events);
        let mut open = open;
        open.text.push_str(&delta);
        self.text = Some(open);
    }

    fn close_text(&mut self, events: &mut Vec<Event>) {
        let Some(open) = self.text.take() else {
            return;
        };
        let (i, id, text) = (open.output_index, open.id, open.text);
        let item = if open.reasoning {
            self.push(
                json!({"type": "response.reasoning_text.done", "item_id": id,
                "output_index": i, "content_index": 0, "text": text}),
                events,
            );
            OutputItem::Reasoning {
                id,
                summary: Vec::new(),
                content: vec![ReasoningText::new(text)],
            }
        } else {
            let part = OutputText::new(text.clone());
            self.push(
                json!({"type": "response.output_text.done", "item_id": id,
                "output_index": i, "content_index": 0, "text": text, "logprobs": []}),
                events,
            );
            self.push(
                json!({"type": "response.content_part.done", "item_id": id,
                "output_index": i, "content_index": 0, "part": part}),
                events,
            );
            OutputItem::Message {
                id,
                role: "assistant".into(),
                status: "completed".into(),
                content: vec![part],
            }
        };
        self.finish_item(i, item, events);
    }

    fn emit(&mut self, outs: Vec<Out>, events: &mut Vec<Event>) {
        for o in outs {
            match o {
                Out::Text(t) => self.text(t, false, events),
                Out::Reasoning(r) => self.text(r, true, events),
                Out::CallStart { index, id, name } => {
                    self.close_text(events);
                    self.blank.clear();
                    let item_id = item_id("fc");
                    let added = json!({"type": "function_call", "id": item_id,
                        "call_id": id.as_str(), "name": name, "arguments": "",
                        "status": "in_progress"});
                    let output_index = self.add_item(added, events);
                    self.calls.insert(
                        index,
                        OpenCall {
                            output_index,
                            id: item_id,
                            call_id: id.to_string(),
                            name,
                        },
                    );
                }
                Out::CallEnd { index, arguments } => {
                    let Some(c) = self.calls.remove(&index) else {
                        continue;
                    };
                    self.push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": c.id,
                        "output_index": c.output_index, "delta": arguments}),
                        events,
                    );
                    self.push(
                        json!({"type": "response.function_call_arguments.done", "item_id": c.id,
                        "output_index": c.output_index, "arguments": arguments}),
                        events,
                    );
                    let item = OutputItem::FunctionCall {
                        id: c.id,
                        call_id: c.call_id,
                        name: c.name,
                        arguments,
                        status: "completed".into(),
                    };
                    self.finish_item(c.output_index, item, events);
                }
            }
        }
    }

    /// The next batch of events; `None` once the stream is over.
    async fn step(&mut self) -> Option<Vec<Event>> {
        let (outs, end) = self.inner.next().await?;
        let mut events = Vec::new();
        self.start(&mut events);
        self.emit(outs, &mut events);
        match end {
            None => {}
            Some(End::Finished(reason)) => {
                self.close_text(&mut events);
                let mut done = std::mem::take(&mut self.done);
                done.sort_by_key(|(i, _)| *i);
                self.response.output = done.into_iter().map(|(_, item)| item).collect();
                self.response.status = "completed".into();
                let kind = if mark_incomplete(&mut self.response, &reason) {
                    "response.incomplete"
                } else {
                    "response.completed"
                };
                let end = json!({"type": kind, "response": self.response});
                self.push(end, &mut events);
            }
            Some(End::Failed(message)) => {
                let e = ApiError::upstream_reply(&message);
                self.response.extra.insert(
                    "error".into(),
                    json!({"code": "server_error", "message": e.message}),
                );
                let failed = self.lifecycle("response.failed", "failed");
                self.push(failed, &mut events);
                let error =
                    json!({"type": "error", "code": e.code, "message": e.message, "param": null});
                self.push(error, &mut events);
            }
        }
        Some(events)
    }
}

async fn stream(
    state: &AppState,
    request: &ResponsesRequest,
    chat: ChatRequest,
) -> Result<Response, ApiError> {
    let route = state.upstreams.route(&chat.model);
    let turn = Turn::for_chat(chat, route, &state.config, &state.tools)?;
    let mut response = ApiResponse::completed(&item_id("resp"), now(), &request.model, Vec::new());
    response.status = "in_progress".into();
    dress(&mut response, request);
    let streaming = ResponsesEvents {
        inner: TurnStream::open(state, route, turn).await?,
        response,
        sequence: 0,
        text: None,
        calls: HashMap::new(),
        done: Vec::new(),
        next_index: 0,
        started: false,
        blank: String::new(),
    };
    let events = futures::stream::unfold(streaming, |mut s| async move {
        s.step().await.map(|batch| (batch, s))
    })
    .flat_map(|batch| futures::stream::iter(batch.into_iter().map(Ok::<_, Infallible>)));
    Ok(Sse::new(events).into_response())
}
