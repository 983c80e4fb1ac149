//! The kinds of tool declaration clients send, read from a neutral tool's `kind` (its
//! dialect's `type`, kept by every decoder in [`crate::chat::ChatTool::kind`]).
//!
//! - **function**: a JSON function (Chat `function`, Responses `function`, Anthropic
//!   `custom` or no `type`, Gemini function declarations).
//! - **custom**: a freeform tool whose input is one raw text, optionally under a grammar
//!   (Responses and Chat `custom`).
//! - **namespace**: a group of function tools under one name (Codex's `namespace`).
//! - **built-in client tools**: tools the client runs but whose schema the provider's own
//!   models know (Anthropic `computer_*`, `bash_*`, `text_editor_*`, `memory_*`; OpenAI
//!   `computer_use_preview`, `local_shell`).
//! - **hosted**: everything else: tools the provider runs on its own servers (`web_search`,
//!   `file_search`, `code_interpreter`, `image_generation`, `mcp`, Anthropic's
//!   `web_search_…`, `web_fetch_…`, `code_execution_…`, and any kind not known here). A
//!   gateway in front of another model server cannot run them.

use serde_json::{Value, json};

use crate::chat::ChatTool;

/// What a tool declaration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Function,
    Custom,
    Namespace,
    /// A client tool whose schema the provider's own models know.
    BuiltIn,
    /// A tool only the provider's servers run.
    Hosted,
}

/// Built-in client tool kinds: the prefix of their versioned `type`.
pub const BUILT_IN_PREFIXES: &[&str] = &[
    "computer_",
    "bash_",
    "text_editor_",
    "memory_",
    "computer_use_preview",
    "local_shell",
];

impl ToolKind {
    /// The kind of a declaration's `type`.
    pub fn of(kind: &str) -> ToolKind {
        match kind {
            "function" => ToolKind::Function,
            "custom" => ToolKind::Custom,
            "namespace" => ToolKind::Namespace,
            k if BUILT_IN_PREFIXES.iter().any(|p| k.starts_with(p)) => ToolKind::BuiltIn,
            _ => ToolKind::Hosted,
        }
    }
}

/// The name a tool is known by in messages and logs: its `name`, or its `type` when it has
/// none (Responses' hosted tools: `{"type": "web_search"}`).
pub fn display_name(tool: &ChatTool) -> &str {
    if tool.function.name.is_empty() {
        &tool.kind
    } else {
        &tool.function.name
    }
}

/// A custom tool's `format` as the client declared it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomFormat<'a> {
    /// No `format`, or `{"type": "text"}`: free text.
    Text,
    /// `{"type": "grammar", "syntax", "definition"}` (Responses) or
    /// `{"type": "grammar", "grammar": {"syntax", "definition"}}` (Chat); an absent field is
    /// empty.
    Grammar {
        syntax: &'a str,
        definition: &'a str,
    },
    /// A `format` of another `type` (named, or empty when it has none).
    Other(&'a str),
}

impl<'a> CustomFormat<'a> {
    /// `format` read in both dialects' shapes.
    pub fn of(format: Option<&'a Value>) -> Self {
        let Some(format) = format else {
            return CustomFormat::Text;
        };
        let str_at = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str);
        match str_at(format, "type") {
            Some("text") => CustomFormat::Text,
            Some("grammar") => {
                // Chat nests the grammar, Responses does not.
                let g = format.get("grammar").unwrap_or(format);
                CustomFormat::Grammar {
                    syntax: str_at(g, "syntax").unwrap_or_default(),
                    definition: str_at(g, "definition").unwrap_or_default(),
                }
            }
            Some(other) => CustomFormat::Other(other),
            None => CustomFormat::Text,
        }
    }
}

/// The tools a `namespace` declaration holds (its `tools`, at most `max`), each as a
/// neutral tool under its own name: a function's `description` and `parameters` lifted
/// into place (and `strict` kept), any other kind kept as declared.
pub fn namespace_members(namespace: &ChatTool, max: usize) -> Vec<ChatTool> {
    let members = namespace
        .function
        .extra
        .get("tools")
        .and_then(Value::as_array);
    members
        .into_iter()
        .flatten()
        .take(max)
        .map(|member| {
            let kind = member
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("function");
            let mut tool = crate::responses::other_tool(kind, member);
            if kind == "function" {
                let f = &mut tool.function;
                f.parameters = f.extra.remove("parameters");
                if let Some(Value::String(d)) = f.extra.remove("description") {
                    f.description = Some(d);
                }
                f.extra.retain(|k, _| k == "strict");
            }
            tool
        })
        .collect()
}

