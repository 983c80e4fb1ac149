//! `internlm`: InternLM 2.5 / 3 write one `{name, parameters}` object per
//! `<|action_start|><|plugin|>` … `<|action_end|>`.

use serde_json::json;

use super::described::{Body, Described};
use super::tags::{Block, BodyRule, LeadRule};
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const INTERNLM: FormatId = FormatId::builtin("internlm");
}

static BLOCK: Block = Block {
    format: FormatId::INTERNLM,
    open: "<|action_start|><|plugin|>",
    close: "<|action_end|>",
    lead: LeadRule::Json,
    body: BodyRule::Json,
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<|action_start|><|plugin|>"),
    Piece::Ws("\n"),
    Piece::NAME_PARAMETERS,
    Piece::Ws(""),
    Piece::Lit("<|action_end|>"),
]);

pub(crate) static INTERNLM: Described = Described {
    id: FormatId::INTERNLM,
    description: "<|action_start|><|plugin|>{\"name\", \"parameters\"}<|action_end|> (InternLM)",
    example: r#"<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>"#,
    body: Body::JsonList(&BLOCK),
    model_names: &["internlm*"],
    template_markers: &["<|action_start|>", "<|plugin|>"],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <|action_start|><|plugin|>, a new line, {"name": TOOL_NAME, "parameters": {...}} as JSON, then <|action_end|>."#,
        several: "- To make several calls, write several <|action_start|><|plugin|> blocks; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!(
            "<|action_start|><|plugin|>\n{}<|action_end|>",
            json!({"name": name, "parameters": args})
        )
    }),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
