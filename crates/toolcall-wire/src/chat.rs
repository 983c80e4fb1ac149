//! OpenAI Chat Completions (`POST /v1/chat/completions`): the request, the whole reply
//! (`chat.completion`), the streamed reply (`chat.completion.chunk` over SSE) and the
//! accumulation of a stream into one [`Reply`].
//!
//! A streamed reply is complete only when a choice carried a `finish_reason` or the stream
//! sent `[DONE]`; [`ChatAccumulator::finish`] answers [`WireError::Cut`] otherwise (R-18).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dialect::{
    Decoded, Delta, Dialect, End, ErrorInfo, FlatDeclaration, Fragment, Out, ReplyMeta, SseEvent,
    StreamDecoder, StreamEncoder, Usage,
};
use crate::{Limits, Reply, WireCall, WireError, not_json};

/// The SSE data line that ends a Chat Completions stream.
pub const DONE: &str = "[DONE]";

/// A Chat Completions request. Fields toolcall does not model stay in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ChatTool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where [`decode_request_keeping_tools`] finds the `tools` of a request it read before:
/// their exact JSON text (the bytes between `"tools":` and the next key) to their decoded form.
pub trait ToolsMemo {
    /// The tools last decoded from exactly `text`, if kept.
    fn get(&self, text: &str) -> Option<Vec<ChatTool>>;
    /// `tools`, just decoded from exactly `text`.
    fn put(&self, text: &str, tools: &[ChatTool]);
}

/// [`ChatRequest`] as first read by [`decode_request_keeping_tools`]: the same fields, with
/// `tools` kept as its text.
#[derive(Deserialize)]
struct RequestToolsText<'a> {
    #[serde(default)]
    model: String,
    #[serde(default)]
    messages: Vec<ChatMessage>,
    #[serde(default, borrow)]
    tools: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// `{"tools": …}`: a request's tools decoded from their text at the depth they have in the
/// request (one object down), so serde_json's nesting limit counts them as it does there.
#[derive(Deserialize)]
struct ToolsAlone {
    tools: Vec<ChatTool>,
}

/// [`Chat`]'s `decode_request` (the same request, or the same error), with the request's
/// `tools` taken from `memo` when their exact text was decoded before.
///
/// Clients send the same `tools` with every request of a conversation, and decoding them is
/// most of decoding a request: a `serde_json::Value` for each schema, each object an
/// `IndexMap` whose keys are hashed (15.0 k of a small request's 21.0 k instructions with one
/// tool of two properties; a copy of the decoded tools costs 6.8 k; session 39). The request
/// is read once with `tools` as text; tools not in `memo` are decoded from that text inside a
/// one-key object (the depth they have in the request) and put in `memo`. Any error falls
/// back to the whole request's decode, whose error is the one returned.
pub fn decode_request_keeping_tools(
    body: &[u8],
    memo: &dyn ToolsMemo,
) -> Result<Decoded, WireError> {
    let whole = || Chat.decode_request(body);
    let Ok(text) = std::str::from_utf8(body) else {
        return whole();
    };
    let Ok(first) = serde_json::from_str::<RequestToolsText<'_>>(text) else {
        return whole();
    };
    let tools = match first.tools {
        None => None,
        Some(raw) => match memo.get(raw.get()) {
            Some(tools) => Some(tools),
            None => {
                let mut alone = String::with_capacity(raw.get().len() + 10);
                alone.push_str("{\"tools\":");
                alone.push_str(raw.get());
                alone.push('}');
                let Ok(ToolsAlone { tools }) = serde_json::from_str(&alone) else {
                    return whole();
                };
                memo.put(raw.get(), &tools);
                Some(tools)
            }
        },
    };
    Ok(Decoded {
        request: ChatRequest {
            model: first.model,
            messages: first.messages,
            tools,
            tool_choice: first.tool_choice,
            parallel_tool_calls: first.parallel_tool_calls,
            stream: first.stream,
            extra: first.extra,
        },
        ignored: Vec::new(),
    })
}

/// One offered tool (`{"type":"function","function":{..}}`; a `custom` tool's
/// `{"type":"custom","custom":{name, description, format}}` reads into `function`). A tool
/// of another type (a hosted `{"type": "web_search"}`) may come without either: it reads
/// with an empty `function`, known by its type
/// ([`crate::tool_kinds::display_name`]), so the gateway can name it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ChatToolIn")]
pub struct ChatTool {
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    #[serde(alias = "custom")]
    pub function: FunctionDef,
}

/// [`ChatTool`] as read, before the check that a function or custom tool has its body.
#[derive(Deserialize)]
struct ChatToolIn {
    #[serde(rename = "type", default = "function_type")]
    kind: String,
    #[serde(alias = "custom", default)]
    function: Option<FunctionDef>,
}

impl TryFrom<ChatToolIn> for ChatTool {
    type Error = String;

    fn try_from(t: ChatToolIn) -> Result<Self, String> {
        let function = match (t.function, t.kind.as_str()) {
            (Some(f), _) => f,
            (None, "function") => return Err("missing field `function`".into()),
            (None, "custom") => return Err("missing field `custom`".into()),
            (None, _) => FunctionDef::default(),
        };
        Ok(ChatTool {
            kind: t.kind,
            function,
        })
    }
}

/// A function tool's declaration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_type() -> String {
    "function".to_owned()
}

/// A message of any role. `content` is a string, content parts, or `null`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<Value>,
    /// Reasoning kept apart from the text (DeepSeek, llama.cpp, SGLang, older vLLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The same under the name newer vLLM and Ollama use. A field of its own, not an alias:
    /// servers in transition send both names, and an alias would reject that as a duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The same under Ollama's native name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    /// A message with text content.
    pub fn text(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_owned(),
            content: Some(Value::String(content.into())),
            ..ChatMessage::default()
        }
    }

    /// The text of `content`: the string, or the `text` of its parts joined.
    pub fn content_text(&self) -> Option<String> {
        match &self.content {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The reasoning, whichever name the server used.
    pub fn reasoning_text(&self) -> Option<&str> {
        first_reasoning(&self.reasoning_content, &self.reasoning, &self.thinking)
    }

    /// [`ChatMessage::to_reply`], taking the message's text and reasoning rather than
    /// copying them.
    pub fn into_reply(self) -> Reply {
        let calls = self
            .tool_calls
            .iter()
            .flatten()
            .map(|c| {
                WireCall::new(
                    Some(c.id.as_str()),
                    &c.function.name,
                    Some(&c.function.arguments),
                )
            })
            .collect();
        let text = match self.content {
            Some(Value::String(s)) => Some(s),
            Some(Value::Array(parts)) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        };
        Reply {
            text,
            // `first_reasoning`'s order.
            reasoning: self.reasoning_content.or(self.reasoning).or(self.thinking),
            calls,
            finish_reason: None,
        }
    }

    /// The message read as a reply (no finish reason).
    pub fn to_reply(&self) -> Reply {
        Reply {
            text: self.content_text(),
            reasoning: self.reasoning_text().map(str::to_owned),
            calls: self
                .tool_calls
                .iter()
                .flatten()
                .map(|c| {
                    WireCall::new(
                        Some(c.id.as_str()),
                        &c.function.name,
                        Some(&c.function.arguments),
                    )
                })
                .collect(),
            finish_reason: None,
        }
    }
}

/// A call in an assistant message (a custom tool's `{"type":"custom","custom":{name,
/// input}}` reads into `function`, its raw input as `arguments`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatToolCall {
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    #[serde(alias = "custom")]
    pub function: FunctionCall,
}