/// The tool a `tool_choice` forcing a custom tool names: Responses'
/// `{"type": "custom", "name"}` or Chat's `{"type": "custom", "custom": {"name"}}`.
pub fn forced_custom_tool(choice: &Value) -> Option<&str> {
    if choice.get("type").and_then(Value::as_str) != Some("custom") {
        return None;
    }
    choice
        .get("name")
        .or_else(|| choice.get("custom").and_then(|c| c.get("name")))
        .and_then(Value::as_str)
}

/// A neutral (Chat) `tool_choice` forcing the function `name`.
pub fn forced_function(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_read_from_the_type() {
        for (t, k) in [
            ("function", ToolKind::Function),
            ("custom", ToolKind::Custom),
            ("namespace", ToolKind::Namespace),
            ("computer_20250124", ToolKind::BuiltIn),
            ("bash_20250124", ToolKind::BuiltIn),
            ("text_editor_20250728", ToolKind::BuiltIn),
            ("memory_20250818", ToolKind::BuiltIn),
            ("computer_use_preview", ToolKind::BuiltIn),
            ("web_search", ToolKind::Hosted),
            ("web_search_preview_2025_03_11", ToolKind::Hosted),
            ("web_search_20250305", ToolKind::Hosted),
            ("web_fetch_20250910", ToolKind::Hosted),
            ("code_execution_20250825", ToolKind::Hosted),
            ("file_search", ToolKind::Hosted),
            ("code_interpreter", ToolKind::Hosted),
            ("something_new", ToolKind::Hosted),
        ] {
            assert_eq!(ToolKind::of(t), k, "{t}");
        }
    }

    #[test]
    fn custom_formats_and_choices_are_read_in_both_dialects() {
        let responses = json!({"type": "grammar", "syntax": "lark", "definition": "start: \"a\""});
        let chat = json!({"type": "grammar", "grammar": {"syntax": "regex", "definition": "a+"}});
        assert_eq!(
            CustomFormat::of(Some(&responses)),
            CustomFormat::Grammar {
                syntax: "lark",
                definition: "start: \"a\""
            }
        );
        assert_eq!(
            CustomFormat::of(Some(&chat)),
            CustomFormat::Grammar {
                syntax: "regex",
                definition: "a+"
            }
        );
        assert_eq!(CustomFormat::of(None), CustomFormat::Text);
        assert_eq!(
            CustomFormat::of(Some(&json!({"type": "text"}))),
            CustomFormat::Text
        );
        assert_eq!(
            CustomFormat::of(Some(&json!({"type": "json"}))),
            CustomFormat::Other("json")
        );
        assert_eq!(
            forced_custom_tool(&json!({"type": "custom", "name": "apply_patch"})),
            Some("apply_patch")
        );
        assert_eq!(
            forced_custom_tool(&json!({"type": "custom", "custom": {"name": "sql"}})),
            Some("sql")
        );
        assert_eq!(
            forced_custom_tool(&json!({"type": "function", "name": "f"})),
            None
        );
    }

    #[test]
    fn namespace_members_are_lifted_and_bounded() {
        let ns = crate::responses::other_tool(
            "namespace",
            &json!({"type": "namespace", "name": "multi_agent_v1", "tools": [
                {"type": "function", "name": "spawn_agent", "description": "Spawn",
                 "parameters": {"type": "object"}, "strict": true, "x": 1},
                {"type": "custom", "name": "note"},
                {"name": "wait"}
            ]}),
        );
        let members = namespace_members(&ns, 2);
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].function.name, "spawn_agent");
        assert_eq!(members[0].function.description.as_deref(), Some("Spawn"));
        assert_eq!(
            members[0].function.parameters,
            Some(json!({"type": "object"}))
        );
        assert_eq!(
            members[0].function.extra.keys().collect::<Vec<_>>(),
            ["strict"]
        );
        assert_eq!(members[1].kind, "custom");
        assert_eq!(namespace_members(&ns, 10).len(), 3);
    }
}
