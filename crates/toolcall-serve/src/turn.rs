//! The turn logic every endpoint shares: what the client offered (tools, `tool_choice`,
//! `parallel_tool_calls`), reading the upstream's reply (calls written as text by any family
//! toolcall reads, native calls passed through), checking each call against the offered
//! tools' schemas (repairs and coercions applied and reported), and the invalid-call policy.
//!
//! A whole reply is checked at once ([`Turn::check_reply`]); a streamed one goes through a
//! [`StreamTurn`], which gives text and reasoning as they arrive and each call once it is
//! complete and checked (a call is never sent before it is known to be valid).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{CallId, Registry, StreamEvent, ToolCall, ToolError, ToolSpec};
use toolcall_parse::{FormatSelection, ParseOptions, StreamParser};
use toolcall_wire::chat::{CallAssembler, ChatChunk, ChatMessage, ChatRequest};
use toolcall_wire::{Limits, Reply, WireCall, encode_arguments};

use crate::config::{Config, InvalidCallPolicy};
use crate::error::ApiError;
use crate::upstream::Route;

/// The origin format of calls the upstream sent natively.
pub const NATIVE: &str = "openai_chat";

/// What `tool_choice` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Named(String),
}

impl ToolChoice {
    fn from_request(v: Option<&Value>) -> Self {
        match v {
            Some(Value::String(s)) if s == "none" => ToolChoice::None,
            Some(Value::String(s)) if s == "required" => ToolChoice::Required,
            Some(Value::Object(m)) => m
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)
                .map_or(ToolChoice::Auto, |n| ToolChoice::Named(n.to_owned())),
            _ => ToolChoice::Auto,
        }
    }
}

/// A call that failed its check.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub call: ToolCall,
    pub error: ToolError,
}

/// A reply after parsing and checking.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    pub text: Option<String>,
    pub reasoning: Option<String>,
    /// Valid calls, arguments repaired and coerced.
    pub calls: Vec<ToolCall>,
    pub rejected: Vec<Rejected>,
    /// The upstream's finish reason.
    pub finish_reason: Option<String>,
}

impl Checked {
    /// `tool_calls` when there are calls, else the upstream's reason (`stop` if none).
    pub fn finish_reason(&self) -> String {
        if !self.calls.is_empty() {
            "tool_calls".into()
        } else {
            match self.finish_reason.as_deref() {
                None | Some("tool_calls") => "stop".into(),
                Some(r) => r.to_owned(),
            }
        }
    }

