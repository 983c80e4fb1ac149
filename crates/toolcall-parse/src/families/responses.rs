//! `responses`: Responses API output items of type `function_call`, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};

use crate::FormatId;

impl FormatId {
    pub(crate) const RESPONSES: FormatId = FormatId::builtin("responses");
}



pub(crate) static RESPONSES: Described = Described {
    id: FormatId::RESPONSES,
    description: "Responses API output items of type function_call (call_id kept)",
    example: r#"{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}"#,
    bare: Some(Bare {
        objects: true,
        arrays: true,
        classify: super::native::classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["output"], &["type"]],
            elements: &[&["type"]],
        },
    }),
    generic_because: Some("a provider's native response shape, read from JSON given whole"),
    native: true,
    ..Described::BASE
};

