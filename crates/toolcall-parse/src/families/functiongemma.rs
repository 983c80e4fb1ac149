//! `functiongemma`: FunctionGemma (Gemma 3 270M) writes
//! `<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>`: Gemma
//! 4's call syntax (bare keys, literals as is) with `<escape>` as the string delimiter
//! (FunctionGemma's formatting guide; llama.cpp's and vLLM's `functiongemma` readers).
//! Read and streamed by [`super::gemma4`]'s reader with this family's markers.

use super::described::{Body, Described};
use super::tags::{BlockStream, BodyRule, LeadRule};
use serde_json::{Map, Value};

use super::gemma4::{LiveObject, lead, lead_wake, live_wakes, read_call, type_text_values, write_gemma_object};
use super::tags::Block;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Instructions, ReadCx, Untyped, Wake};

impl FormatId {
    pub(crate) const FUNCTIONGEMMA: FormatId = FormatId::builtin("functiongemma");
}

/// FunctionGemma's string delimiter.
const ESCAPE: &str = "<escape>";

const CLOSE: &str = "<end_function_call>";

/// What wakes the block's reader while its arguments stream ([`live_wakes`]).
static WAKES: [Wake; 2] = live_wakes(CLOSE);

/// What wakes the block's reader while its lead waits for its `{` ([`lead_wake`]).
pub(crate) static LEAD_WAKE: Wake = lead_wake("<start_function_call>".len());

static BLOCK: Block = Block {
    format: FormatId::FUNCTIONGEMMA,
    open: "<start_function_call>",
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Fn(body),
};

/// Values without a schema type: FunctionGemma's model-card reader casts each `<escape>`
/// value (numbers, `true`/`false`), and so do vLLM's and SGLang's; JSON literals here.
const UNTYPED: Untyped = Untyped::Json;

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = read_call(body, format, ESCAPE)?;
    for d in &mut drafts {
        let spec = cx.ctx.spec(&d.name);
        if let Some(args) = d.args.as_mut() {
            type_text_values(args, spec, UNTYPED, &mut d.repairs);
        }
    }
    Ok(drafts)
}


fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("<start_function_call>call:{name}");
    write_gemma_object(&mut s, args, ESCAPE, 0);
    s.push_str("<end_function_call>");
    s
}

fn live(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveObject::new(BLOCK.open.len(), ESCAPE, ctx.limits.max_depth, &WAKES).with_text_values(UNTYPED))
}

pub(crate) static FUNCTIONGEMMA: Described = Described {
    id: FormatId::FUNCTIONGEMMA,
    description: "<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call> (FunctionGemma)",
    example: "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
    body: Body::Live(&BLOCK, live),
    model_names: &["functiongemma*"],
    template_markers: &["<start_function_call>", "<escape>"],
    instructions: Some(Instructions {
        how: "To call a tool, write <start_function_call>call:TOOL_NAME{...}<end_function_call> where the arguments object has bare keys, text between <escape> markers, and numbers, booleans, lists and nested objects as literals, e.g. {city:<escape>Paris<escape>,days:3}.",
        several: "- To make several calls, write several <start_function_call> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    untyped: UNTYPED,
    ..Described::BASE
};

