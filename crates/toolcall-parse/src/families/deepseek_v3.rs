//! `deepseek_v3`: DeepSeek V3 / R1 write `<｜tool▁calls▁begin｜>`, then per call
//! `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` and the arguments in a ```json fence, then
//! `<｜tool▁call▁end｜>`; `<｜tool▁calls▁end｜>` closes. Shares its opener with `deepseek_v3_1`,
//! told apart by the `function` type after the first `<｜tool▁call▁begin｜>`.

use super::described::{Body, Described};
use crate::family::ToolResultText;
use crate::results::break_marker;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx};

use super::args_object::{CallEnds, JsonCallTags};
use super::tags::{Block, BodyRule, LeadRule, skip_space, valid_name};
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const DEEPSEEK_V3: FormatId = FormatId::builtin("deepseek_v3");
}

pub(crate) const OPEN: &str = "<｜tool▁calls▁begin｜>";
pub(crate) const CLOSE: &str = "<｜tool▁calls▁end｜>";
pub(crate) const CALL: &str = "<｜tool▁call▁begin｜>";
pub(crate) const SEP: &str = "<｜tool▁sep｜>";
pub(crate) const CALL_END: &str = "<｜tool▁call▁end｜>";
const TYPED: &str = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>";

static BLOCK: Block = Block {
    format: FormatId::DEEPSEEK_V3,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Tag(TYPED),
    body: BodyRule::Fn(body),
};

static STREAM: JsonCallTags = JsonCallTags {
    call: CALL,
    head: call_head,
    call_end: CALL_END,
};

/// `function<｜tool▁sep｜>NAME\n```json\n` → the name.
fn call_head(head: &str) -> Option<(String, Option<String>)> {
    let rest = head.strip_prefix("function")?.strip_prefix(SEP)?;
    let (name, fence) = rest.split_once('\n')?;
    let name = name.trim();
    let fence = fence.trim();
    (valid_name(name) && (fence.is_empty() || fence == "```json")).then(|| (name.to_owned(), None))
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<｜tool▁calls▁begin｜>")],
    &[Piece::Lit("<｜tool▁calls▁end｜>")],
    &[
        Piece::Lit("<｜tool▁call▁begin｜>function<｜tool▁sep｜>"),
        Piece::Name,
        Piece::Lit("\n```json"),
        Piece::Ws("\n"),
        Piece::Args(Args::Json),
        Piece::Ws("\n"),
        Piece::Lit("```<｜tool▁call▁end｜>"),
    ],
    &[Piece::Ws("\n")],
);

/// `<｜tool▁outputs▁begin｜>` holding one `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`
/// per result, as the DeepSeek V3/R1 template writes them.
fn write_results(results: &[ToolResultText<'_>]) -> String {
    let outputs: Vec<String> = results.iter().map(|r| deepseek_output(r.content)).collect();
    format!(
        "<｜tool▁outputs▁begin｜>{}<｜tool▁outputs▁end｜>",
        outputs.join("\n")
    )
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", Value::Object(args.clone()))
}

pub(crate) static DEEPSEEK_V3: Described = Described {
    id: FormatId::DEEPSEEK_V3,
    description: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{…}\\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜> (DeepSeek V3, R1)",
    example: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\\n```json\\n{\"city\": \"Paris\"}\\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    body: Body::JsonTags(&BLOCK, &STREAM),
    model_names: &[
        "deepseek-v3",
        "deepseek-v3-*",
        "deepseek-r1*",
        // Deep Cogito's checkpoints keep their base model's chat template: the DeepSeek V3
        // based ones (671B, v2 preview and v2.1) write DeepSeek's call tokens, the ones
        // Ollama's cogito parser reads.
        "cogito-671b*",
        "cogito-v2.1*",
        "cogito-2.1*",
        "cogito-v2-preview-deepseek*",
    ],
    template_markers: &["<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "```json"],
    instructions: Some(Instructions {
        how: "To call tools, write <｜tool▁calls▁begin｜>, then per call <｜tool▁call▁begin｜>function<｜tool▁sep｜>TOOL_NAME, a new line, the arguments as a JSON object in a ```json fence and <｜tool▁call▁end｜>, then <｜tool▁calls▁end｜>.",
        several: "- To make several calls, write several <｜tool▁call▁begin｜> entries in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


/// Splits a block body into its calls: each `<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>`; a
/// `<｜tool▁call▁end｜>` inside the arguments' JSON strings does not end a call.
pub(crate) fn calls(body: &str, max_depth: usize) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut ends = CallEnds::new(body, max_depth);
    let mut s = skip_space(body);
    while !s.is_empty() {
        let rest = s.strip_prefix(CALL).ok_or("expected <｜tool▁call▁begin｜>")?;
        let e = ends
            .find(rest, 0, CALL_END)
            .ok_or("a call is not closed by <｜tool▁call▁end｜>")?;
        out.push(&rest[..e]);
        s = skip_space(&rest[e + CALL_END.len()..]);
    }
    if out.is_empty() {
        return Err("empty tool call block".into());
    }
    Ok(out)
}

/// `NAME` and a JSON text → a draft; a call whose arguments are not JSON is a broken
/// draft (reported, its siblings run).
pub(crate) fn draft(name: &str, json: &str, format: FormatId) -> Result<Draft, String> {
    if !valid_name(name) {
        return Err(format!("invalid tool name {name:?}"));
    }
    Ok(Draft::json_args(name, json.trim(), format))
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    calls(body, cx.ctx.limits.max_depth)?
        .into_iter()
        .map(|call| {
            let rest = call
                .strip_prefix("function")
                .and_then(|r| r.strip_prefix(SEP))
                .ok_or("expected function<｜tool▁sep｜> after <｜tool▁call▁begin｜>")?;
            let (name, args) = rest.split_once('\n').ok_or("no arguments after the name")?;
            let args = args.trim();
            let args = args.strip_prefix("```json").unwrap_or(args);
            let args = args.strip_suffix("```").unwrap_or(args);
            draft(name.trim(), args, format)
        })
        .collect()
}

/// One result in DeepSeek's output markers; the markers' `｜` inside content is escaped.
pub(crate) fn deepseek_output(content: &str) -> String {
    format!(
        "<｜tool▁output▁begin｜>{}<｜tool▁output▁end｜>",
        break_marker(content, "<｜")
    )
}
