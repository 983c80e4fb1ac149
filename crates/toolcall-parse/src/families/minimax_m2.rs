//! `minimax_m2`: MiniMax M2 writes `<minimax:tool_call>` holding one or more
//! `<invoke name="NAME">` with `<parameter name="K">V</parameter>` children; values are text
//! typed by the tool's schema.

use serde_json::{Map, Value};

use super::text_example::named_parameters;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader};

use super::marked::{InvokeTags, invokes, tag_lead};
use super::marked::attr_param_value;
use super::tags::{ValueHead, Block, BlockReader, Lead, StreamTags};

impl FormatId {
    pub(crate) const MINIMAX_M2: FormatId = FormatId::builtin("minimax_m2");
}

static TAGS: InvokeTags = InvokeTags {
    invoke: "<invoke name=\"",
    invoke_end: "</invoke>",
    param: "<parameter name=\"",
    param_end: "</parameter>",
    between: &[],
};

static BLOCK: Block = Block {
    format: FormatId::MINIMAX_M2,
    open: "<minimax:tool_call>",
    close: "</minimax:tool_call>",
    lead,
    body,
};

fn lead(lead: &str, complete: bool) -> Lead {
    tag_lead(lead, complete, TAGS.invoke)
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    invokes(body, cx, format, &TAGS)
}

static STREAM: StreamTags = StreamTags {
    param: "<parameter name=\"",
    param_end: "</parameter>",
    call_end: "</invoke>",
    value: param_value,
    value_stops: &[],
};

fn param_value(header: &str) -> ValueHead {
    attr_param_value(header, STREAM.param)
}

pub(crate) struct MinimaxM2;

impl Family for MinimaxM2 {
    fn id(&self) -> &'static str {
        FormatId::MINIMAX_M2.as_str()
    }
    fn description(&self) -> &'static str {
        "<minimax:tool_call><invoke name=\"NAME\"><parameter name=\"K\">V</parameter></invoke></minimax:tool_call> (MiniMax M2); values typed by the schema"
    }
    fn example(&self) -> &'static str {
        r#"<minimax:tool_call><invoke name="get_weather"><parameter name="city">Paris</parameter></invoke></minimax:tool_call>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<minimax:tool_call>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(BlockReader::new(&BLOCK).streaming(&STREAM)))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <minimax:tool_call>, then per call <invoke name="TOOL_NAME"> with one <parameter name="ARGUMENT_NAME">value</parameter> per argument (text as is; numbers, booleans, arrays and objects as JSON) and </invoke>, then </minimax:tool_call>."#,
            several: "- To make several calls, write several <invoke> blocks inside the one <minimax:tool_call>; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!(
            "<minimax:tool_call>\n<invoke name=\"{name}\">\n{}</invoke>\n</minimax:tool_call>",
            named_parameters("parameter", "\n", args)
        ))
    }
}
