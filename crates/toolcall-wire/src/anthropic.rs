//! Anthropic Messages (`POST /v1/messages`): requests as real clients send them (Claude Code,
//! the `anthropic` SDK), whole replies, the streamed event sequence, errors.
//!
//! Mapping to the neutral request: `system` (a string or text blocks) and `role: "system"`
//! messages (Claude Code sends them between user turns) become system messages; `text`
//! blocks text; `image` blocks Chat image parts; `tool_use` blocks an assistant's calls;
//! each `tool_result` block (a string or a content list, `is_error`) a `tool` message paired
//! by `tool_use_id`, ahead of the user's text in the same turn; `thinking` blocks reasoning.
//! `tools` with `input_schema` are function tools; server tools (`web_search_…`, `bash_…`,
//! a `type` other than `custom`) keep their kind. `tool_choice` `auto`/`any`/`tool`/`none`
//! maps to Chat's `auto`/`required`/named/`none`, `disable_parallel_tool_use` to
//! `parallel_tool_calls: false`. `max_tokens`, `temperature`, `top_p`, `top_k` and
//! `stop_sequences` (as `stop`) carry over; `thinking` with a budget and `output_config.effort`
//! become `reasoning_effort`. Everything else (`cache_control`, `metadata`,
//! `context_management`, …) has no upstream equivalent and is reported as ignored, never an
//! error.
//!
//! Replies: reasoning is a `thinking` block (with an empty `signature`: no upstream signs it),
//! then the text, then each call a `tool_use` block; `stop_reason` is `tool_use` with calls,
//! `max_tokens` for `length`, else `end_turn`. Streamed: `message_start`, `ping`, per block
//! `content_block_start` / `content_block_delta` (`thinking_delta`, `text_delta`,
//! `input_json_delta`) / `content_block_stop`, then `message_delta` with the stop reason and
//! `message_stop`; each event has an `event:` line. A block is never interleaved with another:
//! what the turn gives while a call's block is open waits for that block to close.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::chat::{
    ChatMessage, ChatRequest, ChatTool, ChatToolCall, FunctionDef, FunctionDelta, ImagePart,
    ToolCallDelta,
};
use crate::dialect::{
    Decoded, Delta, Dialect, End, ErrorInfo, FlatDeclaration, Fragment, Out, ReplyMeta, SseEvent,
    StreamDecoder, StreamEncoder, Usage, arguments_object, item_id,
};
use crate::{Limits, Reply, WireCall, WireError, excerpt, not_json};

/// The Messages dialect (registered in [`crate::DIALECTS`] as `anthropic`).
pub struct Messages;

/// The version header an upstream gets.
pub const VERSION: &str = "2023-06-01";

/// The most tokens asked of an upstream when the request says nothing (Messages requires
/// `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A Messages request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessagesRequest {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message: `content` is a string or a list of blocks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    pub content: Value,
}

/// Fields that carry over to a Chat upstream under the same name.
const CARRIED: [&str; 4] = ["temperature", "top_p", "top_k", "max_tokens"];

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The text of a string or of a list's `text` blocks (joined by newlines).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str).unwrap_or("text") == "text")
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A budget in tokens as an effort level.
fn effort_for_budget(budget: u64) -> &'static str {
    match budget {
        0..4096 => "low",
        4096..16384 => "medium",
        _ => "high",
    }
}

