//! The reader of bare JSON regions: a `{`/`[` in prose or a fence, with no marker before
//! it, that the engine found plausible (see `scanner::object_start_plausible`). Not a
//! family itself: the region is scanned once, decoded (repaired if needed) and offered to
//! the enabled families' [`Family::classify_json`](crate::family::Family::classify_json) in
//! priority order; a balanced region that is not JSON is offered to their
//! [`Family::classify_bare_text`](crate::family::Family::classify_bare_text) (pythonic
//! lists). What no family claims stays text: a decoded value is skipped whole; a region
//! that was not even balanced JSON is scanned again from its second byte, so a stray `{`
//! never hides calls after it (R-7), within the engine's rescan budget.

use std::ops::Range;

use serde_json::Value;
use toolcall_core::{Diagnostic, Repair};

use super::json::Decoded;
use super::json::cut_list;
use super::llama::{self, Link};
use super::{classify_decoded, classify_value};
use crate::FormatId;
use crate::builder::Ctx;
use crate::builder::Outcome;
use crate::fallback;
use crate::family::{Advance, JsonCx, Plain, ReadCx, RegionReader};
use crate::repair::parse_lenient;
use crate::scanner::{Scan, Scanner, decode_calls_prefix};

pub(crate) struct BareJsonReader {
    /// Made at the first read, resumed from a failed scan this region lies in when there
    /// is one ([`crate::scanner::FailedScan`]: `[[[…` scans each byte a bounded number of
    /// times, not once per bracket before it).
    scanner: Option<Scanner>,
    max_depth: usize,
    /// Llama 3.x calls chained `{…}; {…}` after a first value `llama` claimed.
    chain: Option<Chain>,
}

/// The calls of a `;` chain read so far ([`llama::next_link`]): each later object is
/// offered to the families as a region of its own would be (not at the reply's start), and
/// joins the chain only when `llama` claims it; else the chain ends before its `;`.
struct Chain {
    outcome: Outcome,
    /// Where the last call read ends.
    end: usize,
    /// Where the object being scanned starts, and its scan.
    at: usize,
    scanner: Option<Scanner>,
}

impl BareJsonReader {
    pub(crate) fn new(ctx: &Ctx) -> Self {
        BareJsonReader {
            scanner: None,
            max_depth: ctx.limits.max_depth,
            chain: None,
        }
    }

    /// `advance` as the first value decided it: a value `llama` claimed goes on to read
    /// the calls chained after it.
    fn chained(
        &mut self,
        advance: Advance,
        region: &str,
        is_final: bool,
        cx: &mut ReadCx<'_>,
    ) -> Advance {
        match advance {
            Advance::Done { end, outcome } if llama::chains(&outcome) => {
                self.chain = Some(Chain {
                    outcome,
                    end,
                    at: end,
                    scanner: None,
                });
                self.step_chain(region, is_final, cx)
            }
            a => a,
        }
    }

