//! `functools`: Phi-4-mini and FireFunction write `functools` followed at once by a JSON list of
//! `{name, arguments}`. The opener includes the `[`, so prose about Python's `functools`
//! module is never read.

use super::described::{Body, Described};
use super::text_example::name_arguments_list;
use crate::FormatId;
use crate::family::Instructions;
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const FUNCTOOLS: FormatId = FormatId::builtin("functools");
}

const OPEN: &str = "functools[";

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::json_list(
    &[Piece::Lit("functools[")],
    &[Piece::Lit("]")],
    &[Piece::NAME_ARGUMENTS],
);

pub(crate) static FUNCTOOLS: Described = Described {
    id: FormatId::FUNCTOOLS,
    description: "functools[{\"name\", \"arguments\"}] (Phi-4-mini, FireFunction)",
    example: r#"functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#,
    // The list's own `[` ends the opener: the JSON starts at it.
    body: Body::OpenJson {
        open: &[OPEN],
        from: OPEN.len() - 1,
    },
    model_names: &["phi-4-mini*", "firefunction*"],
    template_markers: &[OPEN],
    instructions: Some(Instructions {
        how: r#"To call tools, write functools immediately followed by a JSON list of calls, each {"name": TOOL_NAME, "arguments": {...}}."#,
        several: "- To make several calls, put several objects in the one list; they run in that order.\n",
    }),
    example_call: Some(|name, args| format!("functools{}", name_arguments_list(name, args))),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
