//! `deepseek_v3_1`: DeepSeek V3.1 writes `<｜tool▁calls▁begin｜>`, then per call
//! `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`, then `<｜tool▁calls▁end｜>`
//! (no `function` type, no fence; see `deepseek_v3` for the older layout).

use crate::family::ToolResultText;
use super::deepseek_v3::deepseek_output;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader};

use super::args_object::JsonCallTags;
use super::deepseek_v3::{CALL, CALL_END, CLOSE, OPEN, SEP, calls, draft};
use super::tags::{Block, BlockReader, Lead, skip_space, starts, valid_name};
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape};

impl FormatId {
    pub(crate) const DEEPSEEK_V3_1: FormatId = FormatId::builtin("deepseek_v3_1");
}

static BLOCK: Block = Block {
    format: FormatId::DEEPSEEK_V3_1,
    open: OPEN,
    close: CLOSE,
    lead,
    body,
};

/// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>` where NAME is not V3's `function` type.
fn lead(lead: &str, complete: bool) -> Lead {
    let s = skip_space(lead);
    match starts(s, CALL) {
        Some(true) => {}
        None if !complete => return Lead::NeedMore,
        _ => return Lead::NotMine,
    }
    let rest = &s[CALL.len()..];
    match rest.find(SEP) {
        Some(i) if valid_name(&rest[..i]) && &rest[..i] != "function" => {
            Lead::Mine(Some(rest[..i].to_owned()))
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

pub(crate) struct DeepseekV31;

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

impl Family for DeepseekV31 {
    fn constraint_shape(&self) -> Option<&'static Shape> {
        Some(&CONSTRAINT)
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["deepseek-v3.1*"]
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"]
    }
    /// `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>` per result (the V3.1 template).
    fn write_results(&self, results: &[ToolResultText<'_>]) -> String {
        results.iter().map(|r| deepseek_output(r.content)).collect()
    }
    fn id(&self) -> &'static str {
        FormatId::DEEPSEEK_V3_1.as_str()
    }
    fn description(&self) -> &'static str {
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜><｜tool▁calls▁end｜> (DeepSeek V3.1)"
    }
    fn example(&self) -> &'static str {
        r#"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"#
    }
    fn openers(&self) -> &'static [&'static str] {
        &[OPEN]
    }
    fn declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        super::tags::block_declines(&BLOCK, region, is_final)
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_json(&STREAM, ctx.limits.max_depth),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call tools, write <｜tool▁calls▁begin｜>, then per call <｜tool▁call▁begin｜>TOOL_NAME<｜tool▁sep｜>, the arguments as a JSON object and <｜tool▁call▁end｜>, then <｜tool▁calls▁end｜>.",
            several: "- To make several calls, write several <｜tool▁call▁begin｜> entries in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", Value::Object(args.clone())))
    }
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    calls(body, cx.ctx.limits.max_depth)?
        .into_iter()
        .map(|call| {
            let (name, args) = call.split_once(SEP).ok_or("a call has no <｜tool▁sep｜>")?;
            draft(name.trim(), args, format)
        })
        .collect()
}
