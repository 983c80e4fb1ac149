//! `internlm`: InternLM 2.5 / 3 write one `{name, parameters}` object per
//! `<|action_start|><|plugin|>` … `<|action_end|>`.

use serde_json::json;

use super::described::{Body, Described};
use super::tags::{Block, BodyRule, LeadRule};
use super::json::{CallsDoc, classify_doc};
use super::marked::{json_body, json_body_ahead};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const INTERNLM: FormatId = FormatId::builtin("internlm");
}

static BLOCK: Block = Block {
    format: FormatId::INTERNLM,
    open: "<|action_start|><|plugin|>",
    close: "<|action_end|>",
    lead: LeadRule::Json,
    body: BodyRule::Call {
        body,
        ahead: json_body_ahead,
    },
};

/// The block's `{name, parameters}` object (or a list of them), read as
/// [`BodyRule::Json`] reads it ([`json_body`]): decoded first as a [`CallsDoc`], without
/// a map per call object, and classified by [`classify_doc`], which gives what the
/// `Value`'s classifier gives. A text that is no such document (another key, a key twice,
/// broken JSON) goes to [`json_body`] itself. The object's `Value` and its map cost ~1.8 k
/// a call of `internlm/small` (`cg.py`).
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let Ok(mut doc) = serde_json::from_str::<CallsDoc>(body.trim()) else {
        return json_body(body, cx, format);
    };
    // `json_body` decodes the same text to a `Value`, with no repair since it decodes.
    classify_doc(&mut doc, cx.ctx, format, true, cx.span(0, 0))
        .map(|found| found.drafts)
        .ok_or_else(|| "the JSON is not a {name, arguments} call or a list of them".into())
}

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<|action_start|><|plugin|>"),
    Piece::Ws("\n"),
    Piece::NAME_PARAMETERS,
    Piece::Ws(""),
    Piece::Lit("<|action_end|>"),
]);

pub(crate) static INTERNLM: Described = Described {
    id: FormatId::INTERNLM,
    description: "<|action_start|><|plugin|>{\"name\", \"parameters\"}<|action_end|> (InternLM)",
    example: r#"<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>"#,
    body: Body::JsonList(&BLOCK),
    model_names: &["internlm*"],
    template_markers: &["<|action_start|>", "<|plugin|>"],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <|action_start|><|plugin|>, a new line, {"name": TOOL_NAME, "parameters": {...}} as JSON, then <|action_end|>."#,
        several: "- To make several calls, write several <|action_start|><|plugin|> blocks; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!(
            "<|action_start|><|plugin|>\n{}<|action_end|>",
            json!({"name": name, "parameters": args})
        )
    }),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};
