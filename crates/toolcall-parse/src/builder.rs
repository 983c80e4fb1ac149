//! The one call builder: a name, an arguments object (`{}` when there are none, R-3) and an
//! id (the model's, or a generated one), plus the registry policy for names.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use serde_json::{Map, Value};
use toolcall_core::{CallId, Diagnostic, Origin, Registry, Repair, ToolCall, ToolSpec};

use crate::FormatId;
use crate::fallback::FallbackRule;
use crate::family::{BareJson, Family};
use crate::openers::Openers;
use crate::repair::parse_lenient;
use crate::scanner::SERDE_MAX_DEPTH;

/// Resource bounds of one parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of input read; the rest is passed through as text with an error diagnostic.
    pub max_input_bytes: usize,
    /// Maximum bracket nesting of any JSON or call region, and of every call's arguments
    /// (`{}` is one level): a call nested deeper is not run, with an error. JSON is never
    /// decoded deeper than 127 levels (`serde_json`'s own bound), whatever this says.
    pub max_depth: usize,
    /// Maximum calls returned for one reply: the first call past it is dropped with an
    /// error diagnostic, and the rest of the reply is passed through as text, unparsed (as
    /// input past `max_input_bytes` is), so a reply looping on one call costs no more to
    /// read than its text.
    pub max_calls: usize,
    /// Maximum failed call attempts in one reply (markup that opened a call and was left
    /// as text or dropped with an error: malformed arguments, an unclosed or broken body,
    /// nesting past `max_depth`; and a call header line naming no registered tool,
    /// `TOOL_CALL: x`, though its note is only info): past it the reply is taken to be
    /// looping on a broken call, and once the markup that failed last is read to its end the rest of the reply
    /// is passed through as text, unparsed, with one error (as past `max_calls`), so such
    /// a reply costs no more to read than its text.
    pub max_failed_calls: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_input_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_calls: 1024,
            max_failed_calls: 1024,
        }
    }
}

/// How the reply ended, as the model server said (its `finish_reason`). Model servers
/// (vLLM, SGLang, Ollama, llama.cpp) strip the special tokens that stop generation, so a
/// reply often ends right after a call's body, without the closing marker the family's
/// markup has (gpt-oss `<|call|>`, Llama 4 `<|python_end|>`, Apertus `<|tools_suffix|>`).
/// Whether such a call runs depends on how the reply ended:
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ReplyEnd {
    /// The model ended it (`stop`, end of turn, `tool_calls`): a call whose body is complete
    /// at the end of the output is a call (with a `closing_marker` repair).
    Stopped,
    /// The reply was cut (`length`, `max_tokens`, a stream that broke off): a call whose
    /// closing marker is missing is truncated and not run, even when its body looks
    /// complete.
    Cut,
    /// Not known (the default): read as [`ReplyEnd::Stopped`], since a stripped end token is
    /// far more common than a cut that happens to fall right after a complete body; the
    /// call's `closing_marker` repair says what was assumed. A body that is itself cut is
    /// truncated whatever the end.
    #[default]
    Unknown,
}

impl ReplyEnd {
    /// Reads a finish reason as the APIs write it: OpenAI Chat (`stop`, `tool_calls`,
    /// `function_call`, `length`, `content_filter`), Anthropic (`end_turn`, `tool_use`,
    /// `stop_sequence`, `max_tokens`), Gemini (`STOP`, `MAX_TOKENS`), Responses
    /// (`max_output_tokens`), Ollama/llama.cpp (`stop`, `length`); any case. `cut` and
    /// `unknown` name the other two; anything else is unknown.
    pub fn from_finish_reason(reason: &str) -> ReplyEnd {
        match reason.trim().to_ascii_lowercase().as_str() {
            "stop" | "stopped" | "end_turn" | "tool_calls" | "tool_use" | "function_call"
            | "stop_sequence" | "eos" | "end" => ReplyEnd::Stopped,
            "length" | "max_tokens" | "max_output_tokens" | "content_filter" | "cut" => {
                ReplyEnd::Cut
            }
            _ => ReplyEnd::Unknown,
        }
    }

    /// A call whose closing marker is missing at the end of the output may be a call.
    pub(crate) fn closes_calls(self) -> bool {
        self != ReplyEnd::Cut
    }
}

/// The repair a call carries when its closing marker was missing at the end of the output.
pub(crate) fn closing_marker_repair(marker: &str) -> Repair {
    Repair::new(
        "closing_marker",
        format!(
            "{marker} missing at the end of the output (model servers strip end tokens); the body was complete"
        ),
    )
}

