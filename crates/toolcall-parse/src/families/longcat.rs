//! `longcat`: LongCat-Flash writes one `{name, arguments}` object per
//! `<longcat_tool_call>` … `</longcat_tool_call>`.

use super::text_example::{name_arguments};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::tags::{Block, BlockReader};
use super::marked::{json_body, json_lead};

impl FormatId {
    pub(crate) const LONGCAT: FormatId = FormatId::builtin("longcat");
}

static BLOCK: Block = Block {
    format: FormatId::LONGCAT,
    open: "<longcat_tool_call>",
    close: "</longcat_tool_call>",
    lead: json_lead,
    body: json_body,
};

pub(crate) struct LongCat;

impl Family for LongCat {
    fn id(&self) -> &'static str {
        FormatId::LONGCAT.as_str()
    }
    fn description(&self) -> &'static str {
        "<longcat_tool_call>{\"name\", \"arguments\"}</longcat_tool_call> (LongCat-Flash)"
    }
    fn example(&self) -> &'static str {
        r#"<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</longcat_tool_call>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<longcat_tool_call>"]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_list(ctx.limits.max_depth),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call a tool, write <longcat_tool_call>{"name": TOOL_NAME, "arguments": {...}}</longcat_tool_call> with a JSON object inside the tags."#,
            several: "- To make several calls, write several <longcat_tool_call> blocks; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<longcat_tool_call>{}</longcat_tool_call>", name_arguments(name, args)))
    }
}