    /// Every repair applied, as `call_id=kind,kind; …` for the `x-toolcall-repairs` header
    /// (at most 32 calls, ASCII only).
    pub fn repairs_header(&self) -> Option<String> {
        let parts: Vec<String> = self
            .calls
            .iter()
            .filter(|c| !c.origin.repairs.is_empty())
            .take(32)
            .map(|c| {
                let kinds: Vec<&str> = c.origin.repairs.iter().map(|r| r.kind.as_str()).collect();
                format!("{}={}", c.call_id, kinds.join(","))
            })
            .filter(|s| s.is_ascii())
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    pub fn repair_count(&self) -> usize {
        self.calls.iter().map(|c| c.origin.repairs.len()).sum()
    }
}

/// One request's tools and rules.
#[derive(Clone)]
pub struct Turn {
    pub registry: Arc<Registry>,
    /// Offered names the registry could not take (unusual characters): passed unchecked.
    pub unchecked: HashSet<String>,
    pub parse: ParseOptions,
    pub policy: InvalidCallPolicy,
    pub parallel_tool_calls: bool,
    pub tool_choice: ToolChoice,
    /// Whether the client offered tools at all; without tools the text passes untouched.
    pub has_tools: bool,
    pub max_reply_bytes: usize,
    /// The request as the upstream gets it (rewritten when tools are emulated).
    pub upstream_request: ChatRequest,
}

impl Turn {
    /// The turn for a Chat Completions request going to `route`.
    pub fn for_chat(
        request: &ChatRequest,
        route: &Route,
        config: &Config,
    ) -> Result<Self, ApiError> {
        let mut registry = Registry::new();
        let mut unchecked = HashSet::new();
        for t in request.tools.iter().flatten() {
            let f = &t.function;
            let parameters = f
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            let spec = ToolSpec::new(
                &f.name,
                f.description.clone().unwrap_or_default(),
                parameters,
            );
            if let Err(e) = registry.add_spec(spec) {
                tracing::warn!(tool = %f.name, error = %e, "tool kept unchecked");
                unchecked.insert(f.name.clone());
            }
        }
        let format = match &route.format {
            Some(f) => {
                FormatSelection::from_name(f).map_err(|e| ApiError::bad_request(e.to_string()))?
            }
            None => FormatSelection::for_model(&request.model),
        };
        let has_tools = request.tools.as_ref().is_some_and(|t| !t.is_empty());
        let emulated = route
            .emulate_tools
            .then(|| crate::emulate::format_for(route.format.as_deref()))
            .flatten()
            .filter(|_| has_tools);
        let upstream_request = match emulated {
            Some(f) => crate::emulate::rewrite(request, &registry, f)?,
            None => request.clone(),
        };
        let registry = Arc::new(registry);
        Ok(Turn {
            upstream_request,
            parse: ParseOptions {
                format,
                tools: Some(registry.clone()),
                ..ParseOptions::default()
            },
            registry,
            unchecked,
            policy: config.invalid_calls,
            parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
            tool_choice: ToolChoice::from_request(request.tool_choice.as_ref()),
            has_tools,
            max_reply_bytes: config.max_reply_bytes,
        })
    }

    /// A native call from the upstream as a toolcall call (arguments by the wire policy).
    fn native(&self, c: &WireCall) -> ToolCall {
        let mut call = ToolCall::new(c.name.clone(), c.arguments_value(), NATIVE);
        if let Some(id) = &c.id {
            call.call_id = CallId::from(id.as_str());
        }
        call
    }

    /// Checks one call: offered, allowed by `tool_choice`, arguments valid after repairs.
    pub fn check(&self, mut call: ToolCall) -> Result<ToolCall, Box<Rejected>> {
        let reject = |call: ToolCall, error: ToolError| Err(Box::new(Rejected { call, error }));
        if let ToolChoice::Named(n) = &self.tool_choice
            && n != &call.name
        {
            let e = ToolError::new(
                toolcall_core::ErrorCode::UnknownTool,
                format!("tool_choice asks for {n:?}, not {:?}", call.name),
            );
            return reject(call, e);
        }
        if self.unchecked.contains(&call.name) {
            return Ok(call);
        }
        match self.registry.validate_call(&mut call) {
            Ok(()) => Ok(call),
            Err(error) => reject(call, error),
        }
    }

    /// Parses and checks a whole reply.
    pub fn check_reply(&self, reply: Reply) -> Checked {
        let mut out = Checked {
            reasoning: reply.reasoning.clone(),
            finish_reason: reply.finish_reason.clone(),
            ..Checked::default()
        };
        let mut found = Vec::new();
        match reply.text {
            Some(text) if self.has_tools => {
                let parsed = toolcall_parse::parse(&text, &self.parse);
                log_diagnostics(&parsed.diagnostics);
                if !parsed.reasoning.is_empty() {
                    let r = out.reasoning.get_or_insert_with(String::new);
                    r.push_str(&parsed.reasoning.concat());
                }
                out.text = Some(parsed.text);
                found = parsed.calls;
            }
            text => out.text = text,
        }
        found.extend(reply.calls.iter().map(|c| self.native(c)));
        for call in found {
            self.admit(call, &mut out);
        }
        out
    }

