//! `cohere`: Cohere Command R7B / Command A write a JSON list of
//! `{"tool_call_id", "tool_name", "parameters"}` (or one object per line) between
//! `<|START_ACTION|>` and `<|END_ACTION|>`; the reply sits between `<|START_RESPONSE|>` and
//! `<|END_RESPONSE|>` (the markers are removed) and reasoning between `<|START_THINKING|>` and
//! `<|END_THINKING|>`. The per-turn `tool_call_id` ("0", "1") is not unique across turns, so
//! call ids are generated.


use super::described::{Body, Described};
use super::tags::BlockStream;
use crate::family::ToolResultText;
use crate::results::{break_marker, content_value};
use serde_json::{Map, Value, json};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Instructions, ReasoningMarker};

use super::args_object::{EntryKeys, LiveList};
use super::tags::{Block, BodyRule, LeadRule, valid_name};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const COHERE: FormatId = FormatId::builtin("cohere");
}

static BLOCK: Block = Block {
    format: FormatId::COHERE,
    open: "<|START_ACTION|>",
    close: "<|END_ACTION|>",
    lead: LeadRule::Json,
    body: BodyRule::JsonItems(one),
};

/// `{"tool_call_id": "0", "tool_name": "NAME", "parameters": {…}}`, streamed as it arrives.
static ENTRY: EntryKeys = EntryKeys {
    name: &["tool_name"],
    args: &["parameters"],
    skip: &["tool_call_id"],
};

/// One `{"tool_name", "parameters"}` entry (Command R+ writes the same).
pub(super) fn one(m: &mut Map<String, Value>, format: FormatId) -> Option<Draft> {
    let name = m.get("tool_name")?.as_str()?;
    if !valid_name(name) {
        return None;
    }
    let name = name.to_owned();
    // The entry is read once: its arguments are moved out, not copied.
    let args = m.get_mut("parameters").map(Value::take);
    Some(Draft::new(name, args, format))
}


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

/// One `<|START_TOOL_RESULT|>` list of `{"tool_call_id", "results", "is_error"}`
/// (the Command R7B template).
fn write_results(results: &[ToolResultText<'_>]) -> String {
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

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<|START_ACTION|>{}<|END_ACTION|>", json!([{"tool_call_id": "0", "tool_name": name, "parameters": args}]))
}

fn live(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveList::with_keys(BLOCK.open.len(), ctx.limits.max_depth, Some(&ENTRY)))
}

pub(crate) static COHERE: Described = Described {
    id: FormatId::COHERE,
    description: "<|START_ACTION|>[{\"tool_call_id\", \"tool_name\", \"parameters\"}]<|END_ACTION|> (Cohere Command R7B, A); <|START_THINKING|> reasoning",
    example: r#"<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>"#,
    body: Body::Live(&BLOCK, live),
    model_names: &["c4ai-command-r7b*", "command-r7b*", "c4ai-command-a*", "command-a-*"],
    template_markers: &["<|START_ACTION|>"],
    reasoning: &[ReasoningMarker {
        open: "<|START_THINKING|>",
        close: "<|END_THINKING|>",
    }],
    strip: &["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|START_ACTION|>, a JSON list of calls, each {"tool_call_id": "0", "tool_name": TOOL_NAME, "parameters": {...}} with ids counting from "0", then <|END_ACTION|>."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

