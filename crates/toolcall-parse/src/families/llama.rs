//! `llama`: Llama 3.x JSON calls `{"name", "parameters"}` (recognised as bare JSON when
//! `llama` precedes `json` in the priority order), and `<|python_tag|>` followed by JSON,
//! which marks it as calls (any name, flagged when unregistered). End-of-message tokens are
//! markup and removed from the text. Built-in tool calls after the tag are `llama3_builtin`.

use super::bare_json::JsonNeeds;
use super::described::{Bare, Body, Described};
use crate::family::ToolResultText;
use crate::results::break_marker;
use serde_json::{Map, Value, json};

use crate::FormatId;
use crate::builder::Ctx;

use super::args_object::LiveList;
use super::bare_json::looks_like_call;
use super::json::Decoded;
use super::marked::cut_list_end;
use crate::family::{
    Advance, Instructions, JsonCx, Outcome, ReadCx, RegionReader, Scan, Scanner, json_calls,
    parse_lenient,
};
use crate::scanner::decode_calls_prefix;
use crate::shape::{Piece, Shape};
use std::ops::Range;
use toolcall_core::{Diagnostic, Repair};

pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
pub(crate) const END_TOKENS: [&str; 3] = ["<|eom_id|>", "<|eot_id|>", "<|end_of_text|>"];

/// Whitespace between the tag and what it marks, before the tag is taken for prose.
const MAX_GAP: usize = 256;

impl FormatId {
    pub(crate) const LLAMA: FormatId = FormatId::builtin("llama");
}

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
// The JSON call bare or after `<|python_tag|>`: the reply is the call.
static CONSTRAINT: Shape = Shape::whole_reply(&[
    Piece::Optional(&[Piece::Lit("<|python_tag|>")]),
    Piece::NAME_PARAMETERS,
]);

/// The `ipython` turn the Llama 3 template gives tool output, one per result.
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results
        .iter()
        .map(|r| {
            format!(
                "<|start_header_id|>ipython<|end_header_id|>\n\n{}<|eot_id|>",
                break_marker(r.content, "<|")
            )
        })
        .collect()
}

/// What a fresh [`Reader`]'s first step answers `NotMine` to, read without making it (its
/// live list is allocated; a flood of `<|python_tag|>` cost a reader each): after the tag's
/// blanks, a byte that starts no JSON, or more than [`MAX_GAP`] blanks.
fn declines(_opener: usize, region: &str, _is_final: bool) -> bool {
    let bytes = region.as_bytes();
    let mut at = PYTHON_TAG.len();
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    match bytes.get(at) {
        Some(b'{' | b'[') => false,
        Some(_) => true,
        None => at - PYTHON_TAG.len() > MAX_GAP,
    }
}

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(Reader {
        at: PYTHON_TAG.len(),
        scanner: None,
        max_depth: ctx.limits.max_depth,
        live: LiveList::new(PYTHON_TAG.len(), ctx.limits.max_depth),
        chain: None,
        announced: 0,
        streams: true,
    }))
}

fn classify_json(v: &mut Value, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    json_calls(v, cx.ctx, format, false, cx.span.clone())
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    json!({"name": name, "parameters": args}).to_string()
}

