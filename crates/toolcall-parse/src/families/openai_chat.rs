//! `openai_chat`: Chat Completions messages and responses (`tool_calls`, legacy `function_call`), given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};

use crate::FormatId;

impl FormatId {
    pub(crate) const OPENAI_CHAT: FormatId = FormatId::builtin("openai_chat");
}



pub(crate) static OPENAI_CHAT: Described = Described {
    id: FormatId::OPENAI_CHAT,
    description: "Chat Completions message or response with tool_calls (ids kept)",
    example: r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}"#,
    bare: Some(Bare {
        objects: true,
        arrays: false,
        classify: super::native::classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["choices"], &["tool_calls"], &["function_call"], &["role"]],
            elements: &[],
        },
    }),
    generic_because: Some("a provider's native response shape, read from JSON given whole"),
    native: true,
    ..Described::BASE
};

