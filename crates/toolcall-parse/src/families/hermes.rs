//! `hermes`: `<tool_call>{json}</tool_call>` (Hermes, Qwen 2.5/3). Explicit markup: any name
//! is accepted (flagged when unregistered). The closing tag may be missing, or cut, at the
//! very end of the output; the content is still a call when its JSON is complete, never
//! when cut. `<tool_call>` followed by anything but JSON belongs to another family
//! (`qwen3_coder`, `glm`) or is prose.

use super::described::{Body, Described};
use serde_json::{Map, Value};
use toolcall_core::Diagnostic;

use super::args_object::{NAME_ARGUMENTS, Probe, probe_entry};
use super::text_example::name_arguments;
use crate::FormatId;
use crate::family::{
    Advance, Instructions, Outcome, RawArgs, ReadCx, RegionReader, Scan, Scanner,
    closing_marker_repair, find_from, parse_lenient,
};
use super::args_object::JsonCallTags;
use super::json::Decoded;
use crate::scanner::decode_calls_prefix;
use super::tags::{
    Block, BodyRule, CloseOutsideStrings, Lead, LeadRule, quoted_name, skip_space, valid_name,
};
use crate::builder::Draft;
use crate::shape::{Piece, Shape};

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";

impl FormatId {
    pub(crate) const HERMES: FormatId = FormatId::builtin("hermes");
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
pub(super) static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<tool_call>"),
    Piece::Ws("\n"),
    Piece::NAME_ARGUMENTS,
    Piece::Ws("\n"),
    Piece::Lit("</tool_call>"),
]);

/// `<tool_call>{json}</tool_call>`, read by [`tool_call_reader`].
fn tool_call(_opener: usize, ctx: &crate::builder::Ctx) -> Option<Box<dyn RegionReader>> {
    Some(tool_call_reader(FormatId::HERMES, ctx))
}

pub(crate) fn tool_call_declines_at(_opener: usize, region: &str, is_final: bool) -> bool {
    tool_call_declines(region, is_final)
}

const OPENERS: [&str; 2] = [OPEN, FUNCTION_NAME];

static BODIES: [Body; 2] = [
    Body::Own {
        openers: &[OPEN],
        reader: tool_call,
        declines: tool_call_declines_at,
    },
    Body::JsonTags(&FUNCTION_BLOCK, &FUNCTION_STREAM),
];

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<tool_call>{}</tool_call>", name_arguments(name, args))
}

pub(crate) static HERMES: Described = Described {
    id: FormatId::HERMES,
    description: "<tool_call>{json}</tool_call> (Hermes, Qwen), also unclosed at the end of output",
    example: r#"<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>"#,
    body: Body::each(&OPENERS, &BODIES),
    model_names: &[
        "qwen2.5*",
        "qwen3*",
        "qwq*",
        "hermes-*",
        // Granite 4 moved to <tool_call>{json}</tool_call> (vLLM's granite4).
        "granite-4*",
        // Arcee's Trinity writes Qwen 2.5's <tool_call>{json}</tool_call> (SGLang's
        // trinity detector, which also takes a call written inside <think>).
        "trinity-*",
        // Deep Cogito's Qwen 2.5 fine-tunes keep Qwen 2.5's template.
        "cogito-v1-preview-qwen*",
    ],
    template_markers: &["<tool_call>", "</tool_call>"],
    instructions: Some(Instructions {
        how: "To call a tool, write <tool_call>{\"name\": TOOL_NAME, \"arguments\": {...}}</tool_call> with a JSON object inside the tags.",
        several: "- To make several calls, write several <tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    // `<tool_call>` directly followed by `<`: no JSON body (`look`).
    repeats_declined: &[OPEN],
    ..Described::BASE
};


/// `<function name="NAME">{json}</function>`: a Hermes variant llama.cpp's Hermes 2 Pro
/// reader accepts; ours when the JSON object follows the tag.
const FUNCTION_NAME: &str = "<function name=\"";

static FUNCTION_BLOCK: Block = Block {
    format: FormatId::HERMES,
    open: FUNCTION_NAME,
    close: "</function>",
    lead: LeadRule::Fn(function_name_lead),
    body: BodyRule::Fn(function_name_body),
};

static FUNCTION_STREAM: JsonCallTags = JsonCallTags {
    call: "",
    head: function_name_head,
    call_end: "",
};

/// `NAME">` then blanks then `{`.
fn function_name_lead(lead: &str, complete: bool) -> Lead<'_> {
    let (name, after) = match quoted_name(lead, complete) {
        Ok(head) => head,
        Err(verdict) => return verdict,
    };
    // A JSON object's first key or its end: `{{ body }}` (a template) is prose.
    let Some(object) = skip_space(after).strip_prefix('{') else {
        return if skip_space(after).is_empty() && !complete {
            Lead::NeedMore
        } else {
            Lead::NotMine
        };
    };
    match skip_space(object).bytes().next() {
        Some(b'"' | b'}') => Lead::Mine(Some(name.into())),
        None if !complete => Lead::NeedMore,
        _ => Lead::NotMine,
    }
}

/// `NAME">` and blanks → the name.
fn function_name_head(head: &str) -> Option<(String, Option<String>)> {
    let name = head.trim_end().strip_suffix("\">")?;
    valid_name(name).then(|| (name.to_owned(), None))
}

/// `NAME">{json}` → one call.
fn function_name_body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let (name, json) = body.split_once("\">").ok_or("<function name=\" is not closed by \">")?;
    if !valid_name(name) {
        return Err(format!("invalid tool name {name:?}"));
    }
    let (args, repairs) =
        parse_lenient(json.trim()).map_err(|e| format!("the arguments of {name:?} are not JSON: {e}"))?;
    if !args.is_object() {
        return Err(format!("the arguments of {name:?} are not a JSON object"));
    }
    let mut d = Draft::new(name, Some(args), format);
    d.repairs = repairs;
    Ok(vec![d])
}

