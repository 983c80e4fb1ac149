//! Tools for models without native tool calling (`--emulate-tools`, or `emulate_tools` per
//! model): the request's tools go into the system prompt as the family's own text-format
//! instructions, `tools`/`tool_choice`/`parallel_tool_calls` are taken out of the upstream
//! request, earlier calls are written back in the family's syntax, and each run of tool
//! results (`role: "tool"`) becomes one user message written as that family's models read
//! results (Hermes `<tool_response>` blocks unless the family's template says otherwise).
//! The reply is then read with that family alone.

use std::collections::HashMap;

use serde_json::Value;
use toolcall_core::Registry;
use toolcall_parse::{FormatId, ToolResultText, example_call, render_prompt, write_tool_results};
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
    // A run of tool results becomes one user message, written as the family's models read
    // results; each result's name comes from the call it answers.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut results: Vec<(String, String, String)> = Vec::new();
    for m in rest {
        if m.role == "tool" {
            let call_id = m.tool_call_id.clone().unwrap_or_default();
            let name = m
                .name
                .clone()
                .or_else(|| names.get(&call_id).cloned())
                .unwrap_or_default();
            let content = match &m.content {
                Some(Value::String(s)) => s.clone(),
                _ => m.content_text().unwrap_or_default(),
            };
            results.push((call_id, name, content));
            continue;
        }
        flush_results(format, &mut results, &mut messages);
        messages.push(match m.role.as_str() {
            "assistant" if m.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) => {
                let mut text = m.content_text().unwrap_or_default();
                for c in m.tool_calls.iter().flatten() {
                    names.insert(c.id.clone(), c.function.name.clone());
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
            _ => m.clone(),
        });
    }
    flush_results(format, &mut results, &mut messages);
    out.messages = messages;
    Ok(out)
}

/// Writes the pending tool results `(call id, name, content)` as one user message.
fn flush_results(
    format: FormatId,
    results: &mut Vec<(String, String, String)>,
    messages: &mut Vec<ChatMessage>,
) {
    if results.is_empty() {
        return;
    }
    let texts: Vec<ToolResultText<'_>> = results
        .iter()
        .map(|(call_id, name, content)| ToolResultText {
            call_id,
            name,
            content,
        })
        .collect();
    messages.push(ChatMessage::text(
        "user",
        write_tool_results(format, &texts),
    ));
    results.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::ToolSpec;

    fn request() -> ChatRequest {
        serde_json::from_value(json!({"model": "m", "messages": [
            {"role": "user", "content": "weather in Rome and the time?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "get_time", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"sunny\"}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "user", "content": "thanks"}
        ]}))
        .unwrap()
    }

    fn registry() -> Registry {
        let mut r = Registry::new();
        for name in ["get_weather", "get_time"] {
            r.add_spec(ToolSpec::new(
                name,
                "",
                json!({"type": "object", "properties": {}}),
            ))
            .unwrap();
        }
        r
    }

    // Issue #11: a run of tool results is one user message in the family's own result
    // syntax, each result named after the call it answers.
    #[test]
    fn tool_results_are_written_in_the_family_format() {
        for (format, want) in [
            (
                "hermes",
                "<tool_response call_id=\"call_1\" name=\"get_weather\">\n{\"sky\":\"sunny\"}\n</tool_response>\n\
                 <tool_response call_id=\"call_2\" name=\"get_time\">\nnoon\n</tool_response>\n",
            ),
            (
                "mistral",
                "[TOOL_RESULTS]{\"call_id\":\"call_1\",\"content\":{\"sky\":\"sunny\"}}[/TOOL_RESULTS]\
                 [TOOL_RESULTS]{\"call_id\":\"call_2\",\"content\":\"noon\"}[/TOOL_RESULTS]",
            ),
            (
                "kimi_k2",
                "## Return of call_1\n{\"sky\":\"sunny\"}\n## Return of call_2\nnoon\n",
            ),
        ] {
            let f = FormatId::from_name(format).unwrap();
            let out = rewrite(&request(), &registry(), f).unwrap();
            let roles: Vec<&str> = out.messages.iter().map(|m| m.role.as_str()).collect();
            assert_eq!(
                roles,
                ["system", "user", "assistant", "user", "user"],
                "{format}"
            );
            assert_eq!(out.messages[3].content_text().unwrap(), want, "{format}");
        }
    }
}
