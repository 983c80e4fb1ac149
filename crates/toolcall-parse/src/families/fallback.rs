//! `fallback`: opt-in per-tool rules (F-FB-1) tried on the whole reply when nothing else
//! matched. The rules and their matching live in [`crate::fallback`]; this module only
//! registers the format.

use crate::FormatId;
use crate::family::Family;

impl FormatId {
    pub(crate) const FALLBACK: FormatId = FormatId::builtin("fallback");
}

pub(crate) struct Fallback;

impl Family for Fallback {
    fn generic_because(&self) -> Option<&'static str> {
        Some("opt-in rules given by the user, not a model's markup")
    }
    fn id(&self) -> &'static str {
        FormatId::FALLBACK.as_str()
    }
    fn description(&self) -> &'static str {
        "opt-in per-tool rules (label_list, intent, completion) from --fallbacks; used only when nothing else matched"
    }
    fn example(&self) -> &'static str {
        "I'll highlight the cup for you"
    }
}
