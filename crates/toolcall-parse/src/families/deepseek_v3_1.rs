//! `deepseek_v3_1`: DeepSeek V3.1 writes `<｜tool▁calls▁begin｜>`, then per call
//! `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`, then `<｜tool▁calls▁end｜>`
//! (no `function` type, no fence; see `deepseek_v3` for the older layout).

use super::described::{Body, Described};
use crate::family::ToolResultText;
use super::deepseek_v3::deepseek_output;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx};

use super::args_object::JsonCallTags;
use super::deepseek_v3::{CALL, CALL_END, CLOSE, OPEN, SEP, calls, draft};
use super::tags::{Block, BodyRule, Lead, LeadRule, skip_space, starts, valid_name};
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape};

impl FormatId {
    pub(crate) const DEEPSEEK_V3_1: FormatId = FormatId::builtin("deepseek_v3_1");
}

static BLOCK: Block = Block {
    format: FormatId::DEEPSEEK_V3_1,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Fn(body),
};

/// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>` where NAME is not V3's `function` type.
fn lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    match starts(s, CALL) {
        Some(true) => {}
        None if !complete => return Lead::NeedMore,
        _ => return Lead::NotMine,
    }
    let rest = &s[CALL.len()..];
    match rest.find(SEP) {
        Some(i) if valid_name(&rest[..i]) && &rest[..i] != "function" => {
            Lead::Mine(Some(rest[..i].into()))
        }
        Some(_) => Lead::NotMine,
        None if complete || rest.len() > 256 => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

static STREAM: JsonCallTags = JsonCallTags {
    call: CALL,
    head: call_head,
    call_end: CALL_END,
};

/// `NAME<｜tool▁sep｜>` → the name.
fn call_head(head: &str) -> Option<(String, Option<String>)> {
    let name = head.trim_end().strip_suffix(SEP)?.trim();
    (valid_name(name) && name != "function").then(|| (name.to_owned(), None))
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<｜tool▁calls▁begin｜>")],
    &[Piece::Lit("<｜tool▁calls▁end｜>")],
    &[
        Piece::Lit("<｜tool▁call▁begin｜>"),
        Piece::Name,
        Piece::Lit("<｜tool▁sep｜>"),
        Piece::Args(Args::Json),
        Piece::Lit("<｜tool▁call▁end｜>"),
    ],
    NO_SEPARATOR,
);

/// `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>` per result (the V3.1 template).
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results.iter().map(|r| deepseek_output(r.content)).collect()
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", Value::Object(args.clone()))
}

pub(crate) static DEEPSEEK_V3_1: Described = Described {
    id: FormatId::DEEPSEEK_V3_1,
    description: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜><｜tool▁calls▁end｜> (DeepSeek V3.1)",
    example: r#"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"#,
    body: Body::JsonTags(&BLOCK, &STREAM),
    model_names: &["deepseek-v3.1*"],
    template_markers: &["<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"],
    instructions: Some(Instructions {
        how: "To call tools, write <｜tool▁calls▁begin｜>, then per call <｜tool▁call▁begin｜>TOOL_NAME<｜tool▁sep｜>, the arguments as a JSON object and <｜tool▁call▁end｜>, then <｜tool▁calls▁end｜>.",
        several: "- To make several calls, write several <｜tool▁call▁begin｜> entries in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    calls(body, cx.ctx.limits.max_depth)?
        .into_iter()
        .map(|call| {
            let (name, args) = call.split_once(SEP).ok_or("a call has no <｜tool▁sep｜>")?;
            draft(name.trim(), args, format)
        })
        .collect()
}