    fn step_chain(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let bytes = region.as_bytes();
        let max_depth = self.max_depth;
        let Some(chain) = &mut self.chain else {
            return Advance::NeedMore;
        };
        loop {
            let (to, decoded) = match &mut chain.scanner {
                None => {
                    match llama::next_link(bytes, chain.end, is_final) {
                        Link::NeedMore => return Advance::NeedMore,
                        Link::End => break,
                        Link::Next(at) => chain.at = at,
                    }
                    let rest = region.get(chain.at..).unwrap_or("");
                    // One-shot: valid JSON is decoded in one pass, calls typed.
                    let fast = if cx.streaming() {
                        None
                    } else {
                        decode_calls_prefix(rest, max_depth)
                    };
                    match fast {
                        Some((n, v)) => (chain.at + n, Ok((v, Vec::new()))),
                        None => {
                            chain.scanner = Some(Scanner::new(max_depth, false));
                            continue;
                        }
                    }
                }
                Some(scanner) => match scanner.advance(bytes.get(chain.at..).unwrap_or(&[])) {
                    Scan::NeedMore if !is_final => return Advance::NeedMore,
                    Scan::NeedMore => {
                        // A later call cut by the end: dropped, as a cut bare call is.
                        let cut = bytes.get(chain.at..).unwrap_or(&[]);
                        if looks_like_call(cut) {
                            let span = cx.span(chain.at, region.len());
                            llama::drop_cut(&mut chain.outcome, span);
                            chain.end = region.len();
                        }
                        break;
                    }
                    Scan::Fail(_) => break,
                    Scan::Done(n) => {
                        let json = region.get(chain.at..chain.at + n).unwrap_or("");
                        if never_json(json) {
                            break;
                        }
                        let decoded = llama::decode_scanned(json, max_depth, cx.streaming());
                        (chain.at + n, decoded)
                    }
                },
            };
            let Ok((v, repairs)) = decoded else { break };
            let span = cx.span(chain.at, to);
            let Ok(o) = claim(v, repairs, false, span, cx) else {
                break;
            };
            if !llama::chains(&o) {
                break;
            }
            llama::extend_chain(&mut chain.outcome, o);
            chain.end = to;
            chain.scanner = None;
        }
        match self.chain.take() {
            Some(c) => Advance::Done {
                end: c.end,
                outcome: c.outcome,
            },
            None => Advance::NeedMore,
        }
    }
}

impl RegionReader for BareJsonReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if self.chain.is_some() {
            return self.step_chain(region, is_final, cx);
        }
        let bytes = region.as_bytes();
        let Some(&open @ (b'{' | b'[')) = bytes.first() else {
            return Advance::NotMine;
        };
        let (at, max_depth) = (cx.base, self.max_depth);
        // One-shot, before the first scan: valid JSON is decoded in one pass (a region a
        // failed scan covers resumes from it instead, keeping bracket floods linear).
        let repeats = if self.scanner.is_none() {
            cx.failed_scan.repeats(max_depth, false, bytes)
        } else {
            None
        };
        if self.scanner.is_none()
            && !cx.streaming()
            && repeats.is_none()
            && !cx.failed_scan.covers(at, open, max_depth, false)
        {
            // An envelope read into its calls' parts, when that family would claim it.
            if let Some((end, outcome)) =
                super::tools_envelope::decode_first(region, max_depth, cx.ctx, cx.span(0, 0).start)
            {
                return Advance::Done { end, outcome };
            }
            if let Some((n, v)) = first_key_closed(bytes)
                .then(|| decode_calls_prefix(region, max_depth))
                .flatten()
            {
                let done = complete(region.get(..n).unwrap_or(""), Ok((v, Vec::new())), cx);
                return self.chained(done, region, is_final, cx);
            }
        }
        if let Some(end) = repeats {
            // A region that starts with the bytes a kept scan failed on fails as it did,
            // with no note as it had none (`FailedScans::repeats`; only a failure without
            // a note is kept so); the kept scan stays for the next such region.
            return abandon(end, None);
        }
        let scanner = self.scanner.get_or_insert_with(|| {
            Scanner::resume_or_new(cx.failed_scan, at, open, max_depth, false)
        });
        match scanner.advance(bytes) {
            Scan::NeedMore if !is_final => Advance::NeedMore,
            Scan::NeedMore => {
                if let Some(o) = cut_calls(region, cx) {
                    Advance::Done {
                        end: region.len(),
                        outcome: o,
                    }
                } else if looks_like_call(bytes) {
                    Advance::Dropped {
                        end: region.len(),
                        why: "truncated tool call: the JSON ends before it is closed; not run"
                            .into(),
                    }
                } else {
                    abandon(region.len(), None)
                }
            }
            Scan::Done(n) => {
                let json = region.get(..n).unwrap_or("");
                if never_json(json) {
                    // A list of calls written as code (pythonic): no decode to fail first.
                    return not_json(json, None, cx);
                }
                let decoded = llama::decode_scanned(json, max_depth, cx.streaming());
                let done = complete(json, decoded, cx);
                self.chained(done, region, is_final, cx)
            }
            Scan::Fail(why) => {
                // Where the scan stopped: never the region's length, which depends on chunking.
                let end = scanner.consumed();
                let scanned = bytes.get(..end).unwrap_or(&[]);
                let diagnostic = if looks_like_call(scanned) {
                    Some(Diagnostic::error(
                        format!("malformed tool call JSON left as text: {why}"),
                        cx.span(0, end),
                    ))
                } else {
                    pythonic_call_named(scanned, cx.ctx).map(|name| {
                        Diagnostic::error(
                            format!("{name}(...) in a list of calls left as text: {why}"),
                            cx.span(0, end),
                        )
                    })
                };
                if let Some(s) = self.scanner.take() {
                    // Kept among the last few (`FailedScans`): each opener of a numbered
                    // flood whose copies hold strings (`{"0{"1…`) resumes from the scan
                    // that saw its bracket outside strings, not only from the last one.
                    let seen = if diagnostic.is_none() { scanned } else { &[] };
                    s.fail_into_seen(cx.failed_scan, at, seen);
                }
                abandon(end, diagnostic)
            }
        }
    }
}

