//! Tools for models without native tool calling (`--emulate-tools`, or `emulate_tools` per
//! model): the request's tools go into the system prompt as the family's own text-format
//! instructions, `tools`/`tool_choice`/`parallel_tool_calls` are taken out of the upstream
//! request, earlier calls are written back in the family's syntax, and tool results
//! (`role: "tool"`) become user messages in `<tool_response>` blocks. The reply is then read
//! with that family alone.

use serde_json::Value;
use toolcall_core::Registry;
use toolcall_parse::{FormatId, example_call, render_prompt};
use toolcall_wire::chat::{ChatMessage, ChatRequest};
use toolcall_wire::decode_arguments;

use crate::ApiError;

/// The family used when the configured format is not one text family.
pub const DEFAULT_FORMAT: &str = "hermes";

/// The text family to emulate with: the configured one when it names a text format, else
/// Hermes (`None` only if no text format is registered).
pub fn format_for(configured: Option<&str>) -> Option<FormatId> {
    configured
        .and_then(FormatId::from_name)
        .filter(|f| toolcall_parse::text_formats().contains(f))
        .or_else(|| FormatId::from_name(DEFAULT_FORMAT))
        .or_else(|| toolcall_parse::text_formats().first().copied())
}

/// `request` rewritten for an upstream that is told about tools only in its prompt.
pub fn rewrite(
    request: &ChatRequest,
    registry: &Registry,
    format: FormatId,
) -> Result<ChatRequest, ApiError> {
    let prompt =
        render_prompt(registry, format).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut out = request.clone();
    out.tools = None;
    out.tool_choice = None;
    out.parallel_tool_calls = None;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let mut rest = request.messages.iter().peekable();
    match rest.peek() {
        Some(first) if first.role == "system" || first.role == "developer" => {
            let own = first.content_text().unwrap_or_default();
            messages.push(ChatMessage::text("system", format!("{own}\n\n{prompt}")));
            rest.next();
        }
        _ => messages.push(ChatMessage::text("system", prompt)),
    }
    for m in rest {
        messages.push(match m.role.as_str() {
            "assistant" if m.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) => {
                let mut text = m.content_text().unwrap_or_default();
                for c in m.tool_calls.iter().flatten() {
                    let args = decode_arguments(Some(&c.function.arguments)).unwrap_or_default();
                    if let Some(call) = example_call(format, &c.function.name, &args) {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&call);
                    }
                }
                ChatMessage::text("assistant", text)
            }
            "tool" => {
                let content = match &m.content {
                    Some(Value::String(s)) => s.clone(),
                    _ => m.content_text().unwrap_or_default(),
                };
                ChatMessage::text(
                    "user",
                    format!("<tool_response>\n{content}\n</tool_response>"),
                )
            }
            _ => m.clone(),
        });
    }
    out.messages = messages;
    Ok(out)
}