impl ChatToolCall {
    /// A function call with its arguments already encoded as a JSON string.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: String) -> Self {
        ChatToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: Value::String(arguments),
            },
        }
    }
}

impl ChatTool {
    /// A function tool.
    pub fn function(
        name: impl Into<String>,
        description: Option<String>,
        parameters: Value,
    ) -> Self {
        ChatTool {
            kind: function_type(),
            function: FunctionDef {
                name: name.into(),
                description,
                parameters: Some(parameters),
                extra: Map::new(),
            },
        }
    }
}

/// A neutral tool as a Chat `tools` entry (`{"type":"function","function":{..}}`).
pub fn tool_declaration(t: &ChatTool) -> Value {
    serde_json::to_value(t).unwrap_or_default()
}

/// Chat's `tool_choice` naming one function (the neutral request's form; each dialect
/// writes it its own way).
pub fn named_tool_choice(name: &str) -> Value {
    serde_json::json!({"type": "function", "function": {"name": name}})
}

impl ChatMessage {
    /// A `tool` message answering `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            tool_call_id: Some(call_id.into()),
            ..ChatMessage::text("tool", content)
        }
    }

    /// An assistant message: its text (`null` when none) and its calls.
    pub fn assistant(text: Option<String>, calls: Vec<ChatToolCall>) -> Self {
        ChatMessage {
            role: "assistant".into(),
            content: text.map(Value::String),
            tool_calls: (!calls.is_empty()).then_some(calls),
            ..ChatMessage::default()
        }
    }

    /// A message of content parts: `text`, then one `image_url` part per data URI.
    pub fn text_and_images(
        role: &str,
        text: &str,
        data_uris: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut parts = vec![serde_json::json!({"type": "text", "text": text})];
        parts.extend(
            data_uris
                .into_iter()
                .map(|url| serde_json::json!({"type": "image_url", "image_url": {"url": url}})),
        );
        ChatMessage {
            role: role.to_owned(),
            content: Some(Value::Array(parts)),
            ..ChatMessage::default()
        }
    }
}

/// An image part of a neutral message (`{"type":"image_url","image_url":{"url":..}}`): its
/// bytes when the URL is a base64 `data:` URI, else its address. Each dialect writes it its
/// own way; one that cannot fetch an address leaves such an image out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImagePart<'a> {
    Data { media_type: &'a str, data: &'a str },
    Url(&'a str),
}

impl<'a> ImagePart<'a> {
    /// The image a content part holds, if it is an `image_url` part.
    pub fn of(part: &'a Value) -> Option<Self> {
        if part.get("type").and_then(Value::as_str) != Some("image_url") {
            return None;
        }
        let url = match part.get("image_url") {
            Some(Value::String(u)) => u.as_str(),
            Some(u) => u.get("url").and_then(Value::as_str)?,
            None => return None,
        };
        Some(
            match url
                .strip_prefix("data:")
                .and_then(|r| r.split_once(";base64,"))
            {
                Some((media_type, data)) => ImagePart::Data { media_type, data },
                None => ImagePart::Url(url),
            },
        )
    }

    /// The neutral content part for an image at `url` (a `data:` URI or an address).
    pub fn part(url: &str) -> Value {
        serde_json::json!({"type": "image_url", "image_url": {"url": url}})
    }
}

impl ChatMessage {
    /// The images among `content`'s parts, in order.
    pub fn images(&self) -> Vec<ImagePart<'_>> {
        match &self.content {
            Some(Value::Array(parts)) => parts.iter().filter_map(ImagePart::of).collect(),
            _ => Vec::new(),
        }
    }
}

/// The function part of a call. `arguments` is a JSON string on the wire; some servers send
/// an object, which [`crate::decode_arguments`] accepts too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: String,
    #[serde(default, alias = "input")]
    pub arguments: Value,
}

/// A whole reply (`"object": "chat.completion"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    #[serde(default)]
    pub id: String,
    #[serde(default = "completion_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

/// One choice of a whole reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: u32,
    pub message: ChatMessage,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatCompletion {
    /// Reads a whole reply's body.
    pub fn from_body(body: &str) -> Result<Self, WireError> {
        serde_json::from_str(body).map_err(|e| not_json("the reply", body, &e))
    }

    /// The first choice as a reply.
    pub fn to_reply(&self, limits: &Limits) -> Result<Reply, WireError> {
        let choice = self
            .choices
            .first()
            .ok_or(WireError::Missing("choices[0]"))?;
        let mut reply = choice.message.to_reply();
        if reply.calls.len() > limits.max_calls {
            return Err(WireError::TooManyCalls(limits.max_calls));
        }
        reply.finish_reason = choice.finish_reason.clone();
        Ok(reply)
    }
}

/// One streamed chunk (`"object": "chat.completion.chunk"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatChunk {
    #[serde(default)]
    pub id: String,
    #[serde(default = "chunk_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

impl ChatChunk {
    /// A chunk of one choice (index 0).
    pub fn new(id: &str, created: u64, model: &str, delta: ChatDelta) -> Self {
        ChatChunk {
            id: id.to_owned(),
            object: chunk_object(),
            created,
            model: model.to_owned(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: None,
            }],
            usage: None,
            extra: Map::new(),
        }
    }

    /// Reads one SSE data line's JSON.
    pub fn from_data(data: &str) -> Result<Self, WireError> {
        serde_json::from_str(data).map_err(|e| not_json("a stream chunk", data, &e))
    }
}

/// One choice's part of a chunk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: ChatDelta,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning under any of its names, as on [`ChatMessage`]; read it with
    /// [`ChatDelta::reasoning`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

impl ChatDelta {
    /// The reasoning this chunk adds, whichever name the server used (one of them when it
    /// sent the same text under two).
    pub fn reasoning(&self) -> Option<&str> {
        first_reasoning(&self.reasoning_content, &self.reasoning, &self.thinking)
    }
}

/// The first reasoning field present: `reasoning_content`, `reasoning`, `thinking`.
fn first_reasoning<'a>(
    content: &'a Option<String>,
    reasoning: &'a Option<String>,
    thinking: &'a Option<String>,
) -> Option<&'a str> {
    [content, reasoning, thinking]
        .into_iter()
        .find_map(|r| r.as_deref())
}

/// A call's part of a chunk: `id`, `type` and `function.name` come once, when the call
/// starts; `function.arguments` comes in fragments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
}

/// The function part of a call delta.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles streamed call deltas by `index` into whole calls: the id and name are kept from
/// their first appearance (some servers repeat them in every chunk), arguments are joined.
#[derive(Debug, Default)]
pub struct CallAssembler {
    calls: BTreeMap<u32, PartialCall>,
}

