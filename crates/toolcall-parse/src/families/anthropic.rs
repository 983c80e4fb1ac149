//! `anthropic`: Anthropic content blocks of type `tool_use`, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};

use crate::FormatId;

impl FormatId {
    pub(crate) const ANTHROPIC: FormatId = FormatId::builtin("anthropic");
}



pub(crate) static ANTHROPIC: Described = Described {
    id: FormatId::ANTHROPIC,
    description: "Anthropic content blocks of type tool_use (id kept)",
    example: r#"{"content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]}"#,
    bare: Some(Bare {
        objects: true,
        arrays: true,
        classify: super::native::classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["content"], &["type"]],
            elements: &[&["type"]],
        },
    }),
    generic_because: Some("a provider's native response shape, read from JSON given whole"),
    native: true,
    ..Described::BASE
};