impl MessagesRequest {
    /// The neutral request, and the fields it cannot carry.
    pub fn to_chat(&self) -> Result<Decoded, WireError> {
        let mut ignored = Vec::new();
        let mut messages = Vec::new();
        if let Some(system) = &self.system {
            let text = text_of(system);
            if !text.is_empty() {
                messages.push(ChatMessage::text("system", text));
            }
        }
        for m in &self.messages {
            message_to_chat(m, &mut messages)?;
        }
        let tools = self.tools.as_ref().map(|tools| {
            tools
                .iter()
                .map(|t| match t.get("type").and_then(Value::as_str) {
                    None | Some("custom") => ChatTool {
                        kind: "function".into(),
                        function: FunctionDef {
                            name: str_of(t, "name").to_owned(),
                            description: t
                                .get("description")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            parameters: t.get("input_schema").cloned(),
                            extra: Map::new(),
                        },
                    },
                    Some(kind) => crate::responses::other_tool(kind, t),
                })
                .collect()
        });
        let mut parallel_tool_calls = None;
        let tool_choice = self.tool_choice.as_ref().map(|c| {
            if c.get("disable_parallel_tool_use") == Some(&Value::Bool(true)) {
                parallel_tool_calls = Some(false);
            }
            match str_of(c, "type") {
                "any" => json!("required"),
                "none" => json!("none"),
                "tool" => json!({"type": "function", "function": {"name": str_of(c, "name")}}),
                _ => json!("auto"),
            }
        });
        let mut extra = Map::new();
        if let Some(n) = self.max_tokens {
            extra.insert("max_tokens".into(), json!(n));
        }
        let mut effort = None;
        for (k, v) in &self.extra {
            match k.as_str() {
                k if CARRIED.contains(&k) => {
                    extra.insert(k.to_owned(), v.clone());
                }
                "stop_sequences" => {
                    extra.insert("stop".into(), v.clone());
                }
                "thinking" => match (str_of(v, "type"), v.get("budget_tokens")) {
                    ("enabled", Some(b)) => {
                        effort = Some(effort_for_budget(b.as_u64().unwrap_or(0)));
                    }
                    _ => ignored.push("thinking".to_owned()),
                },
                "output_config" => match str_of(v, "effort") {
                    e @ ("low" | "medium" | "high") => effort = Some(e),
                    _ => ignored.push(k.clone()),
                },
                _ => ignored.push(k.clone()),
            }
        }
        if let Some(e) = effort {
            extra.insert("reasoning_effort".into(), json!(e));
        }
        Ok(Decoded {
            request: ChatRequest {
                model: self.model.clone(),
                messages,
                tools,
                tool_choice,
                parallel_tool_calls,
                stream: (self.stream == Some(true)).then_some(true),
                extra,
            },
            ignored,
        })
    }
}

/// An `image` block as a Chat image part (a `data:` URL for base64 data).
fn image_part(b: &Value) -> Value {
    let source = b.get("source").cloned().unwrap_or_default();
    let url = match str_of(&source, "type") {
        "base64" => format!(
            "data:{};base64,{}",
            str_of(&source, "media_type"),
            str_of(&source, "data")
        ),
        _ => str_of(&source, "url").to_owned(),
    };
    json!({"type": "image_url", "image_url": {"url": url}})
}

/// One Messages message as neutral messages: tool results first (each its own `tool`
/// message), then the rest of the turn.
fn message_to_chat(m: &Message, out: &mut Vec<ChatMessage>) -> Result<(), WireError> {
    let role = match m.role.as_str() {
        r @ ("user" | "assistant" | "system") => r,
        _ => {
            return Err(WireError::Missing(
                "a message role of user, assistant or system",
            ));
        }
    };
    let blocks = match &m.content {
        Value::String(s) => {
            out.push(ChatMessage::text(role, s.clone()));
            return Ok(());
        }
        Value::Array(blocks) => blocks,
        Value::Null => return Ok(()),
        _ => {
            return Err(WireError::Missing(
                "content as a string or a list of blocks",
            ));
        }
    };
    let mut parts: Vec<Value> = Vec::new();
    let mut text_only = true;
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for b in blocks {
        match str_of(b, "type") {
            "text" => parts.push(json!({"type": "text", "text": str_of(b, "text")})),
            "image" => {
                text_only = false;
                parts.push(image_part(b));
            }
            "thinking" => reasoning.push_str(str_of(b, "thinking")),
            "tool_use" => calls.push(ChatToolCall::new(
                str_of(b, "id"),
                str_of(b, "name"),
                crate::encode_arguments(b.get("input").unwrap_or(&json!({}))),
            )),
            "tool_result" => {
                let mut content = b.get("content").map(text_of).unwrap_or_default();
                if b.get("is_error") == Some(&Value::Bool(true)) {
                    content.insert_str(0, "Error: ");
                }
                // Images in a result (a computer tool's screenshot) stay images: the
                // result's content becomes parts, its text first.
                let images: Vec<Value> = match b.get("content") {
                    Some(Value::Array(blocks)) => blocks
                        .iter()
                        .filter(|p| str_of(p, "type") == "image")
                        .map(image_part)
                        .collect(),
                    _ => Vec::new(),
                };
                let mut message = ChatMessage {
                    tool_call_id: Some(str_of(b, "tool_use_id").to_owned()),
                    ..ChatMessage::text("tool", content.clone())
                };
                if !images.is_empty() {
                    let mut parts = Vec::with_capacity(images.len() + 1);
                    if !content.is_empty() {
                        parts.push(json!({"type": "text", "text": content}));
                    }
                    parts.extend(images);
                    message.content = Some(Value::Array(parts));
                }
                out.push(message);
            }
            // redacted_thinking, documents, server tool results: nothing a model server
            // reads.
            _ => {}
        }
    }
    if parts.is_empty() && calls.is_empty() && reasoning.is_empty() {
        return Ok(());
    }
    let content = if text_only {
        let text: Vec<&str> = parts.iter().map(|p| str_of(p, "text")).collect();
        (!text.is_empty()).then(|| Value::String(text.join("\n")))
    } else {
        Some(Value::Array(parts))
    };
    out.push(ChatMessage {
        role: role.to_owned(),
        content,
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls: (!calls.is_empty()).then_some(calls),
        ..ChatMessage::default()
    });
    Ok(())
}