/// Prose that mentions `<tool_call>` is not followed by JSON within this many bytes.
const MAX_LEAD: usize = 4096;

/// A reader of one `<tool_call>{json}</tool_call>` region whose calls are `format`'s
/// (Hermes', or a family writing the same markup with markup of its own around it).
/// What the bytes after `<tool_call>` say before the body is read.
enum Look {
    Json,
    NotMine,
    /// `<tool_call>` ends the output.
    Cut,
    NeedMore,
}

fn look(region: &str, is_final: bool) -> Look {
    let content = OPEN.len();
    let bytes = region.as_bytes();
    let lead = bytes.get(content..bytes.len().min(content + MAX_LEAD)).unwrap_or(&[]);
    match lead.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{' | b'[') => Look::Json,
        Some(_) => Look::NotMine,
        None if is_final && bytes.len() <= content => Look::Cut,
        None if !is_final && bytes.len() - content < MAX_LEAD => Look::NeedMore,
        None => Look::NotMine,
    }
}

/// Whether [`tool_call_reader`]'s reader answers `NotMine` to `region` at once.
pub(crate) fn tool_call_declines(region: &str, is_final: bool) -> bool {
    matches!(look(region, is_final), Look::NotMine)
}

pub(crate) fn tool_call_reader(format: FormatId, ctx: &crate::builder::Ctx) -> Box<dyn RegionReader> {
    Box::new(Reader {
        format,
        close: CloseOutsideStrings::new(OPEN.len()),
        json: false,
        probe_failed: false,
        live: None,
        max_depth: ctx.limits.max_depth,
    })
}

struct Reader {
    format: FormatId,
    /// `</tool_call>` ends the body outside JSON strings only.
    close: CloseOutsideStrings,
    /// The body was seen to start with JSON.
    json: bool,
    /// The body does not start with the canonical prefix: not announced early.
    probe_failed: bool,
    live: Option<RawArgs>,
    max_depth: usize,
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let content = OPEN.len();
        let bytes = region.as_bytes();
        if !self.json {
            match look(region, is_final) {
                Look::Json => self.json = true,
                Look::NotMine => return Advance::NotMine,
                Look::Cut => {
                    return Advance::Broken {
                        end: bytes.len(),
                        why: "truncated tool call: <tool_call> at the end of output; not run".into(),
                    };
                }
                Look::NeedMore => return Advance::NeedMore,
            }
        }
        let found = self.close.find(region, CLOSE).or_else(|| {
            // Quotes that do not balance: the first closing tag ends the body.
            is_final
                .then(|| find_from(region, CLOSE, content))
                .flatten()
        });
        let (content_end, end, closed) = match found {
            Some(i) => (i, i + CLOSE.len(), true),
            None if is_final => {
                // A closing tag cut by the end of output still closes the body.
                let cut = (1..CLOSE.len())
                    .rev()
                    .find(|k| region.ends_with(&CLOSE[..*k]) && region.len() - k >= content)
                    .unwrap_or(0);
                if cut == 0 && !cx.closes_at_end() {
                    return Advance::Broken {
                        end: region.len(),
                        why: "truncated tool call: <tool_call> is not closed before the end of output, which was cut; not run".into(),
                    };
                }
                (region.len() - cut, region.len(), false)
            }
            None => {
                self.stream(region, content, cx);
                return Advance::NeedMore;
            }
        };
        if let Some(live) = &mut self.live {
            live.forward(&region[..content_end], cx);
        }
        self.body(region, content, content_end, end, closed, cx)
    }
}

