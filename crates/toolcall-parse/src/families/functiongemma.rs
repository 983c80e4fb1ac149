//! `functiongemma`: FunctionGemma (Gemma 3 270M) writes
//! `<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>`: Gemma
//! 4's call syntax (bare keys, literals as is) with `<escape>` as the string delimiter
//! (FunctionGemma's formatting guide; llama.cpp's and vLLM's `functiongemma` readers).
//! Read and streamed by [`super::gemma4`]'s reader with this family's markers.

use super::described::{Body, Described};
use super::tags::{BlockStream, BodyRule, LeadRule};
use serde_json::{Map, Value};

use super::gemma4::{LiveObject, LiveWakes, call_wake, lead, lead_wake, live_wakes, read_call, type_text_values, write_gemma_object};
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
static WAKES: LiveWakes = live_wakes(CLOSE, ESCAPE);

/// What wakes the block's reader while its lead waits for its `{` ([`lead_wake`]).
pub(crate) static LEAD_WAKE: Wake = lead_wake("<start_function_call>".len());

/// What wakes the block's reader while its lead is a proper prefix of `call:`
/// ([`call_wake`]).
pub(crate) static CALL_WAKE: Wake = call_wake("<start_function_call>".len());

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


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::stream_replay::{one_shot, stream_in_char_pushes};
    use crate::{FormatSelection, ParseOptions, StreamParser, parse};
    use toolcall_core::{Repair, StreamEvent};

    /// FunctionGemma alone, with `lookup` typed by its schema and `note` without one.
    fn with_schema() -> ParseOptions {
        let mut tools = toolcall_core::Registry::new();
        let typed = serde_json::json!({"type": "object", "properties": {
            "code": {"type": "string"}, "n": {"type": "integer"}, "flag": {"type": "boolean"},
            "any": {"type": ["string", "integer"]}, "list": {"type": "array"}}});
        tools
            .add_spec(toolcall_core::ToolSpec::new("lookup", "", typed))
            .unwrap();
        tools
            .add_spec(toolcall_core::ToolSpec::new("note", "", serde_json::json!({"type": "object"})))
            .unwrap();
        ParseOptions {
            format: FormatSelection::Only("functiongemma".into()),
            tools: Some(std::sync::Arc::new(tools)),
            ..ParseOptions::default()
        }
    }

    /// Each finished call's repairs, streamed in `n`-char pushes (`None`: whole).
    fn repairs(text: &str, o: &ParseOptions, n: Option<usize>) -> Vec<Vec<Repair>> {
        let Some(n) = n else {
            return parse(text, o).calls.into_iter().map(|c| c.origin.repairs).collect();
        };
        let mut p = StreamParser::new(o.clone());
        let chars: Vec<char> = text.chars().collect();
        let mut events = Vec::new();
        for chunk in chars.chunks(n) {
            events.extend(p.push(&chunk.iter().collect::<String>()));
        }
        events.extend(p.finish());
        events
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::CallFinished { call, .. } => Some(call.origin.repairs),
                _ => None,
            })
            .collect()
    }

    /// Streamed in pushes of every size, with and without a schema, a call whose values are
    /// typed from text (`<escape>` values by the schema, else read as JSON) equals one-shot,
    /// repairs included (each text typed as the whole object's are, in order), and what was
    /// sent is its arguments. Covers calls built from the stream and calls that leave the
    /// template's shape midway or repeat a key (read whole).
    #[test]
    fn typed_values_stream_as_one_shot_reads_them() {
        let call = |name: &str, args: &str| {
            format!("Sure. <start_function_call>call:{name}{{{args}}}<end_function_call> ok")
        };
        let texts = [
            call("lookup", "code:<escape>007<escape>,n:<escape>007<escape>,flag:<escape>True<escape>"),
            call("lookup", "n:<escape>abc<escape>,any:<escape>42<escape>,list:[1,<escape>x<escape>],code:9"),
            call("lookup", "any:<escape>x y<escape>,n:<escape> 5 <escape>,flag:<escape>false<escape>"),
            call("note", "a:<escape>42<escape>,b:<escape>true<escape>,c:<escape>{\"k\":1}<escape>,d:<escape>x<escape>"),
            call("other", "a:<escape>1.5<escape>,b:<escape>[1, 2]<escape>,c:<escape>é ✓<escape>"),
            call("lookup", ""),
            call("lookup", "n:<escape>1<escape>,n:<escape>2<escape>"),
            call("lookup", "code:<escape>1<escape>,\"n\":2"),
            call("lookup", "code:<escape>1<escape> n:<escape>2<escape>"),
        ];
        for o in [with_schema(), ParseOptions { tools: None, ..with_schema() }] {
            for text in &texts {
                let repeated = text.contains("n:<escape>1<escape>,n:");
                let want = one_shot(text, &o);
                let want_repairs = repairs(text, &o, None);
                assert_eq!(want.0.len(), 1, "{text}");
                for n in 1..=9 {
                    let context = format!("{text:?} in {n}-char pushes");
                    let got = stream_in_char_pushes(text, &o, n, |_, _| {});
                    got.assert_equals_one_shot(&want, !repeated, repeated, &context);
                    assert_eq!(repairs(text, &o, Some(n)), want_repairs, "{context}");
                }
            }
        }
    }
}
