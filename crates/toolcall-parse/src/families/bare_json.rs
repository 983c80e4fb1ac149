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
                        if crate::repair::fails_again(json) {
                            break;
                        }
                        let decoded = llama::decode_scanned(json, max_depth, cx.streaming());
                        crate::repair::note_decoded(decoded.is_err());
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
            // Not after a decode that failed (`crate::repair::last_decode_failed`): the
            // scan's path decodes a valid value as well, after its walk, and a flood of
            // broken values (`x{"a": 1 {w}}`) paid a failed decode here a copy (~2,500
            // instructions of ~5,900 a 15-byte copy, 106x prose).
            if let Some((n, v)) = (first_key_closed(bytes) && !crate::repair::last_decode_failed())
                .then(|| {
                    #[cfg(test)]
                    ONE_SHOTS.set(ONE_SHOTS.get() + 1);
                    decode_calls_prefix(region, max_depth)
                })
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
                // After a value that failed, one certainly not JSON, repaired or not: no
                // decode to fail, and its error written only where a note reports it
                // (`not_json`). A flood of broken bare JSON (`</think:{"\n{w}}`) decoded
                // each region twice and wrote its error.
                let decoded = if crate::repair::fails_again(json) {
                    #[cfg(test)]
                    UNDECODED.set(UNDECODED.get() + 1);
                    Err(None)
                } else {
                    let decoded = llama::decode_scanned(json, max_depth, cx.streaming());
                    crate::repair::note_decoded(decoded.is_err());
                    decoded.map_err(Some)
                };
                let done = complete(json, decoded, cx);
                // A closed value abandoned as text with no note (it does not decode and no
                // family reads it): its verdict is one of its bytes (and the reply's start,
                // asked past it), so they are kept as a failed scan's are
                // (`FailedScans::keep_closed`, `FailedScans::repeats`): a region that starts
                // with them is abandoned so unread, and a flood of it is passed at
                // once (`Engine::pass_failed_regions`). A flood of `<start_function_call>\n{"}`
                // decoded each copy's `{"}…\n{"}` leniently (~10,000 instructions a copy,
                // 120x prose).
                let abandoned = matches!(
                    &done,
                    Advance::Text(Plain { end: 1, scanned, diagnostic: None, label: None })
                        if *scanned == n
                );
                if abandoned && !cx.at_start {
                    cx.failed_scan.keep_closed(max_depth, json.as_bytes());
                }
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

