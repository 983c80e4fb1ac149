//! System-prompt instructions for models without native tool calling (O-2).
//!
//! For a family offered as a text format (one with [`crate::Instructions`]) the prompt says
//! how to write a call, lists every enabled tool (V-4) with its description and arguments
//! schema, and shows a worked example for the first tool, with arguments synthesised from
//! its schema by [`toolcall_core::render::prompt::example_arguments`]. The syntax and the
//! example come from the family module that also reads it, so they cannot drift apart.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use toolcall_core::render::object_schema;
use toolcall_core::render::prompt::example_arguments;
use toolcall_core::{Registry, ToolSpec};

use crate::{FormatId, ParseError};

/// The families that can be asked for in a system prompt, in priority order.
pub fn text_formats() -> Vec<FormatId> {
    FormatId::all()
        .filter(|f| f.family().is_some_and(|fam| fam.instructions().is_some()))
        .collect()
}

/// One call written in `format`'s syntax; `None` when it is not a text format.
pub fn example_call(format: FormatId, name: &str, args: &Map<String, Value>) -> Option<String> {
    format.family()?.example_call(name, args)
}

fn not_text(format: FormatId) -> ParseError {
    let ids: Vec<&str> = text_formats().iter().map(|f| f.as_str()).collect();
    ParseError::NotTextFormat(format.as_str().to_owned(), ids.join(", "))
}

/// The system-prompt instructions for `format`, listing the registry's enabled tools.
pub fn render_prompt(registry: &Registry, format: FormatId) -> Result<String, ParseError> {
    render_prompt_with_trigger(registry, format, None)
}