/// Whether a bare JSON region whose scan failed after reading `scanned` (its first bytes,
/// the failing one last) is abandoned as text with no note: what [`BareJsonReader`] asks
/// of such a scan (no call's keys, no `[name(` the `pythonic` family would take).
pub(crate) fn fails_without_note(scanned: &[u8], ctx: &Ctx) -> bool {
    !looks_like_call(scanned) && pythonic_call_named(scanned, ctx).is_none()
}

/// Whether an object region (`{`, blanks, `"`) may decode as far as its first key goes:
/// `false` when the key's closing quote (no escape before it) is followed, after blanks,
/// by a byte other than `:`, where `serde_json` fails (so `decode_calls_prefix` gives
/// `None`) after building the key and an error; `true` otherwise (any other region, an
/// escape, the end first). A flood of a quote inside markup (`…x{"0]<]minimax[>…x{"1…`,
/// each copy's key running to the next copy's quote) paid that failed decode at every
/// copy (~1,360 instructions of ~6,400 a unit).
fn first_key_closed(bytes: &[u8]) -> bool {
    let blanks = |from: usize| {
        from + bytes
            .get(from..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&c| crate::scanner::is_json_blank(c))
            .count()
    };
    if bytes.first() != Some(&b'{') {
        return true;
    }
    let q = blanks(1);
    if bytes.get(q) != Some(&b'"') {
        return true;
    }
    let key = bytes.get(q + 1..).unwrap_or(&[]);
    let Some(close) = memchr::memchr2(b'"', b'\\', key) else {
        return true;
    };
    if key.get(close) != Some(&b'"') {
        return true;
    }
    !matches!(bytes.get(blanks(q + 2 + close)), Some(&c) if c != b':')
}

/// Not JSON: text, scanned again from the second byte.
fn abandon(scanned: usize, diagnostic: Option<Diagnostic>) -> Advance {
    Advance::Text(Plain {
        end: 1,
        scanned,
        diagnostic: diagnostic.map(crate::family::Note::from),
        label: None,
    })
}

/// A balanced region `region` (the whole of it).
/// The balanced region `region`, decoded as `decoded` (`parse_lenient` of it).
fn complete(
    region: &str,
    decoded: Result<(Decoded, Vec<Repair>), String>,
    cx: &mut ReadCx<'_>,
) -> Advance {
    let end = region.len();
    let span = cx.span(0, end);
    match decoded {
        Ok((v, repairs)) => match claim(v, repairs, cx.at_start, span.clone(), cx) {
            Ok(o) => Advance::Done { end, outcome: o },
            Err(v) => Advance::Text(Plain {
                end,
                scanned: end,
                diagnostic: rejected_call_shape(&v, cx.ctx)
                    .map(|why| Diagnostic::info(why, span).into()),
                label: fallback::label_of(&v).map(String::into_boxed_str),
            }),
        },
        Err(e) => not_json(region, Some(e), cx),
    }
}

