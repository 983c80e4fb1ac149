//! `seed_oss`: Seed-OSS writes the Qwen3-Coder layout inside
//! `<seed:tool_call>…</seed:tool_call>` and reasons in `<seed:think>…</seed:think>`
//! (reported apart, never parsed for calls).

use serde_json::{Map, Value};

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, ReasoningMarker, RegionReader};

use super::qwen3_coder::xml_example;
use super::tags::{eq_param_value, Block, BlockReader, function_lead, xml_functions, StreamTags};

impl FormatId {
    pub(crate) const SEED_OSS: FormatId = FormatId::builtin("seed_oss");
}

const OPEN: &str = "<seed:tool_call>";
const CLOSE: &str = "</seed:tool_call>";

static BLOCK: Block = Block {
    format: FormatId::SEED_OSS,
    open: OPEN,
    close: CLOSE,
    lead: function_lead,
    body: xml_functions,
};

static STREAM: StreamTags = StreamTags {
    param: "<parameter=",
    param_end: "</parameter>",
    call_end: "</function>",
    value: eq_param_value,
    value_stops: &["<parameter=", "</function>"],
};

pub(crate) struct SeedOss;

impl Family for SeedOss {
    fn id(&self) -> &'static str {
        FormatId::SEED_OSS.as_str()
    }
    fn description(&self) -> &'static str {
        "<seed:tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></seed:tool_call>; <seed:think> reasoning"
    }
    fn example(&self) -> &'static str {
        "<seed:tool_call>\\n<function=get_weather>\\n<parameter=city>Paris</parameter>\\n</function>\\n</seed:tool_call>"
    }
    fn openers(&self) -> &'static [&'static str] {
        &[OPEN]
    }
    fn reasoning(&self) -> &'static [ReasoningMarker] {
        &[ReasoningMarker {
            open: "<seed:think>",
            close: "</seed:think>",
        }]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(BlockReader::new(&BLOCK).streaming(&STREAM)))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call a tool, write <seed:tool_call>, then <function=TOOL_NAME>, then each argument as <parameter=ARGUMENT_NAME>value</parameter> (text as is; numbers, booleans, arrays and objects as JSON), then </function></seed:tool_call>.",
            several: "- To make several calls, write several <seed:tool_call> blocks; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(xml_example(OPEN, CLOSE, name, args))
    }
}
