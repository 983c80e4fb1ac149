//! `openai_chat`: Chat Completions messages and responses (`tool_calls`, legacy `function_call`), given as JSON whole ([`crate::parse_native`]) or
//! found as a JSON object in text. The decoding lives in [`super::native`].

use serde_json::Value;

use crate::FormatId;
use crate::builder::Outcome;
use crate::family::{BareJson, Family, JsonCx};

impl FormatId {
    pub(crate) const OPENAI_CHAT: FormatId = FormatId::builtin("openai_chat");
}

pub(crate) struct OpenaiChat;

impl Family for OpenaiChat {
    fn generic_because(&self) -> Option<&'static str> {
        Some("a provider's native response shape, read from JSON given whole")
    }
    fn id(&self) -> &'static str {
        FormatId::OPENAI_CHAT.as_str()
    }
    fn description(&self) -> &'static str {
        "Chat Completions message or response with tool_calls (ids kept)"
    }
    fn example(&self) -> &'static str {
        r#"{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}"#
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
        super::native::classify(v, cx.ctx, FormatId::OPENAI_CHAT, cx.span.clone())
    }
}
