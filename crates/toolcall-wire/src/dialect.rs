//! The one trait every API dialect implements, and the neutral types it speaks.
//!
//! A gateway front end decodes its dialect's request into the neutral request, runs the one
//! turn, and encodes the neutral reply (or stream of [`Out`]s) back in its dialect; the
//! upstream side encodes the neutral request in the route's dialect and decodes the
//! upstream's reply (or stream events, into [`Delta`]s) back. So any front end reaches any
//! upstream through 2 conversions per dialect, never one per pair.
//!
//! The neutral request is [`ChatRequest`]: Chat Completions' conversation model (roles
//! `system`/`user`/`assistant`/`tool`, calls on assistant messages, each result a `tool`
//! message paired by `tool_call_id`, reasoning apart) holds everything the four dialects say
//! about tool calling, and the turn's own logic (emulation, retries, the tools cache) is
//! written against it. Tool declarations of a kind other than `function` (Anthropic's
//! server tools, Responses' `custom`/`namespace`/hosted tools) keep their `type` in
//! [`crate::chat::ChatTool::kind`] and their fields in `function.extra`: represented, not
//! dropped; an upstream dialect that cannot carry a kind leaves it out and says so.

use serde_json::{Map, Value};

use crate::chat::{ChatRequest, ChatTool, ToolCallDelta};
use crate::{Limits, Reply, WireCall, WireError};

/// A decoded client request: the neutral request and the fields the dialect knows but the
/// neutral request cannot carry (the caller logs them; they are never an error).
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    pub request: ChatRequest,
    pub ignored: Vec<String>,
}

/// Token counts, as far as the upstream said.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What a reply says about itself besides its content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyMeta {
    /// The reply's id (the upstream's when it sent one); item ids derive from it.
    pub id: String,
    pub model: String,
    /// Seconds since the epoch.
    pub created: u64,
    pub usage: Option<Usage>,
    /// The upstream's own usage object, for a client of the same dialect.
    pub raw_usage: Option<Value>,
    /// Fields of the upstream's reply no dialect models, for a client of the same dialect.
    pub extra: Map<String, Value>,
    /// Tools the client declared as `custom` (freeform input): a call to one is written
    /// as the dialect's custom tool call, its raw input the call's [`CUSTOM_INPUT`] argument.
    pub custom_tools: Vec<String>,
    /// Namespaces the client declared (Responses' `namespace` tools): a call to
    /// `NAMESPACE__tool` ([`qualified_name`]) is written with its `namespace` apart, where
    /// the dialect has one.
    pub namespaces: Vec<String>,
    /// OpenAI's built-in client tools the client declared and the model was offered as
    /// functions (`computer_use_preview`, `local_shell`,
    /// [`crate::built_in_tools::expand_openai`]): a call to one is written as its own item
    /// (`computer_call`, `local_shell_call`) where the dialect has one.
    pub openai_built_ins: Vec<String>,
}

/// What joins a namespace and its tool's name in the name offered to a model: OpenAI's and
/// Anthropic's APIs refuse `.` in tool names (`^[a-zA-Z0-9_-]{1,64}$` / `{1,128}`), and `__`
/// passes both and every text family's call markup.
pub const NAMESPACE_SEPARATOR: &str = "__";

/// The name a namespace's tool is offered to the model under: `NAMESPACE__tool`.
pub fn qualified_name(namespace: &str, tool: &str) -> String {
    format!("{namespace}{NAMESPACE_SEPARATOR}{tool}")
}

/// A qualified tool name ([`qualified_name`]) split when its namespace is one of
/// `namespaces` (the longest that fits): the tool's own name and its namespace.
pub fn split_namespace<'a>(name: &'a str, namespaces: &[String]) -> (&'a str, Option<&'a str>) {
    let found = namespaces
        .iter()
        .filter_map(|ns| {
            let tool = name
                .strip_prefix(ns.as_str())?
                .strip_prefix(NAMESPACE_SEPARATOR)?;
            (!tool.is_empty()).then_some((tool, &name[..ns.len()]))
        })
        .max_by_key(|(_, ns)| ns.len());
    match found {
        Some((tool, ns)) => (tool, Some(ns)),
        None => (name, None),
    }
}

/// The one argument a `custom` tool is offered to a model with: its raw text input.
pub const CUSTOM_INPUT: &str = "input";

/// The raw input of a call to a custom tool, from its arguments (JSON text): the
/// [`CUSTOM_INPUT`] string, else the arguments as they are.
pub fn custom_input(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => match m.get(CUSTOM_INPUT) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

/// One upstream stream event in neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Reasoning(String),
    /// A native call's part: the id and name when it starts, argument fragments after.
    Call(ToolCallDelta),
    /// The upstream said why it stopped (Chat's terms: `stop`, `tool_calls`, `length`).
    Finish(String),
    Usage(Usage),
    /// The stream's end marker (`[DONE]`, `message_stop`).
    Done,
}