/// [`render_prompt`], where every call must begin with `trigger` (a marker the caller
/// chose, e.g. a per-request random token): the example starts with it and a rule says so.
/// Reading replies that way (markup without the trigger is text) is the caller's part.
pub fn render_prompt_with_trigger(
    registry: &Registry,
    format: FormatId,
    trigger: Option<&str>,
) -> Result<String, ParseError> {
    let family = format.family().ok_or_else(|| not_text(format))?;
    let how = family.instructions().ok_or_else(|| not_text(format))?;
    let tools: Vec<&ToolSpec> = registry.enabled_specs().collect();
    let Some(first) = tools.first() else {
        return Ok(
            "No tools are available in this conversation. Reply in plain text.\n".to_owned(),
        );
    };
    let mut out = String::new();
    out.push_str("You can call tools. ");
    out.push_str(how.how);
    out.push_str("\n\n## Available tools\n");
    for spec in &tools {
        let _ = write!(out, "\n- `{}`", spec.name);
        if !spec.description.is_empty() {
            // Continuation lines stay inside the list item.
            let _ = write!(out, ": {}", spec.description.trim().replace('\n', "\n  "));
        }
        let _ = write!(out, "\n  arguments (JSON Schema): {}", object_schema(spec));
    }
    let args = example_arguments(&first.parameters);
    let example = family
        .example_call(&first.name, &args)
        .ok_or_else(|| not_text(format))?;
    let _ = write!(
        out,
        "\n\n## Example\n\nTo call `{}`{}, reply with:\n\n{}{}\n",
        first.name,
        if args.is_empty() {
            ""
        } else {
            " with these arguments"
        },
        trigger.unwrap_or(""),
        example
    );
    out.push_str("\n## Rules\n\n");
    if let Some(trigger) = trigger {
        let _ = writeln!(
            out,
            "- Begin every call with the marker {trigger} written exactly, right before the call as in the example. Call syntax without this marker right before it is read as plain text, not a call. Write the marker only to make a call."
        );
    }
    out.push_str("- Call only the tools listed above, with exactly their names.\n");
    out.push_str(
        "- Give every required argument, with the type its schema says; give no other arguments.\n",
    );
    out.push_str(how.several);
    out.push_str(
        "- Each call gets a result in the next message. If no tool is needed, answer in plain text without any call syntax.\n",
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add_spec(ToolSpec::new(
            "computer_use",
            "Use the computer: screenshots, clicks, typing.",
            json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["screenshot", "left_click", "type"]},
                    "coordinate": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2},
                    "text": {"type": "string"}
                },
                "required": ["action"]
            }),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new(
            "highlight_object",
            "Highlight an object in view\nwith a box",
            json!({"type":"object","properties":{"object":{"type":"string","examples":["cup"]}},"required":["object"]}),
        ))
        .unwrap();
        r.add_spec(ToolSpec::new("secret_tool", "Not offered", json!({})))
            .unwrap();
        r.set_enabled("secret_tool", false).unwrap();
        r
    }

    fn example_of(p: &str) -> String {
        let start = p.find("reply with:\n\n").unwrap() + "reply with:\n\n".len();
        let end = p[start..].find("\n\n## Rules").unwrap() + start;
        p[start..end].to_owned()
    }

    fn id(s: &str) -> FormatId {
        FormatId::from_name(s).unwrap()
    }

    // A trigger leads the example and a rule; without one the prompt is as before.
    #[test]
    fn a_trigger_leads_the_example_and_is_a_rule() {
        let r = registry();
        let plain = render_prompt(&r, id("hermes")).unwrap();
        let with = render_prompt_with_trigger(&r, id("hermes"), Some("<call_x1/>")).unwrap();
        assert!(!plain.contains("<call_x1/>"));
        assert_eq!(
            example_of(&with),
            format!("<call_x1/>{}", example_of(&plain))
        );
        assert!(
            with.contains("- Begin every call with the marker <call_x1/>"),
            "{with}"
        );
    }

    // covers O-2, V-4
    #[test]
    fn every_format_lists_enabled_tools_and_a_real_example() {
        let r = registry();
        let expected = [
            (
                "tools_envelope",
                "```json\n{\"tools\":[{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}]}\n```",
            ),
            (
                "hermes",
                "<tool_call>{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}</tool_call>",
            ),
            ("key_value", "TOOL_CALL: computer_use\nACTION: screenshot"),
            ("call_syntax", "computer_use(action=\"screenshot\")"),
            ("pythonic", "[computer_use(action=\"screenshot\")]"),
            (
                "mistral",
                "[TOOL_CALLS][{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}]",
            ),
            (
                "llama",
                "{\"name\":\"computer_use\",\"parameters\":{\"action\":\"screenshot\"}}",
            ),
            (
                "json",
                "{\"name\":\"computer_use\",\"arguments\":{\"action\":\"screenshot\"}}",
            ),
            (
                "action_response",
                "{\"session_id\":\"session_123\",\"command\":\"computer_use\",\"args\":{\"action\":\"screenshot\"},\"text\":\"Doing it now.\"}",
            ),
        ];
        for (format, example) in expected {
            let p = render_prompt(&r, id(format)).unwrap();
            assert_eq!(example_of(&p), example, "{format}");
            assert!(p.contains("- `computer_use`: Use the computer"), "{format}");
            assert!(
                p.contains("- `highlight_object`: Highlight an object in view\n  with a box\n"),
                "{format}"
            );
            assert!(
                p.contains("\"enum\":[\"screenshot\",\"left_click\",\"type\"]"),
                "{format}"
            );
            assert!(
                !p.contains("secret_tool"),
                "{format}: disabled tool offered"
            );
        }
    }

    // covers O-2
    #[test]
    fn first_enabled_tool_drives_the_example_and_empty_registry_says_so() {
        let mut r = registry();
        r.set_enabled("computer_use", false).unwrap();
        let p = render_prompt(&r, id("key_value")).unwrap();
        assert_eq!(example_of(&p), "TOOL_CALL: highlight_object\nOBJECT: cup");
        assert!(!p.contains("computer_use"));
        let empty = Registry::new();
        assert!(
            render_prompt(&empty, id("json"))
                .unwrap()
                .contains("No tools")
        );
        let err = render_prompt(&r, id("openai_chat"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("hermes"), "{err}");
    }

    // covers O-2: examples of nested values in Python and key/value syntax
    #[test]
    fn examples_write_each_syntax() {
        let args = example_arguments(&json!({
            "type": "object",
            "properties": {
                "coordinate": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2},
                "flag": {"type": ["boolean", "null"]},
                "obj": {"type": "object", "properties": {"k": {"type": "string", "default": "v"}}, "required": ["k"]}
            },
            "required": ["coordinate", "flag", "obj"]
        }));
        assert_eq!(
            example_call(id("pythonic"), "f", &args).unwrap(),
            "[f(coordinate=[0, 0], flag=True, obj={\"k\": \"v\"})]"
        );
        assert_eq!(
            example_call(id("key_value"), "f", &args).unwrap(),
            "TOOL_CALL: f\nCOORDINATE: [0,0]\nFLAG: true\nOBJ: {\"k\":\"v\"}"
        );
    }
}
