//! `gemini`: Gemini `functionCall` parts or candidates, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};

use crate::FormatId;

impl FormatId {
    pub(crate) const GEMINI: FormatId = FormatId::builtin("gemini");
}



pub(crate) static GEMINI: Described = Described {
    id: FormatId::GEMINI,
    description: "Gemini functionCall parts or candidates",
    example: r#"{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]}"#,
    bare: Some(Bare {
        objects: true,
        arrays: false,
        classify: super::native::classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["candidates"], &["parts"], &["functionCall"]],
            elements: &[],
        },
    }),
    generic_because: Some("a provider's native response shape, read from JSON given whole"),
    native: true,
    ..Described::BASE
};