/// A decoded value (`repairs`: how it was repaired) offered to the families; `Err`: no
/// family claimed it.
fn claim(
    v: Decoded,
    repairs: Vec<Repair>,
    at_start: bool,
    span: Range<usize>,
    cx: &ReadCx<'_>,
) -> Result<Outcome, Value> {
    let mut o = classify_decoded(v, cx.ctx, at_start, span.clone())?;
    for d in &mut o.drafts {
        d.repairs.extend(repairs.iter().cloned());
    }
    if !repairs.is_empty() {
        let kinds: Vec<&str> = repairs.iter().map(|r| r.kind.as_str()).collect();
        o.diagnostics.push(Diagnostic::info(
            format!("repaired JSON: {}", kinds.join(", ")),
            span,
        ));
    }
    Ok(o)
}

/// The balanced region `region` that does not decode (`error`: why; `None` when
/// [`never_json`] said so without decoding): offered to the families that read balanced
/// text ([`crate::family::Family::classify_bare_text`]), else dropped or left as text.
fn not_json(region: &str, error: Option<String>, cx: &mut ReadCx<'_>) -> Advance {
    let end = region.len();
    let jcx = JsonCx {
        ctx: cx.ctx,
        span: cx.span(0, end),
        at_start: cx.at_start,
    };
    let claimed = cx
        .ctx
        .families
        .iter()
        .find_map(|f| f.classify_bare_text(region, &jcx));
    match claimed {
        Some(Ok(outcome)) => Advance::Done { end, outcome },
        Some(Err(why)) => Advance::Dropped { end, why },
        None if looks_like_call(region.as_bytes()) => {
            let e = error.unwrap_or_else(|| parse_lenient(region).err().unwrap_or_default());
            Advance::Dropped {
                end,
                why: format!("malformed tool call JSON, not run: {e}"),
            }
        }
        None => abandon(end, None),
    }
}

/// Whether `region` is a list whose first element starts with a word that no JSON value
/// and no repair of one starts with (`[get_weather(…`): `serde_json` refuses the word, and
/// the repair copies it unchanged (only `True`, `False`, `None` become literals, and a word
/// becomes a quoted key only after `{` or `,`), so [`parse_lenient`] would fail on it.
fn never_json(region: &str) -> bool {
    let Some(rest) = region.strip_prefix('[') else {
        return false;
    };
    let rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
    let word_len = rest
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
        .unwrap_or(rest.len());
    never_json_word(&rest[..word_len])
}

/// A word no JSON value starts with: a name, not a literal.
fn never_json_word(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && !["true", "false", "null", "True", "False", "None"].contains(&word)
}

/// A list of calls (or a `tools` envelope) cut by the end of the input: its complete
/// entries, classified as the whole value would be, and an error for the cut one. The cut
/// entry's text goes with the region (dropped, as a cut bare call is).
fn cut_calls(region: &str, cx: &mut ReadCx<'_>) -> Option<Outcome> {
    let cut = cut_list(region, cx.ctx.limits.max_depth)?;
    let span = cx.span(0, region.len());
    let (mut v, repairs) = parse_lenient(&cut.json).ok()?;
    let mut o = classify_value(&mut v, cx.ctx, cx.at_start, span.clone())?;
    for d in &mut o.drafts {
        d.repairs.extend(repairs.iter().cloned());
    }
    let at = cut.cut.unwrap_or(region.len());
    o.diagnostics
        .push(cut.diagnostic(cx.span(at, region.len())));
    Some(o)
}