pub(crate) static LLAMA: Described = Described {
    id: FormatId::LLAMA,
    description: "Llama 3 JSON with \"parameters\", optionally after <|python_tag|>",
    example: r#"<|python_tag|>{"name":"get_weather","parameters":{"city":"Paris"}}"#,
    body: Body::Own {
        openers: &[PYTHON_TAG],
        reader,
        declines,
    },
    bare: Some(Bare {
        objects: true,
        arrays: true,
        classify: classify_json,
        calls: Some(super::json::classify_calls),
        needs: JsonNeeds {
            objects: &[&["name", "arguments"], &["name", "parameters"]],
            elements: &[&["name", "arguments"], &["name", "parameters"]],
        },
    }),
    model_names: &[
        "llama-3.1*",
        "llama-3.2*",
        "llama-3.3*",
        "meta-llama-3.1*",
        // Deep Cogito's Llama 3.x fine-tunes keep Llama 3.1's template (the 109B MoE is a
        // Llama 4 one: `llama4_pythonic`).
        "cogito-v1-preview-llama*",
        "cogito-v2-preview-llama-70b*",
        "cogito-v2-preview-llama-405b*",
    ],
    template_markers: &["<|python_tag|>"],
    strip: &END_TOKENS,
    instructions: Some(Instructions {
        how: "To call a tool, reply with only a JSON object {\"name\": TOOL_NAME, \"parameters\": {...}}.",
        several: "- Make one call per reply.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

/// What follows a call of a chain `{…}; {…}` (Llama 3.1/3.2 write parallel calls so; vLLM's
/// and tool-parser's Llama parsers split on the `;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    /// Blanks, `;`, blanks, and the next call's `{` at this offset.
    Next(usize),
    /// Anything else: the chain ends with the call before (a `;` not followed by an
    /// object stays text).
    End,
    /// The bytes so far could still be a link.
    NeedMore,
}

/// The link after the call ending at `end` in `bytes` (at most [`MAX_GAP`] blanks on either
/// side of the `;`, so a push looks at a bounded number of bytes).
pub(crate) fn next_link(bytes: &[u8], end: usize, is_final: bool) -> Link {
    let mut i = end;
    let mut semicolon = false;
    let mut gap = 0;
    loop {
        match bytes.get(i) {
            Some(b) if b.is_ascii_whitespace() => {
                gap += 1;
                if gap > MAX_GAP {
                    return Link::End;
                }
            }
            Some(b';') if !semicolon => {
                semicolon = true;
                gap = 0;
            }
            Some(b'{') if semicolon => return Link::Next(i),
            Some(_) => return Link::End,
            None if is_final => return Link::End,
            None => return Link::NeedMore,
        }
        i += 1;
    }
}

/// A value the scanner found whole (`text`, its bytes from its bracket to its end) decoded
/// as one-shot decodes it: streamed, valid JSON is decoded typed in one pass, calls without
/// their maps (`decode_calls_prefix` reads a value that opens with a bracket the same
/// whatever follows it, so it gives what one-shot's decode of the rest of the reply gave),
/// and only what that refuses is repaired by `parse_lenient`, where one-shot's scan ends
/// too. One-shot calls this only after its own decode of the same value failed: it goes
/// to `parse_lenient` at once. (Streamed, `parse_lenient` of every value cost ~17 % of a
/// 100-call `;` chain at 4-byte pushes.)
pub(crate) fn decode_scanned(
    text: &str,
    max_depth: usize,
    streaming: bool,
) -> Result<(Decoded, Vec<Repair>), String> {
    match streaming
        .then(|| decode_calls_prefix(text, max_depth))
        .flatten()
    {
        Some((n, d)) if n == text.len() => Ok((d, Vec::new())),
        _ => parse_lenient(text).map(|(v, r)| (Decoded::Value(v), r)),
    }
}

/// Whether a bare value's outcome is `llama`'s calls (then a `;` chain may follow it).
pub(crate) fn chains(o: &Outcome) -> bool {
    !o.drafts.is_empty() && o.drafts.iter().all(|d| d.format == FormatId::LLAMA)
}

/// Adds a later call of a chain (`next`) to the calls read so far.
pub(crate) fn extend_chain(chain: &mut Outcome, next: Outcome) {
    chain.drafts.extend(next.drafts);
    chain.diagnostics.extend(next.diagnostics);
    chain.text.push_str(&next.text);
}

/// A later call of a chain cut by the end of the reply (`span`): not run, and its text goes
/// with the chain, as a cut bare call's does.
pub(crate) fn drop_cut(chain: &mut Outcome, span: Range<usize>) {
    chain.diagnostics.push(Diagnostic::error(
        "truncated tool call: the JSON ends before it is closed; not run",
        span,
    ));
}

/// `<|python_tag|>` then one JSON value, or calls chained `{…}; {…}` (read as one region:
/// the `;` between them is markup); a tag followed by something else is not ours
/// (`llama3_builtin` reads `tool.call(...)`), and a tag alone at the end is dropped. A later
/// value of a chain that is not a call (or not closed) ends the chain before its `;`, which
/// stays text.
struct Reader {
    /// Where the value being read starts.
    at: usize,
    scanner: Option<Scanner>,
    max_depth: usize,
    /// Announces the calls and forwards their arguments while the JSON streams (one per
    /// value of a chain).
    live: LiveList,
    /// The calls of the chain read so far, and where the last one ends; `None` while the
    /// first value is read.
    chain: Option<(Outcome, usize)>,
    /// Streamed: the chain's first calls announced so far (the engine matches announced
    /// calls to the outcome's in order, so a later value's calls are announced only after
    /// every earlier one).
    announced: usize,
    /// Streamed: whether the value being read is announced while it streams (false once a
    /// call of the chain could not be announced in its turn).
    streams: bool,
}

impl Reader {
    /// Streamed, before a later value of the chain is announced: the calls read so far that
    /// were not (a value read whole within one push, or written so its list stops) are
    /// announced now with their whole arguments, in order; a call that cannot be (broken,
    /// or its arguments not an object) ends the announcing for the rest of the chain, whose
    /// calls the engine then sends when the chain ends.
    fn announce_the_rest(&mut self, cx: &mut ReadCx<'_>) {
        let Some((out, _)) = &self.chain else {
            return;
        };
        for d in out.drafts.get(self.announced..).unwrap_or_default() {
            let args = match (&d.broken, &d.args) {
                (None, None | Some(Value::Null)) => "{}".to_owned(),
                (None, Some(a @ Value::Object(_))) => a.to_string(),
                _ => {
                    self.streams = false;
                    return;
                }
            };
            cx.start_call(&d.name, d.id.as_ref().map(toolcall_core::CallId::as_str));
            cx.arguments_owned(args);
            self.announced += 1;
        }
    }

    fn end_chain(&mut self) -> Advance {
        match self.chain.take() {
            Some((outcome, end)) => Advance::Done { end, outcome },
            None => Advance::NeedMore,
        }
    }
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let bytes = region.as_bytes();
        loop {
            if self.scanner.is_none() {
                match &self.chain {
                    None => {
                        while bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
                            self.at += 1;
                        }
                        match bytes.get(self.at) {
                            Some(b'{' | b'[') => {}
                            Some(_) => return Advance::NotMine,
                            None if self.at - PYTHON_TAG.len() > MAX_GAP => {
                                return Advance::NotMine;
                            }
                            None if is_final => {
                                // A bare tag is a control token: removed.
                                return Advance::Done {
                                    end: region.len(),
                                    outcome: Outcome::default(),
                                };
                            }
                            None => return Advance::NeedMore,
                        }
                    }
                    Some((_, end)) => match next_link(bytes, *end, is_final) {
                        Link::NeedMore => return Advance::NeedMore,
                        Link::End => return self.end_chain(),
                        Link::Next(at) => {
                            self.at = at;
                            if cx.streaming() && self.streams {
                                self.announce_the_rest(cx);
                                if self.streams {
                                    self.live = LiveList::new(at, self.max_depth);
                                }
                            }
                        }
                    },
                }
                self.scanner = Some(Scanner::new(self.max_depth, false));
            }
            let start = self.at;
            let first = self.chain.is_none();
            let Some(scanner) = &mut self.scanner else {
                return Advance::NeedMore;
            };
            // One-shot, before the first scan: valid JSON is decoded in one pass, calls typed.
            let fast = (!cx.streaming() && scanner.consumed() == 0)
                .then(|| decode_calls_prefix(region.get(start..).unwrap_or(""), self.max_depth))
                .flatten();
            let scan = match &fast {
                Some((n, _)) => Scan::Done(*n),
                None => scanner.advance(bytes.get(start..).unwrap_or(&[])),
            };
            match scan {
                Scan::NeedMore if is_final && !first => {
                    // A later call cut by the end: dropped, as a cut bare call is.
                    if looks_like_call(bytes.get(start..).unwrap_or(&[]))
                        && let Some((chain, end)) = &mut self.chain
                    {
                        drop_cut(chain, cx.span(start, region.len()));
                        *end = region.len();
                    }
                    return self.end_chain();
                }
                Scan::NeedMore if is_final => {
                    // A list cut inside an entry: the complete entries are calls.
                    return cut_list_end(
                        &mut self.live,
                        region,
                        start,
                        FormatId::LLAMA,
                        "truncated tool call: the JSON after <|python_tag|> is not closed; not run",
                        cx,
                    );
                }
                Scan::NeedMore => {
                    if cx.streaming() && self.streams {
                        self.live.advance(region, cx);
                    }
                    return Advance::NeedMore;
                }
                Scan::Fail(_) if !first => return self.end_chain(),
                Scan::Fail(e) => {
                    return Advance::Broken {
                        end: start + scanner.consumed(),
                        why: format!("malformed tool call JSON after <|python_tag|>: {e}"),
                    };
                }
                Scan::Done(n) => {
                    let end = start + n;
                    let text = region.get(start..end).unwrap_or("");
                    let decoded = match fast {
                        Some((_, v)) => Ok((v, Vec::new())),
                        None => decode_scanned(text, self.max_depth, cx.streaming()),
                    };
                    // The first call's span holds the tag; a later one's is its object.
                    let span = cx.span(if first { 0 } else { start }, end);
                    let (v, repairs) = match decoded {
                        Ok(d) => d,
                        Err(_) if !first => return self.end_chain(),
                        Err(e) => {
                            return Advance::Broken {
                                end,
                                why: format!("malformed tool call JSON after <|python_tag|>: {e}"),
                            };
                        }
                    };
                    // The calls go straight to the chain's one list.
                    // One-shot, a short `;` chain after the first value (the rest of the
                    // region holds at most three more calls as long as the first): room for
                    // four calls at once (a list made for one grows to four at the second
                    // call: ~730 instructions of llama/small's 3-call chain; room for
                    // exactly three measured no gain, the allocator's reuse of the freed
                    // list). A longer chain keeps the list made for one: room for four at
                    // once measured ~35 k instructions more a parse of a 100-call chain
                    // (the allocator's placement of the growing list; three runs each).
                    let room = if first
                        && !cx.streaming()
                        && matches!(next_link(bytes, end, is_final), Link::Next(_))
                    {
                        let calls = 1 + region.len().saturating_sub(end) / (end - start).max(1);
                        if calls <= 4 { 4 } else { 0 }
                    } else {
                        0
                    };
                    let (out, last) = self.chain.get_or_insert_with(|| {
                        let out = Outcome {
                            drafts: Vec::with_capacity(room),
                            ..Outcome::default()
                        };
                        (out, 0)
                    });
                    let from = out.drafts.len();
                    if !v.classify_into(cx.ctx, FormatId::LLAMA, true, span.clone(), out) {
                        if !first {
                            return self.end_chain();
                        }
                        self.chain = None;
                        return Advance::Broken {
                            end,
                            why: "JSON after <|python_tag|> is not a {name, parameters} call"
                                .into(),
                        };
                    }
                    for d in out.drafts.get_mut(from..).unwrap_or_default() {
                        d.repairs.extend(repairs.iter().cloned());
                    }
                    if cx.streaming() && self.streams && self.live.calls() > 0 {
                        let upto = region.get(..end).unwrap_or("");
                        let drafts = out.drafts.split_off(from);
                        self.live.finish(upto, &drafts, span, out, cx);
                        out.drafts.extend(drafts);
                        // The list announces its value's calls in order, from the first.
                        if self.announced == from {
                            self.announced = from + self.live.calls();
                        }
                    }
                    *last = end;
                    self.scanner = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{FormatSelection, ParseOptions, StreamParser};
    use toolcall_core::StreamEvent;

    // A value the scanner found whole while streaming is decoded typed (`decode_scanned`)
    // and repaired only where that refuses it: the calls, their arguments and repairs, the
    // text and the diagnostics equal one-shot's (which decodes typed before any scan) at
    // every push size, for valid values, values that need repair, lists and non-calls in
    // a chain, tagged and bare.
    #[test]
    fn streamed_chain_values_decode_as_one_shot() {
        let texts = [
            r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "n": [1, 2.5, {"a": null}]}}; {"name": "get_time", "parameters": {}}"#,
            r#"<|python_tag|>{"name": "a", "parameters": {"x": 1,}}; {'name': 'b', 'parameters': {'y': True}}; {"name": "c", "parameters": {"z": "q"}} tail"#,
            r#"{"name": "get_weather", "parameters": {"city": "Rome"}}; [{"name": "b", "parameters": {"k": "v"}}, {"parameters": {"y": 2}, "name": "c"}]; {"not": "a call"}"#,
            r#"{"name": "get_weather", "parameters": {"city": "Oslo",}}; {"name": "d", "arguments": {"w": [true]}, "id": "x1"} and prose"#,
            r#"Before {"name": "get_weather", "parameters": {"city": "Lima"}};{"name": "get_weather", "parameters": {"city": "Kyiv"}}"#,
        ];
        for text in texts {
            for auto in [false, true] {
                let options = llama_or_auto(auto);
                let whole = crate::parse(text, &options);
                assert!(!whole.calls.is_empty(), "{text}");
                for size in 1..=9 {
                    let mut sp = StreamParser::new(options.clone());
                    let mut events = Vec::new();
                    let mut rest = text;
                    while !rest.is_empty() {
                        let mut cut = size.min(rest.len());
                        while !rest.is_char_boundary(cut) {
                            cut += 1;
                        }
                        events.extend(sp.push(&rest[..cut]));
                        rest = &rest[cut..];
                    }
                    events.extend(sp.finish());
                    let mut streamed = crate::Parsed::default();
                    for e in events {
                        match e {
                            StreamEvent::Text { text } => streamed.text.push_str(&text),
                            StreamEvent::CallFinished { call, .. } => streamed.calls.push(call),
                            StreamEvent::Diagnostic { diagnostic } => {
                                streamed.diagnostics.push(diagnostic)
                            }
                            _ => {}
                        }
                    }
                    let at = format!("{text} in {size}-byte pushes (auto {auto})");
                    assert_eq!(streamed.text, whole.text, "{at}");
                    assert_eq!(streamed.calls.len(), whole.calls.len(), "{at}");
                    for (a, b) in streamed.calls.iter().zip(&whole.calls) {
                        assert_eq!(a.name, b.name, "{at}");
                        assert_eq!(a.arguments, b.arguments, "{at}");
                        assert_eq!(a.origin.repairs, b.origin.repairs, "{at}");
                        assert_eq!(a.origin.span, b.origin.span, "{at}");
                    }
                    let messages = |p: &crate::Parsed| {
                        p.diagnostics
                            .iter()
                            .map(|d| d.message.clone())
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(messages(&streamed), messages(&whole), "{at}");
                }
            }
        }
    }

    /// Llama 3 JSON alone, or every family (`auto`).
    fn llama_or_auto(auto: bool) -> ParseOptions {
        ParseOptions {
            format: if auto {
                FormatSelection::Auto
            } else {
                FormatSelection::Only("llama".into())
            },
            ..ParseOptions::default()
        }
    }

    // A `;` chain streamed in three pushes cut anywhere: each finished call was announced
    // under its own name with fragments that decode to its own arguments (a value read
    // whole within one push is announced before the next value's calls are; before, the
    // second call's fragments went to the first's index).
    #[test]
    fn chained_calls_stream_each_under_its_own_announcement() {
        let texts = [
            r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}};{"name": "get_weather", "parameters": {"city": "Rome"}};{"name": "get_time", "parameters": {}}<|eot_id|>"#,
            r#"{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_weather", "parameters": {"city": "Rome"}}"#,
            r#"<|python_tag|>{"name": "a", "parameters": {"x": 1}}; [{"name": "b", "parameters": {}}, {"parameters": {"y": 2}, "name": "c"}]; {"name": "d", "parameters": {"z": [1]}} tail"#,
        ];
        for text in texts {
            for auto in [false, true] {
                let options = llama_or_auto(auto);
                for a in 1..text.len() {
                    for b in (a..text.len()).step_by(5) {
                        let mut sp = StreamParser::new(options.clone());
                        let mut events = sp.push(&text[..a]);
                        events.extend(sp.push(&text[a..b]));
                        events.extend(sp.push(&text[b..]));
                        events.extend(sp.finish());
                        let mut sent: Vec<(String, String)> = Vec::new();
                        let mut finished = 0;
                        for e in events {
                            match e {
                                StreamEvent::CallStarted { index, name, .. } => {
                                    assert_eq!(index, sent.len());
                                    sent.push((name, String::new()));
                                }
                                StreamEvent::ArgumentsDelta { index, fragment } => {
                                    sent[index].1.push_str(&fragment);
                                }
                                StreamEvent::CallFinished { index, call } => {
                                    let args: serde_json::Value =
                                        serde_json::from_str(&sent[index].1).unwrap_or_default();
                                    let at = format!("{text} cut at {a}, {b} (auto {auto})");
                                    assert_eq!(sent[index].0, call.name, "{at}");
                                    assert_eq!(args, call.arguments, "{at}");
                                    finished += 1;
                                }
                                _ => {}
                            }
                        }
                        assert!(finished >= 2, "{text} cut at {a}, {b}");
                    }
                }
            }
        }
    }
}