/// The neutral request as a Messages request (for an Anthropic upstream): system messages
/// join `system`, `tool` messages become `tool_result` blocks of one user message.
pub fn from_chat(request: &ChatRequest) -> MessagesRequest {
    let mut system: Vec<String> = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    let push = |role: &str, block: Value, messages: &mut Vec<Message>| match messages.last_mut() {
        Some(last) if last.role == role => {
            if let Value::Array(blocks) = &mut last.content {
                blocks.push(block);
            }
        }
        _ => messages.push(Message {
            role: role.to_owned(),
            content: Value::Array(vec![block]),
        }),
    };
    for m in &request.messages {
        match m.role.as_str() {
            "system" | "developer" => system.push(m.content_text().unwrap_or_default()),
            "tool" => {
                // A result with images (a screenshot) is a list of text and image blocks
                // inside the `tool_result`, where Messages reads a tool's images.
                let content = match &m.content {
                    Some(Value::Array(parts)) if !m.images().is_empty() => {
                        Value::Array(parts.iter().filter_map(part_block).collect())
                    }
                    _ => Value::String(m.content_text().unwrap_or_default()),
                };
                push(
                    "user",
                    json!({"type": "tool_result",
                        "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                        "content": content}),
                    &mut messages,
                );
            }
            "assistant" => {
                if let Some(t) = m.content_text().filter(|t| !t.is_empty()) {
                    push(
                        "assistant",
                        json!({"type": "text", "text": t}),
                        &mut messages,
                    );
                }
                for c in m.tool_calls.iter().flatten() {
                    let input = crate::decode_arguments(Some(&c.function.arguments))
                        .map(Value::Object)
                        .unwrap_or_else(|_| json!({}));
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c.id, "name": c.function.name,
                            "input": input}),
                        &mut messages,
                    );
                }
            }
            _ => {
                let blocks: Vec<Value> = match &m.content {
                    Some(Value::Array(parts)) => parts.iter().filter_map(part_block).collect(),
                    _ => {
                        vec![json!({"type": "text", "text": m.content_text().unwrap_or_default()})]
                    }
                };
                for b in blocks {
                    push("user", b, &mut messages);
                }
            }
        }
    }
    let tools = request
        .tools
        .as_ref()
        .map(|tools| tools.iter().map(tool_declaration).collect());
    let mut tool_choice = request.tool_choice.as_ref().map(|c| match c {
        Value::String(s) if s == "required" => json!({"type": "any"}),
        Value::String(s) if s == "none" => json!({"type": "none"}),
        Value::Object(m) => json!({"type": "tool",
            "name": m.get("function").and_then(|f| f.get("name")).cloned().unwrap_or(Value::Null)}),
        _ => json!({"type": "auto"}),
    });
    if request.parallel_tool_calls == Some(false) {
        let c = tool_choice.get_or_insert_with(|| json!({"type": "auto"}));
        c["disable_parallel_tool_use"] = json!(true);
    }
    let mut extra = Map::new();
    let mut max_tokens = DEFAULT_MAX_TOKENS;
    for (k, v) in &request.extra {
        match k.as_str() {
            "max_tokens" | "max_completion_tokens" => {
                max_tokens = v.as_u64().unwrap_or(max_tokens);
            }
            "temperature" | "top_p" | "top_k" => {
                extra.insert(k.clone(), v.clone());
            }
            "stop" => {
                let stops = match v {
                    Value::String(s) => json!([s]),
                    other => other.clone(),
                };
                extra.insert("stop_sequences".into(), stops);
            }
            _ => {}
        }
    }
    MessagesRequest {
        model: request.model.clone(),
        messages,
        system: (!system.is_empty()).then(|| Value::String(system.join("\n\n"))),
        max_tokens: Some(max_tokens),
        tools,
        tool_choice,
        stream: request.stream,
        extra,
    }
}

/// A neutral tool as a Messages `tools` entry: `{name, description, input_schema}` for a
/// function; a tool of another kind keeps its `type` and fields.
pub fn tool_declaration(t: &ChatTool) -> Value {
    let mut v = Map::new();
    if t.kind != "function" {
        v.insert("type".into(), json!(t.kind));
    }
    v.insert("name".into(), json!(t.function.name));
    if let Some(d) = &t.function.description {
        v.insert("description".into(), json!(d));
    }
    if t.kind == "function" {
        let schema = t
            .function
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object"}));
        v.insert("input_schema".into(), schema);
    } else {
        v.extend(t.function.extra.clone());
    }
    Value::Object(v)
}

