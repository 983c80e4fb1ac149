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
}
