//! `deepseek_dsml`: DeepSeek V3.2 (`<｜DSML｜function_calls>`) and V4
//! (`<｜DSML｜tool_calls>`) write `<｜DSML｜invoke name="NAME">` elements with
//! `<｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>` children: `string="true"`
//! keeps V as text, `string="false"` reads it as JSON (without the attribute, the schema
//! decides).

use super::described::{Body, Described};
use serde_json::{Map, Value};

use super::text_example::tag_text;
use crate::FormatId;
use crate::family::Instructions;

use super::marked::InvokeTags;
use super::tags::{Block, BodyRule, LeadRule, StreamTags};
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
        lead: LeadRule::Invoke(&TAGS),
        body: BodyRule::Invokes(&TAGS),
    },
    Block {
        format: FormatId::DEEPSEEK_DSML,
        open: OPENERS[1],
        close: "</｜DSML｜tool_calls>",
        lead: LeadRule::Invoke(&TAGS),
        body: BodyRule::Invokes(&TAGS),
    },
];

static STREAM: StreamTags = StreamTags::invokes(&TAGS);


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

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"{name}\">\n");
    for (k, v) in args {
        let string = v.is_string();
        s.push_str(&format!(
            "<｜DSML｜parameter name=\"{k}\" string=\"{string}\">{}</｜DSML｜parameter>\n",
            tag_text(v)
        ));
    }
    s.push_str("</｜DSML｜invoke>\n</｜DSML｜function_calls>");
    s
}

static BODIES: [Body; 2] = [
    Body::Tags(&BLOCKS[0], &STREAM),
    Body::Tags(&BLOCKS[1], &STREAM),
];

pub(crate) static DEEPSEEK_DSML: Described = Described {
    id: FormatId::DEEPSEEK_DSML,
    description: "<｜DSML｜function_calls> (V3.2) or <｜DSML｜tool_calls> (V4) with <｜DSML｜invoke name=\"NAME\"> and <｜DSML｜parameter name=\"K\" string=\"true|false\">V</｜DSML｜parameter>",
    example: r#"<｜DSML｜function_calls><｜DSML｜invoke name="get_weather"><｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>"#,
    body: Body::each(&OPENERS, &BODIES),
    model_names: &["deepseek-v3.2*", "deepseek-v4*"],
    template_markers: &["｜DSML｜", "invoke"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <｜DSML｜function_calls>, then per call <｜DSML｜invoke name="TOOL_NAME"> with one <｜DSML｜parameter name="ARGUMENT_NAME" string="true">text</｜DSML｜parameter> per text argument (string="false" and the value as JSON for numbers, booleans, arrays and objects) and </｜DSML｜invoke>, then </｜DSML｜function_calls>."#,
        several: "- To make several calls, write several <｜DSML｜invoke> blocks inside the one <｜DSML｜function_calls>; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

