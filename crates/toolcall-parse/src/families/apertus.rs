//! `apertus`: Apertus writes a JSON list of `{"NAME": {arguments}}` objects between
//! `<|tools_prefix|>` and `<|tools_suffix|>`.


use super::described::{Body, Described};
use super::tags::BlockStream;
use serde_json::{Map, Value, json};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::Instructions;

use super::args_object::LiveList;
use super::tags::{Block, BodyRule, LeadRule, valid_name};
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const APERTUS: FormatId = FormatId::builtin("apertus");
}

static BLOCK: Block = Block {
    format: FormatId::APERTUS,
    open: "<|tools_prefix|>",
    close: "<|tools_suffix|>",
    lead: LeadRule::Json,
    body: BodyRule::JsonItems(one),
};

/// `{"NAME": {arguments}}`: exactly one key.
fn one(m: &mut Map<String, Value>, format: FormatId) -> Option<Draft> {
    let mut it = m.iter_mut();
    let (name, args) = it.next()?;
    if it.next().is_some() || !valid_name(name) {
        return None;
    }
    // The entry is read once: its arguments are moved out, not copied.
    let args = args.take();
    Some(Draft::new(name.as_str(), Some(args), format))
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("<|tools_prefix|>[")],
    &[Piece::Lit("]<|tools_suffix|>")],
    &[
        Piece::Lit("{"),
        Piece::Ws(""),
        Piece::NameString,
        Piece::Ws(""),
        Piece::Lit(":"),
        Piece::Ws(" "),
        Piece::Args(Args::Json),
        Piece::Ws(""),
        Piece::Lit("}"),
    ],
);

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<|tools_prefix|>{}<|tools_suffix|>", json!([{ name: args }]))
}

/// Entries are `{"NAME": {…}}`: the key is the name.
fn live(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveList::with_keys(BLOCK.open.len(), ctx.limits.max_depth, None))
}

pub(crate) static APERTUS: Described = Described {
    id: FormatId::APERTUS,
    description: "<|tools_prefix|>[{\"NAME\": {arguments}}]<|tools_suffix|> (Apertus)",
    example: r#"<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>"#,
    body: Body::Live(&BLOCK, live),
    model_names: &["apertus*"],
    template_markers: &["<|tools_prefix|>"],
    instructions: Some(Instructions {
        how: "To call tools, write <|tools_prefix|>, a JSON list with one object {TOOL_NAME: {arguments}} per call, then <|tools_suffix|>.",
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