/// A call as a format found it, before the builder checks it.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    pub name: String,
    pub args: Option<Value>,
    pub id: Option<CallId>,
    pub format: FormatId,
    pub repairs: Vec<Repair>,
    pub span: Range<usize>,
    /// Why this call of a block cannot run (its arguments are not JSON, ...): its siblings
    /// still run; the builder refuses it with this reason, which the engine reports, and a
    /// call announced for it while streaming never finishes.
    pub broken: Option<String>,
}

impl Draft {
    pub(crate) fn new(name: impl Into<String>, args: Option<Value>, format: FormatId) -> Self {
        Draft {
            name: name.into(),
            args,
            id: None,
            format,
            repairs: Vec::new(),
            span: 0..0,
            broken: None,
        }
    }

    /// A call of a block that is this family's markup but cannot run (see [`Draft::broken`]).
    pub(crate) fn broken(name: impl Into<String>, why: String, format: FormatId) -> Self {
        Draft {
            broken: Some(why),
            ..Draft::new(name, None, format)
        }
    }

    /// A call of `name` whose arguments are the JSON text `json`, read leniently (its
    /// repairs recorded); arguments that are not JSON make it a broken call, which is
    /// reported while its siblings run.
    pub(crate) fn json_args(name: &str, json: &str, format: FormatId) -> Self {
        match parse_lenient(json) {
            Ok((args, repairs)) => Draft {
                repairs,
                ..Draft::new(name, Some(args), format)
            },
            Err(e) => Draft::broken(
                name,
                format!("the arguments of {name:?} are not JSON: {e}"),
                format,
            ),
        }
    }
}

/// What a format made of a region: the calls, the visible text that replaces the region,
/// and findings. Returned only when the region is this format's markup.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    pub drafts: Vec<Draft>,
    pub text: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// Everything a format needs to decide: enabled formats in priority order, the registry,
/// limits and fallback rules.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub order: Vec<FormatId>,
    /// `order`'s families, in its order (a format without one is skipped), looked up once
    /// per set of options ([`FormatId::family`] is a search of the registry; bare JSON asks
    /// the families of its formats in order at every region).
    pub families: Vec<&'static dyn Family>,
    pub registry: Option<Arc<Registry>>,
    pub limits: Limits,
    pub fallbacks: Vec<FallbackRule>,
    /// Formats were chosen explicitly (not auto): call syntax then works without a registry.
    pub explicit: bool,
    /// The reply starts inside a reasoning block (the template opened `<think>`).
    pub starts_in_reasoning: bool,
    /// How the reply ended, as the options said ([`crate::StreamParser::finish_as`] may
    /// say otherwise at the end: readers ask [`crate::family::ReadCx`]).
    pub reply_end: ReplyEnd,
    /// The enabled families' openers, reasoning markers and control tokens.
    pub openers: Arc<Openers>,
    /// Bare brackets some enabled family claims.
    pub bare: BareJson,
    /// Enabled families reading `name(` call syntax in this parse, in priority order,
    /// resolved once here (asked at every `name(`: a flood of `get_weather(` looked each
    /// family up by its id per call).
    pub calls: Vec<&'static dyn Family>,
    /// Reasoning markers and control tokens only ([`crate::ParseOptions::reasoning_only`]):
    /// a region that holds calls stays text, and fences are text.
    pub reasoning_only: bool,
    /// The first enabled family (`order`'s first), resolved once here: every parse asked
    /// for it twice (`FormatId::family`, a binary search, ~140 instructions each).
    pub first: Option<&'static dyn Family>,
}

impl Ctx {
    pub(crate) fn enabled(&self, f: FormatId) -> bool {
        self.order.contains(&f)
    }

    pub(crate) fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.registry.as_deref().and_then(|r| r.spec(name))
    }

    /// For formats that can misfire on prose: with a registry, only registered names.
    pub(crate) fn strict_name_ok(&self, name: &str) -> bool {
        match &self.registry {
            Some(r) => r.contains(name),
            None => Registry::validate_id(name).is_ok(),
        }
    }

    /// For explicit markup: any name, flagged when a registry is known and lacks it.
    pub(crate) fn unknown_name_warning(
        &self,
        name: &str,
        span: Range<usize>,
    ) -> Option<Diagnostic> {
        let r = self.registry.as_deref()?;
        if r.contains(name) {
            return None;
        }
        let known: Vec<&str> = r.names().collect();
        Some(Diagnostic::warning(
            format!(
                "call to unregistered tool {name:?} kept (explicit markup); registered tools: {}",
                known.join(", ")
            ),
            span,
        ))
    }
}

