//! Shared readers for families whose calls sit in a block behind a marker (not a family
//! itself): JSON behind a marker (Nemotron, Hunyuan/Jamba/Apriel, LongCat, InternLM, Apertus,
//! Cohere), a Python call list behind a marker (Llama 4, LFM2, Olmo 3), and XML-style
//! `invoke`/`parameter` elements (MiniMax M2, Step-3, DeepSeek DSML). Each family describes its
//! block as a [`Block`] read by [`BlockReader`]; these are the leads and bodies its shared
//! rules (`LeadRule`, [`BodyRule`]) run, and the pieces the families' own readers use.

use std::collections::HashSet;

use serde_json::{Map, Value};
use toolcall_core::{Diagnostic, Repair};

use crate::FormatId;
use crate::builder::{Draft, Outcome};
use crate::family::{
    Advance, BodyError, ReadCx, RegionReader, ScanFrom, Wake, closing_marker_repair, find_from,
    json_calls, parse_lenient,
};
use crate::repair::{decode_lenient, decode_or_failure, known_failure};
use crate::scanner::{Scan, Scanner, split_top_level};

use super::args_object::LiveList;
use super::call_syntax::parse_args;
use super::json::{CallsDoc, Decoded, classify_doc, cut_list};
use super::pythonic::split_call;
use super::tags::{
    BodyRule, Lead, MAX_LEAD, ValueHead, after_tag, finish_sent, layout_trim, skip_space, starts,
    typed, valid_name,
};

/// The block is ours when the first non-blank byte after the marker is one of `firsts`.
fn first_byte_lead(lead: &str, complete: bool, firsts: &[u8]) -> Lead<'static> {
    match skip_space(lead).bytes().next() {
        Some(b) if firsts.contains(&b) => Lead::Mine(None),
        Some(_) => Lead::NotMine,
        None if complete => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

/// A JSON object or list follows the marker.
pub(crate) fn json_lead(lead: &str, complete: bool) -> Lead<'static> {
    first_byte_lead(lead, complete, b"[{")
}

/// A Python list follows the marker.
pub(crate) fn list_lead(lead: &str, complete: bool) -> Lead<'static> {
    first_byte_lead(lead, complete, b"[")
}

