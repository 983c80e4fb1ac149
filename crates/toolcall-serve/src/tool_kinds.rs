//! What the gateway does with each kind of tool a client declares
//! ([`toolcall_wire::tool_kinds::ToolKind`]), before the turn runs: nothing is dropped in
//! silence.
//!
//! **Hosted tools** (`web_search`, `file_search`, `code_interpreter`, Anthropic's
//! `web_search_…`, `web_fetch_…`, `code_execution_…`, Gemini's `googleSearch`, any kind the
//! gateway does not know) run only on the provider's own servers. Per route,
//! `hosted_tools = "warn"` (the default) leaves them out of the upstream request, logs one
//! line per request naming them and names them in the [`DROPPED_TOOLS_HEADER`] response
//! header; `"reject"` answers `400` in the front end's error shape naming them. A
//! server-side tool (`--pack`, `--tools`, MCP) of the same name is neither: it is offered to
//! the model by the server-side turn and runs here instead.
//!
//! **Custom tools** (Responses `{"type": "custom", "name", "format"}`, Chat
//! `{"type": "custom", "custom": {…}}`: one freeform text input, optionally under a Lark or
//! regex grammar) are offered to the model as a function with one string argument,
//! [`CUSTOM_INPUT`], so the model writes the call in its family's own format; its input is
//! checked against the grammar with llguidance ([`toolcall_constrain::check`]) and a
//! violation goes through the invalid-call policy like any invalid call. The front end then
//! writes the call as its dialect's custom tool call with the raw input
//! ([`toolcall_wire::dialect::ReplyMeta::custom_tools`]); earlier custom calls in the
//! conversation reach the upstream as calls of that function.
//!
//! **OpenAI's built-in client tools** (`computer_use_preview`, `local_shell`) are offered to
//! a non-OpenAI upstream as functions under their type ([`expand_built_ins`]); a call comes
//! back to a Responses client as a `computer_call` / `local_shell_call` item
//! ([`toolcall_wire::dialect::ReplyMeta::openai_built_ins`]), and their outputs (a
//! `computer_call_output` screenshot as an image part) go back paired by `call_id`.
//!
//! **Namespace tools** (Codex's `{"type": "namespace", "name": "multi_agent_v1", "tools":
//! […]}`) are offered as their tools under qualified names, `multi_agent_v1__spawn_agent` (OpenAI's
//! and Anthropic's APIs refuse `.` in a tool name);
//! a call comes back to a Responses client as a `function_call` named `spawn_agent` with
//! `namespace: "multi_agent_v1"` ([`toolcall_wire::dialect::ReplyMeta::namespaces`]), as the
//! client declared it.

use std::collections::HashMap;

use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::{Value, json};
use toolcall_constrain::check::{Syntax, check};
use toolcall_core::{ErrorCode, ToolError};
use toolcall_wire::chat::ChatRequest;
use toolcall_wire::dialect::CUSTOM_INPUT;
use toolcall_wire::tool_kinds::{
    CustomFormat, ToolKind, display_name, forced_custom_tool, forced_function, namespace_members,
};

use crate::ApiError;
use crate::config::HostedTools;

/// The response header naming the hosted tools left out of the upstream request.
pub const DROPPED_TOOLS_HEADER: &str = "x-toolcall-dropped-tools";

/// The most tool names listed in a header or a message.
const MAX_NAMED: usize = 16;

/// Takes the hosted tools out of `request` and applies `policy`: their names (the tools
/// left out, to report), or the `400` that `reject` answers. `served_here`: whether a
/// server-side tool of that name runs instead (left out without a word: the server-side
/// turn offers its own declaration).
pub fn take_hosted(
    request: &mut ChatRequest,
    policy: HostedTools,
    served_here: impl Fn(&str) -> bool,
) -> Result<Vec<String>, ApiError> {
    let Some(tools) = &mut request.tools else {
        return Ok(Vec::new());
    };
    let mut dropped = Vec::new();
    let mut served = Vec::new();
    tools.retain(|t| {
        if ToolKind::of(&t.kind) != ToolKind::Hosted {
            return true;
        }
        let name = display_name(t).to_owned();
        if served_here(&name) {
            served.push(name);
        } else if !dropped.contains(&name) {
            dropped.push(name);
        }
        false
    });
    if !served.is_empty() {
        tracing::info!(tools = %served.join(", "), "hosted tools run by the gateway's own tools of the same name");
    }
    if dropped.is_empty() {
        return Ok(dropped);
    }
    let names = listed(&dropped);
    match policy {
        HostedTools::Reject => Err(ApiError::bad_request(format!(
            "hosted tools cannot run behind this gateway: {names} (only the provider's own \
             servers run them; hosted_tools = \"reject\" on this route)"
        ))),
        HostedTools::Warn => {
            tracing::warn!(tools = %names, model = %request.model,
                "hosted tools left out of the upstream request: only the provider's own servers run them");
            Ok(dropped)
        }
    }
}