impl CallAssembler {
    /// Adds one delta; answers the argument bytes it added.
    pub fn push(&mut self, tc: &ToolCallDelta, limits: &Limits) -> Result<usize, WireError> {
        if self.calls.len() >= limits.max_calls && !self.calls.contains_key(&tc.index) {
            return Err(WireError::TooManyCalls(limits.max_calls));
        }
        let p = self.calls.entry(tc.index).or_default();
        if let Some(id) = &tc.id
            && p.id.is_empty()
        {
            p.id.clone_from(id);
        }
        let mut added = 0;
        if let Some(f) = &tc.function {
            if let Some(n) = &f.name
                && p.name.is_empty()
            {
                p.name.clone_from(n);
            }
            if let Some(a) = &f.arguments {
                p.arguments.push_str(a);
                added = a.len();
            }
        }
        Ok(added)
    }

    /// The calls in index order, arguments decoded by the wire policy.
    pub fn finish(self) -> Vec<WireCall> {
        self.calls
            .into_values()
            .map(|p| {
                let args = Value::String(p.arguments);
                WireCall::new(Some(&p.id), &p.name, Some(&args))
            })
            .collect()
    }
}

/// Accumulates a Chat Completions stream (choice 0) into one [`Reply`].
#[derive(Debug, Default)]
pub struct ChatAccumulator {
    limits: Limits,
    text: Option<String>,
    reasoning: Option<String>,
    calls: CallAssembler,
    finish_reason: Option<String>,
    done: bool,
    bytes: usize,
}

impl ChatAccumulator {
    pub fn new(limits: Limits) -> Self {
        ChatAccumulator {
            limits,
            ..ChatAccumulator::default()
        }
    }

    /// Takes one SSE data line: `[DONE]` (answers `None`) or a chunk (answers it, for callers
    /// that act on deltas). A chunk carrying `error` is an error.
    pub fn push_data(&mut self, data: &str) -> Result<Option<ChatChunk>, WireError> {
        if data.trim() == DONE {
            self.done = true;
            return Ok(None);
        }
        let chunk = ChatChunk::from_data(data)?;
        self.push(&chunk)?;
        Ok(Some(chunk))
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &ChatChunk) -> Result<(), WireError> {
        if let Some(err) = chunk.extra.get("error") {
            return Err(WireError::Upstream(crate::excerpt(&err.to_string(), 500)));
        }
        let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) else {
            return Ok(());
        };
        let d = &choice.delta;
        self.grow(d.content.as_ref().map_or(0, String::len) + d.reasoning().map_or(0, str::len))?;
        if let Some(t) = &d.content {
            self.text.get_or_insert_with(String::new).push_str(t);
        }
        if let Some(r) = d.reasoning() {
            self.reasoning.get_or_insert_with(String::new).push_str(r);
        }
        for tc in d.tool_calls.iter().flatten() {
            self.bytes += self.calls.push(tc, &self.limits)?;
        }
        if self.bytes > self.limits.max_bytes {
            return Err(WireError::TooLarge(self.limits.max_bytes));
        }
        if let Some(reason) = &choice.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
        Ok(())
    }

    fn grow(&mut self, n: usize) -> Result<(), WireError> {
        self.bytes += n;
        if self.bytes > self.limits.max_bytes {
            return Err(WireError::TooLarge(self.limits.max_bytes));
        }
        Ok(())
    }

    /// Whether the stream said it finished (`finish_reason` or `[DONE]`).
    pub fn is_finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// The reply; [`WireError::Cut`] when the stream never said it finished.
    pub fn finish(self) -> Result<Reply, WireError> {
        if !self.is_finished() {
            return Err(WireError::Cut(
                "no finish_reason and no [DONE] before the end".into(),
            ));
        }
        Ok(Reply {
            text: self.text,
            reasoning: self.reasoning,
            calls: self.calls.finish(),
            finish_reason: self.finish_reason,
        })
    }
}

/// The Chat Completions dialect (registered in [`crate::DIALECTS`] as `chat`).
pub struct Chat;

/// Chat's usage object in neutral terms.
pub fn usage_of(v: &Value) -> Usage {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("prompt_tokens"),
        output_tokens: n("completion_tokens"),
    }
}

fn usage_value(u: &Usage) -> Value {
    serde_json::json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens})
}

/// A Chat Completions reply (`choices`), a message or a stream delta with `tool_calls`, a
/// legacy `function_call`, or an assistant message with text: its text and calls.
pub fn read_fragment(v: &Value) -> Option<Fragment> {
    let mut out = Fragment::default();
    message_fragment(v, &mut out).then_some(out)
}

fn message_fragment(v: &Value, out: &mut Fragment) -> bool {
    let Some(m) = v.as_object() else { return false };
    if let Some(choices) = m.get("choices").and_then(Value::as_array) {
        let mut any = false;
        for c in choices {
            if let Some(message) = c.get("message").or_else(|| c.get("delta")) {
                any |= message_fragment(message, out);
            }
        }
        return any;
    }
    let is_message = m.contains_key("tool_calls")
        || m.contains_key("function_call")
        || (text_field(m, "role") == Some("assistant")
            && matches!(m.get("content"), Some(Value::String(_) | Value::Null)));
    if !is_message {
        return false;
    }
    if let Some(t) = text_field(m, "content") {
        out.text.push_str(t);
    }
    for c in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(f) = c.get("function").and_then(Value::as_object) else {
            continue;
        };
        let Some(name) = text_field(f, "name") else {
            continue;
        };
        let id = c.get("id").and_then(Value::as_str);
        out.calls.push(WireCall::new(id, name, f.get("arguments")));
    }
    if let Some(f) = m.get("function_call").and_then(Value::as_object)
        && let Some(name) = text_field(f, "name")
    {
        out.calls
            .push(WireCall::new(None, name, f.get("arguments")));
    }
    true
}

fn text_field<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

impl Dialect for Chat {
    fn read_fragment(&self, value: &Value) -> Option<Fragment> {
        read_fragment(value)
    }