/// A call expression (`name(`) follows the marker, as in Olmo 3's one-call-per-line blocks.
pub(crate) fn call_line_lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    // The same name bytes the call parser accepts (`ns.tool::variant` included).
    let name_len = super::call_syntax::tag_name_len(s);
    match s[name_len..].chars().next() {
        Some('(') if name_len > 0 => Lead::Mine(Some(s[..name_len].into())),
        Some(_) => Lead::NotMine,
        None if complete || name_len > 256 => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

/// A family's own block body reader ([`BodyRule::Fn`]).
pub(crate) type BodyFn = fn(&str, &mut ReadCx<'_>, FormatId) -> Result<Vec<Draft>, String>;

/// The body is one JSON value (an object or a list of them) of `{name, arguments}`.
pub(crate) fn json_body(
    body: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Result<Vec<Draft>, String> {
    // The message written once (`parse_lenient`'s error then a `format!` around it wrote
    // it twice: ~650 instructions a broken body of a flood of `<start_function_call>]…`).
    let (mut v, repairs) = decode_lenient(body.trim())
        .map_err(|e| crate::repair::message_after(crate::family::MALFORMED, &e))?;
    let found = json_calls(&mut v, cx.ctx, format, true, cx.span(0, 0))
        .ok_or("the JSON is not a {name, arguments} call or a list of them")?;
    let mut drafts = found.drafts;
    for d in &mut drafts {
        d.repairs.extend(repairs.iter().cloned());
    }
    Ok(drafts)
}

/// JSON blanks then `close` at `json` in `after` (the end of a JSON value there): the
/// body's length before the tag; `None` when other bytes come first. `close` starts with
/// `<` ([`reads_ahead`], checked by the callers before they decode), a byte JSON holds
/// only in strings: the tag after the value is the first outside its strings, where
/// `tags::CloseOutsideStrings` ends the block.
fn close_after_json(after: &str, json: usize, close: &str) -> Option<usize> {
    debug_assert!(reads_ahead(close));
    let blanks = crate::scanner::json_blanks(after.as_bytes().get(json..)?);
    let end = json + blanks;
    after.get(end..)?.starts_with(close).then_some(end)
}

/// Whether a JSON block closed by `close` is read ahead: its tag starts with `<` (see
/// [`close_after_json`]). Command R+'s closing fence does not: its block is left before
/// anything is decoded (decoded then left, it cost `command_r_plus/small` ~17 k
/// instructions a parse, `cg.py`).
fn reads_ahead(close: &str) -> bool {
    close.starts_with('<')
}

/// A JSON block from after its opener, one-shot: what [`json_body`] reads from the body
/// that ends at the first `close` outside JSON strings, and that body's length, when a
/// [`CallsDoc`] (an object or a list of `{name, arguments}`; serde's stream reader checks
/// nothing after it) follows the opener after JSON blanks, then the closing tag after JSON
/// blanks ([`close_after_json`]). [`classify_doc`] of the document gives what
/// [`json_calls`] gives for the `Value` that [`json_body`] decodes from the same JSON
/// (trimmed; valid JSON, so no repair). One pass, where the close search then the body
/// read each call twice (the search two `memchr2` a JSON string, ~1.1 k instructions a
/// call of `internlm/small`). Anything else (repairs, a key twice, Unicode blanks, text
/// after the JSON, no closing tag) is left to the search and the body (`None`).
/// InternLM's [`BodyRule::Call`] and every [`BodyRule::Json`] block (Nemotron,
/// Hunyuan/Jamba/Apriel, LongCat) read one-shot with it.
pub(crate) fn json_body_ahead(
    after: &str,
    close: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Option<(usize, Vec<Draft>)> {
    if !reads_ahead(close) {
        return None;
    }
    let mut docs = serde_json::Deserializer::from_str(after).into_iter::<CallsDoc>();
    let mut doc = docs.next()?.ok()?;
    let end = close_after_json(after, docs.byte_offset(), close)?;
    let found = classify_doc(&mut doc, cx.ctx, format, true, cx.span(0, 0))?;
    Some((end, found.drafts))
}

/// A [`BodyRule::JsonItems`] block from after its opener, one-shot (Cohere, Command R+):
/// what [`json_items`] reads from the body that ends at the first `close` outside JSON
/// strings, and that body's length, when a JSON list of objects or one object, decoded by
/// serde's stream reader (the `Value` [`json_items`] decodes from the same JSON, trimmed;
/// valid, so no repair), follows the opener after JSON blanks, then the closing tag after
/// JSON blanks ([`close_after_json`]), and `one` reads every entry. Anything else (another
/// value, an entry that is no call, an empty list, one object a line, repairs) is left to
/// the search and [`json_items`] (`None`). One pass, where the close search (two `memchr2`
/// a JSON string) then [`json_items`] read the block twice.
pub(crate) fn json_items_ahead(
    after: &str,
    close: &str,
    format: FormatId,
    one: fn(&mut Map<String, Value>, FormatId) -> Option<Draft>,
) -> Option<(usize, Vec<Draft>)> {
    if !reads_ahead(close) {
        return None;
    }
    let mut docs = serde_json::Deserializer::from_str(after).into_iter::<Value>();
    let mut value = docs.next()?.ok()?;
    let end = close_after_json(after, docs.byte_offset(), close)?;
    let drafts = match &mut value {
        Value::Array(items) => items
            .iter_mut()
            .map(|v| one(v.as_object_mut()?, format))
            .collect::<Option<Vec<_>>>()?,
        Value::Object(m) => vec![one(m, format)?],
        _ => return None,
    };
    (!drafts.is_empty()).then_some((end, drafts))
}

/// The body is JSON objects, one per line or as one list, each turned into a draft by `one`.
pub(crate) fn json_items(
    body: &str,
    format: FormatId,
    one: fn(&mut Map<String, Value>, FormatId) -> Option<Draft>,
) -> Result<Vec<Draft>, String> {
    json_items_or_failure(body, format, one).map_err(BodyError::into_message)
}

/// [`json_items`], a failed decode's message not written ([`BodyError::Malformed`]): a
/// flood of broken blocks wrote one a block (~250 instructions with its allocation), and
/// the diagnostic cap dropped all but the first few.
pub(crate) fn json_items_or_failure(
    body: &str,
    format: FormatId,
    one: fn(&mut Map<String, Value>, FormatId) -> Option<Draft>,
) -> Result<Vec<Draft>, BodyError> {
    let text = |m: &str| BodyError::Text(m.to_owned());
    let body = body.trim();
    let mut values = Vec::new();
    let mut repairs = Vec::new();
    match decode_or_failure(body) {
        Ok((Value::Array(items), r)) => {
            values = items;
            repairs = r;
        }
        Ok((v @ Value::Object(_), r)) => {
            values.push(v);
            repairs = r;
        }
        Ok(_) => return Err(text("the JSON is not an object or a list of objects")),
        // One line (not empty: trimmed, it is not blank): its own parse below is the one
        // that just failed (the same text), and fails with the same message. A flood of
        // broken markup on one line (`Action: ```json{"0Action: ```json{"1…`) parsed each
        // block twice.
        Err(first) if !body.is_empty() && memchr::memchr(b'\n', body.as_bytes()).is_none() => {
            return Err(BodyError::Malformed(first));
        }
        // The first line (not blank: the body is trimmed) known to fail: the walk below
        // would read it first and stop there (a flood of broken `Action:\n```json{"` blocks,
        // each two lines, walked the lines for it: ~300 instructions a block).
        Err(first)
            if memchr::memchr(b'\n', body.as_bytes())
                .and_then(|nl| body.get(..nl))
                .is_some_and(|line| known_failure(line.trim()).is_some()) =>
        {
            return Err(BodyError::Malformed(first));
        }
        Err(first) => {
            for line in body.lines().filter(|l| !l.trim().is_empty()) {
                match decode_or_failure(line.trim()) {
                    Ok((v, r)) => {
                        values.push(v);
                        repairs.extend(r);
                    }
                    Err(_) => return Err(BodyError::Malformed(first)),
                }
            }
        }
    }
    let mut drafts = Vec::new();
    for v in &mut values {
        let m = v
            .as_object_mut()
            .ok_or_else(|| text("a list entry is not an object"))?;
        let mut d = one(m, format).ok_or_else(|| text("a list entry is not a call"))?;
        d.repairs.extend(repairs.iter().cloned());
        drafts.push(d);
    }
    if drafts.is_empty() {
        return Err(text("no call in the block"));
    }
    Ok(drafts)
}

/// A JSON list of calls behind a marker, cut by the end of the input (`json` starts at
/// region offset `start`; see [`cut_list`]): the complete entries, read by the family's
/// `body` reader, are its calls; the cut entry is reported and its text stays in the reply,
/// as broken markup does.
pub(crate) fn cut_list_calls(
    json: &str,
    start: usize,
    format: FormatId,
    body: BodyRule,
    cx: &mut ReadCx<'_>,
) -> Option<Outcome> {
    let cut = cut_list(json, cx.ctx.limits.max_depth)?;
    let mut drafts = body.read(&cut.json, cx, format).ok()?;
    let end = start + json.len();
    let mut o = Outcome::default();
    for d in &mut drafts {
        d.span = cx.span(0, end);
        o.diagnostics
            .extend(cx.ctx.unknown_name_warning(&d.name, cx.span(0, end)));
    }
    let at = start + cut.cut.unwrap_or(json.len());
    o.diagnostics.push(cut.diagnostic(cx.span(at, end)));
    if let Some(c) = cut.cut {
        o.text = json.get(c..).unwrap_or("").to_owned();
    }
    o.drafts = drafts;
    Some(o)
}

/// The end of a streamed list that [`cut_list_calls`] read: the cut entry, when it was
/// announced, never finishes; the complete ones finish as announced.
pub(crate) fn finish_cut_live(
    live: &mut LiveList,
    region: &str,
    o: &mut Outcome,
    cx: &mut ReadCx<'_>,
) {
    if cx.streaming() && (1..=o.drafts.len()).contains(&live.calls()) {
        let drafts = std::mem::take(&mut o.drafts);
        let span = cx.span(0, region.len());
        live.finish(region, &drafts, span, o, cx);
        o.drafts = drafts;
    }
}

/// The end of a JSON list region cut by the end of the reply (its value starts at region
/// offset `start`): the complete entries are calls ([`cut_list_calls`], [`finish_cut_live`]);
/// with none, the region is broken markup, for `why`.
pub(crate) fn cut_list_end(
    live: &mut LiveList,
    region: &str,
    start: usize,
    format: FormatId,
    why: &str,
    cx: &mut ReadCx<'_>,
) -> Advance {
    let json = region.get(start..).unwrap_or("");
    match cut_list_calls(json, start, format, BodyRule::Json, cx) {
        Some(mut o) => {
            finish_cut_live(live, region, &mut o, cx);
            Advance::Done {
                end: region.len(),
                outcome: o,
            }
        }
        None => Advance::Broken {
            end: region.len(),
            why: why.into(),
        },
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: the reader asks to be read on every push (no `ReadCx::wake`), to compare.
    pub(crate) static READ_EVERY_PUSH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: a one-shot read reads no block ahead (`BodyRule::Call`, [`json_body_ahead`],
    /// [`json_items_ahead`]): it searches the closing tag and reads the body, to compare.
    pub(crate) static NO_READ_AHEAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a one-shot read may read a block ahead (tests turn it off to compare).
#[inline(always)]
pub(crate) fn read_ahead() -> bool {
    #[cfg(test)]
    return !NO_READ_AHEAD.with(std::cell::Cell::get);
    #[cfg(not(test))]
    true
}

/// Tests: one-shot `text` with the blocks read ahead gives what it gives with none read
/// ahead (the closing tag searched, the body read: text, calls with their arguments and
/// origins, diagnostics, reasoning).
#[cfg(test)]
pub(crate) fn assert_read_ahead_equals_search(text: &str, o: &crate::ParseOptions, context: &str) {
    let shape = |p: toolcall_core::Parsed| {
        let calls: Vec<_> = p
            .calls
            .into_iter()
            .map(|c| format!("{} {} {:?}", c.name, c.arguments, c.origin))
            .collect();
        let diagnostics: Vec<_> = p.diagnostics.iter().map(|d| format!("{d:?}")).collect();
        (p.text, calls, diagnostics, p.reasoning)
    };
    let ahead = shape(crate::parse(text, o));
    NO_READ_AHEAD.with(|c| c.set(true));
    let searched = shape(crate::parse(text, o));
    NO_READ_AHEAD.with(|c| c.set(false));
    assert_eq!(ahead, searched, "{context}: {text:?}");
}

/// Tests: [`assert_read_ahead_equals_search`], and one-shot `text` gives what 1-, 3- and
/// 7-char streams give (`fragments`: their argument fragments checked too).
#[cfg(test)]
pub(crate) fn assert_read_ahead_equals_search_and_streams(
    text: &str,
    o: &crate::ParseOptions,
    fragments: bool,
    context: &str,
) {
    use crate::stream_replay::{one_shot, stream_in_char_pushes};
    assert_read_ahead_equals_search(text, o, context);
    let want = one_shot(text, o);
    for n in [1, 3, 7] {
        let got = stream_in_char_pushes(text, o, n, |_, _| {});
        let context = format!("{context}: {text:?} in {n}-char pushes");
        got.assert_equals_one_shot(&want, fragments, false, &context);
    }
}

/// Whether the reader asks to be read on every push (tests compare with it).
pub(crate) fn read_every_push() -> bool {
    #[cfg(test)]
    return READ_EVERY_PUSH.with(std::cell::Cell::get);
    #[cfg(not(test))]
    false
}

/// What wakes an [`OpenJsonReader`] whose stream is quiet ([`LiveList::quiet`]): only a
/// bracket can close or break the value (the scanner's verdict changes at one) or start an
/// entry's arguments (the stream's next event).
static BRACKETS: Wake = Wake::new(b"{}[]", "");

/// JSON behind a marker with no closing marker (Granite's `<|tool_call|>[…]`, `functools[…]`):
/// the region ends where the JSON value does, found by the resumable scanner.
///
/// A broken region is promised ([`ReadCx::broken_by`]) as decided by its bytes up to its
/// end: the opener's (whose families decline by [`open_json_declines`], on the bytes up to
/// the value's first, and remove nothing), the blanks, then the value's up to the byte its
/// scan failed at or the value's end (its decode, which [`json_body`] reads alone; in a
/// stream, a value whose calls were announced is decoded so when their build fails). A
/// fresh reader given them in its first step announces nothing (the live list reads only
/// while the value is open).
pub(crate) struct OpenJsonReader {
    format: FormatId,
    /// Region offset where the JSON may start (blanks first are allowed).
    from: usize,
    start: Option<usize>,
    scanner: Scanner,
    /// Announces the calls and forwards their arguments while the JSON streams.
    live: LiveList,
}

impl OpenJsonReader {
    pub(crate) fn new(format: FormatId, from: usize, max_depth: usize) -> Self {
        OpenJsonReader {
            format,
            from,
            start: None,
            scanner: Scanner::new(max_depth, false),
            live: LiveList::building(from, max_depth),
        }
    }
}

/// What a fresh [`OpenJsonReader`] reading from region offset `from` answers `NotMine` to at
/// its first step, read without making it (its scanner and live list are allocated; a flood
/// of `<|tool_call|>` cost a reader each): after the opener's blanks, a byte that starts no
/// JSON list or object, or [`MAX_LEAD`] blanks.
pub(crate) fn open_json_declines(from: usize, region: &str, is_final: bool) -> bool {
    let after = region.as_bytes().get(from..).unwrap_or(&[]);
    match after.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(i) => !matches!(after.get(i), Some(b'[' | b'{')),
        None => is_final || after.len() >= MAX_LEAD,
    }
}

impl RegionReader for OpenJsonReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let start = match self.start {
            Some(s) => s,
            None => {
                let after = region.as_bytes().get(self.from..).unwrap_or(&[]);
                match after.iter().position(|b| !b.is_ascii_whitespace()) {
                    Some(i) if matches!(after[i], b'[' | b'{') => {
                        self.start = Some(self.from + i);
                        self.from + i
                    }
                    None if !is_final && after.len() < MAX_LEAD => return Advance::NeedMore,
                    _ => return Advance::NotMine,
                }
            }
        };
        let json = region.as_bytes().get(start..).unwrap_or(&[]);
        match self.scanner.advance(json) {
            Scan::NeedMore if !is_final => {
                if cx.streaming() {
                    self.live.advance(region, cx);
                    if self.live.quiet() && !read_every_push() {
                        // Until a bracket arrives, the value stays open and its stream sends
                        // nothing: pushes without one are not read (`ReadCx::wake`).
                        cx.wake = Some(&BRACKETS);
                    }
                }
                Advance::NeedMore
            }
            Scan::NeedMore => cut_list_end(
                &mut self.live,
                region,
                start,
                self.format,
                "truncated tool call: the JSON ends before it is closed; not run",
                cx,
            ),
            // The region ends at the bad byte (`consumed` counts it): one past it depended on
            // whether the next byte had arrived, one-shot and streamed disagreed.
            Scan::Fail(e) => {
                let end = region.len().min(start + self.scanner.consumed());
                cx.broken_by = Some(end);
                Advance::Broken {
                    end,
                    why: format!("malformed tool call JSON, not run: {e}"),
                }
            }
            Scan::Done(n) => {
                let end = start + n;
                let text = region.get(start..end).unwrap_or("");
                // A value the stream read whole as plain JSON is built from what it read,
                // not decoded again (the decode was ~18 % of sarashina/small streamed).
                let upto = region.get(..end).unwrap_or("");
                let streamed = cx.streaming() && self.live.calls() > 0;
                if streamed {
                    self.live.advance(upto, cx);
                }
                let built = streamed
                    .then(|| self.live.built_calls(start, end))
                    .flatten()
                    .and_then(|doc| {
                        Decoded::Calls(doc).classify(cx.ctx, self.format, true, cx.span(0, 0))
                    });
                let drafts = match built {
                    Some(found) => Ok(found.drafts),
                    None => json_body(text, cx, self.format),
                };
                match drafts {
                    Ok(mut drafts) => {
                        let mut o = Outcome::default();
                        for d in &mut drafts {
                            d.span = cx.span(0, end);
                            o.diagnostics
                                .extend(cx.ctx.unknown_name_warning(&d.name, cx.span(0, end)));
                        }
                        if streamed {
                            self.live.finish(upto, &drafts, cx.span(0, end), &mut o, cx);
                        }
                        o.drafts = drafts;
                        Advance::Done { end, outcome: o }
                    }
                    Err(why) => {
                        cx.broken_by = Some(end);
                        Advance::Broken { end, why }
                    }
                }
            }
        }
    }
}

/// How a block of Python calls is laid out.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CallList {
    /// `[f(a=1), g()]`
    List,
    /// one call per line
    Lines,
}

/// A block of Python calls read entry by entry: one bad entry does not drop its good
/// siblings; it gets an error diagnostic and its raw text stays in the reply.
pub(crate) struct CallListReader {
    format: FormatId,
    open: &'static str,
    close: &'static str,
    layout: CallList,
    mine: bool,
    scan: ScanFrom,
    live: LiveCalls,
}

impl CallListReader {
    pub(crate) fn new(
        format: FormatId,
        open: &'static str,
        close: &'static str,
        layout: CallList,
    ) -> Self {
        CallListReader {
            format,
            open,
            close,
            layout,
            mine: false,
            scan: ScanFrom(open.len()),
            live: LiveCalls::new(open.len(), layout),
        }
    }
}

/// What a [`CallListReader`] whose opener is `open` bytes long reads of the lead after it:
/// `Some(true)` its calls, `None` more bytes decide, `Some(false)` not its region.
fn call_list_lead(open: usize, layout: CallList, region: &str, is_final: bool) -> Option<bool> {
    let after = region.get(open..).unwrap_or("");
    let mut lead_end = after.len().min(MAX_LEAD);
    while !after.is_char_boundary(lead_end) {
        lead_end -= 1;
    }
    let complete = is_final || after.len() > MAX_LEAD;
    let lead = after.get(..lead_end).unwrap_or("");
    let lead = match layout {
        CallList::List => list_lead(lead, complete),
        CallList::Lines => call_line_lead(lead, complete),
    };
    match lead {
        Lead::Mine(_) => Some(true),
        Lead::NeedMore if !is_final => None,
        _ => Some(false),
    }
}

/// What a fresh [`CallListReader`] answers `NotMine` to at its first step, read without
/// making it (its live list is allocated; a flood of `<|python_start|>` cost a reader each).
pub(crate) fn call_list_declines(
    open: usize,
    layout: CallList,
    region: &str,
    is_final: bool,
) -> bool {
    call_list_lead(open, layout, region, is_final) == Some(false)
}

impl RegionReader for CallListReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let after = region.get(self.open.len()..).unwrap_or("");
        if !self.mine {
            match call_list_lead(self.open.len(), self.layout, region, is_final) {
                Some(true) => self.mine = true,
                None => return Advance::NeedMore,
                Some(false) => return Advance::NotMine,
            }
        }
        let truncated = || Advance::Broken {
            end: region.len(),
            why: format!(
                "truncated tool call: {} is not closed before the end of output; not run",
                self.open
            ),
        };
        let (body_end, end, closed) = match self.scan.find(region, self.close) {
            Some(i) => (i, i + self.close.len(), true),
            // The end of the output: cut inside an entry, the entries before it are
            // calls; otherwise the server stripped the closing token when the reply
            // ended deliberately, and the list is read as it is and must be complete.
            None if is_final => (region.len(), region.len(), false),
            None => {
                if cx.streaming() {
                    self.live.advance(region, cx);
                }
                return Advance::NeedMore;
            }
        };
        let body = region.get(self.open.len()..body_end).unwrap_or("");
        let cut = if closed {
            None
        } else {
            cut_entry(body, self.layout, self.format, cx)
        };
        if !closed && cut.is_none() && !cx.closes_at_end() {
            return truncated();
        }
        // The entries before the one the cut fell in.
        let body = match cut {
            Some(at) => &body[..at],
            None => body,
        };
        let entries: Vec<&str> = match self.layout {
            CallList::Lines => body.lines().collect(),
            CallList::List => {
                let inner = body.trim().strip_prefix('[').and_then(|s| match cut {
                    // `[e1, e2, ` : the complete entries, their comma left out.
                    Some(_) => Some(s.trim_end().strip_suffix(',').unwrap_or(s)),
                    None => s.strip_suffix(']'),
                });
                match inner.map(|i| split_top_level(i, b',', cx.ctx.limits.max_depth)) {
                    Some(Ok(parts)) => parts,
                    // Unbalanced brackets: split where the balanced entries end, so the
                    // good ones still run and the bad remainder is reported.
                    Some(Err(_)) => inner.map(split_tolerant).unwrap_or_default(),
                    None if !closed => return truncated(),
                    None => {
                        return Advance::Broken {
                            end,
                            why: "expected a Python list of calls".into(),
                        };
                    }
                }
            }
        };
        if !closed
            && cut.is_none()
            && matches!(self.layout, CallList::List)
            && !list_balanced(body, cx.ctx.limits.max_depth)
        {
            return truncated();
        }
        let mut o = Outcome::default();
        let mut bad = Vec::new();
        for entry in entries.into_iter().filter(|e| !e.trim().is_empty()) {
            let read = split_call(entry)
                .ok_or_else(|| format!("not a call: {:?}", entry.trim()))
                .and_then(|(name, args)| {
                    parse_args(name, args, cx.ctx, self.format, cx.span(0, end))
                });
            match read {
                Ok(mut d) => {
                    if !closed && cut.is_none() {
                        d.repairs.push(closing_marker_repair(self.close));
                    }
                    o.diagnostics
                        .extend(cx.ctx.unknown_name_warning(&d.name, cx.span(0, end)));
                    o.drafts.push(d);
                }
                Err(e) => bad.push((entry.trim(), e)),
            }
        }
        if o.drafts.is_empty() {
            if !closed {
                return truncated();
            }
            let why = bad
                .into_iter()
                .next()
                .map_or_else(|| "no call in the block".to_owned(), |(_, e)| e);
            return Advance::Broken { end, why };
        }
        let cut_text = cut.and_then(|at| after.get(at..));
        if let Some(text) = cut_text {
            // Announced while streaming, the cut call never finishes.
            let mut d = Draft::broken(
                String::new(),
                format!(
                    "truncated tool call: the output ends inside call {} of the {} block, which is not run; the calls before it are",
                    o.drafts.len() + bad.len() + 1,
                    self.open
                ),
                self.format,
            );
            d.span = cx.span(end - text.len(), end);
            o.drafts.push(d);
        }
        if self.live.calls > 0 {
            let span = cx.span(0, end);
            let live = &self.live;
            let drafts = std::mem::take(&mut o.drafts);
            finish_sent(
                &live.closed,
                live.calls,
                &live.sent,
                &drafts,
                span,
                &mut o,
                cx,
            );
            o.drafts = drafts;
        }
        for (raw, e) in bad {
            o.diagnostics.push(Diagnostic::error(
                format!("entry not run, its text kept: {e}"),
                cx.span(0, end),
            ));
            if !o.text.is_empty() {
                o.text.push('\n');
            }
            o.text.push_str(raw);
        }
        if let Some(text) = cut_text {
            if !o.text.is_empty() {
                o.text.push('\n');
            }
            o.text.push_str(text.trim());
        }
        Advance::Done { end, outcome: o }
    }
}

/// Where in a block body the end of the output cut an entry (the offset of the cut entry's
/// start), when it did after at least one entry: a list whose brackets do not balance, its
/// last entry after the last top-level comma; a last line (no newline after it) that is not
/// a call. `None`: no entry was cut, or the cut one is the first.
fn cut_entry(body: &str, layout: CallList, format: FormatId, cx: &ReadCx<'_>) -> Option<usize> {
    match layout {
        CallList::List => {
            if list_balanced(body, cx.ctx.limits.max_depth) {
                return None;
            }
            let open = body.len() - body.trim_start().len();
            let inner = body.get(open..)?.strip_prefix('[')?;
            let parts = split_tolerant(inner);
            let last = parts.last()?;
            if parts.len() < 2 || last.trim().is_empty() {
                return None;
            }
            Some(body.len() - last.len())
        }
        CallList::Lines => {
            if body.ends_with('\n') {
                return None;
            }
            let start = body.rfind('\n')? + 1;
            let last = body.get(start..)?;
            if body[..start].trim().is_empty() || last.trim().is_empty() {
                return None;
            }
            let reads = split_call(last.trim())
                .is_some_and(|(name, args)| parse_args(name, args, cx.ctx, format, 0..0).is_ok());
            (!reads).then_some(start)
        }
    }
}

/// Where a [`LiveCalls`] is.
enum PyState {
    /// Before the next call: blanks, commas, the list's `[`.
    Entry,
    /// A call's name started here.
    Name { start: usize },
    /// Inside the call's parentheses (opened at `open`); the current argument from `seg`.
    Args {
        open: usize,
        scanner: Scanner,
        seg: usize,
    },
}

/// Streams a block of Python calls while it arrives: each call is announced at its `(`,
/// and each completed keyword argument is sent as the JSON it converts to (`{"k":v`,
/// `,"k":v`, `}` at the `)`), so the fragments are the final arguments. A positional
/// argument, a repeated key or anything else it cannot follow stops the streaming; the
/// rest is sent whole when the block closes. Each byte is scanned once.
struct LiveCalls {
    pos: usize,
    layout: CallList,
    state: PyState,
    /// The list's `[` was passed.
    opened: bool,
    calls: usize,
    sent: String,
    keys: HashSet<String>,
    /// What was sent for each call closed while streaming.
    closed: Vec<String>,
    stopped: bool,
}

impl LiveCalls {
    fn new(from: usize, layout: CallList) -> Self {
        LiveCalls {
            pos: from,
            layout,
            state: PyState::Entry,
            opened: false,
            calls: 0,
            sent: String::new(),
            keys: HashSet::new(),
            closed: Vec::new(),
            stopped: false,
        }
    }

    fn send(&mut self, fragment: &str, cx: &mut ReadCx<'_>) {
        self.sent.push_str(fragment);
        cx.arguments(fragment);
    }

    fn advance(&mut self, region: &str, cx: &mut ReadCx<'_>) {
        let bytes = region.as_bytes();
        while !self.stopped {
            let Some(&b) = bytes.get(self.pos) else {
                return;
            };
            match &mut self.state {
                PyState::Entry => {
                    match b {
                        b'[' if matches!(self.layout, CallList::List) && !self.opened => {
                            self.opened = true;
                        }
                        _ if b.is_ascii_whitespace() => {}
                        b',' if self.calls > 0 => {}
                        // A name may start with a letter of any script (`获取天气`).
                        _ if (b.is_ascii_alphabetic() || b == b'_' || !b.is_ascii())
                            && (self.opened || matches!(self.layout, CallList::Lines)) =>
                        {
                            self.state = PyState::Name { start: self.pos };
                        }
                        _ => {
                            self.stopped = true;
                            return;
                        }
                    }
                    self.pos += 1;
                }
                PyState::Name { start } => {
                    if (super::call_syntax::is_name_byte(b) || !b.is_ascii())
                        && self.pos - *start <= 256
                    {
                        self.pos += 1;
                        continue;
                    }
                    let name = region.get(*start..self.pos).unwrap_or("");
                    let tag_name = name.chars().all(super::call_syntax::is_tag_name_char)
                        && name
                            .chars()
                            .next()
                            .is_some_and(|c| c.is_alphabetic() || c == '_');
                    if b != b'(' || !valid_name(name) || !tag_name {
                        self.stopped = true;
                        return;
                    }
                    cx.start_call(name, None);
                    self.calls += 1;
                    self.sent.clear();
                    self.keys.clear();
                    self.state = PyState::Args {
                        open: self.pos,
                        scanner: Scanner::new(cx.ctx.limits.max_depth, true),
                        seg: self.pos + 1,
                    };
                }
                PyState::Args { open, scanner, seg } => {
                    // Scan up to the next comma (strings are skipped whole by the
                    // scanner), then see whether that comma separates arguments.
                    let comma = memchr::memchr(b',', &bytes[self.pos..]).map(|i| self.pos + i);
                    let upto = comma.unwrap_or(bytes.len());
                    let (at, ends) = match scanner.advance(bytes.get(*open..upto).unwrap_or(&[])) {
                        Scan::Fail(_) => {
                            self.stopped = true;
                            return;
                        }
                        // The `)` closes the call.
                        Scan::Done(n) => (*open + n - 1, true),
                        Scan::NeedMore => {
                            self.pos = upto;
                            let Some(c) = comma else { return };
                            let top = scanner.depth() == 1 && !scanner.in_literal();
                            if let Scan::Fail(_) =
                                scanner.advance(bytes.get(*open..=c).unwrap_or(&[]))
                            {
                                self.stopped = true;
                                return;
                            }
                            self.pos = c + 1;
                            if !top {
                                continue;
                            }
                            (c, false)
                        }
                    };
                    if ends {
                        self.pos = at + 1;
                    }
                    let segment = region.get(*seg..at).unwrap_or("");
                    *seg = at + 1;
                    if !self.keyword(segment, cx) {
                        self.stopped = true;
                        return;
                    }
                    if ends {
                        let close = if self.sent.is_empty() { "{}" } else { "}" };
                        self.send(close, cx);
                        self.closed.push(std::mem::take(&mut self.sent));
                        self.state = PyState::Entry;
                    }
                }
            }
        }
    }

    /// Sends one completed `key=value` argument; blank (a trailing comma) sends nothing.
    /// The value is read as the whole call's reader reads a keyword argument
    /// ([`parse_args`]: `parse_lenient` of the text after `=`), without its list split.
    fn keyword(&mut self, segment: &str, cx: &mut ReadCx<'_>) -> bool {
        let part = segment.trim();
        if part.is_empty() {
            return true;
        }
        // Keyword arguments only (a positional one maps by the schema's order), once each.
        let key_len = part
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        if key_len == 0 || part.as_bytes()[0].is_ascii_digit() {
            return false;
        }
        let (key, rest) = part.split_at(key_len);
        let Some(value) = rest
            .trim_start_matches([' ', '\t'])
            .strip_prefix('=')
            .filter(|v| !v.starts_with('='))
        else {
            return false;
        };
        let Ok((v, _)) = parse_lenient(value.trim()) else {
            return false;
        };
        if self.keys.contains(key) {
            return false;
        }
        let mut fragment = String::from(if self.sent.is_empty() { "{" } else { "," });
        fragment.push_str(&Value::String(key.to_owned()).to_string());
        fragment.push(':');
        fragment.push_str(&v.to_string());
        self.send(&fragment, cx);
        self.keys.insert(key.to_owned());
        true
    }
}

/// One Python call already announced, its `(` at `open` (Llama 3's built-in
/// `name.call(…)`): its keyword arguments stream as a [`CallListReader`]'s entries do.
pub(crate) struct LiveCall(LiveCalls);

impl LiveCall {
    pub(crate) fn new(open: usize, max_depth: usize) -> Self {
        let mut live = LiveCalls::new(open, CallList::List);
        live.calls = 1;
        live.state = PyState::Args {
            open,
            scanner: Scanner::new(max_depth, true),
            seg: open + 1,
        };
        LiveCall(live)
    }

    /// Sends the arguments completed in `region` (which must end at or before the `)`).
    pub(crate) fn advance(&mut self, region: &str, cx: &mut ReadCx<'_>) {
        self.0.advance(region, cx);
    }

    /// At the `)`: sends what the stream did not yet send of `drafts`' final arguments (a
    /// warning when a sent value differs from it).
    pub(crate) fn finish(
        &self,
        drafts: &[Draft],
        span: std::ops::Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        let live = &self.0;
        finish_sent(&live.closed, live.calls, &live.sent, drafts, span, o, cx);
    }
}

/// A `[…]` list that ends where the body ends (its brackets balance outside strings): a
/// list read without its closing marker must be whole.
fn list_balanced(body: &str, max_depth: usize) -> bool {
    let inner = body.trim();
    inner.starts_with('[')
        && matches!(
            Scanner::new(max_depth, true).advance(inner.as_bytes()),
            Scan::Done(n) if n == inner.len()
        )
}

/// Splits at commas outside brackets and quotes; whatever is left unbalanced at the end is
/// the last entry. One pass, no recursion.
fn split_tolerant(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut escape, mut from) = (0usize, 0u8, false, 0);
    for (i, b) in s.bytes().enumerate() {
        if quote != 0 {
            if escape {
                escape = false;
            } else if b == b'\\' {
                escape = true;
            } else if b == quote {
                quote = 0;
            }
            continue;
        }
        match b {
            b'"' | b'\'' => quote = b,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[from..]);
    out
}

/// The tags of an XML-style `invoke` element and its `parameter` children.
pub(crate) struct InvokeTags {
    /// `<invoke name="`
    pub invoke: &'static str,
    pub invoke_end: &'static str,
    /// `<parameter name="`
    pub param: &'static str,
    pub param_end: &'static str,
    /// Tokens allowed between invokes (Step-3's per-call wrapper).
    pub between: &'static [&'static str],
    /// A value is its bytes exactly (Step-3: vLLM's reader keeps a value's blanks and
    /// newlines), else the one layout newline on each side is dropped ([`layout_trim`]);
    /// the same as the family's [`StreamTags::verbatim`](super::tags::StreamTags).
    pub verbatim: bool,
}

