//! `mistral`: `[TOOL_CALLS][{"name","arguments"}, ...]` (v3), `[TOOL_CALLS]name[ARGS]{...}`
//! (v11+, optionally `name[CALL_ID]id[ARGS]{...}`), and `[TOOL_CALLS]name{...}` from servers
//! that drop `[ARGS]`. Each `[TOOL_CALLS]` opens one region; an optional `[/TOOL_CALLS]`
//! after the call is consumed. Explicit markup: any name, flagged when unregistered.

use super::described::{Body, Described};
use crate::family::ToolResultText;
use crate::results::{break_marker, content_value};
use serde_json::{Map, Value, json};

use crate::FormatId;
use std::ops::Range;

use toolcall_core::Repair;

use crate::builder::Ctx;
use crate::family::{
    Advance, Instructions, Outcome, ReadCx, ReasoningMarker, RegionReader,
};

use super::json::Decoded;
use super::marked::cut_list_calls;
use super::args_object::{ArgsObject, ArgsRead, named_call, repaired, truncated};
use crate::shape::{Args, Piece, Shape};

pub(crate) const MARKER: &str = "[TOOL_CALLS]";
pub(crate) const ARGS: &str = "[ARGS]";
pub(crate) const CALL_ID: &str = "[CALL_ID]";
pub(crate) const END: &str = "[/TOOL_CALLS]";

/// Whitespace allowed between markup pieces before the region is given up.
const MAX_GAP: usize = 256;

impl FormatId {
    pub(crate) const MISTRAL: FormatId = FormatId::builtin("mistral");
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
// `[TOOL_CALLS]NAME[ARGS]{…}` (v11 templates), with an optional `[CALL_ID]`, without
// `[ARGS]` (older templates), or the legacy one-element list `[TOOL_CALLS][{…}]`.
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("[TOOL_CALLS]"),
    Piece::Either(
        &[
            Piece::Name,
            Piece::Optional(&[Piece::Lit("[CALL_ID]"), Piece::CallId]),
            Piece::Either(&[Piece::Lit("[ARGS]")], &[]),
            Piece::Args(Args::Json),
        ],
        &[
            Piece::Lit("["),
            Piece::Ws(""),
            Piece::NAME_ARGUMENTS,
            Piece::Ws(""),
            Piece::Lit("]"),
        ],
    ),
]);

/// `[TOOL_RESULTS]{"call_id": ID, "content": CONTENT}[/TOOL_RESULTS]` per result, as
/// the Mistral templates that carry call ids write them.
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results
        .iter()
        .map(|r| {
            let body = serde_json::json!({"call_id": r.call_id, "content": content_value(r.content)});
            format!(
                "[TOOL_RESULTS]{}[/TOOL_RESULTS]",
                break_marker(
                    &break_marker(&body.to_string(), "[/TOOL_RESULTS]"),
                    "[TOOL_RESULTS]"
                )
            )
        })
        .collect()
}

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(Reader {
        state: State::Head,
        max_depth: ctx.limits.max_depth,
    }))
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "[TOOL_CALLS]{}",
        json!([{"name": name, "arguments": args}])
    )
}

