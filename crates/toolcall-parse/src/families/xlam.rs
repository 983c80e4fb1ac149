//! `xlam`: Salesforce xLAM answers with a JSON list of `{name, arguments}`, as the whole reply
//! or in a code fence of any language tag. Read from bare JSON lists only (registered names
//! when a registry is given); in auto mode the `json` family reads the same lists first.

use serde_json::Value;

use crate::FormatId;
use crate::builder::Outcome;
use crate::family::{BareJson, Family, JsonCx, json_calls};

impl FormatId {
    pub(crate) const XLAM: FormatId = FormatId::builtin("xlam");
}

pub(crate) struct Xlam;

impl Family for Xlam {
    fn id(&self) -> &'static str {
        FormatId::XLAM.as_str()
    }
    fn description(&self) -> &'static str {
        "a JSON list of {\"name\", \"arguments\"}, whole or in a code fence (Salesforce xLAM)"
    }
    fn example(&self) -> &'static str {
        "```json\\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\\n```"
    }
    fn bare_json(&self) -> BareJson {
        BareJson {
            objects: false,
            arrays: true,
        }
    }
    fn classify_json(&self, v: &mut Value, cx: &JsonCx<'_>) -> Option<Outcome> {
        if !v.is_array() {
            return None;
        }
        json_calls(v, cx.ctx, FormatId::XLAM, false, cx.span.clone())
    }
}