/// A block of `invoke` elements. A parameter's value is typed by its `string="true|false"`
/// attribute when present (DeepSeek DSML), else by the tool's schema.
pub(crate) fn invokes(
    body: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
    tags: &InvokeTags,
) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut s = body;
    // Where the last `]]>` search ended, so that each byte is searched once.
    let mut cdata_end = CdataEnd::default();
    loop {
        s = skip_space(s);
        if let Some(t) = tags.between.iter().find(|t| s.starts_with(**t)) {
            s = &s[t.len()..];
            continue;
        }
        if s.is_empty() {
            break;
        }
        let (name, repairs, mut p) = invoke_tag(s, tags)?;
        if let Some((mut d, after)) = json_invoke(p, name, format, tags, cx.ctx.limits.max_depth) {
            // The arguments written as one JSON object instead of parameters (SGLang's
            // DeepSeek V3.2 reader takes both).
            d.repairs.extend(repairs);
            drafts.push(d);
            s = after;
            continue;
        }
        let mut read = InvokeArgs::new(format, repairs);
        loop {
            p = skip_space(p);
            if let Some(after) = p.strip_prefix(tags.invoke_end) {
                p = after;
                break;
            }
            p = read.param(p, name, cx, format, tags, &mut cdata_end)?;
        }
        let d = match read.refused {
            // Its siblings still run.
            Some(why) => Draft::broken(name, format!("{why} in the call to {name:?}"), format),
            None => {
                let mut d = Draft::new(name, Some(Value::Object(read.args)), format);
                d.repairs = read.repairs;
                d
            }
        };
        drafts.push(d);
        s = p;
    }
    if drafts.is_empty() {
        return Err("empty tool call block".into());
    }
    Ok(drafts)
}

