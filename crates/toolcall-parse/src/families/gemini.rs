//! `gemini`: Gemini `functionCall` parts or candidates, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use serde_json::Value;

use crate::FormatId;
use crate::builder::Outcome;
use crate::family::{BareJson, Family, JsonCx};

impl FormatId {
    pub(crate) const GEMINI: FormatId = FormatId::builtin("gemini");
}

pub(crate) struct Gemini;

impl Family for Gemini {
    fn generic_because(&self) -> Option<&'static str> {
        Some("a provider's native response shape, read from JSON given whole")
    }
    fn id(&self) -> &'static str {
        FormatId::GEMINI.as_str()
    }
    fn description(&self) -> &'static str {
        "Gemini functionCall parts or candidates"
    }
    fn example(&self) -> &'static str {
        r#"{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]}"#
    }
    fn native(&self) -> bool {
        true
    }
    fn bare_json(&self) -> BareJson {
        BareJson {
            objects: true,
            arrays: false,
        }
    }
    fn classify_json(&self, v: &mut Value, cx: &JsonCx<'_>) -> Option<Outcome> {
        super::native::classify(v, cx.ctx, FormatId::GEMINI, cx.span.clone())
    }
}
