//! `tool_calls_tag`: Hunyuan, Jamba and Apriel write a JSON list of `{name, arguments}`
//! between `<tool_calls>` and `</tool_calls>`.

use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::tags::{Block, BlockReader};
use super::marked::{json_body, json_lead};

impl FormatId {
    pub(crate) const TOOL_CALLS_TAG: FormatId = FormatId::builtin("tool_calls_tag");
}

static BLOCK: Block = Block {
    format: FormatId::TOOL_CALLS_TAG,
    open: "<tool_calls>",
    close: "</tool_calls>",
    lead: json_lead,
    body: json_body,
};

pub(crate) struct ToolCallsTag;

impl Family for ToolCallsTag {
    fn id(&self) -> &'static str {
        FormatId::TOOL_CALLS_TAG.as_str()
    }
    fn description(&self) -> &'static str {
        "<tool_calls>[{\"name\", \"arguments\"}]</tool_calls> (Hunyuan, Jamba, Apriel)"
    }
    fn example(&self) -> &'static str {
        r#"<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<tool_calls>"]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_list(ctx.limits.max_depth),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <tool_calls>, a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}, then </tool_calls>."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<tool_calls>{}</tool_calls>", name_arguments_list(name, args)))
    }
}