/// The `invoke` opening tag at the start of `s`: the tool's name, the repairs reading it
/// made (an unquoted name) and the bytes after its `>`.
fn invoke_tag<'b>(
    s: &'b str,
    tags: &InvokeTags,
) -> Result<(&'b str, Vec<Repair>, &'b str), String> {
    let rest = s
        .strip_prefix(unquoted(tags.invoke))
        .ok_or_else(|| format!("expected {}NAME\"> in the tool call", tags.invoke))?;
    let (name, used, quoted) = attr_value(rest).ok_or("the invoke name is not closed")?;
    if !valid_name(name) {
        return Err(format!("invalid tool name {name:?}"));
    }
    let mut repairs = Vec::new();
    if !quoted {
        repairs.push(quotes_repair("invoke", name));
    }
    // `memchr`, not `str::find` (its searcher's set-up showed per streamed call).
    let gt = memchr::memchr(b'>', &rest.as_bytes()[used..])
        .ok_or("the invoke tag is not closed by >")?;
    Ok((name, repairs, &rest[used + gt + 1..]))
}

/// A call's head as [`invokes`] reads it when parameters follow: blanks and the tokens
/// allowed between invokes, the `invoke` tag, then only blanks (no JSON object in place of
/// the parameters). The name and the repairs reading it made; `None` for any other head.
pub(crate) fn invoke_head<'h>(head: &'h str, tags: &InvokeTags) -> Option<(&'h str, Vec<Repair>)> {
    let mut s = skip_space(head);
    while let Some(t) = tags.between.iter().find(|t| s.starts_with(**t)) {
        s = skip_space(&s[t.len()..]);
    }
    let (name, repairs, after) = invoke_tag(s, tags).ok()?;
    skip_space(after).is_empty().then_some((name, repairs))
}

