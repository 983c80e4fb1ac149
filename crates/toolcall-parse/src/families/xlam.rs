//! `xlam`: Salesforce xLAM answers with a JSON list of `{name, arguments}`, as the whole reply
//! or in a code fence of any language tag. Read from bare JSON lists only (registered names
//! when a registry is given); in auto mode the `json` family reads the same lists first.



use super::text_example::{name_arguments_list};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Outcome;
use crate::family::Instructions;
use crate::family::{BareJson, Family, JsonCx, json_calls};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const XLAM: FormatId = FormatId::builtin("xlam");
}

pub(crate) struct Xlam;

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("```json"), Piece::Ws("\n"), Piece::Lit("[")],
    &[Piece::Lit("]"), Piece::Ws("\n"), Piece::Lit("```")],
    &[Piece::NAME_ARGUMENTS],
);

impl Family for Xlam {
    fn constraint_shape(&self) -> Option<&'static Shape> {
        Some(&CONSTRAINT)
    }
    fn id(&self) -> &'static str {
        FormatId::XLAM.as_str()
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["*xlam*"]
    }
    fn generic_because(&self) -> Option<&'static str> {
        Some("xLAM's template writes a bare JSON list: no template marker of its own")
    }
    fn description(&self) -> &'static str {
        "a JSON list of {\"name\", \"arguments\"}, whole or in a code fence (Salesforce xLAM)"
    }
    fn example(&self) -> &'static str {
        "```json\\n[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]\\n```"
    }
    fn bare_json(&self) -> BareJson {
        BareJson {
            objects: false,
            arrays: true,
        }
    }
    fn classify_json(&self, v: &mut Value, cx: &JsonCx<'_>) -> Option<Outcome> {
        if !v.is_array() {
            return None;
        }
        json_calls(v, cx.ctx, FormatId::XLAM, false, cx.span.clone())
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call tools, reply with a ```json fenced JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}."#,
            several: "- To make several calls, put several objects in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("```json\n{}\n```", name_arguments_list(name, args)))
    }
}
