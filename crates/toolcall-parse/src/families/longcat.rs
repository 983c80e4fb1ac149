//! `longcat`: LongCat-Flash writes one `{name, arguments}` object per
//! `<longcat_tool_call>` … `</longcat_tool_call>`.

use super::described::{Body, Described};
use super::tags::{Block, BodyRule, LeadRule};
use super::text_example::name_arguments;
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const LONGCAT: FormatId = FormatId::builtin("longcat");
}

static BLOCK: Block = Block {
    format: FormatId::LONGCAT,
    open: "<longcat_tool_call>",
    close: "</longcat_tool_call>",
    lead: LeadRule::Json,
    body: BodyRule::Json,
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<longcat_tool_call>"),
    Piece::Ws(""),
    Piece::NAME_ARGUMENTS,
    Piece::Ws(""),
    Piece::Lit("</longcat_tool_call>"),
]);

pub(crate) static LONGCAT: Described = Described {
    id: FormatId::LONGCAT,
    description: "<longcat_tool_call>{\"name\", \"arguments\"}</longcat_tool_call> (LongCat-Flash)",
    example: r#"<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</longcat_tool_call>"#,
    body: Body::JsonList(&BLOCK),
    model_names: &["longcat*"],
    template_markers: &["<longcat_tool_call>"],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <longcat_tool_call>{"name": TOOL_NAME, "arguments": {...}}</longcat_tool_call> with a JSON object inside the tags."#,
        several: "- To make several calls, write several <longcat_tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!("<longcat_tool_call>{}</longcat_tool_call>", name_arguments(name, args))
    }),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