    /// Checks `call` and files it as valid or rejected, honouring `parallel_tool_calls`.
    fn admit(&self, call: ToolCall, out: &mut Checked) {
        if self.tool_choice == ToolChoice::None {
            let e = ToolError::new(
                toolcall_core::ErrorCode::UnknownTool,
                "tool_choice is \"none\"",
            );
            out.rejected.push(Rejected { call, error: e });
            return;
        }
        match self.check(call) {
            Ok(c) if !self.parallel_tool_calls && !out.calls.is_empty() => {
                let e = ToolError::new(
                    toolcall_core::ErrorCode::InvalidArguments,
                    "parallel_tool_calls is false: only the first call is kept",
                );
                out.rejected.push(Rejected { call: c, error: e });
            }
            Ok(c) => out.calls.push(c),
            Err(r) => out.rejected.push(*r),
        }
    }

    /// Applies the policy to rejected calls once no retry is left: `pass` keeps them as they
    /// came, `drop` and `retry` leave them out with a note in the text.
    pub fn settle(&self, checked: &mut Checked) {
        for r in std::mem::take(&mut checked.rejected) {
            tracing::warn!(call_id = %r.call.call_id, tool = %r.call.name, error = %r.error.message, policy = ?self.policy, "invalid call");
            if self.policy == InvalidCallPolicy::Pass {
                checked.calls.push(r.call);
            } else {
                let text = checked.text.get_or_insert_with(String::new);
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&drop_note(&r));
            }
        }
    }

    /// The request asking the upstream again, told why its calls were rejected.
    pub fn retry_request(&self, checked: &Checked) -> ChatRequest {
        let mut retry = self.upstream_request.clone();
        let said = checked
            .rejected
            .iter()
            .map(|r| format!("{}({})", r.call.name, encode_arguments(&r.call.arguments)))
            .collect::<Vec<_>>()
            .join(", ");
        retry
            .messages
            .push(ChatMessage::text("assistant", format!("I called: {said}")));
        let errors = checked
            .rejected
            .iter()
            .map(|r| format!("- {}: {}", r.call.name, r.error.message))
            .collect::<Vec<_>>()
            .join("\n");
        retry.messages.push(ChatMessage::text(
            "user",
            format!(
                "Those tool calls were not valid:\n{errors}\nAnswer again, with valid tool calls."
            ),
        ));
        retry
    }
}

/// The note left in the text for a dropped call.
pub fn drop_note(r: &Rejected) -> String {
    format!(
        "[toolcall: a call to {:?} was dropped: {}]",
        r.call.name, r.error.message
    )
}

fn log_diagnostics(diagnostics: &[toolcall_core::Diagnostic]) {
    for d in diagnostics.iter().take(16) {
        tracing::debug!(level = ?d.level, message = %d.message, "parse");
    }
}

/// What a streamed turn gives out, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Text(String),
    Reasoning(String),
    /// A complete, checked call, with its position among the calls sent.
    Call(usize, ToolCall),
}

/// A streamed turn: feed upstream chunks, get text, reasoning and checked calls.
pub struct StreamTurn {
    turn: Turn,
    parser: Option<StreamParser>,
    natives: CallAssembler,
    sent_calls: usize,
    /// Valid calls so far (for `parallel_tool_calls` and the finish reason).
    pub checked: Checked,
    /// The upstream said it finished (`finish_reason` or `[DONE]`).
    pub finished: bool,
    bytes: usize,
}

impl StreamTurn {
    pub fn new(turn: Turn) -> Self {
        let parser = turn
            .has_tools
            .then(|| StreamParser::new(turn.parse.clone()));
        StreamTurn {
            turn,
            parser,
            natives: CallAssembler::default(),
            sent_calls: 0,
            checked: Checked::default(),
            finished: false,
            bytes: 0,
        }
    }