pub(crate) fn looks_like_call(region: &[u8]) -> bool {
    // Every key below is quoted: a region without a quote (a flood of `[`) has none.
    if region.len() <= QUOTES_MAX {
        return call_keys_at_quotes(region);
    }
    if memchr::memchr2(b'"', b'\'', region).is_none() {
        return false;
    }
    call_keys_searched(region)
}

/// Whether `region` holds a call's keys, each searched for over the whole region (a vector
/// search a key): [`looks_like_call`] past [`QUOTES_MAX`], and the answer
/// [`call_keys_at_quotes`] must give. Out of line: its searchers' frame, inlined, cost
/// every short region's call its setup.
#[inline(never)]
fn call_keys_searched(region: &[u8]) -> bool {
    let has = |n: &str| memchr::memmem::find(region, n.as_bytes()).is_some();
    (has("\"name\"") || has("'name'"))
        && (has("\"arguments\"")
            || has("\"parameters\"")
            || has("'arguments'")
            || has("'parameters'"))
        || has("\"tools\"")
        || (has("\"command\"") && has("\"session_id\""))
}

/// The longest region [`looks_like_call`] reads quote by quote ([`call_keys_at_quotes`]);
/// past it, each key is searched for (a vector search a key, for long values).
const QUOTES_MAX: usize = 256;

/// [`looks_like_call`] read at each quote of `region`: every key it looks for starts with
/// a quote, so each of its occurrences starts at one of them, and one pass over the quotes
/// finds what its nine searches found. A failed bracket region of a few bytes with a quote
/// in it (a fence around a broken object, ```` ```\n{"x\n``` ````) built and ran those
/// nine searches (~770 instructions a region).
fn call_keys_at_quotes(region: &[u8]) -> bool {
    let mut keys = CallKeys::default();
    // A byte loop: the iterator's vector search cost more than the few bytes (~400
    // instructions a region of 12). Eight bytes at a time, the quotes among them found by
    // a word's test ([`quote_bytes`]), the last few byte by byte: a failed region of a
    // flood (`{"0]<]minimax[>[<tool_call>x{"1]`, 33 bytes, 2 quotes) cost ~400
    // instructions byte by byte.
    let mut words = region.chunks_exact(8);
    let mut base = 0;
    for word in &mut words {
        let mut quotes = quote_bytes(u64::from_le_bytes(
            <[u8; 8]>::try_from(word).unwrap_or_default(),
        ));
        // Each byte flagged is checked (a flag past the first may be a borrow's).
        while quotes != 0 {
            let k = (quotes.trailing_zeros() / 8) as usize;
            quotes &= quotes - 1;
            if let Some(&q @ (b'"' | b'\'')) = word.get(k) {
                keys.at_quote(q, region.get(base + k + 1..).unwrap_or(&[]));
            }
        }
        base += 8;
    }
    for (k, &q) in words.remainder().iter().enumerate() {
        if q == b'"' || q == b'\'' {
            keys.at_quote(q, region.get(base + k + 1..).unwrap_or(&[]));
        }
    }
    keys.looks_like_call()
}

/// The high bit of each byte of the eight in `x` (little-endian) that may be a quote (`"`
/// or `'`): every quote's is set, none when there is no quote, and the lowest bit set is
/// that of the first quote (the zero-byte test of `x` xor each quote repeated, exact up to
/// its first zero byte; past it a byte may be flagged by the borrow).
#[inline(always)]
fn quote_bytes(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zeros = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    zeros(x ^ (ONES * u64::from(b'"'))) | zeros(x ^ (ONES * u64::from(b'\'')))
}

/// The call keys [`looks_like_call`] looks for, found so far quote by quote
/// ([`CallKeys::at_quote`] at each quote of a region, in any order): what
/// [`call_keys_at_quotes`] reads, and what a reader already walking a region's bytes
/// (`holds_no_nested_region`, a fence's content) notes as it passes them, instead of
/// walking them again (a second walk cost a fence of ```` ```\n{"x```\n1 ```` ~210
/// instructions).
#[derive(Default)]
pub(crate) struct CallKeys(u8);