/// At most [`MAX_NAMED`] names, comma-separated.
fn listed(names: &[String]) -> String {
    let mut out = names
        .iter()
        .take(MAX_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_NAMED {
        out.push_str(&format!(" and {} more", names.len() - MAX_NAMED));
    }
    out
}

/// Names the dropped tools in the [`DROPPED_TOOLS_HEADER`] header (ASCII names only).
pub fn add_dropped_header(response: &mut Response, dropped: &[String]) {
    let ascii: Vec<String> = dropped.iter().filter(|n| n.is_ascii()).cloned().collect();
    if ascii.is_empty() {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(&listed(&ascii)) {
        response.headers_mut().insert(DROPPED_TOOLS_HEADER, v);
    }
}

/// Expands the built-in client tools into function tools with their documented input
/// schema ([`toolcall_wire::built_in_tools`]): Anthropic's (`computer_…`, `bash_…`,
/// `text_editor_…`, `memory_…`) unless the upstream speaks Anthropic, OpenAI's
/// (`computer_use_preview`, `local_shell`, offered under their type as name) unless it
/// speaks Responses (whose models know them). An unknown version of a known type takes the
/// nearest known schema, logged. The OpenAI tools expanded, whose calls the Responses front
/// end writes as `computer_call` / `local_shell_call` items.
pub fn expand_built_ins(request: &mut ChatRequest, upstream: toolcall_wire::Api) -> Vec<String> {
    use toolcall_wire::built_in_tools::{expand, expand_openai, is_openai};
    let mut openai = Vec::new();
    for t in request.tools.iter_mut().flatten() {
        if ToolKind::of(&t.kind) != ToolKind::BuiltIn {
            continue;
        }
        let e = if is_openai(&t.kind) {
            if upstream.name() == "responses" {
                continue;
            }
            let e = expand_openai(&t.kind, &t.function.extra);
            if e.is_some() {
                t.function.name = t.kind.clone();
                if !openai.contains(&t.kind) {
                    openai.push(t.kind.clone());
                }
            }
            e
        } else {
            if upstream.name() == "anthropic" {
                continue;
            }
            expand(&t.kind, &t.function.extra)
        };
        let Some(e) = e else {
            tracing::warn!(tool = %display_name(t), kind = %t.kind,
                "a built-in client tool with no schema here: not offered to this upstream");
            continue;
        };
        if e.unknown_version {
            tracing::info!(tool = %t.function.name, kind = %t.kind, schema_of = e.schema_of,
                "an unknown version of a built-in tool: offered with the nearest known version's schema");
        }
        t.kind = "function".into();
        t.function.description = Some(e.description);
        t.function.parameters = Some(e.parameters);
        t.function.extra.clear();
    }
    openai
}

/// The computer-use pack's tool (`--pack computer`), which runs Anthropic's `computer_…`
/// tool server-side.
pub const COMPUTER_PACK_TOOL: &str = "computer_use";

/// With server-side tools: an Anthropic `computer_…` tool the client declares is taken out
/// of the client's tools when the gateway serves the computer-use pack, whose
/// [`COMPUTER_PACK_TOOL`] the model is offered instead and which drives the real display
/// here (same actions and inputs). A declared display size other than the pack's screen is
/// warned about: the model sees, and its coordinates refer to, the pack's screen. The
/// declared names taken.
pub fn take_served_computer(
    request: &mut ChatRequest,
    served: &toolcall_core::Registry,
) -> Vec<String> {
    let Some(spec) = served.spec(COMPUTER_PACK_TOOL) else {
        return Vec::new();
    };
    let Some(tools) = &mut request.tools else {
        return Vec::new();
    };
    let screen = pack_screen(&spec.description);
    let mut taken = Vec::new();
    tools.retain(|t| {
        let anthropic_computer = t.kind.starts_with("computer_")
            && !toolcall_wire::built_in_tools::is_openai(&t.kind);
        if !anthropic_computer {
            return true;
        }
        let int = |k: &str| t.function.extra.get(k).and_then(Value::as_u64);
        let declared = int("display_width_px").zip(int("display_height_px"));
        match (declared, screen) {
            (Some((dw, dh)), Some((pw, ph))) if (dw, dh) != (pw, ph) => {
                tracing::warn!(tool = %t.function.name, declared = %format!("{dw}x{dh}"),
                    pack = %format!("{pw}x{ph}"),
                    "the client's computer tool declares another display size than the computer pack's screen: the model sees the pack's (set its width and height options to match)");
            }
            _ => {}
        }
        tracing::info!(tool = %t.function.name, kind = %t.kind,
            "the client's computer tool is run here by the computer pack ({COMPUTER_PACK_TOOL})");
        taken.push(t.function.name.clone());
        false
    });
    taken
}

/// The screen size in the computer pack's tool description ("… of a 1024x768 screen."):
/// its first word of the form `WIDTHxHEIGHT`.
fn pack_screen(description: &str) -> Option<(u64, u64)> {
    description.split_whitespace().find_map(|word| {
        let (w, h) = word.split_once('x')?;
        Some((w.parse().ok()?, h.parse().ok()?))
    })
}

/// The most tools one namespace may hold.
const MAX_NAMESPACE_TOOLS: usize = 512;

/// Replaces each `namespace` tool of `request` by its tools, named `NAMESPACE__tool` (a
/// `custom` one stays custom, for [`CustomTools::take`]); the namespaces found.
pub fn expand_namespaces(request: &mut ChatRequest) -> Vec<String> {
    let Some(tools) = &mut request.tools else {
        return Vec::new();
    };
    if !tools.iter().any(|t| t.kind == "namespace") {
        return Vec::new();
    }
    let mut namespaces = Vec::new();
    let mut out = Vec::with_capacity(tools.len());
    for t in std::mem::take(tools) {
        if t.kind != "namespace" {
            out.push(t);
            continue;
        }
        let ns = t.function.name.clone();
        for mut tool in namespace_members(&t, MAX_NAMESPACE_TOOLS) {
            tool.function.name = toolcall_wire::dialect::qualified_name(&ns, &tool.function.name);
            out.push(tool);
        }
        if !namespaces.contains(&ns) {
            namespaces.push(ns);
        }
    }
    *tools = out;
    namespaces
}

/// A custom tool's grammar: its notation and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGrammar {
    pub syntax: Syntax,
    pub definition: String,
}

/// The request's custom tools, by name (with their grammar, if any).
#[derive(Debug, Clone, Default)]
pub struct CustomTools {
    tools: HashMap<String, Option<ToolGrammar>>,
}

/// The most grammar text one tool may carry.
const MAX_GRAMMAR_BYTES: usize = 256 * 1024;

impl CustomTools {
    /// Rewrites the custom tools of `request` as function tools with one string argument
    /// ([`CUSTOM_INPUT`]), the earlier calls to them as calls of that function and a
    /// `tool_choice` naming one as a named function choice; the custom tools found.
    pub fn take(request: &mut ChatRequest) -> Result<Self, ApiError> {
        let mut found = CustomTools::default();
        for t in request.tools.iter_mut().flatten() {
            if t.kind != "custom" {
                continue;
            }
            let f = &mut t.function;
            let format = f.extra.remove("format");
            if f.description.is_none()
                && let Some(Value::String(d)) = f.extra.remove("description")
            {
                f.description = Some(d);
            }
            let mut grammar = grammar_of(&f.name, format.as_ref())?;
            if let Some(g) = &grammar
                && let Err(toolcall_constrain::check::CheckError::Grammar(e)) =
                    check(g.syntax, &g.definition, "")
            {
                // Checking against a grammar the engine cannot read would refuse every call.
                tracing::warn!(tool = %f.name, error = %e, "a custom tool's grammar cannot be read: its input is taken unchecked");
                grammar = None;
            }
            let about = match &grammar {
                Some(g) => format!(
                    "The raw text input, no JSON around it: it must match this {} grammar:\n{}",
                    match g.syntax {
                        Syntax::Lark => "Lark",
                        Syntax::Regex => "regular expression",
                    },
                    g.definition
                ),
                None => "The raw text input, no JSON around it.".to_owned(),
            };
            f.parameters = Some(json!({"type": "object",
                "properties": {CUSTOM_INPUT: {"type": "string", "description": about}},
                "required": [CUSTOM_INPUT], "additionalProperties": false}));
            f.extra.clear();
            t.kind = "function".into();
            found.tools.insert(f.name.clone(), grammar);
        }
        if found.tools.is_empty() {
            return Ok(found);
        }
        for m in &mut request.messages {
            for c in m.tool_calls.iter_mut().flatten() {
                if c.kind == "custom" || found.tools.contains_key(&c.function.name) {
                    let input = match &c.function.arguments {
                        Value::String(s) if c.kind == "custom" => s.clone(),
                        other => match toolcall_wire::decode_arguments(Some(other)) {
                            Ok(_) => continue,
                            Err(_) => other.as_str().unwrap_or_default().to_owned(),
                        },
                    };
                    c.kind = "function".into();
                    c.function.arguments = Value::String(json!({CUSTOM_INPUT: input}).to_string());
                }
            }
        }
        if let Some(name) = request.tool_choice.as_ref().and_then(forced_custom_tool) {
            request.tool_choice = Some(forced_function(name));
        }
        Ok(found)
    }

    /// The custom tools' grammars, for the decoding constraint
    /// ([`toolcall_constrain::build_with_inputs`]).
    pub fn input_grammars(&self) -> Vec<(String, toolcall_constrain::InputGrammar)> {
        self.tools
            .iter()
            .filter_map(|(name, g)| {
                let g = g.as_ref()?;
                let syntax = match g.syntax {
                    Syntax::Lark => toolcall_constrain::InputSyntax::Lark,
                    Syntax::Regex => toolcall_constrain::InputSyntax::Regex,
                };
                Some((
                    name.clone(),
                    toolcall_constrain::InputGrammar {
                        syntax,
                        definition: g.definition.clone(),
                    },
                ))
            })
            .collect()
    }

    /// The custom tools' names.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether `name` is a custom tool whose input a grammar checks.
    pub fn has_grammar(&self, name: &str) -> bool {
        matches!(self.tools.get(name), Some(Some(_)))
    }

    /// Checks a call's input against its tool's grammar (calls to other tools pass).
    pub fn check_call(&self, name: &str, arguments: &Value) -> Result<(), ToolError> {
        let Some(Some(g)) = self.tools.get(name) else {
            return Ok(());
        };
        let input = arguments
            .get(CUSTOM_INPUT)
            .and_then(Value::as_str)
            .unwrap_or_default();
        check(g.syntax, &g.definition, input).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidArguments,
                format!("the input of {name:?} does not match its grammar: {e}"),
            )
        })
    }
}

