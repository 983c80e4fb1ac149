//! `muse_glimmer`: MuseGlimmer writes channel-scoped messages, each
//! `<|start|>assistant to=RECIPIENT<|message|>BODY<|eom|>` (the last one ends `<|eot|>`):
//! `to=self` is reasoning, `to=user` the reply, a tool recipient carries the calls as ATEM
//! markup, `<atem:function_calls>` around `<atem:invoke name="NAME">` elements with
//! `<atem:parameter name="K">V</atem:parameter>` children. The chat template ends its
//! generation prompt with `<|start|>assistant`, so when the family is chosen a reply
//! starting ` to=self<|message|>` continues it.
//!
//! A value the schema does not type is JSON when it parses as JSON, else text (the
//! reference parser's `x-parser: json` with non-JSON allowed). A name the template wrote as
//! `NAME.NAME` for a bare registered `NAME` is read as `NAME` (a `tool_name` repair).
//!
//! Sources: vLLM's `muse_glimmer_tool_parser.py` and `muse_glimmer_utils.py` (the message
//! framing, the recipients, the ATEM body, the value decoding and the doubled-name rule).
//! ATEM markup is a call in a tool's message (read with its header) or opening the reply;
//! in auto mode, quoted after text inside the `to=user` reply it is text, as vLLM's reader
//! has it (when the family is chosen, a bare block is a call anywhere).
//!
//! No constraint shape (`toolcall constrain` answers `Unsupported`): a call, the reasoning
//! and the reply are all messages opened by the same `<|start|>assistant to=`, told apart
//! by the recipient, and a reply is nothing but such messages, while the shape data opens
//! calls with a literal that nothing else starts with and lets prose run outside them.

use super::described::{Body, Described, Implied};
use serde_json::{Map, Value};
use toolcall_core::Repair;

use super::marked::{InvokeTags, invokes};
use super::tags::{Block, BlockReader, BodyRule, LeadRule, StreamTags, skip_space, valid_name};
use super::text_example::named_parameters;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{
    Advance, Instructions, ReadCx, ReasoningMarker, RegionReader, Untyped,
};

impl FormatId {
    pub(crate) const MUSE_GLIMMER: FormatId = FormatId::builtin("muse_glimmer");
}

const START: &str = "<|start|>";
const MESSAGE: &str = "<|message|>";
const ASSISTANT_TURN: &str = "<|start|>assistant";
const CALLS: &str = "<atem:function_calls>";
const CALLS_END: &str = "</atem:function_calls>";

/// A message header is at most this long (a recipient is a tool name).
const MAX_HEADER: usize = 512;

static TAGS: InvokeTags = InvokeTags {
    invoke: "<atem:invoke name=\"",
    invoke_end: "</atem:invoke>",
    param: "<atem:parameter name=\"",
    param_end: "</atem:parameter>",
    between: &[],
    verbatim: false,
};

static BLOCK: Block = Block {
    format: FormatId::MUSE_GLIMMER,
    open: CALLS,
    close: CALLS_END,
    lead: LeadRule::Invoke(&TAGS),
    body: BodyRule::Fn(body),
};

static STREAM: StreamTags = StreamTags::invokes(&TAGS);

/// The `invoke` elements, with a doubled `NAME.NAME` read as its registered `NAME`.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = invokes(body, cx, format, &TAGS)?;
    for d in &mut drafts {
        if cx.ctx.spec(&d.name).is_some() {
            continue;
        }
        if let Some((head, tail)) = d.name.split_once('.')
            && head == tail
            && cx.ctx.spec(head).is_some()
        {
            let bare = head.to_owned();
            d.repairs.push(Repair::new(
                "tool_name",
                format!("{:?} read as the registered tool {bare:?}", d.name),
            ));
            d.name = bare;
        }
    }
    Ok(drafts)
}

/// `to=self` messages are reasoning (written with the template's spelling).
const SELF_MESSAGE: ReasoningMarker = ReasoningMarker {
    open: "<|start|>assistant to=self<|message|>",
    close: "<|eom|>",
};


fn declines(opener: usize, region: &str, is_final: bool) -> bool {
    match opener {
        0 => super::tags::block_declines(&BLOCK, region, is_final),
        // What `HeaderReader`'s first step answers `NotMine` to (no reader is made for a
        // `<|start|>` that starts no assistant header: a flood of it cost a reader each).
        _ => match header_len(region) {
            Some(Some(_)) => false,
            Some(None) => true,
            None => is_final || region.len() >= MAX_HEADER,
        },
    }
}

