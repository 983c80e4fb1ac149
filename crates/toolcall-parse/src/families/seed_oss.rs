//! `seed_oss`: Seed-OSS writes the Qwen3-Coder layout inside
//! `<seed:tool_call>…</seed:tool_call>` and reasons in `<seed:think>…</seed:think>`
//! (reported apart, never parsed for calls).

use super::described::{Body, Described};
use super::qwen3_coder::{CONSTRAINT_PARAMS, xml_example};
use super::tags::{Block, BodyRule, FUNCTION_PARAMS, LeadRule};
use crate::FormatId;
use crate::family::{Instructions, ReasoningMarker};
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const SEED_OSS: FormatId = FormatId::builtin("seed_oss");
}

const OPEN: &str = "<seed:tool_call>";
const CLOSE: &str = "</seed:tool_call>";
const SEED_THINK: ReasoningMarker = ReasoningMarker {
    open: "<seed:think>",
    close: "</seed:think>",
};

static BLOCK: Block = Block {
    format: FormatId::SEED_OSS,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Function,
    body: BodyRule::Functions,
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape {
    reasoning: SEED_THINK,
    ..Shape::prose(&[
        Piece::Lit(OPEN),
        Piece::Ws("\n"),
        Piece::Lit("<function="),
        Piece::Name,
        Piece::Lit(">"),
        Piece::Args(Args::Text(&CONSTRAINT_PARAMS)),
        Piece::Ws("\n"),
        Piece::Lit("</function>"),
        Piece::Ws("\n"),
        Piece::Lit(CLOSE),
    ])
};

pub(crate) static SEED_OSS: Described = Described {
    id: FormatId::SEED_OSS,
    description: "<seed:tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></seed:tool_call>; <seed:think> reasoning",
    example: "<seed:tool_call>\\n<function=get_weather>\\n<parameter=city>Paris</parameter>\\n</function>\\n</seed:tool_call>",
    body: Body::Tags(&BLOCK, &FUNCTION_PARAMS),
    reasoning: &[SEED_THINK],
    model_names: &["seed-oss*"],
    template_markers: &[OPEN],
    instructions: Some(Instructions {
        how: "To call a tool, write <seed:tool_call>, then <function=TOOL_NAME>, then each argument as <parameter=ARGUMENT_NAME>value</parameter> (text as is; numbers, booleans, arrays and objects as JSON), then </function></seed:tool_call>.",
        several: "- To make several calls, write several <seed:tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(|name, args| xml_example(OPEN, CLOSE, name, args)),
    constraint: Some(&CONSTRAINT),
    untyped: crate::family::NULL_WORD,
    ..Described::BASE
};