    fn name(&self) -> &'static str {
        "chat"
    }

    fn path(&self, _model: &str, _stream: bool) -> String {
        "/chat/completions".into()
    }

    fn auth_headers(&self, key: &str) -> Vec<(&'static str, String)> {
        vec![("authorization", format!("Bearer {key}"))]
    }

    fn decode_request(&self, body: &[u8]) -> Result<Decoded, WireError> {
        let request = crate::from_json_bytes(body)
            .map_err(|e| not_json("the request", &String::from_utf8_lossy(body), &e))?;
        Ok(Decoded {
            request,
            ignored: Vec::new(),
        })
    }

    /// Tools of a kind other than `function` are left out: a Chat server refuses them.
    /// `{"type": "function", "function": {..}}`; keys beside `function` stay beside.
    fn tools_file_entry(&self, entry: &Map<String, Value>) -> Option<Vec<FlatDeclaration>> {
        if entry.get("type").and_then(Value::as_str) != Some("function") {
            return None;
        }
        let flat = match entry.get("function")? {
            Value::Object(function) => {
                let mut flat = function.clone();
                for (k, v) in entry {
                    if k != "type" && k != "function" {
                        flat.insert(k.clone(), v.clone());
                    }
                }
                Ok(flat)
            }
            _ => Err("\"function\" must be an object".to_owned()),
        };
        Some(vec![flat])
    }

    fn encode_request(&self, request: &ChatRequest) -> Result<Value, WireError> {
        let mut out = request.clone();
        if let Some(tools) = &mut out.tools {
            tools.retain(|t| t.kind == "function");
        }
        serde_json::to_value(&out).map_err(|e| WireError::Encode(e.to_string()))
    }

    /// Written straight from the request (no copy, no `Value`) when every tool is a
    /// function and no extra field repeats a named one (a `Value` keeps one of two equal
    /// keys; written straight, both would go out).
    fn encode_request_bytes(&self, request: &ChatRequest) -> Result<Vec<u8>, WireError> {
        let all_functions = request.tools.iter().flatten().all(|t| t.kind == "function");
        if !all_functions
            || REQUEST_FIELDS
                .iter()
                .any(|f| request.extra.contains_key(*f))
        {
            let value = self.encode_request(request)?;
            return serde_json::to_vec(&value).map_err(|e| WireError::Encode(e.to_string()));
        }
        serde_json::to_vec(request).map_err(|e| WireError::Encode(e.to_string()))
    }

    fn decode_reply(&self, body: &str, limits: &Limits) -> Result<(Reply, ReplyMeta), WireError> {
        let mut completion = ChatCompletion::from_body(body)?;
        // `ChatCompletion::to_reply`, taking the first choice's strings.
        if completion.choices.is_empty() {
            return Err(WireError::Missing("choices[0]"));
        }
        let choice = completion.choices.swap_remove(0);
        let mut reply = choice.message.into_reply();
        if reply.calls.len() > limits.max_calls {
            return Err(WireError::TooManyCalls(limits.max_calls));
        }
        reply.finish_reason = choice.finish_reason;
        let meta = ReplyMeta {
            id: std::mem::take(&mut completion.id),
            model: std::mem::take(&mut completion.model),
            created: completion.created,
            usage: completion.usage.as_ref().map(usage_of),
            raw_usage: completion.usage.take(),
            extra: std::mem::take(&mut completion.extra),
            custom_tools: Vec::new(),
            namespaces: Vec::new(),
            openai_built_ins: Vec::new(),
        };
        Ok((reply, meta))
    }

    fn encode_reply(&self, reply: &Reply, meta: &ReplyMeta) -> Value {
        let completion = completion_of(reply, meta);
        let mut v = serde_json::to_value(&completion).unwrap_or_default();
        if let Some(calls) = v
            .pointer_mut("/choices/0/message/tool_calls")
            .and_then(Value::as_array_mut)
        {
            calls
                .iter_mut()
                .for_each(|c| as_custom_call(c, &meta.custom_tools));
        }
        v
    }

    /// Written straight from the reply (no `Value`) unless a call is to a custom tool
    /// (rewritten in the `Value`) or an extra field repeats a named one.
    fn encode_reply_bytes(&self, reply: &Reply, meta: &ReplyMeta) -> Vec<u8> {
        let custom_call = reply
            .calls
            .iter()
            .any(|c| meta.custom_tools.contains(&c.name));
        if custom_call
            || COMPLETION_FIELDS
                .iter()
                .any(|f| meta.extra.contains_key(*f))
        {
            return serde_json::to_vec(&self.encode_reply(reply, meta)).unwrap_or_default();
        }
        serde_json::to_vec(&CompletionText::of(reply, meta)).unwrap_or_default()
    }

    fn stream_decoder(&self, _limits: Limits) -> Box<dyn StreamDecoder> {
        Box::new(ChatDecoder)
    }

    fn stream_encoder(&self, meta: ReplyMeta) -> Box<dyn StreamEncoder> {
        Box::new(ChunkWriter::new(meta))
    }

    fn declare_tools(&self, tools: &[ChatTool]) -> Value {
        Value::Array(tools.iter().map(tool_declaration).collect())
    }
    fn encode_error(&self, e: &ErrorInfo<'_>) -> Value {
        serde_json::json!({"error": {"message": e.message, "type": e.kind, "param": null,
            "code": e.code}})
    }
}

/// Rewrites a call (`{"id","type":"function","function":{name, arguments}}`) to a
/// `custom` tool as Chat writes those: `{"id","type":"custom","custom":{name, input}}`.
/// The top-level fields of a [`ChatRequest`] besides `extra`.
const REQUEST_FIELDS: [&str; 6] = [
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
];

/// The top-level fields of a [`ChatCompletion`] besides `extra`.
const COMPLETION_FIELDS: [&str; 6] = ["id", "object", "created", "model", "choices", "usage"];

/// A whole reply as a completion (custom tools' calls still written as functions).
fn completion_of(reply: &Reply, meta: &ReplyMeta) -> ChatCompletion {
    let message = ChatMessage {
        role: "assistant".into(),
        content: reply
            .text
            .clone()
            .filter(|t| !t.trim().is_empty() || reply.calls.is_empty())
            .map(Value::String),
        reasoning_content: reply.reasoning.clone(),
        tool_calls: (!reply.calls.is_empty()).then(|| {
            reply
                .calls
                .iter()
                .map(|c| {
                    let arguments = match &c.arguments {
                        // What `encode_arguments` writes for the object, without copying it.
                        Ok(m) => serde_json::to_string(m).unwrap_or_default(),
                        Err(e) => e.raw.clone(),
                    };
                    ChatToolCall::new(c.id.clone().unwrap_or_default(), c.name.clone(), arguments)
                })
                .collect()
        }),
        ..ChatMessage::default()
    };
    ChatCompletion {
        id: meta.id.clone(),
        object: completion_object(),
        created: meta.created,
        model: meta.model.clone(),
        choices: vec![Choice {
            index: 0,
            message,
            finish_reason: Some(crate::dialect::chat_finish(reply)),
            extra: Map::new(),
        }],
        usage: meta
            .raw_usage
            .clone()
            .or_else(|| meta.usage.as_ref().map(usage_value)),
        extra: meta.extra.clone(),
    }
}

/// [`completion_of`]'s completion, borrowed from the reply: the same keys in the same order
/// (`Chat::encode_reply_bytes` writes it; the test `text_written_straight_is_the_value_paths`
/// holds it to the `Value` path byte for byte).
#[derive(Serialize)]
struct CompletionText<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [ChoiceText<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<std::borrow::Cow<'a, Value>>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct ChoiceText<'a> {
    index: u32,
    message: MessageText<'a>,
    finish_reason: String,
}

#[derive(Serialize)]
struct MessageText<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<CallText<'a>>>,
}

#[derive(Serialize)]
struct CallText<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionText<'a>,
}

#[derive(Serialize)]
struct FunctionText<'a> {
    name: &'a str,
    arguments: std::borrow::Cow<'a, str>,
}