/// A Chat content part as a Messages block.
fn part_block(part: &Value) -> Option<Value> {
    if let Some(image) = ImagePart::of(part) {
        let source = match image {
            ImagePart::Data { media_type, data } => {
                json!({"type": "base64", "media_type": media_type, "data": data})
            }
            ImagePart::Url(url) => json!({"type": "url", "url": url}),
        };
        return Some(json!({"type": "image", "source": source}));
    }
    match str_of(part, "type") {
        "text" => Some(json!({"type": "text", "text": str_of(part, "text")})),
        _ => None,
    }
}

/// Messages' `stop_reason` for Chat's finish reason.
pub fn stop_reason(finish: &str) -> &'static str {
    match finish {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        _ => "end_turn",
    }
}

/// Chat's finish reason for Messages' `stop_reason`.
pub fn finish_reason(stop: &str) -> &'static str {
    match stop {
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        _ => "stop",
    }
}

fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
    }
}

fn usage_value(u: Option<&Usage>) -> Value {
    let u = u.copied().unwrap_or_default();
    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens})
}

/// The Messages error `type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Messages output: a message (`content`), a list of content blocks, or one `tool_use`
/// block: its text and calls. Blocks are read only when each is typed and one is a
/// `tool_use`.
pub fn read_fragment(v: &Value) -> Option<Fragment> {
    match v {
        Value::Array(blocks) => blocks_fragment(blocks),
        Value::Object(m) => match m.get("content").and_then(Value::as_array) {
            Some(blocks) => blocks_fragment(blocks),
            None if m.get("type").and_then(Value::as_str) == Some("tool_use") => {
                blocks_fragment(std::slice::from_ref(v))
            }
            None => None,
        },
        _ => None,
    }
}

fn blocks_fragment(blocks: &[Value]) -> Option<Fragment> {
    let kind = |b: &Value| b.get("type").and_then(Value::as_str).map(str::to_owned);
    if !blocks.iter().all(|b| kind(b).is_some())
        || !blocks
            .iter()
            .any(|b| kind(b).as_deref() == Some("tool_use"))
    {
        return None;
    }
    let mut out = Fragment::default();
    for b in blocks {
        let Some(m) = b.as_object() else { continue };
        let text = |k: &str| m.get(k).and_then(Value::as_str);
        match text("type") {
            Some("tool_use") => {
                let Some(name) = text("name") else { continue };
                out.calls
                    .push(WireCall::new(text("id"), name, m.get("input")));
            }
            Some("text") => {
                if let Some(t) = text("text") {
                    out.text.push_str(t);
                }
            }
            _ => {}
        }
    }
    Some(out)
}

