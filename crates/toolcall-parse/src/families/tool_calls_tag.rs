//! `tool_calls_tag`: Hunyuan, Jamba and Apriel write a JSON list of `{name, arguments}`
//! between `<tool_calls>` and `</tool_calls>`.

use super::described::{Body, Described};
use super::tags::{Block, BodyRule, LeadRule};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const TOOL_CALLS_TAG: FormatId = FormatId::builtin("tool_calls_tag");
}

static BLOCK: Block = Block {
    format: FormatId::TOOL_CALLS_TAG,
    open: "<tool_calls>",
    close: "</tool_calls>",
    lead: LeadRule::Json,
    body: BodyRule::Json,
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("<tool_calls>[")],
    &[Piece::Lit("]</tool_calls>")],
    &[Piece::NAME_ARGUMENTS],
);

pub(crate) static TOOL_CALLS_TAG: Described = Described {
    id: FormatId::TOOL_CALLS_TAG,
    description: "<tool_calls>[{\"name\", \"arguments\"}]</tool_calls> (Hunyuan, Jamba, Apriel)",
    example: r#"<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>"#,
    body: Body::JsonList(&BLOCK),
    model_names: &["hunyuan*", "ai21-jamba*", "jamba-*", "apriel*"],
    template_markers: &["<tool_calls>", "</tool_calls>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <tool_calls>, a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}, then </tool_calls>."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!("<tool_calls>{}</tool_calls>", name_arguments_list(name, args))
    }),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