impl<'a> CompletionText<'a> {
    fn of(reply: &'a Reply, meta: &'a ReplyMeta) -> Self {
        let content = reply
            .text
            .as_deref()
            .filter(|t| !t.trim().is_empty() || reply.calls.is_empty());
        let tool_calls = (!reply.calls.is_empty()).then(|| {
            reply
                .calls
                .iter()
                .map(|c| CallText {
                    id: c.id.as_deref().unwrap_or_default(),
                    kind: "function",
                    function: FunctionText {
                        name: &c.name,
                        arguments: match &c.arguments {
                            Ok(m) => serde_json::to_string(m).unwrap_or_default().into(),
                            Err(e) => e.raw.as_str().into(),
                        },
                    },
                })
                .collect()
        });
        CompletionText {
            id: &meta.id,
            object: "chat.completion",
            created: meta.created,
            model: &meta.model,
            choices: [ChoiceText {
                index: 0,
                message: MessageText {
                    role: "assistant",
                    content,
                    reasoning_content: reply.reasoning.as_deref(),
                    tool_calls,
                },
                finish_reason: crate::dialect::chat_finish(reply),
            }],
            usage: match &meta.raw_usage {
                Some(u) => Some(std::borrow::Cow::Borrowed(u)),
                None => meta
                    .usage
                    .as_ref()
                    .map(|u| std::borrow::Cow::Owned(usage_value(u))),
            },
            extra: &meta.extra,
        }
    }
}

fn as_custom_call(call: &mut Value, custom: &[String]) {
    let Some(f) = call.get("function") else {
        return;
    };
    let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
    if !custom.iter().any(|c| c == name) {
        return;
    }
    let input = match f.get("arguments") {
        Some(Value::String(a)) => crate::dialect::custom_input(a),
        _ => String::new(),
    };
    let custom = serde_json::json!({"name": name, "input": input});
    if let Some(obj) = call.as_object_mut() {
        obj.remove("function");
        obj.insert("type".into(), Value::String("custom".into()));
        obj.insert("custom".into(), custom);
    }
}

/// A [`ChatChunk`] as the stream decoder reads it: its choices, `usage` and `error`, with
/// `id`, `object`, `created` and `model` checked as [`ChatChunk`] checks them but not kept,
/// and other fields skipped rather than collected into `extra`. It accepts and refuses
/// exactly what [`ChatChunk::from_data`] does (a JSON object; the same types; a field
/// named twice refused, an unknown one kept last-wins, as `extra` keeps it); it saves the
/// three strings and the flattened map a chunk cost, about a third of a streamed
/// chunk's decode (measured with `bench/instructions.sh 100 true`, session 38).
struct ChunkIn {
    choices: Vec<ChunkChoice>,
    usage: Option<Value>,
    error: Option<Value>,
}

/// The fields [`ChunkIn`] tells apart.
enum ChunkKey {
    /// `id`, `object` or `model`: a string, checked and not kept (its slot among the
    /// fields a chunk may name once, and its name).
    Text(usize, &'static str),
    Created,
    Choices,
    Usage,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for ChunkKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = ChunkKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ChunkKey, E> {
                Ok(match v {
                    "id" => ChunkKey::Text(0, "id"),
                    "object" => ChunkKey::Text(1, "object"),
                    "created" => ChunkKey::Created,
                    "model" => ChunkKey::Text(3, "model"),
                    "choices" => ChunkKey::Choices,
                    "usage" => ChunkKey::Usage,
                    "error" => ChunkKey::Error,
                    _ => ChunkKey::Other,
                })
            }
        }
        d.deserialize_identifier(Key)
    }
}

/// A JSON string, checked and not kept.
struct SkippedString;

impl<'de> Deserialize<'de> for SkippedString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = SkippedString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<SkippedString, E> {
                Ok(SkippedString)
            }
        }
        d.deserialize_string(Text)
    }
}

impl<'de> Deserialize<'de> for ChunkIn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Chunk;
        impl<'de> serde::de::Visitor<'de> for Chunk {
            type Value = ChunkIn;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct ChatChunk")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ChunkIn, A::Error> {
                use serde::de::Error;
                let mut seen = [false; 6];
                let mut once = |i: usize, name: &'static str| {
                    if std::mem::replace(&mut seen[i], true) {
                        Err(A::Error::duplicate_field(name))
                    } else {
                        Ok(())
                    }
                };
                let mut chunk = ChunkIn {
                    choices: Vec::new(),
                    usage: None,
                    error: None,
                };
                while let Some(key) = map.next_key::<ChunkKey>()? {
                    match key {
                        ChunkKey::Text(slot, name) => {
                            once(slot, name)?;
                            map.next_value::<SkippedString>()?;
                        }
                        ChunkKey::Created => {
                            once(2, "created")?;
                            map.next_value::<u64>()?;
                        }
                        ChunkKey::Choices => {
                            once(4, "choices")?;
                            chunk.choices = map.next_value()?;
                        }
                        ChunkKey::Usage => {
                            once(5, "usage")?;
                            chunk.usage = map.next_value()?;
                        }
                        // Kept as `extra` keeps it: any value, `null` included, the last one.
                        ChunkKey::Error => chunk.error = Some(map.next_value()?),
                        ChunkKey::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(chunk)
            }
        }
        d.deserialize_map(Chunk)
    }
}

/// [`ChatChunk::new`]'s chunk with one choice, borrowed: the same keys in the same order
/// (`usage` absent, `extra` empty), so the same text.
#[derive(Serialize)]
struct ChunkText<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [ChunkChoiceText<'a>; 1],
}

#[derive(Serialize)]
struct ChunkChoiceText<'a> {
    index: u32,
    delta: &'a ChatDelta,
    finish_reason: Option<&'a str>,
}

/// Reads Chat chunks (choice 0) into deltas.
struct ChatDecoder;

impl StreamDecoder for ChatDecoder {
    fn push(&mut self, _event: &str, data: &str, out: &mut Vec<Delta>) -> Result<(), WireError> {
        if data.trim() == DONE {
            out.push(Delta::Done);
            return Ok(());
        }
        let chunk: ChunkIn =
            serde_json::from_str(data).map_err(|e| not_json("a stream chunk", data, &e))?;
        deltas_of(
            chunk.error.as_ref(),
            chunk.usage.as_ref(),
            chunk.choices,
            out,
        )
    }
}

/// The deltas one chunk carries (choice 0). A chunk carrying `error` is an error.
pub fn chunk_deltas(chunk: ChatChunk, out: &mut Vec<Delta>) -> Result<(), WireError> {
    deltas_of(
        chunk.extra.get("error"),
        chunk.usage.as_ref(),
        chunk.choices,
        out,
    )
}

/// [`chunk_deltas`] of a chunk's parts: its `error`, `usage` and choices.
fn deltas_of(
    error: Option<&Value>,
    usage: Option<&Value>,
    choices: Vec<ChunkChoice>,
    out: &mut Vec<Delta>,
) -> Result<(), WireError> {
    if let Some(err) = error {
        return Err(WireError::Upstream(crate::excerpt(&err.to_string(), 500)));
    }
    if let Some(u) = usage {
        out.push(Delta::Usage(usage_of(u)));
    }
    let Some(choice) = choices.into_iter().find(|c| c.index == 0) else {
        return Ok(());
    };
    let d = choice.delta;
    if let Some(r) = d.reasoning() {
        out.push(Delta::Reasoning(r.to_owned()));
    }
    if let Some(t) = d.content {
        out.push(Delta::Text(t));
    }
    for tc in d.tool_calls.into_iter().flatten() {
        out.push(Delta::Call(tc));
    }
    if let Some(r) = choice.finish_reason {
        out.push(Delta::Finish(r));
    }
    Ok(())
}