impl Dialect for Messages {
    fn read_fragment(&self, value: &Value) -> Option<Fragment> {
        read_fragment(value)
    }

    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/messages".into()
    }

    fn auth_headers(&self, key: &str) -> Vec<(&'static str, String)> {
        vec![
            ("x-api-key", key.to_owned()),
            ("anthropic-version", VERSION.to_owned()),
        ]
    }

    fn decode_request(&self, body: &[u8]) -> Result<Decoded, WireError> {
        let request: MessagesRequest = crate::from_json_bytes(body)
            .map_err(|e| not_json("the request", &String::from_utf8_lossy(body), &e))?;
        request.to_chat()
    }

    fn encode_request(&self, request: &ChatRequest) -> Result<Value, WireError> {
        serde_json::to_value(from_chat(request)).map_err(|e| WireError::Encode(e.to_string()))
    }

    fn decode_reply(&self, body: &str, limits: &Limits) -> Result<(Reply, ReplyMeta), WireError> {
        let v: Value = serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))?;
        if str_of(&v, "type") == "error" {
            return Err(WireError::Upstream(excerpt(body, 500)));
        }
        let blocks = v
            .get("content")
            .and_then(Value::as_array)
            .ok_or(WireError::Missing("content"))?;
        let mut reply = Reply::default();
        for b in blocks {
            match str_of(b, "type") {
                "text" => reply
                    .text
                    .get_or_insert_with(String::new)
                    .push_str(str_of(b, "text")),
                "thinking" => reply
                    .reasoning
                    .get_or_insert_with(String::new)
                    .push_str(str_of(b, "thinking")),
                "tool_use" => {
                    if reply.calls.len() >= limits.max_calls {
                        return Err(WireError::TooManyCalls(limits.max_calls));
                    }
                    reply.calls.push(WireCall::new(
                        Some(str_of(b, "id")),
                        str_of(b, "name"),
                        b.get("input"),
                    ));
                }
                _ => {}
            }
        }
        reply.finish_reason = v
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(|s| finish_reason(s).to_owned());
        let meta = ReplyMeta {
            id: str_of(&v, "id").to_owned(),
            model: str_of(&v, "model").to_owned(),
            created: 0,
            usage: v.get("usage").map(usage_of),
            raw_usage: v.get("usage").cloned(),
            extra: Map::new(),
            custom_tools: Vec::new(),
            namespaces: Vec::new(),
            openai_built_ins: Vec::new(),
        };
        Ok((reply, meta))
    }

    fn encode_reply(&self, reply: &Reply, meta: &ReplyMeta) -> Value {
        let mut content = Vec::new();
        if let Some(r) = reply.reasoning.as_ref().filter(|r| !r.is_empty()) {
            content.push(json!({"type": "thinking", "thinking": r, "signature": ""}));
        }
        if let Some(t) = reply
            .text
            .as_ref()
            .filter(|t| !t.trim().is_empty() || reply.calls.is_empty())
        {
            content.push(json!({"type": "text", "text": t}));
        }
        for c in &reply.calls {
            content.push(
                json!({"type": "tool_use", "id": c.id.clone().unwrap_or_default(),
                "name": c.name, "input": arguments_object(c)}),
            );
        }
        let finish = crate::dialect::chat_finish(reply);
        json!({"id": meta.id, "type": "message", "role": "assistant", "model": meta.model,
            "content": content, "stop_reason": stop_reason(&finish), "stop_sequence": null,
            "usage": usage_value(meta.usage.as_ref())})
    }

    fn stream_decoder(&self, limits: Limits) -> Box<dyn StreamDecoder> {
        Box::new(MessagesDecoder {
            limits,
            calls: Vec::new(),
        })
    }

    fn stream_encoder(&self, meta: ReplyMeta) -> Box<dyn StreamEncoder> {
        Box::new(MessagesEvents::new(meta))
    }

    fn declare_tools(&self, tools: &[ChatTool]) -> Value {
        Value::Array(tools.iter().map(tool_declaration).collect())
    }
    fn encode_error(&self, e: &ErrorInfo<'_>) -> Value {
        json!({"type": "error", "error": {"type": error_type(e.status), "message": e.message}})
    }

    fn result_images(&self) -> bool {
        true
    }

    /// `{"name", "description", "input_schema"}` (no `type`): the schema as `parameters`.
    fn tools_file_entry(&self, entry: &Map<String, Value>) -> Option<Vec<FlatDeclaration>> {
        if entry.contains_key("type") || !entry.contains_key("input_schema") {
            return None;
        }
        let mut flat = entry.clone();
        if !flat.contains_key("parameters")
            && let Some(schema) = flat.remove("input_schema")
        {
            flat.insert("parameters".into(), schema);
        }
        Some(vec![Ok(flat)])
    }
}

/// Reads a Messages event stream into deltas; `tool_use` blocks are calls, numbered in the
/// order they start.
struct MessagesDecoder {
    limits: Limits,
    /// Block index of each call, in order.
    calls: Vec<u64>,
}

impl StreamDecoder for MessagesDecoder {
    fn push(&mut self, event: &str, data: &str, out: &mut Vec<Delta>) -> Result<(), WireError> {
        let v: Value =
            serde_json::from_str(data).map_err(|e| not_json("a stream event", data, &e))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    out.push(Delta::Usage(usage_of(u)));
                }
            }
            "content_block_start" => {
                let b = v.get("content_block").cloned().unwrap_or_default();
                match str_of(&b, "type") {
                    "tool_use" => {
                        if self.calls.len() >= self.limits.max_calls {
                            return Err(WireError::TooManyCalls(self.limits.max_calls));
                        }
                        out.push(Delta::Call(ToolCallDelta {
                            index: self.calls.len() as u32,
                            id: Some(str_of(&b, "id").to_owned()),
                            kind: Some("function".into()),
                            function: Some(FunctionDelta {
                                name: Some(str_of(&b, "name").to_owned()),
                                arguments: None,
                            }),
                        }));
                        self.calls.push(index);
                    }
                    "text" if !str_of(&b, "text").is_empty() => {
                        out.push(Delta::Text(str_of(&b, "text").to_owned()));
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let d = v.get("delta").cloned().unwrap_or_default();
                match str_of(&d, "type") {
                    "text_delta" => out.push(Delta::Text(str_of(&d, "text").to_owned())),
                    "thinking_delta" => {
                        out.push(Delta::Reasoning(str_of(&d, "thinking").to_owned()));
                    }
                    "input_json_delta" => {
                        if let Some(i) = self.calls.iter().position(|c| *c == index) {
                            out.push(Delta::Call(ToolCallDelta {
                                index: i as u32,
                                function: Some(FunctionDelta {
                                    name: None,
                                    arguments: Some(str_of(&d, "partial_json").to_owned()),
                                }),
                                ..ToolCallDelta::default()
                            }));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = v.get("usage") {
                    out.push(Delta::Usage(usage_of(u)));
                }
                if let Some(s) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    out.push(Delta::Finish(finish_reason(s).to_owned()));
                }
            }
            "message_stop" => out.push(Delta::Done),
            "error" => return Err(WireError::Upstream(excerpt(data, 500))),
            _ => {}
        }
        Ok(())
    }
}

/// The block being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    /// The call announced under this index.
    Call(usize),
}