impl Reader {
    /// While the body streams: announce the call once its name is known, then forward the
    /// raw argument text as it arrives.
    fn stream(&mut self, region: &str, content: usize, cx: &mut ReadCx<'_>) {
        if !cx.streaming() {
            return;
        }
        if self.live.is_none() {
            if self.probe_failed {
                return;
            }
            match probe(region.as_bytes().get(content..).unwrap_or(&[])) {
                Probe::NeedMore => return,
                Probe::No => {
                    self.probe_failed = true;
                    return;
                }
                Probe::Yes(name, off) => {
                    cx.start_call(&name, None);
                    self.live = Some(RawArgs::new(content + off, self.max_depth));
                }
            }
        }
        if let Some(live) = &mut self.live {
            live.forward(region, cx);
        }
    }

    /// Reads the JSON values of a closed (or finally unclosed) body.
    fn body(
        &mut self,
        region: &str,
        content: usize,
        content_end: usize,
        end: usize,
        closed: bool,
        cx: &mut ReadCx<'_>,
    ) -> Advance {
        let inner = region.get(content..content_end).unwrap_or("");
        let ib = inner.as_bytes();
        let mut o = Outcome::default();
        let mut errors = Vec::new();
        let mut i = 0;
        loop {
            while ib.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            let Some(&b) = ib.get(i) else { break };
            let at = content + i;
            if b != b'{' && b != b'[' {
                errors.push(Diagnostic::error(
                    "<tool_call> content is not JSON; not run",
                    cx.span(at, content_end),
                ));
                break;
            }
            let mut sc = Scanner::new(self.max_depth, false);
            match sc.advance(&ib[i..]) {
                Scan::Done(n) => {
                    let text = inner.get(i..i + n).unwrap_or("");
                    let span = cx.span(at, at + n);
                    // Valid JSON whole: call objects typed (what `parse_lenient` decodes).
                    // After a body that failed, neither the typed decode nor serde_json's
                    // failed parse and message (`decode_or_failure`): a flood of broken
                    // bodies (`<tool_call>{"a":{w}}</tool_call>`) failed both a body (56x
                    // prose).
                    let typed = (!crate::repair::last_decode_failed())
                        .then(|| {
                            #[cfg(test)]
                            TYPED.set(TYPED.get() + 1);
                            decode_calls_prefix(text, self.max_depth)
                        })
                        .flatten();
                    let decoded = match typed {
                        Some((m, d)) if m == text.len() => Ok((d, Vec::new())),
                        _ => crate::repair::decode_or_failure(text)
                            .map(|(v, r)| (Decoded::Value(v), r)),
                    };
                    match decoded {
                        Ok((v, repairs)) => {
                            match v.classify(cx.ctx, self.format, true, cx.span(0, end)) {
                                Some(mut found) => {
                                    for d in &mut found.drafts {
                                        d.repairs.extend(repairs.iter().cloned());
                                    }
                                    o.drafts.extend(found.drafts);
                                    o.diagnostics.extend(found.diagnostics);
                                }
                                None => errors.push(Diagnostic::error(
                                    "<tool_call> content is not a {name, arguments} call; not run",
                                    span,
                                )),
                            }
                        }
                        Err(e) => errors.push(Diagnostic::error(
                            e.message_after("<tool_call> JSON is malformed, not run: "),
                            span,
                        )),
                    }
                    i += n;
                }
                Scan::NeedMore => {
                    errors.push(Diagnostic::error(
                        "truncated tool call: <tool_call> JSON ends before it is closed; not run",
                        cx.span(at, content_end),
                    ));
                    break;
                }
                Scan::Fail(e) => {
                    errors.push(Diagnostic::error(
                        format!("<tool_call> JSON is malformed, not run: {e}"),
                        cx.span(at, content_end),
                    ));
                    break;
                }
            }
        }
        if o.drafts.is_empty() {
            // Nothing runnable: the raw text stays visible, with the first error.
            let why = errors
                .into_iter()
                .next()
                .map_or_else(|| "empty <tool_call>; nothing to run".to_owned(), |d| d.message);
            return Advance::Broken { end, why };
        }
        if !closed {
            for d in &mut o.drafts {
                d.repairs.push(closing_marker_repair(CLOSE));
            }
            o.diagnostics.push(Diagnostic::info(
                "<tool_call> not closed at the end of output; its complete JSON was accepted",
                cx.span(0, end),
            ));
        }
        o.diagnostics.extend(errors);
        Advance::Done { end, outcome: o }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: the typed decodes of bodies tried.
    static TYPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Recognises `{"name": "<name>", "arguments": {` (or `"parameters"`) at the start of `s`.
pub(crate) fn probe(s: &[u8]) -> Probe {
    probe_entry(s, Some(&NAME_ARGUMENTS))
}

#[cfg(test)]
mod tests {
    use super::*;

    // After a body that failed to decode, the next is neither decoded typed nor parsed
    // by serde_json to fail (`decode_or_failure` reads its failure off a walk): a flood of
    // broken bodies (`<tool_call>{"a":{w}}</tool_call>`) did both a body. Text, calls and
    // diagnostics (each body's message) are those of every body decoded, one-shot and
    // streamed.
    #[test]
    fn broken_bodies_after_a_failure_are_not_decoded() {
        let options = crate::ParseOptions::default();
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let key = crate::engine::tests::call_parts;
        let words = ["the", "weather", "1 2", "\"x\" y", "[1 2]"];
        for body in ["{\"a\":", "{\"name\": \"f\", \"arguments\": ", "[{\"a\": 1}, "] {
            for every in [0, 2, 7] {
                let mut text = String::from("Sure.\n");
                for i in 0..40 {
                    text.push_str("<tool_call>");
                    text.push_str(body);
                    text.push_str(words[i % 5]);
                    text.push_str(if body.starts_with('[') { "]" } else { "}" });
                    text.push_str("</tool_call>\n");
                    if every > 0 && i % every == 0 {
                        text.push_str(&format!("<tool_call>{call}</tool_call>\n"));
                    }
                }
                crate::repair::note_decoded(false);
                let (typed, unbuilt) = (TYPED.get(), crate::repair::FAILED_UNBUILT.get());
                let parsed = crate::parse(&text, &options);
                let typed = TYPED.get() - typed;
                let unbuilt = crate::repair::FAILED_UNBUILT.get() - unbuilt;
                crate::repair::ONE_SHOT_AFTER_FAILURE.with(|c| c.set(true));
                crate::repair::NEVER_DECODES_OFF.with(|c| c.set(true));
                let (all_typed, all_unbuilt) = (TYPED.get(), crate::repair::FAILED_UNBUILT.get());
                let decoded = crate::parse(&text, &options);
                let all_typed = TYPED.get() - all_typed;
                let all_unbuilt = crate::repair::FAILED_UNBUILT.get() - all_unbuilt;
                crate::repair::ONE_SHOT_AFTER_FAILURE.with(|c| c.set(false));
                crate::repair::NEVER_DECODES_OFF.with(|c| c.set(false));
                assert_eq!(parsed.text, decoded.text, "{text:?}");
                assert_eq!(parsed.diagnostics, decoded.diagnostics, "{text:?}");
                assert_eq!(key(&parsed), key(&decoded), "{text:?}");
                assert_eq!(all_unbuilt, 0);
                if every == 0 {
                    assert!(typed < 5 && all_typed >= 40, "{text:?}: {typed} {all_typed}");
                    assert!(unbuilt >= 30, "{text:?}: {unbuilt}");
                }
                for size in [1, 7, 64] {
                    let (t, _, diagnostics) =
                        crate::engine::tests::streamed_whole(&text, &options, size);
                    assert_eq!(t, parsed.text, "{text:?} at {size}");
                    assert_eq!(diagnostics, parsed.diagnostics, "{text:?} at {size}");
                }
            }
        }
    }

    #[test]
    fn probes_the_canonical_prefix() {
        let full = br#" {"name": "get", "arguments": {"a": 1}}"#;
        for cut in 0..full.len() {
            let p = probe(&full[..cut]);
            assert!(
                matches!(p, Probe::NeedMore | Probe::Yes(..)),
                "{cut}: {p:?}"
            );
        }
        assert_eq!(probe(full), Probe::Yes("get".into(), 30));
        assert_eq!(probe(br#"{"arguments": {}, "name": "x"}"#), Probe::No);
        assert_eq!(
            probe(br#"{"name": "x", "parameters": {"#),
            Probe::Yes("x".into(), 28)
        );
    }
}