    /// Takes one upstream SSE data line: a chunk, or `[DONE]`. Errors on an error chunk, on
    /// data that is not a chunk, and when the reply grows past the bound.
    pub fn push_data(&mut self, data: &str, out: &mut Vec<Out>) -> Result<(), ApiError> {
        if data.trim() == toolcall_wire::chat::DONE {
            self.finished = true;
            return Ok(());
        }
        let chunk =
            ChatChunk::from_data(data).map_err(|e| ApiError::upstream_reply(&e.to_string()))?;
        if let Some(err) = chunk.extra.get("error") {
            let message = toolcall_wire::excerpt(&err.to_string(), 500);
            return Err(ApiError::upstream_reply(&message));
        }
        self.push(&chunk, out)
    }

    /// Takes one upstream chunk. Errors when the reply grows past the bound.
    pub fn push(&mut self, chunk: &ChatChunk, out: &mut Vec<Out>) -> Result<(), ApiError> {
        let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) else {
            return Ok(());
        };
        let d = &choice.delta;
        if let Some(r) = &d.reasoning_content {
            self.grow(r.len())?;
            out.push(Out::Reasoning(r.clone()));
        }
        if let Some(t) = &d.content {
            self.grow(t.len())?;
            match &mut self.parser {
                Some(p) => {
                    let events = p.push(t);
                    self.events(events, out);
                }
                None => out.push(Out::Text(t.clone())),
            }
        }
        for tc in d.tool_calls.iter().flatten() {
            let added = self
                .natives
                .push(tc, &Limits::default())
                .map_err(|e| ApiError::upstream_reply(&e.to_string()))?;
            self.grow(added)?;
        }
        if let Some(r) = &choice.finish_reason {
            self.checked.finish_reason = Some(r.clone());
            self.finished = true;
        }
        Ok(())
    }

    fn grow(&mut self, n: usize) -> Result<(), ApiError> {
        self.bytes += n;
        if self.bytes > self.turn.max_reply_bytes {
            return Err(ApiError::upstream_reply(&format!(
                "the reply is larger than {} bytes",
                self.turn.max_reply_bytes
            )));
        }
        Ok(())
    }

    fn events(&mut self, events: Vec<StreamEvent>, out: &mut Vec<Out>) {
        for e in events {
            match e {
                StreamEvent::Text { text } => out.push(Out::Text(text)),
                StreamEvent::Reasoning { text } => out.push(Out::Reasoning(text)),
                StreamEvent::CallFinished { call, .. } => self.call(call, out),
                StreamEvent::Diagnostic { diagnostic } => {
                    log_diagnostics(std::slice::from_ref(&diagnostic))
                }
                StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
            }
        }
    }

    fn call(&mut self, call: ToolCall, out: &mut Vec<Out>) {
        let before = self.checked.calls.len();
        self.turn.admit(call, &mut self.checked);
        if self.checked.calls.len() > before
            && let Some(c) = self.checked.calls.last()
        {
            out.push(Out::Call(self.sent_calls, c.clone()));
            self.sent_calls += 1;
        }
        // A rejected call cannot be retried mid-stream: pass it or drop it with a note.
        for r in std::mem::take(&mut self.checked.rejected) {
            tracing::warn!(call_id = %r.call.call_id, tool = %r.call.name, error = %r.error.message, "invalid call in a stream");
            if self.turn.policy == InvalidCallPolicy::Pass {
                out.push(Out::Call(self.sent_calls, r.call.clone()));
                self.sent_calls += 1;
                self.checked.calls.push(r.call);
            } else {
                out.push(Out::Text(format!("\n\n{}", drop_note(&r))));
            }
        }
    }

    /// The end of a complete upstream stream: what the parser held back, then native calls.
    pub fn finish(&mut self, out: &mut Vec<Out>) {
        if let Some(p) = self.parser.take() {
            let events = p.finish();
            self.events(events, out);
        }
        for wire in std::mem::take(&mut self.natives).finish() {
            let call = self.turn.native(&wire);
            self.call(call, out);
        }
    }
}
