//! `fallback`: opt-in per-tool rules (F-FB-1) tried on the whole reply when nothing else
//! matched. The rules and their matching live in [`crate::fallback`]; this module only
//! registers the format.

use super::described::{Described};
use crate::FormatId;

impl FormatId {
    pub(crate) const FALLBACK: FormatId = FormatId::builtin("fallback");
}


pub(crate) static FALLBACK: Described = Described {
    id: FormatId::FALLBACK,
    description: "opt-in per-tool rules (label_list, intent, completion) from --fallbacks; used only when nothing else matched",
    example: "I'll highlight the cup for you",
    generic_because: Some("opt-in rules given by the user, not a model's markup"),
    ..Described::BASE
};