impl CallKeys {
    const NAME: u8 = 1;
    const ARGS: u8 = 2;
    const TOOLS: u8 = 4;
    const COMMAND: u8 = 8;
    const SESSION: u8 = 16;

    /// Notes the key the quote `q` (`"` or `'`) opens, `rest` the bytes after it.
    /// Decided by the byte after the quote first: each key starts with its own letter
    /// (`n`, `a`, `p`, `t`, `c`, `s`), so a quote before any other byte compares nothing
    /// (six prefix compares a quote, each a `memcmp` call, were ~130 instructions of a
    /// fence of ```` ```\n{"x```\n1 ````). The keys found are bits of one byte.
    #[inline]
    pub(crate) fn at_quote(&mut self, q: u8, rest: &[u8]) {
        let key = |k: &[u8]| rest.starts_with(k) && rest.get(k.len()) == Some(&q);
        let found = match rest.first() {
            Some(b'n') if key(b"name") => Self::NAME,
            Some(b'a') if key(b"arguments") => Self::ARGS,
            Some(b'p') if key(b"parameters") => Self::ARGS,
            Some(b't') if q == b'"' && key(b"tools") => Self::TOOLS,
            Some(b'c') if q == b'"' && key(b"command") => Self::COMMAND,
            Some(b's') if q == b'"' && key(b"session_id") => Self::SESSION,
            _ => 0,
        };
        self.0 |= found;
    }

    /// Whether the keys noted make [`looks_like_call`]'s answer.
    #[inline]
    pub(crate) fn looks_like_call(&self) -> bool {
        let has = |k: u8| self.0 & k == k;
        has(Self::NAME | Self::ARGS) || has(Self::TOOLS) || has(Self::COMMAND | Self::SESSION)
    }
}

/// The name of the call a bracket region opens with, `[name(`, when the `pythonic` family
/// is enabled and would take the name: such a region that fails its scan (nested past the
/// bound) is reported, as a JSON call's is, instead of left as text without a word.
fn pythonic_call_named<'a>(region: &'a [u8], ctx: &Ctx) -> Option<&'a str> {
    // The bytes first: `ctx.enabled` compares format names, and a flood of `[` fails a
    // scan at every bracket (asked first, it cost a bracket flood 14 %).
    let rest = region.strip_prefix(b"[")?.trim_ascii_start();
    let word_len = rest
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))?;
    let name = std::str::from_utf8(rest.get(..word_len)?).ok()?;
    let opens = rest.get(word_len..)?.trim_ascii_start().first() == Some(&b'(');
    (opens && never_json_word(name) && ctx.enabled(FormatId::PYTHONIC) && ctx.strict_name_ok(name))
        .then_some(name)
}

