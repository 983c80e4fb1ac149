//! `olmo3`: Olmo 3 writes one Python call per line between `<function_calls>` and
//! `</function_calls>`.

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, RegionReader};

use super::marked::{CallList, CallListReader};

impl FormatId {
    pub(crate) const OLMO3: FormatId = FormatId::builtin("olmo3");
}

pub(crate) struct Olmo3;

impl Family for Olmo3 {
    fn id(&self) -> &'static str {
        FormatId::OLMO3.as_str()
    }
    fn description(&self) -> &'static str {
        "<function_calls>\\nf(a=1)\\n</function_calls>, one call per line (Olmo 3)"
    }
    fn example(&self) -> &'static str {
        "<function_calls>\\nget_weather(city=\"Paris\")\\n</function_calls>"
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<function_calls>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(CallListReader::new(
            FormatId::OLMO3,
            "<function_calls>",
            "</function_calls>",
            CallList::Lines,
        )))
    }
}
