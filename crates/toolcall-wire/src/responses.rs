//! OpenAI Responses (`POST /v1/responses`): the request (with its conversion to a Chat
//! Completions request, for servers that only speak Chat), the output items, and reading a
//! streamed reply.
//!
//! A streamed reply is the output of its `response.completed` event; a stream that ends
//! before it is [`WireError::Cut`] (R-18).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::chat::{
    ChatMessage, ChatRequest, ChatTool, ChatToolCall, FunctionDef, FunctionDelta, ImagePart,
    ToolCallDelta,
};
use crate::dialect::{
    Decoded, Delta, Dialect, End, ErrorInfo, FlatDeclaration, Fragment, Out, ReplyMeta, SseEvent,
    StreamDecoder, StreamEncoder, Usage, item_id,
};
use crate::{Limits, Reply, WireCall, WireError, excerpt, not_json};

/// A Responses request. Fields toolcall does not model stay in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponsesRequest {
    #[serde(default)]
    pub model: String,
    /// A string (one user message) or a list of input items.
    #[serde(default)]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Function tools, flat: `{"type":"function","name":..,"parameters":..}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A Responses request field as the neutral request's, when it has an equivalent
/// ([`crate::crossing`]): `max_output_tokens` is `max_tokens`, `reasoning.effort`
/// `reasoning_effort`, `text.format` `response_format`; sampling fields keep their names.
/// `None`: it has none (`store`, `include`, `prompt_cache_key`, `client_metadata`,
/// `previous_response_id`, `truncation`, a `reasoning` without `effort`, …).
fn chat_field(key: &str, value: &Value) -> Option<(&'static str, Value)> {
    match key {
        "max_output_tokens" => Some(("max_tokens", value.clone())),
        "reasoning" => value
            .get("effort")
            .filter(|e| e.is_string())
            .map(|e| ("reasoning_effort", e.clone())),
        "text" => crate::crossing::response_format_of_text(value).map(|f| ("response_format", f)),
        k => crate::crossing::NEUTRAL_FIELDS
            .iter()
            .find(|n| **n == k)
            .map(|n| (*n, value.clone())),
    }
}

impl ResponsesRequest {
    /// The same conversation as a Chat Completions request: `instructions` becomes a system
    /// message, input items become messages (consecutive `function_call`s one assistant
    /// message), tools are nested under `function`, and `tool_choice` `{"type":"function",
    /// "name":..}` becomes `{"type":"function","function":{"name":..}}`.
    pub fn to_chat(&self) -> Result<ChatRequest, WireError> {
        let mut messages = Vec::new();
        if let Some(i) = &self.instructions {
            messages.push(ChatMessage::text("system", i.clone()));
        }
        match &self.input {
            Value::String(s) => messages.push(ChatMessage::text("user", s.clone())),
            Value::Array(items) => {
                for item in items {
                    input_item_to_chat(item, &mut messages)?;
                }
            }
            Value::Null => {}
            _ => return Err(WireError::Missing("input as a string or a list of items")),
        }
        let tools = self.tools.as_ref().map(|tools| {
            tools
                .iter()
                .map(|t| match t.get("type").and_then(Value::as_str) {
                    Some("function") => function_tool(t),
                    kind => other_tool(kind.unwrap_or_default(), t),
                })
                .collect()
        });
        let tool_choice = self.tool_choice.as_ref().map(|c| match c {
            Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("function") => {
                json!({"type": "function", "function": {"name": m.get("name").cloned().unwrap_or(Value::Null)}})
            }
            other => other.clone(),
        });
        let extra = self
            .extra
            .iter()
            .filter_map(|(k, v)| chat_field(k, v).map(|(k, v)| (k.to_owned(), v)))
            .collect();
        Ok(ChatRequest {
            model: self.model.clone(),
            messages,
            tools,
            tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            stream: self.stream,
            extra,
        })
    }
}

/// A `function` tool as Chat's declaration.
fn function_tool(t: &Value) -> ChatTool {
    ChatTool {
        kind: "function".into(),
        function: FunctionDef {
            name: str_of(t, "name").to_owned(),
            description: t
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            parameters: t.get("parameters").cloned(),
            extra: t
                .get("strict")
                .map(|s| Map::from_iter([("strict".to_owned(), s.clone())]))
                .unwrap_or_default(),
        },
    }
}