fn reader(opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(match opener {
        0 => Box::new(BareBlock(BlockReader::new(&BLOCK).streaming(&STREAM))),
        _ => Box::new(HeaderReader::default()),
    })
}

fn continues_implied(start: &str, is_final: bool) -> Option<bool> {
    // ` to=RECIPIENT<|message|>` or a bare `<|message|>` completes the turn's header.
    match header_len(&format!("{ASSISTANT_TURN}{start}")) {
        Some(Some(_)) => Some(true),
        Some(None) => Some(false),
        None if is_final || start.len() >= MAX_HEADER => Some(false),
        None => None,
    }
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "{CALLS}\n<atem:invoke name=\"{name}\">\n{}</atem:invoke>\n{CALLS_END}",
        named_parameters("atem:parameter", "\n", args)
    )
}

pub(crate) static MUSE_GLIMMER: Described = Described {
    id: FormatId::MUSE_GLIMMER,
    description: "<|start|>assistant to=TOOL<|message|><atem:function_calls><atem:invoke name=\"NAME\"><atem:parameter name=\"K\">V</atem:parameter></atem:invoke></atem:function_calls><|eom|> (MuseGlimmer); to=self is reasoning, to=user the reply",
    example: r#"<atem:function_calls><atem:invoke name="get_weather"><atem:parameter name="city">Paris</atem:parameter></atem:invoke></atem:function_calls>"#,
    body: Body::Own {
        openers: // gpt-oss opens its calls with `<|start|>assistant to=` too, and is offered the
    // region first; it declines MuseGlimmer's channels.
    &[CALLS, START, "<|start|>assistant to="],
        reader,
        declines,
    },
    model_names: &["muse-glimmer*", "museglimmer*", "muse_glimmer*"],
    template_markers: &[CALLS, "<atem:invoke name=", "to=self"],
    reasoning: &[SELF_MESSAGE],
    strip: &["<|eom|>", "<|eot|>"],
    implied: Some(Implied {
        opener: ASSISTANT_TURN,
        continues: continues_implied,
    }),
    instructions: Some(Instructions {
        how: r#"To call tools, write <atem:function_calls>, then per call <atem:invoke name="TOOL_NAME"> with one <atem:parameter name="ARGUMENT_NAME">value</atem:parameter> per argument (text as is; numbers, booleans, arrays and objects as JSON) and </atem:invoke>, then </atem:function_calls>."#,
        several: "- To make several calls, write several <atem:invoke> blocks inside the one <atem:function_calls>; they run in that order.\n",
    }),
    example_call: Some(example_call),
    untyped: Untyped::Json,
    ..Described::BASE
};


/// A message header `<|start|>assistant to=RECIPIENT<|message|>` (a `to=self` one is a
/// reasoning opener, longer, read first): removed; its body is read on (the reply's text).
/// A tool's message holding ATEM markup is read here with its header, as that tool's
/// calls: ATEM markup is a call only there (or opening the reply), never inside the
/// `to=user` reply, where a model quotes it.
#[derive(Default)]
struct HeaderReader {
    /// The tool message's ATEM block, read from this offset on.
    calls: Option<(usize, BlockReader)>,
}

impl RegionReader for HeaderReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if let Some((at, block)) = &mut self.calls {
            let at = *at;
            let mut inner = ReadCx {
                ctx: cx.ctx,
                base: cx.base + at,
                live: &mut *cx.live,
                streaming: cx.streaming,
                at_start: cx.at_start,
                end: cx.end,
                failed_scan: &mut *cx.failed_scan,
                failed_call_scan: &mut *cx.failed_call_scan,
                names: &mut *cx.names,
                kept: &mut *cx.kept,
                wake: None,
                broken_by: None,
            };
            return match block.advance(region.get(at..).unwrap_or(""), is_final, &mut inner) {
                Advance::NeedMore => Advance::NeedMore,
                Advance::Done { end, outcome } => Advance::Done {
                    end: at + end,
                    outcome,
                },
                Advance::Broken { end, why } => Advance::Broken { end: at + end, why },
                Advance::Malformed { end, failure } => Advance::Malformed {
                    end: at + end,
                    failure,
                },
                Advance::Dropped { end, why } => Advance::Dropped { end: at + end, why },
                // Not a block after all: the header alone is removed, the rest read on.
                Advance::NotMine | Advance::Text(_) => Advance::Done {
                    end: at,
                    outcome: Outcome::default(),
                },
            };
        }
        match header_len(region) {
            Some(Some(end)) => {
                let after = region.get(end..).unwrap_or("");
                let body = skip_space(after);
                let tool = recipient(region.get(..end).unwrap_or(""))
                    .is_some_and(|to| !["self", "user"].contains(&to));
                if tool && body.starts_with(CALLS) {
                    let at = end + after.len() - body.len();
                    self.calls = Some((at, BlockReader::new(&BLOCK).streaming(&STREAM)));
                    return self.advance(region, is_final, cx);
                }
                if tool && CALLS.starts_with(body) && !is_final {
                    return Advance::NeedMore;
                }
                Advance::Done {
                    end,
                    outcome: Outcome::default(),
                }
            }
            None if !is_final && region.len() < MAX_HEADER => Advance::NeedMore,
            _ => Advance::NotMine,
        }
    }
}

