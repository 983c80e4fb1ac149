//! `inkling`: Inkling writes typed content blocks, each a dedicated special token:
//! `<|message_model|>` opens a block, optionally followed by a function name, then its
//! kind: `<|content_thinking|>` (reasoning), `<|content_text|>` (the visible reply) or
//! `<|content_invoke_tool_json|>` and one JSON object `{"name", "args"}` (a call); a block
//! ends with `<|end_message|>`, or sampling ends with `<|content_model_end_sampling|>`.
//! The chat template ends its generation prompt with `<|message_model|>`, so when the family
//! is chosen a reply starting `get_weather<|content_invoke_tool_json|>…` or
//! `<|content_text|>…` continues it (the name before the kind is metadata, not text).
//!
//! Sources: vLLM's Inkling parser (`vllm/parser/engine`, its block grammar, the optional
//! name in the block header, arguments under `args`, also `arguments`/`parameters`) and its
//! reasoning handling of `<|content_thinking|>` blocks.
//!
//! No constraint shape (`toolcall constrain` answers `Unsupported`): a call, a reasoning
//! block and the visible reply all open with the same `<|message_model|>`, and a reply is
//! nothing but such blocks, while the shape data opens calls with a literal that nothing
//! else starts with and lets prose run outside them.

use super::described::{Body, Described, Implied, never};
use serde_json::{Map, Value};

use super::tags::valid_name;
use super::text_example::name_arguments;
use crate::FormatId;
use crate::builder::{Ctx, Outcome};
use crate::family::{
    Advance, Instructions, ReadCx, ReasoningMarker, RegionReader, Scan, Scanner,
    json_calls, parse_lenient,
};

impl FormatId {
    pub(crate) const INKLING: FormatId = FormatId::builtin("inkling");
}

const MESSAGE_MODEL: &str = "<|message_model|>";
const INVOKE_JSON: &str = "<|content_invoke_tool_json|>";
const CONTENT_TEXT: &str = "<|content_text|>";
const THINKING: &str = "<|content_thinking|>";
const END_MESSAGE: &str = "<|end_message|>";
const END_SAMPLING: &str = "<|content_model_end_sampling|>";
const INVOKE_TEXT: &str = "<|content_invoke_tool_text|>";
const TOOL_ERROR: &str = "<|content_tool_error|>";

/// The block kinds that may follow a block's header.
const KINDS: [&str; 6] = [
    INVOKE_JSON,
    CONTENT_TEXT,
    THINKING,
    INVOKE_TEXT,
    TOOL_ERROR,
    END_SAMPLING,
];

/// A function name in a block header is at most this long.
const MAX_NAME: usize = 256;
/// Blanks allowed between `<|content_invoke_tool_json|>` and its JSON.
const MAX_LEAD: usize = 4096;


fn reader(opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    let from = if opener == 0 { None } else { Some(INVOKE_JSON.len()) };
    Some(Box::new(BlockReader {
        json_from: from,
        scanner: Scanner::new(ctx.limits.max_depth, false),
        start: None,
    }))
}

/// What [`BlockReader`] of `<|message_model|>` answers at its first step when the header
/// is removed (no call block follows), read without making it (a flood of the header made,
/// boxed and dropped a reader with its scanner at each).
fn removes(opener: usize, region: &str, is_final: bool) -> Option<usize> {
    if opener != 0 {
        return None;
    }
    match header(region.get(MESSAGE_MODEL.len()..).unwrap_or("")) {
        Header::Kind { kind, .. } if kind == INVOKE_JSON => None,
        Header::Kind { at, .. } => Some(MESSAGE_MODEL.len() + at),
        Header::Partial if !is_final => None,
        _ => Some(MESSAGE_MODEL.len()),
    }
}