/// Writes a streamed turn as Messages events.
pub struct MessagesEvents {
    meta: ReplyMeta,
    started: bool,
    /// Blocks opened so far (the next block's index).
    blocks: usize,
    open: Option<Open>,
    /// What arrived while a call's block was open, in order.
    waiting: Vec<Out>,
    /// Text that is only whitespace, held until text follows (as a whole reply drops it).
    blank: String,
}

impl MessagesEvents {
    pub fn new(meta: ReplyMeta) -> Self {
        MessagesEvents {
            meta,
            started: false,
            blocks: 0,
            open: None,
            waiting: Vec::new(),
            blank: String::new(),
        }
    }

    fn event(kind: &str, v: &Value, events: &mut Vec<SseEvent>) {
        events.push(SseEvent::named(kind, v));
    }

    fn start(&mut self, events: &mut Vec<SseEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({"id": self.meta.id, "type": "message", "role": "assistant",
            "model": self.meta.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage_value(self.meta.usage.as_ref())});
        Self::event(
            "message_start",
            &json!({"type": "message_start", "message": message}),
            events,
        );
        Self::event("ping", &json!({"type": "ping"}), events);
    }

    fn close(&mut self, events: &mut Vec<SseEvent>) {
        if self.open.take().is_some() {
            let index = self.blocks - 1;
            Self::event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
                events,
            );
        }
    }

    fn open_block(&mut self, open: Open, block: Value, events: &mut Vec<SseEvent>) {
        self.close(events);
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some(open);
        Self::event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
            events,
        );
    }

    fn delta(&self, delta: Value, events: &mut Vec<SseEvent>) {
        Self::event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": self.blocks - 1, "delta": delta}),
            events,
        );
    }

    fn one(&mut self, o: Out, events: &mut Vec<SseEvent>) {
        if matches!(self.open, Some(Open::Call(_)))
            && !matches!(&o, Out::CallEnd { index, .. } if Some(Open::Call(*index)) == self.open)
        {
            self.waiting.push(o);
            return;
        }
        match o {
            Out::Text(t) if t.is_empty() => {}
            Out::Text(t) => {
                if self.open != Some(Open::Text) && t.trim().is_empty() {
                    if self.blank.len() < 4096 {
                        self.blank.push_str(&t);
                    }
                    return;
                }
                let t = std::mem::take(&mut self.blank) + &t;
                if self.open != Some(Open::Text) {
                    self.open_block(Open::Text, json!({"type": "text", "text": ""}), events);
                }
                self.delta(json!({"type": "text_delta", "text": t}), events);
            }
            Out::Reasoning(r) if r.is_empty() => {}
            Out::Reasoning(r) => {
                if self.open != Some(Open::Thinking) {
                    self.open_block(
                        Open::Thinking,
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                        events,
                    );
                }
                self.delta(json!({"type": "thinking_delta", "thinking": r}), events);
            }
            Out::CallStart { index, id, name } => {
                self.blank.clear();
                self.open_block(
                    Open::Call(index),
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    events,
                );
            }
            Out::CallEnd { arguments, .. } => {
                self.delta(
                    json!({"type": "input_json_delta", "partial_json": arguments}),
                    events,
                );
                self.close(events);
                for w in std::mem::take(&mut self.waiting) {
                    self.one(w, events);
                }
            }
        }
    }
}

impl StreamEncoder for MessagesEvents {
    fn push(&mut self, outs: Vec<Out>, events: &mut Vec<SseEvent>) {
        self.start(events);
        for o in outs {
            self.one(o, events);
        }
    }

    fn end(&mut self, end: End, events: &mut Vec<SseEvent>) {
        self.start(events);
        match end {
            End::Finished(finish) => {
                self.close(events);
                let output = self.meta.usage.map_or(0, |u| u.output_tokens);
                Self::event(
                    "message_delta",
                    &json!({"type": "message_delta",
                        "delta": {"stop_reason": stop_reason(&finish), "stop_sequence": null},
                        "usage": {"output_tokens": output}}),
                    events,
                );
                Self::event("message_stop", &json!({"type": "message_stop"}), events);
            }
            End::Failed(message) => {
                let body = Messages.encode_error(&ErrorInfo {
                    status: 502,
                    kind: "upstream_error",
                    code: None,
                    message: &message,
                });
                Self::event("error", &body, events);
            }
        }
    }
}

