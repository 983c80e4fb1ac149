//! `nemotron`: NVIDIA Llama-Nemotron writes a JSON list of `{name, arguments}`
//! between `<TOOLCALL>` and `</TOOLCALL>`.

use super::described::{Body, Described};
use super::tags::{Block, BodyRule, LeadRule};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const NEMOTRON: FormatId = FormatId::builtin("nemotron");
}

static BLOCK: Block = Block {
    format: FormatId::NEMOTRON,
    open: "<TOOLCALL>",
    close: "</TOOLCALL>",
    lead: LeadRule::Json,
    body: BodyRule::Json,
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("<TOOLCALL>[")],
    &[Piece::Lit("]</TOOLCALL>")],
    &[Piece::NAME_ARGUMENTS],
);

pub(crate) static NEMOTRON: Described = Described {
    id: FormatId::NEMOTRON,
    description: "<TOOLCALL>[{\"name\", \"arguments\"}]</TOOLCALL> (Llama-Nemotron)",
    example: r#"<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>"#,
    body: Body::JsonList(&BLOCK),
    model_names: &["*-nemotron-*", "llama-3_3-nemotron*"],
    template_markers: &["<TOOLCALL>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <TOOLCALL>, a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}, then </TOOLCALL>."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| format!("<TOOLCALL>{}</TOOLCALL>", name_arguments_list(name, args))),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