fn continues_implied(start: &str, is_final: bool) -> Option<bool> {
    Some(match header(start) {
        Header::Kind { .. } => true,
        Header::Partial if !is_final => return None,
        Header::Partial | Header::No => false,
    })
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let call = name_arguments(name, args).replacen("\"arguments\"", "\"args\"", 1);
    format!("{INVOKE_JSON}{call}{END_MESSAGE}")
}

pub(crate) static INKLING: Described = Described {
    id: FormatId::INKLING,
    description: "<|message_model|>NAME<|content_invoke_tool_json|>{\"name\", \"args\"}<|end_message|> (Inkling); <|content_thinking|> blocks are reasoning, <|content_text|> blocks the reply",
    example: r#"<|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>"#,
    body: Body::Own {
        openers: &[MESSAGE_MODEL, INVOKE_JSON],
        reader,
        declines: never,
    },
    model_names: &["inkling", "inkling-*"],
    template_markers: &[MESSAGE_MODEL, INVOKE_JSON],
    reasoning: &[ReasoningMarker {
        open: THINKING,
        close: END_MESSAGE,
    }],
    strip: &[CONTENT_TEXT, END_MESSAGE, END_SAMPLING, INVOKE_TEXT, TOOL_ERROR],
    implied: Some(Implied {
        opener: MESSAGE_MODEL,
        continues: continues_implied,
    }),
    instructions: Some(Instructions {
        how: r#"To call a tool, write <|content_invoke_tool_json|> followed by one JSON object {"name": TOOL_NAME, "args": {...}}, then <|end_message|>."#,
        several: "- To make several calls, write several <|content_invoke_tool_json|> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    removes: Some(removes),
    ..Described::BASE
};


/// What starts a block after `<|message_model|>`.
enum Header {
    /// An optional name (`at` bytes), then one of [`KINDS`] (`kind`).
    Kind { at: usize, kind: &'static str },
    /// More bytes decide.
    Partial,
    No,
}

/// What every one of [`KINDS`] starts with.
const KIND_PREFIX: &str = "<|content_";

fn header(s: &str) -> Header {
    // A header without a name (a flood of `<|message_model|>`, a kind token) without the
    // searcher's setup: ~100 instructions a block.
    let lt = if s.as_bytes().first() == Some(&b'<') {
        0
    } else {
        match s.find('<') {
            Some(i) => i,
            None if s.len() <= MAX_NAME && (s.is_empty() || valid_name(s)) => {
                return Header::Partial;
            }
            None => return Header::No,
        }
    };
    let name = &s[..lt];
    if !name.is_empty() && !valid_name(name) {
        return Header::No;
    }
    let rest = &s[lt..];
    // No kind starts here, nor may one go on from here: the kinds' one prefix decides at
    // once (another `<|message_model|>`) instead of twelve compares.
    if rest.len() >= KIND_PREFIX.len() && !rest.starts_with(KIND_PREFIX) {
        return Header::No;
    }
    if let Some(kind) = KINDS.iter().find(|k| rest.starts_with(**k)) {
        return Header::Kind { at: lt, kind };
    }
    if KINDS.iter().any(|k| k.starts_with(rest)) {
        Header::Partial
    } else {
        Header::No
    }
}

/// A block: from `<|message_model|>` (its header is removed; a call block is read on), or
/// from `<|content_invoke_tool_json|>` (a call, up to the end of its JSON; the block's end
/// token is removed as a control token).
struct BlockReader {
    /// Region offset where the call's JSON may start, once known.
    json_from: Option<usize>,
    scanner: Scanner,
    start: Option<usize>,
}

impl RegionReader for BlockReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let from = match self.json_from {
            Some(f) => f,
            None => {
                let after = region.get(MESSAGE_MODEL.len()..).unwrap_or("");
                match header(after) {
                    Header::Kind { at, kind } if kind == INVOKE_JSON => {
                        let f = MESSAGE_MODEL.len() + at + INVOKE_JSON.len();
                        self.json_from = Some(f);
                        f
                    }
                    // Another kind: the header is removed, the kind token read on (a
                    // reasoning opener or a control token).
                    Header::Kind { at, .. } => {
                        return Advance::Done {
                            end: MESSAGE_MODEL.len() + at,
                            outcome: Outcome::default(),
                        };
                    }
                    Header::Partial if !is_final => return Advance::NeedMore,
                    _ => {
                        return Advance::Done {
                            end: MESSAGE_MODEL.len(),
                            outcome: Outcome::default(),
                        };
                    }
                }
            }
        };
        let start = match self.start {
            Some(s) => s,
            None => {
                let after = region.as_bytes().get(from..).unwrap_or(&[]);
                match after.iter().position(|b| !b.is_ascii_whitespace()) {
                    Some(i) if after[i] == b'{' => {
                        self.start = Some(from + i);
                        from + i
                    }
                    None if !is_final && after.len() < MAX_LEAD => return Advance::NeedMore,
                    // Not a call (prose naming the token): the header alone is removed.
                    _ if from > INVOKE_JSON.len() => {
                        return Advance::Done {
                            end: from - INVOKE_JSON.len(),
                            outcome: Outcome::default(),
                        };
                    }
                    _ => return Advance::NotMine,
                }
            }
        };
        let json = region.as_bytes().get(start..).unwrap_or(&[]);
        match self.scanner.advance(json) {
            Scan::NeedMore if !is_final => Advance::NeedMore,
            Scan::NeedMore => Advance::Broken {
                end: region.len(),
                why: "truncated tool call: the JSON ends before it is closed; not run".into(),
            },
            // The region ends at the bad byte (`consumed` counts it): one past it depended on
            // whether the next byte had arrived, one-shot and streamed disagreed.
            Scan::Fail(e) => Advance::Broken {
                end: region.len().min(start + self.scanner.consumed()),
                why: format!("malformed tool call JSON, not run: {e}"),
            },
            Scan::Done(n) => {
                let end = start + n;
                let text = region.get(start..end).unwrap_or("");
                call(text, end, cx)
            }
        }
    }
}

/// The call in `{"name", "args"}` (or `arguments`/`parameters`, as vLLM reads it).
fn call(text: &str, end: usize, cx: &mut ReadCx<'_>) -> Advance {
    let (mut v, repairs) = match parse_lenient(text) {
        Ok(r) => r,
        Err(e) => {
            return Advance::Broken {
                end,
                why: format!("malformed tool call JSON, not run: {e}"),
            };
        }
    };
    if let Value::Object(m) = &mut v
        && !m.contains_key("arguments")
        && !m.contains_key("parameters")
        && let Some(args) = m.remove("args")
    {
        m.insert("arguments".into(), args);
    }
    match json_calls(&mut v, cx.ctx, FormatId::INKLING, true, cx.span(0, end)) {
        Some(mut o) => {
            for d in &mut o.drafts {
                d.repairs.extend(repairs.iter().cloned());
            }
            Advance::Done { end, outcome: o }
        }
        None => Advance::Broken {
            end,
            why: "Inkling tool call is not a {name, args} object; not run".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn every_kind_starts_with_the_kinds_prefix() {
        for k in super::KINDS {
            assert!(k.starts_with(super::KIND_PREFIX), "{k}");
        }
    }
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_inkling() {
        let t = "{%- for m in messages %}{%- if m.role == 'assistant' %}<|message_model|>{%- for tc in m.tool_calls %}{{ tc.function.name }}<|content_invoke_tool_json|>{{ {'name': tc.function.name, 'args': tc.function.arguments} | tojson }}<|end_message|>{%- endfor %}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}<|message_model|>{%- endif %}";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("inkling"));
        assert_eq!(model_family("thinkingmachines/inkling-small").unwrap().family, "inkling");
        assert_eq!(model_family("thinkingmachines/Inkling").unwrap().family, "inkling");
    }
}
