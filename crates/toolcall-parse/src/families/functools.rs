//! `functools`: Phi-4-mini and FireFunction write `functools` followed at once by a JSON list of
//! `{name, arguments}`. The opener includes the `[`, so prose about Python's `functools`
//! module is never read.

use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::marked::OpenJsonReader;

impl FormatId {
    pub(crate) const FUNCTOOLS: FormatId = FormatId::builtin("functools");
}

const OPEN: &str = "functools[";

pub(crate) struct Functools;

impl Family for Functools {
    fn id(&self) -> &'static str {
        FormatId::FUNCTOOLS.as_str()
    }
    fn description(&self) -> &'static str {
        "functools[{\"name\", \"arguments\"}] (Phi-4-mini, FireFunction)"
    }
    fn example(&self) -> &'static str {
        r#"functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &[OPEN]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(OpenJsonReader::new(
            FormatId::FUNCTOOLS,
            OPEN.len() - 1,
            ctx.limits.max_depth,
        )))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write functools immediately followed by a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("functools{}", name_arguments_list(name, args)))
    }
}