#[cfg(test)]
thread_local! {
    /// Tests: the one-shot decodes [`BareJsonReader`] tried.
    static ONE_SHOTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
thread_local! {
    /// Tests: the closed regions [`BareJsonReader`] left undecoded (`never_decodes`).
    static UNDECODED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether a bare JSON region whose scan failed after reading `scanned` (its first bytes,
/// the failing one last) is abandoned as text with no note: what [`BareJsonReader`] asks
/// of such a scan (no call's keys, no `[name(` the `pythonic` family would take).
pub(crate) fn fails_without_note(scanned: &[u8], ctx: &Ctx) -> bool {
    !looks_like_call(scanned) && pythonic_call_named(scanned, ctx).is_none()
}

/// Whether a bare JSON region closed at the end of `region` (its bytes), not at the
/// reply's start, is abandoned as text with no note, decided without decoding it: what
/// [`BareJsonReader`] does with a region that is no JSON, repaired or not
/// ([`crate::repair::never_decodes`]), that no family reads as balanced text and that
/// holds no call's keys. Asked by the engine's walk of failed regions
/// (`Engine::walk_failed_region`), as [`fails_without_note`] is of a failed scan.
pub(crate) fn closed_fails_without_note(region: &str, span: Range<usize>, ctx: &Ctx) -> bool {
    if !crate::repair::never_decodes_nor_calls(region) {
        return false;
    }
    let jcx = JsonCx {
        ctx,
        span,
        at_start: false,
    };
    !bare_text_read(region)
        || ctx
            .families
            .iter()
            .all(|f| f.classify_bare_text(region, &jcx).is_none())
}

/// Whether some family may read `region`'s bracket as balanced text
/// ([`crate::family::Family::bare_text`], asked of every family once): else none is asked
/// (each asked at every region of a flood of broken bare JSON, ~600 instructions).
fn bare_text_read(region: &str) -> bool {
    static READ: std::sync::OnceLock<crate::family::BareJson> = std::sync::OnceLock::new();
    let read = READ.get_or_init(|| {
        super::all()
            .iter()
            .fold(crate::family::BareJson::default(), |acc, f| {
                let b = f.bare_text();
                crate::family::BareJson {
                    objects: acc.objects || b.objects,
                    arrays: acc.arrays || b.arrays,
                }
            })
    });
    match region.as_bytes().first() {
        Some(b'{') => read.objects,
        Some(b'[') => read.arrays,
        _ => true,
    }
}

/// The top-level keys without which a family's [`Family::classify_json`] claims no value
/// ([`Family::json_needs`](crate::family::Family::json_needs)): an object is claimable only
/// when it holds every key of one set of `objects`; an array only when one of its elements
/// is an object holding every key of one set of `elements`. Each family declares its own
/// beside its classifier (a test offers it values outside them, which it must not claim).
#[derive(Clone, Copy)]
pub(crate) struct JsonNeeds {
    pub objects: &'static [&'static [&'static str]],
    pub elements: &'static [&'static [&'static str]],
}

impl JsonNeeds {
    /// Claims no value (a family without bare JSON).
    pub(crate) const NONE: JsonNeeds = JsonNeeds {
        objects: &[],
        elements: &[],
    };
}

/// What the reader itself reads of a value no family claims: the note of a call's shape
/// left as text ([`rejected_call_shape`]) and a fallback's label ([`fallback::label_of`]).
const OWN_NEEDS: JsonNeeds = JsonNeeds {
    objects: &[&["name", "arguments"], &["name", "parameters"]],
    elements: &[&["label"]],
};

/// Every family's [`JsonNeeds`] (and [`OWN_NEEDS`]) as bit masks over the keys they name,
/// built once from the registry: a value whose keys meet none is text to every family,
/// enabled or not.
struct Gate {
    /// The keys named, a bit each (at most 32), by length: `by_len[n]` the bits of those of
    /// `n` bytes. Arrays, not vectors: the gate lives for the process, and a heap block
    /// kept so moved the allocator's later work (`tools_envelope/100 calls` 4 % more).
    keys: [&'static [u8]; 32],
    by_len: [u32; 33],
    /// The sets of objects' and elements' needs (each once), `len` of them used.
    objects: Sets,
    elements: Sets,
}

/// Sets of keys as bit masks, each once.
struct Sets {
    masks: [u32; 32],
    len: usize,
}

impl Sets {
    fn add(&mut self, m: u32) -> Option<()> {
        if !self.get().contains(&m) {
            *self.masks.get_mut(self.len)? = m;
            self.len += 1;
        }
        Some(())
    }

    #[inline]
    fn get(&self) -> &[u32] {
        self.masks.get(..self.len).unwrap_or(&[])
    }
}

impl Gate {
    /// `None` when the families name more than 32 keys or sets, or a family needs none
    /// (claims any value): then no value is decided early.
    fn build() -> Option<Gate> {
        let mut g = Gate {
            keys: [&[]; 32],
            by_len: [0; 33],
            objects: Sets {
                masks: [0; 32],
                len: 0,
            },
            elements: Sets {
                masks: [0; 32],
                len: 0,
            },
        };
        let mut named = 0;
        let all = super::all().iter().map(|f| f.json_needs());
        for needs in std::iter::once(OWN_NEEDS).chain(all) {
            for (sets, into) in [(needs.objects, 0), (needs.elements, 1)] {
                for set in sets {
                    let mut m = 0u32;
                    for k in set.iter().map(|k| k.as_bytes()) {
                        let i = match g.keys.get(..named)?.iter().position(|&x| x == k) {
                            Some(i) => i,
                            None => {
                                *g.keys.get_mut(named)? = k;
                                *g.by_len.get_mut(k.len())? |= 1 << named;
                                named += 1;
                                named - 1
                            }
                        };
                        m |= 1 << i;
                    }
                    if m == 0 {
                        return None;
                    }
                    match into {
                        0 => g.objects.add(m)?,
                        _ => g.elements.add(m)?,
                    }
                }
            }
        }
        Some(g)
    }

    /// The bit of a key as written between its quotes (`escaped`: with a `\`, whose bytes
    /// may spell any key: every bit).
    #[inline]
    fn bit(&self, key: &[u8], escaped: bool) -> u32 {
        if escaped {
            return u32::MAX;
        }
        let mut cands = self.by_len.get(key.len()).copied().unwrap_or(0);
        while cands != 0 {
            let i = cands.trailing_zeros() as usize;
            cands &= cands - 1;
            if self.keys.get(i).is_some_and(|&k| k == key) {
                return 1 << i;
            }
        }
        0
    }

    /// Whether `keys` hold every key of one of `sets` (none when `keys` holds none: no
    /// set is empty, [`Gate::build`]).
    #[inline]
    fn meets(sets: &[u32], keys: u32) -> bool {
        keys != 0 && sets.iter().any(|&s| s & !keys == 0)
    }
}

fn gate() -> Option<&'static Gate> {
    static GATE: std::sync::OnceLock<Option<Gate>> = std::sync::OnceLock::new();
    GATE.get_or_init(Gate::build).as_ref()
}

/// The deepest a value decided by [`unclaimed_value_end`] nests.
const UNCLAIMED_MAX_DEPTH: usize = 32;

/// Where the bare JSON value at the start of `bytes` (`{` or `[`) ends, when it is strict
/// JSON (a subset: no exponent, no number past 18 digits, no `\u` escape of a surrogate,
/// nesting below `max_depth` and [`UNCLAIMED_MAX_DEPTH`]) whose top-level keys (an array's:
/// its elements' keys) meet no family's [`JsonNeeds`]: its region would decode it, offer it
/// to every family, and leave it as text whole, with no note, label or rescan charge
/// ([`BareJsonReader`]'s `complete`); the engine reads it so without opening the region.
/// `None`: not known so (not that subset, cut by the end of the bytes, or claimable; or,
/// without `keys`, an object of the top level or a top-level list's whose first key is one
/// a need names: a call's first key, read no further).
///
/// Hand-written: a flood of small values that are not calls (`{}`, `{"a":1}`, JSON Lines)
/// built a `Value` and offered it to every family per value, in a region of its own
/// (~4,300 instructions a `{}`, 555x prose); this pass reads each byte once, with no
/// allocation.
pub(crate) fn unclaimed_value_end(bytes: &[u8], max_depth: usize, keys: bool) -> Option<usize> {
    // An empty object or list holds no key: no need met (`Gate::build`).
    if let ([b'{', b'}', ..] | [b'[', b']', ..], 2..) = (bytes, max_depth) {
        return gate().map(|_| 2);
    }
    let gate = gate()?;
    if !keys && first_key(bytes).is_none_or(|(k, escaped)| gate.bit(k, escaped) != 0) {
        return None;
    }
    let mut v = Validate {
        b: bytes,
        i: 0,
        max_depth: max_depth.min(UNCLAIMED_MAX_DEPTH + 1),
        gate,
        keys,
    };
    match bytes.first()? {
        b'{' => v.object(1, gate.objects.get())?,
        _ => v.array(1, true)?,
    };
    Some(v.i)
}

/// The first key of the object `bytes` starts with (or of a list's first element) and
/// whether a `\` is in it; `None` when there is none so (another value, more than 32
/// bytes): asked before the pass, so a call's region costs it a few bytes' compares (the
/// pass's reading of `{"tools"` cost `tools_envelope/small` ~300 instructions).
fn first_key(bytes: &[u8]) -> Option<(&[u8], bool)> {
    let blanks = |mut i: usize| {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(i) {
            i += 1;
        }
        i
    };
    let mut i = blanks(1);
    if bytes.first() == Some(&b'[') {
        if bytes.get(i) != Some(&b'{') {
            return None;
        }
        i = blanks(i + 1);
    }
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let rest = bytes.get(i + 1..)?;
    let close = memchr::memchr(b'"', rest.get(..rest.len().min(33))?)?;
    let key = rest.get(..close)?;
    Some((key, key.contains(&b'\\')))
}

/// The pass of [`unclaimed_value_end`]: `i` the next byte. It stops (`None`) at the first
/// key with which the top level's keys (or an element's) meet a need: a call's region is
/// then read as it would be, after a few bytes (a whole call's arguments read first cost
/// `json/small` 20 %).
struct Validate<'a> {
    b: &'a [u8],
    i: usize,
    max_depth: usize,
    gate: &'a Gate,
    /// Whether to read on past a first key that a need names (else `None` there).
    keys: bool,
}

impl Validate<'_> {
    #[inline]
    fn blanks(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The value at `i` (after blanks), nested `depth` deep; `needs`: the sets its keys
    /// must not meet when it is an object (a top-level list's element's).
    fn value(&mut self, depth: usize, needs: &[u32]) -> Option<()> {
        self.blanks();
        match *self.b.get(self.i)? {
            b'{' => self.object(depth + 1, needs),
            b'[' => self.array(depth + 1, false),
            b'"' => self.string().map(|_| ()),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + w.len())? != w {
            return None;
        }
        self.i += w.len();
        Some(())
    }

    /// `-`? `0` or a digit run not starting with `0`, then `.` and digits: at most 18
    /// digits in all (no exponent, nothing `serde_json` could find out of range).
    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        let mut i = self.i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let lead = b.get(i).copied();
        let mut n = digits(&mut i);
        if n == 0 || (lead == Some(b'0') && n > 1) {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            let f = digits(&mut i);
            if f == 0 {
                return None;
            }
            n += f;
        }
        // An exponent, or the end of the bytes (the number may go on): not decided.
        if n > 18 || matches!(b.get(i), None | Some(b'e' | b'E')) {
            return None;
        }
        self.i = i;
        Some(())
    }

    /// The string at `i` (its quote); its bytes between the quotes and whether a `\`
    /// escape is among them.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let b = self.b;
        let from = self.i + 1;
        let mut i = from;
        let mut escaped = false;
        loop {
            match *b.get(i)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = b.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            let c = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                            // A surrogate (paired or not): left to `serde_json`.
                            if (0xD800..0xE000).contains(&c) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1F => return None,
                _ => i += 1,
            }
        }
        self.i = i + 1;
        Some((from, i, escaped))
    }

    /// The object whose `{` is at `i`, nested `depth` deep, whose keys must meet none of
    /// `needs`.
    fn object(&mut self, depth: usize, needs: &[u32]) -> Option<()> {
        if depth >= self.max_depth {
            return None;
        }
        self.i += 1;
        self.blanks();
        let mut keys = 0u32;
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            let (from, to, escaped) = self.string()?;
            if !needs.is_empty() {
                let bit = self.gate.bit(self.b.get(from..to)?, escaped);
                if (keys == 0 && bit != 0 && !self.keys) || Gate::meets(needs, keys | bit) {
                    return None;
                }
                keys |= bit;
            }
            self.blanks();
            if self.b.get(self.i) != Some(&b':') {
                return None;
            }
            self.i += 1;
            self.value(depth, &[])?;
            self.blanks();
            match *self.b.get(self.i)? {
                b',' => {
                    self.i += 1;
                    self.blanks();
                }
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// The array whose `[` is at `i`, nested `depth` deep (`top`: the value itself, whose
    /// elements' keys must meet none of the elements' needs).
    fn array(&mut self, depth: usize, top: bool) -> Option<()> {
        if depth >= self.max_depth {
            return None;
        }
        self.i += 1;
        self.blanks();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Some(());
        }
        let needs: &[u32] = if top { self.gate.elements.get() } else { &[] };
        loop {
            self.value(depth, needs)?;
            self.blanks();
            match *self.b.get(self.i)? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
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
/// The balanced region `region`, decoded as `decoded` (`parse_lenient` of it; its error
/// `None` when [`crate::repair::never_decodes`] said it fails).
fn complete(
    region: &str,
    decoded: Result<(Decoded, Vec<Repair>), Option<String>>,
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
        Err(e) => not_json(region, e, cx),
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
/// [`never_json`] or [`crate::repair::never_decodes`] said so without decoding): offered to the families that read balanced
/// text ([`crate::family::Family::classify_bare_text`]), else dropped or left as text.
fn not_json(region: &str, error: Option<String>, cx: &mut ReadCx<'_>) -> Advance {
    let end = region.len();
    let jcx = JsonCx {
        ctx: cx.ctx,
        span: cx.span(0, end),
        at_start: cx.at_start,
    };
    let claimed = bare_text_read(region)
        .then(|| {
            cx.ctx
                .families
                .iter()
                .find_map(|f| f.classify_bare_text(region, &jcx))
        })
        .flatten();
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
    keys.note_quotes(region);
    keys.looks_like_call()
}

impl CallKeys {
    /// Notes the keys at each quote of `region` ([`call_keys_at_quotes`]'s walk).
    pub(crate) fn note_quotes(&mut self, region: &[u8]) {
        let keys = self;
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
    }
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
    /// fence of ```` ```\n{"x```\n1 ````). The keys found are bits of one byte. The
    /// closing quote's byte before the prefix (a `memcmp` call): a key of a word starting
    /// so (`"a": 1`) compared its prefix at each quote (~20 instructions).
    #[inline]
    pub(crate) fn at_quote(&mut self, q: u8, rest: &[u8]) {
        let key = |k: &[u8]| rest.get(k.len()) == Some(&q) && rest.starts_with(k);
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
    use crate::family::JsonCx;
    use crate::test_rng::Xorshift;

    // Closed bare JSON and fenced JSON that no decode reads (a raw newline in a key
    // running into the next copy, a word where a value goes, a list of code, a value
    // then more) parse as they did with every region decoded (`never_decodes` off): the
    // same text, calls and diagnostics (a call's keys dropped with serde_json's message),
    // streamed alike; and the reader left such regions undecoded.
    #[test]
    fn undecodable_regions_parse_as_decoded() {
        let options = crate::ParseOptions::default();
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = ["the", "weather", "a", "get_weather", "1"];
        let calls = crate::engine::tests::call_parts;
        let (before, mut found) = (UNDECODED.get(), 0);
        for unit in [
            "</think:{\"\n",
            "x {\"a\": 1 ",
            "x {\"name\": \"f\", \"arguments\": ",
            "x [get_weather(",
            "Action:\n```json{\"a\":",
            "```json\n{\"a\": [1 ",
            "x {'a': 1,",
        ] {
            for n in [1, 2, 5, 40] {
                let flood: String = (0..n)
                    .map(|i| format!("{unit}{}}}]\n", words[i % 5]))
                    .collect();
                let text = format!("{flood}\n\n{call} after");
                let parsed = crate::parse(&text, &options);
                crate::repair::NEVER_DECODES_OFF.with(|off| off.set(true));
                let decoded = crate::parse(&text, &options);
                crate::repair::NEVER_DECODES_OFF.with(|off| off.set(false));
                assert_eq!(parsed.text, decoded.text, "{text:?}");
                assert_eq!(parsed.diagnostics, decoded.diagnostics, "{text:?}");
                assert_eq!(calls(&parsed), calls(&decoded), "{text:?}");
                found += parsed.calls.len();
                for size in [1, 7, 64] {
                    let (_, _, diagnostics) =
                        crate::engine::tests::streamed_whole(&text, &options, size);
                    assert_eq!(diagnostics, parsed.diagnostics, "{text:?} at {size}");
                }
            }
        }
        assert!(found > 20, "{found}");
        assert!(UNDECODED.get() > before + 20, "{}", UNDECODED.get());
    }

    // A reply of valid bare JSON calls is decoded once, never walked first by
    // `never_decodes` (walking each value cost a streamed reply ~7 %); one after a broken
    // value is.
    #[test]
    fn valid_values_are_not_walked_before_their_decode() {
        let options = crate::ParseOptions::default();
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let text = format!("Sure.\n{call}\n{call}\n{call}");
        let before = crate::repair::WALKS_ASKED.get();
        crate::repair::note_decoded(false);
        assert_eq!(crate::parse(&text, &options).calls.len(), 3);
        for size in [1, 7, 64] {
            crate::repair::note_decoded(false);
            let _ = crate::engine::tests::streamed_whole(&text, &options, size);
        }
        assert_eq!(crate::repair::WALKS_ASKED.get(), before, "{text:?}");
        let broken = format!("x {{\"a\": 1 2}}\nx {{\"b\": 1 2}}\n{call}");
        assert_eq!(crate::parse(&broken, &options).calls.len(), 1);
        assert!(crate::repair::WALKS_ASKED.get() > before);
    }

    // After a value that failed to decode, the one-shot decode is not tried (the scan's
    // path decides the region; a flood of broken values, `x{"a": 1 {w}}`, failed a decode
    // a copy); the next value that decodes turns it back on. Text, calls and diagnostics
    // are those with the one-shot tried at every region, one-shot and streamed.
    #[test]
    fn one_shot_decodes_are_not_tried_after_a_failure() {
        let options = crate::ParseOptions::default();
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let calls = crate::engine::tests::call_parts;
        let words = ["the", "weather", "a", "get_weather", "1"];
        // `counted`: each copy's region is read by the reader (not passed by the engine).
        for (unit, tail, counted) in [
            ("x{\"a\": 1 ", "}", true),
            ("x [1, ", "]", false),
            ("x {\"name\": \"f\", \"arguments\": ", "}", true),
            ("x {\"a\": [1, 2], \"b\": ", "}\n", true),
        ] {
            for every in [0, 1, 3] {
                let mut text = String::new();
                for i in 0..40 {
                    text.push_str(unit);
                    text.push_str(words[i % 5]);
                    text.push_str(tail);
                    // Past the bytes after a failed region where the engine's walk is
                    // asked: each copy is the reader's.
                    text.push_str(" and so on, as the model wrote it, word after word, line after line, to the end.");
                    if every > 0 && i % every == 0 {
                        text.push_str(call);
                    }
                }
                text.push_str("\n{\"a\": 1}\n");
                text.push_str(call);
                crate::repair::note_decoded(false);
                let before = ONE_SHOTS.get();
                let parsed = crate::parse(&text, &options);
                let tried = ONE_SHOTS.get() - before;
                crate::repair::ONE_SHOT_AFTER_FAILURE.with(|c| c.set(true));
                let before = ONE_SHOTS.get();
                let every_time = crate::parse(&text, &options);
                let tried_every_time = ONE_SHOTS.get() - before;
                crate::repair::ONE_SHOT_AFTER_FAILURE.with(|c| c.set(false));
                assert_eq!(parsed.text, every_time.text, "{text:?}");
                assert_eq!(parsed.diagnostics, every_time.diagnostics, "{text:?}");
                assert_eq!(calls(&parsed), calls(&every_time), "{text:?}");
                if every == 0 && counted {
                    // A copy that decodes (`"arguments": 1}`) turns it on for the next.
                    assert!(tried_every_time >= 30, "{text:?}: {tried_every_time}");
                    assert!(tried * 4 < tried_every_time, "{text:?}: {tried}");
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

    /// Objects shaped as each family's calls (and as the reader's notes and labels): the
    /// samples whose keys [`unclaimed_value_end`]'s test variants drop and rename.
    const CLAIMED_SHAPES: &[&str] = &[
        r#"{"name":"get_weather","arguments":{"city":"Paris"},"id":"c1","type":"function"}"#,
        r#"{"name":"get_weather","parameters":{"city":"Paris"},"call_id":"c1"}"#,
        r#"{"session_id":"s1","command":"get_weather","args":{"city":"Paris"},"text":"Hi."}"#,
        r#"{"tools":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#,
        r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}}]}"#,
        r#"{"role":"assistant","content":"Hi.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}"#,
        r#"{"role":"assistant","function_call":{"name":"get_weather","arguments":"{}"}}"#,
        r#"{"output":[{"type":"function_call","name":"get_weather","call_id":"c1","arguments":"{}"}]}"#,
        r#"{"type":"function_call","name":"get_weather","call_id":"c1","arguments":"{}"}"#,
        r#"{"type":"message","content":[{"type":"output_text","text":"Hi."}]}"#,
        r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]}}]}"#,
        r#"{"role":"model","parts":[{"text":"Hi."},{"functionCall":{"name":"get_weather","args":{}}}]}"#,
        r#"{"functionCall":{"name":"get_weather","args":{}},"thoughtSignature":"x"}"#,
        r#"{"content":[{"type":"text","text":"Hi."},{"type":"tool_use","id":"t1","name":"get_weather","input":{}}]}"#,
        r#"{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}"#,
        r#"{"label":"weather","tool":"get_weather"}"#,
        r#"{"text":"Hi."}"#,
    ];

    /// Every variant of `shape`'s object: each subset of its top-level keys, each kept key
    /// as it is or renamed (`x0`, `x1`, ...).
    fn variants(shape: &str) -> Vec<Value> {
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(shape) else {
            panic!("{shape}: not a JSON object");
        };
        let entries: Vec<(String, Value)> = m.into_iter().collect();
        let n = entries.len();
        let mut out = Vec::new();
        for keep in 0u32..1 << n {
            for renamed in 0u32..1 << n {
                if renamed & !keep != 0 {
                    continue;
                }
                let mut o = serde_json::Map::new();
                for (i, (k, v)) in entries.iter().enumerate() {
                    if keep & 1 << i != 0 {
                        let key = if renamed & 1 << i != 0 {
                            format!("x{i}")
                        } else {
                            k.clone()
                        };
                        o.insert(key, v.clone());
                    }
                }
                out.push(Value::Object(o));
            }
        }
        out
    }

    // A value `unclaimed_value_end` passes is one the reader's decode ends where it says
    // and every family declines (at the reply's start or not), with no note or label: for
    // every variant of each family's call shapes, alone, in a list (first, last, alone),
    // and nested one level, written compact and spaced. Many are passed, many are not.
    #[test]
    fn unclaimed_values_are_claimed_by_no_family() {
        let (plain, _) = crate::ParseOptions::default().ctx();
        let registered = {
            let mut r = toolcall_core::Registry::new();
            let schema = serde_json::json!({"type": "object", "properties": {}});
            assert!(
                r.add_spec(toolcall_core::ToolSpec::new("get_weather", "w", schema))
                    .is_ok()
            );
            crate::ParseOptions {
                tools: Some(std::sync::Arc::new(r)),
                ..crate::ParseOptions::default()
            }
            .ctx()
            .0
        };
        let (mut passed, mut refused) = (0, 0);
        for shape in CLAIMED_SHAPES {
            for v in variants(shape) {
                let other = serde_json::json!({"a": 1});
                let values = [
                    v.clone(),
                    Value::Array(vec![v.clone()]),
                    Value::Array(vec![other.clone(), v.clone()]),
                    Value::Array(vec![v.clone(), other.clone()]),
                    serde_json::json!({"x": v.clone()}),
                    serde_json::json!([[v.clone()]]),
                ];
                for value in values {
                    // Each family alone: a value that does not meet its needs it declines.
                    for f in super::super::all() {
                        if needs_met(f.json_needs(), &value) {
                            continue;
                        }
                        for ctx in [&plain, &registered] {
                            for at_start in [false, true] {
                                let cx = JsonCx {
                                    ctx,
                                    span: 0..1,
                                    at_start,
                                };
                                let mut v = value.clone();
                                assert!(
                                    f.classify_json(&mut v, &cx).is_none(),
                                    "{}: claims {value} without its needs",
                                    f.id()
                                );
                            }
                        }
                    }
                    for text in [
                        value.to_string(),
                        serde_json::to_string_pretty(&value).unwrap_or_default(),
                    ] {
                        let region = format!("{text} tail");
                        let Some(end) = unclaimed_value_end(region.as_bytes(), 128, true) else {
                            refused += 1;
                            continue;
                        };
                        passed += 1;
                        let decoded = decode_calls_prefix(&region, 128);
                        assert_eq!(decoded.as_ref().map(|d| d.0), Some(end), "{region}");
                        for ctx in [&plain, &registered] {
                            for f in super::super::all() {
                                for at_start in [false, true] {
                                    let cx = JsonCx {
                                        ctx,
                                        span: 0..end,
                                        at_start,
                                    };
                                    let mut v = value.clone();
                                    assert!(
                                        f.classify_json(&mut v, &cx).is_none(),
                                        "{}: claims {region}",
                                        f.id()
                                    );
                                }
                            }
                            assert!(rejected_call_shape(&value, ctx).is_none(), "{region}");
                        }
                        assert!(fallback::label_of(&value).is_none(), "{region}");
                    }
                }
            }
        }
        assert!(passed > 1_000 && refused > 500, "{passed} {refused}");
    }

    // The pass reads strict JSON only, as `serde_json` does: where it says a value ends
    // the decode ends there; a value it cannot read in full (cut, not JSON, out of its
    // subset) is not passed.
    #[test]
    fn unclaimed_value_ends_are_the_decodes() {
        for ok in [
            "{}",
            "[]",
            "[{}]",
            "{\"a\":1}",
            "{ \"a\" : [1, -2.5, 0, true, false, null, \"s\\n\\u00e9\"] }",
            "[{\"a\":{\"name\":\"x\",\"arguments\":{}}}]",
            "{\"name\":\"x\"}",
            "{\"a\":\"\u{e9}\u{1F600}\"}",
            "\n[\n{}\n,\n{}\n]",
        ] {
            let region = format!("{} x", ok.trim_start());
            let end = unclaimed_value_end(region.as_bytes(), 128, true);
            assert_eq!(end, decode_prefix_end(&region), "{region:?}");
            assert!(end.is_some(), "{region:?}");
        }
        for no in [
            "{",
            "{}",
            "[1,",
            "{\"a\":1",
            "{\"a\" 1}",
            "{a:1}",
            "{'a':1}",
            "[1,]",
            "{\"a\":01}",
            "{\"a\":1e5}",
            "{\"a\":1.}",
            "{\"a\":-}",
            "{\"a\":\"\\ud83d\\ude00\"}",
            "{\"a\":\"\\x\"}",
            "{\"a\":\"\t\"}",
            "{\"a\":tru}",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\":12345678901234567890}",
            "{\"name\":\"f\",\"arguments\":{}}",
            "[{\"name\":\"f\",\"parameters\":{}}]",
            "{\"n\\u0061me\":1}",
            "{\"text\":\"Hi\"}",
            "[{\"label\":\"l\"}]",
            "{\"a\":[[[[1]]]]}",
        ] {
            // `{}` cut before its close, and a value nested past the bound (`max_depth` 4).
            let region = if no == "{}" { "{" } else { no };
            assert_eq!(
                unclaimed_value_end(region.as_bytes(), 4, true),
                None,
                "{region:?}"
            );
        }
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert_eq!(unclaimed_value_end(deep.as_bytes(), 128, true), None);
        let fine = format!("{}{}", "[".repeat(30), "]".repeat(30));
        assert_eq!(unclaimed_value_end(fine.as_bytes(), 128, true), Some(60));
    }

    /// Whether `v` meets `needs`, read off the `Value` (the test's own reading of them).
    fn needs_met(needs: JsonNeeds, v: &Value) -> bool {
        let meets = |sets: &[&[&str]], m: &serde_json::Map<String, Value>| {
            sets.iter()
                .any(|set| set.iter().all(|k| m.contains_key(*k)))
        };
        match v {
            Value::Object(m) => meets(needs.objects, m),
            Value::Array(a) => a
                .iter()
                .any(|e| e.as_object().is_some_and(|m| meets(needs.elements, m))),
            _ => false,
        }
    }

    fn decode_prefix_end(region: &str) -> Option<usize> {
        let mut values = serde_json::Deserializer::from_str(region).into_iter::<Value>();
        values.next()?.ok()?;
        Some(values.byte_offset())
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