/// What a turn gives a streaming client, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Text(String),
    Reasoning(String),
    /// A call is announced: its position among the calls sent, its id and its name.
    CallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// The announced call `index` is complete: its checked arguments (JSON text).
    CallEnd {
        index: usize,
        arguments: String,
    },
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The upstream finished; the finish reason in Chat's terms (`stop`, `tool_calls`,
    /// `length`).
    Finished(String),
    /// The stream failed: the client gets an error, no finish.
    Failed(String),
}

/// A reply, or a part of one, in a dialect's own JSON shape as a model may write it in its
/// text or a caller may hand it to a parser (`toolcall parse` on a provider's reply): a whole
/// reply, a message, an output item list, content parts or blocks. Its visible text and its
/// calls, in order; arguments decoded by the one policy ([`crate::arguments`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fragment {
    pub text: String,
    pub calls: Vec<WireCall>,
}

/// One server-sent event to write: an optional `event:` name and its `data:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn data(data: impl Into<String>) -> Self {
        SseEvent {
            event: None,
            data: data.into(),
        }
    }

    /// An event whose `event:` line names it (Anthropic, Responses).
    pub fn named(event: impl Into<String>, data: &Value) -> Self {
        SseEvent {
            event: Some(event.into()),
            data: data.to_string(),
        }
    }
}

/// An error to answer a client with, in any dialect's shape.
#[derive(Debug, Clone, Copy)]
pub struct ErrorInfo<'a> {
    pub status: u16,
    /// OpenAI's `type` (`invalid_request_error`, `upstream_error`, …).
    pub kind: &'a str,
    pub code: Option<&'a str>,
    pub message: &'a str,
}

/// Reads one dialect's stream events into [`Delta`]s.
pub trait StreamDecoder: Send {
    /// Takes one SSE event (its `event:` name, empty if none, and its data). An event
    /// reporting an error is an error.
    fn push(&mut self, event: &str, data: &str, out: &mut Vec<Delta>) -> Result<(), WireError>;
}

/// Writes a turn's outputs as one dialect's stream events.
pub trait StreamEncoder: Send {
    /// The events for `outs`.
    fn push(&mut self, outs: Vec<Out>, events: &mut Vec<SseEvent>);
    /// The events that end the stream.
    fn end(&mut self, end: End, events: &mut Vec<SseEvent>);
}