/// Why JSON that has a call's `name` + arguments shape was left as text (F-DIAG-1).
fn rejected_call_shape(v: &Value, ctx: &Ctx) -> Option<String> {
    let m = v.as_object()?;
    let name = m.get("name")?.as_str()?;
    if !(m.contains_key("arguments") || m.contains_key("parameters")) {
        return None;
    }
    Some(if !ctx.strict_name_ok(name) {
        format!("JSON shaped like a call to {name:?} left as text: not a registered tool")
    } else {
        let extra: Vec<&str> = m
            .keys()
            .map(String::as_str)
            .filter(|k| !["name", "arguments", "parameters", "id", "call_id", "type"].contains(k))
            .collect();
        format!(
            "JSON shaped like a call to {name:?} left as text: unexpected keys {}",
            extra.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Xorshift;

    // The quote-by-quote reading of short regions finds what the searches find: regions
    // from pieces of the keys, quotes of both kinds and other bytes, short and long.
    #[test]
    fn call_keys_at_quotes_agree_with_the_searches() {
        let pieces: &[&str] = &[
            "\"",
            "'",
            "name",
            "arguments",
            "parameters",
            "tools",
            "command",
            "session_id",
            "nam",
            "x",
            "{",
            ": ",
            "\"name\"",
            "'arguments'",
            "\"session_id'",
        ];
        let mut rng = Xorshift::new(0x9E37_79B9_7F4A_7C15_u64);
        let (mut yes, mut no) = (0, 0);
        for case in 0..20_000 {
            let mut region = String::new();
            for _ in 0..case % 12 + 1 {
                region.push_str(pieces[rng.below(pieces.len())]);
            }
            let want = call_keys_searched(region.as_bytes());
            assert_eq!(call_keys_at_quotes(region.as_bytes()), want, "{region:?}");
            assert_eq!(looks_like_call(region.as_bytes()), want, "{region:?}");
            if want { yes += 1 } else { no += 1 }
        }
        assert!(yes > 500 && no > 500, "{yes} {no}");
    }

    // The word test flags every quote, the first one first, wherever they are among
    // other bytes of any value, and none where there is none.
    #[test]
    fn quote_bytes_find_the_first_quote() {
        let mut rng = Xorshift::new(0x3C6E_F372_FE94_F82B_u64);
        for _ in 0..200_000 {
            let mut w = [0u8; 8];
            for b in &mut w {
                *b = match rng.below(4) {
                    0 => [b'"', b'\'', b'"' ^ 1, b'\'' + 1, 0x80 | b'"'][rng.below(5)],
                    _ => rng.below(256) as u8,
                };
            }
            let want = w.iter().position(|&b| b == b'"' || b == b'\'');
            let got = quote_bytes(u64::from_le_bytes(w));
            let first = (got != 0).then(|| (got.trailing_zeros() / 8) as usize);
            assert_eq!(first, want, "{w:?}");
            for (k, &b) in w.iter().enumerate() {
                if b == b'"' || b == b'\'' {
                    assert!(got & (0x80 << (8 * k)) != 0, "{w:?}");
                }
            }
        }
    }

    // An object whose first key's closing quote is not followed by `:` is one the decode
    // refuses (so skipping the decode there changes nothing), and many such regions are.
    #[test]
    fn first_keys_not_closed_by_a_colon_do_not_decode() {
        let mut refused = 0;
        for gap in ["", " ", "\n\t "] {
            for key in [
                "",
                "a",
                "name",
                "a\\\"b",
                "0]<]minimax[>[<tool_call>x{",
                "é",
            ] {
                for after in [
                    "",
                    ":",
                    " :",
                    "1",
                    " 1",
                    "}",
                    ",\"a\":1}",
                    ": 1}",
                    ":{\"x\": [1]}",
                ] {
                    let region = format!("{{{gap}\"{key}\"{after}");
                    let decoded = crate::scanner::decode_calls_prefix(&region, 128).is_some();
                    if !first_key_closed(region.as_bytes()) {
                        assert!(!decoded, "{region:?}");
                        refused += 1;
                    }
                }
            }
        }
        assert!(refused > 50, "{refused}");
    }

    // A region taken for never JSON is one the decode and its repair refuse (so skipping
    // them changes nothing); the literal words and JSON values are not taken.
    #[test]
    fn never_json_regions_do_not_decode() {
        for r in [
            r#"[get_weather(city="Paris"), f()]"#,
            "[ \n_x(1)]",
            "[$a]",
            "[nullx(1)]",
            "[Nonesuch]",
            "[abc'd': 1]",
            "[a, True]",
            "[f(x={'a': None, b: 2})]",
        ] {
            assert!(never_json(r), "{r}");
            assert!(parse_lenient(r).is_err(), "{r}");
        }
        for r in [
            "[True, None]",
            "[1]",
            "{a: 1}",
            "[\"x\"]",
            "[ true ]",
            "[]",
            "[/*c*/ f()]",
        ] {
            assert!(!never_json(r), "{r}");
        }
    }
}
