//! The turn logic every endpoint shares: what the client offered (tools, `tool_choice`,
//! `parallel_tool_calls`), reading the upstream's reply (calls written as text by any family
//! toolcall reads, native calls passed through), checking each call against the offered
//! tools' schemas (repairs and coercions applied and reported), and the invalid-call policy.
//!
//! A whole reply is checked at once ([`Turn::check_reply`]); a streamed one goes through a
//! [`StreamTurn`], which gives text and reasoning as they arrive, announces each call when its
//! name is known and passes, and gives its arguments once the call is complete and checked.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{CallId, Registry, StreamEvent, ToolCall, ToolError};
use toolcall_parse::{FormatSelection, ParseOptions, ReplyEnd, StreamParser};
use toolcall_wire::chat::{CallAssembler, ChatMessage, ChatRequest, ToolCallDelta};
use toolcall_wire::dialect::Delta;
use toolcall_wire::{Limits, Reply, WireCall, encode_arguments};

use crate::config::{AnnounceCalls, Config, InvalidCallPolicy};
use crate::emulate::{Trigger, TriggerGate};
use crate::error::ApiError;
use crate::tools_cache::{CompiledTools, ToolsCache};
use crate::upstream::Route;

/// Model names whose format each thread keeps ([`format_for_model`]).
const FORMAT_MEMO: usize = 16;

/// [`FormatSelection::for_model`], kept for the last [`FORMAT_MEMO`] model names this
/// thread saw: matching a name against the model table cost about 6 000 instructions, a
/// twentieth of a whole request's own work, and clients send the same few names.
fn format_for_model(model: &str) -> FormatSelection {
    thread_local! {
        static MEMO: std::cell::RefCell<Vec<(String, FormatSelection)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let known = MEMO.with_borrow(|memo| {
        memo.iter()
            .find(|(name, _)| name == model)
            .map(|(_, format)| format.clone())
    });
    if let Some(format) = known {
        return format;
    }
    let format = FormatSelection::for_model(model);
    // A name is bounded by the request body; one longer than the table's names is not kept.
    if model.len() <= 256 {
        MEMO.with_borrow_mut(|memo| {
            if memo.len() == FORMAT_MEMO {
                memo.remove(0);
            }
            memo.push((model.to_owned(), format.clone()));
        });
    }
    format
}

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
    /// The reply made no call although `tool_choice` asks for one: why it falls short.
    pub missing_call: Option<String>,
    /// The upstream's finish reason.
    pub finish_reason: Option<String>,
    /// What `constrain` sent upstream (the `x-toolcall-constrain` header).
    pub constrain_note: Option<String>,
}

impl Checked {
    /// Whether the `retry` policy asks the upstream again: a call was rejected, or none was
    /// made where `tool_choice` asks for one.
    pub fn needs_retry(&self) -> bool {
        !self.rejected.is_empty() || self.missing_call.is_some()
    }

