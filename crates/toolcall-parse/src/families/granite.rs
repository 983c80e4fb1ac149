//! `granite`: IBM Granite 3.x writes `<|tool_call|>` and a JSON list of `{name, arguments}`; no
//! closing marker: the call ends with its JSON.

use super::described::{Body, Described};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::Untyped;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const GRANITE: FormatId = FormatId::builtin("granite");
}

const OPEN: &str = "<|tool_call|>";

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("<|tool_call|>["), Piece::Ws("")],
    &[Piece::Lit("]")],
    &[Piece::NAME_ARGUMENTS],
);

pub(crate) static GRANITE: Described = Described {
    id: FormatId::GRANITE,
    description: "<|tool_call|>[{\"name\", \"arguments\"}] (Granite 3); ends with the JSON",
    example: r#"<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#,
    body: Body::OpenJson {
        open: &[OPEN],
        from: OPEN.len(),
    },
    reasoning: &[],
    model_names: &["granite-3*"],
    template_markers: &[OPEN],
    instructions: Instructions {
        how: r#"To call tools, write <|tool_call|> followed by a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}; nothing follows the list."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    },
    example_call: |name, args| format!("<|tool_call|>{}", name_arguments_list(name, args)),
    constraint: Some(&CONSTRAINT),
    untyped: Untyped::Text,
};
