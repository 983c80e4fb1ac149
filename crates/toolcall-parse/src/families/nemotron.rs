//! `nemotron`: NVIDIA Llama-Nemotron writes a JSON list of `{name, arguments}`
//! between `<TOOLCALL>` and `</TOOLCALL>`.

use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::tags::{Block, BlockReader};
use super::marked::{json_body, json_lead};

impl FormatId {
    pub(crate) const NEMOTRON: FormatId = FormatId::builtin("nemotron");
}

static BLOCK: Block = Block {
    format: FormatId::NEMOTRON,
    open: "<TOOLCALL>",
    close: "</TOOLCALL>",
    lead: json_lead,
    body: json_body,
};

pub(crate) struct Nemotron;

impl Family for Nemotron {
    fn id(&self) -> &'static str {
        FormatId::NEMOTRON.as_str()
    }
    fn description(&self) -> &'static str {
        "<TOOLCALL>[{\"name\", \"arguments\"}]</TOOLCALL> (Llama-Nemotron)"
    }
    fn example(&self) -> &'static str {
        r#"<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<TOOLCALL>"]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_list(ctx.limits.max_depth),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <TOOLCALL>, a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}, then </TOOLCALL>."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<TOOLCALL>{}</TOOLCALL>", name_arguments_list(name, args)))
    }
}