/// A tool of another kind (`custom`, `namespace`, hosted tools): its `type` kept as the
/// kind, every other field in `function.extra`, so it is represented, not dropped.
pub fn other_tool(kind: &str, t: &Value) -> ChatTool {
    let mut extra = t.as_object().cloned().unwrap_or_default();
    extra.remove("type");
    let name = match extra.remove("name") {
        Some(Value::String(n)) => n,
        _ => String::new(),
    };
    ChatTool {
        kind: kind.to_owned(),
        function: FunctionDef {
            name,
            extra,
            ..FunctionDef::default()
        },
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Text of a message's content: a string, or its parts' `text` joined.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// A message's or a tool output's content in neutral terms: its text as a string, or,
/// when it holds images (`input_image` with an `image_url`), Chat parts (`text` and
/// `image_url`) in their order. An image given only by `file_id` has no neutral form and is
/// left out.
fn chat_content(content: Option<&Value>) -> Value {
    let Some(Value::Array(parts)) = content else {
        return Value::String(content_text(content));
    };
    fn image_url(p: &Value) -> Option<&str> {
        (str_of(p, "type") == "input_image")
            .then(|| p.get("image_url").and_then(Value::as_str))
            .flatten()
    }
    if !parts.iter().any(|p| image_url(p).is_some()) {
        return Value::String(content_text(content));
    }
    let parts = parts
        .iter()
        .filter_map(
            |p| match (image_url(p), p.get("text").and_then(Value::as_str)) {
                (Some(url), _) => Some(ImagePart::part(url)),
                (None, Some(text)) => Some(json!({"type": "text", "text": text})),
                (None, None) => None,
            },
        )
        .collect();
    Value::Array(parts)
}

fn input_item_to_chat(item: &Value, out: &mut Vec<ChatMessage>) -> Result<(), WireError> {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("function_call") => {
            // A call of a namespace's tool is known by its qualified name.
            let name = match item.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() => {
                    crate::dialect::qualified_name(ns, str_of(item, "name"))
                }
                _ => str_of(item, "name").to_owned(),
            };
            let call = ChatToolCall::new(
                str_of(item, "call_id"),
                name,
                crate::encode_arguments(item.get("arguments").unwrap_or(&Value::Null)),
            );
            // Consecutive calls belong to one assistant message.
            match out.last_mut() {
                Some(m) if m.role == "assistant" && m.tool_calls.is_some() => {
                    m.tool_calls.get_or_insert_with(Vec::new).push(call);
                }
                _ => out.push(ChatMessage {
                    role: "assistant".into(),
                    tool_calls: Some(vec![call]),
                    ..ChatMessage::default()
                }),
            }
        }
        Some("custom_tool_call") => {
            let call = ChatToolCall {
                id: str_of(item, "call_id").to_owned(),
                kind: "custom".into(),
                function: crate::chat::FunctionCall {
                    name: str_of(item, "name").to_owned(),
                    arguments: Value::String(str_of(item, "input").to_owned()),
                },
            };
            match out.last_mut() {
                Some(m) if m.role == "assistant" && m.tool_calls.is_some() => {
                    m.tool_calls.get_or_insert_with(Vec::new).push(call);
                }
                _ => out.push(ChatMessage {
                    role: "assistant".into(),
                    tool_calls: Some(vec![call]),
                    ..ChatMessage::default()
                }),
            }
        }
        Some(kind @ ("computer_call" | "local_shell_call")) => {
            // OpenAI's built-in tools: the call of the function they are offered as.
            let tool = if kind == "computer_call" {
                crate::built_in_tools::OPENAI_COMPUTER
            } else {
                crate::built_in_tools::OPENAI_LOCAL_SHELL
            };
            let action = item.get("action").unwrap_or(&Value::Null);
            let arguments = crate::built_in_tools::openai_arguments(tool, action);
            let call_id = match str_of(item, "call_id") {
                "" => str_of(item, "id"),
                id => id,
            };
            let call = ChatToolCall::new(
                call_id,
                tool.to_owned(),
                crate::encode_arguments(&arguments),
            );
            match out.last_mut() {
                Some(m) if m.role == "assistant" && m.tool_calls.is_some() => {
                    m.tool_calls.get_or_insert_with(Vec::new).push(call);
                }
                _ => out.push(ChatMessage {
                    role: "assistant".into(),
                    tool_calls: Some(vec![call]),
                    ..ChatMessage::default()
                }),
            }
        }
        Some("computer_call_output") => {
            // The screenshot goes to the model as an image part of the result.
            let output = item.get("output").unwrap_or(&Value::Null);
            let url = str_of(output, "image_url");
            let mut parts = Vec::new();
            if let Some(u) = item.get("current_url").and_then(Value::as_str) {
                parts.push(json!({"type": "text", "text": format!("current URL: {u}")}));
            }
            if url.is_empty() {
                parts.push(json!({"type": "text", "text": "(no screenshot)"}));
            } else {
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            out.push(ChatMessage {
                role: "tool".into(),
                content: Some(Value::Array(parts)),
                tool_call_id: Some(str_of(item, "call_id").to_owned()),
                ..ChatMessage::default()
            });
        }
        Some("local_shell_call_output") => {
            // Paired by `call_id`; the API's own examples also name the call by `id`.
            let call_id = match str_of(item, "call_id") {
                "" => str_of(item, "id"),
                id => id,
            };
            let output = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => content_text(Some(other)),
                None => String::new(),
            };
            out.push(ChatMessage {
                tool_call_id: Some(call_id.to_owned()),
                ..ChatMessage::text("tool", output)
            });
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            out.push(ChatMessage {
                role: "tool".into(),
                content: Some(chat_content(item.get("output"))),
                tool_call_id: Some(str_of(item, "call_id").to_owned()),
                ..ChatMessage::default()
            });
        }
        Some("reasoning") => {}
        None | Some("message") => {
            let role = match str_of(item, "role") {
                "developer" => "system",
                "" => return Err(WireError::Missing("role in an input message")),
                r => r,
            };
            out.push(ChatMessage {
                role: role.to_owned(),
                content: Some(chat_content(item.get("content"))),
                ..ChatMessage::default()
            });
        }
        Some(_) => {}
    }
    Ok(())
}

/// One output item of a reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message {
        id: String,
        role: String,
        status: String,
        content: Vec<OutputText>,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        status: String,
        /// The namespace of a namespace tool's call (`name` is then the tool's own).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
    /// A call to a `custom` tool: its raw input.
    CustomToolCall {
        id: String,
        call_id: String,
        name: String,
        input: String,
    },
    /// A call to OpenAI's `computer_use_preview` tool: its action.
    ComputerCall {
        id: String,
        call_id: String,
        action: Value,
        pending_safety_checks: Vec<Value>,
        status: String,
    },
    /// A call to OpenAI's `local_shell` tool: its `exec` action.
    LocalShellCall {
        id: String,
        call_id: String,
        action: Value,
        status: String,
    },
    Reasoning {
        id: String,
        summary: Vec<Value>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        content: Vec<ReasoningText>,
    },
}

/// A message's text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputText {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    #[serde(default)]
    pub annotations: Vec<Value>,
}

impl OutputText {
    pub fn new(text: impl Into<String>) -> Self {
        OutputText {
            kind: "output_text".into(),
            text: text.into(),
            annotations: Vec::new(),
        }
    }
}

/// A reasoning item's text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningText {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

impl ReasoningText {
    pub fn new(text: impl Into<String>) -> Self {
        ReasoningText {
            kind: "reasoning_text".into(),
            text: text.into(),
        }
    }
}