/// Writes a streamed turn's outputs as `chat.completion.chunk` events.
pub struct ChunkWriter {
    meta: ReplyMeta,
    started: bool,
    /// Indexes of announced calls to `custom` tools.
    custom_calls: std::collections::HashSet<usize>,
}

impl ChunkWriter {
    pub fn new(meta: ReplyMeta) -> Self {
        ChunkWriter {
            meta,
            started: false,
            custom_calls: Default::default(),
        }
    }

    /// A chunk whose delta carries one call to a custom tool (`{"index", "type": "custom",
    /// "custom": {…}}`, as Chat writes them).
    fn custom_chunk(&mut self, call: Value) -> SseEvent {
        let mut delta = ChatDelta::default();
        if !self.started {
            delta.role = Some("assistant".into());
            self.started = true;
        }
        let c = ChatChunk::new(&self.meta.id, self.meta.created, &self.meta.model, delta);
        let mut v = serde_json::to_value(&c).unwrap_or_default();
        if let Some(d) = v.pointer_mut("/choices/0/delta") {
            d["tool_calls"] = Value::Array(vec![call]);
        }
        SseEvent::data(v.to_string())
    }

    /// The chunk [`ChatChunk::new`] would make of `delta` with `finish`, written from the
    /// writer's id and model without copying them (the same text: [`ChunkText`]).
    fn chunk(&self, delta: ChatDelta, finish: Option<String>) -> SseEvent {
        let c = ChunkText {
            id: &self.meta.id,
            object: "chat.completion.chunk",
            created: self.meta.created,
            model: &self.meta.model,
            choices: [ChunkChoiceText {
                index: 0,
                delta: &delta,
                finish_reason: finish.as_deref(),
            }],
        };
        // Sized for the chunk's fixed text and its strings: one allocation, where
        // `to_string`'s 128 bytes grew once for nearly every chunk.
        let strings = self.meta.id.len()
            + self.meta.model.len()
            + delta.content.as_ref().map_or(0, String::len)
            + delta.reasoning_content.as_ref().map_or(0, String::len);
        let mut text = Vec::with_capacity(160 + strings + strings / 8);
        if serde_json::to_writer(&mut text, &c).is_err() {
            text.clear();
        }
        // JSON text is UTF-8.
        SseEvent::data(String::from_utf8(text).unwrap_or_default())
    }
}