/// One completed parameter `seg` (blanks, its opening tag, value and closing tag) of a call
/// to `name` whose head [`invoke_head`] read, read as [`invokes`] reads it in the whole
/// block: its arguments (by the family's schema rules) and its own repairs; `None` where
/// that read fails or the rules refuse the call.
pub(crate) fn invoke_param_alone(
    seg: &str,
    name: &str,
    cx: &ReadCx<'_>,
    format: FormatId,
    tags: &InvokeTags,
) -> Option<(Map<String, Value>, Vec<Repair>)> {
    let mut read = InvokeArgs::new(format, Vec::new());
    let rest = read
        .param(
            skip_space(seg),
            name,
            cx,
            format,
            tags,
            &mut CdataEnd::default(),
        )
        .ok()?;
    (skip_space(rest).is_empty() && read.refused.is_none()).then_some((read.args, read.repairs))
}

/// What an `invoke`'s parameters read so far hold.
struct InvokeArgs {
    args: Map<String, Value>,
    /// Why the family's schema rules refuse this call (a repeated parameter).
    refused: Option<String>,
    repairs: Vec<Repair>,
    /// The family's schema rules (looked up once a call).
    rules: Option<&'static super::schema_rules::SchemaRules>,
}

impl InvokeArgs {
    fn new(format: FormatId, repairs: Vec<Repair>) -> Self {
        InvokeArgs {
            args: Map::new(),
            refused: None,
            repairs,
            rules: format.schema_rules(),
        }
    }

