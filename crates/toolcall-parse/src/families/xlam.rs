//! `xlam`: Salesforce xLAM answers with a JSON list of `{name, arguments}`, as the whole reply
//! or in a code fence of any language tag. Read from bare JSON lists only (registered names
//! when a registry is given); in auto mode the `json` family reads the same lists first.



use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};
use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Outcome;
use crate::family::Instructions;
use super::json::CallsDoc;
use crate::family::{JsonCx, json_calls};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const XLAM: FormatId = FormatId::builtin("xlam");
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("```json"), Piece::Ws("\n"), Piece::Lit("[")],
    &[Piece::Lit("]"), Piece::Ws("\n"), Piece::Lit("```")],
    &[Piece::NAME_ARGUMENTS],
);

fn classify_json(v: &mut Value, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    if !v.is_array() {
        return None;
    }
    json_calls(v, cx.ctx, format, false, cx.span.clone())
}

/// [`classify_json`] of a value decoded as call objects (the typed path of bare JSON).
fn classify_calls(doc: &mut CallsDoc, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    if !matches!(doc, CallsDoc::Many(_)) {
        return None;
    }
    super::json::classify_calls(doc, cx, format)
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("```json\n{}\n```", name_arguments_list(name, args))
}

pub(crate) static XLAM: Described = Described {
    id: FormatId::XLAM,
    description: "a JSON list of {\"name\", \"arguments\"}, whole or in a code fence (Salesforce xLAM)",
    example: "```json\\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\\n```",
    bare: Some(Bare {
        objects: false,
        arrays: true,
        classify: classify_json,
        calls: Some(classify_calls),
        needs: JsonNeeds {
            objects: &[],
            elements: &[&["name", "arguments"], &["name", "parameters"]],
        },
    }),
    model_names: &["*xlam*"],
    generic_because: Some("xLAM's template writes a bare JSON list: no template marker of its own"),
    instructions: Some(Instructions {
        how: r#"To call tools, reply with a ```json fenced JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