/// A message id for a reply that has none.
pub fn message_id(reply_id: &str) -> String {
    item_id("msg", reply_id, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(v: Value) -> Decoded {
        Messages.decode_request(v.to_string().as_bytes()).unwrap()
    }

    // Claude Code's request shape (CLIENTS.md): system blocks with cache_control, a system
    // message between user turns, adaptive thinking, context_management, output_config,
    // tool results with cache_control.
    #[test]
    fn claude_code_requests_decode_and_unknown_fields_are_reported() {
        let d = decode(json!({
            "model": "qwen", "max_tokens": 32000, "stream": true,
            "system": [{"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "adaptive"},
            "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
            "output_config": {"effort": "high"},
            "metadata": {"user_id": "{\"a\":1}"},
            "tools": [{"name": "Write", "description": "w", "cache_control": {"type": "ephemeral"},
                "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object", "properties": {"file_path": {"type": "string"}},
                    "required": ["file_path"], "additionalProperties": false}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
            "messages": [
                {"role": "user", "content": "write a file"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Write",
                     "input": {"file_path": "/a"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done",
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                     "content": [{"type": "text", "text": "no such file"}]},
                    {"type": "text", "text": "next"}]},
                {"role": "system", "content": "mid-conversation note"}
            ]
        }));
        let r = d.request;
        let roles: Vec<&str> = r.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant",
                "tool",
                "tool",
                "user",
                "system"
            ]
        );
        assert_eq!(
            r.messages[0].content_text().unwrap(),
            "You are Claude Code.\nBe brief."
        );
        let a = &r.messages[2];
        assert_eq!(a.reasoning_content.as_deref(), Some("hm"));
        let calls = a.tool_calls.as_ref().unwrap();
        assert_eq!(calls[0].id, "toolu_1");
        assert_eq!(calls[0].function.arguments, json!("{\"file_path\":\"/a\"}"));
        assert_eq!(r.messages[3].tool_call_id.as_deref(), Some("toolu_1"));
        assert_eq!(r.messages[4].content_text().unwrap(), "Error: no such file");
        let tools = r.tools.unwrap();
        assert_eq!(tools[0].kind, "function");
        assert_eq!(
            tools[0].function.parameters.as_ref().unwrap()["required"],
            json!(["file_path"])
        );
        assert_eq!(tools[1].kind, "web_search_20250305");
        assert_eq!(tools[1].function.extra["max_uses"], 2);
        assert_eq!(r.stream, Some(true));
        assert_eq!(r.extra["max_tokens"], 32000);
        assert_eq!(r.extra["reasoning_effort"], "high");
        let mut ignored = d.ignored;
        ignored.sort();
        assert_eq!(ignored, ["context_management", "metadata", "thinking"]);
    }

    #[test]
    fn tool_choice_and_sampling_map_to_chat() {
        for (choice, want) in [
            (json!({"type": "auto"}), json!("auto")),
            (json!({"type": "any"}), json!("required")),
            (json!({"type": "none"}), json!("none")),
            (
                json!({"type": "tool", "name": "f"}),
                json!({"type": "function", "function": {"name": "f"}}),
            ),
        ] {
            let r = decode(json!({"model": "m", "messages": [], "tool_choice": choice})).request;
            assert_eq!(r.tool_choice, Some(want));
        }
        let r = decode(json!({"model": "m", "messages": [],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "stop_sequences": ["X"], "temperature": 0.5,
            "thinking": {"type": "enabled", "budget_tokens": 2000}}))
        .request;
        assert_eq!(r.parallel_tool_calls, Some(false));
        assert_eq!(r.extra["stop"], json!(["X"]));
        assert_eq!(r.extra["temperature"], 0.5);
        assert_eq!(r.extra["reasoning_effort"], "low");
        let bad = Messages.decode_request(br#"{"messages":[{"role":"tool","content":"x"}]}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn replies_encode_and_decode_round_trip() {
        let reply = Reply {
            text: Some("Let me look.".into()),
            reasoning: Some("think".into()),
            calls: vec![WireCall::new(
                Some("call_1"),
                "get_weather",
                Some(&json!({"city": "Oslo"})),
            )],
            finish_reason: Some("tool_calls".into()),
        };
        let meta = ReplyMeta {
            id: "msg_1".into(),
            model: "m".into(),
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 4,
            }),
            ..ReplyMeta::default()
        };
        let body = Messages.encode_reply(&reply, &meta);
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(body["content"][0]["type"], "thinking");
        assert_eq!(body["content"][2]["input"], json!({"city": "Oslo"}));
        let (back, meta2) = Messages
            .decode_reply(&body.to_string(), &Limits::default())
            .unwrap();
        assert_eq!(back, reply);
        assert_eq!(meta2.usage, meta.usage);
        let text_only = Reply {
            text: Some("hi".into()),
            finish_reason: Some("length".into()),
            ..Reply::default()
        };
        assert_eq!(
            Messages.encode_reply(&text_only, &meta)["stop_reason"],
            "max_tokens"
        );
    }

    #[test]
    fn a_neutral_request_encodes_for_an_anthropic_upstream() {
        let chat: ChatRequest = serde_json::from_value(json!({"model": "m", "max_tokens": 100,
            "stop": "END", "parallel_tool_calls": false, "tool_choice": "required",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}))
        .unwrap();
        let v = Messages.encode_request(&chat).unwrap();
        assert_eq!(v["system"], "sys");
        assert_eq!(v["max_tokens"], 100);
        assert_eq!(v["stop_sequences"], json!(["END"]));
        assert_eq!(
            v["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        assert_eq!(v["messages"][1]["content"][0]["input"], json!({"a": 1}));
        assert_eq!(v["messages"][2]["content"][0]["tool_use_id"], "c1");
        assert_eq!(v["tools"][0]["input_schema"], json!({"type": "object"}));
        // Decoding it back gives the same conversation.
        let back = decode(v).request;
        assert_eq!(back.messages.len(), 4);
        assert_eq!(back.messages[3].tool_call_id.as_deref(), Some("c1"));
    }

    fn encode_stream(outs: Vec<Out>, end: End) -> Vec<SseEvent> {
        let mut w = Messages.stream_encoder(ReplyMeta {
            id: "msg_1".into(),
            model: "m".into(),
            ..ReplyMeta::default()
        });
        let mut events = Vec::new();
        w.push(outs, &mut events);
        w.end(end, &mut events);
        events
    }

    #[test]
    fn streams_follow_the_event_sequence_and_never_interleave_blocks() {
        let events = encode_stream(
            vec![
                Out::Reasoning("r".into()),
                Out::Text("  ".into()),
                Out::CallStart {
                    index: 0,
                    id: "c0".into(),
                    name: "f".into(),
                },
                Out::CallStart {
                    index: 1,
                    id: "c1".into(),
                    name: "g".into(),
                },
                Out::CallEnd {
                    index: 0,
                    arguments: "{\"a\":1}".into(),
                },
                Out::CallEnd {
                    index: 1,
                    arguments: "{}".into(),
                },
            ],
            End::Finished("tool_calls".into()),
        );
        let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        // Each event's data repeats its name as `type`; a decoder reads the stream back.
        let mut dec = Messages.stream_decoder(Limits::default());
        let mut acc = crate::dialect::Accumulator::new(Limits::default());
        for e in &events {
            let v: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(v["type"], e.event.clone().unwrap());
            let mut deltas = Vec::new();
            dec.push(e.event.as_deref().unwrap(), &e.data, &mut deltas)
                .unwrap();
            for d in &deltas {
                acc.push(d).unwrap();
            }
        }
        let (reply, _) = acc.finish().unwrap();
        assert_eq!(reply.reasoning.as_deref(), Some("r"));
        assert_eq!(reply.calls.len(), 2);
        assert_eq!(reply.calls[0].id.as_deref(), Some("c0"));
        assert_eq!(reply.calls[0].arguments_value(), json!({"a": 1}));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(reply.text, None);
        let failed = encode_stream(vec![Out::Text("x".into())], End::Failed("cut".into()));
        let last = failed.last().unwrap();
        assert_eq!(last.event.as_deref(), Some("error"));
        assert!(last.data.contains("\"api_error\""), "{}", last.data);
    }

    // covers R-18
    #[test]
    fn a_cut_anthropic_stream_is_never_a_reply() {
        let mut dec = Messages.stream_decoder(Limits::default());
        let mut acc = crate::dialect::Accumulator::new(Limits::default());
        for (event, data) in [
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": "t", "name": "rm", "input": {}}}),
            ),
        ] {
            let mut deltas = Vec::new();
            dec.push(event, &data.to_string(), &mut deltas).unwrap();
            deltas.iter().for_each(|d| acc.push(d).unwrap());
        }
        assert!(matches!(acc.finish(), Err(WireError::Cut(_))));
        let mut out = Vec::new();
        let err = dec.push(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
            &mut out,
        );
        assert!(matches!(err, Err(WireError::Upstream(m)) if m.contains("busy")));
    }
}
