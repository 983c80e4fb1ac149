//! The format set. Each format is one module; this file names them, lists them with an
//! example (`toolcall formats`), and dispatches a decoded JSON value to the JSON-shaped
//! formats in the configured priority order.
//!
//! Adding a model family: add a variant to [`FormatId`], a module with a `classify` for
//! JSON shapes (or a marker handled by the engine's marker table), and a [`FormatInfo`].

use std::ops::Range;

use serde_json::Value;

use crate::builder::{Ctx, Outcome};

pub(crate) mod action_response;
pub(crate) mod call_syntax;
pub(crate) mod hermes;
pub(crate) mod json;
pub(crate) mod key_value;
pub(crate) mod llama;
pub(crate) mod mistral;
pub(crate) mod native;
pub(crate) mod pythonic;
pub(crate) mod tools_envelope;

/// A format id: the exact strings other crates use (`Origin.format`, prompt rendering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FormatId {
    ToolsEnvelope,
    CallSyntax,
    ActionResponse,
    KeyValue,
    Fallback,
    Hermes,
    Mistral,
    Llama,
    Pythonic,
    Json,
    OpenaiChat,
    Responses,
    Gemini,
    Anthropic,
}

impl FormatId {
    /// Default auto-mode priority: explicit markup first, then the JSON shapes from the most
    /// to the least specific, then text conventions, then the opt-in fallbacks.
    pub const DEFAULT_ORDER: [FormatId; 14] = [
        FormatId::Hermes,
        FormatId::Mistral,
        FormatId::Llama,
        FormatId::OpenaiChat,
        FormatId::Responses,
        FormatId::Gemini,
        FormatId::Anthropic,
        FormatId::ToolsEnvelope,
        FormatId::ActionResponse,
        FormatId::Json,
        FormatId::Pythonic,
        FormatId::KeyValue,
        FormatId::CallSyntax,
        FormatId::Fallback,
    ];

    pub fn as_str(self) -> &'static str {
        self.info().id
    }

    pub fn from_name(name: &str) -> Option<FormatId> {
        FormatId::DEFAULT_ORDER
            .into_iter()
            .find(|f| f.as_str() == name)
    }

    pub fn info(self) -> &'static FormatInfo {
        let i = match self {
            FormatId::ToolsEnvelope => 0,
            FormatId::CallSyntax => 1,
            FormatId::ActionResponse => 2,
            FormatId::KeyValue => 3,
            FormatId::Fallback => 4,
            FormatId::Hermes => 5,
            FormatId::Mistral => 6,
            FormatId::Llama => 7,
            FormatId::Pythonic => 8,
            FormatId::Json => 9,
            FormatId::OpenaiChat => 10,
            FormatId::Responses => 11,
            FormatId::Gemini => 12,
            FormatId::Anthropic => 13,
        };
        &FORMATS[i]
    }

    /// Native provider shapes (arguments as a JSON string are normal there, not a repair).
    pub fn is_native(self) -> bool {
        matches!(
            self,
            FormatId::OpenaiChat | FormatId::Responses | FormatId::Gemini | FormatId::Anthropic
        )
    }
}

/// One line of `toolcall formats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatInfo {
    pub id: &'static str,
    pub description: &'static str,
    pub example: &'static str,
}

static FORMATS: [FormatInfo; 14] = [
    FormatInfo {
        id: "tools_envelope",
        description: "{\"tools\":[...]} envelope in a ```json fence or raw in prose; every entry in order",
        example: r#"```json {"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}}]} ```"#,
    },
    FormatInfo {
        id: "call_syntax",
        description: "name(args) with positional arguments mapped onto the schema, or keywords; registered tools only",
        example: r#"computer_use("left_click", 100, 200)"#,
    },
    FormatInfo {
        id: "action_response",
        description: "{session_id, command, args, text} (seed 001); {\"text\"} alone is a plain reply",
        example: r#"{"session_id":"s1","command":"open_app","args":{"app_name":"Safari"},"text":"Opening Safari."}"#,
    },
    FormatInfo {
        id: "key_value",
        description: "TOOL_CALL: <tool> then FIELD: value lines, case-insensitive; trailing prose is the reply",
        example: "TOOL_CALL: highlight_object\\nOBJECT: headphones",
    },
    FormatInfo {
        id: "fallback",
        description: "opt-in per-tool rules (label_list, intent, completion) from --fallbacks; used only when nothing else matched",
        example: "I'll highlight the cup for you",
    },
    FormatInfo {
        id: "hermes",
        description: "<tool_call>{json}</tool_call> (Hermes, Qwen), also unclosed at the end of output",
        example: r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#,
    },
    FormatInfo {
        id: "mistral",
        description: "[TOOL_CALLS][{...}] or [TOOL_CALLS]name[ARGS]{...}",
        example: r#"[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Paris"}}]"#,
    },
    FormatInfo {
        id: "llama",
        description: "Llama 3 JSON with \"parameters\", optionally after <|python_tag|>",
        example: r#"<|python_tag|>{"name":"get_weather","parameters":{"city":"Paris"}}"#,
    },
    FormatInfo {
        id: "pythonic",
        description: "a Python list of calls with keyword arguments and Python literals",
        example: r#"[get_weather(city="Paris"), get_time()]"#,
    },
    FormatInfo {
        id: "json",
        description: "a bare JSON object or array of {name, arguments|parameters}",
        example: r#"{"name":"get_weather","arguments":{"city":"Paris"}}"#,
    },
    FormatInfo {
        id: "openai_chat",
        description: "Chat Completions message or response with tool_calls (ids kept)",
        example: r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}"#,
    },
    FormatInfo {
        id: "responses",
        description: "Responses API output items of type function_call (call_id kept)",
        example: r#"{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}"#,
    },
    FormatInfo {
        id: "gemini",
        description: "Gemini functionCall parts or candidates",
        example: r#"{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]}"#,
    },
    FormatInfo {
        id: "anthropic",
        description: "Anthropic content blocks of type tool_use (id kept)",
        example: r#"{"content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]}"#,
    },
];

/// Every format the parser reads, with a one-line description and example.
pub fn formats() -> &'static [FormatInfo] {
    &FORMATS
}

/// Where a JSON region was found; decides which formats may claim it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Site {
    /// In ordinary text: the formats enabled, in priority order, registry-strict.
    /// `at_start`: nothing visible precedes it (a whole-reply JSON answer).
    Plain { at_start: bool },
    /// Right after `<|python_tag|>`: Llama JSON, any name.
    PythonTag,
}

/// Offers a decoded JSON value to the JSON-shaped formats in priority order.
pub(crate) fn classify_value(
    v: &mut Value,
    ctx: &Ctx,
    site: &Site,
    span: Range<usize>,
) -> Option<Outcome> {
    let at_start = match site {
        Site::PythonTag => return json::classify(v, ctx, FormatId::Llama, true, span),
        Site::Plain { at_start } => *at_start,
    };
    for f in &ctx.order {
        let found = match f {
            FormatId::ToolsEnvelope => tools_envelope::classify(v, ctx, span.clone()),
            FormatId::ActionResponse => action_response::classify(v, ctx, span.clone(), at_start),
            FormatId::Json | FormatId::Llama => json::classify(v, ctx, *f, false, span.clone()),
            FormatId::OpenaiChat | FormatId::Responses | FormatId::Gemini | FormatId::Anthropic => {
                native::classify(v, ctx, *f, span.clone())
            }
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Object keys all within `allowed`.
pub(crate) fn keys_within(m: &serde_json::Map<String, Value>, allowed: &[&str]) -> bool {
    m.keys().all(|k| allowed.contains(&k.as_str()))
}
