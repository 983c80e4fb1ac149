//! `anthropic`: Anthropic content blocks of type `tool_use`, given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use serde_json::Value;

use crate::FormatId;
use crate::builder::Outcome;
use crate::family::{BareJson, Family, JsonCx};

impl FormatId {
    pub(crate) const ANTHROPIC: FormatId = FormatId::builtin("anthropic");
}

pub(crate) struct Anthropic;

impl Family for Anthropic {
    fn generic_because(&self) -> Option<&'static str> {
        Some("a provider's native response shape, read from JSON given whole")
    }
    fn id(&self) -> &'static str {
        FormatId::ANTHROPIC.as_str()
    }
    fn description(&self) -> &'static str {
        "Anthropic content blocks of type tool_use (id kept)"
    }
    fn example(&self) -> &'static str {
        r#"{"content":[{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}}]}"#
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
        super::native::classify(v, cx.ctx, FormatId::ANTHROPIC, cx.span.clone())
    }
}