/// A whole reply (`"object": "response"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub id: String,
    pub object: String,
    pub created_at: u64,
    pub model: String,
    pub status: String,
    pub output: Vec<OutputItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Response {
    /// A completed response with the fields clients expect set to their defaults.
    pub fn completed(id: &str, created_at: u64, model: &str, output: Vec<OutputItem>) -> Self {
        let extra = json!({"error": null, "incomplete_details": null, "instructions": null,
            "metadata": {}, "parallel_tool_calls": true, "temperature": null,
            "tool_choice": "auto", "tools": [], "top_p": null});
        Response {
            id: id.to_owned(),
            object: "response".into(),
            created_at,
            model: model.to_owned(),
            status: "completed".into(),
            output,
            usage: None,
            extra: extra.as_object().cloned().unwrap_or_default(),
        }
    }
}

/// Reads a reply's `output` items (as JSON, so unknown item types are skipped, not errors).
pub fn decode_output(output: &[Value], limits: &Limits) -> Result<Reply, WireError> {
    let mut reply = Reply::default();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let text = reply.text.get_or_insert_with(String::new);
                text.push_str(&content_text(item.get("content")));
            }
            Some("function_call") => {
                if reply.calls.len() >= limits.max_calls {
                    return Err(WireError::TooManyCalls(limits.max_calls));
                }
                let id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(Value::as_str);
                reply.calls.push(WireCall::new(
                    id,
                    str_of(item, "name"),
                    item.get("arguments"),
                ));
            }
            Some("reasoning") => {
                let parts = item
                    .get("content")
                    .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
                    .or_else(|| item.get("summary"));
                let text = content_text(parts);
                if !text.is_empty() {
                    reply
                        .reasoning
                        .get_or_insert_with(String::new)
                        .push_str(&text);
                }
            }
            _ => {}
        }
    }
    reply.finish_reason = Some(if reply.calls.is_empty() {
        "stop".into()
    } else {
        "tool_calls".into()
    });
    Ok(reply)
}

/// Reads a whole reply's body into its `output` items.
pub fn output_of_body(body: &str) -> Result<Vec<Value>, WireError> {
    let v: Value = serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))?;
    output_of(&v)
}

fn output_of(response: &Value) -> Result<Vec<Value>, WireError> {
    response
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .ok_or(WireError::Missing("output array"))
}

/// Reads a Responses event stream: feed each SSE event; the output arrives with
/// `response.completed`.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    completed: Option<Vec<Value>>,
}

impl ResponsesStream {
    /// Takes one SSE event (its name and data). Failure events are errors.
    pub fn push(&mut self, event: &str, data: &str) -> Result<(), WireError> {
        if data.trim() == crate::chat::DONE {
            return Ok(());
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| not_json("a stream event", data, &e))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "response.completed" => {
                let response = v.get("response").ok_or(WireError::Missing("response"))?;
                self.completed = Some(output_of(response)?);
            }
            "response.failed" | "response.incomplete" | "error" => {
                return Err(WireError::Upstream(format!(
                    "{kind}: {}",
                    excerpt(data, 500)
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether `response.completed` arrived.
    pub fn is_finished(&self) -> bool {
        self.completed.is_some()
    }

    /// The completed output; [`WireError::Cut`] when the stream ended before it.
    pub fn finish(self) -> Result<Vec<Value>, WireError> {
        self.completed
            .ok_or_else(|| WireError::Cut("the stream ended before response.completed".into()))
    }
}

/// The Responses dialect (registered in [`crate::DIALECTS`] as `responses`).
pub struct Responses;

fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
    }
}

fn usage_value(u: &Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}})
}

/// The output items of a reply, ids derived from the reply's id; calls to `custom` tools
/// are `custom_tool_call` items.
fn output_items(reply: &Reply, meta: &ReplyMeta) -> Vec<OutputItem> {
    let (reply_id, custom) = (meta.id.as_str(), &meta.custom_tools);
    let mut output = Vec::new();
    let mut n = 0;
    let mut next = |prefix: &str| {
        n += 1;
        item_id(prefix, reply_id, n)
    };
    if let Some(r) = reply.reasoning.as_ref().filter(|r| !r.is_empty()) {
        output.push(OutputItem::Reasoning {
            id: next("rs"),
            summary: Vec::new(),
            content: vec![ReasoningText::new(r.clone())],
        });
    }
    if let Some(t) = reply.text.as_ref().filter(|t| !t.trim().is_empty()) {
        output.push(OutputItem::Message {
            id: next("msg"),
            role: "assistant".into(),
            status: "completed".into(),
            content: vec![OutputText::new(t.clone())],
        });
    }
    for c in &reply.calls {
        if meta.openai_built_ins.contains(&c.name) {
            output.push(built_in_item(
                &c.name,
                next(built_in_prefix(&c.name)),
                c.id.clone().unwrap_or_default(),
                &c.arguments_value(),
                "completed",
            ));
            continue;
        }
        if custom.contains(&c.name) {
            let arguments = crate::encode_arguments(&c.arguments_value());
            output.push(OutputItem::CustomToolCall {
                id: next("ctc"),
                call_id: c.id.clone().unwrap_or_default(),
                name: c.name.clone(),
                input: crate::dialect::custom_input(&arguments),
            });
            continue;
        }
        let (name, namespace) = crate::dialect::split_namespace(&c.name, &meta.namespaces);
        output.push(OutputItem::FunctionCall {
            id: next("fc"),
            call_id: c.id.clone().unwrap_or_default(),
            name: name.to_owned(),
            arguments: crate::encode_arguments(&c.arguments_value()),
            status: "completed".into(),
            namespace: namespace.map(str::to_owned),
        });
    }
    output
}

/// The item id prefix of a call to OpenAI's built-in tool `name`.
fn built_in_prefix(name: &str) -> &'static str {
    if name == crate::built_in_tools::OPENAI_COMPUTER {
        "cu"
    } else {
        "lsh"
    }
}

/// The item of a call to OpenAI's built-in tool `name`: `computer_call` or
/// `local_shell_call`, its action from the call's arguments.
fn built_in_item(
    name: &str,
    id: String,
    call_id: String,
    arguments: &Value,
    status: &str,
) -> OutputItem {
    let action = crate::built_in_tools::openai_action(name, arguments);
    if name == crate::built_in_tools::OPENAI_COMPUTER {
        OutputItem::ComputerCall {
            id,
            call_id,
            action,
            pending_safety_checks: Vec::new(),
            status: status.into(),
        }
    } else {
        OutputItem::LocalShellCall {
            id,
            call_id,
            action,
            status: status.into(),
        }
    }
}

