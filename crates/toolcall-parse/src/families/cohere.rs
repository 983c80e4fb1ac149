//! `cohere`: Cohere Command R7B / Command A write a JSON list of
//! `{"tool_call_id", "tool_name", "parameters"}` (or one object per line) between
//! `<|START_ACTION|>` and `<|END_ACTION|>`; the reply sits between `<|START_RESPONSE|>` and
//! `<|END_RESPONSE|>` (the markers are removed) and reasoning between `<|START_THINKING|>` and
//! `<|END_THINKING|>`. The per-turn `tool_call_id` ("0", "1") is not unique across turns, so
//! call ids are generated.


use crate::family::ToolResultText;
use crate::results::{break_marker, content_value};
use serde_json::{Map, Value, json};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, ReasoningMarker, RegionReader};

use super::args_object::{EntryKeys, LiveList};
use super::marked::{json_items, json_lead};
use super::tags::{Block, BlockReader, valid_name};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const COHERE: FormatId = FormatId::builtin("cohere");
}

static BLOCK: Block = Block {
    format: FormatId::COHERE,
    open: "<|START_ACTION|>",
    close: "<|END_ACTION|>",
    lead: json_lead,
    body,
};

fn body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    json_items(body, format, one)
}

/// `{"tool_call_id": "0", "tool_name": "NAME", "parameters": {…}}`, streamed as it arrives.
static ENTRY: EntryKeys = EntryKeys {
    name: &["tool_name"],
    args: &["parameters"],
    skip: &["tool_call_id"],
};

fn one(m: &mut Map<String, Value>, format: FormatId) -> Option<Draft> {
    let name = m.get("tool_name")?.as_str()?;
    if !valid_name(name) {
        return None;
    }
    let name = name.to_owned();
    // The entry is read once: its arguments are moved out, not copied.
    let args = m.get_mut("parameters").map(Value::take);
    Some(Draft::new(name, args, format))
}

pub(crate) struct Cohere;

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("<|START_ACTION|>[")],
    &[Piece::Lit("]<|END_ACTION|>")],
    &[Piece::JsonCall {
        id_key: Some("tool_call_id"),
        name_key: "tool_name",
        args_key: "parameters",
    }],
);

impl Family for Cohere {
    fn constraint_shape(&self) -> Option<&'static Shape> {
        Some(&CONSTRAINT)
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["c4ai-command-r7b*", "command-r7b*", "c4ai-command-a*", "command-a-*"]
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["<|START_ACTION|>"]
    }
    /// One `<|START_TOOL_RESULT|>` list of `{"tool_call_id", "results", "is_error"}`
    /// (the Command R7B template).
    fn write_results(&self, results: &[ToolResultText<'_>]) -> String {
        let list: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "tool_call_id": r.call_id,
                    "results": {"0": content_value(r.content)},
                    "is_error": null
                })
            })
            .collect();
        format!(
            "<|START_TOOL_RESULT|>{}<|END_TOOL_RESULT|>",
            break_marker(&serde_json::Value::Array(list).to_string(), "<|")
        )
    }
    fn id(&self) -> &'static str {
        FormatId::COHERE.as_str()
    }
    fn description(&self) -> &'static str {
        "<|START_ACTION|>[{\"tool_call_id\", \"tool_name\", \"parameters\"}]<|END_ACTION|> (Cohere Command R7B, A); <|START_THINKING|> reasoning"
    }
    fn example(&self) -> &'static str {
        r#"<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|START_ACTION|>"]
    }
    fn declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        super::tags::block_declines(&BLOCK, region, is_final)
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        let from = BLOCK.open.len();
        let live = LiveList::with_keys(from, ctx.limits.max_depth, Some(&ENTRY));
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_with(Box::new(live)),
        ))
    }
    fn reasoning(&self) -> &'static [ReasoningMarker] {
        &[ReasoningMarker {
            open: "<|START_THINKING|>",
            close: "<|END_THINKING|>",
        }]
    }
    fn strip(&self) -> &'static [&'static str] {
        &["<|START_RESPONSE|>", "<|END_RESPONSE|>"]
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, write <|START_ACTION|>, a JSON list of calls, each {"tool_call_id": "0", "tool_name": TOOL_NAME, "parameters": {...}} with ids counting from "0", then <|END_ACTION|>."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<|START_ACTION|>{}<|END_ACTION|>", json!([{"tool_call_id": "0", "tool_name": name, "parameters": args}])))
    }
}
