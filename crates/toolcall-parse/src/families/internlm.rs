//! `internlm`: InternLM 2.5 / 3 write one `{name, parameters}` object per
//! `<|action_start|><|plugin|>` … `<|action_end|>`.

use serde_json::{Map, Value, json};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, RegionReader};

use super::tags::{Block, BlockReader};
use super::marked::{json_body, json_lead};

impl FormatId {
    pub(crate) const INTERNLM: FormatId = FormatId::builtin("internlm");
}

static BLOCK: Block = Block {
    format: FormatId::INTERNLM,
    open: "<|action_start|><|plugin|>",
    close: "<|action_end|>",
    lead: json_lead,
    body: json_body,
};

pub(crate) struct InternLm;

impl Family for InternLm {
    fn id(&self) -> &'static str {
        FormatId::INTERNLM.as_str()
    }
    fn description(&self) -> &'static str {
        "<|action_start|><|plugin|>{\"name\", \"parameters\"}<|action_end|> (InternLM)"
    }
    fn example(&self) -> &'static str {
        r#"<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|action_start|><|plugin|>"]
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_list(ctx.limits.max_depth),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call a tool, write <|action_start|><|plugin|>, a new line, {"name": TOOL_NAME, "parameters": {...}} as JSON, then <|action_end|>."#,
            several: "- To make several calls, write several <|action_start|><|plugin|> blocks; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|action_start|><|plugin|>\n{}<|action_end|>", json!({"name": name, "parameters": args})))
    }
}
