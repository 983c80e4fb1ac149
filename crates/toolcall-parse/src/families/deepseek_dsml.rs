//! `deepseek_dsml`: DeepSeek V3.2 (`<｜DSML｜function_calls>`) and V4
//! (`<｜DSML｜tool_calls>`) write `<｜DSML｜invoke name="NAME">` elements with
//! `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>` children: `string="true"`
//! keeps V as text, `string="false"` reads it as JSON (without the attribute, the schema
//! decides).

use serde_json::{Map, Value};

use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader};

use super::marked::{InvokeTags, invokes, tag_lead, unquoted};
use super::marked::attr_param_value;
use super::tags::{ValueHead, Block, BlockReader, Lead, StreamTags};
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const DEEPSEEK_DSML: FormatId = FormatId::builtin("deepseek_dsml");
}

static TAGS: InvokeTags = InvokeTags {
    invoke: "<｜DSML｜invoke name=\"",
    invoke_end: "</｜DSML｜invoke>",
    param: "<｜DSML｜parameter name=\"",
    param_end: "</｜DSML｜parameter>",
    between: &[],
    verbatim: false,
};

const OPENERS: [&str; 2] = ["<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"];

static BLOCKS: [Block; 2] = [
    Block {
        format: FormatId::DEEPSEEK_DSML,
        open: OPENERS[0],
        close: "</｜DSML｜function_calls>",
        lead,
        body,
    },
    Block {
        format: FormatId::DEEPSEEK_DSML,
        open: OPENERS[1],
        close: "</｜DSML｜tool_calls>",
        lead,
        body,
    },
];

fn lead(lead: &str, complete: bool) -> Lead {
    tag_lead(lead, complete, unquoted(TAGS.invoke))
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    invokes(body, cx, format, &TAGS)
}

static STREAM: StreamTags = StreamTags {
    param: "<｜DSML｜parameter name=",
    param_end: "</｜DSML｜parameter>",
    call_end: "</｜DSML｜invoke>",
    value: param_value,
    value_stops: &[],
    param_end_followers: &[],
    verbatim: false,
};

fn param_value(header: &str) -> ValueHead {
    attr_param_value(header, STREAM.param)
}

pub(crate) struct DeepseekDsml;

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<｜DSML｜function_calls>")],
    &[Piece::Lit("</｜DSML｜function_calls>")],
    &[
        Piece::Lit("<｜DSML｜invoke name=\""),
        Piece::Name,
        Piece::Lit("\">"),
        Piece::Args(Args::Text(&TextParams {
            key_open: "<｜DSML｜parameter name=\"",
            key_close_text: &[Piece::Lit("\" string=\"true\">")],
            key_close_json: &[Piece::Lit("\" string=\"false\">")],
            value_close: "</｜DSML｜parameter>",
        })),
        Piece::Ws("\n"),
        Piece::Lit("</｜DSML｜invoke>"),
    ],
    &[Piece::Ws("\n")],
);

impl Family for DeepseekDsml {
    fn constraint_shape(&self) -> Option<&'static Shape> {
        Some(&CONSTRAINT)
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["deepseek-v3.2*", "deepseek-v4*"]
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["｜DSML｜", "invoke"]
    }
    fn id(&self) -> &'static str {
        FormatId::DEEPSEEK_DSML.as_str()
    }
    fn description(&self) -> &'static str {
        "<｜DSML｜function_calls> (V3.2) or <｜DSML｜tool_calls> (V4) with <｜DSML｜invoke name=\"NAME\"> and <｜DSML｜parameter name=\"K\" string=\"true|false\">V</｜DSML｜parameter>"
    }
    fn example(&self) -> &'static str {
        r#"<｜DSML｜function_calls><｜DSML｜invoke name="get_weather"><｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &[OPENERS[0], OPENERS[1]]
    }
    fn declines(&self, opener: usize, region: &str, is_final: bool) -> bool {
        BLOCKS
            .get(opener)
            .is_some_and(|b| super::tags::block_declines(b, region, is_final))
    }
    fn reader(&self, opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        BLOCKS
            .get(opener)
            .map(|b| Box::new(BlockReader::new(b).streaming(&STREAM)) as Box<dyn RegionReader>)
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <｜DSML｜function_calls>, then per call <｜DSML｜invoke name="TOOL_NAME"> with one <｜DSML｜parameter name="ARGUMENT_NAME" string="true">text</｜DSML｜parameter> per text argument (string="false" and the value as JSON for numbers, booleans, arrays and objects) and </｜DSML｜invoke>, then </｜DSML｜function_calls>."#,
            several: "- To make several calls, write several <｜DSML｜invoke> blocks inside the one <｜DSML｜function_calls>; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut s = format!("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"{name}\">\n");
        for (k, v) in args {
            let string = v.is_string();
            s.push_str(&format!(
                "<｜DSML｜parameter name=\"{k}\" string=\"{string}\">{}</｜DSML｜parameter>\n",
                tag_text(v)
            ));
        }
        s.push_str("</｜DSML｜invoke>\n</｜DSML｜function_calls>");
        Some(s)
    }
}
