//! `functiongemma`: FunctionGemma (Gemma 3 270M) writes
//! `<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>`: Gemma
//! 4's call syntax (bare keys, literals as is) with `<escape>` as the string delimiter
//! (FunctionGemma's formatting guide; llama.cpp's and vLLM's `functiongemma` readers).
//! Read and streamed by [`super::gemma4`]'s reader with this family's markers.

use serde_json::{Map, Value};

use super::gemma4::{LiveObject, lead, read_call, type_text_values, write_gemma_object};
use super::tags::{Block, BlockReader};
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader, Untyped};

impl FormatId {
    pub(crate) const FUNCTIONGEMMA: FormatId = FormatId::builtin("functiongemma");
}

/// FunctionGemma's string delimiter.
const ESCAPE: &str = "<escape>";

static BLOCK: Block = Block {
    format: FormatId::FUNCTIONGEMMA,
    open: "<start_function_call>",
    close: "<end_function_call>",
    lead,
    body,
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

pub(crate) struct FunctionGemma;

impl Family for FunctionGemma {
    fn id(&self) -> &'static str {
        FormatId::FUNCTIONGEMMA.as_str()
    }
    fn description(&self) -> &'static str {
        "<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call> (FunctionGemma)"
    }
    fn example(&self) -> &'static str {
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>"
    }
    fn model_names(&self) -> &'static [&'static str] {
        &["functiongemma*"]
    }
    fn untyped(&self) -> Untyped {
        UNTYPED
    }
    fn template_markers(&self) -> &'static [&'static str] {
        &["<start_function_call>", "<escape>"]
    }
    fn openers(&self) -> &'static [&'static str] {
        std::slice::from_ref(&BLOCK.open)
    }
    fn declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        super::tags::block_declines(&BLOCK, region, is_final)
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        let live =
            LiveObject::new(BLOCK.open.len(), ESCAPE, ctx.limits.max_depth).with_text_values(UNTYPED);
        Some(Box::new(
            BlockReader::new(&BLOCK).streaming_with(Box::new(live)),
        ))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call a tool, write <start_function_call>call:TOOL_NAME{...}<end_function_call> where the arguments object has bare keys, text between <escape> markers, and numbers, booleans, lists and nested objects as literals, e.g. {city:<escape>Paris<escape>,days:3}.",
            several: "- To make several calls, write several <start_function_call> blocks; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut s = format!("<start_function_call>call:{name}");
        write_gemma_object(&mut s, args, ESCAPE, 0);
        s.push_str("<end_function_call>");
        Some(s)
    }
}