/// Responses output: a response (`output`), a list of output items, or one `function_call`
/// item: its text and calls. A list is read only when every item is an output item.
pub fn read_fragment(v: &Value) -> Option<Fragment> {
    let mut out = Fragment::default();
    match v {
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                if !item_fragment(item, &mut out) {
                    return None;
                }
            }
        }
        Value::Object(m) => {
            if let Some(items) = m.get("output").and_then(Value::as_array) {
                for item in items {
                    item_fragment(item, &mut out);
                }
            } else if !(text_field(m, "type") == Some("function_call")
                && item_fragment(v, &mut out))
            {
                return None;
            }
        }
        _ => return None,
    }
    Some(out)
}

/// One output item into `out`; false when it is no output item.
fn item_fragment(item: &Value, out: &mut Fragment) -> bool {
    let Some(m) = item.as_object() else {
        return false;
    };
    match text_field(m, "type") {
        Some("function_call") => {
            let Some(name) = text_field(m, "name") else {
                return false;
            };
            let id = text_field(m, "call_id").or_else(|| text_field(m, "id"));
            out.calls.push(WireCall::new(id, name, m.get("arguments")));
            true
        }
        Some("message") => {
            for p in m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.text.push_str(t);
                }
            }
            true
        }
        Some("reasoning") => true,
        _ => false,
    }
}

fn text_field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

impl Dialect for Responses {
    fn read_fragment(&self, value: &Value) -> Option<Fragment> {
        read_fragment(value)
    }

    fn name(&self) -> &'static str {
        "responses"
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/responses".into()
    }

    fn auth_headers(&self, key: &str) -> Vec<(&'static str, String)> {
        vec![("authorization", format!("Bearer {key}"))]
    }

    /// A response echoes its request's `parallel_tool_calls` (default `true`) and `tools`,
    /// as the API does.
    fn reply_echo(&self, request_body: &[u8]) -> Map<String, Value> {
        let request: Value = serde_json::from_slice(request_body).unwrap_or_default();
        let mut out = Map::new();
        let parallel = request.get("parallel_tool_calls").and_then(Value::as_bool);
        out.insert(
            "parallel_tool_calls".into(),
            json!(parallel.unwrap_or(true)),
        );
        if let Some(tools) = request.get("tools").filter(|t| t.is_array()) {
            out.insert("tools".into(), tools.clone());
        }
        out
    }

    fn decode_request(&self, body: &[u8]) -> Result<Decoded, WireError> {
        let request: ResponsesRequest = crate::from_json_bytes(body)
            .map_err(|e| not_json("the request", &String::from_utf8_lossy(body), &e))?;
        let ignored = request
            .extra
            .iter()
            .filter(|(k, v)| chat_field(k, v).is_none())
            .map(|(k, _)| k.clone())
            .collect();
        let mut chat = request.to_chat()?;
        chat.stream = (request.stream == Some(true)).then_some(true);
        Ok(Decoded {
            request: chat,
            ignored,
        })
    }

    fn encode_request(&self, request: &ChatRequest) -> Result<Value, WireError> {
        let mut input = Vec::new();
        let mut instructions: Vec<String> = Vec::new();
        for m in &request.messages {
            match m.role.as_str() {
                "system" | "developer" if input.is_empty() => {
                    instructions.push(m.content_text().unwrap_or_default());
                }
                "tool" => {
                    // A result with images is a list of `input_text` and `input_image`.
                    let output = match &m.content {
                        Some(content @ Value::Array(_)) if !m.images().is_empty() => {
                            input_content(content)
                        }
                        _ => Value::String(m.content_text().unwrap_or_default()),
                    };
                    input.push(json!({"type": "function_call_output",
                        "call_id": m.tool_call_id.clone().unwrap_or_default(),
                        "output": output}));
                }
                "assistant" => {
                    if let Some(t) = m.content_text().filter(|t| !t.is_empty()) {
                        input.push(json!({"role": "assistant", "content": t}));
                    }
                    for c in m.tool_calls.iter().flatten() {
                        input.push(json!({"type": "function_call", "call_id": c.id,
                            "name": c.function.name,
                            "arguments": crate::encode_arguments(&c.function.arguments)}));
                    }
                }
                role => input.push(
                    json!({"role": if role == "system" { "developer" } else { role },
                    "content": m.content.as_ref().map_or(Value::String(String::new()), input_content)}),
                ),
            }
        }
        let tools: Option<Vec<Value>> = request
            .tools
            .as_ref()
            .map(|tools| tools.iter().map(tool_declaration).collect());
        let tool_choice = request.tool_choice.as_ref().map(|c| match c {
            Value::Object(m) => json!({"type": "function",
                "name": m.get("function").and_then(|f| f.get("name")).cloned().unwrap_or(Value::Null)}),
            other => other.clone(),
        });
        let mut extra = Map::new();
        for (k, v) in &request.extra {
            match k.as_str() {
                "max_tokens" | "max_completion_tokens" => {
                    extra.insert("max_output_tokens".into(), v.clone());
                }
                "temperature" | "top_p" | "metadata" | "user" | "top_logprobs" | "service_tier" => {
                    extra.insert(k.clone(), v.clone());
                }
                "reasoning_effort" => {
                    extra.insert("reasoning".into(), json!({"effort": v}));
                }
                "response_format" => {
                    if let Some(text) = crate::crossing::text_of_response_format(v) {
                        extra.insert("text".into(), text);
                    }
                }
                _ => {}
            }
        }
        extra.insert("store".into(), json!(false));
        let out = ResponsesRequest {
            model: request.model.clone(),
            input: Value::Array(input),
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            tools,
            tool_choice,
            parallel_tool_calls: request.parallel_tool_calls,
            stream: request.stream,
            extra,
        };
        serde_json::to_value(&out).map_err(|e| WireError::Encode(e.to_string()))
    }

    fn decode_reply(&self, body: &str, limits: &Limits) -> Result<(Reply, ReplyMeta), WireError> {
        let v: Value = serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))?;
        let reply = decode_output(&output_of(&v)?, limits)?;
        let meta = ReplyMeta {
            id: str_of(&v, "id").to_owned(),
            model: str_of(&v, "model").to_owned(),
            created: v.get("created_at").and_then(Value::as_u64).unwrap_or(0),
            usage: v.get("usage").map(usage_of),
            raw_usage: v.get("usage").cloned(),
            extra: Map::new(),
            custom_tools: Vec::new(),
            namespaces: Vec::new(),
            openai_built_ins: Vec::new(),
        };
        Ok((reply, meta))
    }

    /// `meta.extra` holds what the response echoes of the request (`tools`,
    /// `parallel_tool_calls`).
    fn encode_reply(&self, reply: &Reply, meta: &ReplyMeta) -> Value {
        let mut r = Response::completed(
            &meta.id,
            meta.created,
            &meta.model,
            output_items(reply, meta),
        );
        r.usage = meta
            .raw_usage
            .clone()
            .filter(|u| u.get("input_tokens").is_some())
            .or_else(|| meta.usage.as_ref().map(usage_value));
        r.extra.extend(meta.extra.clone());
        mark_incomplete(&mut r, &crate::dialect::chat_finish(reply));
        serde_json::to_value(&r).unwrap_or_default()
    }

    fn stream_decoder(&self, limits: Limits) -> Box<dyn StreamDecoder> {
        Box::new(ResponsesDecoder {
            limits,
            calls: Vec::new(),
            text_seen: false,
            reasoning_seen: false,
        })
    }

    fn stream_encoder(&self, meta: ReplyMeta) -> Box<dyn StreamEncoder> {
        Box::new(ResponsesEvents::new(meta))
    }

    fn declare_tools(&self, tools: &[ChatTool]) -> Value {
        Value::Array(tools.iter().map(tool_declaration).collect())
    }
    fn encode_error(&self, e: &ErrorInfo<'_>) -> Value {
        crate::chat::Chat.encode_error(e)
    }

    fn result_images(&self) -> bool {
        true
    }

    /// A flat `{"type": "function", "name", "description", "parameters"}`.
    fn tools_file_entry(&self, entry: &Map<String, Value>) -> Option<Vec<FlatDeclaration>> {
        if entry.get("type").and_then(Value::as_str) != Some("function")
            || entry.contains_key("function")
        {
            return None;
        }
        let mut flat = entry.clone();
        flat.remove("type");
        Some(vec![Ok(flat)])
    }
}