pub(crate) static MISTRAL: Described = Described {
    id: FormatId::MISTRAL,
    description: "[TOOL_CALLS][{...}], [TOOL_CALLS]name[ARGS]{...} (also [CALL_ID]id, or no [ARGS]); [/TOOL_CALLS] consumed",
    example: r#"[TOOL_CALLS][{"name":"get_weather","arguments":{"city":"Paris"}}]"#,
    body: Body::Own {
        openers: &[MARKER],
        reader,
        declines,
    },
    model_names: &["mistral-*", "mixtral-*", "ministral-*", "magistral-*", "devstral-*", "codestral-*", "pixtral-*"],
    template_markers: &["[TOOL_CALLS]"],
    // Magistral (and Mistral Small 3.2+ with thinking) reason between `[THINK]` and
    // `[/THINK]` (their chat templates; vLLM's `mistral` reasoning parser).
    reasoning: &[ReasoningMarker {
        open: "[THINK]",
        close: "[/THINK]",
    }],
    strip: &[END],
    instructions: Some(Instructions {
        how: "To call tools, write [TOOL_CALLS] followed by a JSON array of calls, each {\"name\": TOOL_NAME, \"arguments\": {...}}.",
        several: "- To make several calls, put them all in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


enum State {
    Head,
    /// Whitespace is skipped from `at` until the JSON starts.
    Gap { at: usize, named: Option<(String, Option<String>)> },
    Json {
        args: ArgsObject,
        named: Option<(String, Option<String>)>,
    },
    /// The JSON ended at `end`: is `[/TOOL_CALLS]` next?
    Tail { end: usize, outcome: Outcome },
}

struct Reader {
    state: State,
    max_depth: usize,
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let bytes = region.as_bytes();
        loop {
            match &mut self.state {
                State::Head => {
                    let rest = region.get(MARKER.len()..).unwrap_or("");
                    match head(rest, is_final) {
                        None => return Advance::NeedMore,
                        // `[TOOL_CALLS]` named in prose: not followed by a call.
                        Some(Head::Invalid) => return Advance::NotMine,
                        Some(Head::Json(off)) => {
                            self.state = State::Gap {
                                at: MARKER.len() + off,
                                named: None,
                            }
                        }
                        Some(Head::Named(name, id, off)) => {
                            self.state = State::Gap {
                                at: MARKER.len() + off,
                                named: Some((name.to_owned(), id.map(str::to_owned))),
                            }
                        }
                    }
                }
                State::Gap { at, named } => {
                    while bytes.get(*at).is_some_and(u8::is_ascii_whitespace) {
                        *at += 1;
                    }
                    match bytes.get(*at) {
                        Some(b'[')
                            if named.is_none()
                                && self.max_depth > 0
                                && bytes
                                    .get(*at..)
                                    .is_some_and(|r| r.starts_with(MARKER.as_bytes())) =>
                        {
                            // `[TOOL_CALLS][TOOL_CALLS]`: the second marker is the JSON
                            // value, which `ArgsObject` would scan to its `]` (balanced
                            // whatever follows) and the lenient decode refuse (a word in a
                            // list): broken there with the decode's message, written once.
                            return Advance::Broken {
                                end: *at + MARKER.len(),
                                why: marker_as_value().to_owned(),
                            };
                        }
                        Some(b'{' | b'[') => {
                            let start = *at;
                            let named = named.take();
                            let call = named.as_ref().map(|(n, id)| (n.as_str(), id.as_deref()));
                            let args = ArgsObject::new(region, start, call, self.max_depth, cx);
                            self.state = State::Json { args, named };
                        }
                        Some(_) => {
                            return Advance::Broken {
                                end: *at,
                                why: "[TOOL_CALLS] not followed by a call: expected a JSON object or array".into(),
                            };
                        }
                        None if is_final => {
                            return Advance::Broken {
                                end: region.len(),
                                why: "truncated tool call: nothing follows [TOOL_CALLS]; not run".into(),
                            };
                        }
                        None => return Advance::NeedMore,
                    }
                }
                State::Json { args, named } => {
                    if named.is_none()
                        && let Some((end, decoded)) = args.decode_calls(region, cx)
                    {
                        let json = args.start()..end;
                        match calls_list(decoded, Vec::new(), json, cx) {
                            Ok(outcome) => self.state = State::Tail { end, outcome },
                            Err(why) => return Advance::Broken { end, why },
                        }
                        continue;
                    }
                    match args.advance(region, is_final, cx) {
                    ArgsRead::NeedMore => return Advance::NeedMore,
                    ArgsRead::Truncated => {
                        // `[TOOL_CALLS][…` cut inside an entry: the complete ones run.
                        let start = args.start();
                        if named.is_none()
                            && let Some(o) = cut_list_calls(
                                region.get(start..).unwrap_or(""),
                                start,
                                FormatId::MISTRAL,
                                super::tags::BodyRule::Json,
                                cx,
                            )
                        {
                            return Advance::Done {
                                end: region.len(),
                                outcome: o,
                            };
                        }
                        return Advance::Broken {
                            end: region.len(),
                            why: match named {
                                Some((name, _)) => truncated(&format!("[TOOL_CALLS]{name}")),
                                None => "truncated tool call: the JSON ends before it is closed; not run".into(),
                            },
                        };
                    }
                    ArgsRead::Malformed { end, error } => {
                        return Advance::Broken {
                            end,
                            why: ["[TOOL_CALLS] not followed by a call: ", &error].concat(),
                        };
                    }
                    ArgsRead::Done {
                        end,
                        value,
                        repairs,
                    } => {
                        let json = args.start()..end;
                        let outcome = match named.take() {
                            Some((name, id)) => Ok(named_call(
                                &name,
                                id,
                                FormatId::MISTRAL,
                                (value, repairs),
                                json,
                                end,
                                cx,
                            )),
                            None => calls_list(Decoded::Value(value), repairs, json, cx),
                        };
                        match outcome {
                            Ok(outcome) => self.state = State::Tail { end, outcome },
                            Err(why) => return Advance::Broken { end, why },
                        }
                    }
                }},
                State::Tail { end, outcome } => {
                    let end = *end;
                    let after = region.get(end..).unwrap_or("");
                    let gap = leading_space(after);
                    let rest = after.get(gap..).unwrap_or("");
                    let closing = if rest.starts_with(END) {
                        Some(end + gap + END.len())
                    } else if !is_final && gap <= MAX_GAP && END.starts_with(rest) {
                        return Advance::NeedMore;
                    } else {
                        None
                    };
                    return Advance::Done {
                        end: closing.unwrap_or(end),
                        outcome: std::mem::take(outcome),
                    };
                }
            }
        }
    }
}

/// Why `[TOOL_CALLS]` followed by the marker itself read as its JSON value is broken: the
/// message `ArgsObject`'s `Malformed` gives the reader for it (the lenient decode's error of
/// the marker's text, which is the same every time), written once.
fn marker_as_value() -> &'static str {
    static WHY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    WHY.get_or_init(|| {
        let error = crate::repair::parse_lenient(MARKER).err().unwrap_or_default();
        ["[TOOL_CALLS] not followed by a call: ", &error].concat()
    })
}

/// `[TOOL_CALLS][{"name", "arguments"}, ...]` (or one such object).
fn calls_list(
    v: Decoded,
    repairs: Vec<Repair>,
    json: Range<usize>,
    cx: &mut ReadCx<'_>,
) -> Result<Outcome, String> {
    let mut o = v
        .classify(cx.ctx, FormatId::MISTRAL, true, cx.span(0, json.end))
        .ok_or("[TOOL_CALLS] content is not a list of {name, arguments} calls")?;
    for d in &mut o.drafts {
        d.repairs.extend(repairs.iter().cloned());
    }
    if !repairs.is_empty() {
        o.diagnostics
            .push(repaired(&repairs, cx.span(json.start, json.end)));
    }
    Ok(o)
}

/// Leading ASCII whitespace of `s`, counted up to `MAX_GAP + 1` (bounded per push).
fn leading_space(s: &str) -> usize {
    s.bytes()
        .take(MAX_GAP + 1)
        .take_while(u8::is_ascii_whitespace)
        .count()
}

/// Whether the reader's first step declines the region (its head is [`Head::Invalid`]):
/// asked before a reader is built, so that a marker in prose (a flood of `[TOOL_CALLS]x`)
/// costs no boxed reader. The head borrows its name, so the test allocates nothing.
fn declines(_opener: usize, region: &str, is_final: bool) -> bool {
    // A bracket after the marker and its blanks (every call of the list form, and the
    // marker after `[TOOL_CALLS] `) is `Head::Json`: told without the rest of the head.
    let rest = region.as_bytes().get(MARKER.len()..).unwrap_or(&[]);
    let mut skip = 0;
    while skip <= MAX_GAP && rest.get(skip).is_some_and(u8::is_ascii_whitespace) {
        skip += 1;
    }
    match rest.get(skip) {
        Some(b'[' | b'{') if skip <= MAX_GAP => false,
        _ => matches!(
            head(region.get(MARKER.len()..).unwrap_or(""), is_final),
            Some(Head::Invalid)
        ),
    }
}

/// What follows the marker, once decidable.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head<'a> {
    /// A JSON array or object starts at this offset.
    Json(usize),
    /// `name[ARGS]`: name, optional call id, JSON starts at this offset.
    Named(&'a str, Option<&'a str>, usize),
    /// Not a Mistral call.
    Invalid,
}