    /// `tool_calls` when there are calls, else the upstream's reason (`stop` if none).
    /// `length` stays `length`: a reply cut by the token limit is never passed as finished.
    pub fn finish_reason(&self) -> String {
        if self.finish_reason.as_deref() == Some(LENGTH) {
            LENGTH.into()
        } else if !self.calls.is_empty() {
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
    /// The request's tools as compiled (with the offered names passed unchecked).
    pub tools: Arc<CompiledTools>,
    pub parse: ParseOptions,
    pub policy: InvalidCallPolicy,
    /// When streamed calls are announced.
    pub announce: AnnounceCalls,
    pub parallel_tool_calls: bool,
    pub tool_choice: ToolChoice,
    /// Whether the client offered tools at all. Without tools the reply is parsed for
    /// reasoning and control tokens only ([`ParseOptions::reasoning_only`]): reasoning is
    /// split the same way, and call-like text stays text.
    pub has_tools: bool,
    pub max_reply_bytes: usize,
    /// What `constrain` sent upstream (the `x-toolcall-constrain` header), if it is on.
    pub constrain_note: Option<String>,
    /// The request's `custom` tools (offered as functions of one string; see
    /// [`crate::tool_kinds`]): their grammars check their calls.
    pub custom: Arc<crate::tool_kinds::CustomTools>,
    /// Namespaces whose tools are offered under qualified names (`ns__tool`).
    pub namespaces: Vec<String>,
    /// OpenAI's built-in tools offered as functions (`computer_use_preview`, `local_shell`).
    pub openai_built_ins: Vec<String>,
    /// Emulated tools: the marker each call begins with; the reply is read through a
    /// [`TriggerGate`] for it.
    pub trigger: Option<Trigger>,
    /// The request as the upstream gets it (rewritten when tools are emulated): `stream`
    /// is `true` for a streamed turn, absent (with no `stream_options`) for a whole one.
    pub upstream_request: ChatRequest,
}

impl Turn {
    /// The turn for a Chat Completions request going to `route`; its tools compiled through
    /// `tools` (once per distinct declaration).
    pub fn for_chat(
        mut request: ChatRequest,
        route: &Route,
        config: &Config,
        tools: &ToolsCache,
    ) -> Result<Self, ApiError> {
        let namespaces = crate::tool_kinds::expand_namespaces(&mut request);
        let openai_built_ins = crate::tool_kinds::expand_built_ins(&mut request, route.api);
        let custom = Arc::new(crate::tool_kinds::CustomTools::take(&mut request)?);
        let offered = request.tools.as_ref().map_or(0, Vec::len);
        if offered > config.max_tools {
            // Compiled schemas cost tens of times their text: bounded before compiling.
            return Err(ApiError::bad_request(format!(
                "the request offers {offered} tools; this gateway accepts at most {} \
                 (max_tools in its config)",
                config.max_tools
            )));
        }
        let compiled = tools.get(request.tools.as_deref().unwrap_or_default())?;
        let mut format = match &route.format {
            Some(f) => {
                FormatSelection::from_name(f).map_err(|e| ApiError::bad_request(e.to_string()))?
            }
            None => format_for_model(&request.model),
        };
        let has_tools = request.tools.as_ref().is_some_and(|t| !t.is_empty());
        // Text fields as `&str`: written as the same JSON strings as `%` would, without
        // going through `Display`.
        tracing::info!(
            model = request.model.as_str(),
            stream = request.stream == Some(true),
            tools = request.tools.as_ref().map_or(0, Vec::len),
            upstream = route.shown_url(),
            emulate_tools = route.emulate_tools,
            "request"
        );
        // llama.cpp refuses a grammar with `tools`: a GBNF route renders them into the prompt.
        let emulated = (route.emulate_tools
            || route.constrain == crate::constrain::Constrain::Gbnf)
            .then(|| crate::emulate::format_for(route.format.as_deref()))
            .flatten()
            .filter(|_| has_tools);
        let stream = request.stream == Some(true);
        let parallel_tool_calls = request.parallel_tool_calls.unwrap_or(true);
        let tool_choice = ToolChoice::from_request(request.tool_choice.as_ref());
        let asked = crate::constrain::Asked::of(&request);
        // Emulated: the reply is read with the family the prompt taught, calls only after
        // this request's trigger.
        let trigger = emulated.map(|_| Trigger::random());
        let mut upstream_request = match (emulated, &trigger) {
            (Some(f), Some(t)) => {
                format = FormatSelection::Only(f.as_str().to_owned());
                crate::emulate::rewrite(&request, &compiled.registry, f, t)?
            }
            _ => request,
        };
        let constrain_note = has_tools
            .then(|| {
                let family = match emulated {
                    Some(f) => Some(f.as_str()),
                    None => crate::constrain::family_of(&format),
                };
                let req = &mut upstream_request;
                let trigger = trigger.as_ref().map(Trigger::as_str);
                let inputs = custom.input_grammars();
                crate::constrain::apply(
                    route.constrain,
                    &asked,
                    req,
                    family,
                    &compiled,
                    trigger,
                    &inputs,
                )
            })
            .flatten();
        // Set once here, so each upstream request is serialised straight from this struct.
        if stream {
            upstream_request.stream = Some(true);
        } else {
            upstream_request.stream = None;
            upstream_request.extra.remove("stream_options");
        }
        let registry = compiled.registry.clone();
        Ok(Turn {
            custom,
            namespaces,
            openai_built_ins,
            constrain_note,
            trigger,
            upstream_request,
            parse: ParseOptions {
                format,
                tools: Some(registry.clone()),
                reasoning_calls: route.reasoning_calls,
                reasoning_only: !has_tools,
                ..ParseOptions::default()
            },
            registry,
            tools: compiled,
            policy: config.invalid_calls,
            announce: config.announce_calls,
            parallel_tool_calls,
            tool_choice,
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

    /// The checks a call can fail by its name alone, with `sent` calls already sent:
    /// `tool_choice`, offered, `parallel_tool_calls`.
    pub fn check_name(&self, name: &str, sent: usize) -> Result<(), ToolError> {
        let refuse = |code, message: String| Err(ToolError::new(code, message));
        match &self.tool_choice {
            ToolChoice::None => {
                return refuse(
                    toolcall_core::ErrorCode::UnknownTool,
                    "tool_choice is \"none\"".into(),
                );
            }
            ToolChoice::Named(n) if n != name => {
                return refuse(
                    toolcall_core::ErrorCode::UnknownTool,
                    format!("tool_choice asks for {n:?}, not {name:?}"),
                );
            }
            _ => {}
        }
        if !self.tools.unchecked.contains(name) && !self.registry.contains(name) {
            return refuse(
                toolcall_core::ErrorCode::UnknownTool,
                format!("{name:?} is not a tool of this request"),
            );
        }
        if !self.parallel_tool_calls && sent > 0 {
            return refuse(
                toolcall_core::ErrorCode::InvalidArguments,
                "parallel_tool_calls is false: only the first call is kept".into(),
            );
        }
        Ok(())
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
        if !self.tools.unchecked.contains(&call.name)
            && let Err(error) = self.registry.validate_call(&mut call)
        {
            return reject(call, error);
        }
        match self.custom.check_call(&call.name, &call.arguments) {
            Ok(()) => Ok(call),
            Err(error) => reject(call, error),
        }
    }

    /// Parses and checks a whole reply.
    pub fn check_reply(&self, reply: Reply) -> Checked {
        let Reply {
            text,
            reasoning,
            calls,
            finish_reason,
        } = reply;
        let length = finish_reason.as_deref() == Some(LENGTH);
        let mut out = Checked {
            constrain_note: self.constrain_note.clone(),
            reasoning,
            finish_reason,
            ..Checked::default()
        };
        let mut found = Vec::new();
        // Parsed with or without tools: without, for reasoning and control tokens only.
        if let Some(text) = text {
            let options = ParseOptions {
                reply_end: reply_end(out.finish_reason.as_deref()),
                ..self.parse.clone()
            };
            let parsed = match &self.trigger {
                Some(t) => crate::emulate::parse_triggered(&text, &options, t),
                None => toolcall_parse::parse(&text, &options),
            };
            log_diagnostics(&parsed.diagnostics);
            if !parsed.reasoning.is_empty() {
                let r = out.reasoning.get_or_insert_with(String::new);
                r.push_str(&parsed.reasoning.concat());
            }
            out.text = Some(parsed.text);
            found = parsed.calls;
        }
        for c in &calls {
            match cut_short(c, length) {
                Some(why) => push_note(&mut out.text, &cut_note(c, why)),
                None => found.push(self.native(c)),
            }
        }
        for call in found {
            self.admit(call, &mut out);
        }
        if out.calls.is_empty() && out.rejected.is_empty() {
            out.missing_call = self.missing_call();
        }
        out
    }

    /// Why a reply without calls falls short of `tool_choice` (`required`, or a named tool),
    /// when it does.
    pub fn missing_call(&self) -> Option<String> {
        if !self.has_tools {
            return None;
        }
        match &self.tool_choice {
            ToolChoice::Required => {
                Some("tool_choice is \"required\": the answer must call a tool".into())
            }
            ToolChoice::Named(n) => Some(format!("tool_choice asks for a call to {n:?}")),
            ToolChoice::Auto | ToolChoice::None => None,
        }
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
        if let Some(why) = checked.missing_call.take() {
            tracing::warn!(policy = ?self.policy, reason = %why, "a reply without the call tool_choice asks for");
            if self.policy != InvalidCallPolicy::Pass {
                push_note(&mut checked.text, &missing_call_note(&why));
            }
        }
        for r in std::mem::take(&mut checked.rejected) {
            log_rejected(&r, self.policy, "invalid call");
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
        if checked.rejected.is_empty()
            && let Some(why) = &checked.missing_call
        {
            let said = checked.text.clone().unwrap_or_default();
            let said: String = said.chars().take(MAX_SAID_BYTES / 4).collect();
            retry.messages.push(ChatMessage::text("assistant", said));
            retry.messages.push(ChatMessage::text(
                "user",
                format!(
                    "That answer made no tool call, but {why}. Answer again, with a tool call."
                ),
            ));
            return retry;
        }
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

impl Turn {
    /// The request asking the upstream again in a stream: the client already has `said`
    /// and `sent`, so the model is asked only for what replaces the rejected call.
    pub fn stream_retry_request(
        &self,
        said: &str,
        sent: &[ToolCall],
        rejected: &Rejected,
    ) -> ChatRequest {
        let mut retry = self.upstream_request.clone();
        let calls = |calls: &mut dyn Iterator<Item = &ToolCall>| {
            calls
                .map(|c| format!("{}({})", c.name, encode_arguments(&c.arguments)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut said = said.trim().to_owned();
        let all = calls(&mut sent.iter().chain(std::iter::once(&rejected.call)));
        if !said.is_empty() {
            said.push_str("\n\n");
        }
        said.push_str(&format!("I called: {all}"));
        retry.messages.push(ChatMessage::text("assistant", said));
        let kept = if sent.is_empty() {
            String::new()
        } else {
            format!("These calls were made: {}.\n", calls(&mut sent.iter()))
        };
        retry.messages.push(ChatMessage::text(
            "user",
            format!(
                "{kept}This tool call was not valid:\n- {}: {}\nContinue your answer from where it stopped: do not repeat what you said or the calls that were made; send the corrected call.",
                rejected.call.name, rejected.error.message
            ),
        ));
        retry
    }
}

/// The note left in the text for a dropped call.
/// The note left in the text for a reply that made no call where `tool_choice` asks for one.
pub fn missing_call_note(why: &str) -> String {
    format!("[toolcall: the model answered without a tool call: {why}]")
}

fn push_note(text: &mut Option<String>, note: &str) {
    let text = text.get_or_insert_with(String::new);
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(note);
}

pub fn drop_note(r: &Rejected) -> String {
    format!(
        "[toolcall: a call to {:?} was dropped: {}]",
        r.call.name, r.error.message
    )
}

/// Logs a call going to the client: its id, tool, format, repairs, and its arguments with
/// secrets redacted (fields named like `password`, `token`, `api_key`: the executor's rule).
pub fn log_call(c: &ToolCall) {
    let repairs: Vec<&str> = c.origin.repairs.iter().map(|r| r.kind.as_str()).collect();
    tracing::info!(
        call_id = c.call_id.as_str(),
        tool = c.name.as_str(),
        format = &*c.origin.format,
        repairs = repairs.join(",").as_str(),
        arguments = redacted(&c.arguments).as_str(),
        "call"
    );
}

/// Logs a rejected call: id, tool, error, policy, arguments redacted.
fn log_rejected(r: &Rejected, policy: InvalidCallPolicy, what: &str) {
    tracing::warn!(call_id = %r.call.call_id, tool = %r.call.name, error = %r.error.message,
        policy = ?policy, arguments = %redacted(&r.call.arguments), "{what}");
}

/// `arguments` as JSON text with secrets redacted (`toolcall_run::redact`'s rule), at most
/// 2000 characters (the end kept). Written straight from `arguments`, without a redacted copy.
fn redacted(arguments: &Value) -> String {
    let text = serde_json::to_string(&Redacted(arguments, 0)).unwrap_or_default();
    if text.len() <= 2000 {
        text
    } else {
        toolcall_wire::excerpt(&text, 2000)
    }
}

/// A value serialised as `toolcall_run::redact::redact` of it would be.
struct Redacted<'a>(&'a Value, usize);

impl serde::Serialize for Redacted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        use toolcall_run::redact::{MAX_DEPTH, REDACTED, TOO_DEEP, is_secret_key};
        let Redacted(value, depth) = *self;
        if depth >= MAX_DEPTH {
            return s.serialize_str(TOO_DEEP);
        }
        match value {
            Value::Object(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    if is_secret_key(k) {
                        out.serialize_entry(k, REDACTED)?;
                    } else {
                        out.serialize_entry(k, &Redacted(v, depth + 1))?;
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    out.serialize_element(&Redacted(v, depth + 1))?;
                }
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

fn log_diagnostics(diagnostics: &[toolcall_core::Diagnostic]) {
    for d in diagnostics.iter().take(16) {
        tracing::debug!(level = ?d.level, message = %d.message, "parse");
    }
}

/// What a streamed turn gives out, in order (each front end writes it in its dialect).
pub use toolcall_wire::dialect::Out;

/// A streamed turn: feed the upstream's stream as neutral [`Delta`]s (any upstream dialect),
/// get text, reasoning and calls.
///
/// A call is announced ([`Out::CallStart`]) when its name is known and passes the checks a
/// name can fail (offered, `tool_choice`, `parallel_tool_calls`), or, with
/// [`AnnounceCalls::WhenChecked`], once it is complete and checked. Its arguments go out
/// whole once the call is complete and checked ([`Out::CallEnd`]): the parser's raw argument
/// fragments can hold slips that the repair fixes or values the schema coerces, so only the
/// checked arguments are a text every client accumulates into the same call as the whole
/// reply gives. A call rejected before anything of it was sent gets the policy: `pass`
/// sends it, `drop` leaves a note, `retry` sets [`StreamTurn::retry`] (once per turn) for
/// the driver to ask the upstream again and [`StreamTurn::restart`] the turn.
pub struct StreamTurn {
    turn: Turn,
    parser: Option<StreamParser>,
    /// Emulated tools: calls only after the trigger.
    gate: Option<TriggerGate>,
    natives: CallAssembler,
    sent_calls: usize,
    /// Parser index → the index the call was announced under.
    announced: HashMap<usize, usize>,
    /// The upstream's native calls by their index: `None` until the name came, then the
    /// index and id the call was announced under, if it was.
    native_seen: BTreeMap<u32, Option<Option<(usize, CallId)>>>,
    /// Text sent so far (for the retry request's account of what was said).
    said: String,
    /// Valid calls so far (for `parallel_tool_calls` and the finish reason).
    pub checked: Checked,
    /// The upstream said it finished (`finish_reason` or `[DONE]`).
    pub finished: bool,
    /// A request asking the upstream again, set when a call is rejected under `retry`
    /// before anything of it was sent; the rest of the current upstream reply is ignored.
    pub retry: Option<ChatRequest>,
    retried: bool,
    /// Calls sent although invalid (announced by name before their arguments failed).
    pub invalid_sent: usize,
    /// A call was rejected (its policy already told the client).
    rejected_seen: bool,
    bytes: usize,
}

impl StreamTurn {
    pub fn new(turn: Turn) -> Self {
        let parser = Some(StreamParser::new(turn.parse.clone()));
        StreamTurn {
            gate: turn.trigger.as_ref().map(TriggerGate::new),
            turn,
            parser,
            natives: CallAssembler::default(),
            sent_calls: 0,
            announced: HashMap::new(),
            native_seen: BTreeMap::new(),
            said: String::new(),
            checked: Checked::default(),
            finished: false,
            retry: None,
            retried: false,
            invalid_sent: 0,
            rejected_seen: false,
            bytes: 0,
        }
    }

    /// Starts over on the retried upstream reply: what was sent stays sent, call indexes
    /// continue.
    pub fn restart(&mut self) {
        self.parser = Some(StreamParser::new(self.turn.parse.clone()));
        self.gate = self.turn.trigger.as_ref().map(TriggerGate::new);
        self.natives = CallAssembler::default();
        self.announced.clear();
        self.native_seen.clear();
        self.finished = false;
        self.checked.finish_reason = None;
        self.rejected_seen = false;
    }

    /// Takes one upstream delta. Errors when the reply grows past the bound.
    pub fn push(&mut self, delta: Delta, out: &mut Vec<Out>) -> Result<(), ApiError> {
        if self.retry.is_some() {
            return Ok(());
        }
        match delta {
            Delta::Reasoning(r) => {
                self.grow(r.len())?;
                out.push(Out::Reasoning(r));
            }
            Delta::Text(t) => {
                self.grow(t.len())?;
                match &mut self.parser {
                    Some(p) => {
                        let events = match &mut self.gate {
                            Some(g) => {
                                let events = p.push(&g.push(&t));
                                g.filter(events)
                            }
                            None => p.push(&t),
                        };
                        self.events(events, out);
                    }
                    None => self.text(t, out),
                }
            }
            Delta::Call(tc) => {
                let added = self
                    .natives
                    .push(&tc, &Limits::default())
                    .map_err(|e| ApiError::upstream_reply(&e.to_string()))?;
                self.grow(added)?;
                self.native_started(&tc, out);
            }
            Delta::Finish(r) => {
                self.checked.finish_reason = Some(r);
                self.finished = true;
            }
            Delta::Done => self.finished = true,
            Delta::Usage(_) => {}
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

    fn text(&mut self, text: String, out: &mut Vec<Out>) {
        if self.said.len() < MAX_SAID_BYTES {
            self.said.push_str(&text);
        }
        out.push(Out::Text(text));
    }

    fn events(&mut self, events: Vec<StreamEvent>, out: &mut Vec<Out>) {
        for e in events {
            if self.retry.is_some() {
                return;
            }
            match e {
                StreamEvent::Text { text } => self.text(text, out),
                StreamEvent::Reasoning { text } => out.push(Out::Reasoning(text)),
                StreamEvent::CallStarted {
                    index,
                    call_id,
                    name,
                } => self.started(index, call_id, name, out),
                StreamEvent::CallFinished { index, call } => {
                    let announced = self.announced.remove(&index);
                    self.call(announced, call, out)
                }
                StreamEvent::Diagnostic { diagnostic } => {
                    log_diagnostics(std::slice::from_ref(&diagnostic))
                }
                StreamEvent::ArgumentsDelta { .. } => {}
            }
        }
    }

    /// The parser's call `index` has its name: announced if the name passes.
    fn started(&mut self, index: usize, id: CallId, name: String, out: &mut Vec<Out>) {
        if let Some(sent) = self.announce(id, name, out) {
            self.announced.insert(index, sent);
        }
    }

    /// A native call delta from the upstream: its first delta with a name announces it.
    fn native_started(&mut self, tc: &ToolCallDelta, out: &mut Vec<Out>) {
        let seen = self.native_seen.entry(tc.index).or_insert(None);
        if seen.is_some() {
            return;
        }
        let Some(name) = tc
            .function
            .as_ref()
            .and_then(|f| f.name.clone())
            .filter(|n| !n.is_empty())
        else {
            return;
        };
        let id = tc
            .id
            .as_deref()
            .filter(|i| !i.is_empty())
            .map_or_else(CallId::generate, CallId::from);
        let sent = self.announce(id.clone(), name, out);
        self.native_seen
            .insert(tc.index, Some(sent.map(|s| (s, id))));
    }

    /// Announces a call whose name is known, if the name passes (or the policy is `pass`);
    /// the index it was announced under.
    fn announce(&mut self, id: CallId, name: String, out: &mut Vec<Out>) -> Option<usize> {
        if self.turn.announce != AnnounceCalls::AtName {
            return None;
        }
        if self.turn.policy != InvalidCallPolicy::Pass
            && self.turn.check_name(&name, self.sent_calls).is_err()
        {
            // Nothing of it goes out: the policy applies when it is complete.
            return None;
        }
        // A grammar tool's input goes out in one piece once checked anyway: announced at its
        // name, input breaking the grammar would be the client's already (Codex applying a
        // bad patch); announced whole, the policy applies to it in full.
        if self.turn.policy != InvalidCallPolicy::Pass && self.turn.custom.has_grammar(&name) {
            return None;
        }
        let sent = self.sent_calls;
        out.push(Out::CallStart {
            index: sent,
            id: id.to_string(),
            name,
        });
        self.sent_calls += 1;
        Some(sent)
    }

    /// A complete call: check it, then finish what was announced or apply the policy.
    /// `announced`: the index the call was announced under, if it was.
    fn call(&mut self, announced: Option<usize>, call: ToolCall, out: &mut Vec<Out>) {
        if let Some(sent) = announced {
            let call = match self.turn.check(call) {
                Ok(c) => c,
                Err(r) => {
                    // Announced already: the client has it. Completed as the model wrote it.
                    self.invalid_sent += 1;
                    log_rejected(&r, self.turn.policy, "invalid call sent: its name was out");
                    if self.turn.policy != InvalidCallPolicy::Pass {
                        let note = format!("\n\n{}", sent_note(&r));
                        out.push(Out::CallEnd {
                            index: sent,
                            arguments: encode_arguments(&r.call.arguments),
                        });
                        self.checked.calls.push(r.call);
                        self.text(note, out);
                        return;
                    }
                    r.call
                }
            };
            out.push(Out::CallEnd {
                index: sent,
                arguments: encode_arguments(&call.arguments),
            });
            self.checked.calls.push(call);
            return;
        }
        let before = self.checked.calls.len();
        self.turn.admit(call, &mut self.checked);
        if self.checked.calls.len() > before
            && let Some(c) = self.checked.calls.last().cloned()
        {
            self.send_whole(&c, out);
        }
        for r in std::mem::take(&mut self.checked.rejected) {
            self.rejected_seen = true;
            log_rejected(&r, self.turn.policy, "invalid call in a stream");
            match self.turn.policy {
                InvalidCallPolicy::Pass => {
                    self.send_whole(&r.call, out);
                    self.checked.calls.push(r.call);
                }
                InvalidCallPolicy::Retry if !self.retried => {
                    self.retried = true;
                    self.retry = Some(self.turn.stream_retry_request(
                        &self.said,
                        &self.checked.calls,
                        &r,
                    ));
                    return;
                }
                _ => self.text(format!("\n\n{}", drop_note(&r)), out),
            }
        }
    }

    fn send_whole(&mut self, c: &ToolCall, out: &mut Vec<Out>) {
        out.push(Out::CallStart {
            index: self.sent_calls,
            id: c.call_id.to_string(),
            name: c.name.clone(),
        });
        out.push(Out::CallEnd {
            index: self.sent_calls,
            arguments: encode_arguments(&c.arguments),
        });
        self.sent_calls += 1;
    }

    /// The end of a complete upstream stream: what the parser held back, then native calls.
    /// Errors when a call announced to the client never completed: the client holds a call
    /// without arguments, and only an error keeps it from taking that for a reply.
    pub fn finish(&mut self, out: &mut Vec<Out>) -> Result<(), ApiError> {
        if let Some(mut p) = self.parser.take() {
            let end = reply_end(self.checked.finish_reason.as_deref());
            let events = match &mut self.gate {
                Some(g) => {
                    let events = p.push(&g.finish());
                    let mut events = g.filter(events);
                    events.extend(g.filter(p.finish_as(end)));
                    events
                }
                None => p.finish_as(end),
            };
            self.events(events, out);
        }
        if self.retry.is_some() {
            return Ok(());
        }
        if !self.announced.is_empty() {
            return Err(ApiError::upstream_reply(
                "a call announced to the client was malformed in the rest of the model's reply",
            ));
        }
        // The assembler gives its calls in index order, the order `native_seen` keeps.
        let seen: Vec<Option<(usize, CallId)>> = std::mem::take(&mut self.native_seen)
            .into_values()
            .map(Option::flatten)
            .collect();
        let wires = std::mem::take(&mut self.natives).finish();
        let length = self.checked.finish_reason.as_deref() == Some(LENGTH);
        for (i, wire) in wires.into_iter().enumerate() {
            let mut call = self.turn.native(&wire);
            let announced = seen.get(i).cloned().flatten().map(|(sent, id)| {
                call.call_id = id;
                sent
            });
            // A call cut inside its arguments is never a finished call: announced, the
            // client holds it open, so only an error ends the stream honestly.
            if let Some(why) = cut_short(&wire, length) {
                if announced.is_some() {
                    return Err(ApiError::upstream_reply(&format!(
                        "the model's reply was cut inside the arguments of its call to {:?} ({why})",
                        wire.name
                    )));
                }
                self.rejected_seen = true;
                tracing::warn!(tool = %wire.name, reason = why, "a call cut inside its arguments");
                let sep = if self.said.is_empty() { "" } else { "\n\n" };
                self.text(format!("{sep}{}", cut_note(&wire, why)), out);
                continue;
            }
            self.call(announced, call, out);
            if self.retry.is_some() {
                break;
            }
        }
        // No call at all where tool_choice asks for one: the text is out already, so no
        // retry; the client gets the note the whole reply would carry after its retry.
        if self.retry.is_none()
            && self.sent_calls == 0
            && !self.rejected_seen
            && self.turn.policy != InvalidCallPolicy::Pass
            && let Some(why) = self.turn.missing_call()
        {
            tracing::warn!(policy = ?self.turn.policy, reason = %why, "a streamed reply without the call tool_choice asks for");
            let sep = if self.said.is_empty() { "" } else { "\n\n" };
            self.text(format!("{sep}{}", missing_call_note(&why)), out);
        }
        Ok(())
    }
}

/// The finish reason of a reply cut by the token limit.
const LENGTH: &str = "length";

/// Why a native call's arguments never completed, if they did not: the JSON text ends before
/// its object closes, or the upstream stopped at its token limit (`length`) with arguments
/// that are not a JSON object. Such a call is neither a call nor text: it is reported, never
/// delivered (a merely malformed call, complete but wrong, goes to the invalid-call policy).
fn cut_short(call: &WireCall, length: bool) -> Option<&'static str> {
    let raw = &call.arguments.as_ref().err()?.raw;
    let eof = serde_json::from_str::<Value>(raw.trim())
        .err()
        .is_some_and(|e| e.is_eof());
    if eof {
        Some("its arguments end before their JSON object closes")
    } else if length {
        Some("the reply stopped at its token limit")
    } else {
        None
    }
}

/// The note left in the text for a call cut inside its arguments.
fn cut_note(call: &WireCall, why: &str) -> String {
    format!(
        "[toolcall: a call to {:?} was cut off and is not delivered: {why}]",
        call.name
    )
}

/// The most text kept to tell the upstream what was already said, on a retry.
const MAX_SAID_BYTES: usize = 64 * 1024;

/// The note left in the text for a call sent although its arguments failed their check.
pub fn sent_note(r: &Rejected) -> String {
    format!(
        "[toolcall: the call {} to {:?} does not pass its check: {}]",
        r.call.call_id, r.call.name, r.error.message
    )
}

/// How the upstream's reply ended, for the text parser: a call whose end token the server
/// stripped is a call after `stop`/`tool_calls`, truncated after `length`.
fn reply_end(finish_reason: Option<&str>) -> ReplyEnd {
    finish_reason.map_or(ReplyEnd::Unknown, ReplyEnd::from_finish_reason)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::redacted;

    // The logged arguments are the redacted copy's text, written without the copy.
    #[test]
    fn logged_arguments_are_the_redacted_copys_text() {
        let mut deep = json!({"password": "deep-secret", "leaf": 1});
        // Linear in depth: one child per level (a value holding two copies of the level
        // below would double at every level).
        for i in 0..40 {
            deep = if i % 2 == 0 {
                json!({"next": deep, "n": i})
            } else {
                json!([deep, i])
            };
        }
        let long = "é".repeat(3000);
        for value in [
            json!({"user": "ann", "password": "pw-1", "API-Key": "k", "max_tokens": 5}),
            json!({"nested": {"auth": "x", "items": [{"token": "t"}, 1, null, true, 2.5]}}),
            json!(["a", {"secret_value": "s"}, [[{"cookie": "c"}]]]),
            json!("just text \"quoted\"\n"),
            json!(null),
            json!({"text": long}),
            deep,
        ] {
            let copy = toolcall_run::redact::redact(&value).to_string();
            assert_eq!(redacted(&value), toolcall_wire::excerpt(&copy, 2000));
        }
        let shown: Value = serde_json::from_str(&redacted(&json!({"password": "pw"}))).unwrap();
        assert_eq!(shown["password"], toolcall_run::redact::REDACTED);
    }
}