/// One API dialect: its requests, whole replies, streams, errors and where it is served.
/// Implemented by one unit struct per module and registered in [`crate::DIALECTS`].
pub trait Dialect: Send + Sync + 'static {
    /// The name used in configuration and on the command line (`chat`, `anthropic`, …).
    fn name(&self) -> &'static str;
    /// The path on an upstream's base URL (ending in `/v1` or `/v1beta`) of a request.
    fn path(&self, model: &str, stream: bool) -> String;
    /// The headers carrying an upstream's key: `(name, value)`.
    fn auth_headers(&self, key: &str) -> Vec<(&'static str, String)>;
    /// A client's request body in neutral terms.
    fn decode_request(&self, body: &[u8]) -> Result<Decoded, WireError>;
    /// The neutral request as this dialect's body (for an upstream of this dialect).
    fn encode_request(&self, request: &ChatRequest) -> Result<Value, WireError>;
    /// An upstream's whole reply.
    fn decode_reply(&self, body: &str, limits: &Limits) -> Result<(Reply, ReplyMeta), WireError>;
    /// A whole reply as this dialect's body.
    fn encode_reply(&self, reply: &Reply, meta: &ReplyMeta) -> Value;
    /// [`Dialect::encode_request`] as the JSON text that goes on the wire. A dialect may
    /// write it without building the `Value` first; the text must parse to the same value.
    fn encode_request_bytes(&self, request: &ChatRequest) -> Result<Vec<u8>, WireError> {
        let value = self.encode_request(request)?;
        serde_json::to_vec(&value).map_err(|e| WireError::Encode(e.to_string()))
    }
    /// [`Dialect::encode_reply`] as the JSON text that goes on the wire. A dialect may
    /// write it without building the `Value` first; the text must parse to the same value.
    fn encode_reply_bytes(&self, reply: &Reply, meta: &ReplyMeta) -> Vec<u8> {
        serde_json::to_vec(&self.encode_reply(reply, meta)).unwrap_or_default()
    }
    /// A reader of this dialect's stream.
    fn stream_decoder(&self, limits: Limits) -> Box<dyn StreamDecoder>;
    /// A writer of this dialect's stream.
    fn stream_encoder(&self, meta: ReplyMeta) -> Box<dyn StreamEncoder>;
    /// An error body in this dialect's shape.
    fn encode_error(&self, error: &ErrorInfo<'_>) -> Value;
    /// Neutral function declarations as this dialect's `tools` value, what a request of
    /// this dialect would carry (`toolcall tools render`).
    fn declare_tools(&self, tools: &[ChatTool]) -> Value;
    /// Whether a tool result carries images in this dialect (Messages' `tool_result`
    /// blocks, Gemini's `functionResponse.parts`, Responses' `function_call_output`): a
    /// producer of results (an agent's conversation) then leaves a result's images in it,
    /// as the neutral `tool` message's image parts. Where it does not (Chat Completions,
    /// whose reference server takes images in user messages only), they follow the results
    /// in a user message. No by default.
    fn result_images(&self) -> bool {
        false
    }
    /// Fields a whole reply of this dialect repeats from the client's request (Responses
    /// echoes `parallel_tool_calls` and `tools`), read from the request's body; none by
    /// default. They go into [`ReplyMeta::extra`].
    fn reply_echo(&self, request_body: &[u8]) -> Map<String, Value> {
        let _ = request_body;
        Map::new()
    }
    /// `value` read as a [`Fragment`] of this dialect's shape; `None` when it is not one
    /// (none by default).
    fn read_fragment(&self, value: &Value) -> Option<Fragment> {
        let _ = value;
        None
    }
    /// A tools file's entry (`--tools FILE`, a `tools` document) in this dialect's
    /// declaration shape, as flat declarations: `name`, `description`, `parameters` (JSON
    /// Schema) and the entry's other keys beside them (a tools file's own keys, `enabled`,
    /// `backend`, …). `None` when the entry is not in this dialect's shape; one entry may
    /// hold several declarations (Gemini's `functionDeclarations`), each read or refused on
    /// its own.
    fn tools_file_entry(&self, entry: &Map<String, Value>) -> Option<Vec<FlatDeclaration>> {
        let _ = entry;
        None
    }
}

/// One declaration of a tools file read flat ([`Dialect::tools_file_entry`]), or why it
/// cannot be.
pub type FlatDeclaration = Result<Map<String, Value>, String>;

/// Accumulates [`Delta`]s of any dialect into one [`Reply`]: a stream is a reply only when
/// it said it finished.
#[derive(Debug, Default)]
pub struct Accumulator {
    limits: Limits,
    text: Option<String>,
    reasoning: Option<String>,
    calls: crate::chat::CallAssembler,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    bytes: usize,
}

impl Accumulator {
    pub fn new(limits: Limits) -> Self {
        Accumulator {
            limits,
            ..Accumulator::default()
        }
    }

    pub fn push(&mut self, delta: &Delta) -> Result<(), WireError> {
        match delta {
            Delta::Text(t) => {
                self.grow(t.len())?;
                self.text.get_or_insert_with(String::new).push_str(t);
            }
            Delta::Reasoning(r) => {
                self.grow(r.len())?;
                self.reasoning.get_or_insert_with(String::new).push_str(r);
            }
            Delta::Call(c) => {
                let n = self.calls.push(c, &self.limits)?;
                self.grow(n)?;
            }
            Delta::Finish(r) => self.finish_reason = Some(r.clone()),
            Delta::Usage(u) => self.usage = Some(*u),
            Delta::Done => self.done = true,
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

    pub fn is_finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// The reply; [`WireError::Cut`] when the stream never said it finished.
    pub fn finish(self) -> Result<(Reply, Option<Usage>), WireError> {
        if !self.is_finished() {
            return Err(WireError::Cut(
                "the stream ended before it said it finished".into(),
            ));
        }
        let reply = Reply {
            text: self.text,
            reasoning: self.reasoning,
            calls: self.calls.finish(),
            finish_reason: self.finish_reason,
        };
        Ok((reply, self.usage))
    }
}

/// The arguments of a call as a JSON value for a dialect that carries them as an object:
/// the decoded object, or `{}` for arguments that are not one (the checked turn never
/// sends such a call as valid; a `pass` policy's raw text has no object form).
pub fn arguments_object(call: &WireCall) -> Value {
    match &call.arguments {
        Ok(m) => Value::Object(m.clone()),
        Err(_) => Value::Object(Map::new()),
    }
}

/// Chat's finish reason for a reply, from whether it holds calls and what the upstream said.
/// `length` stays `length`: a reply cut by the token limit is never passed as finished.
pub fn chat_finish(reply: &Reply) -> String {
    if reply.finish_reason.as_deref() == Some("length") {
        return "length".into();
    }
    if !reply.calls.is_empty() {
        return "tool_calls".into();
    }
    match reply.finish_reason.as_deref() {
        None | Some("tool_calls") => "stop".into(),
        Some(r) => r.to_owned(),
    }
}

/// An item id derived from a reply's id: unique within the reply, no randomness needed.
pub fn item_id(prefix: &str, reply_id: &str, n: usize) -> String {
    let base = reply_id
        .split_once('_')
        .map_or(reply_id, |(_, rest)| rest)
        .trim_start_matches("chatcmpl-");
    format!("{prefix}_{base}{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_split_back_on_declared_namespaces_only() {
        let ns = vec!["multi_agent_v1".to_owned(), "multi".to_owned()];
        let q = qualified_name("multi_agent_v1", "spawn_agent");
        assert_eq!(q, "multi_agent_v1__spawn_agent");
        assert_eq!(
            split_namespace(&q, &ns),
            ("spawn_agent", Some("multi_agent_v1"))
        );
        assert_eq!(split_namespace("multi__x", &ns), ("x", Some("multi")));
        assert_eq!(split_namespace("other__x", &ns), ("other__x", None));
        assert_eq!(split_namespace("multi__", &ns), ("multi__", None));
        assert_eq!(split_namespace("multi.x", &ns), ("multi.x", None));
    }
}