/// A custom tool's `format`: none or `{"type": "text"}` is free text; `{"type": "grammar",
/// "syntax", "definition"}` (Responses) or `{"type": "grammar", "grammar": {"syntax",
/// "definition"}}` (Chat) a grammar. Anything else is a 400.
fn grammar_of(name: &str, format: Option<&Value>) -> Result<Option<ToolGrammar>, ApiError> {
    match CustomFormat::of(format) {
        CustomFormat::Text => Ok(None),
        CustomFormat::Grammar { syntax, definition } => {
            let syntax = Syntax::from_name(syntax).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "the custom tool {name:?} has a grammar of syntax {syntax:?}: lark or regex are read"
                ))
            })?;
            if definition.len() > MAX_GRAMMAR_BYTES {
                return Err(ApiError::bad_request(format!(
                    "the grammar of the custom tool {name:?} is longer than {MAX_GRAMMAR_BYTES} bytes"
                )));
            }
            Ok(Some(ToolGrammar {
                syntax,
                definition: definition.to_owned(),
            }))
        }
        CustomFormat::Other(other) => Err(ApiError::bad_request(format!(
            "the custom tool {name:?} has a format of type {other:?}: text or grammar are read"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> ChatRequest {
        let mut r: ChatRequest = serde_json::from_value(json!({"model": "m", "messages": [],
            "tools": [{"type": "function", "function": {"name": "f"}}]}))
        .unwrap_or_default();
        for (kind, name) in [
            ("web_search", ""),
            ("web_search_20250305", "web_search"),
            ("code_interpreter", ""),
        ] {
            let t = json!({"type": kind, "name": name});
            r.tools
                .get_or_insert_with(Vec::new)
                .push(toolcall_wire::responses::other_tool(kind, &t));
        }
        r
    }

    #[test]
    fn the_pack_screen_is_read_from_its_description() {
        assert_eq!(
            pack_screen("Use the mouse and keyboard and take screenshots of a 1280x800 screen. x"),
            Some((1280, 800))
        );
        assert_eq!(pack_screen("no size here"), None);
    }

    #[test]
    fn hosted_tools_are_left_out_named_once_or_rejected() {
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Warn, |_| false).unwrap_or_default();
        assert_eq!(dropped, ["web_search", "code_interpreter"]);
        assert_eq!(r.tools.as_ref().map(Vec::len), Some(1));
        let mut r = request();
        let e = take_hosted(&mut r, HostedTools::Reject, |_| false).err();
        assert!(e.is_some_and(|e| e.message.contains("web_search, code_interpreter")));
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Reject, |n| n == "web_search");
        assert_eq!(dropped.ok(), None, "code_interpreter is still rejected");
        let mut r = request();
        let dropped = take_hosted(&mut r, HostedTools::Reject, |n| n != "x").unwrap_or_default();
        assert!(dropped.is_empty());
        assert_eq!(r.tools.as_ref().map(Vec::len), Some(1));
    }
}