/// Decides the head from `rest` (the bytes after the marker); `None` = need more bytes.
pub(crate) fn head(rest: &str, is_final: bool) -> Option<Head<'_>> {
    let skip = leading_space(rest);
    if skip > MAX_GAP {
        return Some(Head::Invalid);
    }
    let trimmed = rest.get(skip..)?;
    let first = trimmed.bytes().next();
    match first {
        None => return if is_final { Some(Head::Invalid) } else { None },
        Some(b'[' | b'{') => return Some(Head::Json(skip)),
        _ => {}
    }
    // ASCII names by bytes (`tag_name_len` decodes each character: ~60 instructions for
    // the `x` of a flood of `[TOOL_CALLS]x`); past a non-ASCII byte, by characters.
    let ascii = trimmed
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b':'))
        .count();
    let name_len = if trimmed.as_bytes().get(ascii).is_some_and(|b| !b.is_ascii()) {
        super::call_syntax::tag_name_len(trimmed)
    } else {
        ascii
    };
    if name_len == 0 || name_len > 256 {
        return Some(Head::Invalid);
    }
    let name = trimmed.get(..name_len)?;
    let after = trimmed.get(name_len..)?;
    if after.is_empty() {
        return if is_final { Some(Head::Invalid) } else { None };
    }
    // `NAME{json}`: servers that drop the `[ARGS]` token.
    if after.starts_with('{') {
        return Some(Head::Named(name, None, skip + name_len));
    }
    if let Some(a) = after.strip_prefix(ARGS) {
        // Whitespace after `[ARGS]` is skipped by the reader, whatever the chunking.
        let _ = a;
        return Some(Head::Named(name, None, skip + name_len + ARGS.len()));
    }
    if let Some(a) = after.strip_prefix(CALL_ID) {
        let id_len = a
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
            .count();
        let rest2 = a.get(id_len..)?;
        if rest2.is_empty() {
            return if is_final || id_len > 128 {
                Some(Head::Invalid)
            } else {
                None
            };
        }
        if rest2.starts_with(ARGS) {
            let id = a.get(..id_len)?;
            return Some(Head::Named(
                name,
                Some(id),
                skip + name_len + CALL_ID.len() + id_len + ARGS.len(),
            ));
        }
        if ARGS.starts_with(rest2) && !is_final {
            return None;
        }
        return Some(Head::Invalid);
    }
    if (ARGS.starts_with(after) || CALL_ID.starts_with(after)) && !is_final {
        return None;
    }
    Some(Head::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        // Names past ASCII are read by characters, as `tag_name_len` reads them.
        assert_eq!(
            head("naïve_x[ARGS]{", false),
            Some(Head::Named("naïve_x", None, 14))
        );
        assert_eq!(head("a-b.c:d{", false), Some(Head::Named("a-b.c:d", None, 7)));
        assert_eq!(head("x[TOOL_CALLS]x", false), Some(Head::Invalid));
        assert_eq!(head("名前[ARGS]", true), Some(Head::Named("名前", None, 12)));
        assert_eq!(head(" [{", false), Some(Head::Json(1)));
        assert_eq!(head("get[AR", false), None);
        assert_eq!(
            head("get[ARGS]{", false),
            Some(Head::Named("get", None, 9))
        );
        assert_eq!(
            head("get{\"a\"", false),
            Some(Head::Named("get", None, 3))
        );
        assert_eq!(
            head("get[CALL_ID]abc[ARGS]{", false),
            Some(Head::Named("get", Some("abc"), 21))
        );
        assert_eq!(head("get now", false), Some(Head::Invalid));
    }

    // The marker read as the value after a marker is broken at its `]` with the message the
    // JSON reader gives it: one-shot (where the whole marker is there at once) against a
    // stream of one-byte pushes (where the reader scans it, byte by byte).
    #[test]
    fn a_marker_after_the_marker_is_broken_as_the_json_reader_breaks_it() {
        assert!(crate::repair::parse_lenient(MARKER).is_err());
        let options = crate::ParseOptions {
            format: crate::FormatSelection::Auto,
            ..crate::ParseOptions::default()
        };
        let call = r#"[{"name": "get_weather", "arguments": {"city": "Paris"}}]"#;
        for text in [
            "[TOOL_CALLS][TOOL_CALLS]".to_owned(),
            "a [TOOL_CALLS] [TOOL_CALLS][TOOL_CALLS] b".to_owned(),
            format!("[TOOL_CALLS][TOOL_CALLS]{call} x"),
            format!("{}{call}", "[TOOL_CALLS]".repeat(41)),
        ] {
            let whole = crate::parse(&text, &options);
            assert!(
                whole
                    .diagnostics
                    .iter()
                    .any(|d| d.message == marker_as_value()),
                "{text}: {:?}",
                whole.diagnostics
            );
            let mut stream = crate::StreamParser::new(options.clone());
            let mut events = Vec::new();
            for c in text.chars() {
                events.extend(stream.push(&c.to_string()));
            }
            events.extend(stream.finish());
            let (mut streamed, mut calls, mut diagnostics) = (String::new(), Vec::new(), Vec::new());
            for e in events {
                match e {
                    crate::StreamEvent::Text { text } => streamed.push_str(&text),
                    crate::StreamEvent::CallFinished { call, .. } => {
                        calls.push((call.name, call.arguments, call.origin.span));
                    }
                    crate::StreamEvent::Diagnostic { diagnostic } => diagnostics.push(diagnostic),
                    _ => {}
                }
            }
            assert_eq!(streamed, whole.text, "{text}");
            assert_eq!(diagnostics, whole.diagnostics, "{text}");
            let one: Vec<_> = whole
                .calls
                .into_iter()
                .map(|c| (c.name, c.arguments, c.origin.span))
                .collect();
            assert_eq!(calls, one, "{text}");
        }
    }
}