    /// Reads the parameter whose opening tag starts `p` (of the call to `name`): the bytes
    /// after its closing tag.
    fn param<'b>(
        &mut self,
        p: &'b str,
        name: &str,
        cx: &ReadCx<'_>,
        format: FormatId,
        tags: &InvokeTags,
        cdata_end: &mut CdataEnd,
    ) -> Result<&'b str, String> {
        let repairs = &mut self.repairs;
        let after = p.strip_prefix(unquoted(tags.param)).ok_or_else(|| {
            format!(
                "expected a parameter or {} in the call to {name:?}",
                tags.invoke_end
            )
        })?;
        let (key, used, quoted) = attr_value(after).ok_or("a parameter name is not closed")?;
        if !quoted {
            repairs.push(quotes_repair("parameter", key));
        }
        let gt = memchr::memchr(b'>', &after.as_bytes()[used..])
            .ok_or("a parameter tag is not closed by >")?;
        let attrs = &after[used..used + gt];
        let value_and_rest = &after[used + gt + 1..];
        let (raw, next) = match cdata_value(value_and_rest, tags.param_end, cdata_end) {
            Cdata::Value(v, next) => (v, next),
            Cdata::Unclosed => {
                return Err(format!(
                    "parameter {key:?} of {name:?} opens <![CDATA[ and does not close it"
                ));
            }
            Cdata::No => {
                // The memchr-based search (a `str::find` builds a two-way searcher per
                // parameter; streaming reads each completed parameter this way).
                let end = find_from(value_and_rest, tags.param_end, 0)
                    .ok_or_else(|| format!("parameter {key:?} of {name:?} is not closed"))?;
                let raw = if tags.verbatim {
                    &value_and_rest[..end]
                } else {
                    layout_trim(&value_and_rest[..end])
                };
                (raw, &value_and_rest[end + tags.param_end.len()..])
            }
        };
        let v = match string_attribute(attrs) {
            Some(true) => Value::String(raw.to_owned()),
            Some(false) => match parse_lenient(raw.trim()) {
                Ok((v, r)) => {
                    repairs.extend(r);
                    v
                }
                Err(_) => {
                    repairs.push(Repair::new(
                        "text_value",
                        format!("argument {key:?}: marked JSON but not JSON; kept as text"),
                    ));
                    Value::String(raw.to_owned())
                }
            },
            None => typed(cx, format, name, key, raw, repairs),
        };
        match self.rules {
            Some(r) if self.refused.is_none() => {
                let spec = cx.ctx.spec(name);
                self.refused = r.add(&mut self.args, key, v, spec, repairs).err();
            }
            Some(_) => {}
            None => {
                self.args.insert(key.to_owned(), v);
            }
        }
        Ok(next)
    }
}

const CDATA_OPEN: &str = "<![CDATA[";
const CDATA_CLOSE: &str = "]]>";

/// A value written as an XML CDATA section.
enum Cdata<'v> {
    /// Not one: the value ends at the first closing tag.
    No,
    /// `<![CDATA[` with no `]]>` after it.
    Unclosed,
    /// The section's content exactly (a closing tag inside it is text), and the bytes
    /// after the parameter's closing tag.
    Value(&'v str, &'v str),
}

/// The last `]]>` found in one body (as the address of its first byte), or that none
/// follows an address: a later search from before it reuses the answer.
#[derive(Default)]
struct CdataEnd {
    found: Option<usize>,
    none_after: Option<usize>,
}

/// A value (the bytes after a parameter's opening tag, up to the body's end) that is,
/// blanks aside, one `<![CDATA[…]]>` section followed by `param_end`: its content is the
/// value, kept as written (MiniCPM5 writes a value holding markup so; llama.cpp's reader
/// takes it). A section followed by other text before `param_end` is not one ([`Cdata::No`]).
fn cdata_value<'v>(v: &'v str, param_end: &str, memo: &mut CdataEnd) -> Cdata<'v> {
    let Some(inner) = skip_space(v).strip_prefix(CDATA_OPEN) else {
        return Cdata::No;
    };
    let at = inner.as_ptr() as usize;
    let close = match (memo.found, memo.none_after) {
        (Some(f), _) if f >= at => Some(f - at),
        (_, Some(n)) if n <= at => None,
        _ => match inner.find(CDATA_CLOSE) {
            Some(i) => {
                memo.found = Some(at + i);
                Some(i)
            }
            None => {
                memo.none_after = Some(at);
                None
            }
        },
    };
    let Some(close) = close else {
        return Cdata::Unclosed;
    };
    match skip_space(&inner[close + CDATA_CLOSE.len()..]).strip_prefix(param_end) {
        Some(next) => Cdata::Value(&inner[..close], next),
        None => Cdata::No,
    }
}

