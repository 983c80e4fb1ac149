//! `responses`: Responses API output items of type `function_call`, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use serde_json::Value;

use crate::FormatId;
use crate::builder::Outcome;
use crate::family::{BareJson, Family, JsonCx};

impl FormatId {
    pub(crate) const RESPONSES: FormatId = FormatId::builtin("responses");
}

pub(crate) struct Responses;

impl Family for Responses {
    fn generic_because(&self) -> Option<&'static str> {
        Some("a provider's native response shape, read from JSON given whole")
    }
    fn id(&self) -> &'static str {
        FormatId::RESPONSES.as_str()
    }
    fn description(&self) -> &'static str {
        "Responses API output items of type function_call (call_id kept)"
    }
    fn example(&self) -> &'static str {
        r#"{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}"#
    }
    fn native(&self) -> bool {
        true
    }
    fn bare_json(&self) -> BareJson {
        BareJson {
            objects: true,
            arrays: true,
        }
    }
    fn classify_json(&self, v: &mut Value, cx: &JsonCx<'_>) -> Option<Outcome> {
        super::native::classify(v, cx.ctx, FormatId::RESPONSES, cx.span.clone())
    }
}