/// An ATEM block not behind a tool's message header. In auto mode a call only when it
/// opens the reply (a server that removed the header): after visible text it is markup
/// quoted in the reply. When the family is chosen it is a call anywhere, as the text-mode
/// instructions teach a model to write it bare.
struct BareBlock(BlockReader);

impl RegionReader for BareBlock {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if !cx.at_start && !cx.ctx.explicit {
            return Advance::NotMine;
        }
        self.0.advance(region, is_final, cx)
    }
}

/// The recipient a complete header names (`to=NAME`), if any.
fn recipient(header: &str) -> Option<&str> {
    let (_, r) = header.split_once("to=")?;
    let end = r.find('<').unwrap_or(r.len());
    Some(r[..end].trim())
}

/// The length of the header at the start of `s`: `Some(None)` when it is not one, `None`
/// while more bytes decide.
fn header_len(s: &str) -> Option<Option<usize>> {
    let mut rest = s.strip_prefix(START)?;
    // A byte that is no blank and starts no `assistant` decides at once (no header), read
    // before the blanks' trim and the compares (a `<|start|>` of a flood of it and junk).
    if let Some(&b) = rest.as_bytes().first()
        && b != b'a'
        && b.is_ascii()
        && !char::from(b).is_whitespace()
    {
        return Some(None);
    }
    // An ASCII byte that is no blank decided without the trim (~30 instructions a
    // `<|start|>` of a flood of it and junk).
    let ws = |r: &str| match r.as_bytes().first() {
        Some(&b) if b.is_ascii() && !char::from(b).is_whitespace() => 0,
        _ => r.len() - r.trim_start_matches(char::is_whitespace).len(),
    };
    rest = &rest[ws(rest)..];
    match rest.strip_prefix("assistant") {
        Some(r) => rest = r,
        None if "assistant".starts_with(rest) => return None,
        None => return Some(None),
    }
    rest = &rest[rest.len() - rest.trim_start_matches([' ', '\t']).len()..];
    if let Some(r) = rest.strip_prefix("to=") {
        let name_end = r.find('<').unwrap_or(r.len());
        let name = &r[..name_end];
        if !name.is_empty() && !valid_name(name) {
            return Some(None);
        }
        rest = &r[name_end..];
    } else if "to=".starts_with(rest) && !rest.is_empty() {
        return None;
    }
    if rest.starts_with(MESSAGE) {
        Some(Some(s.len() - rest.len() + MESSAGE.len()))
    } else if MESSAGE.starts_with(rest) {
        None
    } else {
        Some(None)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::header_len;
    use crate::{detect_template, model_family};

    #[test]
    fn headers_are_read_from_their_bytes() {
        let h = "<|start|>assistant to=get_weather<|message|>";
        assert_eq!(header_len(h), Some(Some(h.len())));
        assert_eq!(header_len("<|start|>assistant<|message|>x"), Some(Some(29)));
        assert_eq!(header_len("<|start|>assistant to=get"), None);
        assert_eq!(header_len("<|start|>assis"), None);
        assert_eq!(header_len("<|start|>user<|message|>"), Some(None));
    }

    #[test]
    fn detect_and_model_names_pick_muse_glimmer() {
        let t = "{%- for m in messages %}<|start|>assistant to=self<|message|>{{ m.reasoning }}<|eom|>{%- for tc in m.tool_calls %}<|start|>assistant to={{ tc.function.name }}<|message|><atem:function_calls>\n<atem:invoke name=\"{{ tc.function.name }}\">{%- endfor %}{%- endfor %}<|start|>assistant";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("muse_glimmer"));
        assert_eq!(model_family("meta-models/Muse-Glimmer-30B").unwrap().family, "muse_glimmer");
    }
}