/// A neutral tool as a Responses `tools` entry: `{type, name, description, parameters}`
/// and the kind's own fields.
pub fn tool_declaration(t: &ChatTool) -> Value {
    let mut v = Map::new();
    v.insert("type".into(), json!(t.kind));
    v.insert("name".into(), json!(t.function.name));
    if let Some(d) = &t.function.description {
        v.insert("description".into(), json!(d));
    }
    if let Some(p) = &t.function.parameters {
        v.insert("parameters".into(), p.clone());
    }
    v.extend(t.function.extra.clone());
    Value::Object(v)
}

/// A Chat message's content as Responses input content: a string stays one; Chat's parts
/// become `input_text` and `input_image` parts.
fn input_content(content: &Value) -> Value {
    let Value::Array(parts) = content else {
        return content.clone();
    };
    let parts = parts
        .iter()
        .map(|p| match str_of(p, "type") {
            "text" => json!({"type": "input_text", "text": str_of(p, "text")}),
            "image_url" => {
                let url = p.get("image_url").map_or("", |u| str_of(u, "url"));
                json!({"type": "input_image", "image_url": url})
            }
            _ => p.clone(),
        })
        .collect();
    Value::Array(parts)
}

/// Marks `response` incomplete when the turn stopped at the token limit (`length`), as the
/// API does (`incomplete_details.reason: "max_output_tokens"`); whether it did.
fn mark_incomplete(response: &mut Response, finish_reason: &str) -> bool {
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

/// Reads a Responses event stream into deltas: text and reasoning deltas, each
/// `function_call` item a call (its index the order it was added), `response.completed`
/// the finish. What the deltas did not give (a server that sends only `response.completed`,
/// or a call whose item was never announced) is taken from the completed response's output,
/// which holds the whole reply.
struct ResponsesDecoder {
    limits: Limits,
    /// Item ids of the calls added, in order.
    calls: Vec<String>,
    text_seen: bool,
    reasoning_seen: bool,
}

impl StreamDecoder for ResponsesDecoder {
    fn push(&mut self, event: &str, data: &str, out: &mut Vec<Delta>) -> Result<(), WireError> {
        if data.trim() == crate::chat::DONE {
            return Ok(());
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| not_json("a stream event", data, &e))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        let delta = || str_of(&v, "delta").to_owned();
        match kind {
            "response.output_text.delta" => {
                self.text_seen = true;
                out.push(Delta::Text(delta()));
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                self.reasoning_seen = true;
                out.push(Delta::Reasoning(delta()));
            }
            "response.output_item.added"
                if v["item"].get("type").and_then(Value::as_str) == Some("function_call") =>
            {
                if self.calls.len() >= self.limits.max_calls {
                    return Err(WireError::TooManyCalls(self.limits.max_calls));
                }
                let item = &v["item"];
                out.push(Delta::Call(ToolCallDelta {
                    index: self.calls.len() as u32,
                    id: Some(str_of(item, "call_id").to_owned()),
                    kind: Some("function".into()),
                    function: Some(FunctionDelta {
                        name: Some(str_of(item, "name").to_owned()),
                        arguments: Some(str_of(item, "arguments").to_owned()),
                    }),
                }));
                self.calls.push(str_of(item, "id").to_owned());
            }
            "response.function_call_arguments.delta" => {
                let id = str_of(&v, "item_id");
                if let Some(i) = self.calls.iter().position(|c| c == id) {
                    out.push(Delta::Call(ToolCallDelta {
                        index: i as u32,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: Some(delta()),
                        }),
                        ..ToolCallDelta::default()
                    }));
                }
            }
            "response.completed" => {
                let response = v.get("response").ok_or(WireError::Missing("response"))?;
                if let Some(u) = response.get("usage") {
                    out.push(Delta::Usage(usage_of(u)));
                }
                self.take_unseen(response, out)?;
                let finish = if self.calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                };
                out.push(Delta::Finish(finish.into()));
            }
            "response.incomplete" => out.push(Delta::Finish("length".into())),
            "response.failed" | "error" => {
                return Err(WireError::Upstream(format!(
                    "{kind}: {}",
                    excerpt(data, 500)
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

impl ResponsesDecoder {
    /// The completed output's text, reasoning and calls that no delta gave.
    fn take_unseen(&mut self, response: &Value, out: &mut Vec<Delta>) -> Result<(), WireError> {
        let Some(output) = response.get("output").and_then(Value::as_array) else {
            return Ok(());
        };
        let whole = decode_output(output, &self.limits)?;
        if !self.reasoning_seen
            && let Some(r) = whole.reasoning
        {
            out.push(Delta::Reasoning(r));
        }
        if !self.text_seen
            && let Some(t) = whole.text
        {
            out.push(Delta::Text(t));
        }
        if self.calls.is_empty() {
            for (i, c) in whole.calls.iter().enumerate() {
                out.push(Delta::Call(ToolCallDelta {
                    index: i as u32,
                    id: c.id.clone(),
                    kind: Some("function".into()),
                    function: Some(FunctionDelta {
                        name: Some(c.name.clone()),
                        arguments: Some(crate::encode_arguments(&c.arguments_value())),
                    }),
                }));
                self.calls.push(String::new());
            }
        }
        Ok(())
    }
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
    /// A call to a `custom` tool: its input goes out as `custom_tool_call_input` events.
    custom: bool,
    /// A call to one of OpenAI's built-in tools: its item goes out whole once checked.
    built_in: bool,
}

/// Writes a streamed turn as Responses events: `response.created`, then per item
/// `response.output_item.added`, its deltas, its `.done` events and
/// `response.output_item.done`, and `response.completed` holding every item. A call's item
/// is added when its name is known; its arguments come once checked. A failed stream ends
/// with `response.failed` (and an `error` event), never `response.completed`.
pub struct ResponsesEvents {
    /// The response as announced (`in_progress`, no output); completed at the end.
    response: Response,
    sequence: u64,
    text: Option<OpenText>,
    calls: std::collections::HashMap<usize, OpenCall>,
    /// Finished items, by output index.
    done: Vec<(usize, OutputItem)>,
    next_index: usize,
    started: bool,
    /// Whitespace waiting for text before it opens a message.
    blank: String,
    /// Tools declared `custom` (see [`ReplyMeta::custom_tools`]).
    custom_tools: Vec<String>,
    /// Declared namespaces (see [`ReplyMeta::namespaces`]).
    namespaces: Vec<String>,
    /// OpenAI's built-in tools declared (see [`ReplyMeta::openai_built_ins`]).
    openai_built_ins: Vec<String>,
}

/// The most whitespace held back before a message.
const MAX_BLANK_BYTES: usize = 4096;

impl ResponsesEvents {
    /// `meta.extra` holds what the response echoes of the request.
    pub fn new(meta: ReplyMeta) -> Self {
        let mut response = Response::completed(&meta.id, meta.created, &meta.model, Vec::new());
        response.status = "in_progress".into();
        response.extra.extend(meta.extra);
        ResponsesEvents {
            custom_tools: meta.custom_tools,
            namespaces: meta.namespaces,
            openai_built_ins: meta.openai_built_ins,
            response,
            sequence: 0,
            text: None,
            calls: std::collections::HashMap::new(),
            done: Vec::new(),
            next_index: 0,
            started: false,
            blank: String::new(),
        }
    }

    fn item_id(&self, prefix: &str) -> String {
        item_id(prefix, &self.response.id, self.next_index)
    }

    fn push_event(&mut self, mut v: Value, events: &mut Vec<SseEvent>) {
        v["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        events.push(SseEvent::named(kind, &v));
    }

    fn lifecycle(&self, kind: &str, status: &str) -> Value {
        let mut r = serde_json::to_value(&self.response).unwrap_or_default();
        r["status"] = json!(status);
        json!({"type": kind, "response": r})
    }

    fn start(&mut self, events: &mut Vec<SseEvent>) {
        if !self.started {
            self.started = true;
            let created = self.lifecycle("response.created", "in_progress");
            self.push_event(created, events);
            let progress = self.lifecycle("response.in_progress", "in_progress");
            self.push_event(progress, events);
        }
    }

    fn add_item(&mut self, item: Value, events: &mut Vec<SseEvent>) -> usize {
        let i = self.next_index;
        self.next_index += 1;
        self.push_event(
            json!({"type": "response.output_item.added", "output_index": i, "item": item}),
            events,
        );
        i
    }

    fn finish_item(&mut self, i: usize, item: OutputItem, events: &mut Vec<SseEvent>) {
        let v = serde_json::to_value(&item).unwrap_or_default();
        self.push_event(
            json!({"type": "response.output_item.done", "output_index": i, "item": v}),
            events,
        );
        self.done.push((i, item));
    }

    /// Text or reasoning: continues the open item of that kind, or opens one. Whitespace
    /// alone opens no message (as in a whole reply): it waits for text to lead.
    fn text(&mut self, mut delta: String, reasoning: bool, events: &mut Vec<SseEvent>) {
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
                let id = self.item_id(prefix);
                let mut item = added;
                item["id"] = json!(id);
                let output_index = self.add_item(item, events);
                if !reasoning {
                    self.push_event(
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
        self.push_event(v, events);
        let mut open = open;
        open.text.push_str(&delta);
        self.text = Some(open);
    }

    fn close_text(&mut self, events: &mut Vec<SseEvent>) {
        let Some(open) = self.text.take() else {
            return;
        };
        let (i, id, text) = (open.output_index, open.id, open.text);
        let item = if open.reasoning {
            self.push_event(
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
            self.push_event(
                json!({"type": "response.output_text.done", "item_id": id,
                "output_index": i, "content_index": 0, "text": text, "logprobs": []}),
                events,
            );
            self.push_event(
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
}

impl StreamEncoder for ResponsesEvents {
    fn push(&mut self, outs: Vec<Out>, events: &mut Vec<SseEvent>) {
        self.start(events);
        for o in outs {
            match o {
                Out::Text(t) => self.text(t, false, events),
                Out::Reasoning(r) => self.text(r, true, events),
                Out::CallStart { index, id, name } => {
                    self.close_text(events);
                    self.blank.clear();
                    let custom = self.custom_tools.contains(&name);
                    let built_in = self.openai_built_ins.contains(&name);
                    let item_id = self.item_id(if built_in {
                        built_in_prefix(&name)
                    } else if custom {
                        "ctc"
                    } else {
                        "fc"
                    });
                    let added = if built_in {
                        let item = built_in_item(
                            &name,
                            item_id.clone(),
                            id.clone(),
                            &json!({}),
                            "in_progress",
                        );
                        serde_json::to_value(item).unwrap_or_default()
                    } else if custom {
                        json!({"type": "custom_tool_call", "id": item_id,
                            "call_id": id, "name": name, "input": ""})
                    } else {
                        let (tool, namespace) =
                            crate::dialect::split_namespace(&name, &self.namespaces);
                        let mut added = json!({"type": "function_call", "id": item_id,
                        "call_id": id, "name": tool, "arguments": "",
                        "status": "in_progress"});
                        if let Some(ns) = namespace {
                            added["namespace"] = json!(ns);
                        }
                        added
                    };
                    let output_index = self.add_item(added, events);
                    self.calls.insert(
                        index,
                        OpenCall {
                            output_index,
                            id: item_id,
                            call_id: id,
                            name,
                            custom,
                            built_in,
                        },
                    );
                }
                Out::CallEnd { index, arguments } => {
                    let Some(c) = self.calls.remove(&index) else {
                        continue;
                    };
                    if c.built_in {
                        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
                        let item = built_in_item(&c.name, c.id, c.call_id, &args, "completed");
                        self.finish_item(c.output_index, item, events);
                        continue;
                    }
                    if c.custom {
                        let input = crate::dialect::custom_input(&arguments);
                        self.push_event(
                            json!({"type": "response.custom_tool_call_input.delta",
                            "item_id": c.id, "output_index": c.output_index, "delta": input}),
                            events,
                        );
                        self.push_event(
                            json!({"type": "response.custom_tool_call_input.done",
                            "item_id": c.id, "output_index": c.output_index, "input": input}),
                            events,
                        );
                        let item = OutputItem::CustomToolCall {
                            id: c.id,
                            call_id: c.call_id,
                            name: c.name,
                            input,
                        };
                        self.finish_item(c.output_index, item, events);
                        continue;
                    }
                    self.push_event(
                        json!({"type": "response.function_call_arguments.delta", "item_id": c.id,
                        "output_index": c.output_index, "delta": arguments}),
                        events,
                    );
                    self.push_event(
                        json!({"type": "response.function_call_arguments.done", "item_id": c.id,
                        "output_index": c.output_index, "arguments": arguments}),
                        events,
                    );
                    let (tool, namespace) =
                        crate::dialect::split_namespace(&c.name, &self.namespaces);
                    let item = OutputItem::FunctionCall {
                        id: c.id,
                        call_id: c.call_id,
                        name: tool.to_owned(),
                        arguments,
                        status: "completed".into(),
                        namespace: namespace.map(str::to_owned),
                    };
                    self.finish_item(c.output_index, item, events);
                }
            }
        }
    }

    fn end(&mut self, end: End, events: &mut Vec<SseEvent>) {
        self.start(events);
        match end {
            End::Finished(reason) => {
                self.close_text(events);
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
                self.push_event(end, events);
            }
            End::Failed(message) => {
                self.response.extra.insert(
                    "error".into(),
                    json!({"code": "server_error", "message": message}),
                );
                let failed = self.lifecycle("response.failed", "failed");
                self.push_event(failed, events);
                let error = json!({"type": "error", "code": "upstream_error",
                    "message": message, "param": null});
                self.push_event(error, events);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_echoes_parallel_tool_calls_and_tools_and_only_responses_echoes() {
        let tools = json!([{"type": "function", "name": "f", "parameters": {}}]);
        let body = json!({"model": "m", "input": "hi", "tools": tools}).to_string();
        let echo = Responses.reply_echo(body.as_bytes());
        assert_eq!(echo["parallel_tool_calls"], json!(true));
        assert_eq!(echo["tools"], tools);
        let off = json!({"model": "m", "input": "hi", "parallel_tool_calls": false}).to_string();
        let echo = Responses.reply_echo(off.as_bytes());
        assert_eq!(echo["parallel_tool_calls"], json!(false));
        assert!(!echo.contains_key("tools"));
        assert!(crate::chat::Chat.reply_echo(body.as_bytes()).is_empty());
    }

    fn streamed(events: &[Value]) -> Reply {
        let mut decoder = Responses.stream_decoder(Limits::default());
        let mut acc = crate::dialect::Accumulator::new(Limits::default());
        let mut deltas = Vec::new();
        for e in events {
            decoder.push("", &e.to_string(), &mut deltas).unwrap();
        }
        for d in &deltas {
            acc.push(d).unwrap();
        }
        acc.finish().unwrap().0
    }

    // A server that sends only `response.completed` (or deltas of an item it never
    // announced) still gives its whole reply: the completed output fills what no delta gave.
    #[test]
    fn a_stream_of_only_the_completed_response_is_the_whole_reply() {
        let output = json!([
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "hm"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"}
        ]);
        let reply = streamed(&[
            json!({"type": "response.function_call_arguments.delta", "item_id": "x", "delta": "{"}),
            json!({"type": "response.completed", "response": {"id": "r", "output": output}}),
        ]);
        assert_eq!(reply.text.as_deref(), Some("Hi"));
        assert_eq!(reply.reasoning.as_deref(), Some("hm"));
        assert_eq!(reply.calls.len(), 1);
        assert_eq!(reply.calls[0].id.as_deref(), Some("c1"));
        assert_eq!(reply.calls[0].arguments_value(), json!({"a": 1}));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        // Text that came as deltas is not doubled by the completed output.
        let reply = streamed(&[
            json!({"type": "response.output_text.delta", "delta": "Hi"}),
            json!({"type": "response.completed", "response": {"id": "r", "output": output}}),
        ]);
        assert_eq!(reply.text.as_deref(), Some("Hi"));
    }

    #[test]
    fn images_reach_a_responses_upstream_as_input_images() {
        let request = ChatRequest {
            messages: vec![ChatMessage::text_and_images(
                "user",
                "look",
                ["data:image/png;base64,QUJD".to_owned()],
            )],
            ..ChatRequest::default()
        };
        let body = Responses.encode_request(&request).unwrap();
        assert_eq!(
            body["input"][0]["content"],
            json!([{"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}])
        );
    }

    #[test]
    fn output_items_decode_with_the_shared_policy() {
        let output = vec![
            json!({"type":"reasoning","id":"r","summary":[],"content":[{"type":"reasoning_text","text":"hm"}]}),
            json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
            json!({"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"}),
            json!({"type":"function_call","call_id":"c2","name":"g","arguments":"oops"}),
            json!({"type":"web_search_call","id":"w"}),
        ];
        let reply = decode_output(&output, &Limits::default()).unwrap();
        assert_eq!(reply.text.as_deref(), Some("ok"));
        assert_eq!(reply.reasoning.as_deref(), Some("hm"));
        assert_eq!(reply.calls[0].arguments_value(), json!({"a":1}));
        assert_eq!(reply.calls[1].arguments_value(), json!("oops"));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    }

    // covers R-18
    #[test]
    fn a_stream_is_a_reply_only_once_completed() {
        let mut s = ResponsesStream::default();
        s.push(
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","delta":"x"}"#,
        )
        .unwrap();
        assert!(matches!(s.finish(), Err(WireError::Cut(_))));
        let mut s = ResponsesStream::default();
        s.push(
            "",
            r#"{"type":"response.completed","response":{"output":[]}}"#,
        )
        .unwrap();
        assert_eq!(s.finish().unwrap(), Vec::<Value>::new());
        let mut s = ResponsesStream::default();
        assert!(s.push("", r#"{"type":"response.failed"}"#).is_err());
    }

    #[test]
    fn a_request_converts_to_chat() {
        let request: ResponsesRequest = serde_json::from_value(json!({
            "model": "m", "instructions": "be brief", "max_output_tokens": 50, "store": false,
            "input": [
                {"role":"user","content":[{"type":"input_text","text":"weather?"}]},
                {"type":"function_call","call_id":"c1","name":"w","arguments":"{\"c\":\"Oslo\"}"},
                {"type":"function_call","call_id":"c2","name":"w","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output":"sunny"}
            ],
            "tools": [{"type":"function","name":"w","parameters":{"type":"object"}}],
            "tool_choice": {"type":"function","name":"w"}
        }))
        .unwrap();
        let chat = request.to_chat().unwrap();
        let v = serde_json::to_value(&chat).unwrap();
        assert_eq!(
            v["messages"][0],
            json!({"role":"system","content":"be brief"})
        );
        assert_eq!(v["messages"][1]["content"], "weather?");
        assert_eq!(v["messages"][2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(v["messages"][3]["tool_call_id"], "c1");
        assert_eq!(v["tools"][0]["function"]["name"], "w");
        assert_eq!(v["tool_choice"]["function"]["name"], "w");
        assert_eq!(v["max_tokens"], 50);
        assert!(v.get("store").is_none());
    }

    #[test]
    fn responses_serialise_as_the_api_defines() {
        let r = Response::completed(
            "resp_1",
            3,
            "m",
            vec![OutputItem::FunctionCall {
                id: "fc_1".into(),
                call_id: "c1".into(),
                name: "f".into(),
                arguments: "{}".into(),
                status: "completed".into(),
                namespace: None,
            }],
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["output"][0]["type"], "function_call");
        assert_eq!(v["object"], "response");
        assert_eq!(v["tools"], json!([]));
    }

    // An upstream that speaks Responses: the neutral request goes out as input items, and
    // the events this crate writes read back into the same calls.
    #[test]
    fn a_neutral_request_encodes_and_a_stream_reads_back() {
        let chat: ChatRequest = serde_json::from_value(json!({"model": "m", "max_tokens": 7,
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}))
        .unwrap();
        let v = Responses.encode_request(&chat).unwrap();
        assert_eq!(v["instructions"], "sys");
        assert_eq!(v["max_output_tokens"], 7);
        assert_eq!(v["input"][1]["type"], "function_call");
        assert_eq!(v["input"][2]["call_id"], "c1");
        assert_eq!(v["tool_choice"], json!({"type": "function", "name": "f"}));
        assert_eq!(v["tools"][0]["name"], "f");
        let back = ResponsesRequest::deserialize(&v)
            .unwrap()
            .to_chat()
            .unwrap();
        assert_eq!(back.messages.len(), 4);

        let mut w = Responses.stream_encoder(ReplyMeta {
            id: "resp_1".into(),
            ..ReplyMeta::default()
        });
        let mut events = Vec::new();
        w.push(
            vec![
                Out::Reasoning("r".into()),
                Out::Text("t".into()),
                Out::CallStart {
                    index: 0,
                    id: "c9".into(),
                    name: "f".into(),
                },
                Out::CallEnd {
                    index: 0,
                    arguments: "{\"a\":2}".into(),
                },
            ],
            &mut events,
        );
        w.end(End::Finished("tool_calls".into()), &mut events);
        let mut dec = Responses.stream_decoder(Limits::default());
        let mut acc = crate::dialect::Accumulator::new(Limits::default());
        for e in &events {
            let mut ds = Vec::new();
            dec.push(e.event.as_deref().unwrap_or_default(), &e.data, &mut ds)
                .unwrap();
            ds.iter().for_each(|d| acc.push(d).unwrap());
        }
        let (reply, _) = acc.finish().unwrap();
        assert_eq!(reply.text.as_deref(), Some("t"));
        assert_eq!(reply.reasoning.as_deref(), Some("r"));
        assert_eq!(reply.calls[0].id.as_deref(), Some("c9"));
        assert_eq!(reply.calls[0].arguments_value(), json!({"a": 2}));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    }
}