/// An `invoke` whose body is a JSON object (`<invoke name="N">{"k": "v"}</invoke>`): the
/// draft (broken when the object is not JSON: its siblings still run) and the text after
/// the invoke's end tag; `None` when the body does not start with `{` or the object is not
/// followed by the end tag.
fn json_invoke<'b>(
    body: &'b str,
    name: &str,
    format: FormatId,
    tags: &InvokeTags,
    max_depth: usize,
) -> Option<(Draft, &'b str)> {
    let p = skip_space(body);
    if !p.starts_with('{') {
        return None;
    }
    let n = match Scanner::new(max_depth, false).advance(p.as_bytes()) {
        Scan::Done(n) => n,
        // Not balanced: up to the end tag, reported as not JSON.
        _ => p.find(tags.invoke_end)?,
    };
    let after = skip_space(p.get(n..)?).strip_prefix(tags.invoke_end)?;
    let d = match parse_lenient(p.get(..n)?) {
        Ok((args @ Value::Object(_), repairs)) => {
            let mut d = Draft::new(name, Some(args), format);
            d.repairs = repairs;
            d.repairs.push(Repair::new(
                "invoke_json",
                format!("the arguments of {name:?} were one JSON object, not parameters"),
            ));
            d
        }
        Ok(_) => Draft::broken(
            name,
            format!("the arguments of {name:?} are not a JSON object"),
            format,
        ),
        Err(e) => Draft::broken(
            name,
            format!("the arguments of {name:?} are not JSON: {e}"),
            format,
        ),
    };
    Some((d, after))
}

/// A parameter's opening tag (`tag` is `<parameter name="`; its value may also be written
/// single-quoted or bare): its key and where its value starts.
pub(crate) fn attr_param_value(header: &str, tag: &str) -> ValueHead {
    let head = unquoted(tag);
    let rest = match after_tag(header, head) {
        Ok(rest) => rest,
        Err(verdict) => return verdict,
    };
    let Some((key, used, _)) = attr_value(rest) else {
        let quoted = rest.starts_with(['"', '\'']);
        return if rest.len() > 256 || rest.contains('<') || (quoted && rest.contains('>')) {
            ValueHead::No
        } else {
            ValueHead::NeedMore
        };
    };
    match rest[used..].find('>') {
        Some(gt) => {
            let at = head.len() + used + gt + 1;
            // A CDATA section is read when it completes; until its first bytes show
            // whether the value is one, nothing is sent.
            let value = skip_space(&header[at..]);
            if value.starts_with(CDATA_OPEN) {
                return ValueHead::No;
            }
            if CDATA_OPEN.starts_with(value) {
                return ValueHead::NeedMore;
            }
            ValueHead::At {
                key: key.to_owned(),
                at,
                string: string_attribute(&rest[used..used + gt]),
            }
        }
        None if rest.len() - used > 256 || rest[used..].contains('<') => ValueHead::No,
        None => ValueHead::NeedMore,
    }
}

/// A tag written up to its attribute's opening quote (`<invoke name="`), without the quote.
/// Cut before the quote (an ASCII byte, so a char boundary) rather than checked again as
/// UTF-8: called at run time where it is not inlined, the check cost minimax_m2/small
/// one-shot ~2 % (a change of what the compiler inlined elsewhere in the crate made it so).
pub(crate) const fn unquoted(tag: &str) -> &str {
    match tag.as_bytes() {
        [.., b'"'] => tag.split_at(tag.len() - 1).0,
        _ => tag,
    }
}

/// An attribute's value at the start of `s` (just after `name=`): `"v"` as the templates
/// write it, or `'v'`, or a bare `v` up to a blank or `>` (vLLM's and SGLang's MiniMax M2
/// and dots readers take all three); with the bytes it spans and whether it was
/// double-quoted. `None` while it is not closed.
pub(crate) fn attr_value(s: &str) -> Option<(&str, usize, bool)> {
    match *s.as_bytes().first()? {
        q @ (b'"' | b'\'') => {
            let inner = s.get(1..)?;
            let end = inner.find(char::from(q))?;
            Some((inner.get(..end)?, end + 2, q == b'"'))
        }
        _ => {
            let end = s.find(|c: char| c.is_ascii_whitespace() || c == '>')?;
            (end > 0).then(|| (&s[..end], end, false))
        }
    }
}

/// The repair of a name written single-quoted or bare.
pub(crate) fn quotes_repair(tag: &str, name: &str) -> Repair {
    Repair::new(
        "attribute_quotes",
        format!("the {tag} name {name:?} was not written in double quotes"),
    )
}

/// `string="true"` / `string="false"` among a tag's attributes.
fn string_attribute(attrs: &str) -> Option<bool> {
    // The memchr-based search: a tag's attributes are mostly empty, and `str::find` sets up
    // a two-way searcher on every parameter read (twice per streamed one).
    let at = find_from(attrs, "string=\"", 0)?;
    let v = &attrs[at + "string=\"".len()..];
    if v.starts_with("true\"") {
        Some(true)
    } else if v.starts_with("false\"") {
        Some(false)
    } else {
        None
    }
}