impl StreamEncoder for ChunkWriter {
    fn push(&mut self, outs: Vec<Out>, events: &mut Vec<SseEvent>) {
        for o in outs {
            let mut delta = ChatDelta::default();
            match o {
                Out::Text(t) if t.is_empty() => continue,
                Out::Text(t) => delta.content = Some(t),
                Out::Reasoning(r) if r.is_empty() => continue,
                Out::Reasoning(r) => delta.reasoning_content = Some(r),
                Out::CallStart { index, id, name } if self.meta.custom_tools.contains(&name) => {
                    self.custom_calls.insert(index);
                    let call = serde_json::json!({"index": index, "id": id, "type": "custom",
                        "custom": {"name": name, "input": ""}});
                    let e = self.custom_chunk(call);
                    events.push(e);
                    continue;
                }
                Out::CallEnd { index, arguments } if self.custom_calls.contains(&index) => {
                    let input = crate::dialect::custom_input(&arguments);
                    let call = serde_json::json!({"index": index, "custom": {"input": input}});
                    let e = self.custom_chunk(call);
                    events.push(e);
                    continue;
                }
                Out::CallStart { index, id, name } => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: index as u32,
                        id: Some(id),
                        kind: Some("function".into()),
                        function: Some(FunctionDelta {
                            name: Some(name),
                            arguments: Some(String::new()),
                        }),
                    }]);
                }
                Out::CallEnd { index, arguments } => {
                    delta.tool_calls = Some(vec![ToolCallDelta {
                        index: index as u32,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: Some(arguments),
                        }),
                        ..ToolCallDelta::default()
                    }]);
                }
            }
            if !self.started {
                delta.role = Some("assistant".into());
                self.started = true;
            }
            events.push(self.chunk(delta, None));
        }
    }

    fn end(&mut self, end: End, events: &mut Vec<SseEvent>) {
        match end {
            End::Finished(finish) => {
                events.push(self.chunk(ChatDelta::default(), Some(finish)));
                events.push(SseEvent::data(DONE));
            }
            // An `error` event and no `finish_reason`: no client takes it for a reply.
            End::Failed(message) => {
                let body = Chat.encode_error(&ErrorInfo {
                    status: 502,
                    kind: "upstream_error",
                    code: Some("upstream_error"),
                    message: &message,
                });
                events.push(SseEvent::data(body.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A [`ToolsMemo`] keeping every text it is given.
    #[derive(Default)]
    struct Kept(std::cell::RefCell<Vec<(String, Vec<ChatTool>)>>);

    impl ToolsMemo for Kept {
        fn get(&self, text: &str) -> Option<Vec<ChatTool>> {
            let kept = self.0.borrow();
            kept.iter().find(|(t, _)| t == text).map(|(_, v)| v.clone())
        }
        fn put(&self, text: &str, tools: &[ChatTool]) {
            self.0.borrow_mut().push((text.to_owned(), tools.to_vec()));
        }
    }

    #[test]
    fn a_request_read_with_its_tools_kept_is_the_request_read_whole() {
        let deep = format!(
            r#"{{"model":"m","tools":[{{"type":"function","function":{{"name":"f","parameters":{}1{}}}}}]}}"#,
            "[".repeat(123),
            "]".repeat(123)
        );
        let deeper = deep.replace("[1]", "[[1]]");
        let bodies: Vec<&[u8]> = vec![
            br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"stream":false,"temperature":0.2}"#,
            br#"{"model":"m","tools":null}"#,
            br#"{"model":"m","tools":[]}"#,
            br#"{"model":"m","tools": [ {"type":"web_search"} ] , "x": [1]}"#,
            br#"{"tools":[{"type":"function","function":{"name":"a"}}],"model":"m","tools":[]}"#,
            br#"{"model":"m","tools":[{"type":"function"}]}"#,
            br#"{"model":"m","tools":[{"type":"function","function":{"parameters":{}}}]}"#,
            br#"{"model":"m","tools":{"type":"function"}}"#,
            br#"{"model":"m","tools":[{"type":"function","function":{"name":"a"}}],"messages":5}"#,
            br#"{"model":"m","tools":[{"type":"function","function":{"name":"a"}}],"messages":[}"#,
            b"{\"model\":\"m\xff\",\"tools\":[]}",
            br#"{"model":"m","tools":[{"type":"function","function":{"name":"\u00e9\n"}}]}"#,
            deep.as_bytes(),
            deeper.as_bytes(),
        ];
        let memo = Kept::default();
        for round in 0..2 {
            for body in &bodies {
                let shown = String::from_utf8_lossy(body);
                let kept = decode_request_keeping_tools(body, &memo);
                let whole = Chat.decode_request(body);
                match (kept, whole) {
                    (Ok(k), Ok(w)) => assert_eq!(k.request, w.request, "round {round}: {shown}"),
                    (Err(k), Err(w)) => {
                        assert_eq!(k.to_string(), w.to_string(), "round {round}: {shown}")
                    }
                    (k, w) => panic!("round {round}: {shown}: {:?} / {:?}", k.is_ok(), w.is_ok()),
                }
            }
        }
        // The deep one decodes (its tools kept), the deeper one is past serde_json's limit.
        assert!(Chat.decode_request(deep.as_bytes()).is_ok());
        assert!(Chat.decode_request(deeper.as_bytes()).is_err());
        assert!(
            memo.0
                .borrow()
                .iter()
                .any(|(t, _)| t.contains("get_weather"))
        );
    }

    // Before: `{"type": "web_search"}` was refused as `missing field function`, a parser
    // error where the gateway names the hosted tool (dropped under warn, a 400 under reject).
    #[test]
    fn a_tool_of_another_type_reads_without_a_function_body() {
        let hosted: ChatTool = serde_json::from_value(json!({"type": "web_search"})).unwrap();
        assert_eq!(hosted.kind, "web_search");
        assert_eq!(crate::tool_kinds::display_name(&hosted), "web_search");
        for missing in [
            json!({"type": "function"}),
            json!({}),
            json!({"type": "custom"}),
        ] {
            let e = serde_json::from_value::<ChatTool>(missing.clone()).unwrap_err();
            assert!(e.to_string().contains("missing field"), "{missing}: {e}");
        }
        let custom: ChatTool =
            serde_json::from_value(json!({"type": "custom", "custom": {"name": "apply_patch"}}))
                .unwrap();
        assert_eq!(custom.function.name, "apply_patch");
        let round = serde_json::to_value(&custom).unwrap();
        assert_eq!(
            round,
            json!({"type": "custom", "function": {"name": "apply_patch"}})
        );
    }

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
        .to_string()
    }

    // Servers renaming `reasoning_content` to `reasoning` sent both for a while (vLLM,
    // mlx-vlm): an alias rejected that as a duplicate field and the whole reply was lost.
    #[test]
    fn reasoning_reads_under_every_name_and_both_at_once() {
        let both = r#"{"role":"assistant","content":"Hi","reasoning_content":"r","reasoning":"r"}"#;
        let m: ChatMessage = serde_json::from_str(both).unwrap();
        assert_eq!(m.to_reply().reasoning.as_deref(), Some("r"));
        assert_eq!(m.to_reply().text.as_deref(), Some("Hi"));
        for name in ["reasoning", "thinking", "reasoning_content"] {
            let m: ChatMessage =
                serde_json::from_value(json!({"role": "assistant", name: "t"})).unwrap();
            assert_eq!(m.reasoning_text(), Some("t"), "{name}");
        }
        let mut acc = ChatAccumulator::new(Limits::default());
        for data in [
            chunk(json!({"reasoning_content":"a","reasoning":"a"}), None),
            chunk(json!({"thinking":"b"}), None),
            chunk(json!({}), Some("stop")),
        ] {
            acc.push_data(&data).unwrap();
        }
        assert_eq!(acc.finish().unwrap().reasoning.as_deref(), Some("ab"));
    }

    // The gateway writes requests and replies as text straight from the structs: the text
    // must be byte for byte the `Value` path's, with the fallbacks (a non-function tool, a
    // custom tool's call, an extra field repeating a named one) taken where they differ.
    #[test]
    fn text_written_straight_is_the_value_paths() {
        let request: ChatRequest = serde_json::from_value(json!({
            "model": "m", "temperature": 0.5, "stream": true,
            "messages": [{"role": "user", "content": "hi", "name": "u"}],
            "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                "parameters": {"type": "object", "properties": {"x": {"type": "number"}}},
                "strict": true}}],
            "tool_choice": "auto", "stream_options": {"include_usage": true}}))
        .unwrap();
        let mut with_custom = request.clone();
        with_custom.tools.as_mut().unwrap().push(
            serde_json::from_value(json!({"type": "custom", "custom": {"name": "patch"}})).unwrap(),
        );
        let mut repeated = request.clone();
        repeated.extra.insert("model".into(), json!("other"));
        for r in [&request, &with_custom, &repeated] {
            let value = Chat.encode_request(r).unwrap();
            assert_eq!(
                Chat.encode_request_bytes(r).unwrap(),
                serde_json::to_vec(&value).unwrap()
            );
        }
        let call = |name: &str, arguments: Value| WireCall::new(Some("c1"), name, Some(&arguments));
        let reply = Reply {
            text: Some("done".into()),
            reasoning: Some("think".into()),
            calls: vec![
                call("f", json!(r#"{"x": 1.5, "y": [true, null]}"#)),
                call("g", json!("not json")),
                call("patch", json!("*** Begin Patch")),
            ],
            finish_reason: Some("tool_calls".into()),
        };
        let mut meta = ReplyMeta {
            id: "chatcmpl-1".into(),
            model: "m".into(),
            created: 7,
            raw_usage: Some(json!({"prompt_tokens": 3, "completion_tokens": 4})),
            ..ReplyMeta::default()
        };
        meta.extra.insert("system_fingerprint".into(), json!("fp"));
        let plain = meta.clone();
        let mut custom = meta.clone();
        custom.custom_tools = vec!["patch".into()];
        let mut repeated = meta.clone();
        repeated.extra.insert("id".into(), json!("again"));
        let empty = Reply::default();
        for (r, m) in [
            (&reply, &plain),
            (&reply, &custom),
            (&reply, &repeated),
            (&empty, &plain),
        ] {
            let value = Chat.encode_reply(r, m);
            assert_eq!(
                Chat.encode_reply_bytes(r, m),
                serde_json::to_vec(&value).unwrap()
            );
        }
    }

    #[test]
    fn a_stream_accumulates_text_reasoning_and_calls() {
        let mut acc = ChatAccumulator::new(Limits::default());
        for data in [
            chunk(
                json!({"role":"assistant","reasoning_content":"think"}),
                None,
            ),
            chunk(json!({"content":"Hi"}), None),
            chunk(
                json!({"tool_calls":[{"index":0,"id":"a","type":"function",
                    "function":{"name":"f","arguments":"{\"x\""}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}),
                None,
            ),
            chunk(json!({}), Some("tool_calls")),
            DONE.to_owned(),
        ] {
            acc.push_data(&data).unwrap();
        }
        let reply = acc.finish().unwrap();
        assert_eq!(reply.text.as_deref(), Some("Hi"));
        assert_eq!(reply.reasoning.as_deref(), Some("think"));
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(reply.calls[0].id.as_deref(), Some("a"));
        assert_eq!(
            Value::Object(reply.calls[0].arguments.clone().unwrap()),
            json!({"x":1})
        );
        assert_eq!(reply.calls[1].name, "g");
        assert_eq!(reply.calls[1].arguments, Ok(Map::new()));
    }

    // covers R-18
    #[test]
    fn a_stream_without_an_end_is_cut_never_a_reply() {
        let mut acc = ChatAccumulator::new(Limits::default());
        acc.push_data(&chunk(json!({"content":"partial"}), None))
            .unwrap();
        acc.push_data(&chunk(
            json!({"tool_calls":[{"index":0,"id":"a","function":{"name":"rm","arguments":"{}"}}]}),
            None,
        ))
        .unwrap();
        assert!(matches!(acc.finish(), Err(WireError::Cut(_))));
        // [DONE] alone, or finish_reason alone, ends a stream.
        let mut acc = ChatAccumulator::new(Limits::default());
        acc.push_data(DONE).unwrap();
        assert!(acc.finish().is_ok());
    }

    /// The stream decoder's lean read of a chunk ([`ChunkIn`]) gives the deltas, and refuses
    /// with the same error, as [`ChatChunk::from_data`] and [`chunk_deltas`] do; and the
    /// borrowed chunk the writer writes is [`ChatChunk::new`]'s text.
    #[test]
    fn the_lean_chunk_read_and_write_are_the_chunks() {
        let full = |data: &str| {
            let mut out = Vec::new();
            ChatChunk::from_data(data)
                .and_then(|c| chunk_deltas(c, &mut out))
                .map(|()| out)
        };
        let lean = |data: &str| {
            let mut out = Vec::new();
            ChatDecoder.push("", data, &mut out).map(|()| out)
        };
        let cases = [
            chunk(json!({"role":"assistant","content":""}), None),
            chunk(json!({"content":"a\"b\n"}), None),
            chunk(json!({}), Some("stop")),
            chunk(json!({"reasoning_content":"r","reasoning":"s"}), None),
            chunk(
                json!({"tool_calls":[{"index":0,"id":"c","type":"function",
                    "function":{"name":"f","arguments":"{\"a\""}}]}),
                None,
            ),
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","service_tier":null,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#.to_owned(),
            r#"{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}"#.to_owned(),
            r#"{"choices":[],"usage":null}"#.to_owned(),
            r#"{}"#.to_owned(),
            r#"{"error":{"message":"overloaded"}}"#.to_owned(),
            r#"{"error":null,"choices":[]}"#.to_owned(),
            r#"{"error":1,"error":{"message":"second"}}"#.to_owned(),
            r#"{"x":1,"x":2,"choices":[]}"#.to_owned(),
            r#"{"id":1}"#.to_owned(),
            r#"{"id":null}"#.to_owned(),
            r#"{"model":["m"]}"#.to_owned(),
            r#"{"object":{}}"#.to_owned(),
            r#"{"created":-1}"#.to_owned(),
            r#"{"created":1.5}"#.to_owned(),
            r#"{"created":"1"}"#.to_owned(),
            r#"{"id":"a","id":"b"}"#.to_owned(),
            r#"{"choices":[],"choices":[]}"#.to_owned(),
            r#"{"usage":{},"usage":{}}"#.to_owned(),
            r#"{"choices":{}}"#.to_owned(),
            r#"{"choices":[{"delta":{"content":1}}]}"#.to_owned(),
            r#"{"ch\u006fices":[{"delta":{"content":"escaped key"}}]}"#.to_owned(),
            r#"["x","chat.completion.chunk",1,"m",[]]"#.to_owned(),
            r#""text""#.to_owned(),
            r#"null"#.to_owned(),
            r#"{"choices":[]} trailing"#.to_owned(),
            r#"{"choices":[]"#.to_owned(),
            "{not json".to_owned(),
        ];
        for data in &cases {
            assert_eq!(lean(data), full(data), "{data}");
        }
        let delta = ChatDelta {
            content: Some("a\"é".into()),
            ..ChatDelta::default()
        };
        let meta = ReplyMeta {
            id: "chatcmpl-1".into(),
            model: "m\"x".into(),
            created: 7,
            ..ReplyMeta::default()
        };
        let writer = ChunkWriter::new(meta);
        for finish in [None, Some("stop".to_owned())] {
            let mut c = ChatChunk::new("chatcmpl-1", 7, "m\"x", delta.clone());
            c.choices[0].finish_reason = finish.clone();
            assert_eq!(
                writer.chunk(delta.clone(), finish).data,
                serde_json::to_string(&c).unwrap()
            );
        }
    }

    /// A message taken into a reply reads as the one copied into it.
    #[test]
    fn a_message_taken_is_the_message_copied() {
        for message in [
            json!({"role": "assistant", "content": "text", "reasoning_content": "r"}),
            json!({"role": "assistant", "content": null, "reasoning": "r2", "thinking": "t"}),
            json!({"role": "assistant", "thinking": "t"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"x": 1},
                {"type": "text", "text": "b"}]}),
            json!({"role": "assistant", "content": 5}),
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1",
                "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                {"id": "", "function": {"name": "g", "arguments": {"b": 2}}}]}),
        ] {
            let m: ChatMessage = serde_json::from_value(message).unwrap();
            assert_eq!(m.clone().into_reply(), m.to_reply());
        }
    }

    #[test]
    fn stream_errors_and_bounds() {
        let mut acc = ChatAccumulator::new(Limits::default());
        let err = acc.push_data(r#"{"error":{"message":"overloaded"}}"#);
        assert!(matches!(err, Err(WireError::Upstream(m)) if m.contains("overloaded")));
        let mut acc = ChatAccumulator::new(Limits {
            max_calls: 2,
            max_bytes: 10,
        });
        for i in 0..2 {
            acc.push_data(&chunk(json!({"tool_calls":[{"index":i}]}), None))
                .unwrap();
        }
        let more = acc.push_data(&chunk(json!({"tool_calls":[{"index":2}]}), None));
        assert_eq!(more.unwrap_err(), WireError::TooManyCalls(2));
        let big = acc.push_data(&chunk(json!({"content":"01234567890"}), None));
        assert_eq!(big.unwrap_err(), WireError::TooLarge(10));
        assert!(matches!(
            acc.push_data("{not json"),
            Err(WireError::NotJson { .. })
        ));
    }

    #[test]
    fn whole_replies_decode_and_unknown_fields_survive() {
        let body = json!({"id":"x","object":"chat.completion","created":2,"model":"m",
            "system_fingerprint":"fp","choices":[{"index":0,"finish_reason":"tool_calls",
            "message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"f","arguments":"{\"a\":"}}]}}]})
        .to_string();
        let completion = ChatCompletion::from_body(&body).unwrap();
        assert_eq!(completion.extra["system_fingerprint"], "fp");
        let reply = completion.to_reply(&Limits::default()).unwrap();
        assert_eq!(reply.text, None);
        // Cut arguments are kept as an error with the raw text, never `{}`.
        assert_eq!(reply.calls[0].arguments_value(), json!("{\"a\":"));
        let request: ChatRequest = serde_json::from_value(json!({"model":"m","messages":[],
            "temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{},"strict":true}}]}))
        .unwrap();
        let back = serde_json::to_value(&request).unwrap();
        assert_eq!(back["temperature"], 0.2);
        assert_eq!(back["tools"][0]["function"]["strict"], true);
        assert!(
            ChatCompletion::from_body("{}")
                .unwrap()
                .to_reply(&Limits::default())
                .is_err()
        );
    }
}
