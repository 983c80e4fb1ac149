//! `granite`: IBM Granite 3.x writes `<|tool_call|>` and a JSON list of `{name, arguments}`; no
//! closing marker: the call ends with its JSON. Granite 3.2/3.3 reason after
//! `Here is my thought process:` up to `Here is my response:` (vLLM's granite reasoning
//! parser, which also takes `Here's`); read only when the family is chosen, since in auto
//! mode those are ordinary English sentences.

use super::described::{Body, Described};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::{Instructions, ReasoningMarker, WhenChosen};
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

/// Granite's thinking mode, read when the family is chosen.
static WHEN_CHOSEN: WhenChosen = WhenChosen {
    reasoning: &[
        ReasoningMarker {
            open: "Here is my thought process:",
            close: "Here is my response:",
        },
        ReasoningMarker {
            open: "Here's my thought process:",
            close: "Here's my response:",
        },
    ],
    ..WhenChosen::NONE
};

pub(crate) static GRANITE: Described = Described {
    id: FormatId::GRANITE,
    description: "<|tool_call|>[{\"name\", \"arguments\"}] (Granite 3); ends with the JSON",
    example: r#"<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#,
    body: Body::OpenJson {
        open: &[OPEN],
        from: OPEN.len(),
    },
    model_names: &["granite-3*"],
    template_markers: &[OPEN],
    instructions: Some(Instructions {
        how: r#"To call tools, write <|tool_call|> followed by a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}; nothing follows the list."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| format!("<|tool_call|>{}", name_arguments_list(name, args))),
    constraint: Some(&CONSTRAINT),
    when_chosen: &WHEN_CHOSEN,
    ..Described::BASE
};