/// `tag` (after blanks) at the start of `lead`: ours, undecided, or not.
pub(crate) fn tag_lead(lead: &str, complete: bool, tag: &str) -> Lead<'static> {
    let s = skip_space(lead);
    match starts(s, tag) {
        Some(true) => Lead::Mine(None),
        Some(false) => Lead::NotMine,
        None if complete => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_decide_from_the_first_bytes() {
        assert!(matches!(json_lead(" \n[", false), Lead::Mine(None)));
        assert!(matches!(json_lead("  ", false), Lead::NeedMore));
        assert!(matches!(json_lead("  ", true), Lead::NotMine));
        assert!(matches!(json_lead(" and", false), Lead::NotMine));
        assert!(
            matches!(call_line_lead("\nget_time(", false), Lead::Mine(Some(n)) if n == "get_time")
        );
        assert!(matches!(call_line_lead("\nget_ti", false), Lead::NeedMore));
        assert!(matches!(
            call_line_lead(" tags; nothing", false),
            Lead::NotMine
        ));
        assert!(matches!(
            tag_lead("\n<inv", false, "<invoke name=\""),
            Lead::NeedMore
        ));
        assert_eq!(attr_value("\"a b\" x"), Some(("a b", 5, true)));
        assert_eq!(attr_value("'city'>"), Some(("city", 6, false)));
        assert_eq!(attr_value("city>"), Some(("city", 4, false)));
        assert_eq!(attr_value("city"), None);
        assert_eq!(attr_value("'city"), None);
        assert_eq!(attr_value(">"), None);
        assert!(matches!(
            attr_param_value("<parameter name='k' x>v", "<parameter name=\""),
            ValueHead::At { key, at: 22, string: None } if key == "k"
        ));
        assert!(matches!(
            attr_param_value("<parameter name=k", "<parameter name=\""),
            ValueHead::NeedMore
        ));
        assert_eq!(string_attribute(" string=\"false\""), Some(false));
        assert_eq!(
            split_tolerant(r#"f(a="x,y"), g((("#),
            [r#"f(a="x,y")"#, " g((("]
        );
        assert_eq!(string_attribute(""), None);
    }

    /// One-shot reads a JSON block ahead ([`json_body_ahead`], [`json_items_ahead`]) where
    /// it can: it gives what the same parse gives with no read-ahead (the closing tag
    /// searched outside strings, the body read: calls, spans, repairs, diagnostics, text),
    /// and what streams in 1-, 3- and 7-char pushes give, for blocks it reads and blocks it
    /// leaves, in every family that reads this way (and Command R+, whose tag it leaves).
    /// A parse's nesting bound is kept whether a block is read ahead or not: with a small
    /// `max_depth`, every family that reads ahead gives what the search and the body read
    /// give, for arguments nested within and past the bound. (Streams against one-shot, and
    /// the bound itself, are `tests/nesting_bound.rs`'s.)
    /// The families whose JSON blocks are read ahead one-shot.
    const READS_AHEAD: [&str; 6] = [
        "tool_calls_tag",
        "internlm",
        "cohere",
        "gpt_oss",
        "deepseek_v3_1",
        "gemma4",
    ];

    #[test]
    fn read_ahead_keeps_the_depth_bound() {
        use super::assert_read_ahead_equals_search;
        use crate::{FormatSelection, Limits, ParseOptions};
        for depth in [2_usize, 3, 4, 6] {
            let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
            for n in [
                depth.saturating_sub(2),
                depth - 1,
                depth,
                depth + 1,
                depth + 4,
            ] {
                let (lists, args) = (nested(n), format!("{{\"a\": {}}}", nested(n)));
                // The families that read ahead, as `tests/nesting_bound.rs` writes them.
                let families = include_str!("../../tests/fixtures/nesting/calls.txt")
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .filter(|(f, _)| READS_AHEAD.contains(f))
                    .map(|(f, t)| (f, t.replace("@ARGS@", &args).replace("@LISTS@", &lists)));
                let mut read = 0;
                for (family, text) in families {
                    read += 1;
                    // Each text is a call of its family (with the default bound).
                    let whole = ParseOptions {
                        format: FormatSelection::Only(family.into()),
                        ..ParseOptions::default()
                    };
                    let calls = crate::parse(&text, &whole).calls;
                    assert_eq!(calls.len(), 1, "{family}: {text:?}");
                    let o = ParseOptions {
                        format: FormatSelection::Only(family.into()),
                        limits: Limits {
                            max_depth: depth,
                            ..Limits::default()
                        },
                        ..ParseOptions::default()
                    };
                    let context = format!("{family} max_depth {depth}");
                    assert_read_ahead_equals_search(&text, &o, &context);
                }
                assert_eq!(
                    read,
                    READS_AHEAD.len(),
                    "every family that reads ahead is listed"
                );
            }
        }
    }

    #[test]
    fn json_aheads_equal_the_search_and_streams() {
        use super::assert_read_ahead_equals_search_and_streams;
        use crate::{FormatSelection, ParseOptions};
        let lists = [
            "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\", \"days\": 4}}",
            r#"[{"name": "f", "arguments": {"a": "</tool_calls></TOOLCALL></longcat_tool_call><|action_end|> \"x\\"}}]"#,
            r#" [{"name":"f","parameters":{}}, {"name":"g","arguments":{"x":[1,{"y":null}]}}] "#,
            "[{\"name\":\"f\",\"arguments\":{}}]\r\n\t",
            r#"[{"name":"f","arguments":{}}] x"#,
            r#"[{'name':'f','arguments':{}}]"#,
            r#"[{"name":"f","arguments":{},}]"#,
            "[{\"name\":\"f\",\"arguments\":{}}]\u{a0}",
            "\u{a0}[{\"name\":\"f\",\"arguments\":{}}]",
            r#"[{"name":"f","arguments":{"a":"x}]"#,
            r#"[{"name":"f","name":"g","arguments":{}}]"#,
            r#"{"foo":1}"#,
            r#"[{"name":"f"}]"#,
            r#"[{"name":"no such tool!","arguments":{}}]"#,
            r#"[]"#,
            r#"[1]"#,
            r#""text""#,
            "12",
        ];
        let items = [
            r#"[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Lisbon"}}]"#,
            " {\"tool_name\": \"f\", \"parameters\": {\"a\": \"<|END_ACTION|>```\"}}\n",
            r#"[{"tool_name":"f","parameters":{}},{"tool_call_id":"1","tool_name":"g"}]"#,
            "{\"tool_name\":\"f\",\"parameters\":{}}\n{\"tool_name\":\"g\",\"parameters\":{}}",
            r#"[{"tool_name":"f","parameters":{}}] x"#,
            r#"[{"tool_name":"f","parameters":{},}]"#,
            r#"[{"tool_name":"f","parameters":{}}, 1]"#,
            r#"[{"name":"f","arguments":{}}]"#,
            r#"[{"tool_name":"","parameters":{}}]"#,
            r#"[]"#,
            r#"{}"#,
            "\u{a0}[{\"tool_name\":\"f\",\"parameters\":{}}]",
            r#""text""#,
        ];
        // InternLM's own `{name, parameters}` documents.
        let documents = [
            "\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Lisbon\", \"days\": 4}}",
            r#"{"name": "f", "parameters": {"a": "<|action_end|> \"x\\"}}"#,
            r#" [{"name":"f","parameters":{}}, {"name":"g","parameters":{"x":[1,{"y":null}]}}] "#,
            "{\"name\":\"f\",\"parameters\":{}}\r\n\t",
            r#"{"name":"f","parameters":{}} x"#,
            r#"{'name':'f','parameters':{}}"#,
            r#"{"name":"f","parameters":{},}"#,
            "{\"name\":\"f\",\"parameters\":{}}\u{a0}",
            "\u{a0}{\"name\":\"f\",\"parameters\":{}}",
            r#"{"name":"f","parameters":{"a":"x}"#,
            r#"{"foo":1}"#,
            r#"{"name":"f","arguments":{"a":1}}"#,
            r#"{"name":"f"}"#,
            r#"[]"#,
            r#""text""#,
            "12",
        ];
        let internlm: Vec<&str> = lists.iter().chain(&documents).copied().collect();
        let families: [(&str, &str, &str, &[&str]); 7] = [
            ("tool_calls_tag", "<tool_calls>", "</tool_calls>", &lists),
            (
                "longcat",
                "<longcat_tool_call>",
                "</longcat_tool_call>",
                &lists,
            ),
            ("nemotron", "<TOOLCALL>", "</TOOLCALL>", &lists),
            (
                "internlm",
                "<|action_start|><|plugin|>",
                "<|action_end|>",
                &internlm,
            ),
            ("cohere", "<|START_ACTION|>", "<|END_ACTION|>", &items),
            (
                "cohere",
                "<|START_RESPONSE|>Hi.<|END_RESPONSE|><|START_ACTION|>",
                "<|END_ACTION|>",
                &items,
            ),
            ("command_r_plus", "Action: ```json\n", "\n```", &items),
        ];
        for (family, open, close, bodies) in families {
            let only = ParseOptions {
                format: FormatSelection::Only(family.into()),
                ..ParseOptions::default()
            };
            let auto = ParseOptions::default();
            for body in bodies {
                for text in [
                    format!("{open}{body}{close}"),
                    format!("Sure.\n{open}{body}{close} done {open}{body}{close}"),
                    format!("{open}{body}"),
                ] {
                    for o in [&only, &auto] {
                        assert_read_ahead_equals_search_and_streams(&text, o, true, family);
                    }
                }
            }
        }
    }

    /// A flood of broken `Action:` blocks whose JSON opens with a key that no colon follows
    /// (copies worded, the fence inline or on the next line, a tab in the key) parses as it
    /// did before `known_failure` read such keys without decoding: the same text, calls and
    /// diagnostics (serde_json's message for each block), streamed alike, and the call
    /// after it found.
    #[test]
    fn broken_action_blocks_parse_as_decoded() {
        let options = crate::ParseOptions::default();
        let call = "Action: ```json\n[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]\n```";
        let words = ["the", "weather", "a", "get_weather", "1"];
        let mut found = 0;
        for unit in [
            "Action: ```json{\"",
            "Action:\n```json{\"",
            "Action: ```json{\"\t",
            "Action: ```json\n{\"",
        ] {
            for n in [1, 2, 3, 4, 5, 6, 7, 40] {
                let flood: String = (0..n).map(|i| format!("{unit}{}", words[i % 5])).collect();
                for tail in ["", "\"", "\n```", "\"\n```"] {
                    let text = format!("{flood}{tail}\n\n{call} after");
                    let parsed = crate::parse(&text, &options);
                    crate::repair::KNOWN_FAILURES_OFF.with(|off| off.set(true));
                    let decoded = crate::parse(&text, &options);
                    crate::repair::KNOWN_FAILURES_OFF.with(|off| off.set(false));
                    // Call ids are drawn at random.
                    let calls = crate::engine::tests::call_parts;
                    assert_eq!(parsed.text, decoded.text, "{text:?}");
                    assert_eq!(parsed.diagnostics, decoded.diagnostics, "{text:?}");
                    assert_eq!(calls(&parsed), calls(&decoded), "{text:?}");
                    found += parsed.calls.len();
                    for size in [1, 5, 64] {
                        let (_, _, diagnostics) =
                            crate::engine::tests::streamed_whole(&text, &options, size);
                        assert_eq!(diagnostics, parsed.diagnostics, "{text:?} at {size}");
                    }
                }
            }
        }
        assert!(found > 0);
    }
}
