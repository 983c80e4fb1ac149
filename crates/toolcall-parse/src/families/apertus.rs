//! `apertus`: Apertus writes a JSON list of `{"NAME": {arguments}}` objects between
//! `<|tools_prefix|>` and `<|tools_suffix|>`.


use serde_json::{Map, Value, json};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader};

use super::args_object::LiveList;
use super::marked::{json_items, json_lead};
use super::tags::{Block, BlockReader, valid_name};
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const APERTUS: FormatId = FormatId::builtin("apertus");
}

static BLOCK: Block = Block {
    format: FormatId::APERTUS,
    open: "<|tools_prefix|>",
    close: "<|tools_suffix|>",
    lead: json_lead,
    body,
};

fn body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    json_items(body, format, one)
}

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

pub(crate) struct Apertus;

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

impl Family for Apertus {
    fn constraint_shape(&self) -> Option<&'static Shape> {
        Some(&CONSTRAINT)
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["apertus*"]
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["<|tools_prefix|>"]
    }
    fn id(&self) -> &'static str {
        FormatId::APERTUS.as_str()
    }
    fn description(&self) -> &'static str {
        "<|tools_prefix|>[{\"NAME\": {arguments}}]<|tools_suffix|> (Apertus)"
    }
    fn example(&self) -> &'static str {
        r#"<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|tools_prefix|>"]
    }
    fn declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        super::tags::block_declines(&BLOCK, region, is_final)
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        // Entries are `{"NAME": {…}}`: the key is the name.
        let live = LiveList::with_keys(BLOCK.open.len(), ctx.limits.max_depth, None);
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_with(Box::new(live)),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call tools, write <|tools_prefix|>, a JSON list with one object {TOOL_NAME: {arguments}} per call, then <|tools_suffix|>.",
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|tools_prefix|>{}<|tools_suffix|>", json!([{ name: args }])))
    }
}
