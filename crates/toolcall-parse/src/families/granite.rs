//! `granite`: IBM Granite 3.x writes `<|tool_call|>` and a JSON list of `{name, arguments}`; no
//! closing marker: the call ends with its JSON.

use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::marked::OpenJsonReader;

impl FormatId {
    pub(crate) const GRANITE: FormatId = FormatId::builtin("granite");
}

const OPEN: &str = "<|tool_call|>";

pub(crate) struct Granite;

impl Family for Granite {
    fn id(&self) -> &'static str {
        FormatId::GRANITE.as_str()
    }
    fn description(&self) -> &'static str {
        "<|tool_call|>[{\"name\", \"arguments\"}] (Granite 3); ends with the JSON"
    }
    fn example(&self) -> &'static str {
        r#"<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &[OPEN]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(OpenJsonReader::new(
            FormatId::GRANITE,
            OPEN.len(),
            ctx.limits.max_depth,
        )))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <|tool_call|> followed by a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}; nothing follows the list."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|tool_call|>{}", name_arguments_list(name, args)))
    }
}