/// Turns a draft into a call: arguments become an object, the id is `announced` (the one a
/// stream sent for it), else the draft's, else generated.
/// Arguments nested deeper than `max_depth` ([`Limits::max_depth`]) are refused, whichever
/// reader produced them: the bracket scanner refuses such regions itself, but the
/// families that decode their blocks in one `serde_json` pass are bounded only by serde's
/// own [`SERDE_MAX_DEPTH`], so a smaller bound is kept here, once for every family.
pub(crate) fn build(
    d: Draft,
    max_depth: usize,
    announced: Option<CallId>,
) -> Result<ToolCall, String> {
    if let Some(why) = d.broken {
        return Err(why);
    }
    let mut repairs = d.repairs;
    let arguments = match d.args {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(m)) => Value::Object(m),
        Some(Value::String(s)) => {
            if s.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                match parse_lenient(&s) {
                    Ok((Value::Object(m), r)) => {
                        if !d.format.is_native() {
                            repairs.push(Repair::new(
                                "arguments_string",
                                "arguments were a JSON string; decoded into an object",
                            ));
                        }
                        repairs.extend(r);
                        Value::Object(m)
                    }
                    Ok(_) => {
                        return Err(format!(
                            "arguments of {:?} are a string that is not a JSON object",
                            d.name
                        ));
                    }
                    Err(e) => {
                        return Err(format!("arguments of {:?} are not valid JSON: {e}", d.name));
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "arguments of {:?} must be an object, found {}",
                d.name,
                toolcall_core::json_kind(&other)
            ));
        }
    };
    if d.name.is_empty() {
        return Err("call without a tool name".into());
    }
    if max_depth < SERDE_MAX_DEPTH && nests_past(&arguments, max_depth) {
        return Err(format!(
            "arguments of {:?} are nested deeper than {max_depth}",
            d.name
        ));
    }
    Ok(ToolCall {
        call_id: match announced.or(d.id) {
            Some(id) if !id.as_str().is_empty() => id,
            _ => CallId::generate(),
        },
        name: d.name,
        arguments,
        origin: Origin {
            format: Cow::Borrowed(d.format.as_str()),
            span: d.span,
            repairs,
        },
    })
}

/// Whether `v` nests more than `room` levels of brackets (`{}` is one). Recursion is
/// bounded: callers pass a `room` under [`SERDE_MAX_DEPTH`], and it shrinks at each level.
fn nests_past(v: &Value, room: usize) -> bool {
    match v {
        Value::Array(items) => room == 0 || items.iter().any(|x| nests_past(x, room - 1)),
        Value::Object(m) => room == 0 || m.values().any(|x| nests_past(x, room - 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    //
    #[test]
    fn parameterless_calls_carry_an_empty_object_and_ids_are_kept() {
        for args in [None, Some(Value::Null), Some(json!("")), Some(json!({}))] {
            let c = build(Draft::new("t", args, FormatId::JSON), 128, None).unwrap();
            assert_eq!(c.arguments, json!({}));
            assert!(c.call_id.as_str().starts_with("call_"));
        }
        let mut d = Draft::new("t", Some(json!("{\"a\":1}")), FormatId::JSON);
        d.id = Some(CallId::from("toolu_01"));
        let c = build(d.clone(), 128, None).unwrap();
        assert_eq!(c.call_id.as_str(), "toolu_01");
        let announced = CallId::from("call_announced");
        let c2 = build(d, 128, Some(announced.clone())).unwrap();
        assert_eq!(c2.call_id, announced);
        assert_eq!(c.arguments, json!({"a":1}));
        assert_eq!(c.origin.repairs[0].kind, "arguments_string");
    }

    //
    #[test]
    fn bad_arguments_never_become_empty_objects() {
        for args in [json!("{\"a\":"), json!([1]), json!(3), json!("[1]")] {
            assert!(build(Draft::new("t", Some(args), FormatId::JSON), 128, None).is_err());
        }
    }

    /// A call's arguments nest at most `max_depth` levels (`{}` is one), counted on the
    /// value whichever reader decoded it; the default bound is serde's own.
    #[test]
    fn arguments_nested_past_the_bound_are_refused() {
        let nested = |n: usize| {
            let mut v = json!(1);
            for _ in 0..n {
                v = json!([v]);
            }
            json!({ "a": v })
        };
        for max_depth in [1, 2, 5] {
            for n in 0..max_depth + 3 {
                let got = build(
                    Draft::new("t", Some(nested(n)), FormatId::JSON),
                    max_depth,
                    None,
                );
                if n < max_depth {
                    assert!(got.is_ok(), "depth {} within {max_depth}", n + 1);
                } else {
                    let e = got.expect_err("past the bound");
                    assert_eq!(
                        e,
                        format!("arguments of \"t\" are nested deeper than {max_depth}")
                    );
                }
            }
        }
        let deep = nested(SERDE_MAX_DEPTH - 2);
        assert!(build(Draft::new("t", Some(deep), FormatId::JSON), 128, None).is_ok());
    }
}
