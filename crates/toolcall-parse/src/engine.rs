//! The streaming engine every parse goes through: `parse(text)` is one `push` and `finish`.
//!
//! Text is scanned once, left to right, by a state machine whose state survives between
//! pushes. The engine keeps only what every family shares: the scan for openers, reasoning
//! blocks, fences, inline code, limits, events and buffer compaction. Bytes decided to be
//! text are emitted at once; bytes that might start markup are held back until decided.
//! Every decision depends only on the bytes seen and on whether the input has ended, never
//! on where chunks split (R-1).
//!
//! A region starts at an opener of one of the kinds families declare ([`crate::family`]):
//! a literal (`<tool_call>`, `[TOOL_CALLS]`: the table of [`crate::openers`], not looked
//! for inside fences), a literal at a line start in any case (`TOOL_CALL:`), an identifier
//! followed by `(` (the identifier is tracked byte by byte, also across the bulk skip of
//! prose), or a bare `{`/`[` that can start JSON. Whatever the kind, the region is buffered
//! (only that region) and offered to its [`RegionReader`]s in priority order through the
//! one `Mode::Region` path until one decides ([`Advance`]).
//!
//! A region decided to be text resumes the scan after the part that is text; a bare JSON
//! region that was not even balanced JSON resumes one byte after its start, so a stray `{`
//! never hides calls after it (R-7). Such rescans are bounded in total (`RESCAN_FACTOR`
//! times the input up to the bytes read, whatever the pushes): past that budget bare brackets are no longer opened (markers still
//! are), so no input costs more than linear time. A bracket region (bare JSON, `name(`)
//! opened inside one whose scan failed resumes from that scan instead of rescanning
//! ([`crate::scanner::FailedScan`]), so a flood of openers costs a few bytes each. Diagnostics are capped per kind
//! ([`DiagCap`]).
//!
//! Runs of a failing `name(` whose copies differ only in their words (a model's runaway
//! `get_weather(computer_use({"the…`, `(\nweather…`) are passed by a hand-written walk
//! ([`Engine::pass_worded_calls`]) that compares each copy's tokens with the first's and asks
//! each name and stop: read opener by opener, each copy cost ~2,500 instructions (its
//! resumed scan, its note, the text scan's dispatch), 21.7x and 23.4x prose at 128 KB.
//!
//! The text scan's bulk skip is two hand-written loops: a block scan of 64 bytes at a time
//! for prose's long runs, and after a run that ended within [`SHORT_SCAN`] bytes a byte
//! loop that goes on over a newline whose line goes on as text ([`Engine::skip_short`]):
//! code stops every few bytes, and each short run built a block scan (~270 instructions)
//! and went through the scan's byte dispatch for each newline and line's first byte
//! (`foo({#});\n` 32.8x prose -> 22x, of which the `name(` lookups are ~500 instructions
//! a line).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use memchr::memmem;
use toolcall_core::{CallId, Diagnostic, Level, Parsed, StreamEvent, ToolCall};

use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome, ReplyEnd, build};
use crate::fallback;
use crate::families::bare_json::{BareJsonReader, unclaimed_value_end};
use crate::families::call_syntax::is_name_byte;
use crate::family::{
    Advance, Family, LiveEvent, LiveName, MALFORMED, Message, NameMemo, Note, Pieces, Plain,
    ReadCx, RegionReader, Suffix, THINK, UnitCall, Wake, read_suffix,
};
use crate::openers::{Action, Found, LastFound, ReadBy, StopSet};
use crate::repair::{Failure, KnownFailure};
use crate::scanner::{
    FailedScans, Scan, ScanError, Scanner, array_start_plausible, object_start_plausible,
};

/// The most bytes [`Engine::unclaimed_gap`] reads between two values (a flood's separator;
/// longer text goes back to the scan's bulk skip).
const UNCLAIMED_GAP: usize = 64;

/// Bytes that abandoned bare JSON regions may rescan, as a multiple of the input (plus a
/// constant): beyond it, bare brackets stay text.
const RESCAN_FACTOR: usize = 8;
const RESCAN_BASE: usize = 1 << 16;
/// The most bare JSON regions of a reply abandoned as text with no note (they did not
/// close, or closed on something no decode reads: a raw control byte in a string, a bad
/// token) before bare brackets are no longer opened, as when the rescan budget runs out.
/// A count, not bytes: the rescan budget bounds each failed region's bytes, but a flood of
/// them rescans few (each fails within its unit, `x{"\n{w}}`, `[}{w}{"`), and its cost is
/// the region's fixed cost (opened, scanned, decided, or walked past: ~1,000-3,000
/// instructions a copy, 20-34x prose), which no byte charge bounds without cutting short
/// replies with a few broken values. Values that decode (a JSON dataset of thousands of
/// objects, then a call) are not counted: only what cannot be a call is. A reply with over
/// a thousand broken bare values is no model's answer; its markers are still read.
const MAX_FAILED_BARE: usize = 1024;

#[cfg(test)]
thread_local! {
    /// Tests: the count in place of [`MAX_FAILED_BARE`] (random floods reach a small one).
    static FAILED_BARE_CAP: std::cell::Cell<usize> = const { std::cell::Cell::new(MAX_FAILED_BARE) };
}

/// [`MAX_FAILED_BARE`], which tests may lower.
#[inline(always)]
fn max_failed_bare() -> usize {
    #[cfg(test)]
    return FAILED_BARE_CAP.get();
    #[cfg(not(test))]
    MAX_FAILED_BARE
}
/// The most bytes [`Engine::skip_plain`] reads one at a time (while each after the first is
/// a stop it passes) before its block scan.
const SHORT_RUN: usize = 8;
/// The most bytes [`Engine::skip_plain`] reads one at a time, after a run that ended within
/// as many, before its block scan: code (`foo(1);\n`, `if (a[1] == b) { c(); }\n`) stops
/// every few bytes at a `(`, a bracket or a newline, and each short run built a block scan
/// (~270 instructions, its keys and a 64-byte mask, against ~5 a byte read here).
const SHORT_SCAN: usize = 16;
/// The longest unit [`Engine::pass_implausible`] looks for: a bracket and the bytes up to
/// its next copy.
const MAX_UNIT: usize = 64;
/// The most stripped control tokens in a unit [`Engine::pass_implausible`] passes.
const MAX_UNIT_STRIPS: usize = 4;
/// The most stripped control tokens one [`Engine::pass_failed_walk`] passes (the walk ends
/// before the next).
const MAX_WALK_STRIPS: usize = 16;

/// The stripped control tokens of a unit ([`Engine::ordinary_strips_in`]): each one's offset
/// from the unit's start and its length, in order.
struct UnitStrips<const N: usize = MAX_UNIT_STRIPS> {
    n: usize,
    at: [(usize, usize); N],
}

impl<const N: usize> Default for UnitStrips<N> {
    fn default() -> Self {
        UnitStrips {
            n: 0,
            at: [(0, 0); N],
        }
    }
}

impl<const N: usize> UnitStrips<N> {
    /// Keeps one more token; `None` past `N`.
    fn push(&mut self, at: usize, len: usize) -> Option<()> {
        *self.at.get_mut(self.n)? = (at, len);
        self.n += 1;
        Some(())
    }

    fn all(&self) -> &[(usize, usize)] {
        self.at.get(..self.n).unwrap_or(&[])
    }
}

/// The fewest units (and the opener lookahead after them) the bytes received must hold from
/// a unit for [`Engine::pass_implausible`] or [`Engine::declined_units`] to ask about it: a
/// stream's 64-byte push holds a few 12-byte units, whose asks (a decline on the window, its
/// compares) cost as much as reading them (`<tool_call>` in 64-byte pushes 8.4 M → 14.7 M
/// instructions at 128 KB when asked at every push).
const MIN_UNITS: usize = 4;
/// Bytes after a declined opener whose unit [`Engine::declined_units`] found not repeated
/// (or an implausible bracket whose unit [`Engine::pass_implausible`] found so) over which
/// no unit is asked about: a flood whose copies differ (`<|tool_call>0`,
/// `<|tool_call>1`, …) asked at each opener in vain (the next copy searched and compared,
/// ~140 instructions a unit, 21x prose); a run of copies after such bytes is passed from
/// its first unit past them.
const NO_UNITS_SKIP: usize = 4 * MAX_UNIT;
/// The most bytes [`Engine::walk_failed_region`] scans of a region (one that fails later is
/// left to the scan): a flood's region runs into the next copy or two.
const FAILED_REGION_MAX: usize = 4 * MAX_UNIT;
/// The most brackets a region [`Engine::walk_failed_region`] scans may hold open (one that
/// fails deeper is left to the scan).
const FAILED_REGION_DEPTH: usize = 8;
/// The most bytes after an opener [`Engine::walk_declined_memo`] asks its families about.
const DECLINE_WINDOW_MAX: usize = 16;
/// The most bytes after a declined opener [`Engine::pass_short_plain`] reads byte by byte
/// (a longer run is left to the text scan's block skip).
const SHORT_PLAIN: usize = 24;
/// Dead bytes the buffer holds before it is compacted: with only the half-dead rule, a
/// stream of 1-byte pushes drained its few bytes on nearly every push (a move and every
/// offset updated, ~50 instructions a push).
const COMPACT_MIN: usize = 4096;
/// Room the buffer starts with when the first push makes it owned: a short reply's pushes
/// then append without reallocating (it grew from the first push's size by doubling, about
/// ten reallocations for a reply of a few KB: 2.6 k instructions of a 4-byte stream of
/// `gemma4/small`'s 290 bytes). A malloc's fast path takes this size.
const FIRST_ROOM: usize = 1024;
/// The most bytes between a failed `name(`'s `(` and the copy of its name that
/// [`Engine::pass_failed_calls`] passes with it (a unit longer than this is read opener
/// by opener: its `(` are few).
const MAX_FILLER: usize = 256;
/// The most `name(` in a unit [`Engine::pass_failed_calls`] passes (its notes must be
/// among the ones [`DiagCap`] remembers: the last and [`RECENT`] before it).
const MAX_UNIT_CALLS: usize = RECENT + 1;
/// The most stops in the fillers of a unit [`Engine::pass_failed_calls`] passes (each asked
/// for an opener at every copy).
const MAX_UNIT_STOPS: usize = 8;

/// The longest unit [`Engine::pass_failed_calls`] passes whose copies differ in digits.
const MAX_DIGIT_UNIT: usize = 128;
/// The most lines in a unit [`Engine::pass_text_lines`] passes (its header lines' notes
/// must be among the ones [`DiagCap`] remembers), and the longest it reads.
const MAX_UNIT_LINES: usize = RECENT + 1;
const MAX_LINE: usize = 1024;
/// Diagnostics of one kind reported before the rest are only counted.
const DIAGS_PER_KIND: usize = 32;
/// Messages [`DiagCap`] remembers the slots of besides the last one.
const RECENT: usize = 4;
/// Messages [`DiagCap::memo`] remembers the slots of.
const KIND_MEMO: usize = 64;
/// Distinct kinds tracked; later kinds share one count.
const MAX_KINDS: usize = 64;

/// [`is_name_byte`] as a table: the text scan counts a run's trailing name bytes on every
/// push (a lookup a byte instead of its compares).
static NAME_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = is_name_byte(i as u8);
        i += 1;
    }
    t
};

/// Fence info strings whose content may hold calls; other languages (python, js, ...) are
/// code samples and stay text (R-4).
const CALL_FENCES: &[&str] = &[
    "",
    "json",
    "jsonc",
    "json5",
    "tool_call",
    "tool_calls",
    "tool_code",
];

/// Fence info strings whose content is read as markup when it starts with a region opener
/// (llama.cpp's Hermes reader takes a ```` ```xml ```` fence around `<tool_call>`); any
/// other content of such a fence is a code sample.
const MARKUP_FENCES: &[&str] = &["xml"];

/// Whether a fence with this info string may hold calls (a [`CALL_FENCES`] or
/// [`MARKUP_FENCES`] name), and whether it is a markup fence. The names are lower-case
/// ASCII: compared ignoring ASCII case (no lower-cased copy), with the info string trimmed
/// only when it holds a byte other than a visible ASCII one, which `trim` leaves alone (a
/// `trim` of every info string and a closure call per list cost a flood of fences ~60
/// instructions a fence).
#[inline(always)]
fn fence_kind(info: &str) -> (bool, bool) {
    let lang = if info.bytes().all(|b| b.is_ascii_graphic()) {
        info
    } else {
        info.trim()
    };
    let mut markup = false;
    for n in MARKUP_FENCES {
        markup |= n.eq_ignore_ascii_case(lang);
    }
    if markup {
        return (true, true);
    }
    for n in CALL_FENCES {
        if n.eq_ignore_ascii_case(lang) {
            return (true, false);
        }
    }
    (false, false)
}

enum Mode {
    Text,
    InlineCode,
    Think {
        content: usize,
        close: ThinkClose,
    },
    Fence {
        start: usize,
        content: usize,
        search: usize,
        callable: bool,
        /// A [`MARKUP_FENCES`] fence.
        markup: bool,
    },
    /// A region after an opener of any kind, offered to its readers in priority order.
    Region {
        start: usize,
        reader: Box<dyn RegionReader>,
        /// The readers after it, built only when the ones before decline.
        rest: Rest,
    },
}

/// Which readers a region still has after its current one (an index into the opener's
/// family list, so that declining costs no allocation up front).
#[derive(Clone, Copy)]
enum Rest {
    None,
    /// `ctx.openers` literal opener `opener`, families from `next` on.
    Literal {
        opener: usize,
        next: usize,
    },
    /// Line-start opener `opener`, families from `next` on.
    Line {
        opener: usize,
        next: usize,
    },
}

enum Step {
    Continue,
    Wait,
}

enum Marker {
    No,
    Partial,
    Full,
}

/// Whether `t.trim()` is empty: ASCII bytes decided one by one (the blanks `char::is_whitespace`
/// holds), `trim` only from a byte past ASCII on. Asked of each piece of visible text until
/// one is not blank: a flood of stripped tokens and newlines (`<|eot|>\n`) emits a newline a
/// unit, whose `trim` cost ~45 instructions.
#[inline]
fn is_blank(t: &str) -> bool {
    for &b in t.as_bytes() {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {}
            0..0x80 => return false,
            _ => return t.trim().is_empty(),
        }
    }
    true
}

fn match_at(bytes: &[u8], pos: usize, marker: &str, ignore_case: bool) -> Marker {
    let m = marker.as_bytes();
    let rest = bytes.get(pos..).unwrap_or(&[]);
    let n = rest.len().min(m.len());
    let (a, b) = (&rest[..n], &m[..n]);
    let same = if ignore_case {
        eq_ignore_case(a, b)
    } else {
        a == b
    };
    if !same {
        Marker::No
    } else if n == m.len() {
        Marker::Full
    } else {
        Marker::Partial
    }
}

/// `a.eq_ignore_ascii_case(b)`, 8 bytes at a time where both are ASCII ([`fold_eq8`]): a
/// line opener (`TOOL_CALL:`) is compared at each line start whose first byte may begin
/// one, twice where the text scan's run stops there ([`Engine::line_plain`], then
/// [`Engine::open_at_line_start`]), and the byte-by-byte compare (both bytes folded, ~13
/// instructions a byte) cost a flood of `TOOL_CALL: x` lines ~260 instructions a line.
fn eq_ignore_case(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        let (Ok(xa), Ok(ya)) = (<[u8; 8]>::try_from(x), <[u8; 8]>::try_from(y)) else {
            return a.eq_ignore_ascii_case(b);
        };
        let (x, y) = (u64::from_le_bytes(xa), u64::from_le_bytes(ya));
        if x == y {
            continue;
        }
        let same = if (x | y) & HIGH_BITS == 0 {
            fold_eq8(x, y)
        } else {
            xa.eq_ignore_ascii_case(&ya)
        };
        if !same {
            return false;
        }
    }
    ca.remainder().eq_ignore_ascii_case(cb.remainder())
}

/// Each byte's high bit.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Whether 8 ASCII bytes `x` and `y` (high bits clear) are equal but for the case of
/// letters: they differ only in the `0x20` bit, and only in bytes that are letters (`y`'s
/// byte with that bit set is `a`..=`z`; per byte, no carry: each is under `0x80`).
#[inline]
fn fold_eq8(x: u64, y: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let d = x ^ y;
    if d & !(ONES * 0x20) != 0 {
        return false;
    }
    let lower = y | (ONES * 0x20);
    // High bit set where `lower >= b'a'` (0x61 + 0x1f = 0x80), and where `lower > b'z'`
    // (0x7b + 0x05 = 0x80).
    let from_a = lower.wrapping_add(ONES * 0x1f) & HIGH_BITS;
    let past_z = lower.wrapping_add(ONES * 0x05) & HIGH_BITS;
    let letters = from_a & !past_z;
    // `0x20` moved to the high bit: each byte that differs must be a letter.
    (d << 2) & !letters == 0
}

/// `match_at(bytes, pos, "```", false)` with the marker's length known (that call's
/// comparison of a length known only at run time called `memcmp`, ~18 instructions a
/// fence).
#[inline]
fn backticks_at(bytes: &[u8], pos: usize) -> Marker {
    match bytes.get(pos..pos + 3) {
        Some(b) if b == b"```" => Marker::Full,
        Some(_) => Marker::No,
        None if bytes
            .get(pos..)
            .is_some_and(|r| r.iter().all(|&b| b == b'`')) =>
        {
            Marker::Partial
        }
        None => Marker::No,
    }
}

/// `memmem::find`, after a `memchr` for the needle's first byte tried at its first
/// [`MARKER_TRIES`] places: streamed pushes search a few new bytes each, and a block ended
/// by a marker a few bytes on (a flood of `<think>{#}<|tool_call_begin|>`) finds it at once,
/// where building a searcher cost ~200 instructions, more than the search.
fn find_marker(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut from = 0;
    for _ in 0..MARKER_TRIES {
        let at = from + memchr::memchr(first, hay.get(from..)?)?;
        if hay.get(at..)?.starts_with(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    memmem::find(hay.get(from..)?, needle).map(|i| from + i)
}

/// How many places of its first byte [`find_marker`] compares before it builds a searcher.
const MARKER_TRIES: usize = 4;

/// The first "```" in `hay`: the backticks by `memchr`, each checked for two more (a
/// `memmem` searcher built for every fence cost ~200 instructions; a flood of ```` ```json ````
/// fences searched once per fence).
fn find_triple_backtick(hay: &[u8], near: bool) -> Option<usize> {
    // `near`: the first backtick looked for near first (a short fence's close); a later
    // search (after a "```" that does not close) by `memchr` alone (looked at near first,
    // a fence around a flood of `x```json\n` cost ~24 instructions more a "```").
    let mut from = 0;
    let mut next = if near {
        memchr_near(b'`', hay)
    } else {
        memchr::memchr(b'`', hay)
    };
    while let Some(i) = next {
        let at = from + i;
        if hay.get(at..at + 3) == Some(b"```") {
            return Some(at);
        }
        from = at + 1;
        next = hay.get(from..).and_then(|h| memchr::memchr(b'`', h));
    }
    None
}

/// `memchr`, with the first [`NEAR`] bytes looked at one by one: a fence's info string
/// ends, and a short fence's content, a few bytes on, where `memchr`'s vector setup cost
/// ~44 instructions a call (a flood of one-byte fences made two a fence).
#[inline]
fn memchr_near(needle: u8, hay: &[u8]) -> Option<usize> {
    let head = hay.get(..NEAR).unwrap_or(hay);
    if let Some(i) = head.iter().position(|&b| b == needle) {
        return Some(i);
    }
    let rest = hay.get(NEAR..)?;
    memchr::memchr(needle, rest).map(|i| NEAR + i)
}

/// How many bytes [`memchr_near`] looks at before `memchr`.
const NEAR: usize = 8;

/// How a reasoning block ends.
#[derive(Debug, Clone)]
enum ThinkClose {
    /// This marker (`</think>`, a family's, or a suffixed close with its opener's suffix).
    Exact(Cow<'static, str>),
    /// `</think>`, or one of these suffixed closes' common starts with any suffix and `>`:
    /// the chat template opened the block, so the reply never shows its suffix.
    Opened(Arc<[&'static str]>),
}

/// Where each marker a reasoning block ends at was last looked for, and what the search
/// found: a one-shot parse of a flood of blocks each ended early (by a call opener,
/// `<|content_thinking|>{"<|tool_call_begin|>{#}<`) searched the rest of the reply for the
/// block's own close, and every other marker, once a block: quadratic (413x prose at
/// 128 KB, 3.6x the time for 2x the bytes). A search resumes where the last one of the same
/// marker left off, so each marker's bytes are searched once.
#[derive(Debug, Default)]
struct MarkerMemo {
    seen: Vec<MarkerSeen>,
    /// Bytes [`find_marker`] read, through the occurrence it found (what the tests bound).
    #[cfg(test)]
    searched: usize,
    /// Calls of [`find_marker`] (what the tests bound).
    #[cfg(test)]
    searches: usize,
}

/// One marker's last search, in offsets of the whole input.
#[derive(Debug)]
struct MarkerSeen {
    marker: Box<[u8]>,
    /// Where the search started, and the end of the bytes it read.
    from: usize,
    to: usize,
    /// The first occurrence at or after `from` (before `to`).
    at: Option<usize>,
}

/// The most markers [`MarkerMemo`] keeps (a block's close, its suffixed forms' starts and
/// the call openers that end a block: a handful per parse).
const MARKER_MEMO: usize = 16;

impl MarkerMemo {
    /// [`find_marker`] in `hay`, the input from offset `start` to the bytes received.
    fn find(&mut self, start: usize, hay: &[u8], marker: &[u8]) -> Option<usize> {
        let end = start + hay.len();
        let slot = self.seen.iter().position(|s| &*s.marker == marker);
        if let Some(seen) = slot.and_then(|i| self.seen.get_mut(i))
            && seen.from <= start
        {
            match seen.at {
                Some(at) if at >= start => return Some(at - start),
                None if seen.to <= end => {
                    // No occurrence starts before the last search's tail.
                    let resume = seen
                        .to
                        .saturating_sub(marker.len().saturating_sub(1))
                        .max(start);
                    let tail = hay.get(resume - start..)?;
                    // No byte since the last search (a one-shot parse asks again at each
                    // block): the tail is too short to hold the marker, unsearched.
                    let found = if tail.len() < marker.len() {
                        None
                    } else {
                        find_marker(tail, marker).map(|i| resume + i)
                    };
                    #[cfg(test)]
                    {
                        self.searched += found.map_or(end, |at| at + marker.len()) - resume;
                        self.searches += usize::from(tail.len() >= marker.len());
                    }
                    if resume > seen.to.saturating_sub(marker.len().saturating_sub(1)) {
                        // The bytes between the last search's tail and `start` were not
                        // read: what is known starts here.
                        seen.from = start;
                    }
                    seen.to = end;
                    seen.at = found;
                    return found.map(|at| at - start);
                }
                _ => {}
            }
        }
        let found = find_marker(hay, marker).map(|i| start + i);
        #[cfg(test)]
        {
            self.searched += found.map_or(end, |at| at + marker.len()) - start;
            self.searches += 1;
        }
        if let Some(seen) = slot.and_then(|i| self.seen.get_mut(i)) {
            (seen.from, seen.to, seen.at) = (start, end, found);
        } else if self.seen.len() < MARKER_MEMO {
            self.seen.push(MarkerSeen {
                marker: marker.into(),
                from: start,
                to: end,
                at: found,
            });
        }
        found.map(|at| at - start)
    }
}

/// The first close of a reasoning block in `hay` (the input from offset `start`):
/// `Ok((offset, length))`; else `Err` with the offset from which the bytes may still start
/// one (more input decides).
fn find_think_close(
    memo: &mut MarkerMemo,
    start: usize,
    hay: &[u8],
    close: &ThinkClose,
) -> Result<(usize, usize), usize> {
    let exact = match close {
        ThinkClose::Exact(m) => m.as_bytes(),
        ThinkClose::Opened(_) => THINK.close.as_bytes(),
    };
    let mut best = memo.find(start, hay, exact).map(|i| (i, exact.len()));
    let mut hold = hay.len().saturating_sub(exact.len().saturating_sub(1));
    if let ThinkClose::Opened(starts) = close {
        for p in starts.iter().map(|p| p.as_bytes()) {
            let mut from = 0;
            while let Some(k) = hay.get(from..).and_then(|h| memo.find(start + from, h, p)) {
                let i = from + k;
                if best.is_some_and(|(b, _)| b <= i) {
                    break;
                }
                match read_suffix(hay.get(i + p.len()..).unwrap_or(&[]), false) {
                    Suffix::Len(n) => {
                        best = Some((i, p.len() + n + 1));
                        break;
                    }
                    // The suffix runs to the end of what arrived.
                    Suffix::Wait => {
                        hold = hold.min(i);
                        break;
                    }
                    Suffix::No => from = i + 1,
                }
            }
            hold = hold.min(hay.len().saturating_sub(p.len().saturating_sub(1)));
        }
    }
    best.ok_or(hold)
}

/// The wake of text whose scan waits on the first bytes of the opener seen last
/// (`Engine::last_opener`, held from `wake_held`): a push after which they still are a proper
/// prefix of it is only appended, as a push inside a waiting region is
/// ([`Engine::append_quiet`]). Such a push would be read to no effect: the scan would stop at
/// the same byte and wait again ([`crate::openers::Openers::at`] waits while the bytes are
/// a proper prefix of an opener), with no text, event or state change (~300 instructions
/// such a push cost, about two a call at 4 bytes after a reply's first: `bench_profile
/// "gemma4/100 calls" stream4`). The engine clears it whenever it scans (`run`).
static OPENER_HOLD: Wake = Wake::holding_opener();

/// Whether `held` is a proper prefix of `tag`: a few bytes compared in a loop (a slice
/// comparison calls `memcmp`, ~20 instructions more on each wait of a reply's openers).
#[inline]
fn proper_prefix(held: &[u8], tag: &str) -> bool {
    held.len() < tag.len() && held.iter().zip(tag.as_bytes()).all(|(a, b)| a == b)
}

/// Largest char boundary ≤ `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `found {format} call to {name:?}` for a format and a name that need no escaping (the
/// debug quoting of such a name is its text between quotes), without the formatter.
fn found_message(format: &str, name: &str) -> String {
    let mut message = String::with_capacity(18 + format.len() + name.len());
    for piece in ["found ", format, " call to \"", name, "\""] {
        message.push_str(piece);
    }
    message
}

/// Whether a name or format needs no escaping in a found-call note (and its kind is
/// known from the format alone): at most `max` bytes of letters, digits, `_-.:`. Asked of
/// every found call's name: one table lookup a byte (the five comparisons a byte showed in
/// the profile of many-call replies).
fn plain(s: &str, max: usize) -> bool {
    const PLAIN: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':');
            b += 1;
        }
        t
    };
    s.len() <= max && s.bytes().all(|b| PLAIN[usize::from(b)])
}

/// A call announced while its region streams (`CallStarted` sent).
#[derive(Debug)]
struct Announced {
    index: usize,
    call_id: CallId,
    name: LiveName,
}

/// Caps diagnostics per kind (the message with quoted parts and numbers blanked), then
/// counts the rest for one summary at the end.
/// A kind [`DiagCap`] counts: worked out from a message, or the kind of a plain format's
/// found-call notes kept as the format (its text is compared piece by piece, never
/// written: a one-shot parse whose only notes are found calls makes no kind string).
#[derive(Debug)]
enum Kind {
    Text(String),
    Found(&'static str),
}

impl Kind {
    /// Whether two kinds are the same text.
    fn same(&self, other: &Kind) -> bool {
        match (self, other) {
            (Kind::Text(a), Kind::Text(b)) => a == b,
            (Kind::Text(k), Kind::Found(f)) | (Kind::Found(f), Kind::Text(k)) => {
                found_kind_is(f, k)
            }
            (Kind::Found(f), Kind::Found(g)) => {
                f == g || {
                    let mut k = String::from("i");
                    DiagCap::found_kind_into(g, &mut k);
                    found_kind_is(f, &k)
                }
            }
        }
    }
}

/// Whether the pieces `p` (offsets into `region`) write what the pieces `q` of the last
/// note (offsets into `bytes`, its region bytes' copy) wrote: the same static texts (by
/// address, else by text), region bytes and scan error.
fn same_pieces(p: &Pieces, region: &str, q: &Pieces, bytes: &str) -> bool {
    let same = |a: &str, b: &str| std::ptr::eq(a, b) || a == b;
    same(p.head, q.head)
        && same(p.tail, q.tail)
        && p.error == q.error
        && region.get(p.slice.clone()) == bytes.get(q.slice.clone())
}

/// Whether `kind` is the kind of the found-call notes of `format` (`i`, then what
/// [`DiagCap::found_kind_into`] writes), compared without writing it.
fn found_kind_is(format: &str, kind: &str) -> bool {
    let Some(rest) = kind
        .strip_prefix("ifound ")
        .and_then(|r| r.strip_suffix(" call to \"\""))
    else {
        return false;
    };
    let mut rest = rest.as_bytes();
    // The last byte written ("found " ends with a space).
    let mut last = b' ';
    for b in format.bytes() {
        let want = if !b.is_ascii_digit() {
            b
        } else if last != b'#' {
            b'#'
        } else {
            continue;
        };
        match rest.split_first() {
            Some((&c, more)) if c == want => rest = more,
            _ => return false,
        }
        last = want;
    }
    rest.is_empty()
}

/// [`DiagCap::chars_kind_into`] of a message as it is written (after the level's tag, one
/// byte): it stops the write (`Err`) once it has read all the kind depends on.
struct KindWriter {
    kind: String,
    quoted: bool,
    chars: usize,
}

impl std::fmt::Write for KindWriter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let mut rest = s;
        while !rest.is_empty() {
            if self.chars >= 200 || self.kind.len().saturating_sub(1) >= 60 {
                return Err(std::fmt::Error);
            }
            // Runs at once, not a character at a time (a push each cost ~25 instructions,
            // ~2,700 a note): quoted text, skipped to its closing quote (its characters
            // counted), and an ASCII run of plain bytes (no quote, no digit), as many as the
            // kind and the 200 characters have room for (a byte a character).
            let b = rest.as_bytes();
            let chars_room = 200 - self.chars;
            if self.quoted {
                let end = memchr::memchr(b'"', b).unwrap_or(b.len());
                let skipped = rest.get(..end).unwrap_or("");
                let n = if skipped.is_ascii() {
                    skipped.len()
                } else {
                    skipped.chars().count()
                };
                if n >= chars_room {
                    self.chars = 200;
                    return Err(std::fmt::Error);
                }
                self.chars += n;
                rest = rest.get(end..).unwrap_or("");
                if end > 0 {
                    continue;
                }
            } else {
                let room = chars_room.min(61 - self.kind.len());
                let look = b.get(..room).unwrap_or(b);
                let run = look
                    .iter()
                    .position(|&c| !c.is_ascii() || c == b'"' || c.is_ascii_digit())
                    .unwrap_or(look.len());
                if run > 0 {
                    self.kind.push_str(rest.get(..run).unwrap_or(""));
                    self.chars += run;
                    rest = rest.get(run..).unwrap_or("");
                    continue;
                }
            }
            let mut chars = rest.chars();
            let Some(c) = chars.next() else {
                break;
            };
            rest = chars.as_str();
            self.chars += 1;
            match c {
                '"' => {
                    self.quoted = !self.quoted;
                    self.kind.push('"');
                }
                _ if self.quoted => {}
                '0'..='9' => {
                    if !self.kind.ends_with('#') {
                        self.kind.push('#');
                    }
                }
                c => self.kind.push(c),
            }
        }
        Ok(())
    }
}

/// The pieces of the last note [`DiagCap`] admitted or counted (see its `last_pieces`).
#[derive(Debug)]
struct LastPieces {
    pieces: Pieces,
    bytes: String,
    valid: bool,
}

#[derive(Debug, Default)]
struct DiagCap {
    kinds: Vec<(Kind, usize)>,
    suppressed: usize,
    /// The kind being looked up (reused: one allocation per parse, not per diagnostic).
    scratch: String,
    /// The last message admitted or counted, with its level and kind slot: a run of one
    /// message (the same failure at every opener of a flood) skips working out its kind.
    last: Option<(Level, String, usize)>,
    /// The [`RECENT`] messages before `last` that differ from it, with their levels and
    /// slots (oldest replaced first, at `recent_next`): a flood whose openers alternate
    /// between a few notes (`get_weather(computer_use(`, a `name(` and a call inside it
    /// that closes) works out each kind once, not at every note (~2,000 instructions each
    /// for the kind's walk, half of such a flood's cost).
    recent: Vec<(Level, String, usize)>,
    recent_next: usize,
    /// Messages whose slots were worked out, one in each of [`KIND_MEMO`] entries picked
    /// by a hash of the message (its slot never changes, see `recent_slot`): a flood whose
    /// notes are more messages in turn than `recent` holds (closed calls of a few words,
    /// `get_weather({w})` after another family's opener) worked out a kind at each
    /// (~1,100 instructions a note).
    memo: Vec<(Level, String, usize)>,
    /// Which of a message's two entries in `memo` was replaced last.
    memo_flip: bool,
    /// The buffer a note's pieces are written into before they are looked up (reused).
    scratch_message: String,
    /// The pieces of the last message when it was a note's ([`DiagCap::admit_pieces`]),
    /// its slice indexing the copy of the region bytes beside them; `valid` false once a
    /// written message came after. Boxed (made once, at the first such note): every engine
    /// carries the cap, and a fence's sub-engine is made per fence (a larger engine cost a
    /// flood of fences ~110 instructions each).
    last_pieces: Option<Box<LastPieces>>,
    /// The format of the last "found … call" info and its kind's slot: every found call of
    /// a format with a plain name has one kind, worked out once (a built-in format's name,
    /// not a copy).
    found: Option<(&'static str, usize)>,
    /// The failure whose [`MALFORMED`] message is `last` (at error level), while it is:
    /// a run of the same broken block is counted without writing its message (~250
    /// instructions a block of a flood of `Action:\n```json{"`). Cleared by every other
    /// message admitted or counted.
    last_known: Option<KnownFailure>,
    /// Error notes counted, reported or not, and call header lines left as text with a
    /// note ([`Engine::header_text`]): a reply's failed call attempts, which
    /// [`crate::Limits::max_failed_calls`] bounds (see [`Engine::stop_after_failures`]).
    errors: usize,
    /// Whether the reply stopped on that bound (its error written once, by whichever
    /// engine, the reply's or a fence's, stopped first).
    stopped: bool,
}

impl DiagCap {
    /// Appends the kind of `message` (or of its next piece) to `k`, whose kind part
    /// starts at `base`.
    fn kind_into(message: &str, k: &mut String, base: usize) {
        if message.is_ascii() {
            Self::ascii_kind_into(message.as_bytes(), k, base);
        } else {
            Self::chars_kind_into(message, k, base);
        }
    }

    /// [`DiagCap::kind_into`] character by character: digits folded to one `#`, quoted
    /// text dropped, at most 60 bytes of kind (what `ascii_kind_into` does by runs).
    fn chars_kind_into(message: &str, k: &mut String, base: usize) {
        let mut quoted = false;
        for c in message.chars().take(200) {
            match c {
                '"' => {
                    quoted = !quoted;
                    k.push('"');
                }
                _ if quoted => {}
                '0'..='9' => {
                    if !k.ends_with('#') {
                        k.push('#');
                    }
                }
                c => k.push(c),
            }
            if k.len().saturating_sub(base) >= 60 {
                break;
            }
        }
    }

    /// [`DiagCap::kind_into`] of an ASCII message (each character a byte), its runs of
    /// plain bytes copied at once, not character by character: a flood of broken blocks
    /// whose messages differ in a column number (`Action: ```json{"` with a word a copy)
    /// worked out a kind at most notes, ~1,700 instructions each.
    fn ascii_kind_into(message: &[u8], k: &mut String, base: usize) {
        let m = message.get(..message.len().min(200)).unwrap_or(message);
        let mut quoted = false;
        let mut i = 0;
        while let Some(&c) = m.get(i) {
            match c {
                b'"' => {
                    quoted = !quoted;
                    k.push('"');
                    i += 1;
                }
                _ if quoted => {
                    // Nothing is written inside quotes: on to the closing one.
                    i += m
                        .get(i..)
                        .and_then(|r| r.iter().position(|&d| d == b'"'))
                        .unwrap_or(m.len() - i);
                    continue;
                }
                b'0'..=b'9' => {
                    if !k.ends_with('#') {
                        k.push('#');
                    }
                    i += 1;
                }
                _ => {
                    // The plain bytes up to the next quote or digit, at most what fills
                    // the kind (at least one byte, as the walk writes one before it stops).
                    let run = m
                        .get(i..)
                        .and_then(|r| r.iter().position(|&d| d == b'"' || d.is_ascii_digit()))
                        .unwrap_or(m.len() - i);
                    let room = 60usize.saturating_sub(k.len().saturating_sub(base)).max(1);
                    let n = run.min(room);
                    // ASCII bytes: each a character.
                    k.push_str(std::str::from_utf8(m.get(i..i + n).unwrap_or(&[])).unwrap_or(""));
                    i += n;
                }
            }
            if k.len().saturating_sub(base) >= 60 {
                break;
            }
        }
    }

    /// The kind of the "found {format} call to \"NAME\"" notes of a plain format (see
    /// [`plain`]), as [`DiagCap::kind_into`] gives it for the whole message, without its
    /// walk: the pieces hold no quote but the name's, the format only ASCII, and the
    /// message's kind stays under the 60-byte cap (a plain format has at most 32 bytes).
    fn found_kind_into(format: &str, k: &mut String) {
        k.push_str("found ");
        for b in format.bytes() {
            if !b.is_ascii_digit() {
                k.push(char::from(b));
            } else if !k.ends_with('#') {
                k.push('#');
            }
        }
        k.push_str(" call to \"\"");
    }

    /// The slot of the "found {format} call to \"NAME\"" notes of a plain format and name
    /// (their kind blanks the quoted name). A slot's kind never changes once given, so the
    /// slot found for a format serves every later call of it.
    fn found_slot(&mut self, format: &'static str) -> usize {
        if let Some((f, slot)) = self.found
            && f == format
        {
            return slot;
        }
        let slot = self.slot(Kind::Found(format));
        self.found = Some((format, slot));
        slot
    }

    /// Whether to report this diagnostic.
    fn admit(&mut self, d: &Diagnostic) -> bool {
        self.admit_text(d.level, &d.message)
    }

    /// [`DiagCap::admit_text`] of an error whose message is `text`, its slot `slot` known
    /// ([`Message::Kept`]): counted there, and kept as the last message as the cap keeps
    /// any (the passes that ask whether the last note is dropped see it), but for its kind
    /// worked out again or its memo entry looked up (~200 instructions a note).
    fn admit_known(&mut self, text: &str, slot: usize) -> bool {
        self.last_known = None;
        if let Some(last) = &mut self.last_pieces {
            last.valid = false;
        }
        let level = Level::Error;
        let is_last = self
            .last
            .as_ref()
            .is_some_and(|(l, m, _)| *l == level && m == text);
        if !is_last && self.recent_slot(level, text).is_none() {
            let mut message = self.retire_last();
            message.push_str(text);
            self.last = Some((level, message, slot));
        }
        self.count(slot, level)
    }

    /// Whether the kind in `slot` has had its reported share (a note of it is dropped).
    fn is_full(&self, slot: usize) -> bool {
        self.kinds
            .get(slot)
            .is_some_and(|(_, n)| *n >= DIAGS_PER_KIND)
    }

    /// Counts a note of the full kind in `slot` ([`DiagCap::is_full`]), dropped, as
    /// [`DiagCap::admit_text`] counts it, its message not kept as the last (a cache).
    fn count_dropped_note(&mut self, slot: usize) {
        self.last_known = None;
        if let Some(last) = &mut self.last_pieces {
            last.valid = false;
        }
        self.count(slot, Level::Error);
    }

    /// The slot of the message `write` writes at `level`, from its kind alone: the writer
    /// works the kind out as it is written and stops the message there
    /// ([`KindWriter`]: the rest is never written).
    fn written_slot(
        &mut self,
        level: Level,
        write: impl FnOnce(&mut KindWriter) -> std::fmt::Result,
    ) -> usize {
        let mut w = KindWriter {
            kind: self.start_kind(level),
            quoted: false,
            chars: 0,
        };
        // `Err` once the kind is whole.
        let _ = write(&mut w);
        self.slot(Kind::Text(w.kind))
    }

    /// Whether to report a diagnostic at `level` with this message.
    fn admit_text(&mut self, level: Level, text: &str) -> bool {
        self.admit_text_memo(level, text, true)
    }

    /// [`DiagCap::admit_text`], its `memo` asked only with `memo` (not for a broken
    /// block's message, whose position differs at most copies of a flood: hashed and kept
    /// at each, `Action: ```json{"` cost 1.2 % more).
    fn admit_text_memo(&mut self, level: Level, text: &str, memo: bool) -> bool {
        self.last_known = None;
        // The last message is no longer a note's pieces (if it was).
        if let Some(last) = &mut self.last_pieces {
            last.valid = false;
        }
        if let Some((l, message, slot)) = &self.last
            && *l == level
            && message == text
        {
            let slot = *slot;
            return self.count(slot, level);
        }
        if let Some(slot) = self.recent_slot(level, text) {
            return self.count(slot, level);
        }
        // The message's two entries in the memo (two, so that a few messages whose first
        // entries are the same are all kept).
        let (a, b) = match memo {
            true => crate::family::NameFilter::bits_of(text.as_bytes()),
            false => (usize::MAX, usize::MAX),
        };
        let (a, b) = (a % KIND_MEMO, b % KIND_MEMO);
        let known = [a, b]
            .into_iter()
            .filter_map(|i| self.memo.get(i))
            .find(|(l, m, slot)| memo && *slot != usize::MAX && *l == level && m == text);
        let slot = match known {
            Some(&(_, _, slot)) => slot,
            None => {
                let mut kind = self.start_kind(level);
                Self::kind_into(text, &mut kind, 1);
                let slot = self.slot(Kind::Text(kind));
                if !memo {
                    slot
                } else {
                    if self.memo.is_empty() {
                        self.memo
                            .resize_with(KIND_MEMO, || (level, String::new(), usize::MAX));
                    }
                    // The first free entry, else the one not replaced last.
                    let free = |i: usize| self.memo.get(i).is_some_and(|e| e.2 == usize::MAX);
                    let at = if free(a) {
                        a
                    } else if free(b) {
                        b
                    } else {
                        self.memo_flip = !self.memo_flip;
                        if self.memo_flip { a } else { b }
                    };
                    if let Some(e) = self.memo.get_mut(at) {
                        e.0 = level;
                        e.1.clear();
                        e.1.push_str(text);
                        e.2 = slot;
                    }
                    slot
                }
            }
        };
        let mut message = self.retire_last();
        message.push_str(text);
        self.last = Some((level, message, slot));
        self.count(slot, level)
    }

    /// Whether to report an error whose message is [`MALFORMED`] then `failure`'s, as
    /// [`DiagCap::admit`] decides for the written message: the message is written into the
    /// reused scratch buffer, so one the cap drops is never allocated.
    fn admit_malformed(&mut self, failure: &Failure) -> bool {
        if let (Failure::Known(k), Some(last), Some((_, _, slot))) =
            (failure, self.last_known, &self.last)
            && *k == last
        {
            let slot = *slot;
            return self.count(slot, Level::Error);
        }
        let mut message = std::mem::take(&mut self.scratch_message);
        message.clear();
        failure.write_after(MALFORMED, &mut message);
        let admitted = self.admit_text_memo(Level::Error, &message, false);
        self.scratch_message = message;
        if let Failure::Known(k) = failure {
            self.last_known = Some(*k);
        }
        admitted
    }

    /// When `message` (at `level`) is one of the [`DiagCap::recent`] messages: its slot,
    /// that entry swapped with `last` (which it then is). A message's slot never changes
    /// (a kind keeps its slot, and once the slots are full every new kind shares the
    /// last), so a remembered one is what working the kind out again gives.
    fn recent_slot(&mut self, level: Level, message: &str) -> Option<usize> {
        let i = self
            .recent
            .iter()
            .position(|(l, m, _)| *l == level && m == message)?;
        let entry = self.recent.get_mut(i)?;
        let slot = entry.2;
        match &mut self.last {
            Some(last) => std::mem::swap(last, entry),
            None => self.last = Some(self.recent.swap_remove(i)),
        }
        Some(slot)
    }

    /// Moves `last` (if any) into [`DiagCap::recent`], and returns an empty buffer for the
    /// next last message (the one it displaced, when the list was full).
    fn retire_last(&mut self) -> String {
        let Some(last) = self.last.take() else {
            return String::new();
        };
        let mut freed = if self.recent.len() < RECENT {
            self.recent.push(last);
            String::new()
        } else {
            let at = self.recent_next % RECENT;
            self.recent_next = at + 1;
            match self.recent.get_mut(at) {
                Some(old) => std::mem::replace(old, last).1,
                None => String::new(),
            }
        };
        freed.clear();
        freed
    }

    /// Whether to report a note whose message is `pieces` (offsets into `region`), as
    /// [`DiagCap::admit`] decides for the written message: a run of one message is
    /// recognised by comparing the pieces with the last note's pieces (a static text by
    /// address, a scan error by value, region bytes with their copy), so a note the cap
    /// drops is never written; a new message is written once, into the last message's
    /// buffer. (Pieces that differ but write the same message take the long way to the
    /// same slot: the shortcut only skips working the kind out again.)
    fn admit_pieces(&mut self, level: Level, pieces: &Pieces, region: &str) -> bool {
        self.last_known = None;
        if let (Some((l, _, slot)), Some(last)) = (&self.last, &self.last_pieces)
            && last.valid
            && *l == level
            && same_pieces(pieces, region, &last.pieces, &last.bytes)
        {
            let slot = *slot;
            return self.count(slot, level);
        }
        let mut message = std::mem::take(&mut self.scratch_message);
        message.clear();
        pieces.write(region, &mut message);
        let slot = match self.recent_slot(level, &message) {
            Some(slot) => {
                self.scratch_message = message;
                slot
            }
            None => {
                let mut kind = self.start_kind(level);
                Self::kind_into(&message, &mut kind, 1);
                let slot = self.slot(Kind::Text(kind));
                let mut buf = self.retire_last();
                buf.push_str(&message);
                self.scratch_message = message;
                self.last = Some((level, buf, slot));
                slot
            }
        };
        // The pieces kept for the next note, region bytes copied (the region may be gone).
        let last = self.last_pieces.get_or_insert_with(|| {
            Box::new(LastPieces {
                pieces: pieces.clone(),
                bytes: String::new(),
                valid: true,
            })
        });
        last.bytes.clear();
        last.bytes
            .push_str(region.get(pieces.slice.clone()).unwrap_or(""));
        last.pieces = Pieces {
            slice: 0..last.bytes.len(),
            ..pieces.clone()
        };
        last.valid = true;
        self.count(slot, level)
    }

    /// Whether a note repeating the last one admitted or counted (a note's pieces, no
    /// written message since) is dropped: its kind has had its reported share.
    fn repeat_dropped(&self) -> bool {
        match (&self.last, &self.last_pieces) {
            (Some((_, _, slot)), Some(last)) => {
                last.valid
                    && self
                        .kinds
                        .get(*slot)
                        .is_some_and(|(_, n)| *n >= DIAGS_PER_KIND)
            }
            _ => false,
        }
    }

    /// Whether a note repeating the last one admitted or counted (a written message) is
    /// dropped: its kind has had its reported share.
    fn last_dropped(&self) -> bool {
        self.last.as_ref().is_some_and(|(_, _, slot)| {
            self.kinds
                .get(*slot)
                .is_some_and(|(_, n)| *n >= DIAGS_PER_KIND)
        })
    }

    /// The slot of a note (`level`, `pieces` of `region`) whose message is the last or a
    /// recent one ([`DiagCap::recent`]) and whose kind has had its reported share (the
    /// note would only be counted): `None` otherwise.
    fn dropped_slot(&mut self, level: Level, pieces: &Pieces, region: &str) -> Option<usize> {
        let mut message = std::mem::take(&mut self.scratch_message);
        message.clear();
        pieces.write(region, &mut message);
        let slot = self.dropped_text_slot(level, &message);
        self.scratch_message = message;
        slot
    }

    /// [`DiagCap::dropped_slot`] for a written note's `message`.
    fn dropped_text_slot(&self, level: Level, message: &str) -> Option<usize> {
        let slot = self
            .last
            .iter()
            .chain(&self.recent)
            .find(|(l, m, _)| *l == level && m == message)
            .map(|e| e.2);
        slot.filter(|&s| self.kinds.get(s).is_some_and(|(_, n)| *n >= DIAGS_PER_KIND))
    }

    /// Counts `m` notes of the kind in `slot` at `level`, each dropped
    /// ([`DiagCap::dropped_slot`]).
    fn count_dropped(&mut self, slot: usize, m: usize, level: Level) {
        if level == Level::Error {
            self.errors += m;
        }
        if let Some((_, n)) = self.kinds.get_mut(slot) {
            *n += m;
            self.suppressed += m;
        }
    }

    /// A kind buffer (the reused scratch) holding the level's tag.
    fn start_kind(&mut self, level: Level) -> String {
        let mut kind = std::mem::take(&mut self.scratch);
        kind.clear();
        // A kind holds at most 64 bytes (a level tag, 60 of kind and the last character
        // pushed): one allocation, not one per doubling.
        kind.reserve(64);
        kind.push(match level {
            Level::Info => 'i',
            Level::Warning => 'w',
            Level::Error => 'e',
        });
        kind
    }

    /// Whether to report a diagnostic of this kind (see [`DiagCap::admit`]).
    #[cfg(test)]
    fn admit_kind(&mut self, kind: String) -> bool {
        let slot = self.slot(Kind::Text(kind));
        self.count(slot, Level::Info)
    }

    /// The slot counting `kind` (a new one while there is room, else the last).
    fn slot(&mut self, kind: Kind) -> usize {
        let found = self.kinds.iter().position(|(k, _)| k.same(&kind));
        match found {
            Some(i) => {
                self.keep_scratch(kind);
                i
            }
            None if self.kinds.len() < MAX_KINDS => {
                self.kinds.push((kind, 0));
                self.kinds.len() - 1
            }
            None => {
                self.keep_scratch(kind);
                self.kinds.len().saturating_sub(1)
            }
        }
    }

    /// Keeps a kind's text not stored in a slot as the next kind's buffer.
    fn keep_scratch(&mut self, kind: Kind) {
        if let Kind::Text(k) = kind {
            self.scratch = k;
        }
    }

    /// Counts one diagnostic in `slot`: whether it is still reported.
    fn count(&mut self, slot: usize, level: Level) -> bool {
        if level == Level::Error {
            self.errors += 1;
        }
        let Some((_, n)) = self.kinds.get_mut(slot) else {
            return true;
        };
        *n += 1;
        if *n > DIAGS_PER_KIND {
            self.suppressed += 1;
            return false;
        }
        true
    }
}

/// A count written through `&self` ([`Engine`]'s `failed_bare`): an atomic, so that the
/// engine stays `Sync`, read and written relaxed (plain loads and stores; one thread uses
/// an engine at a time).
#[derive(Debug, Default)]
struct Count(std::sync::atomic::AtomicUsize);

impl Count {
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn set(&self, n: usize) {
        self.0.store(n, std::sync::atomic::Ordering::Relaxed);
    }
}

/// An event of [`crate::StreamParser::push_events`], its text a range of [`Records::text`]
/// and its call or diagnostic the next of [`Records::calls`] or [`Records::diagnostics`].
/// Small (a `ToolCall` in place made every record as large as a call, moved at each step).
#[derive(Debug)]
pub(crate) enum Record {
    Text(Range<usize>),
    Reasoning(Range<usize>),
    CallStarted {
        index: usize,
        call_id: CallId,
        name: Range<usize>,
    },
    ArgumentsDelta {
        index: usize,
        fragment: Range<usize>,
    },
    CallFinished {
        index: usize,
    },
    Diagnostic,
}

/// The events of one [`crate::StreamParser::push_events`]: the records, one text they share,
/// and the calls and diagnostics they hand out, all kept from push to push (cleared, their
/// room kept), so that a push's text, reasoning, names and argument fragments cost no
/// allocation once they have grown.
#[derive(Debug, Default)]
pub(crate) struct Records {
    pub(crate) text: String,
    pub(crate) list: Vec<Record>,
    /// The finished calls, in order until [`Records::events`] reverses them (each is then
    /// popped, by move, as its record is read).
    pub(crate) calls: Vec<ToolCall>,
    /// The diagnostics, as `calls`.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl Records {
    /// `s` appended to the shared text, and where it lies there.
    #[inline]
    pub(crate) fn keep(&mut self, s: &str) -> Range<usize> {
        let from = self.text.len();
        self.text.push_str(s);
        from..self.text.len()
    }

    pub(crate) fn finished(&mut self, index: usize, call: ToolCall) {
        self.calls.push(call);
        self.list.push(Record::CallFinished { index });
    }

    pub(crate) fn diagnostic(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
        self.list.push(Record::Diagnostic);
    }

    /// An owned event, recorded (its text copied).
    pub(crate) fn push_owned(&mut self, e: StreamEvent) {
        let r = match e {
            StreamEvent::Text { text } => Record::Text(self.keep(&text)),
            StreamEvent::Reasoning { text } => Record::Reasoning(self.keep(&text)),
            StreamEvent::CallStarted {
                index,
                call_id,
                name,
            } => Record::CallStarted {
                index,
                call_id,
                name: self.keep(&name),
            },
            StreamEvent::ArgumentsDelta { index, fragment } => Record::ArgumentsDelta {
                index,
                fragment: self.keep(&fragment),
            },
            StreamEvent::CallFinished { index, call } => return self.finished(index, call),
            StreamEvent::Diagnostic { diagnostic } => return self.diagnostic(diagnostic),
        };
        self.list.push(r);
    }

    /// Forgets the last push's events (calls and diagnostics not taken are dropped),
    /// keeping the room. One test when there were none (most pushes).
    #[inline]
    pub(crate) fn clear(&mut self) {
        if !self.list.is_empty() {
            self.clear_now();
        }
    }

    #[inline(never)]
    fn clear_now(&mut self) {
        self.text.clear();
        self.list.clear();
        self.calls.clear();
        self.diagnostics.clear();
    }

    /// How many finished calls are recorded.
    pub(crate) fn finished_calls(&self) -> usize {
        self.calls.len()
    }

    /// The recorded events, to read in order.
    #[inline]
    pub(crate) fn events(&mut self) -> crate::Events<'_> {
        if self.calls.len() > 1 {
            self.calls.reverse();
        }
        if self.diagnostics.len() > 1 {
            self.diagnostics.reverse();
        }
        crate::Events {
            list: self.list.iter(),
            text: &self.text,
            calls: &mut self.calls,
            diagnostics: &mut self.diagnostics,
        }
    }
}

/// What [`Engine::append_quiet`] did with a push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// Nothing: the push is fed the general way.
    No,
    /// Appended, and it wakes no waiting reader: nothing more to do.
    Done,
    /// Appended, and the waiting reader reads it ([`Engine::read_pushed_into`]).
    Read,
}

pub(crate) struct Engine<'a> {
    ctx: Arc<Ctx>,
    nested: bool,
    /// Nobody reads `CallStarted`/`ArgumentsDelta` for calls finished whole (one-shot
    /// `parse` and a fence's sub-engine): skip re-serialising their arguments.
    pub(crate) quiet: bool,
    /// The bytes not yet compacted away: the caller's text itself while a whole text is
    /// read (one-shot [`crate::parse`] and a fence's sub-engine), no copy of it; owned
    /// once a push appends to it.
    buf: Cow<'a, str>,
    base: usize,
    pos: usize,
    emit_from: usize,
    mode: Mode,
    line_start: bool,
    ident_start: Option<usize>,
    /// A region opened here was declined by every reader: its first byte is ordinary text.
    declined: Option<usize>,
    /// The opener the text scan found where it stopped (`plain_stop`'s walk), as (offset
    /// in the whole input, opener): `step_text` takes it there instead of walking the trie
    /// again (an opener flood walked each opener twice).
    scan_found: Option<(usize, usize)>,
    /// The last run [`Engine::skip_plain`] scanned ended within [`SHORT_SCAN`] bytes: the
    /// next one is read byte by byte first (runs of code are short, runs of prose long).
    /// A guess only: either reading ends the run at the same byte.
    short_runs: bool,
    /// The opener `plain_stop`'s walk found last, tried first at its next stop
    /// ([`crate::openers::Openers::none_at_after`]; any value at first).
    last_found: LastFound,
    /// The opener `step_text`'s own lookup found last (where no scan walked: at a line
    /// start, after a declined opener), tried first at its next one
    /// ([`crate::openers::Openers::at_after`]; any value at first). Not `last_found`: the
    /// openers the scan finds inside a line (`<|channel|>` of harmony's header) would fail
    /// the compare at each unit of a flood of the header.
    step_found: LastFound,
    received: usize,
    /// Past a limit (`max_input_bytes`, a call past `max_calls`, a failed call attempt past
    /// `max_failed_calls`): the rest of the reply is passed through as text, unparsed.
    overflow: bool,
    /// `Limits::max_failed_calls`, at hand for the text scan's check.
    failed_limit: usize,
    /// Where the failed call attempt past it ended, in the whole input ([`Engine::failed_at`]).
    failed_end: usize,
    /// Bytes passed through as text past a limit without entering the buffer.
    passed_raw: usize,
    call_count: usize,
    /// Next event index (a started call that never finishes still used one).
    next_index: usize,
    /// Calls announced by the current region's reader, in order.
    announced: Vec<Announced>,
    /// What the current region's reader announced in this step (reused between steps).
    live: Vec<LiveEvent>,
    /// An announcement was refused (call limit): its argument fragments are dropped too.
    announce_muted: bool,
    diag_cap: DiagCap,
    /// Bytes rescanned by abandoned bare JSON regions, and whether the budget ran out.
    rescanned: usize,
    bare_off: bool,
    /// Bare JSON regions abandoned as text with no note ([`MAX_FAILED_BARE`]), and whether
    /// the region being read is a bare JSON one. Written through `&self`: a fence's value
    /// passed without its sub-engine is counted where [`Engine::fence_is_text`] reads it
    /// (a count handed back to its two callers cost fences of a word 1-2 %).
    failed_bare: Count,
    bare_region: bool,
    /// The last few failed bare JSON scans, which regions opened inside them resume from.
    failed_scan: FailedScans,
    /// The same for call syntax (`name(`, parentheses nesting): kept apart, as a scan of
    /// one kind never resumes from the other's. In one slot a flood such as
    /// `get_weather({"` (a `name(` region, then a bare `{` region, at every unit) replaced
    /// each kind's kept scan with the other's, and every region scanned `max_depth`
    /// brackets on afresh (~9,400 instructions a 14-byte unit, 98x prose).
    failed_call_scan: FailedScans,
    /// Offset in the whole input before which [`Engine::pass_failed_calls`] and
    /// [`Engine::pass_text_lines`] look for no run: one they found none in (or passed), so
    /// that a run they cannot pass is compared once, not once per opener in it.
    no_run_before: usize,
    /// How many times in a row [`Engine::pass_failed_calls`] found no unit.
    call_unit_misses: usize,
    /// The two above for [`Engine::pass_failed_calls`] at a name no family takes (its own:
    /// a miss there, a unit holding a tool's name as `f(get_weather(x)`, must not put off
    /// the look at that name's `(`, whose unit may pass).
    no_untaken_before: usize,
    untaken_misses: usize,
    /// The same for a unit whose first call closed at once as text (apart from those of
    /// names no family takes: a miss at `f(` of `get_weather(x)f(`, whose unit holds a
    /// tool's name, put off the pass of the closed call's unit).
    no_closed_before: usize,
    closed_misses: usize,
    /// Offset in the whole input before which [`Engine::pass_worded_calls`] looks for no
    /// run (one it walked, passed or not), and how many times in a row it found no unit.
    no_worded_before: usize,
    worded_misses: usize,
    /// [`Engine::pass_worded_calls`]'s copies walked: each copy's first `(` (buffer
    /// offset) and how many copies up to it have the name taken there (kept for the next
    /// run).
    worded_copies: Vec<(usize, [usize; MAX_WORDED_NAMES])>,
    /// The `is_final` of the scan under way ([`Engine::run`]'s: what the text scan's
    /// opener lookups are asked with), for [`Engine::declined_at_once`].
    text_final: bool,
    /// How many times in a row [`Engine::pass_text_lines`] found no run.
    text_line_misses: usize,
    /// The last tool name looked up in the registry, for the readers ([`NameMemo`]).
    names: NameMemo,
    /// What a closed block's reader leaves for the next block ([`ReadCx::kept`]).
    kept: crate::families::tags::Kept,
    pub(crate) markup_found: bool,
    text_acc: String,
    events: Vec<StreamEvent>,
    /// The borrowed events of [`crate::StreamParser::push_events`]: where events go instead
    /// of `events` while there (lent by the parser for the push). Boxed and absent
    /// otherwise, so that an engine that never records (every one-shot parse) carries one
    /// word for them.
    pub(crate) records: Option<Box<Records>>,
    /// One-shot [`crate::parse`] with nobody reading events: text, finished calls and
    /// diagnostics go straight here instead of through `events` (reasoning is kept in
    /// `reasoning` either way).
    direct: Option<Parsed>,
    visible: String,
    labels: Vec<(String, Range<usize>)>,
    pub(crate) reasoning: Vec<String>,
    finished: bool,
    /// Visible text (non-whitespace) or a call has been produced.
    seen_visible: bool,
    /// Whether the last decode of the last fence a sub-engine read failed
    /// ([`crate::repair::last_decode_failed`] after it): the fences after it are walked
    /// for a broken value ([`Engine::fence_value_is_text`]). Kept here, not read at each
    /// fence: the thread-local's read cost a flood of one-word fences (```` ```\nx\n```\n ````)
    /// 1 %. Decides no result (the walk passes only what the sub-engine sends as text).
    fence_failed: bool,
    /// How the reply ended (read by readers once the input has ended).
    pub(crate) reply_end: ReplyEnd,
    /// Bytes fed ahead of the reply (an implied opener, [`crate::StreamParser`]): never
    /// emitted as text, whatever reads them.
    pub(crate) hidden: usize,
    /// [`Engine::fallbacks_on`], decided once (it searched the family order on every
    /// emission of text).
    fallbacks: bool,
    /// The bytes that wake the current region's reader ([`ReadCx::wake`]), as it said when it
    /// last waited; `None` outside a region and whenever every push must call it.
    wake: Option<&'static Wake>,
    /// The buffer's length past which a push calls the waiting reader whatever its bytes
    /// (the region's start plus [`Wake::max_region`]; kept in step by `compact_now`).
    wake_until: usize,
    /// For a [`Wake::holding`]: where the reader's held tail starts in the buffer
    /// ([`Wake::held_from`]; kept in step by `compact_now`).
    wake_held: usize,
    /// The text of the opener that last started something here (a region, a reasoning
    /// block, a stripped token); `""` before any. In text whose scan waits on its first
    /// bytes, `wake` is [`OPENER_HOLD`].
    last_opener: &'static str,
    /// The absolute offset of the last wait on bytes that are not a proper prefix of
    /// `last_opener` (they never become one): a wait there again is not compared (a reply of
    /// many openers, Inkling's special tokens, waits on each several pushes).
    no_hold_at: usize,
    /// [`crate::openers::Openers::lookahead`] once asked ([`Engine::lookahead`]); `0` before.
    lookahead: usize,
    /// The windows of the last two units [`Engine::declined_units`] found repeated but not
    /// read as text: its reading of a unit is a fact about the window's bytes, so a unit
    /// that starts with them is not read so either, and is not asked again (a flood whose
    /// unit holds a bracket, `]<]minimax[>[<tool_call>x`, asked at every opener).
    no_units: [Vec<u8>; 2],
    /// The slot of [`Engine::no_units`] the next window goes to.
    no_unit_next: usize,
    /// Offset in the whole input before which [`Engine::pass_declined_units`] asks about no
    /// unit: one it asked about there was not repeated ([`NO_UNITS_SKIP`]).
    no_units_before: usize,
    /// The same for [`Engine::pass_implausible`]: a bracket's unit there was not repeated.
    no_implausible_before: usize,
    /// Where (absolute) and how long the window (a unit and the lookahead after it) of the
    /// last unit [`Engine::pass_implausible`] found the scan may read otherwise lies, and
    /// whether bare JSON was off then: a copy with the same window, while the buffer still
    /// holds the first, is refused by one compare.
    refused_window: (usize, usize),
    refused_bare_off: bool,
    /// Offset in the whole input before which [`Engine::pass_after_strip`] asks about no
    /// unit: one it asked about there was not repeated or not text ([`NO_UNITS_SKIP`],
    /// doubled at each refusal in a row, `strip_refusals`). A refusal of the byte after
    /// the token alone (a blank, a line start) skips only tokens followed by that byte,
    /// `strip_refused_byte`, up to `no_strip_byte_before`: `<|eot|>\n<|eot|>x` still
    /// passes at the `x`.
    no_strip_units_before: usize,
    strip_refusals: u32,
    strip_refused_byte: Option<u8>,
    no_strip_byte_before: usize,
    /// The input's length (absolute) when a unit [`Engine::pass_implausible`] or
    /// [`Engine::declined_units`] asked about ran into the end of the bytes received: no
    /// unit is asked about again until more arrive (a stream's push ends inside a flood,
    /// and each unit up to its end was asked, ~200 instructions each, in vain).
    no_pass_end: usize,
    /// Where the markers that end a reasoning block were last found ([`MarkerMemo`]).
    markers: MarkerMemo,
    /// Offset in the whole input before which [`Engine::pass_declined_walk`] reads on from
    /// no declined opener: one whose next unit it could not pass lies before it.
    no_walk_before: usize,
    /// The same for [`Engine::pass_implausible_walk`].
    no_bracket_walk_before: usize,
    /// The same for [`Engine::pass_failed_regions`].
    no_failed_before: usize,
    /// The end (absolute) of the bytes the last region abandoned as text with no note
    /// scanned: a bracket before it lies inside that failed region, where
    /// [`Engine::pass_failed_walk`] is asked.
    failed_text_end: usize,
    /// Offset in the whole input before which [`Engine::pass_failed_walk`] is not asked:
    /// one that passed no region lies before it.
    no_failed_walk_before: usize,
    /// Whether [`Engine::pass_unclaimed_json`] reads values, and the call count when it
    /// last read none (or was off): on once no call came since (a flood's second value),
    /// off while calls come (a call's region read by the pass first, to its decisive key,
    /// cost `json/small` 1.1-4 %).
    unclaimed_on: bool,
    unclaimed_stop: Option<usize>,
    /// The last region kept broken under its reader's promise ([`ReadCx::broken_by`]),
    /// read again at the same opener by [`Engine::broken_again`]. Boxed, made at the first
    /// such region: a fence's sub-engine is made per fence.
    broken: Option<Box<BrokenMemo>>,
    /// Tests only: [`Engine::pass_implausible`] and the walks pass nothing (the scan reads
    /// each byte), to compare the two readings.
    #[cfg(test)]
    no_walk: bool,
    /// Tests only: copies [`Engine::pass_worded_calls`] passed.
    #[cfg(test)]
    worded_passed: usize,
    /// Tests only: copies [`Engine::pass_failed_calls`] passed.
    #[cfg(test)]
    calls_passed: usize,
    /// Tests only: a fence's opener emits the text before it at once (as the text scan
    /// would), to compare with its emission when the fence decides.
    #[cfg(test)]
    eager_fence_text: bool,
    /// Tests only: bytes [`Engine::pass_implausible`] and its walk passed.
    #[cfg(test)]
    bracket_passed: usize,
    /// Tests only: units [`Engine::pass_implausible`] asked [`Engine::ordinary_strips_in`]
    /// about.
    #[cfg(test)]
    implausible_units_asked: usize,
    /// Tests only: bytes [`Engine::pass_after_strip`] passed, and the times it was asked.
    #[cfg(test)]
    strip_passed: usize,
    #[cfg(test)]
    strip_asks: usize,
    /// Tests only: regions [`Engine::pass_failed_walk`] passed.
    #[cfg(test)]
    regions_walked: usize,
    /// Bytes [`Engine::pass_declined_walk`] passed (tests).
    #[cfg(test)]
    declined_walked: usize,
    /// Tests only: copies [`Engine::declined_walk`] took where the copy before ended
    /// ([`crate::openers::Openers::copy_passed_found`]), without a lookup.
    #[cfg(test)]
    declined_chained: usize,
    /// Tests only: regions [`Engine::broken_again`] kept broken.
    #[cfg(test)]
    broken_again: usize,
}

/// Appends a push to the buffer. A streamed token is a few bytes: a push of up to 8 is
/// copied with its length known in its arm (a few moves where `push_str` called `memcpy`,
/// ~20 instructions a push: `bench_profile "gemma4/100 calls" stream4`); longer ones by
/// `push_str`.
#[inline(always)]
fn append_token(buf: &mut String, delta: &str) {
    match delta.len() {
        1 => buf.push_str(delta),
        2 => buf.push_str(delta),
        3 => buf.push_str(delta),
        4 => buf.push_str(delta),
        5 => buf.push_str(delta),
        6 => buf.push_str(delta),
        7 => buf.push_str(delta),
        8 => buf.push_str(delta),
        _ => buf.push_str(delta),
    }
}

/// A streamed push's text gathered in a buffer of its own (the last `Text` event took the
/// one before): allocated at once at the room the first `push_str` grows an empty `String`
/// to, without the growth's out-of-line path (~55 instructions a streamed text push:
/// `bench_profile "gemma4/small" stream4`).
#[inline]
fn fresh_text(t: &str) -> String {
    let mut s = String::with_capacity(t.len().max(8));
    s.push_str(t);
    s
}

/// Room for a push's first events where `push` gave the engine an empty list: allocated at
/// the room the first `Vec::push` grows it to (4), without the growth's out-of-line path
/// (~45 instructions a push with events: `bench_profile "gemma4/small" stream4`).
#[inline]
fn first_room(events: &mut Vec<StreamEvent>) {
    if events.capacity() == 0 {
        *events = Vec::with_capacity(4);
    }
}

impl<'a> Engine<'a> {
    /// The index the next call would get (calls announced and cut count too).
    pub(crate) fn next_call_index(&self) -> usize {
        self.next_index
    }

    pub(crate) fn new(ctx: Arc<Ctx>) -> Self {
        let mut e = Self::new_inner(ctx);
        if e.ctx.starts_in_reasoning {
            e.reasoning.push(String::new());
            let suffixed: Arc<[&'static str]> = e
                .ctx
                .order
                .iter()
                .filter_map(|f| f.family())
                .flat_map(|f| f.suffixed_reasoning().iter().map(|m| m.close))
                .collect();
            e.mode = Mode::Think {
                content: 0,
                close: if suffixed.is_empty() {
                    ThinkClose::Exact(Cow::Borrowed(THINK.close))
                } else {
                    ThinkClose::Opened(suffixed)
                },
            };
        }
        e
    }

    fn new_inner(ctx: Arc<Ctx>) -> Self {
        let reply_end = ctx.reply_end;
        let fallbacks = !ctx.fallbacks.is_empty() && ctx.enabled(FormatId::FALLBACK);
        Engine {
            fallbacks,
            failed_limit: ctx.limits.max_failed_calls,
            failed_end: 0,
            passed_raw: 0,
            ctx,
            nested: false,
            quiet: false,
            buf: Cow::Borrowed(""),
            base: 0,
            pos: 0,
            emit_from: 0,
            mode: Mode::Text,
            line_start: true,
            ident_start: None,
            declined: None,
            scan_found: None,
            short_runs: false,
            last_found: LastFound::new(u32::MAX),
            step_found: LastFound::new(u32::MAX),
            received: 0,
            overflow: false,
            call_count: 0,
            next_index: 0,
            announced: Vec::new(),
            live: Vec::new(),
            announce_muted: false,
            diag_cap: DiagCap::default(),
            rescanned: 0,
            bare_off: false,
            failed_bare: Count::default(),
            bare_region: false,
            failed_scan: FailedScans::default(),
            failed_call_scan: FailedScans::default(),
            no_run_before: 0,
            call_unit_misses: 0,
            no_untaken_before: 0,
            untaken_misses: 0,
            no_closed_before: 0,
            closed_misses: 0,
            no_worded_before: 0,
            worded_misses: 0,
            worded_copies: Vec::new(),
            text_final: false,
            text_line_misses: 0,
            names: NameMemo::default(),
            kept: Default::default(),
            markup_found: false,
            text_acc: String::new(),
            events: Vec::new(),
            records: None,
            direct: None,
            visible: String::new(),
            labels: Vec::new(),
            reasoning: Vec::new(),
            finished: false,
            seen_visible: false,
            fence_failed: false,
            reply_end,
            hidden: 0,
            wake: None,
            wake_until: usize::MAX,
            wake_held: 0,
            last_opener: "",
            no_hold_at: usize::MAX,
            lookahead: 0,
            no_units: [Vec::new(), Vec::new()],
            no_unit_next: 0,
            no_units_before: 0,
            no_implausible_before: 0,
            refused_window: (0, 0),
            refused_bare_off: false,
            no_strip_units_before: 0,
            strip_refusals: 0,
            strip_refused_byte: None,
            no_strip_byte_before: 0,
            no_pass_end: usize::MAX,
            markers: MarkerMemo::default(),
            no_walk_before: 0,
            no_bracket_walk_before: 0,
            no_failed_before: 0,
            failed_text_end: 0,
            no_failed_walk_before: 0,
            unclaimed_on: false,
            unclaimed_stop: None,
            broken: None,
            #[cfg(test)]
            no_walk: false,
            #[cfg(test)]
            worded_passed: 0,
            #[cfg(test)]
            calls_passed: 0,
            #[cfg(test)]
            eager_fence_text: false,
            #[cfg(test)]
            bracket_passed: 0,
            #[cfg(test)]
            implausible_units_asked: 0,
            #[cfg(test)]
            strip_passed: 0,
            #[cfg(test)]
            strip_asks: 0,
            #[cfg(test)]
            regions_walked: 0,
            #[cfg(test)]
            declined_walked: 0,
            #[cfg(test)]
            declined_chained: 0,
            #[cfg(test)]
            broken_again: 0,
        }
    }

    fn fallbacks_on(&self) -> bool {
        self.fallbacks
    }

    /// Feeds `delta`, appending its events to the caller's `out`: the engine collects them in
    /// `out` itself (swapped in and back), so a reused buffer costs no allocation.
    #[inline]
    pub(crate) fn push_into(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        std::mem::swap(&mut self.events, out);
        self.feed(delta);
        std::mem::swap(&mut self.events, out);
    }

    /// A push inside a region whose reader waits for bytes this push may not hold
    /// ([`ReadCx::wake`]), appended here as [`Engine::feed`] appends it when it may be
    /// ([`Quiet::Read`]: it holds one of those bytes, read it with
    /// [`Engine::read_pushed_into`]; [`Quiet::Done`]: it holds none, nothing else to do);
    /// [`Quiet::No`] (nothing done) for any other push. Most pushes of a streamed call's
    /// body are done here, inlined into the caller's loop (~190 instructions such a push
    /// cost through `feed` and the swaps of the event buffer, `bench_profile "gemma4/1 MB
    /// args" stream4`; ~50 more through a call into `StreamParser::push`, its registers
    /// saved and restored, `bench_profile "gemma4/100 calls" stream4`).
    #[inline(always)]
    pub(crate) fn append_quiet(&mut self, delta: &str) -> Quiet {
        // `wake` is `None` once the engine finished or overflowed (both clear it).
        let Some(wake) = self.wake else {
            return Quiet::No;
        };
        let room = self
            .ctx
            .limits
            .max_input_bytes
            .saturating_sub(self.received);
        // The buffer is owned once anything was pushed (`Cow::to_mut` was a call a push).
        let Cow::Owned(buf) = &mut self.buf else {
            return Quiet::No;
        };
        if delta.len() > room {
            return Quiet::No;
        }
        self.received += delta.len();
        append_token(buf, delta);
        if wake.wakes(
            self.buf.as_bytes(),
            delta.as_bytes(),
            self.wake_held,
            self.last_opener,
        ) || self.buf.len() > self.wake_until
        {
            Quiet::Read
        } else {
            Quiet::Done
        }
    }

    /// What wakes the waiting reader now ([`ReadCx::wake`]), for tests.
    #[cfg(test)]
    pub(crate) fn wake_now(&self) -> Option<&'static Wake> {
        self.wake
    }

    /// Reads a push [`Engine::append_quiet`] appended, appending its events to `out`.
    #[inline(never)]
    pub(crate) fn read_pushed_into(&mut self, out: &mut Vec<StreamEvent>) {
        std::mem::swap(&mut self.events, out);
        self.read_pushed();
        std::mem::swap(&mut self.events, out);
    }

    /// Feeds `delta`, its events to `records` (the last push's forgotten; lent to the
    /// engine for the push).
    pub(crate) fn push_records(&mut self, delta: &str, records: &mut Option<Box<Records>>) {
        if let Some(r) = records.as_deref_mut() {
            r.clear();
        }
        std::mem::swap(&mut self.records, records);
        self.feed(delta);
        std::mem::swap(&mut self.records, records);
    }

    /// Reads a push [`Engine::append_quiet`] appended, its events to `records` (as
    /// [`Engine::push_records`]).
    #[inline(never)]
    pub(crate) fn read_pushed_records(&mut self, records: &mut Option<Box<Records>>) {
        if let Some(r) = records.as_deref_mut() {
            r.clear();
        }
        std::mem::swap(&mut self.records, records);
        self.read_pushed();
        std::mem::swap(&mut self.records, records);
    }

    /// [`Engine::finish`], its events to `records` (appended).
    pub(crate) fn finish_records(&mut self, records: &mut Option<Box<Records>>) {
        std::mem::swap(&mut self.records, records);
        let rest = self.finish();
        std::mem::swap(&mut self.records, records);
        if let Some(r) = records.as_deref_mut() {
            for e in rest {
                r.push_owned(e);
            }
        }
    }

    /// [`Engine::finish`] appending to `out` (see [`Engine::push_into`]).
    pub(crate) fn finish_into(&mut self, out: &mut Vec<StreamEvent>) {
        self.events = std::mem::take(out);
        *out = self.finish();
    }

    /// Reads a whole `text` into an engine that has received nothing (one-shot
    /// [`crate::parse`] and a fence's sub-engine), adding its events to `self.events`: the
    /// text becomes the buffer, borrowed, instead of being copied into it.
    fn feed_whole(&mut self, text: &'a str) {
        if self.received == 0
            && self.buf.is_empty()
            && !self.finished
            && !self.overflow
            && !text.is_empty()
            && text.len() <= self.ctx.limits.max_input_bytes
            && matches!(self.mode, Mode::Text)
            && self.line_start
        {
            // What `feed` does with a first push of more than one byte in text at a line
            // start: the general loop, then compaction.
            self.received = text.len();
            self.buf = Cow::Borrowed(text);
            self.run(false);
            self.compact();
            return;
        }
        self.feed(text);
    }

    /// Feeds `delta`, adding its events to `self.events`.
    fn feed(&mut self, delta: &str) {
        if self.finished {
            return;
        }
        if self.overflow {
            self.passed_raw += delta.len();
            self.emit_raw_text(delta);
            self.flush_text_event();
            return;
        }
        let room = self
            .ctx
            .limits
            .max_input_bytes
            .saturating_sub(self.received);
        if delta.len() > room {
            let cut = floor_boundary(delta, room);
            let (head, tail) = delta.split_at(cut);
            self.received += head.len();
            self.buf.to_mut().push_str(head);
            self.run(true);
            self.overflow = true;
            self.wake = None;
            let at = self.base + self.buf.len();
            self.diag(Diagnostic::error(
                format!(
                    "input exceeds {} bytes; the rest is passed through as text, unparsed",
                    self.ctx.limits.max_input_bytes
                ),
                at..at,
            ));
            self.passed_raw += tail.len();
            self.emit_raw_text(tail);
            self.flush_text_event();
            return;
        }
        self.received += delta.len();
        if let Cow::Borrowed(text) = self.buf {
            let mut owned = String::with_capacity(FIRST_ROOM.max(text.len() + delta.len()));
            owned.push_str(text);
            self.buf = Cow::Owned(owned);
        }
        match delta.as_bytes() {
            // One byte is ASCII: pushed without a `memcpy` call (1-byte streaming).
            &[b] => {
                // A byte of prose that cannot start markup, right after text scanned to its
                // end: the byte loop's own step for it (no bulk skip, no loop), then the
                // text it decides. Most pushes of a reply streamed a byte at a time.
                if matches!(self.mode, Mode::Text)
                    && !self.line_start
                    && self.pos == self.buf.len()
                    && !self.ctx.openers.stops.is_stop(b)
                {
                    self.buf.to_mut().push(char::from(b));
                    self.ordinary_byte(self.pos, b);
                    self.settle_text(false);
                    self.compact();
                    return;
                }
                self.buf.to_mut().push(char::from(b));
            }
            _ => append_token(self.buf.to_mut(), delta),
        }
        // Inside a region whose reader said which bytes wake it (`ReadCx::wake`): a push of
        // none of them changes nothing the reader does, and it reads these bytes with the
        // next push it is called for (no text to settle, nothing to compact).
        if let Some(wake) = self.wake
            && !wake.wakes(
                self.buf.as_bytes(),
                delta.as_bytes(),
                self.wake_held,
                self.last_opener,
            )
            && self.buf.len() <= self.wake_until
        {
            return;
        }
        self.read_pushed();
    }

    /// What `feed` does once the push is appended and no waiting reader skipped it: the
    /// region's step, then the text and the general loop. Inlined into `feed` (a call more
    /// on every push that reaches it cost ~30 instructions a push: `bench_profile
    /// "hermes/1 MB args" stream4`).
    #[inline(always)]
    fn read_pushed(&mut self) {
        // Inside a region, most pushes of a call's body: its reader asks for more, and
        // there is no text to settle (the general loop's fixed cost showed per push).
        if matches!(self.mode, Mode::Region { .. }) {
            match self.step_region(false) {
                Step::Wait => {
                    self.flush_text_event();
                    self.compact();
                    return;
                }
                Step::Continue => {}
            }
        }
        // Prose, most pushes of a reply: when no new byte can start markup the scan is one
        // bulk skip, and the general loop is not entered (its fixed cost showed per push).
        if matches!(self.mode, Mode::Text) && !self.line_start {
            self.skip_plain();
        }
        if self.pos >= self.buf.len() && matches!(self.mode, Mode::Text) {
            self.settle_text(false);
        } else {
            self.run(false);
        }
        self.compact();
    }

    pub(crate) fn finish(&mut self) -> Vec<StreamEvent> {
        if !self.finished {
            if !self.overflow {
                self.run(true);
            }
            self.finished = true;
            self.wake = None;
            if self.call_count == 0 && self.fallbacks_on() {
                let ctx = self.ctx.clone();
                let ok = |name: &str| ctx.strict_name_ok(name);
                if let Some((d, diag)) =
                    fallback::apply(&ctx.fallbacks, &self.visible, &self.labels, &ok)
                {
                    self.diag(diag);
                    self.build_and_emit(d, None);
                }
            }
            if self.diag_cap.suppressed > 0 {
                let n = std::mem::take(&mut self.diag_cap.suppressed);
                // The end of the input, passed-through bytes included (one-shot, a cut
                // reply's rest is in the buffer; streamed, its later pushes are not).
                let at = self.base + self.buf.len() + self.passed_raw;
                self.push_diag(Diagnostic::warning(
                    format!(
                        "{n} further diagnostics not reported (more than {DIAGS_PER_KIND} of one kind)"
                    ),
                    at..at,
                ));
            }
            self.flush_text_event();
        }
        std::mem::take(&mut self.events)
    }

    fn abs(&self, i: usize) -> usize {
        self.base + i
    }

    fn span(&self, a: usize, b: usize) -> Range<usize> {
        self.abs(a)..self.abs(b)
    }

    fn emit_raw_text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        if !self.seen_visible && !is_blank(t) {
            self.seen_visible = true;
        }
        self.push_text(t);
        if self.fallbacks_on() && self.visible.len() < self.ctx.limits.max_input_bytes {
            self.visible.push_str(t);
        }
    }

    /// Emits `buf[emit_from..to]` as visible text.
    fn emit_text(&mut self, to: usize) {
        if self.hidden > self.base {
            self.emit_from = self.emit_from.max((self.hidden - self.base).min(to));
        }
        if to > self.emit_from {
            // Same as `emit_raw_text`, copying straight from the buffer (no temporary).
            let keep_visible =
                self.fallbacks_on() && self.visible.len() < self.ctx.limits.max_input_bytes;
            let t = self.buf.get(self.emit_from..to).unwrap_or("");
            if !t.is_empty() {
                if !self.seen_visible && !is_blank(t) {
                    self.seen_visible = true;
                }
                // Where `push_text` puts it (the buffer borrowed, the target disjoint).
                match &mut self.direct {
                    Some(p) => p.text.push_str(t),
                    None if self.text_acc.capacity() == 0 => self.text_acc = fresh_text(t),
                    None => self.text_acc.push_str(t),
                }
                if keep_visible {
                    self.visible.push_str(t);
                }
            }
            self.emit_from = to;
        }
    }

    /// Visible text: straight into the result of a one-shot parse (nothing reads the order
    /// of text and events there, and a second buffer would be grown and copied once per
    /// piece of text); else gathered until the next event.
    fn push_text(&mut self, t: &str) {
        match &mut self.direct {
            Some(p) => p.text.push_str(t),
            None => self.text_acc.push_str(t),
        }
    }

    /// Emits the text gathered since the last event. Inlined for its test: most pushes of
    /// a stream gather no text (a call's body), and the call cost more than the test.
    #[inline]
    fn flush_text_event(&mut self) {
        if !self.text_acc.is_empty() {
            self.flush_text_now();
        }
    }

    fn flush_text_now(&mut self) {
        match &mut self.direct {
            Some(p) if p.text.is_empty() => std::mem::swap(&mut p.text, &mut self.text_acc),
            Some(p) => {
                p.text.push_str(&self.text_acc);
                self.text_acc.clear();
            }
            None if self.records.is_some() => {
                if let Some(r) = self.records.as_deref_mut() {
                    let text = r.keep(&self.text_acc);
                    r.list.push(Record::Text(text));
                }
                self.text_acc.clear();
            }
            None => {
                let text = std::mem::take(&mut self.text_acc);
                first_room(&mut self.events);
                self.events.push(StreamEvent::Text { text });
            }
        }
    }

    /// A diagnostic admitted by the cap, after the text before it.
    fn push_diag(&mut self, diagnostic: Diagnostic) {
        self.flush_text_event();
        match &mut self.direct {
            Some(p) => p.diagnostics.push(diagnostic),
            None => match self.records.as_deref_mut() {
                Some(r) => r.diagnostic(diagnostic),
                None => {
                    first_room(&mut self.events);
                    self.events.push(StreamEvent::Diagnostic { diagnostic });
                }
            },
        }
    }

    fn diag(&mut self, d: Diagnostic) {
        let admitted = self.diag_cap.admit(&d);
        self.failed_at(d.level, d.span.end);
        if admitted {
            self.push_diag(d);
        }
    }

    /// After a note at `level` whose span ends at `end` (in the whole input) was counted:
    /// where the reply stops if it was the failed call attempt past `max_failed_calls`
    /// (the error saying so is placed there, whatever the chunking).
    #[inline]
    fn failed_at(&mut self, level: Level, end: usize) {
        if level == Level::Error && self.diag_cap.errors == self.failed_limit.wrapping_add(1) {
            self.failed_end = end;
        }
    }

    /// A reader's note on the region at `start`, its message written only when the cap
    /// reports it ([`Message::Pieces`]: pieces of the region's bytes).
    fn note(&mut self, start: usize, note: Note) {
        let (level, end) = (note.level, note.span.end);
        self.note_counted(start, note);
        self.failed_at(level, end);
    }

    /// [`Engine::note`]'s count and report.
    fn note_counted(&mut self, start: usize, note: Note) {
        match note.message {
            Message::Text(m) => {
                let d = Diagnostic::new(note.level, m, note.span);
                if self.diag_cap.admit(&d) {
                    self.emit_text(start);
                    self.push_diag(d);
                }
            }
            Message::Kept(slot) => self.kept_note(start, slot, note.level, note.span),
            Message::Pieces(pieces) => {
                let region = self.buf.get(start..).unwrap_or("");
                if self.diag_cap.admit_pieces(note.level, &pieces, region) {
                    // The text before the region first (a `name(` decided at once left it).
                    self.emit_text(start);
                    let region = self.buf.get(start..).unwrap_or("");
                    let mut m = String::new();
                    pieces.write(region, &mut m);
                    self.push_diag(Diagnostic::new(note.level, m, note.span));
                }
            }
        }
    }

    /// A closed call's note kept by [`NameMemo`] in `slot` ([`Message::Kept`]): counted in
    /// the cap slot its text got first, found once from its kind (its first bytes, written
    /// where the note is unwritten: [`DiagCap::written_slot`]), and written only when the
    /// cap reports it. A dropped one leaves the cap's last message as it was (a cache of
    /// message slots: a flood of closed calls that differ at each copy copied each there).
    fn kept_note(&mut self, start: usize, slot: usize, level: Level, span: Range<usize>) {
        let error = level == Level::Error;
        let cap = match self.names.kept_cap(slot) {
            Some(cap) if error => Some(cap),
            _ if error => {
                let names = &self.names;
                let cap = self
                    .diag_cap
                    .written_slot(level, |w| names.write_kept(slot, w));
                self.names.set_kept_cap(slot, cap);
                Some(cap)
            }
            _ => None,
        };
        if let Some(cap) = cap
            && self.diag_cap.is_full(cap)
        {
            self.diag_cap.count_dropped_note(cap);
            return;
        }
        let Some(text) = self.names.kept_text(slot) else {
            return;
        };
        let admitted = match cap {
            Some(cap) => self.diag_cap.admit_known(text, cap),
            None => self.diag_cap.admit_text(level, text),
        };
        if admitted {
            let m = self.names.kept_text(slot).map(str::to_owned);
            self.emit_text(start);
            self.push_diag(Diagnostic::new(level, m.unwrap_or_default(), span));
        }
    }

    /// The whole of a one-shot parse's reply, given to an engine that has received
    /// nothing: its text, calls and diagnostics written straight into `parsed` (which may
    /// already hold diagnostics) rather than collected as events. Reasoning blocks stay in
    /// `self.reasoning`.
    pub(crate) fn parse_whole(&mut self, text: &'a str, parsed: Parsed) -> Parsed {
        self.direct = Some(parsed);
        self.feed_whole(text);
        self.finish();
        self.direct.take().unwrap_or_default()
    }

    /// The info diagnostic for a found call. Its kind for the per-kind cap is known
    /// without writing the message when the name needs no escaping (the quoted name is
    /// blanked in kinds): a reply with many calls formats only the reported ones.
    /// `format`: the call's format (its `origin.format` is this name).
    fn found_call(&mut self, call: &ToolCall, format: FormatId) {
        // A format whose slot is known was found plain (the same `'static` name).
        let known = self
            .diag_cap
            .found
            .is_some_and(|(f, _)| std::ptr::eq(f, format.as_str()));
        if !(plain(&call.name, 64) && (known || plain(&call.origin.format, 32))) {
            self.diag(Diagnostic::info(
                format!("found {} call to {:?}", call.origin.format, call.name),
                call.origin.span.clone(),
            ));
            return;
        }
        // A slot's kind never changes once given, so the slot found for this format
        // serves every later call of it.
        let slot = self.diag_cap.found_slot(format.as_str());
        if self.diag_cap.count(slot, Level::Info) {
            // `found {format} call to {name:?}`: both plain, so the debug quoting of the
            // name is its text between quotes.
            let message = found_message(&call.origin.format, &call.name);
            self.push_diag(Diagnostic::info(message, call.origin.span.clone()));
        }
    }

    /// Emits a finished call; `announced`: the index its `CallStarted` already used.
    fn emit_call(&mut self, call: ToolCall, announced: Option<usize>) {
        if self.call_count >= self.ctx.limits.max_calls {
            // Once: the rest of the reply is text from here ([`Engine::pass_rest`]). Read
            // on, a reply looping on one call past the limit built, dropped and noted each
            // copy: `get_weather() ` 95x prose, `[get_weather()]` 146x
            // (`bench/flood_screen.py`).
            if !self.overflow {
                let span = call.origin.span.clone();
                self.diag(Diagnostic::error(
                    format!(
                        "call to {:?} dropped: more than {} calls in one reply; the rest is passed through as text, unparsed",
                        call.name, self.ctx.limits.max_calls
                    ),
                    span,
                ));
                self.overflow = true;
                self.wake = None;
            }
            return;
        }
        self.flush_text_event();
        self.seen_visible = true;
        self.call_count += 1;
        if let Some(p) = &mut self.direct {
            // Nobody reads the index: what `announced` would have used stays used.
            if announced.is_none() {
                self.next_index += 1;
            }
            p.calls.push(call);
            return;
        }
        let index = match announced {
            Some(index) => index,
            None => {
                let index = self.next_index;
                self.next_index += 1;
                if self.quiet {
                    self.push_finished(index, call);
                    return;
                }
                if let Some(r) = self.records.as_deref_mut() {
                    let name = r.keep(&call.name);
                    r.list.push(Record::CallStarted {
                        index,
                        call_id: call.call_id.clone(),
                        name,
                    });
                    let from = r.text.len();
                    crate::family::push_json_value(&mut r.text, &call.arguments);
                    let fragment = from..r.text.len();
                    r.list.push(Record::ArgumentsDelta { index, fragment });
                    r.finished(index, call);
                    return;
                }
                self.events.push(StreamEvent::CallStarted {
                    index,
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                });
                // Written into room for a typical call's arguments (`to_string` grows
                // from nothing, reallocating several times a call), without the formatter
                // (`Display` through `serde_json`'s serializer cost ~2,700 instructions a
                // Gemma 4 call's three entries: `bench_profile "gemma4/100 calls"
                // stream100000`).
                let mut fragment = String::with_capacity(128);
                crate::family::push_json_value(&mut fragment, &call.arguments);
                self.events
                    .push(StreamEvent::ArgumentsDelta { index, fragment });
                index
            }
        };
        self.push_finished(index, call);
    }

    /// A `CallFinished` event, to the events in force.
    fn push_finished(&mut self, index: usize, call: ToolCall) {
        match self.records.as_deref_mut() {
            Some(r) => r.finished(index, call),
            None => self.events.push(StreamEvent::CallFinished { index, call }),
        }
    }

    fn build_and_emit(&mut self, d: Draft, announced: Option<(usize, CallId)>) {
        let span = d.span.clone();
        let format = d.format;
        let (announced, id) = announced.unzip();
        match build(d, self.ctx.limits.max_depth, id) {
            Ok(call) => {
                if self.call_count < self.ctx.limits.max_calls {
                    self.found_call(&call, format);
                }
                self.emit_call(call, announced)
            }
            Err(e) => self.diag(Diagnostic::error(format!("call dropped: {e}"), span)),
        }
    }

    /// Forwards a region reader's announcements (`self.live`, left empty with its capacity
    /// kept) as `CallStarted` / `ArgumentsDelta`.
    fn live_events(&mut self) {
        if self.live.is_empty() {
            return;
        }
        let mut live = std::mem::take(&mut self.live);
        for e in live.drain(..) {
            match e {
                LiveEvent::Started { name, id } => {
                    if self.call_count + self.announced.len() >= self.ctx.limits.max_calls {
                        self.announce_muted = true;
                        continue;
                    }
                    self.announce_muted = false;
                    let index = self.next_index;
                    self.next_index += 1;
                    let call_id = id
                        .filter(|i| !i.is_empty())
                        .map_or_else(CallId::generate, CallId::from);
                    if self.direct.is_none() {
                        self.flush_text_event();
                        if let Some(r) = self.records.as_deref_mut() {
                            let name = r.keep(name.get(&self.buf, self.base));
                            r.list.push(Record::CallStarted {
                                index,
                                call_id: call_id.clone(),
                                name,
                            });
                        } else {
                            let shown = name.get(&self.buf, self.base).to_owned();
                            first_room(&mut self.events);
                            self.events.push(StreamEvent::CallStarted {
                                index,
                                call_id: call_id.clone(),
                                name: shown,
                            });
                        }
                    }
                    self.announced.push(Announced {
                        index,
                        call_id,
                        name,
                    });
                }
                LiveEvent::Arguments(fragment) => {
                    if let (Some(a), false, None) =
                        (self.announced.last(), self.announce_muted, &self.direct)
                    {
                        let index = a.index;
                        if let Some(r) = self.records.as_deref_mut() {
                            let fragment = r.keep(&fragment);
                            r.list.push(Record::ArgumentsDelta { index, fragment });
                        } else {
                            first_room(&mut self.events);
                            self.events
                                .push(StreamEvent::ArgumentsDelta { index, fragment });
                        }
                    }
                }
            }
        }
        self.live = live;
    }

    /// `buf[markup..end]` was markup: replaced by the outcome's text, calls and findings.
    /// Calls announced while it streamed finish under their index and id, matched in order
    /// by name; an announced call that did not complete never finishes (a diagnostic says
    /// why).
    fn apply_outcome(&mut self, markup: usize, end: usize, o: Outcome) {
        self.emit_text(markup);
        self.emit_from = end;
        self.enter_text(end);
        self.markup_found = true;
        // Markup removed and nothing in its place (a `<|message_sep|>` alone): no room
        // reserved, nothing drained (~100 instructions a separator of a flood of them).
        if o.drafts.is_empty() && o.diagnostics.is_empty() && o.text.is_empty() {
            self.announced.clear();
            return;
        }
        self.emit_raw_text(&o.text);
        // Room at once for what the outcome adds (one allocation, not one per doubling):
        // each call and, up to the cap, its found-call note; a quiet engine's events are
        // only those.
        let (calls, notes) = (o.drafts.len(), o.diagnostics.len());
        let found = calls.min(DIAGS_PER_KIND);
        match &mut self.direct {
            Some(p) => {
                p.calls.reserve(calls);
                p.diagnostics.reserve(notes + found);
            }
            None if self.quiet && self.records.is_none() => {
                self.events.reserve(calls + notes + found + 1)
            }
            None => {}
        }
        for d in o.diagnostics {
            self.diag(d);
        }
        // Drained, not taken: the list keeps its room for the next region's calls (taken,
        // it was freed and allocated again a call, ~200 instructions: `bench_profile
        // "gemma4/100 calls" stream4`).
        let mut announced = std::mem::take(&mut self.announced);
        let mut left = announced.drain(..).peekable();
        for d in o.drafts {
            // The announced id moves into the call (its `to_string` went through the
            // formatter: an allocation and a copy a call). Handed to the builder beside the
            // draft, not written into it: a draft written here was moved by three `memcpy`s
            // a call (`kimi_k2/100 calls` one-shot, ~70 instructions a call).
            let announced = left
                .next_if(|a| a.name.get(&self.buf, self.base) == d.name)
                .map(|a| (a.index, a.call_id));
            self.build_and_emit(d, announced);
        }
        drop(left);
        self.announced = announced;
    }

    /// `buf[markup..end]` is broken markup: it stays in the reply as text, with an error,
    /// and is not run.
    fn keep_broken(&mut self, markup: usize, end: usize, why: String) {
        self.announced.clear();
        self.emit_text(markup);
        let span = self.span(markup, end);
        self.diag(Diagnostic::error(why, span));
        self.enter_text(end);
    }

    /// [`Engine::keep_broken`] of a region opened by the first family of literal opener
    /// `opener`, whose reader promised that its first `n` bytes decide it
    /// ([`ReadCx::broken_by`]): the message is cloned only when the cap reports it,
    /// and the region is remembered for [`Engine::broken_again`]. Out of line: once a
    /// distinct broken region.
    #[inline(never)]
    fn keep_broken_memo(
        &mut self,
        markup: usize,
        end: usize,
        opener: usize,
        n: usize,
        why: String,
    ) {
        self.announced.clear();
        self.emit_text(markup);
        if self.diag_cap.admit_text(Level::Error, &why) {
            let span = self.span(markup, end);
            self.push_diag(Diagnostic::error(why.clone(), span));
        }
        self.failed_at(Level::Error, self.abs(end));
        self.enter_text(end);
        let memo = BrokenMemo {
            opener,
            at: self.abs(markup),
            len: n.max(end - markup),
            end: end - markup,
            why,
        };
        match &mut self.broken {
            Some(m) => **m = memo,
            None => self.broken = Some(Box::new(memo)),
        }
    }

    /// Literal opener `i` at `pos` starts the bytes that decided the last region kept by
    /// [`Engine::keep_broken_memo`] (still in the buffer), and its first family removes
    /// nothing there: the region is kept broken as that one was, at once, no reader made
    /// (its promise: a fresh reader given those bytes in its first step answers the same
    /// `Broken`, sending nothing). A flood of a real opener whose body fails the same way
    /// at every copy (`functools[]1,{"`: the JSON `[]` holds no call) made, stepped and
    /// dropped a reader a copy and decoded its body again (~2,000 instructions a copy,
    /// 47x prose).
    #[inline(never)]
    fn broken_again(&mut self, pos: usize, i: usize, is_final: bool) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        let Some(m) = self.broken.as_deref() else {
            return false;
        };
        let Some(at) = m.at.checked_sub(self.base) else {
            return false;
        };
        let bytes = self.buf.as_bytes();
        if m.opener != i || at == pos || bytes.get(pos..pos + m.len) != bytes.get(at..at + m.len) {
            return false;
        }
        let Some(o) = self.ctx.openers.get(i) else {
            return false;
        };
        let Action::Region(families) = &o.action else {
            return false;
        };
        let region = self.buf.get(pos..).unwrap_or("");
        if families
            .first()
            .is_none_or(|first| first.removes(region, is_final).is_some())
        {
            return false;
        }
        self.last_opener = o.text;
        let end = pos + m.end;
        self.wake = None;
        self.announced.clear();
        self.emit_text(pos);
        if let Some(m) = self.broken.as_deref()
            && self.diag_cap.admit_text(Level::Error, &m.why)
        {
            let d = Diagnostic::error(m.why.clone(), self.span(pos, end));
            self.push_diag(d);
        }
        self.failed_at(Level::Error, self.abs(end));
        self.enter_text(end);
        #[cfg(test)]
        {
            self.broken_again += 1;
        }
        true
    }

    /// [`Engine::keep_broken`] with the message of an [`Advance::Malformed`] block, written
    /// only when the cap reports it.
    fn keep_malformed(&mut self, markup: usize, end: usize, failure: &Failure) {
        self.announced.clear();
        self.emit_text(markup);
        if self.diag_cap.admit_malformed(failure) {
            let span = self.span(markup, end);
            self.push_diag(Diagnostic::error(failure.message_after(MALFORMED), span));
        }
        self.failed_at(Level::Error, self.abs(end));
        self.enter_text(end);
    }

    /// Reasoning only: the call markup `buf[markup..end]` stays the text it was.
    fn keep_as_text(&mut self, markup: usize, end: usize) {
        self.announced.clear();
        self.emit_text(markup);
        self.enter_text(end);
    }

    /// Drops `buf[markup..end]` (broken markup) with an error.
    fn drop_markup(&mut self, markup: usize, end: usize, message: String) {
        // A call announced while streaming is abandoned; the error says why.
        self.announced.clear();
        self.emit_text(markup);
        let span = self.span(markup, end);
        self.diag(Diagnostic::error(message, span));
        self.emit_from = end;
        self.enter_text(end);
    }

    fn enter_text(&mut self, pos: usize) {
        self.pos = pos;
        self.mode = Mode::Text;
        self.ident_start = None;
        if pos > 0 {
            self.line_start = self.buf.as_bytes().get(pos - 1) == Some(&b'\n');
        }
    }

    /// Sets the mode, with no call of `Mode`'s drop glue where the one it replaces owns
    /// nothing (text, inline code, a fence): that call, twice a fence, cost a flood of
    /// fences ~28 instructions a fence.
    #[inline(always)]
    fn set_plain_mode(&mut self, mode: Mode) {
        match self.mode {
            Mode::Text | Mode::InlineCode | Mode::Fence { .. } => {
                std::mem::forget(std::mem::replace(&mut self.mode, mode));
            }
            _ => self.mode = mode,
        }
    }

    /// [`Engine::enter_text`] after a fence, whose mode owns nothing.
    #[inline]
    fn leave_fence(&mut self, end: usize) {
        self.set_plain_mode(Mode::Text);
        self.pos = end;
        self.ident_start = None;
        if end > 0 {
            self.line_start = self.buf.as_bytes().get(end - 1) == Some(&b'\n');
        }
    }

    /// Drops the bytes no reader needs any more. Inlined for its test (see
    /// [`Engine::flush_text_event`]).
    #[inline]
    fn compact(&mut self) {
        // What may go is below `emit_from` and `pos` (`keep` below): fewer than
        // `COMPACT_MIN` bytes there, nothing to do (inside a region, every push).
        if self.emit_from.min(self.pos) >= COMPACT_MIN {
            self.compact_now();
        }
    }

    fn compact_now(&mut self) {
        let mode_start = match &self.mode {
            Mode::Text | Mode::InlineCode => self.pos,
            Mode::Think { content, .. } => *content,
            Mode::Fence { start, .. } | Mode::Region { start, .. } => *start,
        };
        let keep = self
            .emit_from
            .min(self.pos)
            .min(mode_start)
            .min(self.ident_start.unwrap_or(usize::MAX));
        // Amortised: drain only when at least half the buffer is dead, and enough of it.
        if keep < COMPACT_MIN || keep * 2 < self.buf.len() {
            return;
        }
        let keep = floor_boundary(&self.buf, keep);
        // Keep one byte of history for line-start decisions.
        let keep = floor_boundary(&self.buf, keep.saturating_sub(1));
        if keep == 0 {
            return;
        }
        match &mut self.buf {
            Cow::Borrowed(text) => *text = text.get(keep..).unwrap_or(""),
            Cow::Owned(buf) => {
                buf.drain(..keep);
            }
        }
        self.base += keep;
        self.wake_until = self.wake_until.saturating_sub(keep);
        self.wake_held = self.wake_held.saturating_sub(keep);
        self.pos -= keep;
        self.emit_from -= keep;
        if let Some(i) = &mut self.ident_start {
            *i -= keep;
        }
        if let Some(i) = &mut self.declined {
            *i = i.saturating_sub(keep);
        }
        match &mut self.mode {
            Mode::Text | Mode::InlineCode => {}
            Mode::Think { content, .. } => *content -= keep,
            Mode::Fence {
                start,
                content,
                search,
                ..
            } => {
                *start -= keep;
                *content -= keep;
                *search -= keep;
            }
            Mode::Region { start, .. } => *start -= keep,
        }
    }

    fn run(&mut self, is_final: bool) {
        // A text scan's wait on an opener ([`OPENER_HOLD`]) ends with it.
        self.wake = None;
        // (Here, not in `step_text`: set there, a flood of `[TOOL_CALLS]` cost 1.4 % more.)
        self.text_final = is_final;
        loop {
            let step = match self.mode {
                Mode::Text => self.step_text(is_final),
                Mode::InlineCode => self.step_inline(),
                Mode::Think { .. } => self.step_think(is_final),
                Mode::Fence { .. } => self.step_fence(is_final),
                Mode::Region { .. } => self.step_region(is_final),
            };
            if self.overflow {
                self.pass_rest();
                break;
            }
            if self.failed_over() && self.stop_after_failures() {
                break;
            }
            match step {
                Step::Continue => {
                    if self.pos >= self.buf.len()
                        && matches!(self.mode, Mode::Text | Mode::InlineCode)
                    {
                        break;
                    }
                }
                Step::Wait => break,
            }
        }
        self.settle_text(is_final);
    }

    /// More failed call attempts than `max_failed_calls` (error notes, reported or not, in
    /// [`DiagCap::errors`]): once the region that noted the last of them is read to its end
    /// (its calls, if any, are the reply's as they would be at any chunking), the rest of
    /// the reply is passed through as text, unparsed, with one error. Read on, a reply
    /// looping on a broken call built and dropped a note a copy: ~3,000-7,000
    /// instructions each, 20-51x prose (`bench/flood_screen.py`). Whether it stopped.
    #[cold]
    #[inline(never)]
    fn stop_after_failures(&mut self) -> bool {
        if !matches!(self.mode, Mode::Text | Mode::InlineCode) {
            return false;
        }
        if !self.overflow {
            self.overflow = true;
            self.wake = None;
            // Once a reply: a fence's sub-engine that stopped left it in the shared cap.
            if !self.diag_cap.stopped {
                self.diag_cap.stopped = true;
                let at = self.failed_end;
                self.push_diag(Diagnostic::error(
                    format!(
                        "more than {} failed call attempts in one reply; the rest is passed through as text, unparsed",
                        self.failed_limit
                    ),
                    at..at,
                ));
            }
        }
        self.pass_rest();
        true
    }

    /// Past `max_failed_calls`: the text scan opens no more markup, back to `run`, which
    /// stops reading at the next text position ([`Engine::stop_after_failures`]). Asked
    /// where markup opens (an opener, a `name(`, a bracket, a line opener, a fence) and
    /// between the regions one step reads ([`Engine::open_call`]'s loop): the walks and
    /// passes over failing regions read on within a step (asked only after each step,
    /// they noted failures past it one-shot that a stream did not). Not at every byte the
    /// scan stops at: there prose cost 0.6 % more.
    #[inline]
    fn failed_over(&self) -> bool {
        self.diag_cap.errors > self.failed_limit
    }

    /// How many copies of a unit holding `per_copy` error notes a pass may count before
    /// the reply's failed call attempts pass `max_failed_calls`: a pass never counts the
    /// one past it, which is read on its own, so the reply stops at the same note one-shot
    /// and at any chunking ([`Engine::stop_after_failures`]).
    fn failures_left(&self, per_copy: usize) -> usize {
        match per_copy {
            0 => usize::MAX,
            n => self.failed_limit.saturating_sub(self.diag_cap.errors) / n,
        }
    }

    /// A call past `max_calls` was dropped ([`Engine::emit_call`]): whatever the buffer
    /// holds past what was emitted or read as markup goes out as text, and so does every
    /// later push (`feed`'s overflow arm).
    #[cold]
    fn pass_rest(&mut self) {
        self.announced.clear();
        self.mode = Mode::Text;
        let len = self.buf.len();
        self.emit_text(len);
        self.pos = len;
        self.ident_start = None;
    }

    /// After a scan: emits the text now decided (at the end all of it), as one event.
    fn settle_text(&mut self, is_final: bool) {
        if matches!(self.mode, Mode::Text | Mode::InlineCode) {
            // Hold back a trailing word only when `word(` could be a call.
            let hold = if self.call_syntax_possible() && !is_final {
                self.ident_start.unwrap_or(self.pos)
            } else {
                self.pos
            };
            self.emit_text(hold.min(self.pos));
        }
        if is_final {
            let len = self.buf.len();
            self.emit_text(len);
        }
        self.flush_text_event();
    }

    fn object_formats(&self) -> bool {
        self.ctx.bare.objects && !self.bare_off
    }

    fn array_formats(&self) -> bool {
        (self.ctx.bare.arrays || self.fallbacks_on()) && !self.bare_off
    }

    fn call_syntax_possible(&self) -> bool {
        !self.ctx.calls.is_empty()
    }

    /// Skips a run of bytes that cannot start markup (the bulk of prose) in one go,
    /// leaving `line_start`/`ident_start` exactly as the byte-by-byte loop would.
    ///
    /// Only used when not at a line start (where `T`, fences and leading blanks matter), so
    /// `line_start` stays false. After a short run ([`Engine::short_runs`]) the next is read
    /// byte by byte first ([`Engine::skip_short`]); otherwise, or when that run is long, by
    /// [`Engine::skip_long`]'s block scan.
    #[inline(always)]
    fn skip_plain(&mut self) {
        // Tests: without the walks, every run is read by the block scan.
        #[cfg(test)]
        if self.no_walk {
            self.short_runs = false;
        }
        if self.short_runs && self.skip_short() {
            return;
        }
        self.skip_long();
    }

    /// [`Engine::skip_plain`] byte by byte, over about [`SHORT_SCAN`] bytes, and on over a
    /// newline whose line goes on as text ([`Engine::line_plain`]): `true` when the run
    /// ended there; `false` when it goes on past them, read up to where it got (not at a
    /// stop), for the block scan to go on from. Code stops every few bytes (`foo(1);\n` at
    /// its `(`, newline and the next line's `f`), and the block scan's fixed cost (~160
    /// instructions: its keys and a 64-byte mask), `skip_long`'s (its frame and first
    /// checks, ~100) and the trip through `step_text` for the newline and the line's first
    /// byte were most of the scan of such a line (`foo({#});\n` 32.8x prose). Stops that
    /// need the opener lookup are asked out of line ([`Engine::plain_stop_far`]): few in
    /// code.
    #[inline(never)]
    fn skip_short(&mut self) -> bool {
        let bytes = self.buf.as_bytes();
        let from = self.pos;
        let stops = &self.ctx.openers.stops;
        if bytes.get(from).is_none_or(|&b| stops.is_stop(b)) {
            return true;
        }
        let len = bytes.len();
        // Where the run is left to the block scan: a byte no scan stops at, this many bytes
        // after the first or a line's first byte.
        let mut cut = len.min(from + SHORT_SCAN);
        let mut found = None;
        let mut end = from + 1;
        let done = loop {
            let Some(&b) = bytes.get(end) else {
                break true;
            };
            if !stops.is_stop(b) {
                if end >= cut {
                    break false;
                }
                end += 1;
            } else if b == b'\n' {
                match self.line_plain(end, &mut found) {
                    Some(next) => {
                        end = next;
                        cut = len.min(next + SHORT_SCAN);
                    }
                    None => break true,
                }
            } else if self.plain_byte(end) && (self.nested || self.plain_stop_far(end, &mut found))
            {
                end += 1;
            } else {
                break true;
            }
        };
        self.scan_found = found;
        self.ident_start = self.ident_after(bytes.get(from..end).unwrap_or(&[]), from);
        self.pos = end;
        // Ended at a stop (or the end): the next run is read so too.
        self.short_runs = done;
        done
    }

    /// The newline at `pos`, inside a run [`Engine::skip_short`] reads or at the end of
    /// inline code [`Engine::pass_inline_walk`] reads (the text scan reads it the same way
    /// after either), the blanks after it and the line's first byte, when `step_text` reads
    /// them as a line end, blanks (which keep the line start) and an ordinary byte: no
    /// opener at the newline (one found is left in `found`), blanks no scan stops at, and a
    /// first byte that is no stop or one
    /// `plain_stop` passes (no opener there; not a backtick, a bracket that may open bare
    /// JSON; a `(` there follows no name), where no line opener starts (`TOOL_CALL:`, any
    /// case; one that may start with more to come counts). The offset after that first
    /// byte, else `None`. Out of line: prose's lines are long.
    #[inline(never)]
    fn line_plain(&self, pos: usize, found: &mut Option<(usize, usize)>) -> Option<usize> {
        let bytes = self.buf.as_bytes();
        if !self.nested && !self.plain_here(pos, found) {
            return None;
        }
        let openers = &self.ctx.openers;
        let mut first = pos + 1;
        while bytes
            .get(first)
            .is_some_and(|&b| matches!(b, b' ' | b'\t' | b'\r') && !openers.stops.is_stop(b))
        {
            first += 1;
        }
        let &next = bytes.get(first)?;
        if openers.stops.is_stop(next)
            && !(self.plain_byte(first) && (self.nested || self.plain_here(first, &mut None)))
        {
            return None;
        }
        if openers.line_first(next)
            && openers
                .line
                .iter()
                .any(|o| !matches!(match_at(bytes, first, o.text, true), Marker::No))
        {
            return None;
        }
        Some(first + 1)
    }

    /// [`Engine::skip_plain`] by the block scan: the stops of 64 bytes at a time as a bit
    /// mask, going on past each stop that is an ordinary byte here ([`Self::plain_stop`]:
    /// the `f` and `A` of prose, whose next bytes start no opener, a `(` after a space); the
    /// ident state is recomputed from the run's trailing name bytes only.
    fn skip_long(&mut self) {
        debug_assert!(!self.line_start);
        let bytes = self.buf.as_bytes();
        let from = self.pos;
        let rest = bytes.get(from..).unwrap_or(&[]);
        let stops = &self.ctx.openers.stops;
        // At a stop already (every byte of an opener flood): no block search.
        if rest.first().is_none_or(|&b| stops.is_stop(b)) {
            return;
        }
        // One byte before the end or a stop the scan would end at (a flood of `[x`):
        // read without the block scan (~270 instructions for the one byte).
        let mut found = None;
        if rest.len() == 1 || (stops.is_stop(rest[1]) && !self.plain_stop(from + 1, &mut found)) {
            self.scan_found = found;
            self.ident_start = self.ident_after(&rest[..1], from);
            self.pos = from + 1;
            return;
        }
        // A second byte that is a stop passed, then one more that is a stop: a few more
        // bytes, while each is one, are read one at a time before a block scan is built.
        if stops.is_stop(rest[1]) && rest.get(2).is_none_or(|&b| stops.is_stop(b)) {
            let short = if rest.len() == 2 || !self.plain_stop(from + 2, &mut found) {
                Some(2)
            } else {
                self.short_run(from, &mut found)
            };
            if let Some(n) = short {
                self.scan_found = found;
                self.ident_start = self.ident_after(&rest[..n], from);
                self.pos = from + n;
                return;
            }
        }
        let end = stops.scan(
            bytes,
            from,
            #[inline(always)]
            |i| self.plain_stop(i, &mut found),
        );
        self.short_runs = end - from < SHORT_SCAN;
        self.scan_found = found;
        self.ident_start = self.ident_after(&rest[..end - from], from);
        self.pos = end;
    }

    /// The end of a run `skip_plain` reads from `from` whose first three bytes it passed
    /// (the second and third stops), when each byte after them up to the run's end is a
    /// stop too and the run ends within [`SHORT_RUN`] bytes (at the end of the buffer or a
    /// stop not passed, with the opener found there in `found`), read byte by byte as the
    /// block scan reads its stops; `None` otherwise (the block scan reads it). A flood of
    /// `{\n{"` once bare JSON is off (its `"{` before each newline, the `{` a stop read as
    /// an ordinary byte) built a block scan for every two bytes (~290 instructions each,
    /// 30x prose). Out of line: seldom asked.
    #[inline(never)]
    fn short_run(&self, from: usize, found: &mut Option<(usize, usize)>) -> Option<usize> {
        let bytes = self.buf.as_bytes();
        let stops = &self.ctx.openers.stops;
        for n in 3..SHORT_RUN {
            let Some(&b) = bytes.get(from + n) else {
                return Some(n);
            };
            if !stops.is_stop(b) {
                return None;
            }
            if !self.plain_stop(from + n, found) {
                return Some(n);
            }
        }
        None
    }

    /// `ident_start` after `run`, the ordinary bytes from `from`, as `ordinary_byte` would
    /// leave it byte by byte: the trailing name bytes decide it, everything before them
    /// reset it.
    #[inline(always)]
    fn ident_after(&self, run: &[u8], from: usize) -> Option<usize> {
        let (n, end) = (run.len(), from + run.len());
        let trailing = run
            .iter()
            .rev()
            .take_while(|&&b| NAME_BYTES[usize::from(b)])
            .count();
        if trailing == 0 {
            return None;
        }
        let r = if trailing == n {
            self.ident_start.unwrap_or(from)
        } else {
            end - trailing
        };
        // The byte loop restarts a name after 256 bytes: the last restart point.
        let last = end - 1;
        Some(if last - r < 257 {
            r
        } else {
            r + (last - r) / 257 * 257
        })
    }

    /// Whether the stop byte at `pos`, inside a run `skip_plain` scans (so `pos - 1` is a
    /// byte of that run and not a line end), is read by `step_text` as an ordinary byte:
    /// no opener starts there (asked as with more to come: `Found::No` then holds at the
    /// end too) and the byte means nothing of itself here (not a newline or backtick, a
    /// bracket only when bare JSON is off, `(` only after a byte no name holds). An opener
    /// found there is left in `found` (for `scan_found`).
    #[inline(always)]
    fn plain_stop(&self, pos: usize, found: &mut Option<(usize, usize)>) -> bool {
        let ordinary = self.plain_byte(pos);
        if !ordinary || self.nested {
            return ordinary;
        }
        self.plain_here(pos, found)
    }

    /// The first half of [`Engine::plain_stop`]: whether the byte at `pos` means nothing of
    /// itself there.
    #[inline(always)]
    fn plain_byte(&self, pos: usize) -> bool {
        let bytes = self.buf.as_bytes();
        match bytes.get(pos) {
            Some(b'\n' | b'`') | None => false,
            Some(b'[') => !self.array_formats(),
            Some(b'{') => !self.object_formats(),
            Some(b'(') => {
                !self.call_syntax_possible()
                    || !bytes
                        .get(pos.wrapping_sub(1))
                        .is_some_and(|&b| is_name_byte(b))
            }
            Some(_) => true,
        }
    }

    /// [`Engine::plain_here`] out of line, for [`Engine::skip_short`].
    #[inline(never)]
    fn plain_stop_far(&self, pos: usize, found: &mut Option<(usize, usize)>) -> bool {
        self.plain_here(pos, found)
    }

    /// The second half of [`Engine::plain_stop`]: whether no opener starts at `pos` (asked as
    /// with more to come); one found is left in `found`.
    #[inline(always)]
    fn plain_here(&self, pos: usize, found: &mut Option<(usize, usize)>) -> bool {
        let bytes = self.buf.as_bytes();
        match self.ctx.openers.none_at_after(bytes, pos, &self.last_found) {
            Ok(none) => none,
            // `Found::At` with more to come holds at the end too: kept for `step_text`.
            Err(Found::At(i)) => {
                *found = Some((self.base + pos, i));
                false
            }
            Err(_) => false,
        }
    }

    fn step_text(&mut self, is_final: bool) -> Step {
        let len = self.buf.len();
        while self.pos < len {
            let mut pos = self.pos;
            let mut b = self.buf.as_bytes()[pos];
            // A stop (every byte of an opener flood) needs no bulk skip.
            if !self.line_start && !self.ctx.openers.stops.is_stop(b) {
                self.skip_plain();
                if self.pos >= len {
                    break;
                }
                pos = self.pos;
                b = self.buf.as_bytes()[pos];
            }
            if self.declined.is_some_and(|d| d == pos) {
                // Every reader of a region opened here said no: an ordinary byte.
                self.declined = None;
                self.ordinary_byte(pos, b);
                continue;
            }
            // Inside a fence only bare JSON is read: quoted markup is a code sample (R-4).
            if !self.nested && self.ctx.openers.stops.is_stop(b) {
                // Left as it is (not taken): an offset names the same bytes for good, and
                // clearing it cost a flood of `(` 4 instructions a byte.
                let found = match self.scan_found {
                    Some((at, i)) if at == self.base + pos => Found::At(i),
                    _ => {
                        let bytes = self.buf.as_bytes();
                        self.ctx
                            .openers
                            .at_after(bytes, pos, is_final, &self.step_found)
                    }
                };
                match found {
                    Found::Wait => {
                        if self.base + pos != self.no_hold_at {
                            self.hold_opener(pos);
                        }
                        return Step::Wait;
                    }
                    Found::At(i) => match self.open(pos, i, is_final) {
                        Some(step) => return step,
                        None => {
                            // No family reads a region here: an ordinary byte, as a region
                            // every reader declined (without the trip through one).
                            self.announced.clear();
                            self.ordinary_byte(pos, b);
                            continue;
                        }
                    },
                    Found::No => {
                        if self.ctx.openers.run_passes(b) && self.pass_after_run_byte(pos, b) {
                            continue;
                        }
                    }
                }
            }
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line_start = true;
                    self.ident_start = None;
                    continue;
                }
                b' ' | b'\t' | b'\r' => {
                    self.pos += 1;
                    self.ident_start = None;
                    continue;
                }
                b'`' => {
                    let bytes = self.buf.as_bytes();
                    let triple = backticks_at(bytes, pos);
                    if self.line_start && !self.nested {
                        match triple {
                            Marker::Partial if !is_final => return Step::Wait,
                            Marker::Full => {
                                if self.failed_over() {
                                    return Step::Continue;
                                }
                                let info_from = pos + 3;
                                // An info string longer than this is no fence opener.
                                const MAX_INFO: usize = 256;
                                let window = &bytes[info_from..len.min(info_from + MAX_INFO)];
                                let (info_end, content) = match memchr_near(b'\n', window) {
                                    Some(nl) => (info_from + nl, info_from + nl + 1),
                                    None if is_final && len - info_from <= MAX_INFO => (len, len),
                                    None if len - info_from < MAX_INFO => return Step::Wait,
                                    None => {
                                        // Too long to be an info string: plain backticks.
                                        self.pos = info_from;
                                        self.line_start = false;
                                        self.ident_start = None;
                                        return Step::Continue;
                                    }
                                };
                                let info = self.buf.get(info_from..info_end).unwrap_or("");
                                // Reasoning only: no fence can hold a call.
                                let (callable, markup) = if self.ctx.reasoning_only {
                                    (false, false)
                                } else {
                                    fence_kind(info)
                                };
                                // The text before the fence is emitted when the fence
                                // decides (`step_fence`), with the fence's own when it is
                                // text: one piece for a flood of fences.
                                #[cfg(test)]
                                if self.eager_fence_text {
                                    self.emit_text(pos);
                                }
                                // Closed in the bytes received: decided here, in the text
                                // scan, a fence passed as text without a mode of its own
                                // (the mode set, then the text's again, and a step each
                                // cost a flood of one-byte fences ~60 instructions a fence).
                                if let Some((content_end, end)) =
                                    fence_close(self.buf.as_bytes(), content, content)
                                {
                                    if self.fence_is_text(content, content_end, callable, markup) {
                                        self.pos = end;
                                        self.line_start = false;
                                        self.ident_start = None;
                                        continue;
                                    }
                                    return self.read_fence(pos, content, content_end, end, markup);
                                }
                                // Searched to the end: the fence's next search starts where
                                // a close may still come (as after a push), not again over
                                // its content.
                                self.set_plain_mode(Mode::Fence {
                                    start: pos,
                                    content,
                                    search: len.saturating_sub(3).max(content),
                                    callable,
                                    markup,
                                });
                                return Step::Continue;
                            }
                            _ => {}
                        }
                    }
                    match triple {
                        Marker::Full => self.pos += 3,
                        // Two more backticks may follow: inline code or a run of three.
                        Marker::Partial if !is_final => return Step::Wait,
                        _ => {
                            // A flood of inline code and text (`` `x `` or `` `\n ``),
                            // not asked again until more bytes arrive once it ran into the
                            // end of those received (asked in the call, a 64-byte push of
                            // `` `x `` cost 10 % more).
                            if matches!(triple, Marker::No)
                                && self.abs(len) != self.no_pass_end
                                && self.pass_inline(pos)
                            {
                                return Step::Continue;
                            }
                            if matches!(triple, Marker::No) && self.pass_inline_walk(pos) {
                                continue;
                            }
                            self.pos += 1;
                            self.mode = Mode::InlineCode;
                        }
                    }
                    self.line_start = false;
                    self.ident_start = None;
                    return Step::Continue;
                }
                b'[' if self.array_formats() => {
                    // Inside a run of brackets (a flood of `[`): passed at once.
                    if is_bracket_run(self.buf.as_bytes(), pos) && self.pass_brackets(pos) {
                        continue;
                    }
                    let plausible = array_start_plausible(&self.buf.as_bytes()[pos..], is_final);
                    if let Some(step) = self.open_plain_json(pos, plausible, is_final) {
                        return step;
                    }
                    // No bare JSON here: a flood of it (`[x[x…`) is passed at once.
                    if self.pass_implausible(pos, b, is_final) {
                        continue;
                    }
                }
                b'{' if self.object_formats() => {
                    if is_bracket_run(self.buf.as_bytes(), pos) && self.pass_brackets(pos) {
                        continue;
                    }
                    let plausible = object_start_plausible(&self.buf.as_bytes()[pos..], is_final);
                    if let Some(step) = self.open_plain_json(pos, plausible, is_final) {
                        return step;
                    }
                    if self.pass_implausible(pos, b, is_final) {
                        continue;
                    }
                }
                // Bare JSON off (the rescan budget spent): a flood of `[` (`[\n`, `[[x\n`) is
                // passed at once. Not `{`: fences' floods of `{"` read at the end, every
                // bracket asking, cost 1.3-3.7 % more.
                // In the guard: when nothing is passed, the arms after it read the byte.
                b'[' if self.bare_off
                    && self.abs(pos)
                        >= self.no_implausible_before.min(self.no_bracket_walk_before)
                    && self.pass_bare_off(pos, b, is_final) =>
                {
                    continue;
                }
                b'(' if self.call_syntax_possible() => {
                    if let Some(s) = self.ident_start
                        && self.open_call(s, pos)
                    {
                        return Step::Continue;
                    }
                    // A run of `(` where no opener starts with one: every `(` after the
                    // first follows a byte no name holds, so all are ordinary (a flood of
                    // `(` went through the opener lookup and this arm a byte, ~72
                    // instructions each, 20.4x prose).
                    if self.buf.as_bytes().get(pos + 1) == Some(&b'(')
                        && self.ctx.openers.none_starts_with(b'(')
                        && self.pass_paren_run(pos)
                    {
                        continue;
                    }
                }
                _ if self.line_start && self.ctx.openers.line_first(b) => {
                    if let Some(step) = self.open_at_line_start(pos, is_final) {
                        return step;
                    }
                }
                _ => {}
            }
            self.ordinary_byte(pos, b);
        }
        Step::Continue
    }

    /// Opener `i` at `pos` was declined at once by every family: `None` (the byte is
    /// ordinary text, `step_text` reads it so), unless more bytes than it are known to be
    /// ordinary text too, which are then read here as the scan would read them after the
    /// same declines ([`Engine::pass_ordinary`]): the next positions holding the opener
    /// that the families said are declined too ([`crate::family::Family::declined_run`]),
    /// where `i` is the longest opener (what the scan would find there), and after the last
    /// declined one the opener's bytes that no scan stops at
    /// ([`crate::openers::Openers::inert`]). Out of line: asked only on declines, and kept
    /// out of the text scan's code (inlined there, prose cost 0.3 % more).
    #[inline(never)]
    fn pass_declined(&mut self, pos: usize, i: usize, is_final: bool) -> Option<Step> {
        // A unit of the opener and bytes read as text, repeated (`<tool_call>x<tool_call>x…`).
        let every_family_declines = |ctx: &Ctx, head: &str| match ctx.openers.get(i) {
            Some(o) => match &o.action {
                Action::Region(families) => families
                    .iter()
                    .all(|by| by.open_region(head, false, ctx).is_none()),
                _ => false,
            },
            None => false,
        };
        if self.pass_declined_units(pos, i, every_family_declines) {
            return Some(Step::Continue);
        }
        let Some(Action::Region(families)) = self.ctx.openers.get(i).map(|o| &o.action) else {
            return None;
        };
        let region = self.buf.get(pos..).unwrap_or("");
        let run = if self.ctx.openers.runs_declined(i) {
            families
                .iter()
                .map(|by| by.family.declined_run(by.opener, region))
                .min()
                .unwrap_or(0)
        } else {
            0
        };
        let inert = self.ctx.openers.inert(i);
        // Copies that differ (`>>>0>>>1…`): read on while each is declined.
        let walk = self.abs(pos) >= self.no_walk_before;
        if run == 0 && inert == 0 {
            return (walk && self.pass_declined_walk(pos, i, is_final)).then_some(Step::Continue);
        }
        if run == 0
            && self.ctx.openers.repeats_declined(i)
            && let Some(next) = self.declined_repeats(pos, i, inert)
        {
            self.announced.clear();
            self.pass_ordinary(pos, next);
            self.expect_at(next, i);
            return Some(Step::Continue);
        }
        if run == 0 && walk && self.pass_declined_walk(pos, i, is_final) {
            return Some(Step::Continue);
        }
        let j = if run == 0 {
            pos + 1
        } else {
            self.ctx
                .openers
                .longest_until(self.buf.as_bytes(), pos + 1, pos + run, i)
        };
        self.announced.clear();
        self.expect_again(j - 1, i);
        let end = self.short_plain_end(j + inert);
        self.pass_ordinary(pos, end);
        Some(Step::Continue)
    }

    /// Where the text scan goes on after a declined opener whose bytes through `from` are
    /// read as ordinary text (so `from` is not at a line start): past the bytes `step_text`
    /// would read next as ordinary ones, up to the first stop it would not pass over
    /// ([`Engine::plain_stop`], as [`Engine::skip_plain`] asks it; an opener found there is
    /// left in `scan_found`) or the opener `expect_again` left there, at most
    /// [`SHORT_PLAIN`] bytes read one by one (the rest is left to the scan). The junk
    /// between the openers of a flood whose copies differ (`<tool_call>0<tool_call>1…`) is a
    /// few bytes: the trip back through `step_text` for the opener's last byte and
    /// `skip_plain`'s block scan for the rest cost ~450 instructions an opener. Here, not in
    /// `skip_plain`: prose reads long runs. Inlined in both callers (`pass_declined` and
    /// `decline_literal`): called out of line, a flood of `<tool_call>{#}\n` cost 1.4 % more.
    #[inline(always)]
    fn short_plain_end(&mut self, from: usize) -> usize {
        let bytes = self.buf.as_bytes();
        let mut end = bytes.len().min(from + SHORT_PLAIN);
        if let Some((at, _)) = self.scan_found
            && at >= self.base + from
        {
            end = end.min(at - self.base);
        }
        let stops = &self.ctx.openers.stops;
        let mut found = None;
        let mut q = from;
        while q < end {
            if stops.is_stop(bytes[q]) && !self.plain_stop(q, &mut found) {
                break;
            }
            q += 1;
        }
        if found.is_some() {
            self.scan_found = found;
        }
        q.max(from)
    }

    /// Opener `i` at `pos` was declined at once by every family (its first byte is text): the
    /// bytes after it are read here as the scan reads them for as long as each is decided
    /// to be text by its own bytes, and `true` comes back when that passed at least one
    /// more copy of the opener. Passed: bytes no scan stops at, stops `plain_stop` says are
    /// ordinary there (asked as the bulk skip asks, after a passed byte), a newline followed
    /// by blanks (no stops) and then such a byte that starts no line-start opener (or opener
    /// `i`, declined as below), and a stop where the opener lookup finds opener `i` (decided
    /// whatever follows) and every family declines its region at once, asked as `open` asks
    /// (with `is_final`): the scan reads its first byte as text too, and the opener's bytes
    /// after it that it reads so there ([`crate::openers::Openers::copy_passed`]), and reads
    /// on after them. Each unit (a copy and the bytes after it) is at most [`MAX_UNIT`] bytes. A numbered flood (`>>>0>>>1…`),
    /// whose copies differ so that no unit repeats, was read byte by byte (~950
    /// instructions a 5-byte unit, 38x prose). Out of line: asked only on declines.
    #[inline(never)]
    fn pass_declined_walk(&mut self, pos: usize, i: usize, is_final: bool) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.abs(pos) < self.no_walk_before {
            return false;
        }
        let mut walk = DeclinedWalk {
            q: pos + 1,
            unit: pos,
            copies: 0,
        };
        // The control tokens the scan strips between the copies (`>>>x<|eom|>{w}`: each
        // copy's `<|eom|>` ended the walk, and the scan read the flood copy by copy, ~1,700
        // instructions a copy, 30.7x prose), read by a second copy of the walk from the
        // first one on: their handling in the one walk cost floods without them (`>>>{#}`,
        // `[TOOL_CALLS]{#}`) 2.5-5 % more.
        let mut strips = UnitStrips::<MAX_WALK_STRIPS>::default();
        if self.declined_walk::<false>(pos, i, is_final, &mut walk, &mut strips) {
            self.declined_walk::<true>(pos, i, is_final, &mut walk, &mut strips);
        }
        let DeclinedWalk { q, copies, .. } = walk;
        if copies == 0 {
            // Not asked again over the bytes after it (every opener of a flood whose units
            // hold bytes the scan reads otherwise, `]<]minimax[>[<tool_call>0…`, asked).
            self.no_walk_before = self.abs(pos) + NO_UNITS_SKIP;
            return false;
        }
        // The tokens stripped, as the scan strips them ([`Engine::strip`]).
        for &(at, len) in strips.all() {
            self.emit_text(pos + at);
            self.emit_from = pos + at + len;
            self.markup_found = true;
        }
        self.announced.clear();
        self.pass_ordinary(pos, q);
        #[cfg(test)]
        {
            self.declined_walked += q - pos;
        }
        true
    }

    /// The loop of [`Engine::pass_declined_walk`] from `walk` on, up to where the scan reads
    /// otherwise (`walk.q`). Without `STRIPS`, it ends at a control token the scan strips
    /// there ([`Engine::strip_len`]; `true` comes back, `walk.q` where the walk goes on);
    /// with it, each such token is passed (kept in `strips`, the walk ends before one past
    /// their bound), the last one taken again by one compare before the lookup
    /// ([`crate::openers::Openers::longest_at`]): the lookup's own last-found opener then
    /// stays the walk's (the two swapped it, each walking the trie from the root).
    #[inline(never)]
    fn declined_walk<const STRIPS: bool>(
        &mut self,
        pos: usize,
        i: usize,
        is_final: bool,
        walk: &mut DeclinedWalk,
        strips: &mut UnitStrips<MAX_WALK_STRIPS>,
    ) -> bool {
        let Some(Action::Region(families)) = self.ctx.openers.get(i).map(|o| &o.action) else {
            return false;
        };
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        let stops = &openers.stops;
        let first = bytes.get(pos).copied();
        let declined_at = |q: usize| {
            let region = self.buf.get(q..).unwrap_or("");
            families.iter().all(|by| {
                by.removes(region, is_final).is_none()
                    && by.open_region(region, is_final, &self.ctx).is_none()
            })
        };
        let (mut q, mut unit, mut copies) = (walk.q, walk.unit, walk.copies);
        let (mut strip_first, mut strip) = (0u8, (usize::MAX, 0));
        let handed = 'walk: loop {
            // The bytes no scan stops at, up to the unit's bound, in a tight loop (a
            // check of the bound and the end a byte cost ~1 M instructions of `>>>{#}`).
            let limit = bytes.len().min(unit + MAX_UNIT);
            while q < limit && !stops.is_stop(bytes[q]) {
                q += 1;
            }
            let Some(&c) = bytes.get(q).filter(|_| q < limit) else {
                break false;
            };
            if STRIPS && c == strip_first && openers.longest_at(bytes, q, strip.0) {
                if strips.push(q - pos, strip.1).is_none() {
                    break false;
                }
                q += strip.1;
                continue;
            }
            let mut found = None;
            // Where the walk ends when the copy at a line start is not passed: its newline.
            let mut line = None;
            if c == b'\n' {
                let r = after_blank_lines(bytes, stops, q + 1);
                match bytes.get(r) {
                    Some(&d) if !stops.is_stop(d) && !openers.line_first(d) => {
                        q = r + 1;
                        continue;
                    }
                    // The walk's opener at the line start, the longest there whatever
                    // follows: the scan looks for openers before it asks a line start's
                    // own openers, and reads a declined one as text as it reads any copy
                    // (a flood of `<tool_call>0\n…` went back to the scan at every copy,
                    // ~1,180 instructions each, 19x prose).
                    Some(&d)
                        if Some(d) == first && r < limit && openers.longest_at(bytes, r, i) =>
                    {
                        line = Some(q);
                        found = Some((r, i));
                        q = r;
                    }
                    // A line's first letter that starts a line opener (`t` of `TOOL_CALL:`)
                    // is ordinary where none starts there (`>>>\nthe…` stopped the walk at
                    // each `t`, 24.2x prose). Asked last: in the first arm, `>>>{#}` cost
                    // 2.5 % more.
                    Some(&d) if !stops.is_stop(d) && self.no_line_opener(r, is_final) => {
                        q = r + 1;
                        continue;
                    }
                    // A bracket the scan reads as an ordinary byte at the line start (its
                    // arm comes before the line-start one; with bare JSON off, one that
                    // starts no line opener): a flood of `<|start|>\n{"` stopped the walk at
                    // each copy's newline (~920 instructions a copy, 21.9x prose).
                    Some(&(b'[' | b'{')) if self.walk_passes_bracket(r, is_final) => {
                        q = r + 1;
                        continue;
                    }
                    // A line opener's line its family declines (`tool_call:` naming no
                    // tool): its first byte is text, as the scan reads it, and the walk
                    // goes on after it (`<function name="\ntool_call:{w}` ended the walk
                    // at each copy's line, 22.5x prose).
                    Some(&d)
                        if openers.line_first(d)
                            && r < limit
                            && self.walk_line_declined(r, is_final) =>
                    {
                        q = r + 1;
                        continue;
                    }
                    // Another stop: a control token the scan strips there is stripped below
                    // (the scan looks for openers before the line start's own; no line start
                    // after it: `[TOOL_CALLS]\n<|eot|> `, 20.6x prose).
                    Some(&d) if !self.nested && r < limit && !matches!(d, b'[' | b'{') => {
                        match openers.none_at(bytes, r) {
                            Err(Found::At(j)) if self.strip_len(j).is_some() => {
                                line = Some(q);
                                found = Some((r, j));
                                q = r;
                            }
                            _ => break false,
                        }
                    }
                    _ => break false,
                }
            } else if self.plain_stop(q, &mut found) {
                q += 1;
                continue;
            }
            // A byte `plain_stop` refused before its lookup that starts the walk's own
            // opener, the longest here whatever follows: what the lookup below finds after
            // the bracket's plausibility test, by one compare (a flood of `[TOOL_CALLS]0…`
            // asked each copy's `[` for bare JSON first, ~450 instructions). Not asked
            // before `plain_stop`: a `>` of `>>>0…` found it there, one compare more each.
            if found.is_none() && Some(c) == first && openers.longest_at(bytes, q, i) {
                found = Some((q, i));
            } else if found.is_none() && self.walk_passes_bracket(q, is_final) {
                q += 1;
                continue;
            }
            // A byte `plain_stop` refuses before its lookup (a bracket) may start the opener
            // too: the scan looks for openers first.
            if found.is_none()
                && let Err(Found::At(j)) = openers.none_at(bytes, q)
            {
                found = Some((q, j));
            }
            match found {
                // The walk's opener, and while each is declined its copies: the copy's bytes
                // after the first that the scan reads as text there
                // ([`crate::openers::Openers::copy_passed_found`]) at once, and where they end
                // at the opener again (the next `>>>` of `>>>>`), the longest there, that one
                // too (looked up again by the loop, ~100 instructions a copy of `>>>>{w}`).
                // One call of `declined_at` (a second one outlined it, +11 % `[TOOL_CALLS]{#}`).
                Some((_, j)) if j == i => {
                    let mut none = true;
                    while declined_at(q) {
                        #[cfg(test)]
                        {
                            self.declined_chained += usize::from(!none);
                        }
                        none = false;
                        copies += 1;
                        unit = q;
                        let (k, at) = openers.copy_passed_found(bytes, q, i);
                        q += k;
                        if at as usize != i || self.nested || q >= bytes.len().min(unit + MAX_UNIT)
                        {
                            continue 'walk;
                        }
                    }
                    if none {
                        q = line.unwrap_or(q);
                    }
                    break false;
                }
                // A control token the scan strips (found whatever follows, so whole): the
                // scan goes on after it as after an ordinary byte ([`Engine::strip_len`]).
                Some((_, j)) if j != i && !self.nested && self.strip_len(j).is_some() => {
                    if !STRIPS {
                        q = line.unwrap_or(q);
                        break true;
                    }
                    let len = self.strip_len(j).unwrap_or(1);
                    if strips.push(q - pos, len).is_none() {
                        q = line.unwrap_or(q);
                        break false;
                    }
                    (strip_first, strip) = (bytes.get(q).copied().unwrap_or(0), (j, len));
                    q += len;
                }
                Some((_, j)) if j != i && line.is_none() && self.walk_declined(j, q, is_final) => {
                    q += 1;
                }
                _ => {
                    q = line.unwrap_or(q);
                    break false;
                }
            }
        };
        *walk = DeclinedWalk { q, unit, copies };
        handed
    }

    /// [`Engine::declined_walk`]: whether the scan reads the line starting at `r` as a
    /// line opener's line declined at once (`Engine::line_text`: its first byte text, the
    /// scan on after it): no opener starts at `r` (the scan looks for one first), one line
    /// opener only is there whatever follows, its one family declines the line on its
    /// bytes ([`crate::family::Family::line_declines`]), and visible text came before
    /// (`line_text` emits the text before a reply's first).
    #[inline(never)]
    fn walk_line_declined(&self, r: usize, is_final: bool) -> bool {
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        // The opener lookup last: asked first, it cost floods of a declined marker at a
        // line start (`<|start|>\n<|end|>{w}`) 30 % more.
        if !self.seen_visible {
            return false;
        }
        let mut found = None;
        for (i, o) in openers.line.iter().enumerate() {
            match match_at(bytes, r, o.text, true) {
                Marker::Full if found.is_none() => found = Some(i),
                Marker::No => {}
                _ => return false,
            }
        }
        let Some(o) = found.and_then(|i| openers.line.get(i)) else {
            return false;
        };
        if !self.nested && openers.stops.is_stop(bytes[r]) && openers.none_at(bytes, r) != Ok(true)
        {
            return false;
        }
        match o.families.as_slice() {
            [by] => by
                .family
                .line_declines(by.opener, self.buf.get(r..).unwrap_or(""), is_final),
            _ => false,
        }
    }

    /// [`Engine::pass_declined_walk`] and [`Engine::pass_implausible_walk`]: whether the
    /// bracket at `q` is read by the scan as an ordinary byte: no opener starts at it, it starts no run of brackets, and its
    /// plausibility test (as the scan asks it) says no. Out of line: the walk's loop, with
    /// it inlined, cost `>>>{#}` 14 %.
    #[inline(never)]
    fn walk_passes_bracket(&self, q: usize, is_final: bool) -> bool {
        self.bracket_is_ordinary(q, is_final)
    }

    /// [`Engine::walk_passes_bracket`], inlined where a walk asks it at every bracket
    /// ([`Engine::pass_implausible_walk`]: out of line there, `[{#}` cost 4 % more).
    #[inline(always)]
    fn bracket_is_ordinary(&self, q: usize, is_final: bool) -> bool {
        let bytes = self.buf.as_bytes();
        let start = bytes.get(q..).unwrap_or(&[]);
        let plausible = match start.first() {
            Some(b'[') if self.array_formats() => array_start_plausible(start, is_final),
            Some(b'{') if self.object_formats() => object_start_plausible(start, is_final),
            // Bare JSON off: an ordinary byte where no opener starts (no line-start opener's
            // first byte: the scan reads it ahead of the line-start arm then).
            Some(&b @ (b'[' | b'{')) if self.bare_off => {
                return !self.ctx.openers.line_first(b)
                    && (self.nested || self.ctx.openers.none_at(bytes, q) == Ok(true));
            }
            _ => return false,
        };
        plausible == Some(false)
            && !is_bracket_run(bytes, q)
            && (self.nested || self.ctx.openers.none_at(bytes, q) == Ok(true))
    }

    /// [`Engine::pass_declined_walk`]: whether opener `j` at `q` (another than the walk's)
    /// is declined at once, asked as `open` asks: a region opener every family of which
    /// declines (`<tool_call>` inside the MiniMax block opener `]<]minimax[>[<tool_call>`,
    /// whose numbered flood was read opener by opener, 21x), or a suffixed marker with no
    /// suffix after it (`</think:` of `</think:{"\n{w}}`: each copy ended the failed-region
    /// walk, which began again after it, ~2,970 instructions a copy, 49.9x prose): its
    /// first byte is text too, as `open`'s `decline_literal` reads it.
    #[inline(never)]
    fn walk_declined(&self, j: usize, q: usize, is_final: bool) -> bool {
        if self.nested {
            return false;
        }
        let Some(o) = self.ctx.openers.get(j) else {
            return false;
        };
        let families = match &o.action {
            Action::Region(families) => families,
            Action::SuffixedReasoning(_) | Action::SuffixedStrip => {
                let after = self.buf.as_bytes().get(q + o.text.len()..).unwrap_or(&[]);
                return read_suffix(after, is_final) == Suffix::No;
            }
            _ => return false,
        };
        let region = self.buf.get(q..).unwrap_or("");
        // A family opening as an earlier one declines as it did, unasked (as `open` asks).
        families.iter().all(|by| {
            by.declined_as_before()
                || (by.removes(region, is_final).is_none()
                    && by.open_region(region, is_final, &self.ctx).is_none())
        })
    }

    /// Opener `i` at `pos` was declined (`declines` says so of a region holding only the
    /// bytes given, with more to come): when the bytes from it repeat a unit that
    /// [`Engine::declined_units`] finds read as text, those units are read at once and
    /// `true` comes back; unless the unit's bytes are those of one found not to be, or the
    /// bytes received ended before that was known, which are kept ([`Engine::no_units`],
    /// [`Engine::no_pass_end`]) so that no copy asks again.
    fn pass_declined_units(
        &mut self,
        pos: usize,
        i: usize,
        declines: impl Fn(&Ctx, &str) -> bool,
    ) -> bool {
        // Inside the bytes after a unit not repeated first: every opener of a flood whose
        // copies differ asks here.
        if self.abs(pos) < self.no_units_before {
            return false;
        }
        let lookahead = self.lookahead();
        let bytes = self.buf.as_bytes();
        let known = self.abs(bytes.len()) == self.no_pass_end
            || self
                .no_units
                .iter()
                .any(|w| !w.is_empty() && bytes.get(pos..pos + w.len()) == Some(w.as_slice()));
        if known {
            return false;
        }
        match self.declined_units(pos, i, declines, lookahead) {
            Some(Ok((end, line))) => {
                self.pass_units(pos, end, line);
                return true;
            }
            Some(Err(0)) => self.no_pass_end = self.abs(self.buf.len()),
            Some(Err(window)) => self.no_unit(pos, window),
            None => self.no_units_before = self.abs(pos) + NO_UNITS_SKIP,
        }
        false
    }

    /// Suffixed opener `i` at `pos` (`<think:`) was declined: its suffix is none
    /// ([`read_suffix`]). A flood of it with junk after it (`<think:1,`) is read as
    /// [`Engine::pass_declined_units`] reads declined regions' units, the decline asked
    /// again of each unit's window ([`read_suffix`] reads no byte past the window then:
    /// the suffix it says is none ends inside it). Out of line: asked only on declines.
    #[inline(never)]
    fn pass_declined_suffix(&mut self, pos: usize, i: usize) -> bool {
        let Some(text) = self.ctx.openers.get(i).map(|o| o.text.len()) else {
            return false;
        };
        self.pass_declined_units(pos, i, |_: &Ctx, head: &str| {
            let after = head.as_bytes().get(text..).unwrap_or(&[]);
            read_suffix(after, false) == Suffix::No
        })
    }

    /// Opener `i` at `pos` was declined at once by every family: when the bytes from it
    /// repeat a unit, the opener and the bytes up to its next copy (at most [`MAX_UNIT`]
    /// bytes, a flood of `<tool_call>x` or `[TOOL_CALLS]x `), read by the scan as ordinary
    /// text, the end of the units read so comes back (`None`: no such run), each unit read
    /// as the first is. A unit's reading is decided by the bytes of its window (the unit and
    /// [`crate::openers::Openers::lookahead`] bytes after it): that opener `i` is the one
    /// found at its start (the lookup reads no further), that every family declines its
    /// region (asked again on the window alone with more to come: a decline then is the one
    /// for any bytes after it, or a stream holding only the window would read otherwise),
    /// and that each stop after the opener's first byte is an ordinary byte (`plain_stop`:
    /// no newline, backtick, bracket that may open, or opener). A unit whose window lies
    /// inside the periodic run holds the same bytes there as the first, so it is read the
    /// same way; the first unit whose window does not is left to the scan. `Some(Err(w))`
    /// when the unit repeats but is not read so: a unit whose first `w` bytes are the same
    /// is not either ([`Engine::no_units`]); `Some(Err(0))` when the bytes received end
    /// before that is known ([`Engine::no_pass_end`]).
    fn declined_units(
        &self,
        pos: usize,
        i: usize,
        declines: impl Fn(&Ctx, &str) -> bool,
        lookahead: usize,
    ) -> Option<Result<(usize, bool), usize>> {
        let text = self.ctx.openers.get(i)?.text.as_bytes();
        let bytes = self.buf.as_bytes();
        let from = pos + text.len();
        let look = bytes.get(from..)?;
        let look = look
            .get(..MAX_UNIT.saturating_sub(text.len()))
            .unwrap_or(look);
        // The opener's next copy: its first byte found, then the rest compared (a `memmem`
        // finder's set-up cost more than the few compares).
        let first = *text.first()?;
        let mut at = 0;
        let period = loop {
            at += memchr::memchr(first, look.get(at..)?)?;
            if look.get(at..).is_some_and(|r| r.starts_with(text)) {
                break text.len() + at;
            }
            at += 1;
        };
        // The end of the bytes received before the next units, or too few of them for the
        // pass to save more than it asks (a stream's push): `Some(Err(0))`.
        if bytes.len() < pos + MIN_UNITS * period + lookahead {
            return Some(Err(0));
        }
        let unit = bytes.get(pos..pos + period)?;
        let Some(next) = bytes.get(pos + period..pos + 2 * period) else {
            return Some(Err(0));
        };
        if next != unit {
            return None;
        }
        // The window ends on a character boundary (the families read it as text): a unit
        // of a non-ASCII opener (`<｜DSML｜tool_calls>x`) got `None` from `get` and was
        // asked again at every copy, unmemoised (+40 %). A longer window only asks more
        // of the run.
        let mut window = period + lookahead;
        while pos + window < bytes.len() && !self.buf.is_char_boundary(pos + window) {
            window += 1;
        }
        if bytes.len() < pos + window {
            return Some(Err(0));
        }
        let Some(line) = self.ordinary_after_in(pos, period, pos + window) else {
            return Some(Err(window));
        };
        let head = self.buf.get(pos..pos + window)?;
        if self.ctx.openers.none_at(head.as_bytes(), 0) != Err(Found::At(i))
            || !declines(&self.ctx, head)
        {
            return Some(Err(window));
        }
        let span = periodic_len(&bytes[pos..], period);
        match span.checked_sub(window) {
            Some(rest) => Some(Ok((pos + (rest / period + 1) * period, line))),
            None if pos + span >= bytes.len() => Some(Err(0)),
            None => None,
        }
    }

    /// Keeps `buf[pos..pos + window]`, the window of a unit [`Engine::declined_units`] found
    /// not to repeat as text, in the older of the two slots of [`Engine::no_units`] (a unit
    /// may hold two openers).
    #[inline(never)]
    fn no_unit(&mut self, pos: usize, window: usize) {
        let Some(w) = self.buf.as_bytes().get(pos..pos + window) else {
            return;
        };
        let slot = &mut self.no_units[self.no_unit_next];
        slot.clear();
        slot.extend_from_slice(w);
        self.no_unit_next ^= 1;
    }

    /// Opener `i` at `pos` was declined by every family, none of which knows a run after
    /// it ([`crate::family::Family::declined_run`]), and `inert` of its bytes after its
    /// first are inert ([`crate::openers::Openers::inert`]): where the scan must look next
    /// after reading the bytes from `pos` as ordinary text, when that is past the opener's
    /// next repeat (`None`: not known so). So it is when the opener is repeated back to
    /// back (`<tool_call><tool_call>…`) and every family of it declines a region of it
    /// followed directly by itself ([`crate::openers::Openers::repeats_declined`]): each
    /// repeat followed by another, where `i` is the longest opener whatever follows, is
    /// declined as the first was, and its bytes after its first are ordinary text as the
    /// first's are; the first repeat not known so is left to the scan (at most
    /// [`crate::family::MAX_DECLINED_RUN`] repeats an ask). Out of line: asked only for
    /// such openers.
    #[inline(never)]
    fn declined_repeats(&self, pos: usize, i: usize, inert: usize) -> Option<usize> {
        let text = self.ctx.openers.get(i)?.text.as_bytes();
        let len = text.len();
        let bytes = self.buf.as_bytes();
        // The first byte before the compare: most declines are not repeats.
        let holds = |at: usize| {
            bytes.get(at) == text.first() && bytes.get(at..at + len).is_some_and(|h| h == text)
        };
        if !holds(pos + len) || !holds(pos + 2 * len) {
            return None;
        }
        // The opener's bytes past its inert ones (the `>` of `<tool_call>`, where `>>>` may
        // start in general) are read by the scan as text where a repeat follows, judged on
        // the bytes through that repeat (the same for every repeat passed, and a judgement
        // with more to come holds whatever follows): an ordinary byte where no opener
        // starts; a `[`/`{` that starts no bare JSON (`[>`); or where an opener starts (the
        // `<tool_call>` in `]<]minimax[>[<tool_call>`), one every family of it declines.
        let through_next = bytes.get(..pos + 2 * len)?;
        for k in 1 + inert..len {
            let q = pos + k;
            let ordinary = match *text.get(k)? {
                b'\n' | b' ' | b'\t' | b'\r' | b'`' | b'(' => false,
                b'[' => array_start_plausible(through_next.get(q..)?, false) == Some(false),
                b'{' => object_start_plausible(through_next.get(q..)?, false) == Some(false),
                _ => true,
            };
            if !ordinary {
                return None;
            }
            match self.ctx.openers.none_at(through_next, q) {
                Ok(true) => {}
                Err(Found::At(j)) => {
                    let Some(Action::Region(inside)) = self.ctx.openers.get(j).map(|o| &o.action)
                    else {
                        return None;
                    };
                    let region = self.buf.get(q..pos + 2 * len)?;
                    if inside
                        .iter()
                        .any(|by| by.open_region(region, false, &self.ctx).is_some())
                    {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        let mut m = 1;
        while m < crate::family::MAX_DECLINED_RUN
            && holds(pos + (m + 1) * len)
            && self
                .ctx
                .openers
                .longest_until(bytes, pos + m * len, pos + m * len, i)
                > pos + m * len
        {
            m += 1;
        }
        (m > 1).then_some(pos + m * len)
    }

    /// Opener `i` at `start` was declined: when `i` is the longest opener right after it
    /// too (a reply repeating it, a flood), that is left in `scan_found` for `step_text`,
    /// whose walk of the opener trie there (~300 instructions for `<|tool_call|>`, a binary
    /// search under `<|`) becomes one compare here.
    fn expect_again(&mut self, start: usize, i: usize) {
        let Some(o) = self.ctx.openers.get(i) else {
            return;
        };
        self.expect_at(start + o.text.len(), i);
    }

    /// When opener `i` is the longest opener at `next` whatever follows, it is left in
    /// `scan_found` for `step_text` (see [`Engine::expect_again`]).
    fn expect_at(&mut self, next: usize, i: usize) {
        // Its first byte before the walk (~35 instructions): after a declined opener of a
        // flood whose copies differ (`<|start|>0<|start|>1…`) the next byte is seldom it.
        let first = self
            .ctx
            .openers
            .get(i)
            .and_then(|o| o.text.as_bytes().first());
        if self.buf.as_bytes().get(next) != first {
            return;
        }
        if self
            .ctx
            .openers
            .longest_until(self.buf.as_bytes(), next, next, i)
            > next
        {
            self.scan_found = Some((self.base + next, i));
        }
    }

    /// Every reader of the region of literal opener `i` at `start` declined it: the opener's
    /// first byte is ordinary text, and so are its bytes after it that no scan stops at
    /// ([`crate::openers::Openers::inert`]), read here at once ([`Engine::pass_ordinary`])
    /// rather than by the scan's bulk skip after [`Engine::decline`] (whose block compares
    /// cost ~290 instructions for the few bytes up to the next opener of a flood).
    #[inline(never)]
    fn decline_literal(&mut self, start: usize, i: usize) {
        let inert = self.ctx.openers.inert(i);
        if inert == 0 || self.nested {
            self.decline(start);
        } else {
            self.announced.clear();
            self.mode = Mode::Text;
            self.expect_again(start, i);
            #[cfg(test)]
            if self.no_walk {
                self.pass_ordinary(start, start + 1 + inert);
                return;
            }
            // And the few bytes after them up to the next stop the scan would not pass (a
            // flood whose copies differ, `<think:0<think:1…`: the bulk skip's block scan
            // for the number cost ~350 instructions a unit, 19.7x prose).
            let end = self.short_plain_end(start + 1 + inert);
            self.pass_ordinary(start, end);
            return;
        }
        self.expect_again(start, i);
    }

    /// A run of `(` at `pos` (`step_text`'s `(` arm, no opener starting with `(`): passed
    /// as [`Engine::pass_run`] passes a run; `false` (nothing done) in tests without walks.
    /// Out of line: prose seldom has two `(` in a row.
    #[inline(never)]
    fn pass_paren_run(&mut self, pos: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        self.pass_run(pos, b'(');
        true
    }

    /// A run of `b` at `pos` ([`crate::openers::Openers::run_passes`], a flood of `<`):
    /// each byte but its last is followed by `b`, where no opener starts, so all are
    /// ordinary bytes; the last is left to the scan. Out of line: prose seldom has one.
    #[inline(never)]
    fn pass_run(&mut self, pos: usize, b: u8) {
        let run = self
            .buf
            .as_bytes()
            .get(pos..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&c| c == b)
            .count();
        self.pass_ordinary(pos, pos + run.saturating_sub(1).max(1));
    }

    /// A byte `b` at `pos` that passes as a run (`<`, [`crate::openers::Openers::run_passes`])
    /// where no opener starts: a run of it ([`Engine::pass_run`]), or it and a stop that is
    /// no name's byte ([`Engine::pass_stops`], a flood of `<\n`); `false` when neither
    /// passed anything. Out of line: asked of that byte only (prose's newlines and letters
    /// that start openers pay nothing), and the checks kept out of the text scan's code
    /// (inlined there, prose cost 0.4 % more).
    #[inline(never)]
    fn pass_after_run_byte(&mut self, pos: usize, b: u8) -> bool {
        match self.buf.as_bytes().get(pos + 1).copied() {
            Some(c) if c == b => {
                self.pass_run(pos, b);
                true
            }
            Some(c) if self.ctx.openers.stops.is_stop(c) && !is_name_byte(c) => {
                self.pass_stops(pos)
            }
            _ => false,
        }
    }

    /// A stop at `pos` where no opener starts, followed by another stop (a flood of `<\n`,
    /// whose every byte is a stop, read one at a time through `step_text`'s opener lookup
    /// and byte dispatch: ~80 instructions a byte, 22x prose): the bytes from it are read
    /// here as `step_text` reads them, for as long as each is decided by its own bytes and
    /// the line state: a stop where no opener starts, asked as the bulk skip asks (with more
    /// to come: `Found::No` then holds at the end too; an opener found is left in
    /// `scan_found`), that means nothing of itself there (not a backtick, a bracket that
    /// may open bare JSON, a `(` after a name byte where calls are read, nor a line-start
    /// opener's first byte at a line start); a newline (a line start after it) and blanks
    /// (the line state kept); and between them runs of at most [`SHORT_RUN`] bytes no scan
    /// stops at (a longer one is left to the bulk skip). `false` when nothing was passed.
    /// Out of line: prose seldom has two stops in a row.
    #[inline(never)]
    fn pass_stops(&mut self, pos: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.nested {
            return false;
        }
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        let stops = &openers.stops;
        // An opener expected further on is the scan's.
        let end = match self.scan_found {
            Some((at, _)) if at >= self.base + pos => bytes.len().min(at - self.base),
            _ => bytes.len(),
        };
        let (arrays, objects, calls) = (
            self.array_formats(),
            self.object_formats(),
            self.call_syntax_possible(),
        );
        let mut line_start = self.line_start;
        let mut found = None;
        let mut q = pos;
        while let Some(&c) = bytes.get(q).filter(|_| q < end) {
            if !stops.is_stop(c) {
                if c == b' ' || c == b'\t' || c == b'\r' {
                    q += 1;
                    continue;
                }
                if line_start {
                    if openers.line_first(c) {
                        break;
                    }
                    line_start = false;
                    q += 1;
                    continue;
                }
                // Up to the next stop, when it is near.
                let run = bytes
                    .get(q..end.min(q + SHORT_RUN))
                    .unwrap_or(&[])
                    .iter()
                    .position(|&d| stops.is_stop(d));
                match run {
                    Some(n) => q += n,
                    None => break,
                }
                continue;
            }
            match openers.none_at_after(bytes, q, &self.last_found) {
                Ok(true) => {}
                Err(Found::At(i)) => {
                    found = Some((self.base + q, i));
                    break;
                }
                _ => break,
            }
            match c {
                b'\n' => line_start = true,
                b' ' | b'\t' | b'\r' => {}
                b'`' => break,
                b'[' if arrays => break,
                b'{' if objects => break,
                b'(' if calls => {
                    // A name before it: the scan asks whether `name(` is a call.
                    let after_name = if q == pos {
                        self.ident_start.is_some()
                    } else {
                        bytes.get(q - 1).is_some_and(|&p| is_name_byte(p))
                    };
                    if after_name {
                        break;
                    }
                    line_start = false;
                }
                _ if line_start && openers.line_first(c) => break,
                _ => line_start = false,
            }
            q += 1;
        }
        if found.is_some() {
            self.scan_found = found;
        }
        if q == pos {
            return false;
        }
        self.ident_start = self.ident_after(bytes.get(pos..q).unwrap_or(&[]), pos);
        self.line_start = line_start;
        self.pos = q;
        true
    }

    /// A run of brackets (`[` and `{`) at `pos` of at least three (JSON's `[{"` is not one),
    /// with no opener at any of its bytes but
    /// the last ([`crate::openers::Openers::brackets_free`]): its bytes are read here as
    /// `step_text` would read them, up to the first it cannot decide; `false` when that is
    /// `pos` (nothing passed). Each byte but the run's last is followed by a bracket, so a
    /// `{` there is no object start (`object_start_plausible`) and is an ordinary byte; a
    /// `[` there opens a bare JSON region, which is provably abandoned as text when the
    /// run goes on past the nesting bound from it: its scan pushes every bracket and fails
    /// as too deep at the one after `max_depth` (the decode before it fails as deep), with
    /// no diagnostic (no quote for `looks_like_call`, no `[NAME(`), leaving its first byte
    /// as text and `max_depth` bytes charged to the rescan budget, as done here. A `[`
    /// that the run does not go on past the bound from is left to the scan (its region is
    /// read). Out of line: prose seldom has a run of brackets.
    #[inline(never)]
    fn pass_brackets(&mut self, pos: usize) -> bool {
        let bytes = self.buf.as_bytes();
        let Some(&first) = bytes.get(pos) else {
            return false;
        };
        if !self.ctx.openers.brackets_free()
            || (self.line_start && self.ctx.openers.line_first(first))
        {
            return false;
        }
        let end = pos
            + bytes
                .get(pos..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&c| c == b'[' || c == b'{')
                .count();
        let max_depth = self.ctx.limits.max_depth;
        let mut q = pos;
        // The run's last byte (followed by something else, or by nothing yet) is the scan's.
        while q + 1 < end {
            if self.buf.as_bytes().get(q) == Some(&b'[') && self.array_formats() {
                if max_depth == 0 || q + max_depth >= end || self.failed_bare_left() == 0 {
                    break;
                }
                // The abandoned region's charge; text before it is sent before the warning
                // that may come with it, as the region's start would have sent it.
                if self.rescanned.saturating_add(max_depth) > self.rescan_budget(q + 1 + max_depth)
                {
                    self.emit_text(q);
                }
                self.charge_rescan(q + 1, q + 1 + max_depth, q);
                self.failed_bare.set(self.failed_bare.get() + 1);
            }
            q += 1;
        }
        if q == pos {
            return false;
        }
        self.announced.clear();
        self.pass_ordinary(pos, q);
        true
    }

    /// The bracket `b` at `pos` (`[` or `{`, its bare JSON formats on) was just found to
    /// start neither an opener nor a bare JSON value (its plausibility test said no), so
    /// the scan reads it as an ordinary byte. When the bytes from it repeat a unit, the
    /// bracket and the bytes up to its next copy (at most [`MAX_UNIT`] bytes, a flood of
    /// `[x` or `[1,`), the units are read here at once as the scan would read them
    /// ([`Engine::pass_ordinary`]), and `true` comes back. Each decision of the scan on a
    /// unit reads only bytes within the unit and the [`crate::openers::Openers::lookahead`]
    /// bytes after it (the window): the opener lookup at its bracket and at each stop in it,
    /// `is_bracket_run`, the plausibility test (asked again on the window alone with more
    /// to come: a verdict then is the one for any bytes after it), and `plain_stop` for the
    /// unit's other stops, which must each be ordinary bytes (no newline, backtick, bracket
    /// or opener). A unit whose window lies inside the periodic run holds the same bytes
    /// there as the first, so it is read the same way; the first unit whose window does
    /// not is left to the scan. `false` (nothing passed) when the bytes are no such run.
    /// Out of line: prose seldom has an implausible bracket.
    /// When the unit is not repeated (or the periodic pass cannot take it), the brackets
    /// after it are read one by one instead ([`Engine::pass_implausible_walk`]). Once bare
    /// JSON is off (the rescan budget spent), a bracket where no opener starts and that
    /// starts no line-start opener is an ordinary byte whatever follows, and is passed so
    /// (no plausibility test): a flood that ran the budget out (`[\n`, `[[x\n`) was read
    /// byte by byte through the scan's arms for the rest of the reply (~160 instructions a
    /// 2-byte unit, 22-24x prose).
    #[inline(never)]
    fn pass_implausible(&mut self, pos: usize, b: u8, is_final: bool) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.abs(self.buf.len()) == self.no_pass_end
            || self.abs(pos) < self.no_implausible_before
        {
            return self.walk_implausible(pos, is_final);
        }
        let lookahead = self.lookahead();
        let bytes = self.buf.as_bytes();
        let Some(period) = unit_period(bytes, pos, lookahead) else {
            return self.walk_implausible(pos, is_final);
        };
        if !self.unit_repeats(pos, period, lookahead) {
            // Its next copy differs (not the end of the bytes received): a flood whose copies
            // differ (`[0[1[2…`) is not asked about for a while.
            if self.abs(self.buf.len()) != self.no_pass_end {
                self.no_implausible_before = self.abs(pos) + NO_UNITS_SKIP;
            }
            return self.walk_implausible(pos, is_final);
        }
        // Brackets inside the unit (`{{x\n`) decided on the window's bytes: refused, such a
        // flood went to the walk (~250 instructions a 4-byte unit, 17x prose).
        let window = period + lookahead;
        // The window of the last unit refused below: refused again (the refusal is read off
        // the window's bytes and the state kept with them).
        if self.refused_window.1 == window && self.refused_bare_off == self.bare_off {
            let bytes = self.buf.as_bytes();
            let refused = self.refused_window.0.checked_sub(self.base);
            let first = refused.and_then(|r| bytes.get(r..r + window));
            if first.is_some() && first == bytes.get(pos..pos + window) {
                return self.walk_implausible(pos, is_final);
            }
        }
        let mut strips = UnitStrips::default();
        #[cfg(test)]
        {
            self.implausible_units_asked += 1;
        }
        let Some(line) = self.ordinary_strips_in(pos, period, pos + window, Some(&mut strips))
        else {
            // A unit the scan may read otherwise (a removed marker, an opener): its window
            // is kept, and a copy with the same window is refused by one compare. A flood of
            // such a unit and a bracket (`<|message_sep|>["`, bare JSON off) asked at every
            // copy in vain (~1,000 instructions a 17-byte unit, 30.9x prose). Not a skip of
            // the bytes after it: a unit refused at one bracket may pass at the next (`[[x\n`
            // refused at its second bracket, passed at its first).
            if pos + window <= self.buf.len() {
                self.refused_window = (self.abs(pos), window);
                self.refused_bare_off = self.bare_off;
            }
            return self.walk_implausible(pos, is_final);
        };
        let bytes = self.buf.as_bytes();
        let Some(head) = bytes.get(pos..pos + window) else {
            self.no_pass_end = self.abs(self.buf.len());
            return false;
        };
        // Bare JSON off: the bracket is an ordinary byte whatever follows it.
        if !self.bare_off {
            let implausible = match b {
                b'[' => array_start_plausible(head, false),
                _ => object_start_plausible(head, false),
            };
            if implausible != Some(false) || is_bracket_run(head, 0) {
                return false;
            }
        }
        let passed = self.pass_periodic(pos, period, window, line, usize::MAX);
        if passed && strips.n > 0 {
            self.strip_units(pos, self.pos, period, &strips);
        }
        #[cfg(test)]
        if passed {
            self.bracket_passed += self.pos - pos;
        }
        passed
    }

    /// The bracket at `pos` (its bare JSON format on, no opener there, no run of brackets)
    /// starts plausible JSON, whose region would be abandoned at once with no note: it
    /// starts with the bytes a kept failed scan read ([`FailedScans::repeats`], `n` of
    /// them), so its reader fails as that scan did (no decode tried, nothing kept), and
    /// the region leaves its first byte as text, the scan after it, and `n - 1` bytes
    /// charged to the rescan budget. When the bytes from it repeat a unit (the bracket and
    /// the bytes up to its next copy, [`unit_period`]) whose other bytes the scan reads as
    /// text ([`Engine::ordinary_after_in`], asked on a window of the unit, the lookahead
    /// and the `n` bytes: declined openers and implausible brackets among them), every
    /// copy whose window lies inside the periodic run is read so at once, its charge
    /// added, and `true` comes back. Each copy's region reads the same bytes as the
    /// first's, against the same kept scans (a region that repeats one, a declined opener
    /// and an ordinary byte change none); the budget, charged `n - 1` bytes a copy while it
    /// grows [`RESCAN_FACTOR`] times the unit, runs out at no copy when it does not at the
    /// first (else nothing is passed). A flood of declined openers and JSON's start
    /// (`]<]minimax[>[<tool_call>x{"`, `<tool_call>1,{"`) opened and abandoned a region at
    /// every copy (~3,200 instructions a 27-byte unit, 34x prose). Out of line: asked
    /// only of plausible brackets, and returns at once where no scan failed.
    #[inline(never)]
    fn pass_failed_regions(&mut self, pos: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.abs(pos) < self.no_failed_before {
            return false;
        }
        let max_depth = self.ctx.limits.max_depth;
        let bytes = self.buf.as_bytes();
        let Some(n) = self
            .failed_scan
            .repeats(max_depth, false, bytes.get(pos..).unwrap_or(&[]))
        else {
            // Not asked again for a while (a numbered flood's copies differ: its kept
            // scans never repeat, and each compare with them cost ~160 instructions). A
            // flood whose first copies' regions fail now repeats them when asked next.
            self.no_failed_before = self.abs(pos) + NO_UNITS_SKIP;
            return false;
        };
        if self.abs(self.buf.len()) == self.no_pass_end || is_bracket_run(bytes, pos) {
            return false;
        }
        let lookahead = self.lookahead();
        let bytes = self.buf.as_bytes();
        let charge = n.saturating_sub(1);
        let Some(period) = unit_period(bytes, pos, lookahead) else {
            return false;
        };
        let window = (period + lookahead).max(n);
        // Plausible on the window alone with more to come: so at every copy.
        let head = bytes.get(pos..pos + window).unwrap_or(&[]);
        let plausible = match head.first() {
            Some(b'[') => array_start_plausible(head, false),
            _ => object_start_plausible(head, false),
        };
        let passed = plausible == Some(true)
            && charge <= RESCAN_FACTOR * period
            && self.rescanned.saturating_add(charge) <= self.rescan_budget(pos + n)
            && (self.nested || self.ctx.openers.none_at(bytes, pos) == Ok(true))
            && self.unit_repeats(pos, period, lookahead);
        let mut strips = UnitStrips::default();
        let line = passed
            .then(|| self.ordinary_strips_in(pos, period, pos + window, Some(&mut strips)))
            .flatten();
        let Some(line) = line else {
            if self.abs(self.buf.len()) != self.no_pass_end {
                self.no_failed_before = self.abs(pos) + NO_UNITS_SKIP;
            }
            return false;
        };
        if !self.pass_periodic(pos, period, window, line, self.failed_bare_left()) {
            return false;
        }
        if strips.n > 0 {
            self.strip_units(pos, self.pos, period, &strips);
        }
        let copies = (self.pos - pos) / period;
        self.rescanned = self.rescanned.saturating_add(copies * charge);
        self.failed_bare.set(self.failed_bare.get() + copies);
        // The text before the last copy's region, as its start sends it (what a later
        // `at_start` reads is then what the scan leaves).
        self.emit_text(self.pos - period);
        #[cfg(test)]
        {
            self.bracket_passed += self.pos - pos;
        }
        true
    }

    /// The plausible bracket at `pos` (its bare JSON format on, no opener there) lies inside
    /// the bytes a region abandoned as text with no note scanned ([`Engine::failed_text_end`]),
    /// and no kept scan repeats there ([`Engine::pass_failed_regions`]): its region and the
    /// ones after it are read here while each is abandoned so, and `true` comes back when
    /// one was. Passed: a bracket whose region the scan abandons as text with no note
    /// ([`Engine::walk_failed_region`]: its first byte is text, the scan goes on after it,
    /// and its rescan is charged when the walk ends), and after it, up to the unit's bound
    /// ([`MAX_UNIT`] bytes), what the scan reads as text: bytes no scan stops at, stops
    /// `plain_stop` says are ordinary, a newline followed by blanks and a byte that is no
    /// stop and starts no line opener, a bracket no opener starts and its plausibility test
    /// refuses ([`Engine::walk_bracket`]), and a region opener every family of which
    /// declines at once ([`Engine::walk_declined_memo`]: its first byte is text, and its
    /// bytes after it that the scan reads as text there,
    /// [`crate::openers::Openers::copy_passed`]); the last two such openers are taken again
    /// by one compare each. A flood of declined openers and JSON's start whose copies differ
    /// (`]<]minimax[>[<tool_call>x{"0…`, `…{"the…`), each region's string running into the
    /// next copy and failing at its first closer, opened, scanned and abandoned a region at
    /// every copy, the declines and lookups between them read by the scan (~4,900
    /// instructions a 31-byte unit, 46x prose; ~1,740 here). Its own walk, not
    /// [`Engine::pass_declined_walk`]'s: with a region's arm in that loop, `>>>{#}` cost 5-9 %
    /// more. Out of line: asked only inside failed regions, where a region may fail (a
    /// closer within the bytes a walk's scan reads), once for the bytes a walk passed none.
    #[inline(never)]
    fn pass_failed_walk(&mut self, pos: usize, is_final: bool) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        let stops = &openers.stops;
        // No closer within the bytes a walk's scan reads: its region cannot fail so (a flood
        // of `[[x\n`, nested past the bound, scanned the first bytes of a region each time).
        let from = bytes.get(pos..).unwrap_or(&[]);
        let window = from.get(..FAILED_REGION_MAX).unwrap_or(from);
        // A region repeating a kept failed scan is left to its reader and
        // `pass_failed_regions` (a unit repeated whole, passed at once).
        if is_bracket_run(bytes, pos)
            || memchr::memchr2(b']', b'}', window).is_none()
            || self
                .failed_scan
                .repeats(self.ctx.limits.max_depth, false, from)
                .is_some()
        {
            self.no_failed_walk_before = (self.abs(pos) + NO_UNITS_SKIP).max(self.failed_text_end);
            return false;
        }
        let mut regions = WalkRegions::default();
        let mut scanner: Option<Scanner> = None;
        // The last two openers declined (first byte, index), taken again by one compare
        // each ([`crate::openers::Openers::longest_at`]) before the lookup: a unit of two
        // openers (`]<]minimax[>[` and `<tool_call>`) looked each up from the root (~300
        // instructions a copy).
        let (mut firsts, mut expect) = ([0u8; 2], [usize::MAX; 2]);
        let mut memo = DeclineMemo::default();
        let mut strips = UnitStrips::<MAX_WALK_STRIPS>::default();
        let mut q = pos;
        'regions: loop {
            match self.walk_failed_region(q, &regions, &mut scanner) {
                WalkRegion::Failed(n) => {
                    regions.count += 1;
                    regions.charged += n - 1;
                    regions.last = Some((q, n));
                    q += 1;
                }
                WalkRegion::Repeated => {
                    regions.repeated = true;
                    break;
                }
                WalkRegion::Scan => break,
            }
            let limit = bytes.len().min(q + MAX_UNIT);
            loop {
                while q < limit && !stops.is_stop(bytes[q]) {
                    q += 1;
                }
                let Some(&c) = bytes.get(q).filter(|_| q < limit) else {
                    break 'regions;
                };
                if c == b'\n' {
                    let r = after_blank_lines(bytes, stops, q + 1);
                    match bytes.get(r) {
                        Some(&d)
                            if !stops.is_stop(d)
                                && (!openers.line_first(d) || self.no_line_opener(r, is_final)) =>
                        {
                            q = r + 1;
                            continue;
                        }
                        // A bracket at a line start: the scan's bracket arm comes before its
                        // line-start one, and reads it as anywhere (below). A flood of
                        // `\n{"\n{w}}` walked one region a call (62x prose).
                        Some(&d @ (b'{' | b'[')) if stops.is_stop(d) => {
                            q = r;
                            continue;
                        }
                        // Another stop at a line start that the scan reads as an ordinary
                        // byte: no opener there, none of the bytes with an arm of their own
                        // (`plain_stop`: a backtick, a bracket; a blank keeps the line
                        // start), no line opener. A flood of `TOOL_CALL: x\n]{w}\n{"`
                        // ended the walk at each `]`, one region a walk (37.8x prose). An
                        // opener there is read as anywhere (below): the scan looks for
                        // openers before the line start's own (`<|python_tag|>]{w}{"\n`).
                        Some(&d) if !matches!(d, b' ' | b'\t' | b'\r') => {
                            let mut at = None;
                            if self.plain_stop(r, &mut at)
                                && (!openers.line_first(d) || self.no_line_opener(r, is_final))
                            {
                                q = r + 1;
                                continue;
                            }
                            // Declined at once, as below; else left to the scan from the
                            // newline (a stripped token too).
                            match at {
                                Some((_, j))
                                    if self.strip_len(j).is_none()
                                        && self.walk_declined_memo(
                                            j,
                                            r,
                                            is_final,
                                            regions.count > 1,
                                            &mut memo,
                                        ) =>
                                {
                                    q = r + openers.copy_passed(bytes, r, j);
                                    continue;
                                }
                                _ => break 'regions,
                            }
                        }
                        // Anything else at a line start is left to the scan, from the newline.
                        _ => break 'regions,
                    }
                }
                let found = if firsts[0] == c
                    && !self.nested
                    && openers.longest_at(bytes, q, expect[0])
                {
                    Some(expect[0])
                } else if firsts[1] == c && !self.nested && openers.longest_at(bytes, q, expect[1])
                {
                    Some(expect[1])
                } else if (c == b'[' && self.array_formats())
                    || (c == b'{' && self.object_formats())
                {
                    match self.walk_bracket(q, c, is_final) {
                        WalkBracket::Ordinary => {
                            q += 1;
                            continue;
                        }
                        WalkBracket::Region => continue 'regions,
                        WalkBracket::Opener(j) => Some(j),
                        WalkBracket::Scan => break 'regions,
                    }
                } else {
                    let mut at = None;
                    if self.plain_stop(q, &mut at) {
                        q += 1;
                        continue;
                    }
                    at.map(|(_, j)| j)
                };
                // A stripped control token (`<|end_message|>x{"]{#}`), the text before it
                // emitted when the walk ends; the walk ends before one past the bound.
                if let Some(len) = found.and_then(|j| self.strip_len(j)) {
                    if strips.push(q - pos, len).is_none() {
                        break 'regions;
                    }
                    q += len;
                    continue;
                }
                match found {
                    Some(j)
                        if self.walk_declined_memo(
                            j,
                            q,
                            is_final,
                            regions.count > 1,
                            &mut memo,
                        ) =>
                    {
                        if expect[0] != j {
                            (firsts[1], expect[1]) = (firsts[0], expect[0]);
                            (firsts[0], expect[0]) = (c, j);
                        }
                        q += openers.copy_passed(bytes, q, j);
                    }
                    _ => break 'regions,
                }
            }
        }
        let Some((r, n)) = regions.last else {
            // Not asked again over the bytes after it, nor inside the failed region.
            self.no_failed_walk_before = (self.abs(pos) + NO_UNITS_SKIP).max(self.failed_text_end);
            return false;
        };
        self.rescanned = self.rescanned.saturating_add(regions.charged);
        self.failed_bare.set(self.failed_bare.get() + regions.count);
        // The tokens stripped (after the first region), in order, then the text before the
        // last region, as its start sends it (what a later `at_start` reads is then what
        // the scan leaves; nothing when a token after it was stripped).
        for &(at, len) in strips.all() {
            self.emit_text(pos + at);
            self.emit_from = pos + at + len;
            self.markup_found = true;
        }
        self.emit_text(r);
        if let (true, Some(sc)) = (regions.repeated, scanner) {
            // Kept as the region's reader keeps its failed scan, so that the scan at the
            // repeat finds it (`FailedScans::repeats`).
            let start = self.abs(r);
            let seen = self.buf.as_bytes().get(r..r + n).unwrap_or(&[]);
            sc.fail_into_seen(&mut self.failed_scan, start, seen);
        }
        self.failed_text_end = self.abs(r + n);
        self.announced.clear();
        self.pass_ordinary(pos, q);
        #[cfg(test)]
        {
            self.regions_walked += 1;
        }
        true
    }

    /// [`Engine::walk_declined`] for [`Engine::pass_failed_walk`], which asks it of the same
    /// openers copy after copy: a copy whose window (the opener and the few bytes after it)
    /// holds the bytes of one found declined on its window alone is declined unasked. A
    /// window is found so when every family declines the region holding only its bytes,
    /// with more to come (as `open` asks a stream's region at that push): that decline
    /// holds whatever bytes come after it, or a stream whose push ended there would read
    /// otherwise (what [`Engine::declined_units`] relies on too). Asked of the region
    /// declined in full, on windows of 1, 2, 4, 8 and 16 bytes after the opener, the first
    /// declined kept (one an opener, two at most), while the asks stay within four more
    /// than the declines unasked, and only with `probe` (a walk past its second region: a
    /// walk of a copy or two at each copy of a unit asked them in vain, 55x prose). The openers of a unit of two (`]<]minimax[>[`, whose
    /// families are asked its region, and `<tool_call>`, whose five families read the
    /// region's lead) asked their families at every copy (~600 instructions).
    #[inline(never)]
    fn walk_declined_memo(
        &self,
        j: usize,
        q: usize,
        is_final: bool,
        probe: bool,
        memo: &mut DeclineMemo,
    ) -> bool {
        if self.nested {
            return false;
        }
        let bytes = self.buf.as_bytes();
        for &(o, at, len) in &memo.windows {
            if o == j && bytes.get(q..q + len) == bytes.get(at..at + len) {
                memo.unasked += 1;
                return true;
            }
        }
        if !self.walk_declined(j, q, is_final) {
            return false;
        }
        if !probe {
            return true;
        }
        let (Some(o), Some(Action::Region(families))) = (
            self.ctx.openers.get(j),
            self.ctx.openers.get(j).map(|o| &o.action),
        ) else {
            return true;
        };
        let mut k = 1;
        while k <= DECLINE_WINDOW_MAX && memo.asked < memo.unasked + 4 {
            let end = q + o.text.len() + k;
            k *= 2;
            let Some(window) = self.buf.get(q..end) else {
                if end > bytes.len() {
                    break;
                }
                continue;
            };
            memo.asked += 1;
            let declined = families.iter().all(|by| {
                by.declined_as_before()
                    || (by.removes(window, false).is_none()
                        && by.open_region(window, false, &self.ctx).is_none())
            });
            if declined {
                let slot = usize::from(memo.windows[0].0 != j);
                if slot == 1 && memo.windows[1].0 != j {
                    memo.windows[1] = memo.windows[0];
                    memo.windows[0] = (j, q, window.len());
                } else {
                    memo.windows[slot] = (j, q, window.len());
                }
                break;
            }
        }
        true
    }

    /// [`Engine::pass_failed_walk`] at the bracket `c` at `q`, whose bare JSON format is on:
    /// what the scan reads there, asked in its order. An opener found at it whatever
    /// follows (`Opener`; none is looked for in a fence's nested scan), else a run of
    /// brackets or more bytes needed (`Scan`), else the plausibility test (asked as the
    /// scan asks it, with `is_final`): no JSON start is an ordinary byte (`Ordinary`), one
    /// a bare JSON region (`Region`, [`Engine::walk_failed_region`]).
    #[inline(always)]
    fn walk_bracket(&self, q: usize, c: u8, is_final: bool) -> WalkBracket {
        let bytes = self.buf.as_bytes();
        if !self.nested {
            match self.ctx.openers.none_at(bytes, q) {
                Ok(true) => {}
                Err(Found::At(j)) => return WalkBracket::Opener(j),
                _ => return WalkBracket::Scan,
            }
        }
        if is_bracket_run(bytes, q) {
            return WalkBracket::Scan;
        }
        let start = bytes.get(q..).unwrap_or(&[]);
        let plausible = if c == b'[' {
            array_start_plausible(start, is_final)
        } else {
            object_start_plausible(start, is_final)
        };
        match plausible {
            Some(false) => WalkBracket::Ordinary,
            Some(true) => WalkBracket::Region,
            None => WalkBracket::Scan,
        }
    }

    /// [`Engine::pass_failed_walk`] at the bracket at `q`, where the scan opens a bare JSON
    /// region (no opener there whatever follows, no run of brackets, its plausibility test
    /// says JSON starts: [`Engine::walk_bracket`], or the scan's own test at the walk's
    /// first): `Failed(n)` when that region is abandoned as text with no note after
    /// scanning `n` bytes: its [`Scanner`] fails at a closer that matches no open bracket
    /// within the bytes at hand, the first [`FAILED_REGION_MAX`] and [`FAILED_REGION_DEPTH`]
    /// brackets (its decodes fail then too: a value `serde_json` decodes is one the scan
    /// closes), without a call's keys or a `[name(` in what it read
    /// ([`crate::families::bare_json::fails_without_note`]), or closes there a region no
    /// decode reads and no family takes, without a call's keys
    /// ([`crate::families::bare_json::closed_fails_without_note`]: a flood of bare JSON
    /// whose string holds a raw newline, `</think:{"\n{w}}`, opened, scanned and decoded a
    /// region at every copy). Such a region leaves its first
    /// byte as text and the scan after it, and `n - 1` bytes charged to the rescan budget,
    /// which must not run out with the walk's charges before it (the warning and bare JSON
    /// off are the scan's). A kept failed scan it would resume from or repeat reads the
    /// same bytes to the same end ([`FailedScans`]). `scanner` (made at the first region)
    /// is made new again for it. `Repeated`: a region whose bytes repeat those of the last
    /// one passed, a unit repeated whole, left to [`Engine::pass_failed_regions`], which
    /// passes all its copies at once. `Scan`: anything else. Out of line: asked once a
    /// region.
    #[inline(never)]
    fn walk_failed_region(
        &self,
        q: usize,
        regions: &WalkRegions,
        scanner: &mut Option<Scanner>,
    ) -> WalkRegion {
        let bytes = self.buf.as_bytes();
        let start = bytes.get(q..).unwrap_or(&[]);
        if let Some((r, n)) = regions.last
            && bytes.get(q..q + n) == bytes.get(r..r + n)
        {
            return WalkRegion::Repeated;
        }
        // Bounded, in bytes and depth: a region that runs on (`{"a":[…` to the end) or
        // nests deep (`[[x\n…`, whose scans resume from kept ones) is the scan's.
        let max_depth = self.ctx.limits.max_depth.min(FAILED_REGION_DEPTH);
        let scanner = scanner.get_or_insert_with(|| Scanner::new(max_depth, false));
        scanner.restart();
        let (n, closed) = match scanner.advance(start.get(..FAILED_REGION_MAX).unwrap_or(start)) {
            Scan::Fail(ScanError::Unexpected { .. }) => (scanner.consumed().max(1), false),
            Scan::Done(n) => (n, true),
            _ => return WalkRegion::Scan,
        };
        let Some(scanned) = start.get(..n) else {
            return WalkRegion::Scan;
        };
        let within = self
            .rescanned
            .saturating_add(regions.charged)
            .saturating_add(n - 1)
            <= self.rescan_budget(q + n)
            && regions.count < self.failed_bare_left();
        let quiet = match (closed, self.buf.get(q..q + n)) {
            (false, _) => crate::families::bare_json::fails_without_note(scanned, &self.ctx),
            (true, Some(region)) => crate::families::bare_json::closed_fails_without_note(
                region,
                self.span(q, q + n),
                &self.ctx,
            ),
            (true, None) => false,
        };
        if within && quiet {
            WalkRegion::Failed(n)
        } else {
            WalkRegion::Scan
        }
    }

    /// The bracket `b` at `pos` was found by the scan once bare JSON is off: where no opener
    /// starts it is an ordinary byte whatever follows, unless it starts a line-start opener
    /// (the scan's line-start arm reads it then), and a flood of it is passed at once by
    /// [`Engine::pass_implausible`] (`[\n`, `[[x\n`: read byte by byte through the scan's
    /// arms for the rest of the reply, ~160 instructions a 2-byte unit, 22-24x prose). Not
    /// asked while both of its passes wait (asked in the scan's arm: the call cost a fence's
    /// flood of `{"` read at the end, every bracket asking, ~1 %). Out of line: seldom
    /// asked.
    #[inline(never)]
    fn pass_bare_off(&mut self, pos: usize, b: u8, is_final: bool) -> bool {
        !self.ctx.openers.line_first(b) && self.pass_implausible(pos, b, is_final)
    }

    /// [`Engine::pass_implausible_walk`] unless a walk failed just before `pos` (asked
    /// here: the call of one that returns at once cost a flood that fails it ~25
    /// instructions a bracket).
    #[inline(always)]
    fn walk_implausible(&mut self, pos: usize, is_final: bool) -> bool {
        self.abs(pos) >= self.no_bracket_walk_before && self.pass_implausible_walk(pos, is_final)
    }

    /// The bracket at `pos` was just read as an ordinary byte (no opener, no bare JSON
    /// start): the bytes after it are read here as the scan reads them for as long as each
    /// is decided to be text by its own bytes, and `true` comes back when that passed at
    /// least one more bracket. Passed: bytes no scan stops at (the bulk skip's); a newline
    /// followed by blanks (no stops) and then such a byte that starts no line-start opener
    /// (read at the line start by the scan's own arms, which leave it as the byte loop
    /// does); and a bracket whose bare JSON format is on where no opener starts whatever
    /// follows (`none_at`; a fence's nested scan looks for none), that starts no run of
    /// brackets, and that its plausibility test (asked as the scan asks it, with
    /// `is_final`) says starts no JSON: the scan reads it as an ordinary byte, as here.
    /// Each unit (a bracket and the bytes after it) is at most [`MAX_UNIT`] bytes. A
    /// numbered flood (`[0[1[2…`, `{x0{x1…`, `{\n0{\n1…`), whose copies differ so that no
    /// periodic pass takes it, was read byte by byte (~450 instructions a 3-byte unit, 25x
    /// prose).
    #[inline(never)]
    fn pass_implausible_walk(&mut self, pos: usize, is_final: bool) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.abs(pos) < self.no_bracket_walk_before {
            return false;
        }
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        let stops = &openers.stops;
        let ordinary_bracket = |r: usize| self.bracket_is_ordinary(r, is_final);
        // Bytes before `end` are passed; `brackets` were passed after the first.
        let (mut end, mut brackets) = (pos + 1, 0usize);
        'units: loop {
            let mut q = end;
            // The unit's bound (or the end of the bytes): a walk stops there.
            let limit = bytes.len().min(end + MAX_UNIT);
            loop {
                // The bytes no scan stops at, up to the bound, in a tight loop (a check of
                // the bound and the end at each byte cost `{\n{#}` ~9 instructions a unit).
                while q < limit && !stops.is_stop(bytes[q]) {
                    q += 1;
                }
                let Some(&c) = bytes.get(q).filter(|_| q < limit) else {
                    end = q;
                    break 'units;
                };
                if c == b'\n' {
                    let r = after_blank_lines(bytes, stops, q + 1);
                    match bytes.get(r) {
                        Some(&d)
                            if !stops.is_stop(d)
                                && (!openers.line_first(d) || self.no_line_opener(r, is_final)) =>
                        {
                            q = r + 1;
                            continue;
                        }
                        // A bracket at a line start: its arm comes before the line-start one.
                        Some(_) if ordinary_bracket(r) => q = r,
                        _ => {
                            end = q;
                            break 'units;
                        }
                    }
                } else if !ordinary_bracket(q) {
                    // Another stop the bulk skip passes (a word's letter that starts an
                    // opener elsewhere): passed, no bracket counted.
                    let mut found = None;
                    if !matches!(c, b'[' | b'{') && self.plain_stop(q, &mut found) {
                        q += 1;
                        continue;
                    }
                    // A "```" mid-line, text (`{x{#}```json\n`: a numbered copy each).
                    if c == b'`' && self.mid_line_fence(bytes, q, bytes.len()) {
                        q += 3;
                        continue;
                    }
                    end = q;
                    break 'units;
                }
                brackets += 1;
                end = q + 1;
                continue 'units;
            }
        }
        if brackets == 0 {
            // Not asked again over the bytes after it (a unit with another stop after its
            // bracket, `]<]minimax[>[<tool_call>0…`, asked at each bracket).
            self.no_bracket_walk_before = self.abs(pos) + NO_UNITS_SKIP;
            return false;
        }
        if brackets == 1 {
            // One more bracket only: the walk costs about what it saves (a unit of
            // declined openers around `>[`, `]<]minimax[>[<tool_call>x{"0…`, walked at
            // every copy, ~600 instructions each, 8 % more): not asked for a while either.
            self.no_bracket_walk_before = self.abs(pos) + NO_UNITS_SKIP;
        }
        self.announced.clear();
        self.pass_ordinary(pos, end);
        #[cfg(test)]
        {
            self.bracket_passed += self.pos - pos;
        }
        true
    }

    /// Whether the scan reads the byte at `pos`, at a line start, no stop, and the first byte
    /// of a line-start opener, as an ordinary byte: none matches its bytes (the scan's
    /// line-start arm then finds none and reads it so, with `is_final` as it asks; a
    /// partial match with more to come waits). A flood of a bracket, a newline and a word
    /// (`{\nthe{\nweather…`) broke its walk at each word whose letter starts `TOOL_CALL:`
    /// or `Action:` (~2 of 3 copies went back to the scan, 20x prose).
    #[inline(never)]
    fn no_line_opener(&self, pos: usize, is_final: bool) -> bool {
        let bytes = self.buf.as_bytes();
        pos < bytes.len()
            && self
                .ctx
                .openers
                .line
                .iter()
                .all(|o| match match_at(bytes, pos, o.text, true) {
                    Marker::No => true,
                    Marker::Partial => is_final,
                    Marker::Full => false,
                })
    }

    /// The backtick at `pos` opens inline code (the scan found no opener at it and no
    /// "```" there). When the bytes from it repeat a unit, the inline code up to its end
    /// (the next backtick, or a newline left to the text scan) and the text after it up to
    /// the next backtick (a flood of `` `x `` or `` `\n ``, at most [`MAX_UNIT`] bytes),
    /// the units are read here at once as the scan would read them
    /// ([`Engine::pass_ordinary`]), and `true` comes back. Each decision of the scan on a
    /// unit reads only bytes within the unit and the [`crate::openers::Openers::lookahead`]
    /// bytes after it, and at least three (the window): the opener lookup at its backtick,
    /// which must find none whatever follows (`none_at`), the "```" test at it (no
    /// second backtick after it), the inline code's end (found by the same search), and
    /// the text after it, which [`Engine::ordinary_after`] must read as text (no stop but
    /// ordinary ones, newlines followed by blanks with no opener at them). The state after
    /// a unit (text mode, the line start from the text's newline, no identifier: a backtick
    /// follows) is the state a copy's reading starts from, and no decision above depends on
    /// the line start but the "```" test, which says no either way. A unit whose window
    /// lies inside the periodic run holds the same bytes there as the first, so it is read
    /// the same way; the first unit whose window does not is left to the scan. `false`
    /// (nothing passed) when the bytes are no such run. Out of line: prose seldom has
    /// inline code, and a flood of it was read unit by unit (~250 instructions a 3-byte
    /// `` `x `` unit, 22x prose; `` `\n `` 39x).
    #[inline(never)]
    fn pass_inline(&mut self, pos: usize) -> bool {
        if self.abs(self.buf.len()) == self.no_pass_end {
            return false;
        }
        let lookahead = self.lookahead().max(3);
        let bytes = self.buf.as_bytes();
        // Too few bytes for the shortest unit's run (two bytes), asked before the search.
        if bytes.len() < pos + MIN_UNITS * 2 + lookahead {
            self.no_pass_end = self.abs(self.buf.len());
            return false;
        }
        let Some(after) = bytes.get(pos + 1..) else {
            return false;
        };
        let after = after.get(..MAX_UNIT).unwrap_or(after);
        // The inline code's end, then the text after it up to the next backtick.
        let Some(end) = memchr::memchr2(b'`', b'\n', after) else {
            return false;
        };
        let text = if after.get(end) == Some(&b'`') {
            end + 1
        } else {
            end
        };
        let Some(next) = after
            .get(text..)
            .and_then(|t| memchr::memchr(b'`', t))
            .map(|i| text + i)
        else {
            return false;
        };
        let period = next + 1;
        if !self.unit_repeats(pos, period, lookahead) {
            return false;
        }
        // The text read from `pos + 1 + text` (an ordinary byte before it, as after the
        // inline code's end: no line start, no identifier).
        let Some(line) = self.ordinary_after(pos + text, next - text + 1) else {
            return false;
        };
        self.pass_periodic(pos, period, period + lookahead, line, usize::MAX)
    }

    /// Inline code at `pos` (a backtick the scan reads as its start: not at a line start,
    /// no opener there, no run of three): the inline code up to its closing backtick and
    /// the text after it, read here as the scan reads them, and on while that text ends at
    /// another such backtick; `true` when at least one inline code was passed. The code is
    /// what `step_inline` passes (up to a backtick, or a newline, passed with the first byte
    /// of its line when [`Engine::line_plain`] says that line goes on as text; none within
    /// the unit's [`MAX_UNIT`] bytes is left to the scan); its text the bytes no scan stops at and
    /// the stops `plain_stop` says are ordinary there (as the bulk skip asks them, after an
    /// ordinary byte), up to a stop it refuses, the end of the bytes, or the unit's bound.
    /// A flood of inline code whose units differ (`` `0`1`2… ``), which `pass_inline`'s
    /// periodic units miss, went through the scan's modes, `step_inline`'s search and a
    /// bulk skip for every few bytes (~780 instructions a pair of backticks, 19.6x prose);
    /// one whose code ends at a newline (`` `\nthe`\nweather… ``) went through them, and
    /// [`Engine::pass_inline`]'s search for a unit, at each backtick (34.9x prose).
    /// Out of line: prose seldom has inline code.
    #[inline(never)]
    fn pass_inline_walk(&mut self, pos: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        let bytes = self.buf.as_bytes();
        let stops = &self.ctx.openers.stops;
        let mut found = None;
        let (mut q, mut end) = (pos, pos);
        loop {
            let limit = bytes.len().min(q + MAX_UNIT);
            let mut c = q + 1;
            while c < limit && !matches!(bytes[c], b'`' | b'\n') {
                c += 1;
            }
            let mut t = c + 1;
            if c >= limit || bytes[c] != b'`' {
                // A newline ends the inline code unread, and the scan reads it as a line
                // end: passed with its line's first byte when that line goes on as text.
                match (c < limit).then(|| self.line_plain(c, &mut None)) {
                    Some(Some(next)) => t = next,
                    _ => break,
                }
            }
            loop {
                while t < limit && !stops.is_stop(bytes[t]) {
                    t += 1;
                }
                if t >= limit || !self.plain_stop(t, &mut found) {
                    break;
                }
                t += 1;
            }
            end = t;
            // The next inline code, read as the scan reads this one: no opener at its
            // backtick (none is looked for in a fence's nested scan), no run of three.
            let next = bytes.get(t) == Some(&b'`')
                && bytes.get(t + 1).is_some_and(|&b| b != b'`')
                && (self.nested || self.ctx.openers.none_at(bytes, t) == Ok(true));
            if !next {
                break;
            }
            q = t;
        }
        if end == pos {
            return false;
        }
        if found.is_some() {
            self.scan_found = found;
        }
        self.pass_ordinary(pos, end);
        true
    }

    /// Whether the unit `buf[pos..pos + period]` is followed by a copy of itself, with the
    /// bytes of [`MIN_UNITS`] units and the lookahead at hand: fewer do not let the pass
    /// save more than it asks (a stream's push), and the end of the bytes received is kept
    /// (`no_pass_end`) so that no unit asks again before more arrive. The first check of
    /// [`Engine::pass_implausible`] and [`Engine::pass_inline`] once each found its period.
    fn unit_repeats(&mut self, pos: usize, period: usize, lookahead: usize) -> bool {
        let bytes = self.buf.as_bytes();
        let copies = (
            bytes.get(pos..pos + period),
            bytes.get(pos + period..pos + 2 * period),
        );
        match copies {
            (Some(unit), Some(next)) if bytes.len() >= pos + MIN_UNITS * period + lookahead => {
                unit == next
            }
            _ => {
                self.no_pass_end = self.abs(self.buf.len());
                false
            }
        }
    }

    /// The end of [`Engine::pass_implausible`] and [`Engine::pass_inline`], once the unit
    /// at `pos` repeats and its own reading was checked: when no opener starts in its
    /// window (`buf[pos..pos + window]`, the unit and the lookahead), every unit whose
    /// window lies inside the periodic run is read at once as text ([`Engine::pass_units`]),
    /// and `true` comes back; the first unit whose window does not is left to the scan, and
    /// so are those past the first `most` (`false` when that is none).
    fn pass_periodic(
        &mut self,
        pos: usize,
        period: usize,
        window: usize,
        line: bool,
        most: usize,
    ) -> bool {
        let bytes = self.buf.as_bytes();
        let Some(head) = bytes.get(pos..pos + window) else {
            self.no_pass_end = self.abs(self.buf.len());
            return false;
        };
        if !self.nested && self.ctx.openers.none_at(head, 0) != Ok(true) {
            return false;
        }
        let span = periodic_len(&bytes[pos..], period);
        let Some(rest) = span.checked_sub(window) else {
            if pos + span >= bytes.len() {
                self.no_pass_end = self.abs(self.buf.len());
            }
            return false;
        };
        let units = (rest / period + 1).min(most);
        if units == 0 {
            return false;
        }
        self.pass_units(pos, pos + units * period, line);
        true
    }

    /// Reads `buf[from..to]`, units [`Engine::ordinary_after`] said are text, as the scan
    /// would: ordinary bytes, at a line start after them when they end with a newline and
    /// blanks (`line`).
    fn pass_units(&mut self, from: usize, to: usize, line: bool) {
        self.announced.clear();
        self.pass_ordinary(from, to);
        if line {
            self.line_start = true;
        }
    }

    /// Whether the scan reads each byte of `buf[pos + 1..pos + period]` as text after the
    /// one at `pos` (read as an ordinary byte, so not at a line start), changing nothing but
    /// the line and identifier state: a byte no scan stops at, or a stop `plain_stop` says
    /// is ordinary (what the scan's bulk skip asks); and a newline followed only by blanks
    /// (`\n`, ` `, `\t`, `\r`, read by the scan's own arms, which keep the line start) with
    /// no opener at any of them. `Some(true)` when they end at a line start (a newline
    /// among them), `None` when the scan may read them otherwise.
    fn ordinary_after(&self, pos: usize, period: usize) -> Option<bool> {
        self.ordinary_after_in(pos, period, 0)
    }

    /// [`Engine::ordinary_after`], where a bracket that may open bare JSON is read as an
    /// ordinary byte too when the bytes through `until` (`0`: none) decide so whatever
    /// follows: no opener starts at it, it starts no run of brackets, and it starts no
    /// plausible JSON (asked with more to come); the scan then opens no region there and
    /// reads it as an ordinary byte (after [`Engine::pass_implausible`], which reads it so
    /// too). A flood of a declined opener and JSON's start (`<function={"`, `<|start|>{"`)
    /// was read opener by opener (~700 instructions a unit, 22x prose).
    fn ordinary_after_in(&self, pos: usize, period: usize, until: usize) -> Option<bool> {
        self.ordinary_strips_in(pos, period, until, None)
    }

    /// [`Engine::ordinary_after_in`], where a control token the scan strips
    /// ([`Engine::stripped_inside`]) may lie inside the unit too when `strips` is given: it
    /// is kept there (its offset from `pos` and its length) and the scan goes on after it.
    fn ordinary_strips_in(
        &self,
        pos: usize,
        period: usize,
        until: usize,
        mut strips: Option<&mut UnitStrips>,
    ) -> Option<bool> {
        let bytes = self.buf.as_bytes();
        // Bytes the scan reads as markup whatever follows them, refused before any opener
        // lookup (a unit of several openers, `]<]minimax[>[<tool_call>x`, holds brackets).
        let (arrays, objects) = (self.array_formats(), self.object_formats());
        let bracket = |c: u8| (c == b'[' && arrays) || (c == b'{' && objects);
        let window = bytes.get(..until)?;
        let implausible = |q: usize| {
            let start = window.get(q..).unwrap_or(&[]);
            let plausible = match start.first() {
                Some(b'[') => array_start_plausible(start, false),
                _ => object_start_plausible(start, false),
            };
            plausible == Some(false)
                && !is_bracket_run(window, q)
                && (self.nested || self.ctx.openers.none_at(window, q) == Ok(true))
        };
        if until == 0
            && bytes
                .get(pos + 1..pos + period)?
                .iter()
                .any(|&c| c == b'`' || bracket(c))
        {
            return None;
        }
        let stops = &self.ctx.openers.stops;
        let mut found = None;
        let mut line = false;
        let mut q = pos;
        while q + 1 < pos + period {
            q += 1;
            let c = *bytes.get(q)?;
            if line || c == b'\n' {
                let opener = !self.nested
                    && stops.is_stop(c)
                    && self.ctx.openers.none_at(bytes, q) != Ok(true);
                if opener && c != b'\n' && until > 0 {
                    // A stripped token at a line start, read so there too (the scan looks
                    // for an opener before its line-start arm): no line start after it.
                    let len = self.stripped_inside(window, q, pos + period)?;
                    strips.as_deref_mut()?.push(q - pos, len)?;
                    q += len - 1;
                    line = false;
                    continue;
                }
                // A line's first byte the scan reads as an ordinary one there (no opener, no
                // line opener's first byte, none of the bytes its own arms read): a unit
                // holding a line break (`{"\n}`, a region abandoned at each copy) was
                // refused (~1,500 instructions a 4-byte unit, 90x prose).
                if !opener
                    && until > 0
                    && !matches!(c, b'\n' | b' ' | b'\t' | b'\r' | b'`' | b'[' | b'{' | b'(')
                    && !self.ctx.openers.line_first(c)
                {
                    line = false;
                    continue;
                }
                if opener || !matches!(c, b'\n' | b' ' | b'\t' | b'\r') {
                    return None;
                }
                line = true;
            } else if bracket(c) {
                if !implausible(q) {
                    return None;
                }
            } else if c == b'`' {
                // A "```" inside the unit, not at a line start, where no opener starts:
                // passed by the scan's backtick arm as three bytes of text (no fence opens
                // mid-line). A flood of `{x```json\n` was read a copy at a time (~960
                // instructions a 10-byte copy, 26x prose).
                if !self.mid_line_fence(window, q, pos + period) {
                    return None;
                }
                q += 2;
            } else if stops.is_stop(c) && !self.plain_stop(q, &mut found) {
                match found.take() {
                    Some((_, j)) if until > 0 && self.declined_inside(window, q, j) => {}
                    Some(_) if until > 0 => {
                        let len = self.stripped_inside(window, q, pos + period)?;
                        strips.as_deref_mut()?.push(q - pos, len)?;
                        // The scan goes on after the token (`q` steps to its next byte).
                        q += len - 1;
                    }
                    _ => return None,
                }
            }
        }
        Some(line)
    }

    /// Whether the text scan reads the backtick at `q` (not at a line start) as the first
    /// of three bytes of text whatever follows `bytes[..end]`: "```" lies in them, and no
    /// opener starts there (none looked for in a fence's nested scan). Its arm then passes
    /// the three: a fence opens only at a line start. Out of line: inlined in the walk of
    /// implausible brackets, it cost `[{w}` 2 % more.
    #[inline(never)]
    fn mid_line_fence(&self, bytes: &[u8], q: usize, end: usize) -> bool {
        q + 3 <= end
            && matches!(backticks_at(bytes, q), Marker::Full)
            && (self.nested || self.ctx.openers.none_at(bytes, q) == Ok(true))
    }

    /// The length of the opener the scan finds at `q` inside a unit
    /// [`Engine::ordinary_strips_in`] reads with the bytes through `window`'s end, when it is
    /// a control token the scan strips there whatever follows ([`Action::Strip`]: the window
    /// finds it) and that ends inside the unit (before `end`) with a byte that is no newline
    /// and holds no name: the scan emits the text before it, skips it
    /// ([`Engine::strip`]) and goes on in text after it with no line start and no name,
    /// as after an ordinary byte of the kind. A flood of a stripped token and an
    /// implausible bracket (`<|eot|>["`, bare JSON off) was refused, each copy asked here in
    /// vain and read by the scan (~1,350 instructions a 9-byte unit, 41.7x prose).
    fn stripped_inside(&self, window: &[u8], q: usize, end: usize) -> Option<usize> {
        let (false, Err(Found::At(j))) = (self.nested, self.ctx.openers.none_at(window, q)) else {
            return None;
        };
        self.strip_len(j).filter(|len| q + len <= end)
    }

    /// The length of opener `j` when it is a control token the scan strips wherever it
    /// finds it ([`Action::Strip`]), whose last byte is no newline and holds no name: the
    /// scan goes on after it in text with no line start and no name, as after an ordinary
    /// byte of the kind ([`Engine::strip`]).
    fn strip_len(&self, j: usize) -> Option<usize> {
        let o = self.ctx.openers.get(j)?;
        let last = *o.text.as_bytes().last()?;
        (matches!(o.action, Action::Strip) && last != b'\n' && !is_name_byte(last))
            .then_some(o.text.len())
    }

    /// Emits the text of the units `buf[from..to]` ([`Engine::ordinary_strips_in`] read one
    /// with `strips`), each copy's tokens stripped as the scan strips them ([`Engine::strip`]).
    fn strip_units(&mut self, from: usize, to: usize, period: usize, strips: &UnitStrips) {
        let mut c = from;
        while c + period <= to {
            for &(at, len) in strips.all() {
                self.emit_text(c + at);
                self.emit_from = c + at + len;
            }
            c += period;
        }
        self.markup_found = true;
    }

    /// Whether opener `j`, found by the scan at `q` inside a unit [`Engine::ordinary_after_in`]
    /// reads with the bytes through `window`'s end, is one the scan would read as text
    /// there whatever follows: the window finds it (its bytes are there) and every family of
    /// it declines the region of the window's bytes from `q` at once, with more to come,
    /// and removes none of them; the scan then reads its first byte as an ordinary one (as
    /// after [`Engine::pass_declined`]) and goes on. A unit holding two declined openers
    /// (`]<]minimax[>[<tool_call>x`: the namespace and `<tool_call>`) was refused, so each
    /// was read opener by opener (~2,000 instructions a unit, 23-27x prose).
    fn declined_inside(&self, window: &[u8], q: usize, j: usize) -> bool {
        if self.nested || self.ctx.openers.none_at(window, q) != Err(Found::At(j)) {
            return false;
        }
        let Some(Action::Region(families)) = self.ctx.openers.get(j).map(|o| &o.action) else {
            return false;
        };
        let Some(region) = self.buf.get(q..window.len()) else {
            return false;
        };
        families.iter().all(|by| {
            by.removes(region, false).is_none()
                && by.open_region(region, false, &self.ctx).is_none()
        })
    }

    /// [`crate::openers::Openers::lookahead`], asked once (it walks every opener).
    fn lookahead(&mut self) -> usize {
        if self.lookahead == 0 {
            self.lookahead = self.ctx.openers.lookahead();
        }
        self.lookahead
    }

    /// Reads `buf[from..to]` as ordinary bytes after the line and identifier state at
    /// `from`: what `ordinary_byte` does for each, as `skip_plain` works it out for a run
    /// (the trailing name bytes decide `ident_start`, everything before them reset it).
    fn pass_ordinary(&mut self, from: usize, to: usize) {
        let to = to.min(self.buf.len()).max(from);
        let passed = self.buf.as_bytes().get(from..to).unwrap_or(&[]);
        self.ident_start = self.ident_after(passed, from);
        if !passed.is_empty() {
            self.line_start = false;
        }
        self.pos = to;
    }

    /// Reads `b` at `pos` as a byte of prose: identifier tracking for call syntax.
    fn ordinary_byte(&mut self, pos: usize, b: u8) {
        // An ordinary byte.
        if is_name_byte(b) {
            match self.ident_start {
                None => self.ident_start = Some(pos),
                Some(s) if pos - s > 256 => self.ident_start = Some(pos),
                Some(_) => {}
            }
        } else {
            self.ident_start = None;
        }
        self.line_start = false;
        self.pos = pos + 1;
    }

    /// `name(` with the identifier from `ident` and the `(` at `pos`: opens a call region
    /// when a family reads `name` as a call here. Out of line (as `line_text`): the text
    /// scan's code, which inlines it, grew with its direct path (a flood of backticks,
    /// read by that scan, cost 4 % more).
    ///
    /// Then, while the scan would stop at the next `(` only to read its `name(` here (the
    /// `name(` was text, the name bytes after it read up to that `(`: no byte between, no
    /// opener there), that `name(` is read here too, without the trip through the scan
    /// ([`Engine::next_call_here`]). A flood of words before `(` (`(the(weather(a(…`,
    /// `(x(x(x…`), each `(` read as text, went back to the scan at each `(`, its opener
    /// lookup and this call (~320 instructions a 2-byte `(x`, 44x prose).
    #[inline(never)]
    fn open_call(&mut self, ident: usize, pos: usize) -> bool {
        if self.failed_over() {
            return true;
        }
        // The last name no family took (buffer offsets): a fact about its bytes, so a
        // name of the same bytes is not asked again.
        let mut untaken = 0..0;
        if !self.open_call_once(ident, pos, &mut untaken) {
            return false;
        }
        #[cfg(test)]
        if self.no_walk {
            return true;
        }
        // Not past `max_failed_calls`: the step ends there, and `run` stops reading
        // ([`Engine::stop_after_failures`]; asked only at a next `name(`).
        while let Some((ident, pos)) = self.next_call_here()
            && !self.failed_over()
        {
            let bytes = self.buf.as_bytes();
            let start = ident + name_skip(bytes.get(ident..pos).unwrap_or(&[]));
            if start >= pos {
                // What `open_call_once` does for digits alone.
                self.pass_unread_call(pos);
            } else if self.seen_visible
                && (same_name(bytes.get(start..pos), bytes.get(untaken.clone()))
                    || self
                        .names
                        .filtered_out(self.buf.get(start..pos).unwrap_or("")))
            {
                // What `open_call_once` does for a name no family takes: the last such
                // name again, or one the registry's filter rules out (only the call
                // syntax family takes names, those the registry holds). A worded flood
                // (`(the(weather(a(…`) asked each name through a region's read context
                // and the name memo first (~100 instructions a name, 18 % of `({w}`).
                self.wake = None;
                self.pass_unread_call(pos);
            } else {
                // (Not opened: the `(` was read as an ordinary byte, what the scan would
                // read it as, and the scan goes on after it.)
                self.open_name(start, pos, &mut untaken);
            }
        }
        true
    }

    /// The `name(` the text scan would read next, at `pos` (its `(`) with the identifier
    /// from `ident`, when it would read it straight away ([`Engine::open_call`]): text
    /// mode, not at a line start, a `(` there after name bytes (`ident_start`), no declined
    /// region there, no opener at it (`(` is a stop, and no opener starts with it), and no
    /// run of `((` the scan would pass.
    #[inline]
    fn next_call_here(&self) -> Option<(usize, usize)> {
        let ident = self.ident_start?;
        let p = self.pos;
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        (matches!(self.mode, Mode::Text)
            && !self.line_start
            && bytes.get(p) == Some(&b'(')
            && bytes.get(p + 1).is_some_and(|&b| b != b'(')
            && self.declined != Some(p)
            && openers.stops.is_stop(b'(')
            && openers.none_starts_with(b'('))
        .then_some((ident, p))
    }

    /// One `name(` of [`Engine::open_call`]: whether it was read (a region, or text), else
    /// the `(` is left to the scan; a name no family takes is kept in `untaken`.
    #[inline]
    fn open_call_once(&mut self, ident: usize, pos: usize, untaken: &mut Range<usize>) -> bool {
        let start = ident + name_skip(self.buf.as_bytes().get(ident..pos).unwrap_or(&[]));
        if start >= pos {
            return self.pass_unread_call(pos);
        }
        // A name the registry's filter rules out, as the walk of `open_call` reads it: the
        // first `name(` the text scan finds of a worded flood (`the` + `get_weather(` in
        // `get_weather(computer_use({"theget_weather(…`) went through the name memo and a
        // region's read context first (~160 instructions a copy, 5 % of that flood).
        if self.seen_visible
            && self
                .names
                .filtered_out(self.buf.get(start..pos).unwrap_or(""))
        {
            self.wake = None;
            return self.pass_untaken_call(start, pos);
        }
        self.open_name(start, pos, untaken)
    }

    /// [`Engine::open_call_once`] for the name from `start` (its first letter or `_`).
    #[inline]
    fn open_name(&mut self, start: usize, pos: usize, untaken: &mut Range<usize>) -> bool {
        // As `step_region` reads a region (a `name(` decided at its first read is one), but
        // the text before it is emitted only when something comes between (a region, a
        // note reported): once text was seen, what `at_start` reads is known without it.
        if !self.seen_visible {
            self.emit_text(start);
        }
        self.wake = None;
        let (mut cx, region) = self.region_cx(start);
        let name = region.get(..pos - start).unwrap_or("");
        let ctx = cx.ctx;
        // The first call-syntax family that takes the name reads the region.
        let Some(&family) = ctx.calls.iter().find(|f| f.calls_name(name, &mut cx)) else {
            *untaken = start..pos;
            return self.pass_untaken_call(start, pos);
        };
        match family.call_start(region, pos - start, &mut cx) {
            Ok(reader) => self.start_region(start, pos, reader, Rest::None),
            Err(plain) => {
                self.announced.clear();
                // Enough bytes for a run worth passing (see `pass_failed_calls`).
                let period = pos + 1 - start;
                let enough = period.saturating_mul(
                    self.ctx
                        .limits
                        .max_depth
                        .saturating_mul(2)
                        .saturating_add(2),
                );
                let walk = self.buf.len() - pos >= enough;
                // How its scan failed, and where (for `pass_worded_calls`).
                let failed = match &plain.diagnostic {
                    Some(Note {
                        message: Message::Pieces(p),
                        span,
                        ..
                    }) if walk => p.error.map(|e| (e, span.end)),
                    _ => None,
                };
                self.plain_region(start, plain, false);
                if walk {
                    // (`no_run_before` asked here: a flood whose units differ, `{w}`, asks
                    // at every opener, and the call's frame cost ~60 instructions each.)
                    if self.pos > pos + 1 {
                        // A call closed at once as text (`get_weather(x)`), on its own
                        // schedule, once its note is dropped.
                        if self.base + pos >= self.no_closed_before && self.diag_cap.last_dropped()
                        {
                            self.pass_unit_run(Some(family), start, pos);
                        }
                    } else if self.base + pos >= self.no_run_before {
                        self.pass_failed_calls(Some(family), start, pos);
                    }
                    if self.pos == pos + 1
                        && self.base + pos >= self.no_worded_before
                        && let Some((error @ ScanError::TooDeep(_), end)) = failed
                    {
                        self.pass_worded_calls(family, start, pos, error, end);
                    }
                }
                self.pass_name_run();
            }
        }
        true
    }

    /// The `(` at `pos` after a name no family reads as a call (digits alone, `x`, a name not
    /// registered): read as the text scan reads it, an ordinary byte, then the name bytes
    /// after it up to the next `(` ([`Engine::pass_name_run`]). A flood of `(x0(x1…` or
    /// `(0(1…` was read by the scan's block skip from each `(` (~380 instructions for the
    /// few bytes, 38.4x and 24.0x prose). Whether it passed such a run: else (`false`) the
    /// text scan reads the `(` again as the ordinary byte it read here (the same state),
    /// and what follows as before. (A `true` always here let the compiler drop the text
    /// scan's path for a `(` read as ordinary, and the scan's code it laid out anew cost
    /// prose 0.3 % more.)
    fn pass_unread_call(&mut self, pos: usize) -> bool {
        self.ordinary_byte(pos, b'(');
        self.pass_name_run()
    }

    /// [`Engine::pass_unread_call`] for the `(` at `pos` after a name from `start` that no
    /// family reads as a call: first the run of copies of its unit, where one follows
    /// ([`Engine::pass_untaken_run`]).
    #[inline(always)]
    fn pass_untaken_call(&mut self, start: usize, pos: usize) -> bool {
        if self.base + pos >= self.no_untaken_before && self.pass_untaken_run(start, pos) {
            return true;
        }
        self.pass_unread_call(pos)
    }

    /// [`Engine::pass_failed_calls`] at the `(` at `pos` after a name from `start` that no
    /// family reads as a call (read as an ordinary byte first, as `pass_unread_call`
    /// reads it, which reads it again the same where no run was passed), with its own
    /// look-ahead marks. Whether it passed a run. Out of line: asked once a run or a miss.
    #[inline(never)]
    fn pass_untaken_run(&mut self, start: usize, pos: usize) -> bool {
        self.ordinary_byte(pos, b'(');
        self.pass_unit_run(None, start, pos);
        if self.pos == pos + 1 {
            return false;
        }
        self.pass_name_run();
        true
    }

    /// [`Engine::pass_failed_calls`] with the look-ahead marks of a unit whose first name is
    /// no family's (`family` `None`) or whose first call closed at once as text (each its
    /// own): apart from those of failing calls (a miss at the inner `get_weather(x)` of
    /// `get_weather(get_weather(x)` put off the pass of the outer call's unit: 1.30x prose
    /// became 5.12x).
    fn pass_unit_run(&mut self, family: Option<&'static dyn Family>, start: usize, pos: usize) {
        let (before, misses) = match family {
            None => (self.no_untaken_before, self.untaken_misses),
            Some(_) => (self.no_closed_before, self.closed_misses),
        };
        let saved = (
            std::mem::replace(&mut self.no_run_before, before),
            std::mem::replace(&mut self.call_unit_misses, misses),
        );
        self.pass_failed_calls(family, start, pos);
        let marks = (
            std::mem::replace(&mut self.no_run_before, saved.0),
            std::mem::replace(&mut self.call_unit_misses, saved.1),
        );
        match family {
            None => (self.no_untaken_before, self.untaken_misses) = marks,
            Some(_) => (self.no_closed_before, self.closed_misses) = marks,
        }
    }

    /// After the `name(` at `start` (its `(` at `pos`) was decided as text at its first
    /// read: the copies of a unit that starts with its `(` (then fillers and names before
    /// more `(`, the last naming this name) that the family decides as text in turn, each
    /// with the note it gave the first of its kind ([`Family::failed_call_scans`]: each
    /// kind's decision read only so many bytes, and a copy whose bytes that far lie in the
    /// periodic run is decided the same way), are passed at once, when the diagnostic cap
    /// drops those notes now (so each would only be counted) and the text scan reads each
    /// copy as this one: its `(` and the stops in its fillers start no opener, its fillers
    /// are bytes it reads as ordinary, the names under the scan's 256-byte restart. Each
    /// would leave no rescan charge (its region ends after its `(`, which its scan read)
    /// and the text pending, as this one did. Out of line: only after such a `name(`.
    ///
    /// So is a unit whose first `name(` is decided otherwise, as reading it leaves it:
    /// - a call that closes at once and is text (`get_weather(x)`: its arguments no
    ///   literals; `family` the one that read it, `self.pos` after its `)`): each copy is
    ///   the same bytes, decided alike with the same note (the family's
    ///   [`Family::failed_call_scans`] decides the first too, and the run goes on only
    ///   where it closes where this one did). Each copy was read one by one (its name asked,
    ///   its scan, the kept note copied and counted: ~1,300 instructions a 14-byte copy,
    ///   25.7x prose);
    /// - a name no family takes (`f(x)`, `f()`, `f(x)\n`; `family` `None`, `self.pos` after
    ///   its `(`, read as an ordinary byte): the same name at each copy, read alike; the
    ///   unit's other names must be ones no family takes too (nothing noted, nothing
    ///   scanned). Each copy's `(` went through `open_call`'s checks and the filler pass
    ///   (~290 instructions a 3-byte `f()`, 26.6x prose).
    #[inline(never)]
    fn pass_failed_calls(&mut self, family: Option<&'static dyn Family>, start: usize, pos: usize) {
        #[cfg(test)]
        if self.no_walk {
            return;
        }
        let open = pos - start;
        // A first call that closed (`self.pos` after its `)`): its decision is checked below.
        let closed_first = self.pos > pos + 1;
        if !matches!(self.mode, Mode::Text)
            || self.line_start
            || self.pos <= pos
            || (closed_first && family.is_none())
            || !self.seen_visible
            || open == 0
            || open > 256
            || (family.is_some() && !closed_first && !self.diag_cap.repeat_dropped())
            || self.base + pos < self.no_run_before
        {
            return;
        }
        let bytes = self.buf.as_bytes();
        // The unit: this `(`, then up to `MAX_UNIT_CALLS` segments of a filler and a name
        // before a `(` (none at all in a flood of `name(`; `get_weather( ` has a blank;
        // `get_weather(computer_use(` two names in turn; `get_weather({"` a bracket and a
        // quote), the last naming this name. A filler byte is one the text scan reads as
        // ordinary: no stop (its bulk skip passes it) or a stop that means nothing of
        // itself here (asked below, with the parentheses, for an opener at it: at most
        // `MAX_UNIT_STOPS` a unit); a name is the whole run of name bytes before its `(`
        // (the name the text scan tracks), starting with a letter or `_` (its stops asked
        // with the fillers'). Each
        // opener of such floods was read one by one (~1,700 instructions each: its
        // resumed scan, its note, the text scan's block skip; 35.8x prose for
        // `get_weather( `, 84.4x for alternating names, 42.4x for `get_weather({"`).
        let name = bytes.get(start..pos).unwrap_or(&[]);
        let stops = &self.ctx.openers.stops;
        // (Its stops, if any, are asked at each copy: the unit's last name is this name.)
        if name.iter().any(|&b| !NAME_BYTES[usize::from(b)]) {
            return;
        }
        let (arrays, objects) = (self.array_formats(), self.object_formats());
        // Each `(` of the unit (offsets from `pos`) and the name before it (absolute).
        let mut parens = [0usize; MAX_UNIT_CALLS];
        let mut names = [(start, pos); MAX_UNIT_CALLS];
        let mut k = 1;
        let mut from = pos + 1;
        let openers = &self.ctx.openers;
        // The unit's newlines and its fillers' other stops (offsets from `pos`).
        let (mut newlines, mut nls, mut nl_at) = (0, 0, [0usize; MAX_UNIT_CALLS]);
        let (mut sts, mut st_at) = (0, [0usize; MAX_UNIT_STOPS]);
        // Its fillers' brackets of a bare JSON format that is on (offsets from `pos`).
        let (mut brs, mut br_at) = (0, [0usize; MAX_UNIT_CALLS]);
        // Where the unit's last name (the next copy's) starts (offset from `pos`).
        let mut last_name = 0;
        // How far the unit was looked at, where a miss puts the next look off further.
        let mut looked = 0;
        // (`None`: no unit here, nor at the `(` it looked at: a numbered flood such as
        // `get_weather({"0get_weather({"1…`, whose names differ, is not looked at again at
        // each of them.)
        let period = 'unit: loop {
            let window = bytes.get(from..bytes.len().min(from + MAX_FILLER + open + 1));
            let Some(next) = window
                .and_then(|w| memchr::memchr(b'(', w))
                .map(|i| from + i)
            else {
                break None;
            };
            let seg = bytes.get(from..next).unwrap_or(&[]);
            let run = seg
                .iter()
                .rev()
                .take_while(|&&b| NAME_BYTES[usize::from(b)])
                .count();
            let (filler, ident) = seg.split_at(seg.len() - run);
            // The name `open_call` reads: the identifier from its first letter or `_` (the
            // digits before it, a numbered flood's `0get_weather(`, are no part of it).
            let skip = ident
                .iter()
                .take_while(|&&b| !(b.is_ascii_alphabetic() || b == b'_'))
                .count();
            let copy = ident.get(skip..).unwrap_or(&[]);
            // A newline in a filler (`get_weather(\n`) is read by the text scan as a line
            // end: allowed where the next line starts with no blank (which keeps the line
            // start) and no line opener's first byte (that byte is then read as after any
            // other), and no opener starts at it (asked below with the parentheses, at
            // `nl_at`). A newline after it is asked in turn (a filler ends before a name).
            let line_end_ok = |i: usize| {
                bytes
                    .get(from + i + 1)
                    .is_some_and(|&c| !matches!(c, b' ' | b'\t' | b'\r') && !openers.line_first(c))
            };
            // A `(` after no name byte (`if (`), not before another, is a filler byte the
            // text scan reads as ordinary where no opener starts at it (asked at each copy
            // with the fillers' stops).
            let bare = run == 0 && bytes.get(next + 1) != Some(&b'(');
            if !bare && (run == 0 || run > 256 || copy.is_empty()) {
                from = next + 1;
                break None;
            }
            // (At a name no family takes, a miss below looked at the bytes to the `(`: the
            // next look a unit on, not a byte, or code such as `fn main() { f({#}); }\n`
            // asked at most `(` of each line, 7 % more.)
            if family.is_none() && !bare {
                looked = next + 1;
            }
            // A name byte the text scan stops at (a letter an opener starts with: the `f`
            // of `f(x)`) is an ordinary name byte where no opener starts at it: asked with
            // the fillers' stops, at each copy. (Names with one were no unit: `f()` was
            // read `(` by `(`, 26.6x prose.)
            for (i, &b) in ident.iter().enumerate() {
                if stops.is_stop(b) {
                    let Some(slot) = st_at.get_mut(sts) else {
                        break 'unit None;
                    };
                    *slot = from + filler.len() + i - pos;
                    sts += 1;
                }
            }
            for (i, &b) in filler.iter().enumerate() {
                if b == b'\n' {
                    newlines += 1;
                    if !line_end_ok(i) || newlines > MAX_UNIT_CALLS {
                        break 'unit None;
                    }
                    if let Some(slot) = nl_at.get_mut(nls) {
                        *slot = from + i - pos;
                        nls += 1;
                    }
                } else if (b == b'[' && arrays) || (b == b'{' && objects) {
                    // A bracket whose bare JSON format is on: one that starts no JSON (its
                    // plausibility test says no, asked at each copy) is read as an ordinary
                    // byte. (Code such as `fn main() { f({#}); }\n` was no unit: each `f(`
                    // read one by one, 22x prose.)
                    let Some(slot) = br_at.get_mut(brs) else {
                        break 'unit None;
                    };
                    *slot = from + i - pos;
                    brs += 1;
                } else if stops.is_stop(b) {
                    // What `plain_stop` reads as an ordinary byte where no opener starts.
                    if b == b'`' {
                        break 'unit None;
                    }
                    let Some(slot) = st_at.get_mut(sts) else {
                        break 'unit None;
                    };
                    *slot = from + i - pos;
                    sts += 1;
                }
            }
            if bare {
                let Some(slot) = st_at.get_mut(sts) else {
                    break 'unit None;
                };
                *slot = next - pos;
                sts += 1;
                from = next + 1;
                continue;
            }
            // The same name again ends the unit where the bytes repeat after it (but for
            // digits): in `get_weather(get_weather(x)` the inner call's name is the outer's,
            // and the unit runs on to the next copy's.
            if copy == name && repeats_but_digits(bytes, pos, next - pos) {
                last_name = next - copy.len() - pos;
                break Some(next - pos);
            }
            let (Some(p), Some(n)) = (parens.get_mut(k), names.get_mut(k)) else {
                from = next + 1;
                break None;
            };
            *p = next - pos;
            *n = (next - copy.len(), next);
            k += 1;
            from = next + 1;
        };
        let Some(period) = period else {
            self.unit_miss(family.is_none() || closed_first, pos, from.max(looked));
            return;
        };
        let (parens, names) = (&parens[..k], &names[..k]);
        let (nl_at, st_at, br_at) = (&nl_at[..nls], &st_at[..sts], &br_at[..brs]);
        // The unit's digits outside its names (offsets from `pos`), which may differ from
        // copy to copy: a numbered flood (`get_weather(0get_weather(1…`) has no two copies
        // alike. Every reader of the unit reads any digit there as any other: the text scan
        // an ordinary name byte (no stop, asked above), the bracket scan an ordinary byte
        // after which no quote opens, and the name read before each `(` starts after them.
        // So copies whose bytes differ only in such digits are decided alike (the opener
        // lookups, which may read digits, are asked at each copy, below).
        let Some(unit) = bytes.get(pos..pos + period) else {
            return;
        };
        let mut free = [false; MAX_DIGIT_UNIT];
        let mut numbered = false;
        if period <= MAX_DIGIT_UNIT {
            for (u, (f, &b)) in free.iter_mut().zip(unit).enumerate() {
                let in_name = u >= last_name
                    || names
                        .iter()
                        .skip(1)
                        .any(|&(a, b)| (a - pos..b - pos).contains(&u));
                *f = b.is_ascii_digit() && !in_name;
                numbered |= *f;
            }
        }
        let free = free.get(..period).filter(|_| numbered);
        // Worth it only where more copies are passed than a failing scan reads past one
        // (a scan fails `max_depth` copies on: a stream's few new bytes a push pass none,
        // and their check would cost more than it saves).
        let max_depth = self.ctx.limits.max_depth;
        if (bytes.len() - pos) / period <= max_depth.saturating_mul(2).saturating_add(1) {
            return;
        }
        // Where the unit has no copy right after it (a `name(` repeated with other bytes
        // between: `get_weather(x(`), nothing below is asked (its names' families, its
        // notes' slots: ~1,500 instructions an opener). (One compare of a period: the
        // copies are counted below, once the notes allow a run.)
        let rest = bytes.get(pos..).unwrap_or(&[]);
        if periodic_len_free(rest, period, free, 2 * period) < 2 * period {
            self.unit_miss(family.is_none() || closed_first, pos, pos + period);
            return;
        }
        // (Asked before the run is looked for: a kind may have its share only after a
        // few more openers, and a run looked for once is not looked for again.)
        // Every opener of the unit is one this family reads (the first that takes its
        // name) and decides as text with a note the cap drops now: its message the last
        // or a recent one, of a kind that had its share; or a `(` after a name no family
        // takes (`xget_weather(` in `get_weather(computer_use(x`), which the text scan
        // reads as an ordinary byte, its decision a fact about its name's bytes.
        let mut cparens = [0usize; MAX_UNIT_CALLS];
        let mut cnames = [(start, pos); MAX_UNIT_CALLS];
        let mut c = 1;
        let mut decided: [UnitCall; MAX_UNIT_CALLS] =
            std::array::from_fn(|_| UnitCall::Failed(ScanError::TooDeep(max_depth)));
        let mut reach = [0usize; MAX_UNIT_CALLS];
        // The scans read no further than the periodic run (within a bound): a copy whose
        // scan reads past it is passed by no run, so a scan that would is not finished
        // (a worded flood, `get_weather(computer_use({"{w}`, has runs of a few copies where
        // a word repeats, and each of their two scans read `max_depth` copies on, ~32 k
        // instructions a run, 2.4 % of the flood). The bound keeps the compare within what
        // a unit's scans may read (a unit opens a bracket at least every other copy).
        let bound = period.saturating_mul(max_depth.saturating_mul(2).saturating_add(4));
        let known = periodic_len_free(rest, period, free, bound);
        let look = open + known;
        let scanned = {
            let (mut cx, region) = self.region_cx(start);
            let region = region.get(..floor_boundary(region, look)).unwrap_or(region);
            let ctx = cx.ctx;
            let mut other = false;
            for (&(a, b), &p) in names.iter().zip(parens).skip(1) {
                let name = region.get(a - start..b - start).unwrap_or("");
                match (
                    ctx.calls.iter().find(|f| f.calls_name(name, &mut cx)),
                    family,
                ) {
                    (None, _) => continue,
                    (Some(f), Some(family)) if std::ptr::addr_eq(*f, family) => {}
                    (Some(_), _) => other = true,
                }
                let (Some(cp), Some(cn)) = (cparens.get_mut(c), cnames.get_mut(c)) else {
                    other = true;
                    break;
                };
                (*cp, *cn) = (p, (a, b));
                c += 1;
            }
            let mut rel: [std::ops::Range<usize>; MAX_UNIT_CALLS] = Default::default();
            for (r, &(a, b)) in rel.iter_mut().zip(&cnames[..c]) {
                *r = a - start..b - start;
            }
            let (cparens, decided, reach) = (&cparens[..c], &mut decided[..c], &mut reach[..c]);
            match family {
                _ if other => false,
                Some(family) => family.failed_call_scans(
                    region,
                    open,
                    cparens,
                    &rel[..c],
                    decided,
                    reach,
                    &mut cx,
                ),
                // No name of the unit is read as a call: its `(`s are ordinary bytes.
                None => {
                    if let Some(r) = reach.first_mut() {
                        *r = 1;
                    }
                    c == 1
                }
            }
        };
        if !scanned {
            // Decided by the unit's bytes alone (another family's name, an inner call that
            // is a call: `get_weather(computer_use(city="x")`): so at every copy of the run,
            // which is not looked at again (each opener scanned its unit's `(` afresh, ~75 k
            // instructions a 28-byte unit).
            // (Copies that differ in digits are not compared that far: asked again a few
            // openers on, the inner call found at once; the run's compare cost ~5
            // instructions a byte, 4 % of `get_weather(computer_use(x){#}`.)
            // Nor is any copy of a stretch compared whole within the bound, whose scans
            // did not end in it: a copy's scans read the same bytes and end no sooner.
            // (Asked again a few openers on, the numbered `get_weather(get_weather(x){#}`
            // scanned each short stretch at its 10s and 100s again: 7 % more.)
            let rest = self.buf.as_bytes().get(pos..).unwrap_or(&[]);
            if known < bound.min(rest.len()) {
                self.no_run_before = self.no_run_before.max(self.base + pos + known);
                return;
            }
            if free.is_some() {
                self.unit_miss(family.is_none() || closed_first, pos, pos + period);
                return;
            }
            let stretch = periodic_len_on(rest, period, free, known, bound);
            self.no_run_before = self.no_run_before.max(self.base + pos + stretch);
            return;
        }
        // A closed call is decided by all its bytes: copies that differ in digits there
        // are not alike.
        let (cparens, decided, reach) = (&cparens[..c], &decided[..c], &reach[..c]);
        if let Some(free) = free
            && cparens.iter().zip(decided).zip(reach).any(|((&p, d), &r)| {
                matches!(d, UnitCall::Closed(..))
                    && free.get(p..r).is_none_or(|f| f.contains(&true))
            })
        {
            self.unit_miss(family.is_none() || closed_first, pos, pos + period);
            return;
        }
        // The first call is decided as it was read: closed where it closed (its `)` at
        // `self.pos`), else failed (its `(` read).
        let first_end = match (family, decided.first(), reach.first()) {
            (None, _, _) => 1,
            (Some(_), Some(UnitCall::Closed(..)), Some(&r)) if pos + r == self.pos => r,
            (Some(_), Some(UnitCall::Failed(_)), _) if !closed_first => 1,
            _ => {
                self.unit_miss(family.is_none() || closed_first, pos, pos + period);
                return;
            }
        };
        self.call_unit_misses = 0;
        let cnames = &cnames[..c];
        let mut slots = [(0usize, Level::Info); MAX_UNIT_CALLS];
        let region = self.buf.get(start..).unwrap_or("");
        let noted = if family.is_some() { c } else { 0 };
        for ((slot, &(a, b)), d) in slots.iter_mut().zip(cnames).zip(decided).take(noted) {
            let found = match d {
                UnitCall::Failed(error) => {
                    let Some((level, pieces)) =
                        family.and_then(|f| f.failed_call_note(a - start..b - start, *error))
                    else {
                        return;
                    };
                    self.diag_cap
                        .dropped_slot(level, &pieces, region)
                        .map(|s| (s, level))
                }
                UnitCall::Closed(level, text) => self
                    .diag_cap
                    .dropped_text_slot(*level, text)
                    .map(|s| (s, *level)),
            };
            match found {
                Some(s) => *slot = s,
                None => {
                    // The cap's state: asked again a few openers on.
                    self.unit_miss(family.is_none() || closed_first, pos, pos + period);
                    return;
                }
            }
        }
        let bytes = self.buf.as_bytes();
        let rest = bytes.get(pos..).unwrap_or(&[]);
        // The copies: the bytes from `pos` repeat with period `period` as far as they
        // equal the bytes `period` after them (block compares, not one per copy).
        let stretch = periodic_len_on(rest, period, free, known, bound);
        let copies = (stretch / period).saturating_sub(1);
        // The text scan finds no opener at a copy's `(`, newlines and filler stops. An
        // opener lookup reads at most the longest opener and one byte more: where that
        // lies inside the stretch, its bytes, and so its answer, are copy 1's; the last
        // few copies are asked one by one.
        let openers = &self.ctx.openers;
        let look = openers.lookahead();
        // (Plain loops: a chain of the three lists was left out of line in one build, ~10
        // instructions more an offset.)
        let none = |j: usize| {
            let at = pos + j * period;
            for list in [parens, nl_at, st_at] {
                for &p in list {
                    if openers.none_at(bytes, at + p) != Ok(true) {
                        return false;
                    }
                }
            }
            true
        };
        // (Where digits differ, every copy's lookups are asked.)
        let alike = match free {
            Some(_) => 0,
            None => stretch.saturating_sub(look) / period,
        };
        let mut reps = 0;
        if !none(0) {
            self.no_run_before = self.base + pos + stretch;
            return;
        }
        if alike >= 1 && none(1) {
            reps = alike.min(copies);
        }
        while reps < copies && none(reps + 1) {
            reps += 1;
        }
        // The fillers' brackets of copies `0..=reps`, asked apart (in the loop above, the
        // numbered `get_weather(get_weather(x){#}` cost 1 % more): a plausibility test reads
        // at most ~710 bytes, where the bytes are copy 1's that far the answer is too.
        if !br_at.is_empty() {
            let fine = |j: usize| {
                br_at
                    .iter()
                    .all(|&p| ordinary_bracket(openers, bytes, pos + j * period + p))
            };
            if !fine(0) {
                self.no_run_before = self.base + pos + stretch;
                return;
            }
            let alike = match free {
                Some(_) => 0,
                None => stretch.saturating_sub(800) / period,
            };
            let mut r = 0;
            if alike >= 1 && fine(1) {
                r = alike.min(reps);
            }
            while r < reps && fine(r + 1) {
                r += 1;
            }
            reps = r;
        }
        // What is not passed here is read opener by opener, with no second look.
        self.no_run_before = self.base + pos + stretch;
        // The openers passed: copy 0's after the first, copies `1..m`, copy `m`'s first.
        // Copy `j`'s opener of kind `i` reads `j period + reach[i]` bytes from `pos`: in
        // the stretch, they are copy 0's.
        let mut m = reps;
        for (i, &r) in reach.iter().enumerate() {
            let room = stretch.saturating_sub(r) / period;
            m = m.min(if i == 0 { room } else { room + 1 });
        }
        let errors = slots[..noted]
            .iter()
            .filter(|s| s.1 == Level::Error)
            .count();
        m = m.min(self.failures_left(errors));
        if m == 0 {
            return;
        }
        for &(slot, level) in &slots[..noted] {
            self.diag_cap.count_dropped(slot, m, level);
        }
        self.pos = pos + m * period + first_end;
        self.ident_start = None;
        #[cfg(test)]
        {
            self.calls_passed += m;
        }
    }

    /// [`Engine::pass_failed_calls`] found no run at the `(` at `pos`, having looked at the
    /// bytes up to `to`: no run is looked for again before `to`, nor as far again past it
    /// for each miss in a row (a numbered flood's openers, `get_weather({"0get_weather({"1…`,
    /// asked ~480 instructions each in vain); a run after misses is passed a few of its
    /// units later.
    fn call_unit_miss(&mut self, pos: usize, to: usize) {
        self.call_unit_misses = (self.call_unit_misses + 1).min(64);
        let skip = (to - pos).saturating_mul(self.call_unit_misses);
        self.no_run_before = self.no_run_before.max(self.base + pos + skip);
    }

    /// [`Engine::call_unit_miss`], or at a name no family takes (`untaken`)
    /// [`Engine::untaken_unit_miss`].
    fn unit_miss(&mut self, untaken: bool, pos: usize, to: usize) {
        if untaken {
            self.untaken_unit_miss(pos, to);
        } else {
            self.call_unit_miss(pos, to);
        }
    }

    /// [`Engine::call_unit_miss`] at a name no family takes: each miss in a row puts the
    /// next look twice as far off (names that differ, `f(x){w}`, asked a few hundred
    /// times in 128 KB at the linear pace: 2 % more).
    fn untaken_unit_miss(&mut self, pos: usize, to: usize) {
        self.call_unit_misses = (self.call_unit_misses + 1).min(20);
        let skip = (to - pos).saturating_mul(1 << self.call_unit_misses);
        self.no_run_before = self.no_run_before.max(self.base + pos + skip);
    }

    /// After the `name(` at `start` (its `(` at `pos`) was decided as text at its first
    /// read, its scan failed `too deep` (`error`) having read up to absolute offset
    /// `failed_end`: the
    /// copies after it of a unit whose copies differ in their words (runs of letters,
    /// digits and `_`, of any length: `get_weather(computer_use({"the`,
    /// `get_weather(computer_use({"weather`, …; `(\nthe`, `(\nget_weather`, …), which the
    /// readers read alike, are passed at once, where [`Engine::pass_failed_calls`] passes
    /// none (its copies repeat byte for byte, or but for digits).
    ///
    /// The unit is the shortest run of tokens from the name's first byte (a word, or one
    /// other byte) that repeats, starting with the name and its `(`; each `(` comes after
    /// a word. Every reader reads a copy as it reads the first but for the names before
    /// its `(`s: the bracket scan reads any word as it reads any other (no quote, bracket,
    /// `/` or `:` in one: the same state after it, whatever its bytes and length), so a
    /// scan from a copy's first `(` fails `too deep` as this one did, its last byte in the
    /// copy as many copies on, where the copies are alike that far; the text scan reads a
    /// copy's other bytes as it reads the first (each stop in it asked at each copy, as
    /// [`Engine::pass_filler_run`] asks them); and each name is asked at each copy: the
    /// first `(`'s is this name (read the same: its note the one the cap drops now, which
    /// it counts) or one no family reads (digits alone, one the registry's filter rules
    /// out, the first copy's own), any other `(`'s one no family reads. A copy with
    /// another name ends the run. So the copies after the first whose scans end inside
    /// the run, and the first `(` of the next, are read as reading each leaves them: text
    /// pending, their notes counted, the scan after that `(`.
    ///
    /// Each copy of `get_weather(computer_use({"{w}` (a name the filter rules out, then
    /// `computer_use(`, whose scan resumed a failed one) was read one by one (~2,500
    /// instructions a copy, 21.7x prose at 128 KB), as was each of `(\n{w}` (~2,700).
    #[inline(never)]
    fn pass_worded_calls(
        &mut self,
        family: &'static dyn Family,
        start: usize,
        pos: usize,
        error: ScanError,
        failed_end: usize,
    ) {
        if !matches!(self.mode, Mode::Text) || self.line_start || !self.seen_visible {
            return;
        }
        #[cfg(test)]
        if self.no_walk {
            return;
        }
        // A note the cap reports (its kind's first few), or after another kind's: not
        // asked again at once (a flood of closed calls, whose inner calls' notes come
        // between, asked at each opener, ~25 instructions each).
        if !self.diag_cap.repeat_dropped() {
            self.worded_miss(pos, pos + 1);
            return;
        }
        let openers = &self.ctx.openers;
        if !openers.stops.is_stop(b'(') || !openers.none_starts_with(b'(') {
            return;
        }
        // The last byte the scan read (a bracket: the one too deep).
        let Some(last) = failed_end
            .checked_sub(self.base + 1)
            .filter(|&l| l > pos && l < self.buf.len())
        else {
            return;
        };
        let bytes = self.buf.as_bytes();
        // The first copy starts at the name's word (digits before the name are of it).
        let lead = bytes
            .get(..start)
            .unwrap_or(&[])
            .iter()
            .rev()
            .take(257)
            .take_while(|&&b| WORD_BYTES[usize::from(b)])
            .count();
        let r0 = start - lead;
        // The name's own ident starts at `r0`, or one byte before at a name byte that is
        // no word byte (`:`, `.`, `-`) after a byte that is no name byte (`"a":get_weather(`:
        // the name bytes the scan tracks are `:get_weather`, which `name_skip` reads as
        // `get_weather`, the word's own name).
        let before = |i: usize| {
            i.checked_sub(1)
                .and_then(|i| bytes.get(i))
                .is_some_and(|&b| NAME_BYTES[usize::from(b)])
        };
        let led = |i: usize| {
            i.checked_sub(1)
                .and_then(|i| bytes.get(i))
                .is_some_and(|&b| !WORD_BYTES[usize::from(b)])
                && !before(i - 1)
        };
        if pos - r0 > 256
            || (before(r0) && !led(r0))
            || bytes
                .get(start..pos)
                .is_none_or(|n| n.iter().any(|&b| !WORD_BYTES[usize::from(b)]))
        {
            return;
        }
        // The tokens from there: a word (`WORD`), or one other byte.
        let mut kinds = [0u16; WORDED_TOKENS];
        let mut at_tok = [0usize; WORDED_TOKENS + 1];
        let mut n = 0;
        let mut at = r0;
        let limit = bytes.len().min(r0 + WORDED_LOOK);
        let mut period = None;
        // The tokens of a short unit first (a flood's unit is a few: 3 for `(\n{w}`),
        // then of a longer one (reading 64 at once cost a closed-call flood's misses
        // ~1,500 instructions each).
        for cap in [WORDED_FIRST, WORDED_TOKENS] {
            while n < cap && at < limit {
                let Some(&b) = bytes.get(at) else {
                    break;
                };
                at_tok[n] = at;
                if WORD_BYTES[usize::from(b)] {
                    at += bytes
                        .get(at..limit)
                        .unwrap_or(&[])
                        .iter()
                        .take_while(|&&c| WORD_BYTES[usize::from(c)])
                        .count();
                    kinds[n] = WORD;
                } else {
                    kinds[n] = u16::from(b);
                    at += 1;
                }
                n += 1;
            }
            at_tok[n] = at;
            let tokens = &kinds[..n];
            period = (2..=MAX_WORDED_PERIOD.min(n / 2))
                .find(|&p| tokens.get(p) == Some(&WORD) && tokens.get(..n - p) == tokens.get(p..n));
            if period.is_some() || n < cap {
                break;
            }
        }
        let tokens = &kinds[..n];
        let paren = u16::from(b'(');
        // A token `i` back from token `t` of the unit (read round it).
        let back = |t: usize, i: usize, p: usize| tokens.get((t + p - i) % p).copied();
        let byte = |k: Option<u16>, name: bool| {
            k.is_some_and(|k| k < WORD && NAME_BYTES[usize::from(k as u8)] == name)
        };
        let Some(period) = period.filter(|&p| {
            tokens.get(1) == Some(&paren)
                && (1..p).all(|i| {
                    tokens.get(i) != Some(&paren)
                        || (tokens.get(i - 1) == Some(&WORD)
                            && tokens.get(i + 1) != Some(&paren)
                            // The name bytes the scan tracks before the `(` are the word's,
                            // or a name byte that is no word byte (`:`, `.`, `-`) then the
                            // word, after a byte that is no name byte (`"a":get_weather(`,
                            // which `name_skip` reads as the word): not `a:b(` or `::b(`.
                            && (!byte(back(i, 2, p), true) || byte(back(i, 3, p), false)))
                })
        }) else {
            self.worded_miss(pos, at);
            return;
        };
        // The names of the first copy's other `(`s: each one no family reads (its bytes
        // kept: the same name again is read the same).
        let mut untaken = [(0usize, 0usize); MAX_WORDED_PERIOD];
        for t in 1..period {
            if tokens.get(t) != Some(&WORD) || tokens.get(t + 1) != Some(&paren) {
                continue;
            }
            let (a, b) = (at_tok[t], at_tok[t + 1]);
            let a = a + name_skip(self.buf.as_bytes().get(a..b).unwrap_or(&[]));
            match self.worded_name(family, a, b, error) {
                Ok(None) => {}
                _ => {
                    self.worded_miss(pos, at);
                    return;
                }
            }
            if let Some(u) = untaken.get_mut(t) {
                *u = (a, b);
            }
        }
        // The names read at the copies' first `(` (buffer offsets of one copy of each)
        // and the slots of their notes, counted: notes the cap drops now.
        let mut taken = [(0usize, 0usize, (0usize, Level::Info)); MAX_WORDED_NAMES];
        let Ok(Some(slot)) = self.worded_name(family, start, pos, error) else {
            self.worded_miss(pos, pos + 1);
            return;
        };
        taken[0] = (start, pos, slot);
        let mut names = 1;
        // The copies alike. The bytes the text scan passes in a word (a word byte that is
        // no stop), and the unit's tokens: a stop asked at each copy (no `(`).
        let stops = &self.ctx.openers.stops;
        let mut plain_word = WORD_BYTES;
        for (b, w) in plain_word.iter_mut().enumerate() {
            *w = *w && !stops.is_stop(b as u8);
        }
        let tmpl = kinds.get(..period).unwrap_or(&[]);
        let mut ask = [false; MAX_WORDED_PERIOD];
        for (a, &k) in ask.iter_mut().zip(tmpl) {
            *a = k != WORD && k != paren && u8::try_from(k).is_ok_and(|b| stops.is_stop(b));
        }
        // Each copy's first `(` and how many copies up to it have each name there, for
        // the copies up to the one the scan's last byte lies in (`reach`), then for the
        // last `reach + 1` copies (a ring).
        let mut copies = std::mem::take(&mut self.worded_copies);
        copies.clear();
        let mut found = None;
        let mut reach = None;
        let mut walked = 0usize;
        let mut counts = [0usize; MAX_WORDED_NAMES];
        let mut counts0 = counts;
        // Names no family reads met in the walk (buffer offsets of one copy of each), by
        // length and first letter.
        let mut seen = [(0usize, 0usize); SEEN_WORDS];
        let mut at = r0;
        let mut bytes = self.buf.as_bytes();
        // The notes counted (names taken, each a failed call attempt): walked no further
        // than `max_failed_calls` leaves, so that the copies passed never count the one
        // past it. (Bounding the copies walked instead cut the walks
        // of floods that count no note, `({w}` 18 % more.)
        let (mut noted, noted_max) = (0usize, self.failures_left(1));
        'walk: loop {
            let mut first = 0;
            for (t, &k) in tmpl.iter().enumerate() {
                if k != WORD {
                    let Some(&b) = bytes.get(at) else {
                        break 'walk;
                    };
                    if u16::from(b) != k
                        || (ask.get(t) == Some(&true)
                            && !self.plain_stop(at, &mut found)
                            && !self.passed_stop(at, b, found))
                    {
                        break 'walk;
                    }
                    at += 1;
                    continue;
                }
                let from = at;
                loop {
                    let rest = bytes.get(at..).unwrap_or(&[]);
                    at += rest
                        .iter()
                        .position(|&c| !plain_word[usize::from(c)])
                        .unwrap_or(rest.len());
                    match bytes.get(at) {
                        Some(&c) if WORD_BYTES[usize::from(c)] => {
                            if !self.plain_stop(at, &mut found) {
                                break 'walk;
                            }
                            at += 1;
                        }
                        Some(_) => break,
                        None => break 'walk,
                    }
                }
                if at == from || at - from > 256 {
                    break 'walk;
                }
                if tmpl.get(t + 1) != Some(&paren) {
                    continue;
                }
                let word = bytes.get(from..at).unwrap_or(&[]);
                let own = word.get(name_skip(word)..).unwrap_or(&[]);
                if own.is_empty() {
                    if t == 0 {
                        first = at;
                    }
                    continue;
                }
                if t == 0 {
                    first = at;
                    // (A search of the names by `position` was a call a copy, ~50
                    // instructions of `(\n{w}`'s ~430.)
                    let mut hit = false;
                    for ((ta, tb, _), c) in taken.iter().zip(counts.iter_mut()).take(names) {
                        if tb - ta == own.len() && bytes.get(*ta..*tb) == Some(own) {
                            *c += 1;
                            hit = true;
                            break;
                        }
                    }
                    if hit {
                        noted += 1;
                        if noted > noted_max {
                            break 'walk;
                        }
                        continue;
                    }
                } else if untaken
                    .get(t)
                    .is_some_and(|&(a, b)| a < b && same_name(Some(own), bytes.get(a..b)))
                {
                    continue;
                }
                // A name ruled out before (the same bytes), else by the registry's filter:
                // the few words of a flood come again and again (the filter's hash cost
                // ~43 instructions a copy of `(\n{w}`).
                let key =
                    (own.len() ^ usize::from(own.first().copied().unwrap_or(0) >> 1)) % SEEN_WORDS;
                if seen
                    .get(key)
                    .is_some_and(|&(a, b)| b - a == own.len() && bytes.get(a..b) == Some(own))
                {
                    continue;
                }
                if self.names.filtered_out_bytes(own) {
                    if let Some(e) = seen.get_mut(key) {
                        *e = (at - own.len(), at);
                    }
                    continue;
                }
                // A name not met yet: one no family reads, or (at the first `(`) one
                // read as this one is, its note dropped now.
                let a = at - own.len();
                let read = self.worded_name(family, a, at, error);
                bytes = self.buf.as_bytes();
                match read {
                    Ok(None) => {}
                    Ok(Some(slot)) if t == 0 && names < MAX_WORDED_NAMES => {
                        noted += 1;
                        if noted > noted_max {
                            break 'walk;
                        }
                        if let Some(n) = taken.get_mut(names) {
                            *n = (a, at, slot);
                        }
                        if let Some(c) = counts.get_mut(names) {
                            *c = 1;
                        }
                        names += 1;
                    }
                    _ => break 'walk,
                }
            }
            match reach {
                Some(r) => {
                    if let Some(c) = copies.get_mut(walked % (r + 1)) {
                        *c = (first, counts);
                    }
                }
                None => {
                    if walked == 0 {
                        counts0 = counts;
                    }
                    copies.push((first, counts));
                    if last < at {
                        reach = Some(walked);
                    }
                }
            }
            walked += 1;
        }
        // Copy `j`'s scan ends in copy `j + reach`: copies up to `m` are passed. (None
        // passed: none is looked for again before the walk's end, nor a little past it
        // for each miss in a row, so that a flood whose copies end each walk at once, a
        // bracket that opens bare JSON, is not walked at each opener.)
        self.no_worded_before = self.no_worded_before.max(self.base + at);
        let passed = reach.and_then(|r| {
            let m = walked.checked_sub(r + 1).filter(|&m| m >= 1)?;
            copies
                .get(m % (r + 1))
                .map(|&(first, upto)| (m, first, upto))
        });
        let Some((m, first, upto)) = passed else {
            self.worded_miss(at, at + 1);
            self.worded_copies = copies;
            return;
        };
        debug_assert!(m >= 1);
        #[cfg(test)]
        {
            self.worded_passed += m;
        }
        // (Copy 0's first `(` was read.)
        for ((&(_, _, (slot, level)), &n), &n0) in taken.iter().zip(&upto).zip(&counts0).take(names)
        {
            if n > n0 {
                self.diag_cap.count_dropped(slot, n - n0, level);
            }
        }
        self.worded_misses = 0;
        self.pos = first + 1;
        self.ident_start = None;
        self.worded_copies = copies;
    }

    /// How the name at `a..b` would be read before a `(` whose scan fails with `error`:
    /// `Ok(None)` where no family reads it, `Ok(Some(slot))` where `family` reads it and
    /// the cap drops its note now (the note's slot), else `Err`.
    #[inline(never)]
    fn worded_name(
        &mut self,
        family: &'static dyn Family,
        a: usize,
        b: usize,
        error: ScanError,
    ) -> Result<Option<(usize, Level)>, ()> {
        let (mut cx, region) = self.region_cx(a);
        let name = region.get(..b - a).unwrap_or("");
        let ctx = cx.ctx;
        match ctx.calls.iter().find(|f| f.calls_name(name, &mut cx)) {
            None => return Ok(None),
            Some(f) if std::ptr::addr_eq(*f, family) => {}
            Some(_) => return Err(()),
        }
        let (level, pieces) = family.failed_call_note(0..b - a, error).ok_or(())?;
        let region = self.buf.get(a..).unwrap_or("");
        self.diag_cap
            .dropped_slot(level, &pieces, region)
            .map(|slot| Some((slot, level)))
            .ok_or(())
    }

    /// Whether the walk of [`Engine::pass_worded_calls`] reads on past the stop `b` at `pos`
    /// that `plain_stop` did not pass (the opener it found there in `found`): a newline
    /// [`Engine::plain_line_end`] passes, or an opener [`Engine::declined_at_once`]. Out of
    /// line: asked in the walk's loop, the two checks there cost the walk ~6 % more a word
    /// (`get_weather(computer_use({"{w}` 1.4 % more).
    #[inline(never)]
    fn passed_stop(&self, pos: usize, b: u8, found: Option<(usize, usize)>) -> bool {
        (b == b'\n' && self.plain_line_end(pos)) || self.declined_at_once(pos, found)
    }

    /// Whether the opener `found` at `pos` (the walk of [`Engine::pass_worded_calls`] found
    /// it there) is declined at once, so that `open` reads its first byte as text, as
    /// [`Engine::pass_declined_walk`] asks: every family of a region opener declines the
    /// region (none removes its bytes), or a suffixed marker has no suffix. A worded flood
    /// with an opener in its unit (`<|python_tag|>get_weather({w}`) was read copy by copy,
    /// each opener declined, each `name(` scanned (~3,100 instructions a copy, 27.6x prose).
    #[inline(never)]
    fn declined_at_once(&self, pos: usize, found: Option<(usize, usize)>) -> bool {
        let Some(i) = found
            .filter(|&(at, _)| at == self.base + pos)
            .map(|(_, i)| i)
        else {
            return false;
        };
        if self.broken.as_ref().is_some_and(|m| m.opener == i) {
            return false;
        }
        let is_final = self.text_final;
        let Some(o) = self.ctx.openers.get(i) else {
            return false;
        };
        match &o.action {
            Action::Region(families) => {
                let region = self.buf.get(pos..).unwrap_or("");
                families.iter().all(|by| {
                    by.removes(region, is_final).is_none()
                        && by.open_region(region, is_final, &self.ctx).is_none()
                })
            }
            Action::SuffixedReasoning(_) | Action::SuffixedStrip => {
                let after = self.buf.as_bytes().get(pos + o.text.len()..).unwrap_or(&[]);
                matches!(read_suffix(after, is_final), Suffix::No)
            }
            _ => false,
        }
    }

    /// [`Engine::pass_worded_calls`] found no unit at the `(` at `pos`, having looked at
    /// the bytes up to `to`: none is looked for again before `to`, nor twice as far again
    /// for each miss in a row.
    fn worded_miss(&mut self, pos: usize, to: usize) {
        self.worded_misses = (self.worded_misses + 1).min(WORDED_MISSES);
        let skip = to.saturating_sub(pos) << self.worded_misses;
        self.no_worded_before = self.no_worded_before.max(self.base + pos + skip);
    }

    /// A reader's context for the region at `start`, as `step_region` makes one for the
    /// reader it steps, and the region's text (the buffer from `start`).
    fn region_cx(&mut self, start: usize) -> (ReadCx<'_>, &str) {
        let cx = ReadCx {
            ctx: &self.ctx,
            base: self.base + start,
            live: &mut self.live,
            streaming: !self.quiet && !self.ctx.reasoning_only,
            at_start: !self.seen_visible,
            end: self.reply_end,
            failed_scan: &mut self.failed_scan,
            failed_call_scan: &mut self.failed_call_scan,
            names: &mut self.names,
            kept: &mut self.kept,
            wake: None,
            broken_by: None,
        };
        (cx, self.buf.get(start..).unwrap_or(""))
    }

    /// After a `name(` decided as text at its first read: the name bytes after its `(` up
    /// to the next `(` (the next opener of a flood of `name(`), when none of them is a byte
    /// the scan stops at, are read as ordinary bytes at once, as the scan's bulk skip
    /// would read them (it stops at that `(`, after a name byte), without its block
    /// compares (~340 instructions for the few bytes). Whether it passed them.
    fn pass_name_run(&mut self) -> bool {
        if !matches!(self.mode, Mode::Text) || self.line_start {
            return false;
        }
        let from = self.pos;
        let stops = &self.ctx.openers.stops;
        let rest = self.buf.as_bytes().get(from..).unwrap_or(&[]);
        // (A search for the first byte that ends the run, not a count of those before it:
        // ~10 instructions less a `(` of `(x(x…`.)
        let n = rest
            .iter()
            .position(|&b| !NAME_BYTES[usize::from(b)] || stops.is_stop(b))
            .unwrap_or(rest.len());
        if n > 0 && rest.get(n) == Some(&b'(') {
            if n < 257 && self.ident_start.is_none() {
                // Every byte passed is a name byte: the name starts at the first.
                self.ident_start = Some(from);
                self.pos = from + n;
            } else {
                self.pass_ordinary(from, from + n);
            }
            return true;
        }
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        self.pass_filler_run(from)
    }

    /// [`Engine::pass_name_run`] where other bytes come before the next `(`: the bytes
    /// from `from` up to the next `(` within [`FILLER_RUN`] bytes are read as
    /// [`Engine::skip_plain`] reads them (each stop asked of [`Engine::plain_stop`]), when
    /// every one is ordinary and the scan stops at that `(` (after a name byte): the
    /// `{"` and word before each copy's name in `get_weather(computer_use({"{w}` went
    /// back to the text scan's dispatch and block scan (~450 instructions a copy, 17 % of
    /// that flood). Whether it passed them.
    /// Out of line: inlined, `pass_name_run` cost ~14 instructions more a `(` of `(x(x…`.
    #[inline(never)]
    fn pass_filler_run(&mut self, from: usize) -> bool {
        let bytes = self.buf.as_bytes();
        let window = bytes
            .get(from..bytes.len().min(from + FILLER_RUN))
            .unwrap_or(&[]);
        let stops = &self.ctx.openers.stops;
        let mut found = None;
        // The bytes before the next `(`, and how many of them come before the name bytes
        // that end them. (One loop: a search for the `(`, then for each stop before it,
        // cost ~90 instructions more a copy.)
        let mut end = 0;
        let mut lead = 0;
        loop {
            let Some(&b) = window.get(end) else {
                return false;
            };
            if b == b'(' {
                break;
            }
            if !NAME_BYTES[usize::from(b)] {
                lead = end + 1;
            }
            if stops.is_stop(b)
                && !self.plain_stop(from + end, &mut found)
                && (b != b'\n' || !self.plain_line_end(from + end))
            {
                return false;
            }
            end += 1;
        }
        // The `(` stops the scan only after a name byte (and a stop it is: no opener
        // starts with it, asked by `plain_stop`, which reads it as text otherwise).
        if lead == end || !stops.is_stop(b'(') || self.plain_stop(from + end, &mut found) {
            return false;
        }
        self.scan_found = found;
        // As `ident_after` reads the run: its trailing name bytes (within a name's
        // 256-byte restart), or all of them.
        self.ident_start = if lead > 0 {
            Some(from + lead)
        } else {
            self.ident_after(window.get(..end).unwrap_or(&[]), from)
        };
        self.pos = from + end;
        true
    }

    /// Whether the newline at `pos`, inside a run [`Engine::pass_filler_run`] reads, and
    /// the bytes after it are read by `step_text` as a line end, blanks and an ordinary byte:
    /// no opener starts at the newline, and the first byte after the blanks (which keep the
    /// line start) is no stop, or a letter, digit or `_` that is one (which the caller asks
    /// for an opener as it asks any stop in the run: the text scan's lookup at a line's
    /// first byte), and starts no line opener (a line's first byte is read as
    /// ordinary then, the newline's line start and name reset left behind). A flood of `(` and a newline before each name (`(\n0(\n1(…`,
    /// `(\nthe(\nweather(…`) went back to the text scan at each newline, its line start and
    /// its block scan for the few name bytes (~780 instructions a copy, 30-34x prose).
    /// Out of line: asked only after `plain_stop` said no (inlined, the filler loop cost
    /// ~8 instructions more a byte).
    #[inline(never)]
    fn plain_line_end(&self, pos: usize) -> bool {
        let bytes = self.buf.as_bytes();
        // Blanks keep the line start (a line opener may follow them).
        let first = pos
            + 1
            + bytes
                .get(pos + 1..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\r'))
                .count();
        let Some(&next) = bytes.get(first) else {
            return false;
        };
        let openers = &self.ctx.openers;
        // (A letter that is a stop, `t` or `a` where an opener starts with one, was refused:
        // each copy of `(\n{w}` whose word began with one went back to the text scan.)
        if openers.stops.is_stop(next) && !WORD_BYTES[usize::from(next)] {
            return false;
        }
        if openers.line_first(next)
            && openers
                .line
                .iter()
                .any(|o| !matches!(match_at(bytes, first, o.text, true), Marker::No))
        {
            return false;
        }
        self.nested
            || matches!(
                openers.none_at_after(bytes, pos, &self.last_found),
                Ok(true)
            )
    }

    /// A line-start opener (`TOOL_CALL:`, any case) at `pos`: `None` when there is none.
    fn open_at_line_start(&mut self, pos: usize, is_final: bool) -> Option<Step> {
        if self.failed_over() {
            return Some(Step::Continue);
        }
        let bytes = self.buf.as_bytes();
        let mut found = None;
        for (i, o) in self.ctx.openers.line.iter().enumerate() {
            match match_at(bytes, pos, o.text, true) {
                Marker::Partial if !is_final => return Some(Step::Wait),
                Marker::Full if found.is_none() => found = Some((i, o.text.len())),
                _ => {}
            }
        }
        let (opener, len) = found?;
        if let Some(plain) = self.line_text(opener, pos, is_final) {
            // Decided before a reader was built, as its first step would decide it.
            self.announced.clear();
            let noted = plain.diagnostic.is_some();
            self.header_text(pos, plain);
            // Enough bytes for a run worth passing (see `pass_text_lines`).
            if self.pos > pos && self.buf.len() - pos >= 16 * (self.pos + 1 - pos) {
                self.pass_text_lines(opener, pos, noted);
            }
            return Some(Step::Continue);
        }
        let mut rest = Rest::Line { opener, next: 0 };
        match self.next_reader(&mut rest, pos, is_final) {
            Some(reader) => self.start_region(pos, pos + len, reader, rest),
            // No reader at all: the byte is ordinary text.
            None => return None,
        }
        Some(Step::Continue)
    }

    /// The family that reads line opener `op` (the first of its readers), as the text
    /// scan would ask it.
    fn line_reader(&self, op: usize) -> Option<ReadBy> {
        self.ctx
            .openers
            .line
            .get(op)
            .and_then(|o| o.families.first())
            .copied()
    }

    /// After the line at `start` (line opener `opener`) was decided as text up to its
    /// newline by [`Engine::line_text`]: the copies of a unit of lines directly after it (a
    /// flood of a few lines, found by one periodic block compare) are passed at once, when
    /// the text scan would read each copy as the first and every note in it is one the
    /// diagnostic cap drops now (so each would only be counted). The unit runs from this
    /// line to the next copy of it at a line start (blanks before it allowed), at most
    /// [`MAX_UNIT_LINES`] lines: this one, then lines that are either other line-opener
    /// lines the first family of their opener decides as text up to their newline with a
    /// note ([`crate::family::Family::line_text`]: `TOOL_CALL: y` between `TOOL_CALL: x`),
    /// or lines of bytes the scan reads as ordinary (each no stop, or one that means nothing
    /// of itself where no opener starts, and the first no line opener's first byte: `foo`,
    /// an empty line, the blanks before the next header). The
    /// family says how many copies of each header line it decides the same way
    /// ([`crate::family::Family::text_line_repeats`]); the text scan's opener lookups at
    /// a copy's stops read the same bytes as copy 1's where they lie in the run. Each copy
    /// would leave no rescan charge and its text pending, as this line did. A flood such as
    /// `TOOL_CALL: y\nTOOL_CALL: x\n` was read line by line (~2,800 instructions a unit,
    /// 44.7x prose; `TOOL_CALL: x\nfoo\n` 36.7x). A header line with no note (`tool_call:`
    /// naming no tool, declined, its line ordinary bytes: `noted` false) counts nothing.
    /// Out of line: only after such a line.
    #[inline(never)]
    fn pass_text_lines(&mut self, opener: usize, start: usize, noted: bool) {
        let nl = self.pos;
        let bytes = self.buf.as_bytes();
        if !matches!(self.mode, Mode::Text)
            || nl <= start
            || bytes.get(nl) != Some(&b'\n')
            || !self.seen_visible
            || self.declined.is_some()
            || self.base + start < self.no_run_before
            || (noted && !self.diag_cap.repeat_dropped())
        {
            return;
        }
        if self.pass_text_line_run(opener, start, nl) {
            self.text_line_misses = 0;
        } else {
            // Copies that differ (a number or a word in each: `TOOL_CALL: x\n{#}`) are no
            // run; looking for one at every copy cost ~830 instructions a copy (a third
            // of such a flood). Asked again after as many lines as misses in a row.
            self.text_line_misses = (self.text_line_misses + 1).min(64);
            let skip = (nl + 1 - start).saturating_mul(self.text_line_misses);
            self.no_run_before = self.no_run_before.max(self.base + start + skip);
        }
    }

    /// [`Engine::pass_text_lines`]'s look for a run and its pass: whether one was passed.
    fn pass_text_line_run(&mut self, opener: usize, start: usize, nl: usize) -> bool {
        let bytes = self.buf.as_bytes();
        let line_end = nl - start;
        let Some(line) = bytes.get(start..=nl) else {
            return false;
        };
        let openers = &self.ctx.openers;
        let stops = &openers.stops;
        // The unit's other header lines: (offset from `start`, line end there, opener).
        let mut headers = [(0usize, line_end, opener); MAX_UNIT_LINES];
        let mut h = 1;
        let mut at = nl + 1;
        let mut lines = 1;
        let period = loop {
            let blanks = bytes
                .get(at..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\r'))
                .count();
            let first = at + blanks;
            if bytes.get(first..first + line.len()) == Some(line) {
                break first - start;
            }
            let Some(le) = bytes
                .get(first..bytes.len().min(first + MAX_LINE))
                .and_then(|w| memchr::memchr(b'\n', w))
                .map(|i| first + i)
            else {
                return false;
            };
            lines += 1;
            if lines > MAX_UNIT_LINES {
                return false;
            }
            let found = openers
                .line
                .iter()
                .position(|o| matches!(match_at(bytes, first, o.text, true), Marker::Full));
            match found {
                Some(i) => {
                    let Some(slot) = headers.get_mut(h) else {
                        return false;
                    };
                    *slot = (first - start, le - first, i);
                    h += 1;
                }
                None => {
                    // A stop there means nothing of itself and starts no opener (as
                    // `ReadCx::ordinary` asks).
                    let ordinary = |i: usize| {
                        bytes.get(i).is_some_and(|&b| {
                            !stops.is_stop(b)
                                || (!matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(')
                                    && openers.none_at(bytes, i) == Ok(true))
                        })
                    };
                    if bytes.get(first).is_some_and(|&b| openers.line_first(b))
                        || !(first..le).all(ordinary)
                    {
                        return false;
                    }
                }
            }
            at = le + 1;
        };
        let headers = &headers[..h];
        let rest = bytes.get(start..).unwrap_or(&[]);
        // A few units at hand (a stream's push) are not worth the compare: the last of
        // them are read one by one anyway (their lookups read past the run).
        if rest.len() / period < 16 {
            return false;
        }
        // Every header line of the unit is decided as text to its newline with a note the
        // cap drops now (asked before the run is looked for: a kind may have its share
        // only a few lines after another's, and a run looked for once is not again).
        // (`None`: a line with no note, declined where no other family reads its opener.)
        let mut slots = [None; MAX_UNIT_LINES];
        for (slot, &(off, le, op)) in slots.iter_mut().zip(headers) {
            let Some(by) = self.line_reader(op) else {
                return false;
            };
            let alone = self
                .ctx
                .openers
                .line
                .get(op)
                .is_some_and(|o| o.families.len() == 1);
            let (mut cx, region) = self.region_cx(start + off);
            let Some(plain) = by.family.line_text(by.opener, region, false, &mut cx) else {
                return false;
            };
            if plain.end != le || plain.scanned != le || plain.label.is_some() {
                return false;
            }
            if plain.diagnostic.is_none() && alone {
                continue;
            }
            let Some(Note {
                level,
                message: Message::Pieces(pieces),
                ..
            }) = plain.diagnostic
            else {
                return false;
            };
            let region = self.buf.get(start + off..).unwrap_or("");
            match self.diag_cap.dropped_slot(level, &pieces, region) {
                Some(s) => *slot = Some((s, level)),
                None => return false,
            }
        }
        let bytes = self.buf.as_bytes();
        let rest = bytes.get(start..).unwrap_or(&[]);
        let stretch = periodic_len(rest, period);
        let copies = (stretch / period).saturating_sub(1);
        self.no_run_before = self.base + start + stretch;
        if copies == 0 {
            return false;
        }
        let openers = &self.ctx.openers;
        let look = openers.lookahead();
        let line_look = openers.line.iter().map(|o| o.text.len()).max().unwrap_or(0);
        let reach = period + look.max(line_look);
        // Copies `1..=alike` have every byte the scan reads in the run; copy 1's lookups,
        // at each of its stops.
        let alike = stretch.saturating_sub(reach) / period;
        let copy = start + period;
        let none = (copy..copy + period)
            .filter(|&i| bytes.get(i).is_some_and(|&b| openers.stops.is_stop(b)))
            .all(|i| openers.none_at(bytes, i) == Ok(true));
        let reps = if alike >= 1 && none {
            alike.min(copies)
        } else {
            0
        };
        if reps == 0 {
            return false;
        }
        // Units whose every header line the family decides the same way: line 0's copies
        // 1..=m, a later header's copies 0..m (its first is read here for the first time).
        let mut m = reps;
        for &(off, le, op) in headers {
            let Some(by) = self.line_reader(op) else {
                return false;
            };
            let (mut cx, region) = self.region_cx(start + off);
            let n = if off == 0 {
                by.family
                    .text_line_repeats(by.opener, region, le, period, reps, &mut cx)
            } else {
                by.family
                    .text_line_repeats(by.opener, region, le, period, reps - 1, &mut cx)
                    + 1
            };
            m = m.min(n);
        }
        // Every noted header line is a failed call attempt (`Engine::header_text`).
        m = m.min(self.failures_left(slots[..h].iter().flatten().count()));
        if m == 0 {
            return false;
        }
        for &(slot, level) in slots[..h].iter().flatten() {
            self.diag_cap.count_dropped(slot, m, level);
            if level != Level::Error {
                self.diag_cap.errors += m;
            }
        }
        self.pos = nl + m * period;
        self.ident_start = None;
        self.line_start = false;
        true
    }

    /// [`crate::family::Family::line_text`] of line opener `opener`'s first family for
    /// the region at `start`, asked as `step_region` asks a reader (the text before the
    /// region emitted only when something comes between: see [`Engine::open_call`]).
    #[inline(never)]
    fn line_text(&mut self, opener: usize, start: usize, is_final: bool) -> Option<Plain> {
        if !self.seen_visible {
            self.emit_text(start);
        }
        let families = &self.ctx.openers.line.get(opener)?.families;
        let (by, alone) = (*families.first()?, families.len() == 1);
        self.wake = None;
        let (mut cx, region) = self.region_cx(start);
        // A decline (no note) stands for the reader's only where no other family's reader
        // would be asked next.
        by.family
            .line_text(by.opener, region, is_final, &mut cx)
            .filter(|plain| plain.diagnostic.is_some() || alone)
    }

    /// The next reader a region's opener has, building only that one (see [`Rest`]); a
    /// family that [`crate::family::Family::declines`] the region at `start` is passed over
    /// without building its reader.
    fn next_reader(
        &self,
        rest: &mut Rest,
        start: usize,
        is_final: bool,
    ) -> Option<Box<dyn RegionReader>> {
        let region = self.buf.get(start..).unwrap_or("");
        loop {
            let reader = match rest {
                Rest::None => return None,
                Rest::Literal { opener, next } => {
                    let Some(Action::Region(families)) =
                        self.ctx.openers.get(*opener).map(|o| &o.action)
                    else {
                        return None;
                    };
                    let by = *families.get(*next)?;
                    *next += 1;
                    if by.declines(region, is_final) {
                        continue;
                    }
                    by.family.reader(by.opener, &self.ctx)
                }
                Rest::Line { opener, next } => {
                    let o = self.ctx.openers.line.get(*opener)?;
                    let by = *o.families.get(*next)?;
                    *next += 1;
                    by.family.line_reader(by.opener, &self.ctx)
                }
            };
            if let Some(r) = reader {
                return Some(r);
            }
        }
    }

    /// Acts on a plausibility verdict for a bare `{`/`[` at `pos`: wait for more bytes, start
    /// a bare JSON region there, or (`None`) carry on with the text.
    fn open_plain_json(
        &mut self,
        pos: usize,
        plausible: Option<bool>,
        is_final: bool,
    ) -> Option<Step> {
        match plausible {
            _ if self.failed_over() => Some(Step::Continue),
            None => Some(Step::Wait),
            Some(true) => {
                if self.pass_failed_regions(pos) || self.pass_unclaimed_json(pos) {
                    return Some(Step::Continue);
                }
                // Inside a failed region or within a unit after it (a flood of closed
                // broken values, `x{"a": 1 {w}}`, opened a region a copy: ~3,400
                // instructions a 15-byte copy; none before the first failed region: a
                // reply's first value walked first cost `json/small` 35 %), unless a walk
                // from before passed nothing
                // (asked here: each call that returns at once cost a flood of `[[x\n` ~125
                // instructions a bracket).
                let at = self.abs(pos);
                if at < self.failed_text_end.saturating_add(MAX_UNIT)
                    && self.failed_text_end > 0
                    && at >= self.no_failed_walk_before
                    && self.pass_failed_walk(pos, is_final)
                {
                    return Some(Step::Continue);
                }
                let reader = Box::new(BareJsonReader::new(&self.ctx));
                self.start_region(pos, pos, reader, Rest::None);
                self.bare_region = true;
                Some(Step::Continue)
            }
            Some(false) => None,
        }
    }

    /// The bracket at `pos` starts a whole JSON value no family claims
    /// ([`unclaimed_value_end`]): its region, kept from no failed scan, would decode it,
    /// offer it to every family and leave it text whole at once, with no note, label or
    /// rescan charge. Read so here without opening the region (a flood of `{}` or of JSON
    /// Lines opened, decided and dropped a region and built a `Value` a copy: ~4,300
    /// instructions a `{}`, 555x prose). Then, while the bytes after it up to the next
    /// bracket are ones the scan reads as ordinary ([`Engine::unclaimed_gap`]) and that
    /// bracket starts another such value where the scan would open its region, that one
    /// is read here too (each value back through the scan cost ~280 instructions, 39x
    /// prose for `{}`).
    #[inline]
    fn pass_unclaimed_json(&mut self, pos: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if let Some(calls) = self.unclaimed_stop.take() {
            self.unclaimed_on = calls == self.next_index;
        }
        // No kept scan: none to ask at each value (none is kept while values pass).
        let kept = !self.failed_scan.is_empty();
        let first = if self.unclaimed_on {
            self.unclaimed_value(pos, None, kept)
        } else {
            None
        };
        let Some((mut len, _)) = first else {
            self.unclaimed_stop = Some(self.next_index);
            self.unclaimed_on = false;
            return false;
        };
        // Nothing charged, but the budget asked at the region's end (a charge before it
        // may have spent it); the values after it end later, under a larger budget, with
        // nothing charged between: asked once.
        self.charge_rescan(pos + len, pos + len, pos);
        let (mut last, mut period) = (pos, 0);
        self.pos = pos + len;
        while let Some(q) = self.unclaimed_gap(self.pos) {
            let Some((n, repeated)) = self.unclaimed_value(q, Some((last, len)), kept) else {
                break;
            };
            let same = repeated && q - last == period;
            (period, last, len) = (q - last, q, n);
            self.pos = q + n;
            if same && !kept {
                // A value that repeats the last one after a gap as long as the last gap:
                // the copies of its unit (the last gap and value) whose bytes, and the
                // lookahead after them, repeat it are decided as it was, by the same bytes.
                let lookahead = self.lookahead();
                let from = q - period;
                let span = periodic_len(self.buf.as_bytes().get(from..).unwrap_or(&[]), period);
                let copies = span.saturating_sub(period + n + lookahead) / period;
                if copies > 0 {
                    last = q + copies * period;
                    self.pos = last + n;
                }
            }
        }
        // What the regions' starts and texts leave (`start_region`, `plain_region`).
        self.announced.clear();
        self.ident_start = None;
        self.line_start = false;
        true
    }

    /// The length of the value at `pos` [`Engine::pass_unclaimed_json`] reads, if it reads
    /// it: one [`unclaimed_value_end`] passes that no kept failed scan (`kept`: there are
    /// some) would read otherwise. `same`: the last value read (its offset and length),
    /// whose bytes, when the value at `pos` repeats them, decide it without a new pass
    /// (then `true` beside the length).
    #[inline]
    fn unclaimed_value(
        &self,
        pos: usize,
        same: Option<(usize, usize)>,
        kept: bool,
    ) -> Option<(usize, bool)> {
        let max_depth = self.ctx.limits.max_depth;
        let all = self.buf.as_bytes();
        let bytes = all.get(pos..).unwrap_or(&[]);
        let repeated =
            same.and_then(|(at, n)| (all.get(at..at + n)? == bytes.get(..n)?).then_some(n));
        let end = match repeated {
            Some(n) => (n, true),
            None => (unclaimed_value_end(bytes, max_depth, true)?, false),
        };
        let open = bytes.first().copied().unwrap_or(b'{');
        (!kept
            || (self.failed_scan.repeats(max_depth, false, bytes).is_none()
                && !self
                    .failed_scan
                    .covers(self.abs(pos), open, max_depth, false)))
        .then_some(end)
    }

    /// After a value passed at `from` (not at a line start): the next bracket, when every
    /// byte before it is one the scan reads as ordinary changing only the line and
    /// identifier state (a byte no scan stops at; a newline or blank no opener starts at;
    /// at a line start, no line opener's first byte), and the scan would offer that
    /// bracket to [`Engine::open_plain_json`] as plausible: no opener at it, no run of
    /// brackets, its bare JSON on, no region declined. At most [`UNCLAIMED_GAP`] bytes.
    #[inline]
    fn unclaimed_gap(&self, from: usize) -> Option<usize> {
        if self.declined.is_some() {
            return None;
        }
        let bytes = self.buf.as_bytes();
        let openers = &self.ctx.openers;
        let mut line = false;
        let mut q = from;
        loop {
            let c = *bytes.get(q)?;
            match c {
                b'{' | b'[' => break,
                b'\n' | b' ' | b'\t' | b'\r' => {
                    if openers.stops.is_stop(c) && openers.none_at(bytes, q) != Ok(true) {
                        return None;
                    }
                    line |= c == b'\n';
                }
                b'`' | b'(' => return None,
                _ => {
                    if openers.stops.is_stop(c) || (line && openers.line_first(c)) {
                        return None;
                    }
                    line = false;
                }
            }
            q += 1;
            if q - from > UNCLAIMED_GAP {
                return None;
            }
        }
        let head = bytes.get(q..).unwrap_or(&[]);
        let plausible = match head {
            [b'[', ..] if self.array_formats() => array_start_plausible(head, false),
            // What `object_start_plausible` answers at once (`{"`, `{}`).
            [b'{', b'"' | b'}', ..] if self.object_formats() => Some(true),
            [b'{', ..] if self.object_formats() => object_start_plausible(head, false),
            _ => None,
        };
        (plausible == Some(true)
            && !is_bracket_run(bytes, q)
            && openers.none_at(bytes, q) == Ok(true))
        .then_some(q)
    }

    /// Starts a region at `start` read by `reader` (then the `rest`, in priority order);
    /// the scan goes on from `after` (the end of its opener).
    fn start_region(
        &mut self,
        start: usize,
        after: usize,
        reader: Box<dyn RegionReader>,
        rest: Rest,
    ) {
        self.emit_text(start);
        self.announced.clear();
        self.mode = Mode::Region {
            start,
            reader,
            rest,
        };
        self.pos = after;
        self.bare_region = false;
    }

    /// Opener `i` of the table starts at `pos`; `None` when it is a region opener every
    /// family declines at once (the byte is ordinary text).
    fn open(&mut self, pos: usize, i: usize, is_final: bool) -> Option<Step> {
        if self.failed_over() {
            return Some(Step::Continue);
        }
        if self.broken.as_ref().is_some_and(|m| m.opener == i)
            && self.broken_again(pos, i, is_final)
        {
            return Some(Step::Continue);
        }
        let Some(o) = self.ctx.openers.get(i) else {
            self.pos = pos + 1;
            return Some(Step::Continue);
        };
        self.last_opener = o.text;
        let after = pos + o.text.len();
        match o.action {
            Action::Reasoning(marker) => {
                self.open_think(pos, after, ThinkClose::Exact(Cow::Borrowed(marker.close)));
            }
            Action::Strip => {
                let first = o.text.as_bytes().first().copied();
                self.strip(pos, after);
                // A token stripped back to back (`<|eot|><|eot|>`): the scan's next stop,
                // right after it, takes it by one compare ([`Engine::expect_at`]) instead
                // of the walk under `<|` (~350 instructions a token).
                let next = self.buf.as_bytes().get(after).copied();
                if next == first {
                    self.expect_at(after, i);
                } else if self.abs(after) >= self.no_strip_units_before
                    && (next != self.strip_refused_byte
                        || self.abs(after) >= self.no_strip_byte_before)
                {
                    self.pass_after_strip(after);
                }
            }
            Action::SuffixedReasoning(_) | Action::SuffixedStrip => {
                let bytes = self.buf.as_bytes().get(after..).unwrap_or(&[]);
                match read_suffix(bytes, is_final) {
                    Suffix::Wait => return Some(Step::Wait),
                    Suffix::No => {
                        if !self.pass_declined_suffix(pos, i) {
                            self.decline_literal(pos, i);
                        }
                    }
                    Suffix::Len(n) => {
                        let end = after + n + 1;
                        match o.action {
                            Action::SuffixedReasoning(marker) => {
                                let suffix = self.buf.get(after..after + n).unwrap_or("");
                                let close = format!("{}{suffix}>", marker.close);
                                self.open_think(pos, end, ThinkClose::Exact(Cow::Owned(close)));
                            }
                            _ => self.strip(pos, end),
                        }
                    }
                }
            }
            Action::Region(ref families) => {
                // Families that decline the region at once are passed over here: a flood
                // of an opener every family declines costs no trip through `next_reader`.
                let region = self.buf.get(pos..).unwrap_or("");
                // The first family that does not decline reads first (its `declines` is not
                // asked again); the rest come in order after it.
                // A family whose reader would remove the region's first bytes at once (a
                // `<|message_sep|>` alone) removes them here, no reader made.
                // A family opening as an earlier one that declined declines too, unasked.
                let Some((next, opened)) = families.iter().enumerate().find_map(|(n, by)| {
                    if by.declined_as_before() {
                        return None;
                    }
                    match by.removes(region, is_final) {
                        Some(len) => Some((n, Err(len))),
                        None => by
                            .open_region(region, is_final, &self.ctx)
                            .map(|reader| (n, Ok(reader))),
                    }
                }) else {
                    return self.pass_declined(pos, i, is_final);
                };
                let reader = match opened {
                    Ok(reader) => reader,
                    Err(len) => {
                        self.remove_at_open(pos, len, i);
                        return Some(Step::Continue);
                    }
                };
                let mut rest = Rest::Literal {
                    opener: i,
                    next: next + 1,
                };
                let reader = match reader {
                    Some(reader) => reader,
                    None => self.next_reader(&mut rest, pos, is_final)?,
                };
                self.start_region(pos, after, reader, rest);
            }
        }
        Some(Step::Continue)
    }

    /// Opener `i`'s region at `start` is `len` bytes of markup removed with nothing in its
    /// place ([`crate::family::Family::removes`]): what [`Engine::step_region`] does when the
    /// region's reader answers so at its first step ([`Engine::apply_outcome`] of an empty
    /// outcome, then the next opener expected), without the reader. Out of line, through
    /// [`Engine::strip`]: a new caller of `emit_text` here cost prose ~0.7 % in `run`.
    #[inline(never)]
    fn remove_at_open(&mut self, start: usize, len: usize, i: usize) {
        self.announced.clear();
        self.wake = None;
        let end = (start + len).clamp(start + 1, self.buf.len());
        let end = floor_boundary(&self.buf, end);
        self.strip(start, end);
        self.expect_at(self.pos, i);
    }

    /// The text scan waits at `pos` on an opener's first bytes: when they begin the opener
    /// seen last (a reply's next call), the pushes that only continue it are appended
    /// without a scan ([`OPENER_HOLD`]); else no wait there asks again. Out of line: most
    /// waits are asked once.
    #[inline(never)]
    fn hold_opener(&mut self, pos: usize) {
        let held = self.buf.as_bytes().get(pos..).unwrap_or(&[]);
        if proper_prefix(held, self.last_opener) {
            self.wake = Some(&OPENER_HOLD);
            self.wake_held = pos;
            self.wake_until = usize::MAX;
        } else {
            self.no_hold_at = self.base + pos;
        }
    }

    /// A reasoning block opened by the marker at `pos`; its content starts at `content`.
    fn open_think(&mut self, pos: usize, content: usize, close: ThinkClose) {
        self.emit_text(pos);
        self.emit_from = content;
        self.markup_found = true;
        self.reasoning.push(String::new());
        self.mode = Mode::Think { content, close };
        self.pos = content;
    }

    /// A control token was just stripped, the scan going on at `after` in text (no line
    /// start, no name). When the byte there is one the scan reads as an ordinary byte (no
    /// stop, or a stop [`Engine::plain_stop`] says is ordinary: no opener, none of the bytes
    /// with an arm of their own, no blank) and the bytes from it repeat a unit (up to the
    /// next copy, at most [`MAX_UNIT`] bytes) whose other bytes the scan reads as text or
    /// as control tokens it strips ([`Engine::ordinary_strips_in`]), every unit whose
    /// window (the unit and the lookahead) lies inside the periodic run is read at once, its
    /// tokens stripped, and `true` comes back. A flood of a token and a few bytes
    /// (`<|eot|>]`, `<|end|>1,`) was read token by token through the scan's stops and the
    /// opener lookups (~690 instructions an 8-byte copy, 23.7x prose). Out of line: a
    /// reply seldom strips a token.
    #[inline(never)]
    fn pass_after_strip(&mut self, after: usize) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if self.abs(self.buf.len()) == self.no_pass_end {
            return false;
        }
        #[cfg(test)]
        {
            self.strip_asks += 1;
        }
        let bytes = self.buf.as_bytes();
        let Some(&c) = bytes.get(after) else {
            return false;
        };
        let mut strips = UnitStrips::default();
        let lookahead = self.lookahead();
        let first_refused = matches!(c, b' ' | b'\t' | b'\r')
            || (self.ctx.openers.stops.is_stop(c) && !self.plain_stop(after, &mut None));
        let unit = if first_refused {
            None
        } else {
            unit_period(self.buf.as_bytes(), after, lookahead)
                .filter(|&period| self.unit_repeats(after, period, lookahead))
        };
        let line = unit.and_then(|period| {
            let end = after + period + lookahead;
            Some((
                period,
                self.ordinary_strips_in(after, period, end, Some(&mut strips))?,
            ))
        });
        let Some((period, line)) = line else {
            // Each refusal in a row skips twice the bytes (up to 64 KB): a flood whose unit
            // is refused (`[/THINK]1,`: an opener after the token; `<|eom|>\n`: a line
            // start after it) asked at every copy cost ~700 instructions an ask, 7 % of
            // the flood.
            if self.abs(self.buf.len()) != self.no_pass_end {
                let skip_to = self.abs(after) + (NO_UNITS_SKIP << self.strip_refusals.min(8));
                self.strip_refusals = self.strip_refusals.saturating_add(1);
                if first_refused {
                    self.strip_refused_byte = Some(c);
                    self.no_strip_byte_before = skip_to;
                } else {
                    self.no_strip_units_before = skip_to;
                }
            }
            return false;
        };
        self.strip_refusals = 0;
        let passed = self.pass_periodic(after, period, period + lookahead, line, usize::MAX);
        if passed && strips.n > 0 {
            self.strip_units(after, self.pos, period, &strips);
        }
        #[cfg(test)]
        if passed {
            self.strip_passed += self.pos - after;
        }
        passed
    }

    /// A control token at `pos..end`, removed from the text.
    fn strip(&mut self, pos: usize, end: usize) {
        self.emit_text(pos);
        self.emit_from = end;
        self.markup_found = true;
        self.enter_text(end);
    }

    /// Offers the region to its readers in priority order (see [`crate::family`]).
    fn step_region(&mut self, is_final: bool) -> Step {
        // Set again only when the reader waits and says which bytes wake it.
        self.wake = None;
        let quiet = self.quiet;
        let at_start = !self.seen_visible;
        loop {
            // The reader is advanced where it lives (no move of the mode out and back: a
            // push inside a region that decides nothing costs only the reader's own step).
            let Mode::Region { start, reader, .. } = &mut self.mode else {
                return Step::Continue;
            };
            let start = *start;
            let region = self.buf.get(start..).unwrap_or("");
            let mut cx = ReadCx {
                ctx: &self.ctx,
                base: self.base + start,
                live: &mut self.live,
                // Reasoning only: no call is announced (a region with calls stays text).
                streaming: !quiet && !self.ctx.reasoning_only,
                at_start,
                end: self.reply_end,
                failed_scan: &mut self.failed_scan,
                failed_call_scan: &mut self.failed_call_scan,
                names: &mut self.names,
                kept: &mut self.kept,
                wake: None,
                broken_by: None,
            };
            let advance = reader.advance(region, is_final, &mut cx);
            let (wake, broken_by) = (cx.wake, cx.broken_by);
            if let Advance::NotMine = advance {
                self.live.clear();
                let mut rest = match &self.mode {
                    Mode::Region { rest, .. } => *rest,
                    _ => Rest::None,
                };
                match self.next_reader(&mut rest, start, is_final) {
                    Some(next) => {
                        if let Mode::Region {
                            reader, rest: r, ..
                        } = &mut self.mode
                        {
                            *reader = next;
                            *r = rest;
                        }
                        continue;
                    }
                    None => {
                        // Nobody's markup: the opener's first byte is text.
                        match rest {
                            Rest::Literal { opener, .. } => self.decline_literal(start, opener),
                            _ => self.decline(start),
                        }
                        return Step::Continue;
                    }
                }
            }
            self.live_events();
            if let (Advance::NeedMore, false) = (&advance, is_final) {
                self.wake = wake;
                if let Some(wake) = wake {
                    self.wake_until = start.saturating_add(wake.max_region());
                    if wake.holds() {
                        self.wake_held = wake.held_from(self.buf.as_bytes());
                    }
                }
                return Step::Wait;
            }
            // The region is decided: its reader goes.
            let (opener, next) = match &self.mode {
                Mode::Region {
                    rest: Rest::Literal { opener, next },
                    ..
                } => (Some(*opener), *next),
                _ => (None, 0),
            };
            let header = matches!(
                &self.mode,
                Mode::Region {
                    rest: Rest::Line { .. },
                    ..
                }
            );
            self.mode = Mode::Text;
            // Markup removed, no call: a call's region is not looked after (what a reply's
            // calls would pay for nothing).
            let removed =
                matches!(&advance, Advance::Done { outcome, .. } if outcome.drafts.is_empty());
            match advance {
                Advance::NotMine => {}
                Advance::NeedMore => {
                    // A reader must decide at the end; one that does not is broken.
                    let end = self.buf.len();
                    self.keep_broken(start, end, "markup not closed at the end of output".into());
                }
                Advance::Done { end, outcome } => {
                    let end = (start + end).clamp(start + 1, self.buf.len());
                    let end = floor_boundary(&self.buf, end);
                    if self.ctx.reasoning_only && !outcome.drafts.is_empty() {
                        self.keep_as_text(start, end);
                    } else {
                        self.apply_outcome(start, end, outcome);
                    }
                }
                Advance::Broken { end, why } => {
                    let end = (start + end).clamp(start + 1, self.buf.len());
                    let end = floor_boundary(&self.buf, end);
                    // A broken region its reader promises to read so again, read by the first
                    // family of a literal opener: kept so by `keep_broken_memo`.
                    match (broken_by, opener) {
                        (Some(n), Some(opener)) if next == 1 => {
                            self.keep_broken_memo(start, end, opener, n, why)
                        }
                        _ => self.keep_broken(start, end, why),
                    }
                }
                Advance::Malformed { end, failure } => {
                    let end = (start + end).clamp(start + 1, self.buf.len());
                    self.keep_malformed(start, floor_boundary(&self.buf, end), &failure);
                }
                Advance::Dropped { end, why } => {
                    let end = (start + end).clamp(start + 1, self.buf.len());
                    let end = floor_boundary(&self.buf, end);
                    if self.ctx.reasoning_only {
                        self.keep_as_text(start, end);
                    } else {
                        self.drop_markup(start, end, why);
                    }
                }
                Advance::Text(plain) if header => self.header_text(start, plain),
                Advance::Text(plain) => self.plain_region(start, plain, self.bare_region),
            }
            if let (Some(i), true) = (opener, removed) {
                // Markup that repeats (a flood of `<|message_model|>` headers, each removed):
                // the next opener found by one compare, not the scan's walk of the trie.
                self.expect_at(self.pos, i);
            }
            return Step::Continue;
        }
    }

    /// Every reader declined the region at `start`: its first byte is read as ordinary
    /// text, with the line and identifier state it had when the region opened.
    fn decline(&mut self, start: usize) {
        self.announced.clear();
        self.mode = Mode::Text;
        self.pos = start;
        self.declined = Some(start);
    }

    /// A call header line (a line opener's region) decided as text
    /// ([`Engine::plain_region`]): one with a note (`TOOL_CALL: x` naming no registered
    /// tool, an info note) is a failed call attempt, counted toward
    /// [`crate::Limits::max_failed_calls`] as an error note is ([`Engine::header_failed`]).
    /// A declined line (no note) is text up to the bytes the scan reads as ordinary ones
    /// ([`crate::family::Family::line_text`]): the scan would have read them, so the
    /// name it tracks is the one they end with, not none.
    fn header_text(&mut self, start: usize, plain: Plain) {
        let failed = match &plain.diagnostic {
            Some(note) if note.level != Level::Error => Some(note.span.end),
            Some(_) => None,
            None => {
                let end = start + plain.end;
                self.plain_region(start, plain, false);
                if self.pos == end && end > start && self.buf.as_bytes().get(end) != Some(&b'\n') {
                    let bytes = self.buf.as_bytes().get(start..end).unwrap_or(&[]);
                    self.ident_start = self.ident_after(bytes, start);
                }
                return;
            }
        };
        self.plain_region(start, plain, false);
        if let Some(end) = failed {
            self.header_failed(end);
        }
    }

    /// A call header line left as text with a note below error level (the note counted
    /// already), ending at `end` (in the whole input): counted as a failed call attempt. A header naming no registered tool calls nothing and is left as text,
    /// but it is the model asking for a call the caller cannot run, as a broken call is;
    /// a few are worth their notes, and a reply of thousands of them (a model looping on a
    /// tool it made up) is a flood whose rest is passed as text past the bound, as for
    /// broken calls. Not counted, such a flood read a header a line to its end (~1,500
    /// instructions a 17-byte `TOOL_CALL: x\nx{"\n`, 24x prose).
    fn header_failed(&mut self, end: usize) {
        self.diag_cap.errors += 1;
        self.failed_at(Level::Error, end);
    }

    /// A region decided to be text ([`Advance::Text`]); `bare`: a bare JSON region's.
    fn plain_region(&mut self, start: usize, plain: Plain, bare: bool) {
        self.announced.clear();
        let end = floor_boundary(&self.buf, (start + plain.end).min(self.buf.len()));
        let quiet = plain.diagnostic.is_none();
        match plain.diagnostic {
            Some(note) => self.note(start, note),
            None => self.failed_text_end = self.abs(start + plain.scanned),
        }
        if let Some(label) = plain.label
            && self.fallbacks_on()
        {
            let span = self.span(start, end);
            self.labels.push((label.into(), span));
        }
        let scanned = (start + plain.scanned).min(self.buf.len());
        self.charge_rescan(end.max(start + 1), scanned, start);
        if bare && end == start + 1 && quiet {
            self.count_failed_bare(start, scanned);
        }
        if end == start {
            self.decline(start);
        } else {
            self.enter_text(end);
        }
    }

    /// Bytes `from..to` will be scanned again: within the budget (a multiple of the input
    /// through `to`), else bare brackets are no longer opened, so no input costs more than
    /// linear time.
    fn charge_rescan(&mut self, from: usize, to: usize, region: usize) {
        self.rescanned = self.rescanned.saturating_add(to.saturating_sub(from));
        if !self.bare_off && self.rescanned > self.rescan_budget(to) {
            self.bare_json_off(
                region,
                to,
                "too many unbalanced brackets: the rest of the reply is not searched for bare JSON calls",
            );
        }
    }

    /// The bare JSON region at `region` (scanned through `to`) was abandoned as text with
    /// no note: counted, and at the [`MAX_FAILED_BARE`]th bare JSON is off. Every pass
    /// that reads such regions without opening them stops before that one, so it is read
    /// by the scan whatever the pushes, and so is the warning's span.
    fn count_failed_bare(&mut self, region: usize, to: usize) {
        self.failed_bare.set(self.failed_bare.get() + 1);
        if !self.bare_off && self.failed_bare.get() >= max_failed_bare() {
            self.bare_json_off(
                region,
                to,
                "too many broken bare JSON values: the rest of the reply is not searched for bare JSON calls",
            );
        }
    }

    /// How many more bare JSON regions a pass may read as abandoned without opening them:
    /// the one that reaches [`MAX_FAILED_BARE`] is left to the scan.
    fn failed_bare_left(&self) -> usize {
        max_failed_bare()
            .saturating_sub(1)
            .saturating_sub(self.failed_bare.get())
    }

    /// Bare brackets are no longer opened, with a warning spanning `region..to`.
    fn bare_json_off(&mut self, region: usize, to: usize, why: &str) {
        self.bare_gone();
        // The text before the region first (a `name(` decided at once left it).
        self.emit_text(region);
        let span = self.span(region, to);
        self.diag(Diagnostic::warning(why, span));
    }

    /// Bare brackets are no longer opened (the warning given).
    fn bare_gone(&mut self) {
        self.bare_off = true;
        // A unit found not to be read as text may be now (a bracket in it opened bare
        // JSON): asked again (`<tool_call>x{"` was read unit by unit, 32x prose).
        self.no_units = [Vec::new(), Vec::new()];
        self.no_pass_end = usize::MAX;
    }

    /// The rescan budget of a charge whose rescanned bytes end at buffer offset `to`:
    /// [`RESCAN_FACTOR`] bytes for each byte of the input through `to`, and
    /// [`RESCAN_BASE`]. Counted from the input's start to the bytes the region read, never
    /// from the bytes received (a stream's count when it decides depends on its pushes, so
    /// the budget ran out at another region, one-shot or pushed, and so did its warning's
    /// span): every region is charged the same budget whatever the chunking.
    fn rescan_budget(&self, to: usize) -> usize {
        self.abs(to)
            .saturating_mul(RESCAN_FACTOR)
            .saturating_add(RESCAN_BASE)
    }

    fn step_inline(&mut self) -> Step {
        let bytes = self.buf.as_bytes();
        match memchr::memchr2(b'`', b'\n', &bytes[self.pos..]) {
            Some(i) => {
                let at = self.pos + i;
                if bytes[at] == b'`' {
                    self.pos = at + 1;
                } else {
                    self.pos = at;
                }
                self.mode = Mode::Text;
            }
            None => self.pos = self.buf.len(),
        }
        Step::Continue
    }

    fn step_think(&mut self, is_final: bool) -> Step {
        let Mode::Think {
            content,
            close: marker,
        } = std::mem::replace(&mut self.mode, Mode::Text)
        else {
            return Step::Continue;
        };
        let bytes = self.buf.as_bytes();
        let hay = bytes.get(content..).unwrap_or(&[]);
        let start = self.base + content;
        let mut found = find_think_close(&mut self.markers, start, hay, &marker);
        // A family's call opener that ends a block left open: the block ends before it
        // (a close of no length), and the opener is read as markup.
        for end in &self.ctx.openers.ends_reasoning {
            match self.markers.find(start, hay, end.as_bytes()) {
                Some(i) if found.is_err() || found.is_ok_and(|(f, _)| i < f) => found = Ok((i, 0)),
                _ => {}
            }
        }
        // None of them found (else `found` is Ok): only bytes that may start one are held
        // back. Asked after the loop, not at each opener missing (a block of a flood ended
        // by a later one compared the reply's end with every prefix of an earlier one,
        // ~27 `memcmp` a block: 15 % of `<think>{#}<|tool_call_begin|>`).
        if let Err(hold) = &mut found {
            for e in self.ctx.openers.ends_reasoning.iter().map(|e| e.as_bytes()) {
                let partial = (1..e.len().min(hay.len() + 1))
                    .rev()
                    .find(|&k| hay.ends_with(e.get(..k).unwrap_or(&[])))
                    .unwrap_or(0);
                *hold = (*hold).min(hay.len() - partial);
            }
        }
        let (upto, close) = match found {
            Ok((i, len)) => (content + i, Some(content + i + len)),
            Err(_) if is_final => (self.buf.len(), None),
            Err(hold) => (floor_boundary(&self.buf, content + hold).max(content), None),
        };
        if upto > content && self.buf.get(content..upto).is_some() {
            // A one-shot parse reads reasoning from `self.reasoning` only.
            if self.direct.is_none() {
                self.flush_text_event();
            }
            let piece = self.buf.get(content..upto).unwrap_or("");
            if let Some(block) = self.reasoning.last_mut() {
                // A block's first piece (a one-shot block's only one) is its string
                // allocated to size: `push_str` on the empty string went through the
                // vector's growth path (~110 instructions a block more, a flood of
                // `<think>{#}<|tool_call_begin|>` closing one a copy).
                if block.is_empty() {
                    *block = piece.to_owned();
                } else {
                    block.push_str(piece);
                }
            }
            if self.direct.is_none() {
                if let Some(r) = self.records.as_deref_mut() {
                    let text = r.keep(piece);
                    r.list.push(Record::Reasoning(text));
                } else {
                    let text = piece.to_owned();
                    self.events.push(StreamEvent::Reasoning { text });
                }
            }
        }
        match close {
            Some(end) => {
                self.emit_from = end;
                self.enter_text(end);
                Step::Continue
            }
            None if is_final => {
                let span = self.span(content, upto);
                self.diag(Diagnostic::info(
                    "reasoning block not closed before the end of output",
                    span,
                ));
                self.emit_from = upto;
                self.enter_text(upto);
                Step::Continue
            }
            None => {
                self.mode = Mode::Think {
                    content: upto,
                    close: marker,
                };
                self.emit_from = upto;
                self.pos = upto;
                Step::Wait
            }
        }
    }

    fn step_fence(&mut self, is_final: bool) -> Step {
        let Mode::Fence {
            start,
            content,
            search,
            callable,
            markup,
        } = self.mode
        else {
            return Step::Continue;
        };
        let (content_end, end) = match fence_close(self.buf.as_bytes(), search, content) {
            Some(c) => c,
            None if is_final => (self.buf.len(), self.buf.len()),
            None => {
                let search = self.buf.len().saturating_sub(3).max(content);
                if callable {
                    // The text before it goes out as the text scan's would (once: each
                    // push of a streamed fence waits here).
                    if self.emit_from < start {
                        self.emit_text(start);
                    }
                } else {
                    // A code sample whatever it holds: its text goes out as it arrives.
                    self.emit_text(floor_boundary(&self.buf, search));
                }
                self.set_plain_mode(Mode::Fence {
                    start,
                    content,
                    search,
                    callable,
                    markup,
                });
                return Step::Wait;
            }
        };
        if self.fence_is_text(content, content_end, callable, markup) {
            self.leave_fence(end);
            return Step::Continue;
        }
        self.read_fence(start, content, content_end, end, markup)
    }

    /// Whether a closed fence's content (`content..content_end`) goes out as this engine's
    /// text, no sub-engine made: a code sample (not `callable`), blanks, a markup fence
    /// whose content starts with no region opener, content [`holds_no_nested_region`]
    /// passes, or, bare JSON off for the reply's failed regions (its sub-engine's too, see
    /// [`Engine::read_fence`]), content that holds no `(` and no line opener (no bracket
    /// opens there).
    fn fence_is_text(
        &self,
        content: usize,
        content_end: usize,
        callable: bool,
        markup: bool,
    ) -> bool {
        if !callable {
            return true;
        }
        let inner = self.buf.get(content..content_end).unwrap_or("");
        if inner.bytes().all(|b| b.is_ascii_whitespace()) {
            // Nothing a sub-engine could read (it would send only this text, which is this
            // engine's): a flood of empty fences makes none.
            return true;
        }
        if markup {
            // A markup fence holds calls only when its content starts with a region opener.
            return !self.markup_inside(inner);
        }
        // A code fence's sub-engine reads only bare JSON, `name(` and line-start openers
        // (its `nested` scan skips every other opener): content holding none of their
        // starts is sent as text by it, nothing else, and its text is this engine's. A
        // flood of one-byte fences (```` ```\nx\n```\n ````) made a sub-engine each.
        if self.failed_bare.get() >= max_failed_bare() {
            return self.fence_is_text_bare_off(inner);
        }
        if self.fence_failed {
            return self.fence_value_is_text(content, inner);
        }
        holds_no_nested_region(
            inner.as_bytes(),
            &self.ctx.openers,
            self.ctx.limits.max_depth,
        )
    }

    /// [`Engine::fence_is_text`] once bare JSON is off for the reply's failed regions:
    /// content holding no `(` and no line opener.
    #[inline(never)]
    fn fence_is_text_bare_off(&self, inner: &str) -> bool {
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        nested_read::<false>(inner.as_bytes(), &self.ctx.openers, 0, false) == Ok(true)
    }

    /// [`holds_no_nested_region`] of a fence's content (`inner`, at `content`) after a
    /// decode that failed, and also `true` where it holds one closed value and nothing else
    /// a sub-engine reads ([`nested_read`]'s `Err`), whose region is abandoned as text with
    /// no note, decided without decoding it (`closed_fails_without_note`, as the walk of
    /// failed regions decides one), where no value is at the reply's start (the
    /// sub-engine's `at_start`) and within the sub-engine's rescan budget. A flood of
    /// fences around a broken value (```` ```json\n{"a": 1 {w}}\n``` ````) made a
    /// sub-engine each (~6,500 instructions a 27-byte fence, 66x prose). Not asked before
    /// a fence's decode failed (`fence_failed`: a valid call's fence is read by its
    /// sub-engine, unwalked); out of
    /// line, its own walk: the value's offsets out of [`holds_no_nested_region`]'s loop
    /// cost fences of a word (```` ```\nx\n```\n{w} ````) 3-4 % more (session 51).
    /// A value passed so is a failed bare JSON region the sub-engine would have counted,
    /// counted here (the reply's count, which the sub-engine shares); not the one that
    /// reaches [`MAX_FAILED_BARE`], which the sub-engine reads, warning there.
    #[inline(never)]
    fn fence_value_is_text(&self, content: usize, inner: &str) -> bool {
        let region = match nested_read::<true>(
            inner.as_bytes(),
            &self.ctx.openers,
            self.ctx.limits.max_depth,
            true,
        ) {
            Ok(text) => return text,
            Err(region) => region,
        };
        // Past the count (the value that reaches it is the sub-engine's; after it, bare JSON
        // is off): not scanned (scanned, a fence around a broken value cost 18x prose, not
        // 11x, past the cut).
        if self.failed_bare_left() == 0 {
            return false;
        }
        // The region's scan, by a scanner kept for the next fence (a new one's stack was
        // allocated and freed a fence: ~190 instructions of a flood's 27-byte fence). A
        // thread's, not this engine's: kept here, `fence_is_text` took `&mut self`, and
        // the text scan that asks it cost fences of a word (```` ```\nx\n```\n ````) 4 %.
        let max_depth = self.ctx.limits.max_depth;
        let mut sc = match FENCE_SCANNER.take() {
            Some((depth, sc)) if depth == max_depth => sc,
            _ => Scanner::new(max_depth, false),
        };
        sc.restart();
        let scan = sc.advance(inner.as_bytes().get(region.clone()).unwrap_or(&[]));
        FENCE_SCANNER.set(Some((max_depth, sc)));
        let Scan::Done(n) = scan else {
            return true;
        };
        let value = region.start..region.start + n;
        #[cfg(test)]
        if self.no_walk {
            return false;
        }
        if !self.seen_visible {
            return false;
        }
        let (from, to) = (content + value.start, content + value.end);
        let text = value.len() <= RESCAN_BASE
            && self.buf.get(from..to).is_some_and(|v| {
                crate::families::bare_json::closed_fails_without_note(
                    v,
                    self.span(from, to),
                    &self.ctx,
                )
            });
        #[cfg(test)]
        if text {
            FENCES_PASSED.set(FENCES_PASSED.get() + 1);
        }
        if text {
            self.failed_bare.set(self.failed_bare.get() + 1);
        }
        text
    }

    /// Whether a markup fence's content starts with a region opener.
    fn markup_inside(&self, inner: &str) -> bool {
        self.ctx
            .openers
            .starts_with_region(inner.trim_start_matches(|c: char| c.is_ascii_whitespace()))
    }

    /// Reads a closed fence that [`Engine::fence_is_text`] did not pass (`start` its
    /// opener, `content..content_end` its content, `end` after its close) with a
    /// sub-engine, and reads on after it.
    fn read_fence(
        &mut self,
        start: usize,
        content: usize,
        content_end: usize,
        end: usize,
        markup: bool,
    ) -> Step {
        let markup_inside =
            markup && self.markup_inside(self.buf.get(content..content_end).unwrap_or(""));
        // The sub-engine reads the content where it lies (borrowed from this buffer), so
        // it is dropped before this engine changes. It counts its diagnostics in this
        // engine's cap (one cap per reply): what it reports is reported here as it is, and
        // what it leaves out is in the reply's count of diagnostics not reported.
        // The text before the fence goes out before what its sub-engine reports.
        self.emit_text(start);
        let inner = self.buf.get(content..content_end).unwrap_or("");
        #[cfg(test)]
        FENCE_ENGINES.set(FENCE_ENGINES.get() + 1);
        let mut diag_cap = std::mem::take(&mut self.diag_cap);
        let (events, labels, markup_found) = {
            let mut sub = Engine::new_inner(self.ctx.clone());
            std::mem::swap(&mut sub.diag_cap, &mut diag_cap);
            sub.nested = !markup_inside;
            sub.quiet = true;
            sub.base = self.abs(content);
            sub.seen_visible = self.seen_visible;
            sub.reply_end = self.reply_end;
            // The reply's failed bare JSON regions, counted on in the fence (each fence's
            // sub-engine counted afresh: a flood of fences around broken values, ```` ```json\n{"a": 1 {w}}\n```\n ````,
            // read every fence's regions, ~2,000 instructions a 27-byte fence, 20.7x
            // prose), and bare JSON off where the reply's is for them (not where its rescan
            // budget ran out: a fence's sub-engine has a budget of its own).
            sub.failed_bare.set(self.failed_bare.get());
            sub.bare_off = self.failed_bare.get() >= max_failed_bare();
            sub.feed_whole(inner);
            sub.run(true);
            sub.finished = true;
            sub.flush_text_event();
            std::mem::swap(&mut sub.diag_cap, &mut diag_cap);
            self.fence_failed = crate::repair::last_decode_failed();
            self.failed_bare.set(sub.failed_bare.get());
            (
                std::mem::take(&mut sub.events),
                std::mem::take(&mut sub.labels),
                sub.markup_found,
            )
        };
        self.diag_cap = diag_cap;
        if !self.bare_off && self.failed_bare.get() >= max_failed_bare() {
            // Turned off in the fence (its warning there): off for the rest of the reply.
            self.bare_gone();
        }
        if markup_found {
            self.emit_text(start);
            self.emit_from = end;
            self.enter_text(end);
            self.markup_found = true;
            let mut text = String::new();
            match &mut self.direct {
                // The calls and notes land in the caller's `Parsed`: room for them at once
                // (one allocation each, not one per doubling).
                Some(p) => {
                    let calls = events
                        .iter()
                        .filter(|e| matches!(e, StreamEvent::CallFinished { .. }))
                        .count();
                    let diagnostics = events
                        .iter()
                        .filter(|e| matches!(e, StreamEvent::Diagnostic { .. }))
                        .count();
                    p.calls.reserve(calls);
                    p.diagnostics.reserve(diagnostics);
                }
                None => match self.records.as_deref_mut() {
                    Some(r) => r.list.reserve(events.len()),
                    None => self.events.reserve(events.len()),
                },
            }
            for e in events {
                match e {
                    StreamEvent::Text { text: t } => text.push_str(&t),
                    StreamEvent::Reasoning { text: t } => {
                        self.reasoning.push(t.clone());
                        if self.direct.is_none() {
                            if let Some(r) = self.records.as_deref_mut() {
                                r.push_owned(StreamEvent::Reasoning { text: t });
                            } else {
                                self.events.push(StreamEvent::Reasoning { text: t });
                            }
                        }
                    }
                    StreamEvent::CallFinished { call, .. } => self.emit_call(call, None),
                    StreamEvent::Diagnostic { diagnostic } => self.push_diag(diagnostic),
                    StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
                }
            }
            if !text.trim().is_empty() {
                self.emit_raw_text(&text);
            }
        } else {
            for e in events {
                if let StreamEvent::Diagnostic { diagnostic } = e {
                    self.push_diag(diagnostic);
                }
            }
            self.enter_text(end);
        }
        self.labels.extend(labels);
        Step::Continue
    }
}

/// The close of a fence whose content starts at `content`, searched from `from`: the
/// first "```" with only blanks before it on its line, that line at or after `content`;
/// `(content end, fence end)`. A "```" after any other byte is passed without looking
/// for its line's start (a fence around a flood of `{"```json\n`, where every "```" is
/// inside a line, looked back to each line's start: ~110 instructions a unit).
fn fence_close(bytes: &[u8], mut from: usize, content: usize) -> Option<(usize, usize)> {
    let mut near = true;
    while let Some(i) = find_triple_backtick(bytes.get(from..)?, near) {
        near = false;
        let at = from + i;
        from = at + 3;
        if at > 0 && !matches!(bytes[at - 1], b'\n' | b' ' | b'\t') {
            continue;
        }
        let line_begin = bytes[..at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1);
        let only_spaces = bytes[line_begin..at]
            .iter()
            .all(|b| *b == b' ' || *b == b'\t');
        if only_spaces && line_begin >= content {
            let content_end = if line_begin > content {
                line_begin - 1
            } else {
                content
            };
            return Some((content_end.max(content), at + 3));
        }
    }
    None
}

/// Whether a fence's `content`, read by a `nested` sub-engine (which starts no opener),
/// provably gives nothing but its text: no `(` (`name(`), no line whose first byte after
/// its blanks can start a line-start opener (the blanks keep the scan's line start, as
/// `step_text` reads them), and at most one bracket (`[`, `{`: bare JSON), whose region,
/// when it opens, is abandoned as text without a note: its scan (`max_depth`, as the
/// reader's) does not close it (so no decode can: a value serde reads is one the scan
/// closes, `decode_prefix_agrees_with_scan_then_decode`), a cut list needs a second
/// bracket (an entry or the envelope's list), and it holds no call's keys
/// (`looks_like_call`, the note's only source there: `[name(` needs a `(`); the scan
/// then reads on from its second byte, where no bracket is left. Inline code only hides
/// bytes from that scan, so counting every byte is on the safe side. A flood of fences
/// around a broken object (```` ```\n{"x\n``` ````) made a sub-engine each (~5 k
/// instructions a fence).
///
/// More brackets are passed too when no closer (`]`, `}`) follows the first: no scan from
/// any of them closes (a scan closes only at a closer), so no decode, repair or cut list
/// reads a value there (a cut list needs a closed entry), and none holds a call's keys
/// when the bytes from the first do not (`looks_like_call` finds keys, so what a part
/// holds the whole holds); each region is abandoned as text without a note. Their
/// rescans (each under the content's length) stay within the sub-engine's rescan budget
/// ([`RESCAN_BASE`] at least) when brackets times length does, so its warning never
/// comes. A flood of fences around an unclosed `{"{"` (```` ```\n{"{"```\nx\n``` ````)
/// made a sub-engine each, two serde decodes and a cut list among them (~10 k
/// instructions a fence); a line starting with a word that only begins like a line opener
/// (`the`, `arguments`) made one too (worded, 25-30x prose).
fn holds_no_nested_region(
    content: &[u8],
    openers: &crate::openers::Openers,
    max_depth: usize,
) -> bool {
    nested_read::<false>(content, openers, max_depth, true) == Ok(true)
}

thread_local! {
    /// The scanner [`Engine::fence_value_is_text`] scans a fence's value with (and its
    /// depth bound), kept for the next one.
    static FENCE_SCANNER: std::cell::Cell<Option<(usize, Scanner)>> =
        const { std::cell::Cell::new(None) };
}

#[cfg(test)]
thread_local! {
    /// Tests: the fences [`Engine::fence_value_is_text`] passed as text.
    static FENCES_PASSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Tests: the fences read by a sub-engine ([`Engine::read_fence`]).
    static FENCE_ENGINES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`holds_no_nested_region`]'s walk (`Ok`), and with `VALUE`, `Err` with the offsets of
/// the content from its one bracket where that is all that is left to decide: the scan of
/// that region (its scan closes it: `Ok(false)` without `VALUE`; else `Ok(true)`).
/// `bare` false: bare JSON is off, and brackets are bytes like any other.
#[inline(always)]
fn nested_read<const VALUE: bool>(
    content: &[u8],
    openers: &crate::openers::Openers,
    max_depth: usize,
    bare: bool,
) -> Result<bool, Range<usize>> {
    let mut line_start = true;
    let mut bracket = None;
    let mut brackets = 0usize;
    // A closer after the first bracket: with a second bracket, the content is not passed.
    let mut closed = false;
    // The call keys at the quotes after the first bracket: `looks_like_call` of the bytes
    // from it, noted in this walk (a second walk over them cost a fence of
    // ```` ```\n{"x```\n1 ```` ~210 instructions, 9 % of `` ```\n{#}\n```\n{"x ``).
    let mut keys = crate::families::bare_json::CallKeys::default();
    for (i, &b) in content.iter().enumerate() {
        match b {
            b'(' => return Ok(false),
            b'[' | b'{' if bare => {
                if line_start && openers.line_first(b) {
                    return Ok(false);
                }
                let first = *bracket.get_or_insert(i);
                brackets += 1;
                // Decided as soon as it cannot be passed (a second bracket after a closer,
                // or rescans over the budget, which more brackets only raise): a fence
                // around a flood of `{"` lines (```` ```json\n{"```json\n{"… ````) was read
                // to its end here, ~20 instructions a byte, before the sub-engine read it.
                if brackets > 1
                    && (closed || brackets.saturating_mul(content.len() - first) > RESCAN_BASE)
                {
                    return Ok(false);
                }
                line_start = false;
            }
            b'\n' => line_start = true,
            b' ' | b'\t' | b'\r' => {}
            _ => {
                if matches!(b, b']' | b'}') && bracket.is_some() {
                    if brackets > 1 {
                        return Ok(false);
                    }
                    closed = true;
                } else if matches!(b, b'"' | b'\'') && bracket.is_some() {
                    keys.at_quote(b, content.get(i + 1..).unwrap_or(&[]));
                }
                // A line opener's first byte opens nothing unless the whole opener is
                // there (`open_at_line_start` then takes the byte as ordinary; the content
                // is all a sub-engine gets, so a part of one at its end opens nothing).
                if line_start
                    && openers.line_first(b)
                    && openers
                        .line
                        .iter()
                        .any(|o| matches!(match_at(content, i, o.text, true), Marker::Full))
                {
                    return Ok(false);
                }
                line_start = false;
            }
        }
    }
    let Some(region) = bracket.and_then(|k| content.get(k..)) else {
        return Ok(true);
    };
    if keys.looks_like_call() {
        return Ok(false);
    }
    if brackets > 1 {
        // No closer and within the budget, or the loop said no.
        return Ok(true);
    }
    // No closer of its kind at all: no scan closes it (asked first, as it costs less).
    let closer = if region.first() == Some(&b'[') {
        b']'
    } else {
        b'}'
    };
    if memchr::memchr(closer, region).is_none() {
        return Ok(true);
    }
    if VALUE {
        let from = content.len() - region.len();
        return Err(from..content.len());
    }
    Ok(!matches!(
        crate::scanner::Scanner::new(max_depth, false).advance(region),
        crate::scanner::Scan::Done(_)
    ))
}

/// The period of a unit that starts with the bracket `bytes[pos]` and runs to a later copy
/// of it (at most [`MAX_UNIT`] bytes): the first of the bracket's next offsets whose bytes
/// repeat for a unit and `lookahead` more, else the first one (its next copy may still
/// repeat); `None` when the bracket does not occur again in reach. A unit holding the
/// bracket more than once (`[[x\n`, `{{x\n`): with the first offset only, the pass found
/// the run of `[[` too short and left the flood to the walk (~160 instructions a 4-byte
/// unit, 12x prose).
fn unit_period(bytes: &[u8], pos: usize, lookahead: usize) -> Option<usize> {
    let b = *bytes.get(pos)?;
    let after = bytes.get(pos + 1..)?;
    let after = after.get(..MAX_UNIT).unwrap_or(after);
    let first = memchr::memchr(b, after)? + 1;
    let repeats_over = |p: usize| {
        let n = p + lookahead;
        match (bytes.get(pos..pos + n), bytes.get(pos + p..pos + p + n)) {
            (Some(a), Some(c)) => a == c,
            _ => false,
        }
    };
    let mut period = first;
    while !repeats_over(period) {
        match after.get(period..).and_then(|r| memchr::memchr(b, r)) {
            Some(k) => period += k + 1,
            None => return Some(first),
        }
    }
    Some(period)
}

/// The length of the longest prefix of `bytes` with period `period` (each byte equal to the
/// one `period` before it), compared a block at a time.
fn periodic_len(bytes: &[u8], period: usize) -> usize {
    let (Some(a), Some(b)) = (
        bytes.get(..bytes.len().saturating_sub(period)),
        bytes.get(period..),
    ) else {
        return bytes.len();
    };
    const BLOCK: usize = 64;
    let mut i = 0;
    while let (Some(x), Some(y)) = (a.get(i..i + BLOCK), b.get(i..i + BLOCK))
        && x == y
    {
        i += BLOCK;
    }
    i += a
        .iter()
        .skip(i)
        .zip(b.iter().skip(i))
        .take_while(|(x, y)| x == y)
        .count();
    i + period.min(bytes.len())
}

/// How far [`Engine::pass_filler_run`] looks for the next `(` (farther, the text scan's
/// block skip reads the bytes for less).
const FILLER_RUN: usize = 48;

/// The bytes of a word [`Engine::pass_worded_calls`] reads any of as any other: letters,
/// digits and `_` (not `.`, `-`, `:`, name bytes a bracket scan may read otherwise).
static WORD_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric() || b == b'_';
        i += 1;
    }
    t
};
/// A word among [`Engine::pass_worded_calls`]'s tokens (any other token is its byte).
const WORD: u16 = 256;
/// How many tokens of its first copies [`Engine::pass_worded_calls`] reads for the unit,
/// within how many bytes, and the most tokens a unit has.
const WORDED_TOKENS: usize = 64;
const WORDED_FIRST: usize = 16;
const WORDED_LOOK: usize = 1024;
const MAX_WORDED_PERIOD: usize = 24;
/// The most names [`Engine::pass_worded_calls`] reads at its copies' first `(` (each one's
/// note among those [`DiagCap`] remembers).
const MAX_WORDED_NAMES: usize = RECENT + 1;
/// How many names no family reads [`Engine::pass_worded_calls`] keeps for its walk.
const SEEN_WORDS: usize = 16;
/// [`Engine::pass_worded_calls`] looks no further on than twice as far again for each miss
/// in a row, up to this many (a flood of closed calls, `get_weather(get_weather(x){#}`,
/// whose inner calls end every look, was looked at ~36 times at 128 KB, 1.6 % more).
const WORDED_MISSES: usize = 10;

/// How many bytes of `ident` (an identifier the text scan tracked) come before its first
/// letter or `_`, where the name [`Engine::open_call`] reads starts.
#[inline]
fn name_skip(ident: &[u8]) -> usize {
    ident
        .iter()
        .take_while(|b| !(b.is_ascii_alphabetic() || **b == b'_'))
        .count()
}

/// Whether two names (the bytes before a `(`) are the same bytes: a short name's few
/// bytes compared in line, which a flood of one short name (`(x(x…`) asks at every `(`
/// (the slices' `==` called `memcmp`, ~14 instructions of a 2-byte unit's ~150); a longer
/// one's by `memcmp` (the byte loop cost `get_weather(x`'s 12-byte name 16 % more).
#[inline(always)]
fn same_name(a: Option<&[u8]>, b: Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a.len() < 8 => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
        }
        (Some(a), Some(b)) => a == b,
        (None, None) => true,
        _ => false,
    }
}

/// Whether `bytes[pos..pos + period]` is followed by a copy of itself, or of itself but for
/// digits (a digit where the other has one), or the bytes end before such a copy would.
fn repeats_but_digits(bytes: &[u8], pos: usize, period: usize) -> bool {
    let (Some(a), Some(b)) = (
        bytes.get(pos..pos + period),
        bytes.get(pos + period..pos + 2 * period),
    ) else {
        return true;
    };
    a == b
        || a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_ascii_digit() && y.is_ascii_digit()))
}

/// [`periodic_len`] where, at the offsets in a period that `free` marks (`None`: none),
/// a digit may stand for another: how far `bytes` repeats with period `period` so, read no
/// further than `limit` bytes. Eight bytes at a time (a numbered flood's copies each
/// differ, and a byte loop over its run cost ~13 instructions a byte), a word whose
/// differing bytes are all free and digits passed, else read byte by byte.
fn periodic_len_free(bytes: &[u8], period: usize, free: Option<&[bool]>, limit: usize) -> usize {
    let bytes = bytes.get(..limit.min(bytes.len())).unwrap_or(bytes);
    let Some(free) = free.filter(|f| f.len() == period && period <= MAX_DIGIT_UNIT) else {
        return periodic_len(bytes, period);
    };
    let (Some(a), Some(b)) = (
        bytes.get(..bytes.len().saturating_sub(period)),
        bytes.get(period..),
    ) else {
        return bytes.len();
    };
    // The free offsets as bytes (0xff), the period repeated to eight bytes past its end.
    let mut mask = [0u8; MAX_DIGIT_UNIT + 8];
    for (j, m) in mask.iter_mut().enumerate().take(period + 8) {
        if free.get(j % period) == Some(&true) {
            *m = 0xff;
        }
    }
    let word = |s: &[u8], i: usize| -> Option<u64> {
        let w: [u8; 8] = s.get(i..i + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(w))
    };
    let digits = |i: usize| {
        a.get(i).is_some_and(u8::is_ascii_digit) && b.get(i).is_some_and(u8::is_ascii_digit)
    };
    let (mut i, mut u) = (0, 0);
    while let (Some(x), Some(y), Some(f)) = (word(a, i), word(b, i), word(&mask, u)) {
        let d = x ^ y;
        if d & !f != 0 || (d != 0 && !(0..8).all(|k| (d >> (8 * k)) & 0xff == 0 || digits(i + k))) {
            break;
        }
        i += 8;
        u = (u + 8) % period;
    }
    // The rest (and the word that differs) byte by byte.
    for (&x, &y) in a.iter().zip(b).skip(i) {
        if x != y && !(free.get(u) == Some(&true) && digits(i)) {
            break;
        }
        i += 1;
        u += 1;
        if u == period {
            u = 0;
        }
    }
    i + period.min(bytes.len())
}

/// [`periodic_len_free`] with no limit, where the same with limit `bound` gave `known`: the
/// bytes compared for it are not compared again (a run's bound stretch, asked before its
/// scans, then its whole stretch: the numbered `get_weather(get_weather(x){#}` compared
/// each run's first `bound` bytes twice, 13 % more).
fn periodic_len_on(
    bytes: &[u8],
    period: usize,
    free: Option<&[bool]>,
    known: usize,
    bound: usize,
) -> usize {
    if known < bound.min(bytes.len()) || period == 0 {
        return known;
    }
    // The bytes before `off`, a multiple of the period, each equal the one a period on.
    let off = known.saturating_sub(period) / period * period;
    off + periodic_len_free(bytes.get(off..).unwrap_or(&[]), period, free, usize::MAX)
}

/// The last region [`Engine::keep_broken_memo`] kept: opened by literal opener `opener` at
/// `at` (absolute), decided by its first `len` bytes, kept broken to `at + end` with `why`.
struct BrokenMemo {
    opener: usize,
    at: usize,
    len: usize,
    end: usize,
    why: String,
}

/// Where [`Engine::pass_declined_walk`] is: the next byte to read, the last copy's start
/// and the copies passed.
struct DeclinedWalk {
    q: usize,
    unit: usize,
    copies: usize,
}

/// The windows [`Engine::walk_declined_memo`] found declined (opener, start, length; no
/// opener is `usize::MAX`), and its asks of the families on windows and declines unasked.
struct DeclineMemo {
    windows: [(usize, usize, usize); 2],
    asked: usize,
    unasked: usize,
}

impl Default for DeclineMemo {
    fn default() -> Self {
        DeclineMemo {
            windows: [(usize::MAX, 0, 0); 2],
            asked: 0,
            unasked: 0,
        }
    }
}

/// How [`Engine::walk_bracket`] says the scan reads a bracket.
enum WalkBracket {
    Ordinary,
    Region,
    Opener(usize),
    Scan,
}

/// How [`Engine::walk_failed_region`] says the scan reads a bare JSON region.
enum WalkRegion {
    Failed(usize),
    Repeated,
    Scan,
}

/// The failed bracket regions [`Engine::pass_failed_walk`] passed: their charges (applied
/// when the walk ends), the last one's start and length, and whether the walk stopped at a
/// region repeating it.
#[derive(Clone, Copy, Default)]
struct WalkRegions {
    count: usize,
    charged: usize,
    last: Option<(usize, usize)>,
    repeated: bool,
}

/// Whether the bytes at `pos + 1` and `pos + 2` are brackets (`[` or `{`): the cheap test
/// before [`Engine::pass_brackets`].
#[inline(always)]
fn is_bracket_run(bytes: &[u8], pos: usize) -> bool {
    matches!(
        bytes.get(pos + 1..pos + 3),
        Some([b'[' | b'{', b'[' | b'{'])
    )
}

/// Whether the text scan reads the bracket at `q`, whose bare JSON format is on, as an
/// ordinary byte ([`Engine::pass_failed_calls`]'s fillers): no opener starts at it, no run
/// of brackets, and its plausibility test says it starts no JSON.
fn ordinary_bracket(openers: &crate::openers::Openers, bytes: &[u8], q: usize) -> bool {
    let head = bytes.get(q..).unwrap_or(&[]);
    let plausible = match head.first() {
        Some(b'[') => array_start_plausible(head, false),
        _ => object_start_plausible(head, false),
    };
    plausible == Some(false) && !is_bracket_run(bytes, q) && openers.none_at(bytes, q) == Ok(true)
}

/// The first byte from `r` that is neither a newline nor a blank no scan stops at: where
/// the walks ([`Engine::pass_declined_walk`], [`Engine::pass_implausible_walk`]) ask
/// whether the byte after a newline and the blank lines after it starts a line opener.
#[inline]
fn after_blank_lines(bytes: &[u8], stops: &StopSet, mut r: usize) -> usize {
    while let Some(&d) = bytes.get(r)
        && (d == b'\n' || (matches!(d, b' ' | b'\t' | b'\r') && !stops.is_stop(d)))
    {
        r += 1;
    }
    r
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_rng::Xorshift;

    #[test]
    fn ascii_kinds_are_the_character_walks_kinds() {
        let mut messages: Vec<String> = [
            "malformed JSON: expected `:` at line 1 column 23",
            "malformed JSON: control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0",
            r#"found hermes call to "get_weather""#,
            r#"command "open_app" dropped: required argument "app_name" is missing or empty, and a long tail"#,
            "",
            "\"",
            "12345",
        ]
        .iter()
        .map(|m| (*m).to_owned())
        .collect();
        let alphabet = b"ab \"019#:x";
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5_000 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = (seed >> 56) as usize + (seed as usize % 3) * 40;
            let mut m = String::new();
            for j in 0..len {
                let r = seed.rotate_left(j as u32 % 64) ^ (j as u64 * 0x2545_f491);
                m.push(char::from(alphabet[(r >> 7) as usize % alphabet.len()]));
            }
            messages.push(m);
        }
        for m in &messages {
            for (prefix, base) in [("e", 1), ("", 0), ("wxyz", 1), (&"p".repeat(70)[..], 1)] {
                let mut want = prefix.to_owned();
                DiagCap::chars_kind_into(m, &mut want, base);
                let mut got = prefix.to_owned();
                DiagCap::kind_into(m, &mut got, base);
                assert_eq!(got, want, "{m:?} after {prefix:?}");
            }
        }
    }

    /// [`KindWriter`] (a message's kind worked out as it is written, in pieces, and the
    /// write stopped once the kind is whole) gives the kind [`DiagCap::chars_kind_into`]
    /// gives for the whole message: ASCII and not, quotes, digits, long messages (fails if
    /// its bulk runs overrun the kind's 60 bytes or the 200 characters, or miss a quote or
    /// a digit).
    #[test]
    fn kind_writer_is_the_character_walk() {
        use std::fmt::Write as _;
        let alphabet = [
            'a', 'b', ' ', '"', '0', '1', '9', '#', ':', 'x', '\u{e9}', '\u{4e2d}',
        ];
        let mut seed: u64 = 0x51_7cc1_b727_220a;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        for round in 0..4_000 {
            let len = next() % if round % 2 == 0 { 90 } else { 320 };
            let ascii = round % 3 == 0;
            let m: String = (0..len)
                .map(|_| alphabet[next() % if ascii { 10 } else { alphabet.len() }])
                .collect();
            let mut want = String::from("e");
            DiagCap::chars_kind_into(&m, &mut want, 1);
            let mut w = KindWriter {
                kind: String::from("e"),
                quoted: false,
                chars: 0,
            };
            // In random pieces, each on character boundaries.
            let mut rest = m.as_str();
            while !rest.is_empty() {
                let mut cut = (next() % 12).min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (piece, more) = rest.split_at(cut);
                if w.write_str(piece).is_err() {
                    break;
                }
                rest = more;
            }
            assert_eq!(w.kind, want, "{m:?}");
        }
    }

    // A flood of implausible brackets whose copies differ (`[0[1[2…`) asks about no unit
    // for a while after one whose next copy differs (Engine::pass_implausible); a run of
    // repeated units right after it is still read as the scan reads it, and a call after
    // both is found: one-shot equals 1-, 7- and 64-byte pushes in text, calls and notes.
    #[test]
    fn numbered_bracket_floods_then_repeated_ones_read_as_each_bracket() {
        let options = with_get_weather();
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        for (numbered, repeated) in [("[", "[x"), ("{", "{\n"), ("{\n", "[1,"), ("[x", "{\nx")] {
            let mut text = String::from("a ");
            for n in 0..300 {
                text.push_str(numbered);
                text.push_str(&n.to_string());
            }
            text.push_str(&repeated.repeat(300));
            text.push(' ');
            text.push_str(call);
            let p = crate::parse(&text, &options);
            assert_eq!(p.calls.len(), 1, "{numbered:?} then {repeated:?}");
            for size in [1, 7, 64] {
                let (t, calls, diags) = streamed_whole(&text, &options, size);
                assert!(
                    t == p.text,
                    "{numbered:?} then {repeated:?}: {size}-byte pushes"
                );
                assert_eq!(calls.len(), 1);
                assert_eq!(diags, p.diagnostics, "{numbered:?} then {repeated:?}");
            }
        }
    }

    // Brackets read as ordinary bytes one after another (Engine::pass_implausible_walk)
    // and declined openers read so (Engine::pass_declined_walk) leave what reading each
    // byte leaves: random texts of numbered and repeated bracket and opener units mixed with what must stop the walk (openers, `name(`, a line-start opener after
    // a newline, blanks, fences, plausible JSON and calls) parse the same with the walk and
    // without it, in text, calls and every diagnostic, one-shot and in 1-, 7- and 64-byte
    // pushes, with bare JSON on (a registry) and with the defaults.
    #[test]
    fn implausible_brackets_walked_read_as_each_byte() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let pieces: &[&str] = &[
            "[",
            "{",
            "[x",
            "{x",
            "{\n",
            "[1,",
            "0",
            "17",
            "x",
            " ",
            "\n",
            "\n  ",
            "\t",
            "[TOOL_CALLS]",
            "get_weather(",
            "TOOL_CALL: get_weather\n",
            call,
            "{\"",
            "}",
            "]",
            "`",
            "\n```json\n",
            "(",
            "<tool_call>",
            "\"",
            "a",
            "[{",
            "{a: 1}",
            "[1]",
            ">>>",
            "é",
            "\r\n",
            "[get_weather(city='Paris')]",
            "T",
            "]<]minimax[>[",
        ];
        let mut rng = Xorshift::new(0x51_7CC1_B727_220A_u64);
        let mut next = |n: usize| rng.below(n);
        let mut walked = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..400 {
                let mut text = String::new();
                for _ in 0..case % 60 + 2 {
                    let p = pieces[next(pieces.len())];
                    // Mostly bracket units with numbers, so that walks are long.
                    if next(3) > 0 {
                        text.push_str(
                            [
                                "[",
                                "{",
                                "[x",
                                "{\n",
                                "{{",
                                ">>>",
                                "<tool_call>",
                                "[TOOL_CALLS]",
                                "]<]minimax[>[<tool_call>",
                            ][next(9)],
                        );
                        text.push_str(&next(1000).to_string());
                    }
                    text.push_str(p);
                }
                let with = walk_equals_no_walk(&text, &options);
                walked += usize::from(with.text.len() > 100);
            }
        }
        assert!(walked > 300, "{walked}");
    }

    // Floods of bracket units that `Engine::pass_implausible` and its walk used to leave
    // to the scan, byte by byte, are passed (most of their bytes) and read as the scan
    // reads each byte: units holding the bracket twice (`[[x\n`, `{{x\n`, `[{x`, `{[x`);
    // units whose word after a newline starts with a line-start opener's first letter
    // (`{\nthe`, `{\nTOOL_CALL`, not `TOOL_CALL:`); once bare JSON is off (the rescan
    // budget spent by the flood itself), floods of `[\n` and `[[x\n`; and units of
    // declined openers and JSON's start whose region fails as the one before
    // (`Engine::pass_failed_regions`: `]<]minimax[>[<tool_call>x{"`), beside ones it must
    // leave to the scan (a region nested past the rescan budget's share, `{"a":[`; one
    // with a note, a call's cut JSON); repeated, numbered and worded, with a call after
    // each. Text, calls and every diagnostic are those of the scan alone
    // (`Engine::no_walk`), one-shot and in 1-, 7- and 64-byte pushes.
    #[test]
    fn bracket_floods_passed_read_as_each_byte() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = [
            "the",
            "to",
            "a",
            "TOOL_CALL",
            "Action",
            "x",
            "arguments",
            "é",
        ];
        let units = [
            "[[x\n",
            "{{x\n",
            "[{x",
            "{[x",
            "{\n",
            "[\n",
            "{\n\n  ",
            "[x\n",
            "]<]minimax[>[<tool_call>x{\"",
            "<tool_call>1,{\"",
            "x{\"",
            "{\"a\":[",
            "[\"",
            "{\"name\": \"get_weather\", \"arguments\": {",
            // A "```" mid-line (no fence opens), passed; four backticks (inline code after
            // the three) and one at a line start (a fence) are left to the scan.
            "{x```json\n",
            "[x ```\n",
            "{x````json\n",
            "{x\n```json\n",
        ];
        // Bytes passed, and the bytes before bare JSON went off for broken values (after
        // which the copies are text by other passes).
        let passed = |text: &str, options: &crate::ParseOptions| {
            let with = walk_equals_no_walk(text, options);
            let e = parsed_engine(text, options);
            (e.bracket_passed, before_broken_cut(&with, text.len()))
        };
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for unit in units {
                for suffix in ["", "{#}", "{w}"] {
                    for n in [300, 9000] {
                        let mut text = String::from("a ");
                        for k in 0..n {
                            text.push_str(unit);
                            match suffix {
                                "{#}" => text.push_str(&k.to_string()),
                                "{w}" => text.push_str(words[k * 7 % words.len()]),
                                _ => {}
                            }
                        }
                        text.push(' ');
                        text.push_str(call);
                        let (got, before) = passed(&text, &options);
                        // The units after the first few (and the bare JSON regions before
                        // the budget ran out) are passed.
                        // Not these: each copy's `[[`/`[{` opens bare JSON (plausible), and
                        // the budget is not spent; or once it is, a `{` first (no pass asks
                        // for `{` with bare JSON off: a fence's `{"` floods cost more).
                        let regions =
                            matches!((unit, suffix), ("[[x\n", "{#}" | "{w}") | ("[{x", _))
                                || unit.contains("````")
                                || unit.contains("\n```");
                        // A failed region's unit repeated (each copy's region fails as the
                        // kept scan of the first did); the other units of JSON's start are
                        // read otherwise, and compared only.
                        let failed = unit.contains('"');
                        let expected = if failed {
                            unit.starts_with(']') && suffix.is_empty()
                        } else {
                            !regions
                        };
                        if n == 9000 && expected {
                            assert!(
                                got * 4 > before * 3,
                                "{unit:?}{suffix}: {got} of {before} bytes passed",
                            );
                        }
                    }
                }
            }
        }
        // A line-start opener's line stops the walk: read by the scan.
        let text = format!("{}TOOL_CALL: get_weather\n{}", "{\nthe".repeat(40), call);
        walk_equals_no_walk(&text, &with_get_weather());
    }

    // Floods of an implausible bracket and a control token the scan strips (`<|eot|>`,
    // `<|eom|>`: Muse Glimmer's), bare JSON off once the flood's own regions spent the
    // rescan budget, are passed by `Engine::pass_implausible` (most of their bytes), each
    // copy's token stripped as the scan strips it: after a byte (`<|eot|>["`, `x<|eot|>[`,
    // two tokens), at a line start (`["\n<|eot|>`), and before a newline; and floods of a
    // token and a bare JSON region that fails at each copy (`<|end_message|>x{"]`:
    // Inkling's), repeated (`Engine::pass_failed_regions`) or differing
    // (`Engine::pass_failed_walk`); repeated, numbered and worded, with a call after each. Text, calls and every diagnostic are
    // those of the scan alone (`Engine::no_walk`), one-shot and in 1-, 7- and 64-byte
    // pushes.
    #[test]
    fn stripped_token_bracket_floods_passed() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let units = [
            "<|eot|>[\"",
            "x<|eot|>[",
            "<|eot|>[x<|eom|>",
            "<|eot|>[\"\n",
            "<|eot|>\n[\"",
            "<|eot|>[\"1,",
            "<|end_message|>x{\"]",
            "x<|eot|>{\"]",
        ];
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for unit in units {
                for suffix in ["", "{#}", "{w}"] {
                    let mut text = String::from("a ");
                    for k in 0..6000 {
                        text.push_str(unit);
                        match suffix {
                            "{#}" => text.push_str(&k.to_string()),
                            "{w}" => text.push_str(["the", "x", "to"][k % 3]),
                            _ => {}
                        }
                    }
                    text.push(' ');
                    text.push_str(call);
                    let with = walk_equals_no_walk(&text, &options);
                    assert!(!with.text.contains("<|eot|>"), "{unit:?}{suffix}");
                    let e = parsed_engine(&text, &options);
                    if unit.ends_with(']') && !suffix.is_empty() {
                        // Copies that differ: each region failed, its token stripped, in a
                        // walk of several (`Engine::pass_failed_walk`).
                        assert!(e.regions_walked * 4 < 6000, "{unit:?}{suffix}");
                    } else if suffix.is_empty() {
                        let before = before_broken_cut(&with, text.len());
                        // Or passed after a stripped token (`Engine::pass_after_strip`),
                        // which takes a unit that starts after one first.
                        assert!(
                            (e.bracket_passed + e.strip_passed) * 2 > before,
                            "{unit:?}: {} of {before} bytes passed",
                            e.bracket_passed,
                        );
                    }
                }
            }
        }
    }

    // `name(` read one after another in `Engine::open_call` leave what
    // reading each `(` leaves: random texts of words, digits and `(` (worded and numbered
    // floods of `(`) mixed with registered names, calls, openers, blanks, newlines and
    // fences parse the same with the walk and without it, in text, calls and every
    // diagnostic, one-shot and in 1-, 7- and 64-byte pushes, with a registry and without.
    #[test]
    fn unread_call_openers_walked_read_as_each_opener() {
        let pieces: &[&str] = &[
            "(",
            "x",
            "the",
            "weather",
            "get_weather",
            "computer_use",
            "get_weather2",
            "7",
            "12",
            "_",
            " ",
            "\n",
            "\t",
            "get_weather(city=\"Paris\")",
            "get_weather(x)",
            ")",
            "`",
            "\n```json\n",
            "<tool_call>",
            "[TOOL_CALLS]",
            "[",
            "{",
            "\"",
            "é",
            "TOOL_CALL: get_weather\n",
            "[get_weather(city='Paris')]",
            ".",
            "-",
            ":",
        ];
        let mut rng = Xorshift::new(0x2F6A_11C3_9B0D_4E57_u64);
        let mut next = |n: usize| rng.below(n);
        let words = [
            "x",
            "the",
            "a",
            "get_weather",
            "name",
            "x1",
            "computer_use",
            "",
        ];
        let mut long = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..300 {
                let mut text = String::new();
                for _ in 0..case % 40 + 2 {
                    // Mostly runs of `word(`, so that walks are long.
                    for _ in 0..next(12) {
                        text.push('(');
                        text.push_str(words[next(words.len())]);
                        if next(4) == 0 {
                            text.push_str(&next(100).to_string());
                        }
                    }
                    text.push_str(pieces[next(pieces.len())]);
                }
                let with = walk_equals_no_walk(&text, &options);
                long += usize::from(with.text.len() > 100);
            }
        }
        assert!(long > 200, "{long}");
    }

    // Floods of declined region openers whose copies differ, each unit ending on a line of
    // its own (the next copy at a line start, after blanks or blank lines) or inside one,
    // with other markup between them: the same text, calls and notes as read opener by
    // opener.
    #[test]
    fn declined_openers_walked_over_lines_read_as_each_opener() {
        let openers = [
            "<tool_call>",
            ">>>",
            "[TOOL_CALLS]",
            "<function=",
            "<|tool_call|>",
            "]<]minimax[>[<tool_call>",
            "<|start|>",
            "<tool_calls>",
            "<think:",
            "Action:",
        ];
        let tails = [
            "\n", "\n\n", "\n  ", "\r\n", "\n\t", " \n", "", "\n\n\n ", "x",
        ];
        let pieces = [
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
            "TOOL_CALL: get_weather\n",
            "\n```json\n",
            "`",
            "x",
            "get_weather(",
            "\n",
            "[",
            "{\"",
            "é",
            "<",
            "\nT",
        ];
        let words = ["x", "the", "get_weather", "", "{", "[", "(", "a b"];
        let mut rng = Xorshift::new(0x0B7D_3E91_C56A_42F8_u64);
        let mut next = |n: usize| rng.below(n);
        let mut long = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..300 {
                let opener = openers[case % openers.len()];
                let tail = tails[next(tails.len())];
                let mut text = String::new();
                for _ in 0..case % 40 + 2 {
                    for _ in 0..next(16) {
                        text.push_str(opener);
                        if next(3) > 0 {
                            text.push_str(&next(100_000).to_string());
                        } else {
                            text.push_str(words[next(words.len())]);
                        }
                        text.push_str(tail);
                    }
                    text.push_str(pieces[next(pieces.len())]);
                }
                let with = walk_equals_no_walk(&text, &options);
                long += usize::from(with.text.len() > 100);
            }
        }
        assert!(long > 200, "{long}");
    }

    // Inline code and text between backticks, mostly units whose copies differ (numbers,
    // words, markup after them, a code left open): the same text, calls and notes as read
    // by the scan's modes, one-shot and streamed.
    #[test]
    fn inline_code_walked_reads_as_each_unit() {
        let pieces: &[&str] = &[
            "`",
            "``",
            "```",
            "````",
            "\n",
            "\n```json\n",
            " ",
            "\t",
            "x",
            "12",
            "é",
            "get_weather",
            "(",
            "get_weather(x)",
            "get_weather(city=\"Paris\")",
            "<tool_call>",
            "<",
            ">>>",
            "[TOOL_CALLS]",
            "[",
            "{",
            "{\"",
            "f",
            "A",
            "<think>",
            "</think>",
        ];
        let words = [
            "x",
            "0",
            "17",
            "the",
            "get_weather",
            "",
            " ",
            "é",
            "(",
            "<",
            "{",
            "[",
            "a b",
        ];
        let mut rng = Xorshift::new(0x6C1D_52A9_0E37_B4F1_u64);
        let mut next = |n: usize| rng.below(n);
        let mut long = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..300 {
                let mut text = String::new();
                for _ in 0..case % 30 + 2 {
                    // Mostly runs of inline code and text, so that walks are long.
                    for _ in 0..next(12) {
                        text.push('`');
                        text.push_str(words[next(words.len())]);
                        if next(3) == 0 {
                            text.push_str(&next(100_000).to_string());
                        }
                        if next(8) != 0 {
                            text.push('`');
                        }
                        text.push_str(words[next(words.len())]);
                        if next(2) == 0 {
                            text.push_str(&next(1000).to_string());
                        }
                    }
                    text.push_str(pieces[next(pieces.len())]);
                }
                let with = walk_equals_no_walk(&text, &options);
                long += usize::from(with.text.len() > 100);
            }
        }
        assert!(long > 200, "{long}");
    }

    // Inline code that ends at a newline, the next line starting markup the scan reads at a
    // line start (a `TOOL_CALL:` header, a fence, bare JSON, a stripped or region opener)
    // or text: the walk passes the newline only when that line goes on as text
    // (`Engine::line_plain`), and reads what the scan's modes read, one-shot and streamed.
    #[test]
    fn inline_code_ending_at_a_line_opener_reads_as_each_unit() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let lines = [
            "TOOL_CALL: get_weather\ncity: Paris\n".to_owned(),
            "tool_call: get_weather\ncity: Paris\n".to_owned(),
            format!("```json\n{call}\n```\n"),
            format!("{call}\n"),
            format!("  {call}\n"),
            format!("<tool_call>{call}</tool_call>\n"),
            format!("[TOOL_CALLS][{call}]\n"),
            "the weather\n".to_owned(),
        ];
        let mut found = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for line in &lines {
                for code in ["`x", "`x`y `z", "``x", "`0`1`2`3"] {
                    let text = format!("a {code}\n{line}after");
                    found += walk_equals_no_walk(&text, &options).calls.len();
                    let text = format!("a {}{code}\n{line}after", "`x`y".repeat(20));
                    found += walk_equals_no_walk(&text, &options).calls.len();
                }
            }
        }
        assert!(found > 40, "{found}");
    }

    // A worded flood of `(` (`(the(weather(a(get_weather(…`, the bench's `({w}`) with
    // enough names unknown to the registry that its filter is made: the names it rules out
    // are passed in the walk unasked (`NameMemo::filtered_out`), and the text, calls and
    // notes are those of each `(` read in turn, one-shot and streamed, with suffixes.
    #[test]
    fn worded_paren_floods_read_as_each_opener() {
        let words = [
            "the",
            "weather",
            "a",
            "city",
            "location",
            "unit",
            "query",
            "of",
            "and",
            "celsius",
            "to",
            "arguments",
            "name",
            "is",
            "get_weather",
            "result",
            "computer_use",
            "x",
            "get_weathe",
            "et_weather",
        ];
        let mut rng = Xorshift::new(0x51C3_0D2B_77A1_9E4F_u64);
        let mut next = |n: usize| rng.below(n);
        for suffix in ["", "x", " ", "1,", "{\"", "\n", ")"] {
            let mut text = String::new();
            for i in 0..600 {
                text.push('(');
                text.push_str(words[next(words.len())]);
                if i % 7 == 0 {
                    text.push_str(&i.to_string());
                }
                text.push_str(suffix);
            }
            text.push_str("get_weather(city=\"Paris\")");
            walk_equals_no_walk(&text, &with_get_weather());
        }
    }

    // Floods of call openers whose copies differ in a word (and a number), each copy's
    // name and `(` and the words and stops between (Engine::pass_worded_calls): passed at
    // once where copies are alike but for their words (so each scan fails as the first
    // did, and each name is this one or one no family reads), the same text, calls and
    // notes as read opener by opener, one-shot and streamed; a copy with another
    // registered name, a closed call or a bracket that opens bare JSON ends a run.
    #[test]
    fn worded_copies_of_call_openers_read_as_each_opener() {
        let options = with_tools(&["get_weather", "computer_use"]);
        let words = [
            "the",
            "weather",
            "a",
            "get_weather",
            "computer_use",
            "x",
            "celsius",
            "of",
            "to",
            "Action",
            "functools",
            "T",
        ];
        let mut rng = Xorshift::new(0x6C1B_3A57_D2E9_0F84_u64);
        let mut passed = Vec::new();
        for unit in [
            "get_weather(computer_use({\"",
            "(\n",
            "computer_use({\"",
            "get_weather( ",
            "(",
            "get_weather(computer_use(x",
            "(\n  ",
            "get_weather(\"",
            "get_weather((",
            "get_weather(x)",
        ] {
            for suffix in ["w", "#w", "wx"] {
                for rare in [None, Some(97), Some(701)] {
                    let mut text = String::from("Hi. ");
                    for i in 0..1500 {
                        text.push_str(unit);
                        if suffix.contains('#') {
                            text.push_str(&i.to_string());
                        }
                        // Now and then a word the draw never gives: a name no filter rules
                        // out (registered) or another unit's bytes.
                        match rare {
                            Some(r) if i % r == r - 1 => text.push_str("computer_use("),
                            _ => text.push_str(words[rng.below(words.len())]),
                        }
                        if suffix.contains('x') {
                            text.push('x');
                        }
                    }
                    passed.push((unit, suffix, rare, worded_passed(&mut text, &options)));
                }
            }
        }
        // The worded floods of failing openers are passed, not read one by one (a copy
        // with another registered name every 97 ends runs too short to pass).
        for (unit, suffix, rare, n) in &passed {
            if ["get_weather(computer_use({\"", "(\n", "(", "(\n  "].contains(unit)
                && *rare != Some(97)
                && !suffix.contains('x')
            {
                assert!(*n > 300, "{unit:?}{suffix} {rare:?}: {n} copies passed");
            }
        }
    }

    // Floods of call openers with words, numbers and other bytes between them (each
    // copy's `{"` and word before the next name read by `pass_filler_run`, its scans
    // bounded by the periodic run in `pass_failed_calls`, a name the filter rules out
    // passed before the memo): the same text, calls and notes as read opener by opener.
    #[test]
    fn worded_call_floods_read_as_each_opener() {
        let options = with_tools(&["get_weather", "computer_use"]);
        let words = [
            "the",
            "a",
            "get_weather",
            "x",
            "celsius",
            "of",
            "`",
            "<b>",
            "[",
            "Action",
        ];
        let mut rng = Xorshift::new(0x2F6B_91C4_0A3D_E857_u64);
        for unit in [
            "get_weather(computer_use({\"",
            "get_weather(get_weather(x)",
            "get_weather(computer_use(x)",
            "computer_use({",
            "get_weather( ",
        ] {
            for suffix in ["w", "#", "#w", "x", ""] {
                let mut text = String::new();
                for i in 0..300 {
                    text.push_str(unit);
                    if suffix.contains('#') {
                        text.push_str(&i.to_string());
                    }
                    if suffix.contains('w') {
                        text.push_str(words[rng.below(words.len())]);
                    }
                    if suffix == "x" {
                        text.push('x');
                    }
                }
                text.push_str("get_weather(city=\"Paris\")");
                walk_equals_no_walk(&text, &options);
            }
        }
    }

    // Worded floods whose names follow a name byte that is no word byte (`"a":get_weather(`:
    // the scan's name `:get_weather`, read as `get_weather`) or whose units hold an opener
    // declined at once at each copy (`<|python_tag|>get_weather(`, a suffixed `<think:`),
    // passed by `Engine::pass_worded_calls`: the same text, calls and notes as read opener
    // by opener, one-shot and streamed; names whose name bytes are their own (`a:b(`,
    // `x.get_weather(`, `::get_weather(`) and copies whose opener opens a region (a real
    // call now and then) end a run.
    #[test]
    fn worded_copies_after_name_bytes_and_declined_openers_read_as_each_opener() {
        let options = with_tools(&["get_weather", "computer_use", "a.foo"]);
        let words = [
            "the",
            "weather",
            "a",
            "get_weather",
            "computer_use",
            "x",
            "9a",
            "celsius",
            "brave_search",
            "T",
        ];
        let real = r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
        let mut rng = Xorshift::new(0x3D5A_71C2_9E0B_46F8_u64);
        let mut passed = Vec::new();
        for unit in [
            "{\"a\":get_weather(",
            "<think:{\"a\":get_weather(",
            "<|python_tag|>get_weather(",
            "<function=get_weather>get_weather(",
            "computer_use({\"<longcat_tool_call>",
            "<function\u{120}name=\":computer_use(",
            "<tool_call>get_weather(",
            "x.get_weather(",
            "a:get_weather(",
            "get_weather(a.foo(",
            "get_weather(<function={w}>",
            "<function={w}>{\"a\":get_weather(",
            "get_weather(<tool_call>{w}\n",
            "get_weather(<think{w}>",
            "get_weather(\":computer_use(",
            "\"::get_weather(",
            " -get_weather(",
        ] {
            for suffix in ["w", "#", "wx"] {
                for rare in [None, Some(89)] {
                    let mut text = String::from("Hi. ");
                    for i in 0..1000 {
                        let word = match suffix.contains('#') {
                            true => i.to_string(),
                            false => words[rng.below(words.len())].to_owned(),
                        };
                        match unit.contains("{w}") {
                            true => text.push_str(&unit.replace("{w}", &word)),
                            false => text.push_str(&format!("{unit}{word}")),
                        }
                        match rare {
                            Some(r) if i % r == r - 1 => text.push_str(real),
                            _ => {}
                        }
                        if suffix.contains('x') {
                            text.push('x');
                        }
                    }
                    passed.push((unit, suffix, rare, worded_passed(&mut text, &options)));
                }
            }
        }
        for (unit, suffix, rare, n) in &passed {
            if [
                "{\"a\":get_weather(",
                "<think:{\"a\":get_weather(",
                "<|python_tag|>get_weather(",
                "computer_use({\"<longcat_tool_call>",
                "<function\u{120}name=\":computer_use(",
            ]
            .contains(unit)
                && rare.is_none()
                && !suffix.contains('x')
                && (suffix.contains('#') || !unit.contains("longcat"))
            {
                assert!(*n > 300, "{unit:?}{suffix} {rare:?}: {n} copies passed");
            }
        }
    }

    // A declined opener's unit holding a bracket that opened bare JSON is not passed as
    // text (`<tool_call>x{"`); once the rescan budget ran out and bare JSON is off, the
    // same unit is text, so the windows found not to be are forgotten: the rest of the
    // flood is passed at once, not read unit by unit (32x prose before). The text is the
    // flood's, the call after it found, one-shot as streamed.
    #[test]
    fn units_refused_while_bare_json_was_on_are_asked_again_once_it_is_off() {
        let options = crate::ParseOptions::default();
        let (ctx, _) = options.ctx();
        let flood = "<tool_call>x{\"".repeat(20_000);
        let mut e = Engine::new_inner(Arc::new(ctx));
        e.quiet = true;
        e.feed_whole(&flood);
        assert!(e.bare_off, "the rescan budget ran out");
        assert!(
            e.no_units.iter().all(Vec::is_empty),
            "a unit refused while bare JSON was on is still refused"
        );
        let call =
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#;
        let text = format!("{flood} {call}");
        let p = crate::parse(&text, &options);
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.text.len(), flood.len() + 1);
        assert_eq!(streamed_whole(&text, &options, 64).0, p.text);
    }

    // A unit of an implausible bracket that the periodic pass refuses (it holds a marker
    // the scan removes, `<|message_sep|>`) is not asked about again at its next copies,
    // whose windows are the refused one (30.9x prose before). The text and notes are the
    // scan's alone, one-shot as streamed. Fails with the kept window unused.
    #[test]
    fn units_the_periodic_pass_refuses_are_not_asked_at_every_copy() {
        let options = crate::ParseOptions::default();
        for unit in [
            "<|message_sep|>[\"",
            "[<|message_sep|>",
            "<|message_sep|>[x",
        ] {
            let copies = 3_000;
            let flood = unit.repeat(copies);
            let (ctx, _) = options.ctx();
            let mut e = Engine::new_inner(Arc::new(ctx));
            e.quiet = true;
            e.feed_whole(&flood);
            assert!(
                e.implausible_units_asked * 8 < copies,
                "{unit:?}: {} units asked",
                e.implausible_units_asked
            );
            walk_equals_no_walk(&flood, &options);
        }
    }

    // A flood of a stripped control token and a few bytes the scan reads as text is passed
    // a run of copies at once (`Engine::pass_after_strip`), its tokens stripped; units the
    // scan may read otherwise (a newline, a blank, a bracket, a `(` after a name, an
    // opener) are compared only. Text, calls and notes are the scan's alone, one-shot as
    // streamed, with and without tools. Fails with the pass off (nothing passed), and
    // with its tokens not stripped or its first byte not checked (texts differ).
    #[test]
    fn strip_floods_are_passed_read_as_each_token() {
        let passed = [
            "<|eot|>]",
            "<|end|>1,",
            "<|eom|>x",
            "<|eot|>x<|end|>>",
            "<|eot|>\"y",
            // A token followed by a refused byte (a line start) and the same token by an
            // ordinary one: the refusal of the first does not skip the second.
            "<|eot|>\n<|eot|>x",
            "<|eot|> <|end|>]",
        ];
        let compared = [
            "<|eot|>\n",
            "<|eot|> x",
            "<|eot|>[x",
            "<|eot|>{\"",
            "<|eot|>x(",
            "<|eot|>(x",
            "<|eot|>get_weather(",
            "<|eot|><tool_call>",
            "<|eot|>`x",
            "<|eot|>x\n{\"a\": 1}",
        ];
        for options in [crate::ParseOptions::default(), with_get_weather()] {
            for unit in passed.iter().chain(&compared) {
                let flood = format!("Hi. {}", unit.repeat(3_000));
                let (ctx, _) = options.ctx();
                let mut e = Engine::new_inner(Arc::new(ctx));
                e.quiet = true;
                e.feed_whole(&flood);
                // Refused units are asked about a few times, not at every copy.
                assert!(e.strip_asks < 100, "{unit:?}: asked {} times", e.strip_asks);
                if passed.contains(unit) {
                    assert!(
                        e.strip_passed * 10 > flood.len() * 9,
                        "{unit:?}: {} of {} bytes passed",
                        e.strip_passed,
                        flood.len()
                    );
                }
                let p = walk_equals_no_walk(&flood, &options);
                if passed.contains(unit) {
                    assert!(!p.text.contains("<|"), "{unit:?}: a token left in the text");
                }
            }
        }
    }

    /// Options holding an empty tool registry.
    fn with_an_empty_registry() -> crate::ParseOptions {
        crate::ParseOptions {
            tools: Some(Arc::new(toolcall_core::Registry::new())),
            ..crate::ParseOptions::default()
        }
    }

    // A push that only continues the opener the text scan waits on is appended without a
    // scan (`OPENER_HOLD`): after every push of 1 to 12 bytes, through `push` and
    // `push_into`, the text given out and the calls started and finished are those of the
    // same bytes pushed at once. Replies with a call after a call (the hold applies from
    // the second opener on), false starts that continue the opener and then leave it, an
    // opener's prefix at the end, in auto mode and one family chosen. Fails when a push
    // that leaves the opener is held.
    #[test]
    fn pushes_that_continue_a_held_opener_delay_nothing() {
        use crate::{ParseOptions, StreamParser};
        use toolcall_core::StreamEvent;
        let gemma = |name: &str| format!("<|tool_call>call:{name}{{a:1}}<tool_call|>");
        let hermes = |name: &str| {
            format!("<tool_call>{{\"name\":\"{name}\",\"arguments\":{{}}}}</tool_call>")
        };
        let texts = [
            format!("Hi. {}{}{} end", gemma("f"), gemma("g"), gemma("h")),
            format!(
                "{} then <|tool_ca and <|tool_x {} <|tool_call",
                gemma("f"),
                gemma("g")
            ),
            format!(
                "{}<|tool_call|>{}<|tool_c<tool_call|>x",
                gemma("f"),
                gemma("g")
            ),
            format!(
                "{}\n\n{} <tool_ca</tool_call> {}",
                hermes("f"),
                hermes("g"),
                hermes("h")
            ),
            format!("{}<tool_cal{} <tool_call", hermes("f"), hermes("g")),
        ];
        let auto = ParseOptions::default();
        let only = |f: &str| ParseOptions {
            format: crate::FormatSelection::Only(f.to_owned()),
            ..ParseOptions::default()
        };
        // (text bytes given out, calls started, calls finished) after each push (a call
        // finished by one push may send its arguments whole: fragments are not counted).
        fn seen(events: &[StreamEvent], at: &mut (usize, usize, usize)) {
            for e in events {
                match e {
                    StreamEvent::Text { text } => at.0 += text.len(),
                    StreamEvent::CallStarted { .. } => at.1 += 1,
                    StreamEvent::CallFinished { .. } => at.2 += 1,
                    _ => {}
                }
            }
        }
        let after_pushes = |text: &str, o: &ParseOptions, n: usize, into: bool| {
            let mut p = StreamParser::new(o.clone());
            let (mut pushed, mut at, mut out) = (0, (0, 0, 0), Vec::new());
            let mut each = Vec::new();
            for chunk in text.as_bytes().chunks(n) {
                let piece = std::str::from_utf8(chunk).unwrap();
                pushed += piece.len();
                if into {
                    p.push_into(piece, &mut out);
                    seen(&out, &mut at);
                    out.clear();
                } else {
                    seen(&p.push(piece), &mut at);
                }
                each.push((pushed, at));
            }
            each
        };
        for (text, o) in texts.iter().flat_map(|t| {
            [
                (t, auto.clone()),
                (t, only(if t.contains("<|") { "gemma4" } else { "hermes" })),
            ]
        }) {
            let whole: Vec<_> = (1..=text.len())
                .map(|end| after_pushes(&text[..end], &o, end, false).last().unwrap().1)
                .collect();
            for n in 1..=12 {
                for into in [false, true] {
                    for (pushed, at) in after_pushes(text, &o, n, into) {
                        let context =
                            format!("{text:?} in {n}-byte pushes (into: {into}), {pushed} bytes");
                        assert_eq!(at, whole[pushed - 1], "{context}");
                    }
                }
            }
        }
    }

    /// Every built-in format's example, its escapes read.
    fn every_formats_example() -> Vec<String> {
        crate::formats()
            .iter()
            .map(|f| f.example.replace("\\n", "\n").replace("\\\"", "\""))
            .collect()
    }

    // `Family::declines` lets the engine pass over a family without building its reader:
    // wherever it says so, the reader's first `advance` is `NotMine` (else results would
    // change). Every family's every opener, followed by every opener and by the start of
    // every family's example, one-shot and with more to come.
    #[test]
    fn declining_families_readers_say_not_mine() {
        let options = with_an_empty_registry();
        let (ctx, _) = options.ctx();
        let openers = crate::markup_openers();
        let examples = every_formats_example();
        let mut checked = 0;
        let mut declined = 0;
        for fam in crate::families::all() {
            for (i, open) in fam.openers().iter().enumerate() {
                let mut tails: Vec<String> = vec![String::new(), " ".into(), "x\n{".into()];
                tails.extend(openers.iter().map(|o| (*o).to_owned()));
                tails.extend(openers.iter().map(|o| o.repeat(3)));
                for e in &examples {
                    for cut in [1, 8, 24, e.len()] {
                        let mut c = cut.min(e.len());
                        while !e.is_char_boundary(c) {
                            c -= 1;
                        }
                        tails.push(e[..c].to_owned());
                        if let Some(at) = e.find(open) {
                            tails.push(e[at + open.len()..].to_owned());
                        }
                    }
                }
                for tail in &tails {
                    let region = format!("{open}{tail}");
                    for is_final in [false, true] {
                        if !fam.declines(i, &region, is_final) {
                            continue;
                        }
                        declined += 1;
                        let Some(mut reader) = fam.reader(i, &ctx) else {
                            continue;
                        };
                        let mut live = Vec::new();
                        let mut failed = FailedScans::default();
                        let mut cx = ReadCx {
                            ctx: &ctx,
                            base: 0,
                            live: &mut live,
                            streaming: true,
                            at_start: true,
                            end: ctx.reply_end,
                            failed_scan: &mut failed,
                            failed_call_scan: &mut FailedScans::default(),
                            names: &mut Default::default(),
                            kept: &mut Default::default(),
                            wake: None,
                            broken_by: None,
                        };
                        let advance = reader.advance(&region, is_final, &mut cx);
                        assert!(
                            matches!(advance, Advance::NotMine),
                            "{} declined {region:?} (final {is_final}) that its reader reads",
                            fam.id()
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(
            declined > 1000 && checked == declined,
            "{checked} of {declined}"
        );
    }

    // `Family::open_region` declines exactly where `declines` does, and the reader it
    // builds (which may skip reading a lead it already read) advances as a fresh
    // `Family::reader`'s does, one-shot and streamed: every family's every opener followed
    // by pieces of every family's example and by other openers.
    // A family's `declined_run` claims only positions that hold its opener and that it
    // declines at once whatever more input comes (the engine passes over them without
    // asking).
    #[test]
    fn declined_runs_are_declined_positions() {
        let openers = crate::markup_openers();
        let mut runs = 0;
        for fam in crate::families::all() {
            for (i, open) in fam.openers().iter().enumerate() {
                let mut tails: Vec<String> = vec![String::new(), " ".into(), "x\n{".into()];
                for o in &openers {
                    for n in [1, 2, 3, 5, 90, 300] {
                        tails.push(o.repeat(n));
                        tails.push(format!("{}all\nhi", o.repeat(n)));
                    }
                }
                for tail in &tails {
                    let region = format!("{open}{tail}");
                    if !fam.declines(i, &region, false) {
                        continue;
                    }
                    let run = fam.declined_run(i, &region);
                    assert!(run <= crate::family::MAX_DECLINED_RUN, "{} {run}", fam.id());
                    for k in 1..=run {
                        let at = region.get(k..).unwrap_or("");
                        assert!(at.starts_with(open), "{} {region:?} at {k}", fam.id());
                        // The bytes there and whatever may follow them.
                        for more in ["", "all\nhi", "get_weather\n{}", " x"] {
                            let head = format!("{at}{more}");
                            let head = head.as_str();
                            for is_final in [false, true] {
                                assert!(
                                    fam.declines(i, head, is_final),
                                    "{} {region:?}: {head:?} (final {is_final})",
                                    fam.id()
                                );
                            }
                        }
                    }
                    runs += run;
                }
            }
        }
        assert!(runs > 1000, "{runs}");
    }

    // `declines_repeated`: a family that says so declines a region of the opener followed
    // directly by itself at once, whatever follows, with more to come and at the end
    // (`open_region` makes no reader); the four `<tool_call>` families and MiniMax M3 say so.
    #[test]
    fn repeats_declined_are_declined_regions() {
        let options = with_an_empty_registry();
        let (ctx, _) = options.ctx();
        let mut families = 0;
        for fam in crate::families::all() {
            for (i, open) in fam.openers().iter().enumerate() {
                if !fam.declines_repeated(i) {
                    continue;
                }
                families += 1;
                let mut tails: Vec<String> = [
                    "",
                    " ",
                    "\n",
                    "x",
                    "{",
                    "[",
                    "{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
                    "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
                    "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
                ]
                .iter()
                .map(|t| (*t).to_owned())
                .collect();
                for n in [1, 2, 300] {
                    tails.push(open.repeat(n));
                }
                for tail in &tails {
                    let region = format!("{open}{open}{tail}");
                    for is_final in [false, true] {
                        assert!(
                            fam.declines(i, &region, is_final)
                                && fam.open_region(i, &region, is_final, &ctx).is_none(),
                            "{} {region:?} (final {is_final})",
                            fam.id()
                        );
                    }
                }
            }
        }
        assert_eq!(families, 5);
    }

    // A run of a repeated opener passed at once reads as the scan did one opener at a time:
    // the call after the run is found, one-shot and streamed, whichever family writes it.
    #[test]
    fn a_run_of_repeated_openers_keeps_the_call_after_it() {
        let options = crate::ParseOptions::default();
        let calls = [
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        ];
        let ns = "]<]minimax[>[";
        let minimax = format!(
            "{ns}<tool_call>\n{ns}<invoke name=\"get_weather\">\n{ns}<city>Paris{ns}</city>\n{ns}</invoke>\n{ns}</tool_call>"
        );
        let runs = calls
            .iter()
            .map(|c| ("<tool_call>", *c))
            .chain([("]<]minimax[>[<tool_call>", minimax.as_str())]);
        for (unit, call) in runs {
            for n in [0, 1, 2, 3, 255, 256, 257, 600, 1000] {
                let run = unit.repeat(n);
                let text = format!("a {run}{call} {run}");
                let parsed = crate::parse(&text, &options);
                assert_eq!(
                    parsed.calls.len(),
                    1,
                    "{n} {call}: {:?}",
                    parsed.diagnostics
                );
                assert_eq!(parsed.calls[0].name, "get_weather");
                assert_eq!(parsed.calls[0].origin.span.start, 2 + run.len(), "{n}");
                assert_eq!(parsed.text, format!("a {run} {run}"), "{n}");
                for size in [1, 2, 7, 64] {
                    let found = finished_in_pushes(&text, &options, size);
                    assert_eq!(found, 1, "{n} {call} streamed at {size}");
                }
            }
        }
    }

    // A repeated unit holding two declined openers (MiniMax's namespace and `<tool_call>`,
    // junk after it) is passed at once as the scan reads it opener by opener: the call after
    // the run is found at its place, one-shot and streamed; a unit whose inner opener reads
    // a call is not passed (each copy's call is found).
    #[test]
    fn units_of_two_declined_openers_keep_the_call_after_them() {
        let options = crate::ParseOptions::default();
        let ns = "]<]minimax[>[";
        let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
        for junk in ["x", " ", "1,", "\n", "x\n", "]", "<b>", "x]"] {
            let unit = format!("{ns}<tool_call>{junk}");
            for n in [0, 1, 2, 5, 40, 300] {
                let run = unit.repeat(n);
                let text = format!("a {run}{call} {run}");
                let parsed = crate::parse(&text, &options);
                assert_eq!(
                    parsed.calls.len(),
                    1,
                    "{junk:?} {n}: {:?}",
                    parsed.diagnostics
                );
                assert_eq!(
                    parsed.calls[0].origin.span.start,
                    2 + run.len(),
                    "{junk:?} {n}"
                );
                assert_eq!(parsed.text, format!("a {run} {run}"), "{junk:?} {n}");
                for size in [1, 7, 64] {
                    let found = finished_in_pushes(&text, &options, size);
                    assert_eq!(found, 1, "{junk:?} {n} streamed at {size}");
                }
            }
        }
        let unit = format!("{ns}{call}x");
        let text = unit.repeat(50);
        assert_eq!(crate::parse(&text, &options).calls.len(), 50);
        assert_eq!(finished_in_pushes(&text, &options, 64), 50);
    }

    // A run of an opener's bytes passed over at once reads as the byte-by-byte scan did:
    // the last `>>>` of a long run still opens its call, in one piece and streamed.
    #[test]
    fn a_run_of_declined_openers_keeps_the_call_after_it() {
        let options = crate::ParseOptions::default();
        for n in [0, 1, 2, 5, 255, 256, 257, 258, 259, 600, 1000] {
            let text = format!(
                "{}>>>get_weather\n{{\"city\": \"Paris\"}} after",
                ">".repeat(n)
            );
            let parsed = crate::parse(&text, &options);
            assert_eq!(parsed.calls.len(), 1, "{n}: {parsed:?}");
            assert_eq!(parsed.calls[0].origin.span.start, n, "{n}");
            assert_eq!(parsed.text, format!("{} after", ">".repeat(n)), "{n}");
            assert_eq!(finished_in_pushes(&text, &options, 7), 1, "{n} streamed");
        }
    }

    #[test]
    fn a_run_of_lt_keeps_the_call_after_it() {
        let options = crate::ParseOptions::default();
        for n in [0, 1, 2, 3, 10, 300] {
            let lts = "<".repeat(n);
            let text = format!(
                "a {lts}<tool_call>{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris\"}}}}</tool_call> {lts}"
            );
            let parsed = crate::parse(&text, &options);
            assert_eq!(parsed.calls.len(), 1, "{n}: {parsed:?}");
            assert_eq!(parsed.calls[0].origin.span.start, 2 + n, "{n}");
            assert_eq!(parsed.text, format!("a {lts} {lts}"), "{n}");
            for size in [1, 2, 7] {
                let calls = finished_in_pushes(&text, &options, size);
                assert_eq!(calls, 1, "{n} streamed at {size}");
            }
        }
    }

    #[test]
    fn declined_fenced_openers_keep_the_text_and_the_call_after_them() {
        let options = crate::ParseOptions::default();
        for n in [0, 1, 2, 7] {
            let text = format!(
                "{}`x` Action: ```json ```y```\nAction: ```json\n[{{\"tool_name\": \"get_weather\", \"parameters\": {{\"city\": \"Paris\"}}}}]\n``` after",
                "Action: ```json".repeat(n)
            );
            let parsed = crate::parse(&text, &options);
            assert_eq!(parsed.calls.len(), 1, "{n}: {parsed:?}");
            assert_eq!(
                parsed.text,
                format!(
                    "{}`x` Action: ```json ```y```\n after",
                    "Action: ```json".repeat(n)
                ),
                "{n}"
            );
            for size in [1, 3, 16] {
                let calls = finished_in_pushes(&text, &options, size);
                assert_eq!(calls, 1, "{n} streamed at {size}");
            }
        }
    }

    /// Calls finished when `text` is streamed in pushes of at least `size` bytes (whole
    /// characters).
    fn with_get_weather() -> crate::ParseOptions {
        with_tools(&["get_weather"])
    }

    /// Options whose registry holds `names`, each taking an optional `city` string.
    fn with_tools(names: &[&str]) -> crate::ParseOptions {
        let mut tools = toolcall_core::Registry::new();
        for name in names {
            let schema =
                serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}});
            let spec = toolcall_core::ToolSpec::new(*name, "", schema);
            assert!(tools.add_spec(spec).is_ok());
        }
        crate::ParseOptions {
            tools: Some(Arc::new(tools)),
            ..crate::ParseOptions::default()
        }
    }

    /// The diagnostics of `text` streamed in pushes of `size` bytes.
    fn streamed_diagnostics(
        text: &str,
        options: &crate::ParseOptions,
        size: usize,
    ) -> Vec<Diagnostic> {
        let mut stream = crate::StreamParser::new(options.clone());
        let mut events = Vec::new();
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut end = (at + size).min(bytes.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            events.extend(stream.push(&text[at..end]));
            at = end;
        }
        events.extend(stream.finish());
        events
            .into_iter()
            .filter_map(|e| match e {
                StreamEvent::Diagnostic { diagnostic } => Some(diagnostic),
                _ => None,
            })
            .collect()
    }

    // A flood of a registered name's `(` (each region opened inside the last, its scan
    // failing on a bracket or too deep, decided at its first read without a reader) or of
    // `TOOL_CALL:` headers of an unregistered tool (notes given in pieces, compared by the
    // cap without writing them) keeps the call after it, one-shot and streamed, with the
    // same notes both ways: the first 32 of a kind, written in full, then their count.
    #[test]
    fn floods_of_call_openers_keep_the_call_and_their_notes() {
        let options = with_get_weather();
        for n in [0, 1, 2, 31, 32, 33, 127, 128, 129, 300, 1000] {
            for (unit, close, call) in [
                ("get_weather(", "] ", "get_weather(city=\"Paris\") after"),
                ("get_weather(", "", "\n\nget_weather(city=\"Paris\") after"),
                (
                    "TOOL_CALL: x\n",
                    "",
                    "TOOL_CALL: get_weather\nCITY: Paris\n\nafter",
                ),
                ("TOOL_CALL: x\n", "", "get_weather(city=\"Paris\") after"),
                // A stop inside the header line (read on from its second byte), a
                // lower-case header whose line holds an opener's first byte.
                ("TOOL_CALL: a[1]\n", "", "get_weather(city=\"Paris\") after"),
                (
                    "tool_call:Action:x\n",
                    "",
                    "get_weather(city=\"Paris\") after",
                ),
            ] {
                let text = format!("{}{close}{call}", unit.repeat(n));
                let what = format!("{n} x {unit:?}{close:?}");
                let parsed = crate::parse(&text, &options);
                if close.is_empty() && unit.ends_with('(') {
                    // Nothing closes the flood's parentheses: the call is inside them, cut.
                    if n > 0 {
                        continue;
                    }
                }
                assert_eq!(parsed.calls.len(), 1, "{what}: {parsed:?}");
                assert!(parsed.text.ends_with("after"), "{what}");
                assert!(!parsed.text.contains("Paris"), "{what}");
                let left = parsed
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.contains("left as text"))
                    .count();
                assert!(left <= 2 * DIAGS_PER_KIND, "{what}: {left}");
                assert!(left >= n.min(DIAGS_PER_KIND), "{what}: {left}");
                if n > 2 * DIAGS_PER_KIND {
                    assert!(
                        parsed
                            .diagnostics
                            .iter()
                            .any(|d| d.message.contains("further diagnostics not reported")),
                        "{what}"
                    );
                }
                if unit == "TOOL_CALL: x\n" && n > 0 {
                    assert_eq!(
                        parsed.diagnostics[0].message,
                        "TOOL_CALL block for unregistered tool \"x\" left as text",
                        "{what}"
                    );
                    assert_eq!(parsed.diagnostics[0].span, 0..12, "{what}");
                }
                for size in [1, 5, 64] {
                    assert_eq!(
                        finished_in_pushes(&text, &options, size),
                        1,
                        "{what} at {size}"
                    );
                    assert_eq!(
                        streamed_diagnostics(&text, &options, size),
                        parsed.diagnostics,
                        "{what} at {size}"
                    );
                }
            }
        }
        // The notes of a short flood, written in full.
        let parsed = crate::parse(
            "get_weather(get_weather(] get_weather(city=\"Paris\")",
            &options,
        );
        let messages: Vec<_> = parsed
            .diagnostics
            .iter()
            .map(|d| (d.message.as_str(), d.span.clone()))
            .collect();
        assert_eq!(
            messages[..2],
            [
                (
                    "get_weather(...) left as text: unexpected ']' at offset 13",
                    0..25
                ),
                (
                    "get_weather(...) left as text: unexpected ']' at offset 1",
                    12..25
                ),
            ],
            "{parsed:?}"
        );
        let deep = format!("{}]", "get_weather(".repeat(130));
        let parsed = crate::parse(&deep, &options);
        assert_eq!(
            parsed.diagnostics[0].message,
            "get_weather(...) left as text: nesting deeper than 128"
        );
    }

    /// A reply's text, calls (name, arguments, span) and diagnostics.
    pub(crate) type Whole = (
        String,
        Vec<(String, serde_json::Value, Range<usize>)>,
        Vec<Diagnostic>,
    );

    /// `text` parsed with the walks and without them (`Engine::no_walk`), and streamed at
    /// 1, 7 and 64 bytes: the same text, calls and notes every way; the parse with walks.
    // Runs of `(` (after a name, after text, at line starts, inside fences, before calls
    // and a `name(` inside the run) read as byte by byte.
    #[test]
    fn paren_runs_read_as_each_byte() {
        let call = "get_weather(city=\"Paris\")";
        let tagged = r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#;
        for unit in [
            "(",
            "((x",
            "(\n",
            "x(((",
            "get_weather((",
            "(get_weather(",
            "(((",
        ] {
            for n in [1, 2, 5, 300] {
                let run = unit.repeat(n);
                for text in [
                    format!("{run}{call}"),
                    format!("a {run} b {call} {run}"),
                    format!("```\n{run}\n```\n{call}"),
                    run.clone(),
                    format!("{run}<tool_call>{tagged}</tool_call>{run}`x`{run}{tagged}"),
                ] {
                    for options in [with_get_weather(), crate::ParseOptions::default()] {
                        walk_equals_no_walk(&text, &options);
                    }
                }
            }
        }
    }

    // Floods of balanced JSON values no family claims, read without opening their regions
    // (Engine::pass_unclaimed_json), leave what their regions leave: one-shot equals the
    // regions opened (no pass) and 1-, 7- and 64-byte pushes (values cut by a push end),
    // empty or not, in lists, separated by nothing, blanks, newlines, numbers, words and
    // markup, beside values that are calls, notes or labels, and a call after the flood.
    #[test]
    fn floods_of_unclaimed_json_read_as_each_region() {
        let words = [
            "",
            " ",
            "\n",
            "x",
            "{}",
            "{\"a\":1}",
            "[{\"label\":\"l\"}]",
            "{\"name\":\"get_weather\",\"arguments\":{}}",
            "{\"name\":\"nope\",\"arguments\":{}}",
            "{\"text\":\"hi\"}",
            "<tool_call>",
            "`",
            "{\"a\":",
            "get_weather(",
        ];
        let units = [
            "{}",
            "{} ",
            "{}\n",
            "[{}]",
            "{\"a\":1}",
            "{\"name\":\"x\"}",
            "[{\"a\":1},",
            "{\"x\":{\"y\":[1,\"{\"]}}",
            "{}<TOOLCALL>1,",
            "{\"x\":",
            "{\n  \"a\": null\n}\n",
        ];
        let tail = "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}";
        floods_walk_as_each_byte(&units, &words, tail, 0x2B7E_1516_28AE_D2A6);
        // Copies alike (passed a run at a time), up to a call, an opener or a value that
        // differs, each right after the run or a few bytes into it.
        for unit in units.iter().chain(&["{}x", "[{}]\n", "{\"a\":[1,2]} "]) {
            for after in [
                tail,
                "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_call>",
                "{\"a\":2}",
                "`{}`",
            ] {
                for n in [2, 3, 40] {
                    for cut in [0, 1, 3] {
                        let mut text = unit.repeat(n);
                        text.push_str(unit.get(..cut).unwrap_or(unit));
                        text.push_str(after);
                        for options in [with_get_weather(), crate::ParseOptions::default()] {
                            walk_equals_no_walk(&text, &options);
                        }
                    }
                }
            }
        }
    }

    // A declined opener's walk reads a line whose first letter starts a line opener
    // (`>>>\nthe…`) as the scan does: ordinary where no line opener starts there, the
    // walk's end where one does (`TOOL_CALL:`, any case, after blanks too).
    #[test]
    fn declined_floods_with_line_words_read_as_each_byte() {
        let words = [
            "the",
            "to",
            "T",
            "TOOL_CALL",
            "tool_call: x",
            "Tool_Call: get_weather\nCITY: Oslo",
            " \ttool_call: get_weather",
            "x",
            "{\"a\"",
        ];
        let units = [
            ">>>\n",
            "[TOOL_CALLS]\n",
            "<tool_call>\n",
            ">>>x\n",
            ">>>\n\n",
        ];
        let tail = "\nget_weather(city=\"Paris\")";
        floods_walk_as_each_byte(&units, &words, tail, 0x7A3F_0D91_C25E_64B8);
    }

    // A newline between a `(` and the next name is read by the filler pass as the text scan
    // reads it: a line end, then the line's first byte (`(\n0(\n1(…` went back to the scan
    // at each newline, 30x prose). A line that starts with a line opener (`TOOL_CALL:`), a
    // stop or an opener at the newline is left to the scan.
    #[test]
    fn newline_fillers_read_as_each_byte() {
        let words = [
            "the",
            "TOOL_CALL: get_weather\nCITY: Oslo\n",
            "tool_call: x",
            " tool_call: x",
            "\t \rTOOL_CALL: get_weather",
            " \t",
            "Tool",
            "`",
            "```\nx\n```\n",
            "[",
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}",
            "<tool_call>",
            "get_weather",
            "7",
            "\n",
            "x y",
        ];
        let units = ["(\n", "(x\n", "get_weather(\n", "(\n\n", "(\r\n", "( \n"];
        let tail = "(\nget_weather(city=\"Paris\")";
        floods_walk_as_each_byte(&units, &words, tail, 0x5E1D_0C4A_93B7_2F61);
    }

    // Floods of a declined opener and a bracket at the next line's start (`<|start|>\n{"`:
    // Muse Glimmer's opener, once bare JSON is off; `<|start|>\n[x`, implausible), whose
    // copies differ or not, are walked by `Engine::pass_declined_walk` past each line
    // start's bracket (most of their bytes). Text, calls and every diagnostic are those
    // of the scan alone (`Engine::no_walk`), one-shot and in 1-, 7- and 64-byte pushes.
    #[test]
    fn declined_walk_passes_brackets_at_line_starts() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let units = [
            "<|start|>\n{\"",
            "<|start|>\n{\"{\"",
            "<|start|>\n[x",
            "<|start|>\n\n {\"",
        ];
        declined_walk_floods(&units, ["the", "x", "to"], 4000, call, None);
    }

    // Floods of a declined opener and a `tool_call:` line naming no tool (a blank in its
    // name, or none: `Family::line_declines`) are walked by `Engine::pass_declined_walk`
    // past each line's first byte (most of their bytes); beside them lines it must leave
    // to the scan (an unregistered tool's, with a note; one whose name ends a line).
    // Text, calls and every diagnostic are those of the scan alone (`Engine::no_walk`),
    // one-shot and in 1-, 7- and 64-byte pushes; a real call after the flood is kept.
    #[test]
    fn declined_walk_passes_declined_header_lines() {
        let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
        let units = [
            "<function name=\"\ntool_call:",
            "<function name=\"\n  TOOL_CALL: a ",
            ">>>\ntool_call:x y ",
        ];
        // (No registry: the last line, `tool_call:x` or `tool_call:0` before the call's
        // newline, is a call too.)
        declined_walk_floods(&units, ["the", "x", "to"], 3000, call, None);
        for text in [
            format!("{}\n{call}", "<function name=\"\ntool_call: x\n".repeat(50)),
            format!("{}\n{call}", "<function name=\"\ntool_call:".repeat(50)),
            format!(
                "{}\n{call}",
                ">>>x\ntool_call: get_weather\ncity: a\n".repeat(50)
            ),
        ] {
            for options in [with_get_weather(), crate::ParseOptions::default()] {
                walk_equals_no_walk(&text, &options);
            }
        }
    }

    // A declined `tool_call:` line is text up to the first byte the scan reads otherwise,
    // the name before it still the scan's: a `name(` there is a call, one-shot and
    // streamed.
    #[test]
    fn declined_header_lines_keep_the_name_before_a_paren() {
        let options = with_get_weather();
        for text in [
            "hi\ntool_call: x get_weather(city=\"Paris\")\n",
            "hi\ntool_call:x get_weather(city=\"Paris\")",
            "hi\nTOOL_CALL:  a b get_weather(\"Paris\") then\n",
        ] {
            let whole = crate::parse(text, &options);
            assert_eq!(whole.calls.len(), 1, "{text:?}: {whole:?}");
            for size in [1, 3, 64] {
                let (t, calls, diags) = streamed_whole(text, &options, size);
                assert_eq!(t, whole.text, "{text:?}: {size}");
                assert_eq!(calls.len(), 1, "{text:?}: {size}");
                assert_eq!(diags, whole.diagnostics, "{text:?}: {size}");
            }
        }
    }

    // Floods of a declined opener and a control token the scan strips between its copies
    // (`>>>x<|eom|>{w}`, `<tool_call>}<|eot|>{#}`, one at a line start: `[TOOL_CALLS]\n<|eot|> `),
    // whose copies differ or not, are walked by `Engine::pass_declined_walk` past each token
    // (most of their bytes). Text (the tokens stripped), calls and every diagnostic are
    // those of the scan alone (`Engine::no_walk`), one-shot and in 1-, 7- and 64-byte
    // pushes; a real call after the flood is kept.
    #[test]
    fn declined_walk_passes_stripped_tokens() {
        let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
        let units = [
            ">>>x<|eom|>",
            ">>>:<|end_message|>",
            "<tool_call>}<|eot|>",
            "<|eot|> <function=",
            "<|start|>]<|eot_id|>",
            "[TOOL_CALLS]\n<|eot|> ",
            "<tool_call>\"<|end|>",
            "<|eot|>x<|tool_call>",
        ];
        declined_walk_floods(&units, ["the", "x", "to\n"], 3000, call, Some(1));
    }

    // Floods of `>>>` whose copies end at the next copy (`>>>>{w}`: each `>>>>` declined
    // at its fourth `>`, the `>>>` after it at its word) are walked by
    // `Engine::pass_declined_walk`, and each copy's bytes ending at the next copy
    // (`Openers::copy_passed_found`) take that copy without a lookup, most of the copies
    // (`declined_chained`). Text, calls and diagnostics as the scan alone reads them,
    // one-shot and streamed; a real call after the flood is kept, and a `>>>` run ending in
    // a call is one.
    #[test]
    fn declined_walk_takes_the_copy_a_copy_ends_at() {
        let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>";
        let options = with_get_weather();
        for unit in [">>>>", ">>>>>", ">>>><|function_call|>", ">>>>x>"] {
            for words in [["the", "x", "to"], ["0", "1", "2"]] {
                let mut text = String::from("a ");
                for k in 0..2000 {
                    text.push_str(unit);
                    text.push_str(words[k % 3]);
                }
                text.push('\n');
                text.push_str(call);
                let with = walk_equals_no_walk(&text, &options);
                assert_eq!(with.calls.len(), 1, "{unit:?}");
                let e = parsed_engine(&text, &options);
                assert!(
                    e.declined_chained >= 1500,
                    "{unit:?}: {}",
                    e.declined_chained
                );
            }
        }
        let text = format!(
            "{}>>>>get_weather\n{{\"city\": \"Paris\"}}",
            ">>>>the".repeat(500)
        );
        let with = walk_equals_no_walk(&text, &options);
        assert_eq!(with.calls.len(), 1);
    }

    /// Floods of each of `units` (as it is, numbered, and with one of `words` a copy),
    /// `copies` copies, then a newline and `call`, with and without a registry: read with
    /// the walks as without them ([`walk_equals_no_walk`], which streams them too), with
    /// `calls` calls where given, and more than half their bytes walked by
    /// `Engine::pass_declined_walk`.
    fn declined_walk_floods(
        units: &[&str],
        words: [&str; 3],
        copies: usize,
        call: &str,
        calls: Option<usize>,
    ) {
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for unit in units {
                for suffix in ["", "{#}", "{w}"] {
                    let mut text = String::from("a ");
                    for k in 0..copies {
                        text.push_str(unit);
                        match suffix {
                            "{#}" => text.push_str(&k.to_string()),
                            "{w}" => text.push_str(words[k % 3]),
                            _ => {}
                        }
                    }
                    text.push('\n');
                    text.push_str(call);
                    let with = walk_equals_no_walk(&text, &options);
                    if let Some(n) = calls {
                        assert_eq!(with.calls.len(), n, "{unit:?}{suffix}");
                    }
                    let e = parsed_engine(&text, &options);
                    // Or passed after a stripped token (`Engine::pass_after_strip`), which
                    // takes a unit that starts after one (`<|eot|>x<|tool_call>`) first.
                    assert!(
                        (e.declined_walked + e.strip_passed) * 2 > text.len(),
                        "{unit:?}{suffix}: {} of {} bytes walked",
                        e.declined_walked,
                        text.len()
                    );
                }
            }
        }
    }

    // Floods of a closed bare JSON value that does not decode and that no family reads
    // (`{"}…\n{"}`: a key with no value, its string holding a raw newline), abandoned as
    // text with no note at every copy: the first copy's scan is kept with its bytes
    // (`FailedScans::repeats`), and the copies after it are passed at once
    // (`Engine::pass_failed_regions`, most of their bytes), left as text whole. Text, calls
    // and every diagnostic are those of the scan alone (`Engine::no_walk`), one-shot and
    // in 1-, 7- and 64-byte pushes; the flood's copies are text as they were written.
    #[test]
    fn closed_values_that_do_not_decode_repeat_as_failed_scans() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for unit in [
                "<start_function_call>\n{\"}",
                "{\"\n}",
                "x{\"\n}",
                "{\"a\"}x",
            ] {
                let flood = format!("a {}", unit.repeat(5000));
                let text = format!("{flood} {call}");
                let with = walk_equals_no_walk(&text, &options);
                // All but the last copy, whose region runs into the call.
                let copies = flood.get(..flood.len() - unit.len()).unwrap_or("");
                assert!(with.text.starts_with(copies), "{unit:?}");
                let e = parsed_engine(&text, &options);
                let before = before_broken_cut(&with, text.len());
                assert!(
                    e.bracket_passed * 2 > before,
                    "{unit:?}: {} of {before} bytes passed",
                    e.bracket_passed,
                );
            }
        }
    }

    // `Engine::walk_declined_memo` keeps only windows declined with more bytes to come: a
    // walk of failed regions (`]x{"`) whose declined openers (`>>>go{#}`, `<tool_call>go…`)
    // share their first bytes after the opener with a call that comes later in the walk
    // (`>>>get_weather\n{…}`, `<tool_call>get_weather\n<arg_key>…`: a window of them is
    // declined when asked as final, not with more to come) reads the call as the scan
    // does. Fails when the window is asked as final (a mutation session 48's tests missed).
    #[test]
    fn declined_window_memo_keeps_calls_that_share_its_window() {
        let calls = [
            (">>>", ">>>get_weather\n{\"city\": \"Paris\"}"),
            (
                "<tool_call>",
                "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
            ),
        ];
        let mut found = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (opener, call) in calls {
                for lead in ["g", "ge", "get_", "get_weat"] {
                    let mut text = String::from("a ");
                    for half in 0..2 {
                        for k in 0..200 {
                            text.push_str(&format!("]x{{\"{opener}{lead}o{k} "));
                        }
                        if half == 0 {
                            text.push_str(&format!("]x{{\"{call}\n"));
                        }
                    }
                    let with = walk_equals_no_walk(&text, &options);
                    found += usize::from(!with.calls.is_empty());
                }
            }
        }
        assert!(found >= 8, "{found}");
    }

    // Floods of declined openers and JSON's start whose copies differ (numbered, worded),
    // each copy's region failing inside the next copy: `Engine::pass_failed_walk` passes
    // them, beside regions it must leave to the scan: one with a note (a call's keys, a
    // `[name(` pythonic takes), one that closes, one cut by the end, one nested past the
    // bound, ones whose rescans run the budget out (the warning and bare JSON off are the
    // scan's), ones that fail only far on, repeated units (left to
    // `pass_failed_regions`), a line start, a fence; and random texts of those pieces.
    // Text, calls and every diagnostic are those of the scan alone (`Engine::no_walk`),
    // one-shot and in 1-, 7- and 64-byte pushes.
    #[test]
    fn failed_region_floods_walk_as_each_region() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = [
            "the",
            "weather",
            "a",
            "name",
            "arguments",
            "x",
            "\u{e9}",
            "get_weather(",
            "\n",
            "\n\n```\n",
        ];
        let walked = |text: &str, options: &crate::ParseOptions| {
            walk_equals_no_walk(text, options);
            let e = parsed_engine(text, options);
            e.regions_walked
        };
        let units = [
            ("]<]minimax[>[<tool_call>x{\"", true),
            ("]<]minimax[>[<tool_call>1,{\"", true),
            ("][TOOL_CALLS]x{\"", false),
            ("[TOOL_CALLS]x{\"", false),
            ("}<tool_call>1,[\"", true),
            ("]x{\"", true),
            // No closer: each region runs on to the end (the budget's).
            ("<tool_call>x{\"", false),
            ("<tool_call>x[\"", false),
            ("<tool_call>x{\"name\": \"", false),
            ("<tool_call>x[get_weather(", false),
            ("<tool_call>x{\"a\": 1}", false),
            ("<tool_call>x{\"a\":[", false),
            ("```\n{\"", false),
        ];
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (unit, passes) in units {
                for suffix in ["", "{#}", "{w}"] {
                    for n in [3, 300, 3000] {
                        let mut text = String::from("a ");
                        for k in 0..n {
                            text.push_str(unit);
                            match suffix {
                                "{#}" => text.push_str(&k.to_string()),
                                "{w}" => text.push_str(words[k * 7 % 8]),
                                _ => {}
                            }
                        }
                        for tail in ["", "]", "\"}", "\n"] {
                            let text = format!("{text}{tail} {call}");
                            let got = walked(&text, &options);
                            if passes && n == 3000 && !suffix.is_empty() && tail.is_empty() {
                                assert!(got > 0, "{unit:?}{suffix}: no region walked");
                            }
                        }
                    }
                }
            }
        }
        // Regions that fail only at the end (each copy's scan reads on to it): the budget.
        for unit in ["<tool_call>x{\"0 ", "{\"a\":[", "x{\"", "[\"{\"x\"]"] {
            let long = format!("{}]] {call}", unit.repeat(4000));
            walk_equals_no_walk(&long, &with_get_weather());
        }
        let pieces = [
            "<tool_call>",
            "]<]minimax[>[<tool_call>",
            "[TOOL_CALLS]",
            "x",
            "{\"",
            "[\"",
            "{",
            "[",
            "]",
            "}",
            "\"",
            "'",
            ":",
            ",",
            " ",
            "\n",
            "name",
            "\"name\": ",
            "\"arguments\": ",
            "get_weather(",
            "[[",
            "```\n",
            "```",
            call,
        ];
        let mut rng = Xorshift::new(0x6C8E_9CF5_7043_1D2B_u64);
        let mut next = |n: usize| rng.below(n);
        let mut total = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..400 {
                let mut text = String::new();
                for _ in 0..case % 80 + 2 {
                    if next(2) == 0 {
                        text.push_str(["<tool_call>x{\"", "]<]minimax[>[<tool_call>x{\""][next(2)]);
                        text.push_str(&next(1000).to_string());
                    }
                    text.push_str(pieces[next(pieces.len())]);
                }
                total += walked(&text, &options);
            }
        }
        assert!(total > 100, "{total}");
    }

    // Floods of a real opener whose region breaks at every copy (a body that holds no call,
    // JSON that fails at a byte, a body whose bytes differ or run into the next copy), with
    // suffixes and between other markup: each region kept broken again without a reader
    // (`Engine::broken_again`) reads as its reader reads it (`no_walk`), one-shot and
    // streamed, in text, calls and every diagnostic with its span; the call after the
    // flood is found (but where the junk before it takes it in).
    #[test]
    fn broken_regions_kept_again_read_as_each_region() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = [
            "the",
            "x",
            "\u{e9}",
            "\n",
            "1,{\"",
            " ",
            "get_weather(",
            "{\"a\":",
        ];
        let again = |text: &str, options: &crate::ParseOptions| {
            let with = walk_equals_no_walk(text, options);
            let e = parsed_engine(text, options);
            (with, e.broken_again)
        };
        let units = [
            ("functools[]1,{\"", true),
            ("functools[]", true),
            ("functools[{]", true),
            ("functools[1]x", true),
            ("functools[ {\"a\" 1}]", true),
            ("functools[\u{e9}]", true),
            ("functools[{\"name\": 1}]", true),
            ("<|tool_call|>[]", true),
            ("<|tool_call|> {\"a\":1}\n", true),
            ("<function_call>[]", true),
            ("<|function_call|>{]", true),
            ("<|message_sep|>function call<|role_sep|>{]", true),
            // The JSON runs into the next copy: the copies' regions differ with a suffix.
            ("functools[{\"a\":", false),
            ("functools[", false),
        ];
        let (mut total, mut calls) = (0, 0);
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (unit, kept) in units {
                for suffix in ["", "{#}", "{w}"] {
                    for n in [1, 3, 300] {
                        let mut text = String::from("a ");
                        for k in 0..n {
                            text.push_str(unit);
                            match suffix {
                                "{#}" => text.push_str(&k.to_string()),
                                "{w}" => text.push_str(words[k * 7 % words.len()]),
                                _ => {}
                            }
                        }
                        for tail in ["", "]", "\n"] {
                            let text = format!("{text}{tail} functools[{call}]");
                            let (with, got) = again(&text, &options);
                            calls += with.calls.len();
                            if kept && n == 300 {
                                assert!(got > 0, "{unit:?}{suffix}: none kept again");
                            }
                            total += got;
                        }
                    }
                }
            }
        }
        // Broken regions of several openers and shapes mixed with text and other markup.
        let pieces = [
            "functools[]",
            "functools[{]",
            "functools[1]",
            "functools[",
            "<|tool_call|>[]",
            "<|tool_call|>[{]",
            "<function_call>{}",
            "<tool_call>",
            "[TOOL_CALLS]",
            "x",
            " ",
            "\n",
            "{\"",
            "]",
            "}",
            "\"",
            ",",
            "\u{e9}",
            "```\n",
            call,
        ];
        let mut rng = Xorshift::new(0x51B2_7E04_A3C9_6D18_u64);
        let mut next = |n: usize| rng.below(n);
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..300 {
                let mut text = String::new();
                for _ in 0..case % 60 + 2 {
                    text.push_str(pieces[next(pieces.len())]);
                }
                total += again(&text, &options).1;
            }
        }
        assert!(total > 1000 && calls > 300, "{total} {calls}");
    }

    // Code-shaped floods, whose runs between stops are a few bytes, read byte by byte after
    // a short run (`Engine::skip_short`) as the block scan reads them (`no_walk`), one-shot
    // and in pushes: runs that end at a `(` after a name or not, a bracket, a newline, a
    // backtick, an opener or its first byte (`<tool_call>`, `Action:`, `functools[`), the
    // end of the input, or go on past `SHORT_SCAN` bytes.
    #[test]
    fn code_floods_read_as_each_byte() {
        let words = [
            "x",
            "the weather in Paris today",
            "<tool_call>",
            "Action: get_weather",
            "TOOL_CALL: get_weather\nCITY: Oslo",
            "tool_call: get_weather\ncity: Oslo",
            "tool_call: x",
            " \tT",
            "functools[",
            "`y`",
            "{\"a\": 1}",
            "[1]",
            "(",
            " (",
            "get_weather(city=\"Oslo\")",
            "é",
            "\n",
            "",
        ];
        let units = [
            "foo(",
            ");\n",
            "if (a[",
            "] == b) { c(); }\n",
            "f(x)",
            "`\n",
            "console.log(\"",
            "fn main() { f(",
            "x = f(y",
        ];
        let tail = "\nget_weather(city=\"Paris\")";
        floods_walk_as_each_byte(&units, &words, tail, 0x3C6E_F372_FE94_F82B);
    }

    /// [`walk_equals_no_walk`] on floods of each unit (1, 3 and 300 copies), each copy
    /// followed by its number, a drawn word, or both, then `tail`, with and without a
    /// registry.
    fn floods_walk_as_each_byte(units: &[&str], words: &[&str], tail: &str, seed: u64) {
        let mut rng = Xorshift::new(seed);
        for unit in units {
            for suffix in ["#", "w", "#w"] {
                for n in [1, 3, 300] {
                    let mut text = String::new();
                    for i in 0..n {
                        text.push_str(unit);
                        if suffix.contains('#') {
                            text.push_str(&i.to_string());
                        }
                        if suffix.contains('w') {
                            text.push_str(words[rng.below(words.len())]);
                        }
                    }
                    text.push_str(tail);
                    for options in [with_get_weather(), crate::ParseOptions::default()] {
                        walk_equals_no_walk(&text, &options);
                    }
                }
            }
        }
    }

    // Floods of closed bare JSON that no decode reads (a key string holding a raw newline
    // and running into the next copy, a word where a value goes), each copy's region
    // closed inside the next copy: `Engine::pass_failed_walk` passes them
    // (`closed_fails_without_note`), beside closed regions it must leave to the reader: a
    // call's keys (dropped with a note), a `[name(` pythonic takes, a repairable value,
    // a comment. Text, calls and every diagnostic are those of the scan alone.
    #[test]
    fn closed_broken_json_floods_walk_as_each_region() {
        let units = [
            ("x{\"\n", "}", true),
            ("</think:{\"\n", "}", true),
            ("<|channel|> commentary to={\"\n", "}", true),
            ("x{\"a\": 1 ", "}", false),
            ("x{\"name\": \"f\", \"arguments\": 1 ", "}", false),
            ("x[get_weather(", ")]", false),
            ("x{'a': 1,", "}", false),
            ("x{\"a\": 1 // ", "\n}", false),
        ];
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (head, tail, passes) in units {
                let text = failed_flood(head, tail, 2000, 0);
                walk_equals_no_walk(&text, &options);
                if passes {
                    let e = parsed_engine(&text, &options);
                    assert!(e.regions_walked > 0, "{head:?}: no region walked");
                }
            }
        }
    }

    // A failed region whose next copy's bracket starts a line (`\n{"\n{w}}`, each region's
    // string running into the next copy): the walk goes on at that bracket, as the scan's
    // bracket arm reads it before its line-start arm, instead of ending at the newline (one
    // walk of one region a copy, 62x prose). Text, calls and diagnostics are the scan's.
    #[test]
    fn failed_walks_go_on_at_a_bracket_starting_a_line() {
        failed_walks_pass(&[
            ("\n{\"\n", "}", true),
            ("\n  \n[\"\n", "]", true),
            ("\n{\"\n", "}\n", true),
        ]);
    }

    // A failed-region flood whose copies each hold a suffixed marker with no suffix
    // (`</think:{"\n{w}}`): `Engine::walk_declined` reads the marker as `open` does (its
    // first byte text), so one walk passes many copies instead of ending at each marker
    // (one walk a copy, 49.9x prose). Beside them markers that have a suffix (a reasoning
    // block or a stripped token the walk must leave to the scan). Text, calls and
    // diagnostics are the scan's.
    #[test]
    fn failed_walks_go_on_past_suffixed_markers_without_a_suffix() {
        failed_walks_pass(&[
            ("</think:{\"\n", "}", true),
            ("<think:{\"\t", "}", true),
            ("</think:1>{\"\n", "}", false),
            ("<think:2>{\"\n", "}</think:2>", false),
        ]);
    }

    /// Floods of 500 copies of each `(head, tail)` read as the scan reads them, with and
    /// without tools; where `passes`, a few walks pass all the copies.
    fn failed_walks_pass(cases: &[(&str, &str, bool)]) {
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for &(head, tail, passes) in cases {
                let text = failed_flood(head, tail, 500, 0);
                walk_equals_no_walk(&text, &options);
                if passes {
                    let e = parsed_engine(&text, &options);
                    assert!(
                        (1..20).contains(&e.regions_walked),
                        "{head:?}: {} walks",
                        e.regions_walked
                    );
                }
            }
        }
    }

    // A failed-region flood whose copies each hold a line starting with a stop the scan
    // reads as an ordinary byte (`TOOL_CALL: x\n]{w}\n{"`, each region's string running
    // into the next copy and failing at its `]`) or with an opener declined at once
    // (`<|python_tag|>]{w}{"\n`): the walk goes on past it instead of ending at each such
    // line (one region a walk, 37.8x and 38.7x prose). Beside them lines the walk must
    // leave to the scan: a backtick, a reasoning marker, a stripped token. Text, calls and
    // diagnostics are the scan's.
    #[test]
    fn failed_walks_go_on_at_a_stop_starting_a_line() {
        failed_walks_pass(&[
            ("TOOL_CALL: x\n]", "\n{\"", true),
            ("x\n}", "\n{\"", true),
            ("x\n]<", "\n{\"", true),
            ("x\n]`", "\n{\"", false),
            ("TOOL_CALL: x\n`<think>]", "\n{\"", false),
            ("TOOL_CALL: x\n<think>]", "\n{\"", false),
            ("<|python_tag|>]", "{\"\n", true),
            ("x\n<|eot|>]", "\n{\"", false),
        ]);
    }

    // Closed broken values each in a region of its own, one after another a few bytes
    // apart (`x{"a": 1 {w}}`): the walk is asked within a unit after a failed region, not
    // only inside one, and passes them (each opened a region: 61x prose). Beside them a
    // call right after a broken value, values that decode, a call's keys. Text, calls and
    // diagnostics are the scan's.
    #[test]
    fn failed_walks_start_just_after_a_failed_region() {
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (head, tail, passes) in [
                ("x{\"a\": 1 ", "}", true),
                ("x {\"a\": [1, 2] ", "}\n", true),
                ("x [1, 2 ", "]", false),
                ("x{\"a\": 1 ", "} {\"b\": 2}", false),
                ("x{\"name\": \"f\", \"arguments\": ", "}", false),
            ] {
                for every in [0, 3] {
                    let text = failed_flood(head, tail, 300, every);
                    walk_equals_no_walk(&text, &options);
                    if passes && every == 0 {
                        let e = parsed_engine(&text, &options);
                        assert!(e.regions_walked > 0, "{head:?}: no region walked");
                    }
                }
            }
        }
    }

    // A reply's bare JSON regions abandoned as text with no note are counted; at the
    // `MAX_FAILED_BARE`th bare JSON is off, with one warning, at the same region one-shot,
    // in any pushes, and with or without the passes that read such regions unopened
    // (`pass_failed_walk`: worded copies; `pass_failed_regions`: copies repeated whole;
    // `pass_brackets`: runs of `[` nested past the bound), each of which stops before it.
    // Each such region cost a flood its fixed cost however it was read (`x{"\n{w}}` 32x
    // prose, `[}{w}{"` 34x). Below the count the call after them is found.
    #[test]
    fn broken_bare_values_past_a_count_turn_bare_json_off() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let shallow = crate::ParseOptions {
            limits: crate::Limits {
                max_depth: 2,
                ..crate::Limits::default()
            },
            ..with_get_weather()
        };
        let worded = [
            ("x{\"\n", "}"),
            ("\n{\"\n", "}"),
            ("x{\"a\": 1 ", "}"),
            ("[}", "{\""),
        ];
        // Where the warning starts: at the `MAX_FAILED_BARE`th `{` (one region a copy), or
        // at the first `[` of the copy holding the `MAX_FAILED_BARE`th `[` region.
        let nth_brace = |text: &str| {
            text.match_indices('{')
                .nth(MAX_FAILED_BARE - 1)
                .map(|m| m.0)
        };
        let nth_run = 2 + MAX_FAILED_BARE / 3 * "[[[[x".len();
        for (copies, cut) in [(MAX_FAILED_BARE - 8, false), (MAX_FAILED_BARE + 40, true)] {
            let mut floods: Vec<(String, crate::ParseOptions)> = Vec::new();
            // Each flood's last strings closed, and the values after them (`"}"}`: a string
            // may run on from either of the last two copies), before the call.
            for (head, tail) in worded {
                let mut text = failed_flood(head, tail, copies, 0);
                text.truncate(text.len() - call.len() - 1);
                floods.push((format!("{text}\"}}\"}} {call}"), with_get_weather()));
            }
            for unit in ["x{\"\n}", "<tool_call>x{\"\n}"] {
                let text = format!("a {}\"}}\"}} {call}", unit.repeat(copies));
                floods.push((text, with_get_weather()));
            }
            // Three `[` regions a copy, the last read by the scan.
            let text = format!("a {}\"}}\"}} {call}", "[[[[x".repeat(copies / 3));
            floods.push((text, shallow.clone()));
            for (text, options) in &floods {
                let p = walk_equals_no_walk(text, options);
                let warned: Vec<_> = p
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.starts_with("too many broken bare JSON values"))
                    .map(|d| d.span.start)
                    .collect();
                let at = &text[..20];
                let start = match text.starts_with("a [[") {
                    true => nth_run,
                    false => nth_brace(text).unwrap_or(0),
                };
                let expected = if cut { vec![start] } else { Vec::new() };
                assert_eq!(warned, expected, "{at:?}: {:?}", p.diagnostics);
                assert_eq!(p.calls.len(), usize::from(!cut), "{at:?}");
                assert_eq!(p.text.len() + if cut { 0 } else { call.len() }, text.len());
            }
        }
    }

    // Random floods of failed regions' pieces (the passes' units, declined openers, words,
    // calls) with the broken-values count lowered to a few: bare JSON goes off at the same
    // region one-shot, in 1-, 7- and 64-byte pushes, and without the passes.
    #[test]
    fn broken_values_cut_bare_json_alike_at_any_count() {
        let pieces = [
            "x{\"\n",
            "}",
            "{\"",
            "[}",
            "\n",
            "{\"a\": 1 ",
            "<tool_call>",
            "]",
            "[[[[x",
            "x{'\n",
            "\"",
            "{",
            "[\"",
            "<|python_tag|>",
            "the",
            "\u{e9}",
            " ",
            "\u{1}",
            r#"{"name": "get_weather", "arguments": {}}"#,
        ];
        let mut rng = Xorshift::new(0x3B9A_CA07_5E1F_D2C4_u64);
        let mut next = |n: usize| rng.below(n);
        let mut cut = 0;
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..150 {
                FAILED_BARE_CAP.set(1 + case % 6);
                let unit: String = (0..2 + next(4))
                    .map(|_| pieces[next(pieces.len())])
                    .collect();
                let mut text = String::from("a ");
                for _ in 0..10 + next(100) {
                    text.push_str(&unit);
                    if next(3) == 0 {
                        text.push_str(pieces[next(pieces.len())]);
                    }
                }
                text.push_str(r#" {"name": "get_weather", "arguments": {"city": "Paris"}}"#);
                let p = walk_equals_no_walk(&text, &options);
                cut += usize::from(before_broken_cut(&p, text.len()) < text.len());
            }
        }
        FAILED_BARE_CAP.set(MAX_FAILED_BARE);
        assert!(cut > 100, "{cut}");
    }

    // Values that decode are not counted as broken (a reply printing a JSON dataset, then
    // a call): the call after thousands of them, and after broken ones below the count, is
    // found.
    #[test]
    fn a_bare_call_after_thousands_of_decoded_values_is_found() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let mut text = String::from("Data:\n");
        for k in 0..3 * MAX_FAILED_BARE {
            text.push_str(&format!("{{\"id\": {k}, \"tags\": [\"a\", {k}]}}\n"));
            if k % 4 == 0 {
                text.push_str("{\"a\": 1 x}\n");
            }
        }
        text.push_str(call);
        let p = walk_equals_no_walk(&text, &with_get_weather());
        assert_eq!(p.calls.len(), 1, "{:?}", p.diagnostics);
        assert!(
            !p.diagnostics
                .iter()
                .any(|d| d.message.starts_with("too many")),
            "{:?}",
            p.diagnostics
        );
    }

    /// Where bare JSON went off for broken values (`MAX_FAILED_BARE`) in `p`, else `len`: the
    /// passes of failed regions pass the bytes before it.
    fn before_broken_cut(p: &Parsed, len: usize) -> usize {
        p.diagnostics
            .iter()
            .find(|d| d.message.starts_with("too many broken bare JSON values"))
            .map_or(len, |d| d.span.start)
    }

    /// `copies` of `head`, a word and `tail` after "a ", a real call after every `every`-th
    /// copy (none for 0) and one at the end: the failed-region walk's floods.
    fn failed_flood(head: &str, tail: &str, copies: usize, every: usize) -> String {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = ["the", "weather", "a", "get_weather", "\u{e9}"];
        let mut text = String::from("a ");
        for k in 0..copies {
            text.push_str(head);
            text.push_str(words[k * 7 % 5]);
            text.push_str(tail);
            if every > 0 && k % every == 0 {
                text.push_str(call);
            }
        }
        text.push(' ');
        text.push_str(call);
        text
    }

    /// The copies the worded pass passed in a flood ended by a real call, once the parse
    /// is checked equal to the one without the walk.
    fn worded_passed(text: &mut String, options: &crate::ParseOptions) -> usize {
        text.push_str(" get_weather(city=\"Paris\")");
        walk_equals_no_walk(text, options);
        parsed_engine(text, options).worded_passed
    }

    /// An engine after a one-shot parse of `text` with `options` (its counters read by
    /// the flood tests).
    // Fences around one closed broken value and nothing else a sub-engine reads
    // (```` ```json\n{"a": 1 {w}}\n``` ````): after a decode that failed, each is text
    // without a sub-engine when its value's region is abandoned with no note (66x prose).
    // Beside them fences of calls, of a call's keys, of values that decode, of a list, one
    // at the reply's start. Text, calls and diagnostics are the sub-engines' (`no_walk`).
    #[test]
    fn fences_around_a_broken_value_are_text() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = ["the", "weather", "1", "get_weather", "\u{e9}"];
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (head, tail, passes) in [
                ("```json\n{\"a\": 1 ", "}\n```\n", true),
                ("```\n[1 ", "]\n```\nx ", true),
                ("```json\n{\"a\": ", "}\n```\n", false),
                (
                    "```json\n{\"name\": \"f\", \"arguments\": ",
                    "}\n```\n",
                    false,
                ),
                ("```json\n{'a': 1 ", "} x\n```\n", true),
                ("```json\n{\"a\": 1 ", "} {\n```\n", false),
                // After a broken one (`the`), one that decodes (`1`) into a call's shape
                // with no call's keys: its diagnostic is the sub-engine's.
                (
                    "```json\n{\"type\": \"tool_use\", \"name\": \"get_weather\", \"input\": ",
                    "}\n```\n",
                    false,
                ),
            ] {
                for every in [0, 4] {
                    for lead in ["", "Sure.\n"] {
                        let mut text = String::from(lead);
                        for k in 0..60 {
                            text.push_str(head);
                            text.push_str(words[k * 7 % 5]);
                            text.push_str(tail);
                            if every > 0 && k % every == 0 {
                                text.push_str(&format!("```json\n{call}\n```\n"));
                            }
                        }
                        let before = FENCES_PASSED.get();
                        walk_equals_no_walk(&text, &options);
                        let passed = FENCES_PASSED.get() - before;
                        if passes && every == 0 {
                            assert!(passed > 40, "{text:?}: {passed}");
                        }
                    }
                }
            }
        }
    }

    // A fence's failed bare JSON regions are the reply's (its sub-engine counts on from
    // the reply's count, and so does a fence passed without one,
    // `Engine::fence_value_is_text`): fences around broken values, a failure or two in
    // each, reach `MAX_FAILED_BARE` together, and bare JSON is off from there with one
    // warning, fenced and not (the calls after them are text); past it a fence whose
    // brackets open nothing makes no sub-engine. Text, calls and diagnostics are those of
    // every fence read by a sub-engine (`no_walk`), one-shot and in pushes.
    #[test]
    fn fences_count_the_replys_failed_bare_values() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
        let words = ["the", "weather", "1", "get_weather", "\u{e9}"];
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for (head, tail) in [
                ("```json\n{\"a\": 1 {", "}}\n```\n"),
                ("```json\n{\"a\": 1 ", "}\n```\n"),
                ("```\n{'a': 1 ", "} x\n```\nx "),
            ] {
                for cap in [3, 7] {
                    FAILED_BARE_CAP.set(cap);
                    let mut text = String::from("Sure.\n");
                    for k in 0..60 {
                        text.push_str(head);
                        text.push_str(words[k * 7 % 5]);
                        text.push_str(tail);
                    }
                    text.push_str(&format!("```json\n{call}\n```\nand {call}"));
                    let engines = FENCE_ENGINES.get();
                    let p = walk_equals_no_walk(&text, &options);
                    let made = FENCE_ENGINES.get() - engines;
                    let what = format!("{head:?} cap {cap}");
                    let off = p
                        .diagnostics
                        .iter()
                        .filter(|d| d.message.starts_with("too many broken bare JSON values"))
                        .count();
                    assert_eq!(off, 1, "{what}: {:?}", p.diagnostics);
                    assert!(p.calls.is_empty(), "{what}: {:?}", p.calls);
                    // (`walk_equals_no_walk` parses twice, once making one a fence, and
                    // streams three times.)
                    assert!(made < 150, "{what}: {made} sub-engines");
                }
                FAILED_BARE_CAP.set(MAX_FAILED_BARE);
            }
        }
    }

    fn parsed_engine<'t>(text: &'t str, options: &crate::ParseOptions) -> Engine<'t> {
        let (ctx, _) = options.ctx();
        let mut e = Engine::new(Arc::new(ctx));
        e.quiet = true;
        e.parse_whole(text, Parsed::default());
        e
    }

    fn walk_equals_no_walk(text: &str, options: &crate::ParseOptions) -> Parsed {
        let parse_with = |walk: bool| {
            let (ctx, _) = options.ctx();
            let mut e = Engine::new(Arc::new(ctx));
            e.quiet = true;
            e.no_walk = !walk;
            e.parse_whole(text, Parsed::default())
        };
        let (with, without) = (parse_with(true), parse_with(false));
        assert_eq!(with.text, without.text, "{text:?}");
        let key = crate::engine::tests::call_parts;
        assert_eq!(key(&with), key(&without), "{text:?}");
        assert_eq!(with.diagnostics, without.diagnostics, "{text:?}");
        for size in [1, 7, 64] {
            let (t, calls, diags) = streamed_whole(text, options, size);
            assert!(t == with.text, "{text:?}: {size}-byte pushes");
            assert_eq!(calls.len(), with.calls.len(), "{text:?}: {size}");
            assert_eq!(diags, with.diagnostics, "{text:?}: {size}");
        }
        with
    }

    /// Text, calls (name, arguments, span) and diagnostics of `text` streamed in pushes of
    /// `size` bytes (whole characters).
    /// What two parses of the same text must agree on for each call: its name, arguments and
    /// origin (ids and spans may differ between readers that reach the same call).
    pub(crate) fn call_parts(
        p: &Parsed,
    ) -> Vec<(String, serde_json::Value, toolcall_core::Origin)> {
        p.calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone(), c.origin.clone()))
            .collect()
    }

    pub(crate) fn streamed_whole(text: &str, options: &crate::ParseOptions, size: usize) -> Whole {
        let mut stream = crate::StreamParser::new(options.clone());
        let mut events = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let mut end = (at + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            events.extend(stream.push(&text[at..end]));
            at = end;
        }
        events.extend(stream.finish());
        let (mut out, mut calls, mut diags) = (String::new(), Vec::new(), Vec::new());
        for e in events {
            match e {
                StreamEvent::Text { text } => out.push_str(&text),
                StreamEvent::CallFinished { call, .. } => {
                    calls.push((call.name, call.arguments, call.origin.span))
                }
                StreamEvent::Diagnostic { diagnostic } => diags.push(diagnostic),
                _ => {}
            }
        }
        (out, calls, diags)
    }

    // Runs of one failing `name(` or of one header line decided as text passed at once
    // (Engine::pass_failed_calls, Engine::pass_text_lines) leave what reading each leaves: one-shot (where a run is passed) equals streamed a byte at a time
    // (where no run is: each opener is decided as its failing `(` arrives), and 64 bytes at
    // a time (short runs), in text, calls and every diagnostic with its span; nested calls
    // that close, and a call after a flood, are still found.
    // Runs of a unit whose first `name(` closes at once as text (`get_weather(x)`: its
    // argument no literal) or names no tool (`f()`, `f(x)\n`), passed at once
    // (Engine::pass_failed_calls), leave what reading each leaves: the same text, calls and
    // notes as read opener by opener, one-shot and streamed (where runs are short or none),
    // whatever comes before and after the run; and the runs are passed, their fillers
    // holding brackets that start no JSON and `(` after no name too (lines of code).
    #[test]
    fn runs_of_closed_and_untaken_calls_read_as_each_opener() {
        let options = with_tools(&["get_weather", "computer_use"]);
        let units = [
            "get_weather(x)",
            "get_weather(x) ",
            "get_weather(x)\n",
            "get_weather(x)1,",
            "get_weather(x)f(",
            "get_weather(x)get_weather(",
            "get_weather(x, y)",
            "get_weather(\"a\")",
            "f()",
            "f(x)",
            "f(x)\n",
            "f(x) ",
            "f(x)g(",
            "f(x)get_weather(",
            "f(\"a\")",
            "ab(1)",
            "functools(x)",
            "TOOL_CALL:(x) ",
            "x TOOL_CALL:(",
            // Fillers holding brackets that start no JSON and `(` after no name (code).
            "fn main() { f(x); }\n",
            "if (a[1] == b) { c(); }\n",
            "f(x) [y] {z} ",
            "get_weather(x) { ",
            "f(x) {\"a\": 1} ",
            "f(x) {{ ",
            "f(x) ((y) ",
        ];
        for unit in units {
            for number in [false, true] {
                for n in [1, 3, 40, 129, 400] {
                    for head in ["", "Hi. "] {
                        for tail in ["", " get_weather(city=\"Paris\")", "get_weather(x", ")"] {
                            let mut text = head.to_owned();
                            for i in 0..n {
                                text.push_str(unit);
                                if number {
                                    text.push_str(&i.to_string());
                                }
                            }
                            text.push_str(tail);
                            walk_equals_no_walk(&text, &options);
                            if n < 400 || !tail.is_empty() {
                                continue;
                            }
                            let e = parsed_engine(&text, &options);
                            // Copies whose first name closes as text or is no tool's,
                            // the others no tool's, are passed (a closed call's numbered
                            // too: the digits lie outside the calls and names; a name no
                            // tool's is looked at where `open_call` first reads it, and a
                            // numbered run breaks at each new digit); a call's are not.
                            let passed = e.calls_passed;
                            match unit {
                                "get_weather(\"a\")" => assert_eq!(passed, 0, "{unit:?}"),
                                "f(x) {\"a\": 1} " | "f(x) {{ " | "f(x) ((y) " => {}
                                "get_weather(x)get_weather(" | "f(x)get_weather(" => {}
                                _ if number && !unit.starts_with("get_weather") => {}
                                _ => assert!(passed > 300, "{unit:?} {number} {head:?}: {passed}"),
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn runs_of_failing_call_openers_read_as_each_opener() {
        let mut options = with_get_weather();
        let unit = "get_weather(";
        let mut texts = vec![
            "get_weather(get_weather(get_weather(city=\"Paris\")))".to_owned(),
            "get_weather(get_weather( get_weather(city=\"Paris\") after".to_owned(),
            format!("{}get_weather(city=\"Paris\")", "f(".repeat(300)),
        ];
        // With a filler after each `(` (a blank, a word) the run's unit is longer.
        for (unit, n) in ["get_weather( ", "get_weather(x ", "get_weather(x\t1 "]
            .into_iter()
            .flat_map(|u| [1, 4, 129, 130, 300].map(|n| (u, n)))
            .chain([1, 3, 4, 5, 8, 40, 127, 128, 129, 130, 200, 257, 600].map(|n| (unit, n)))
        {
            for tail in [
                "",
                "] get_weather(city=\"Paris\") after",
                ")",
                "x) get_weather(city=\"Paris\")",
                "get_weather(city=\"Paris\")",
                "get_weather\"(",
                "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
            ] {
                texts.push(format!("{}{tail}", unit.repeat(n)));
                texts.push(format!("x {}{tail}", unit.repeat(n)));
                texts.push(format!("{})) {}{tail}", unit.repeat(n), ")".repeat(n)));
                texts.push(format!("{}({tail}", unit.repeat(n)));
            }
        }
        // Runs of one header line decided as text (Engine::pass_text_lines).
        for unit in [
            "TOOL_CALL: x\n",
            "TOOL_CALL:x\n",
            "tool_call: get_weather_x\n",
            "TOOL_CALL: a[1]\n",
            "TOOL_CALL: <x\n",
            "TOOL_CALL: x\r\n",
        ] {
            for n in [1, 3, 4, 5, 8, 33, 40, 100, 300] {
                for tail in [
                    "",
                    "TOOL_CALL: x",
                    "TOOL_CALL: get_weather\nCITY: Paris\n\nafter",
                    "TOOL_CALL: y\nTOOL_CALL: x\n",
                    "get_weather(city=\"Paris\") after",
                    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
                    "TOOL_CALL: x\n```json\n{}\n```\n",
                ] {
                    texts.push(format!("{}{tail}", unit.repeat(n)));
                    texts.push(format!("x\n{}{tail}", unit.repeat(n)));
                }
            }
        }
        // Header floods whose copies differ (a number in each: no run, each a miss that
        // puts the next look further off), then exact copies (a run passed after the
        // misses), then a call.
        for (differ, alike) in [(1, 40), (5, 40), (40, 40), (200, 300), (40, 3)] {
            let mut text = String::new();
            for i in 0..differ {
                text.push_str(&format!("TOOL_CALL: y\nTOOL_CALL: x\n{i}"));
            }
            text.push_str(&"TOOL_CALL: x\n".repeat(alike));
            for i in 0..differ {
                text.push_str(&format!("TOOL_CALL: x\nfoo{i}\n"));
            }
            text.push_str("TOOL_CALL: get_weather\nCITY: Paris\n\nafter");
            texts.push(text);
        }
        for max_depth in [3, 128] {
            options.limits.max_depth = max_depth;
            for text in &texts {
                let parsed = crate::parse(text, &options);
                let calls: Vec<_> = parsed
                    .calls
                    .iter()
                    .map(|c| (c.name.clone(), c.arguments.clone(), c.origin.span.clone()))
                    .collect();
                for size in [1, 64] {
                    let (out, streamed_calls, diags) = streamed_whole(text, &options, size);
                    let what = format!("{max_depth} {:?} at {size}", &text[..text.len().min(80)]);
                    assert_eq!(out, parsed.text, "{what}");
                    assert_eq!(streamed_calls, calls, "{what}");
                    assert_eq!(diags, parsed.diagnostics, "{what}");
                }
            }
        }
        // Nested calls that close are one region (its arguments no literals); a call after
        // an unclosed flood is found.
        options.limits.max_depth = 128;
        let parsed = crate::parse(
            "get_weather(get_weather(get_weather(city=\"Paris\")))",
            &options,
        );
        assert_eq!(parsed.diagnostics.len(), 1, "{parsed:?}");
        assert!(parsed.diagnostics[0].message.contains("is not a literal"));
        for n in [0, 1, 129, 1000] {
            let text = format!("{}] get_weather(city=\"Paris\") after", unit.repeat(n));
            let parsed = crate::parse(&text, &options);
            assert_eq!(parsed.calls.len(), 1, "{n}: {parsed:?}");
            assert_eq!(
                parsed.calls[0].arguments,
                serde_json::json!({"city": "Paris"})
            );
        }
    }

    /// A reply past `max_calls`: the first call past it is dropped with one error and the
    /// rest of the reply, calls of any family included, is text, one-shot and streamed in
    /// pushes of any size (read on, each later call was built, dropped and noted).
    #[test]
    fn the_rest_of_a_reply_past_max_calls_is_text() {
        let mut options = with_get_weather();
        options.limits.max_calls = 3;
        let call = "[get_weather()]";
        let rest = format!(
            "{} then <tool_call>{{\"name\": \"get_weather\", \"arguments\": {{}}}}</tool_call> get_weather() end",
            call.repeat(2)
        );
        let text = format!("a {}{rest}", call.repeat(4));
        let whole = crate::parse(&text, &options);
        assert_eq!(whole.calls.len(), 3);
        let errors: Vec<_> = whole
            .diagnostics
            .iter()
            .filter(|d| d.level == Level::Error)
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains("passed through as text"));
        assert_eq!(whole.text, format!("a {rest}"));
        for size in 1..=9 {
            let mut stream = crate::StreamParser::new(options.clone());
            let mut events = Vec::new();
            let mut piece = String::new();
            for c in text.chars() {
                piece.push(c);
                if piece.len() >= size {
                    events.extend(stream.push(&piece));
                    piece.clear();
                }
            }
            events.extend(stream.push(&piece));
            events.extend(stream.finish());
            let mut streamed_text = String::new();
            let mut calls = 0;
            let mut messages = Vec::new();
            for e in events {
                match e {
                    StreamEvent::Text { text } => streamed_text.push_str(&text),
                    StreamEvent::CallFinished { .. } => calls += 1,
                    StreamEvent::Diagnostic { diagnostic } => messages.push(diagnostic.message),
                    _ => {}
                }
            }
            assert_eq!(streamed_text, whole.text, "pushes of {size}");
            assert_eq!(calls, 3, "pushes of {size}");
            let want: Vec<_> = whole
                .diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect();
            assert_eq!(messages, want, "pushes of {size}");
        }
    }

    /// Past `max_failed_calls` failed call attempts (error notes, reported or not), the
    /// region that failed last is read to its end and the rest of the reply is text,
    /// calls included, with one error; one-shot and streamed at any push size alike (text,
    /// calls, every diagnostic and span), whether the failures are read one by one or
    /// passed as runs (the passes never count a failure past the bound: with 100 allowed,
    /// 68 of them beyond the 32 notes a kind reports, the count of those not reported is
    /// the same at any chunking). Within the bound the call after the flood runs.
    #[test]
    fn a_reply_past_max_failed_calls_is_text() {
        let options = with_tools(&["get_weather", "computer_use"]);
        let units: [fn(usize) -> String; 8] = [
            |n| format!("get_weather(x{n}) "),
            // Passed as runs (`Engine::pass_failed_calls`, `Engine::pass_worded_calls`).
            |_| "get_weather(x) ".to_string(),
            |n| {
                let words = ["the", "weather", "a", "city", "of"];
                format!("get_weather(computer_use({{\"{}", words[n * 7 % 11 % 5])
            },
            |n| format!("computer_use(<\"{n})"),
            |n| format!("<tool_call>{{\"a\":w{n}}}</tool_call>\n"),
            |n| format!("[TOOL_CALLS]{{\"\n{n}}}"),
            |n| format!("<function=}}computer_use(x{n}) "),
            |_| "<tool_call>{\"a\":oops}</tool_call>\n".to_string(),
        ];
        let tail =
            "then <tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call> done";
        for unit in units {
            // (An even count: `computer_use(<"0)` reads two copies a region.)
            for (limit, copies) in [(5, 24), (100, 404)] {
                let flood: String = (0..copies).map(unit).collect();
                let text = format!("a {flood}{tail}");
                let mut options = options.clone();
                let unclosed = unit(0).contains("({");
                if unclosed && limit == 5 {
                    continue;
                }
                options.limits.max_failed_calls = limit;
                let whole = crate::parse(&text, &options);
                assert!(whole.calls.is_empty(), "{:?}: {:?}", unit(0), whole.calls);
                // (An unclosed call reads to the end: `get_weather(computer_use({"the…`, whose
                // copies past the depth bound fail one by one, the first 128 in one region.)
                assert!(
                    unclosed || whole.text.ends_with(tail),
                    "{:?}: {:?}",
                    unit(0),
                    whole.text
                );
                let stops: Vec<_> = whole
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.contains("failed call attempts"))
                    .collect();
                assert_eq!(stops.len(), 1, "{:?}: {:?}", unit(0), whole.diagnostics);
                // It is placed where the failure past the bound ended (all reported here).
                let last = whole.diagnostics.iter().rfind(|d| {
                    d.level == Level::Error && !d.message.contains("failed call attempts")
                });
                if limit == 5 {
                    let end = last.map(|d| d.span.end);
                    assert_eq!(Some(stops[0].span.start), end, "{:?}", unit(0));
                }
                // Every failure up to the one past the bound is counted, reported or not.
                let reported = whole
                    .diagnostics
                    .iter()
                    .filter(|d| d.level == Level::Error)
                    .count()
                    - 1;
                let further: usize = whole
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.contains("further diagnostics"))
                    .filter_map(|d| d.message.split(' ').next()?.parse::<usize>().ok())
                    .sum();
                assert_eq!(
                    reported + further,
                    limit + 1,
                    "{:?}: {:?}",
                    unit(0),
                    whole.diagnostics
                );
                let spans: Vec<_> = whole.calls.iter().map(|c| c.origin.span.clone()).collect();
                if limit == 100 && unit(0) == "get_weather(x) " {
                    let e = parsed_engine(&text, &options);
                    assert!(e.calls_passed > 0, "{:?}", unit(0));
                }
                for size in [1, 2, 5, 13, 64, 4096] {
                    let (t, calls, diags) = streamed_whole(&text, &options, size);
                    assert_eq!(t, whole.text, "{:?}: {size}-byte pushes", unit(0));
                    assert_eq!(calls.len(), spans.len(), "{:?}: {size}", unit(0));
                    assert_eq!(diags, whole.diagnostics, "{:?}: {size}", unit(0));
                }
                // Within the bound, the reply is read as with no bound: the call after the
                // flood is the reply's (but after an unclosed one, which reads to the end).
                options.limits.max_failed_calls = 2 * copies;
                let within = crate::parse(&text, &options);
                options.limits.max_failed_calls = usize::MAX;
                let free = crate::parse(&text, &options);
                assert_eq!(within.text, free.text, "{:?}", unit(0));
                assert_eq!(call_parts(&within), call_parts(&free), "{:?}", unit(0));
                assert_eq!(within.diagnostics, free.diagnostics, "{:?}", unit(0));
                assert_eq!(within.calls.len(), usize::from(!unclosed), "{:?}", unit(0));
            }
        }
    }

    /// A `TOOL_CALL:` header naming no registered tool (an info note, left as text) is a
    /// failed call attempt (`Engine::header_text`): past `max_failed_calls` of them the
    /// rest of the reply is text, the call after the flood included, with one error placed
    /// at the end of the header past the bound; one-shot and streamed alike, whether the
    /// headers are read one by one or passed as runs (`Engine::pass_text_lines`: a header
    /// and a plain line), and with the bound not reached, as with no bound.
    #[test]
    fn headers_of_unregistered_tools_are_failed_call_attempts() {
        let options = with_get_weather();
        let units: [fn(usize) -> String; 5] = [
            |_| "TOOL_CALL: x\n".to_string(),
            |_| "TOOL_CALL: x\nfoo\n".to_string(),
            |n| format!("TOOL_CALL: x{n}\n"),
            |_| "TOOL_CALL: x\nx{\"\n".to_string(),
            |n| format!("TOOL_CALL: x\n[\"{n}{{\"\n"),
        ];
        let tail = "TOOL_CALL: get_weather\nCITY: Paris\n\ndone";
        for unit in units {
            for (limit, copies) in [(5, 24), (100, 404)] {
                let flood: String = (0..copies).map(unit).collect();
                let text = format!("a\n{flood}{tail}");
                let mut options = options.clone();
                options.limits.max_failed_calls = limit;
                let whole = crate::parse(&text, &options);
                let what = format!("{:?} x {copies}", unit(0));
                assert!(whole.calls.is_empty(), "{what}: {:?}", whole.calls);
                assert!(whole.text.ends_with(tail), "{what}");
                let stops: Vec<_> = whole
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.contains("failed call attempts"))
                    .collect();
                assert_eq!(stops.len(), 1, "{what}: {:?}", whole.diagnostics);
                let notes = || {
                    whole
                        .diagnostics
                        .iter()
                        .filter(|d| d.message.contains("unregistered tool"))
                };
                if limit == 5 {
                    // All reported: the stop is at the end of the sixth header.
                    assert_eq!(notes().count(), limit + 1, "{what}");
                    let end = notes().next_back().map(|d| d.span.end);
                    assert_eq!(Some(stops[0].span.start), end, "{what}");
                }
                let further: usize = whole
                    .diagnostics
                    .iter()
                    .filter(|d| d.message.contains("further diagnostics"))
                    .filter_map(|d| d.message.split(' ').next()?.parse::<usize>().ok())
                    .sum();
                assert_eq!(notes().count() + further, limit + 1, "{what}");
                for size in [1, 2, 5, 13, 64, 4096] {
                    let (t, calls, diags) = streamed_whole(&text, &options, size);
                    assert_eq!(t, whole.text, "{what}: {size}-byte pushes");
                    assert!(calls.is_empty(), "{what}: {size}");
                    assert_eq!(diags, whole.diagnostics, "{what}: {size}");
                }
                options.limits.max_failed_calls = copies + 1;
                let within = crate::parse(&text, &options);
                options.limits.max_failed_calls = usize::MAX;
                let free = crate::parse(&text, &options);
                assert_eq!(within.text, free.text, "{what}");
                assert_eq!(call_parts(&within), call_parts(&free), "{what}");
                assert_eq!(within.diagnostics, free.diagnostics, "{what}");
                assert_eq!(within.calls.len(), 1, "{what}");
            }
        }
    }

    fn finished_in_pushes(text: &str, options: &crate::ParseOptions, size: usize) -> usize {
        let mut stream = crate::StreamParser::new(options.clone());
        let mut calls = 0;
        let mut piece = String::new();
        for c in text.chars() {
            piece.push(c);
            if piece.len() >= size {
                calls += count_finished(&stream.push(&piece));
                piece.clear();
            }
        }
        calls += count_finished(&stream.push(&piece));
        calls + count_finished(&stream.finish())
    }

    fn count_finished(events: &[StreamEvent]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::CallFinished { .. }))
            .count()
    }

    /// A call announced with its name as the region's own bytes keeps where they are
    /// (absolute offsets, read back in the engine's buffer wherever it starts); a name that
    /// is not in the region is copied.
    #[test]
    fn a_name_announced_in_place_is_read_where_the_region_wrote_it() {
        let (ctx, _) = with_an_empty_registry().ctx();
        let mut live = Vec::new();
        let mut cx = ReadCx {
            ctx: &ctx,
            base: 100,
            live: &mut live,
            streaming: true,
            at_start: true,
            end: ctx.reply_end,
            failed_scan: &mut FailedScans::default(),
            failed_call_scan: &mut FailedScans::default(),
            names: &mut Default::default(),
            kept: &mut Default::default(),
            wake: None,
            broken_by: None,
        };
        let region = "<|tool_call>call:get_weather{";
        cx.start_call_in(region, &region[17..28]);
        cx.start_call_in(region, "get_weather");
        let names: Vec<&LiveName> = live
            .iter()
            .map(|e| match e {
                LiveEvent::Started { name, id: None } => name,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(names[0], &LiveName::At(117..128));
        assert_eq!(names[1], &LiveName::Owned("get_weather".into()));
        // The buffer holds the region from absolute offset 100, starting at 60 or at 100.
        let buf = format!("{}{region}", "x".repeat(40));
        for (buf, base) in [(buf.as_str(), 60), (region, 100)] {
            assert_eq!(names[0].get(buf, base), "get_weather");
            assert_eq!(names[1].get(buf, base), "get_weather");
        }
        let mut quiet = Vec::new();
        let mut cx = ReadCx {
            ctx: &ctx,
            base: 0,
            live: &mut quiet,
            streaming: false,
            at_start: true,
            end: ctx.reply_end,
            failed_scan: &mut FailedScans::default(),
            failed_call_scan: &mut FailedScans::default(),
            names: &mut Default::default(),
            kept: &mut Default::default(),
            wake: None,
            broken_by: None,
        };
        cx.start_call_in(region, &region[17..28]);
        assert!(quiet.is_empty());
    }

    #[test]
    fn opened_readers_read_as_fresh_ones() {
        let options = with_an_empty_registry();
        let (ctx, _) = options.ctx();
        let openers = crate::markup_openers();
        let examples = every_formats_example();
        // Opened before the end (`opened_final` false): read with more to come, then at the
        // end, as the engine reads a region; opened at the end: read at the end.
        let advance = |reader: &mut Box<dyn RegionReader>,
                       region: &str,
                       opened_final: bool,
                       streaming: bool| {
            let mut live = Vec::new();
            let mut failed = FailedScans::default();
            let mut cx = ReadCx {
                ctx: &ctx,
                base: 0,
                live: &mut live,
                streaming,
                at_start: true,
                end: ctx.reply_end,
                failed_scan: &mut failed,
                failed_call_scan: &mut FailedScans::default(),
                names: &mut Default::default(),
                kept: &mut Default::default(),
                wake: None,
                broken_by: None,
            };
            let first = if opened_final {
                String::new()
            } else {
                format!("{:?}", reader.advance(region, false, &mut cx))
            };
            let last = format!("{:?}", reader.advance(region, true, &mut cx));
            format!("{first} / {last} / {live:?}")
        };
        let (mut opened, mut mine, mut removed) = (0, 0, 0);
        for fam in crate::families::all() {
            for (i, open) in fam.openers().iter().enumerate() {
                let mut tails: Vec<String> = vec![String::new(), " ".into()];
                tails.extend(openers.iter().map(|o| (*o).to_owned()));
                for e in &examples {
                    if let Some(at) = e.find(open) {
                        let rest = &e[at + open.len()..];
                        tails.push(rest.to_owned());
                        tails.extend(
                            rest.char_indices()
                                .step_by(7)
                                .map(|(c, _)| rest[..c].to_owned()),
                        );
                    }
                }
                for tail in &tails {
                    let region = format!("{open}{tail}");
                    for is_final in [false, true] {
                        let declined = fam.declines(i, &region, is_final);
                        // The engine asks through the opener table's resolved `Opening`:
                        // the same verdict, and a reader exactly where the family has one.
                        let by = crate::openers::ReadBy::new(*fam, i);
                        assert_eq!(by.declines(&region, is_final), declined, "{}", fam.id());
                        assert_eq!(
                            by.open_region(&region, is_final, &ctx).map(|r| r.is_some()),
                            fam.open_region(i, &region, is_final, &ctx)
                                .map(|r| r.is_some()),
                            "{} {region:?}",
                            fam.id()
                        );
                        let Some(reader) = fam.open_region(i, &region, is_final, &ctx) else {
                            assert!(declined, "{} opened {region:?} it declines", fam.id());
                            continue;
                        };
                        assert!(!declined, "{} declined {region:?} it opens", fam.id());
                        let Some(mut reader) = reader else {
                            assert!(fam.reader(i, &ctx).is_none(), "{}", fam.id());
                            continue;
                        };
                        opened += 1;
                        let Some(mut fresh) = fam.reader(i, &ctx) else {
                            panic!("{} opened {region:?} without a reader", fam.id());
                        };
                        // Removed without a reader (`Family::removes`): what a fresh one
                        // answers at its first step, an empty outcome that long.
                        if let Some(n) = by.removes(&region, is_final) {
                            removed += 1;
                            let Some(mut r) = fam.reader(i, &ctx) else {
                                panic!("{} removes {region:?} without a reader", fam.id());
                            };
                            let mut live = Vec::new();
                            let mut cx = ReadCx {
                                ctx: &ctx,
                                base: 0,
                                live: &mut live,
                                streaming: true,
                                at_start: false,
                                end: ctx.reply_end,
                                failed_scan: &mut FailedScans::default(),
                                failed_call_scan: &mut FailedScans::default(),
                                names: &mut Default::default(),
                                kept: &mut Default::default(),
                                wake: None,
                                broken_by: None,
                            };
                            match r.advance(&region, is_final, &mut cx) {
                                Advance::Done { end, outcome } => assert!(
                                    end == n
                                        && outcome.drafts.is_empty()
                                        && outcome.diagnostics.is_empty()
                                        && outcome.text.is_empty(),
                                    "{} removes {n} of {region:?}, its reader {end}",
                                    fam.id()
                                ),
                                other => {
                                    panic!("{} removes {region:?}, its reader: {other:?}", fam.id())
                                }
                            }
                            assert!(live.is_empty(), "{} {region:?}", fam.id());
                        }
                        let one_shot = advance(&mut reader, &region, is_final, false);
                        mine += usize::from(one_shot.contains("Done"));
                        assert_eq!(
                            one_shot,
                            advance(&mut fresh, &region, is_final, false),
                            "{} one-shot {region:?} (opened final {is_final})",
                            fam.id()
                        );
                        let (Some(mut reader), Some(mut fresh)) = (
                            fam.open_region(i, &region, is_final, &ctx).flatten(),
                            fam.reader(i, &ctx),
                        ) else {
                            continue;
                        };
                        assert_eq!(
                            advance(&mut reader, &region, is_final, true),
                            advance(&mut fresh, &region, is_final, true),
                            "{} streamed {region:?} (opened final {is_final})",
                            fam.id()
                        );
                    }
                }
            }
        }
        assert!(
            opened > 1000 && mine > 100 && removed > 10,
            "{opened} opened, {mine} read one-shot, {removed} removed without a reader"
        );
    }

    /// The byte-by-byte rule `skip_plain` replaces, for bytes that are not in `STOP`.
    fn reference(bytes: &[u8], from: usize, mut ident: Option<usize>) -> Option<usize> {
        for (pos, &b) in bytes.iter().enumerate().skip(from) {
            if is_name_byte(b) {
                match ident {
                    None => ident = Some(pos),
                    Some(s) if pos - s > 256 => ident = Some(pos),
                    Some(_) => {}
                }
            } else {
                ident = None;
            }
        }
        ident
    }

    // A repeated message reuses its kind without recomputing it: the caps come out as if
    // each message's kind were worked out, whatever the interleaving and levels.
    #[test]
    fn repeated_messages_are_capped_as_their_kind() {
        let messages = [
            (Level::Error, "f(...) left as text: nesting deeper than 128"),
            (Level::Error, "g(...) left as text: nesting deeper than 128"),
            (
                Level::Warning,
                "f(...) left as text: nesting deeper than 128",
            ),
            (Level::Error, "call \"a\" dropped at 1"),
            (Level::Error, "call \"b\" dropped at 22"),
        ];
        let mut seed = 7u64;
        let mut memo = DiagCap::default();
        let mut plain = DiagCap::default();
        for _ in 0..400 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Runs of one message, then another.
            let (level, message) = messages[(seed >> 60) as usize % messages.len()];
            for _ in 0..(seed >> 56) % 4 {
                let d = Diagnostic::new(level, message, 0..0);
                let mut kind = plain.start_kind(level);
                DiagCap::kind_into(message, &mut kind, 1);
                assert_eq!(memo.admit(&d), plain.admit_kind(kind), "{message}");
            }
        }
        assert_eq!(memo.suppressed, plain.suppressed);
        assert!(memo.suppressed > 0);
        // Notes alternating between a few messages (the remembered recent ones), and
        // between more kinds than there are slots (a remembered slot is the shared last
        // one), written or in pieces: each counted where working its kind out counts it.
        let words: Vec<String> = (0..80u8)
            .map(|i| format!("{}{}", char::from(b'a' + i % 26), char::from(b'a' + i / 26)))
            .collect();
        let region = "get_weather computer_use x";
        let pieces = [0..11, 12..24, 25..26];
        let mut memo = DiagCap::default();
        let mut plain = DiagCap::default();
        for round in 0..3000usize {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (seed >> 33) as usize;
            let level = if r.is_multiple_of(7) {
                Level::Warning
            } else {
                Level::Error
            };
            let (admitted, message) = if r.is_multiple_of(3) {
                let p = Pieces {
                    head: "",
                    slice: pieces[r % pieces.len()].clone(),
                    tail: "(...) left as text: ",
                    error: Some(crate::scanner::ScanError::TooDeep(128)),
                };
                let mut m = String::new();
                p.write(region, &mut m);
                (memo.admit_pieces(level, &p, region), m)
            } else {
                // A few words in turn early on, then any of more kinds than slots.
                let w = if round < 1500 { r % 5 } else { r % words.len() };
                let m = format!("tool {} left as text", words[w]);
                (memo.admit(&Diagnostic::new(level, m.as_str(), 0..0)), m)
            };
            let mut kind = plain.start_kind(level);
            DiagCap::kind_into(&message, &mut kind, 1);
            assert_eq!(admitted, plain.admit_kind(kind), "{round}: {message}");
        }
        assert_eq!(memo.suppressed, plain.suppressed);
        assert_eq!(memo.kinds.len(), MAX_KINDS);
    }

    // A broken block's malformed-JSON message, kept unwritten while the cap counts a run
    // of it ([`DiagCap::admit_malformed`]), is admitted or dropped exactly as its written
    // message is, whatever messages, pieces and other failures come between.
    #[test]
    fn malformed_failures_are_capped_as_their_written_messages() {
        let bodies = [
            "{\"Action:\n",
            "{\"a\"x",
            "{\"a",
            "{\"b\"",
            "{\"a\" 1",
            "[1,,]",
            "{\"a\": tru}",
        ];
        let failure = |b: &str| match crate::repair::decode_or_failure(b) {
            Err(f) => f,
            Ok(_) => panic!("{b:?} decodes"),
        };
        let region = "get_weather x";
        let mut seed = 11u64;
        let mut memo = DiagCap::default();
        let mut plain = DiagCap::default();
        let mut reported = 0;
        for round in 0..4000usize {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (seed >> 33) as usize;
            let (admitted, level, message) = match r % 8 {
                // Another note in pieces, or a written message, between runs of failures.
                0 => {
                    let p = Pieces {
                        head: "",
                        slice: 0..11,
                        tail: "(...) left as text: ",
                        error: Some(crate::scanner::ScanError::TooDeep(128)),
                    };
                    let mut m = String::new();
                    p.write(region, &mut m);
                    (memo.admit_pieces(Level::Error, &p, region), Level::Error, m)
                }
                1 => {
                    let m = format!("tool {} left as text", r % 3);
                    let level = if r % 16 == 1 {
                        Level::Warning
                    } else {
                        Level::Error
                    };
                    (
                        memo.admit(&Diagnostic::new(level, m.as_str(), 0..0)),
                        level,
                        m,
                    )
                }
                _ => {
                    let b = bodies[(r >> 4) % bodies.len()];
                    let f = failure(b);
                    let m = f.message_after(MALFORMED);
                    // The written message is one the flood writes.
                    assert_eq!(m, format!("{MALFORMED}{}", failure(b).message_after("")));
                    (memo.admit_malformed(&f), Level::Error, m)
                }
            };
            let mut kind = plain.start_kind(level);
            DiagCap::kind_into(&message, &mut kind, 1);
            assert_eq!(admitted, plain.admit_kind(kind), "{round}: {message}");
            reported += usize::from(admitted);
        }
        assert_eq!(memo.suppressed, plain.suppressed);
        assert!(memo.suppressed > 3000 && reported > 0);
    }

    // The found-call fast path computes the same per-kind cap key as the whole message.
    #[test]
    fn found_call_kind_from_pieces_equals_the_message_kind() {
        for format in [
            "hermes",
            "functionary_v3_1",
            "deepseek_v3_1",
            "json",
            "a1b22_3",
            "9x",
            &"f.-:9".repeat(6),
        ] {
            for name in ["get_weather", "t1", "a.b:c-d_9", &"x".repeat(64)] {
                let message = format!("found {format} call to {name:?}");
                let mut whole = String::from("i");
                DiagCap::kind_into(&message, &mut whole, 1);
                let mut pieces = String::from("i");
                for piece in ["found ", format, " call to \"\""] {
                    DiagCap::kind_into(piece, &mut pieces, 1);
                }
                assert_eq!(whole, pieces, "{message}");
                let mut direct = String::from("i");
                DiagCap::found_kind_into(format, &mut direct);
                assert_eq!(whole, direct, "{message}");
                // The kind compared without being written.
                assert!(found_kind_is(format, &whole), "{message}");
                for other in ["ifound  call to \"\"", "i", &format!("{whole}x")] {
                    assert!(!found_kind_is(format, other), "{message} / {other}");
                }
                let mut cut = whole.clone();
                cut.remove(7);
                assert!(!found_kind_is(format, &cut), "{message}");
                assert_eq!(found_message(format, name), message);
            }
        }
    }

    // Found-call kinds kept as formats compare as their texts: digits blanked alike, and
    // equal to the kind worked out from a whole message.
    #[test]
    fn found_kinds_compare_as_their_text() {
        assert!(Kind::Found("a1b").same(&Kind::Found("a22b")));
        assert!(!Kind::Found("a1b").same(&Kind::Found("ab")));
        let mut whole = String::from("i");
        DiagCap::kind_into(r#"found hermes call to "x""#, &mut whole, 1);
        assert!(Kind::Found("hermes").same(&Kind::Text(whole.clone())));
        assert!(Kind::Text(whole).same(&Kind::Found("hermes")));
        assert!(!Kind::Found("hermes").same(&Kind::Text("ifound json call to \"\"".into())));
        // A note of a plain format then one written whole share a slot.
        let mut cap = DiagCap::default();
        let slot = cap.found_slot("hermes");
        let mut kind = cap.start_kind(Level::Info);
        DiagCap::kind_into(r#"found hermes call to "a b""#, &mut kind, 1);
        assert_eq!(cap.slot(Kind::Text(kind)), slot);
        assert_eq!(cap.kinds.len(), 1);
    }

    // `holds_no_nested_region` decides a content of several brackets as soon as it cannot
    // pass (a closer after the first bracket, or brackets times the bytes from it
    // over the rescan budget): the answer is the rule's over the whole content, for contents
    // on both sides of the budget and closers before, between and after the brackets.
    #[test]
    fn several_brackets_decide_as_the_whole_content_rule() {
        let (ctx, _) = crate::ParseOptions::default().ctx();
        let whole_rule = |content: &[u8]| {
            let first = content.iter().position(|&b| matches!(b, b'[' | b'{'));
            let brackets = content
                .iter()
                .filter(|&&b| matches!(b, b'[' | b'{'))
                .count();
            let region = &content[first.unwrap_or(0)..];
            memchr::memchr2(b']', b'}', region).is_none()
                && brackets.saturating_mul(region.len()) <= RESCAN_BASE
                && !crate::families::bare_json::looks_like_call(region)
        };
        let mut checked = (0, 0);
        // One line after a word (no line-start opener, no `(`): what is left to decide is
        // the brackets' rule.
        for unit in [
            "{\"```json ",
            "{\"a ",
            "[{ ",
            "{a} {",
            "] {{ ",
            "{ ]",
            " {b",
        ] {
            for copies in [1, 2, 3, 100, 3000, 9000] {
                for tail in ["", "}", " end", "{\"name\": \"x\", \"arguments\": "] {
                    let content = format!("x {}{tail}", unit.repeat(copies));
                    let bytes = content.as_bytes();
                    let brackets = bytes.iter().filter(|&&b| matches!(b, b'[' | b'{')).count();
                    if brackets < 2 {
                        continue;
                    }
                    let got = holds_no_nested_region(bytes, &ctx.openers, ctx.limits.max_depth);
                    assert_eq!(got, whole_rule(bytes), "{unit:?} x {copies} + {tail:?}");
                    if got {
                        checked.0 += 1;
                    } else {
                        checked.1 += 1;
                    }
                }
            }
        }
        // Both answers come up (passed and not).
        assert!(checked.0 > 3 && checked.1 > 10, "{checked:?}");
    }

    // `holds_no_nested_region` notes a call's keys as it walks the content (not a second
    // walk of `looks_like_call`): the keys that count are those from the first bracket on,
    // with each key's quotes (`tools`, `command`, `session_id` only in double quotes), as
    // `looks_like_call` of the bytes from the first bracket finds them.
    #[test]
    fn call_keys_count_from_the_first_bracket() {
        let (ctx, _) = crate::ParseOptions::default().ctx();
        for (content, passed) in [
            ("x \"name\" 'arguments' {\"a", true),
            ("x {\"name\": 'arguments' ", false),
            ("x {'name' 'parameters'", false),
            ("x 'name' {'parameters'", true),
            ("x {'tools' ", true),
            ("x {\"tools\" ", false),
            ("x {\"tools' ", true),
            ("x {\"command\" \"session_id\"", false),
            ("x {\"command\" 'session_id'", true),
            ("x {\"nam\" \"arguments\"", true),
            ("x {\"name\"\n\"arguments\"", false),
            ("x [\"name\" {\"arguments\" {", false),
            ("x [\"x\" {\"y\" {", true),
            ("x {\"x\"} \"name\" \"arguments\"", false),
        ] {
            let bytes = content.as_bytes();
            let first = bytes.iter().position(|&b| matches!(b, b'[' | b'{'));
            let region = first.and_then(|k| bytes.get(k..)).unwrap_or(&[]);
            let keys = crate::families::bare_json::looks_like_call(region);
            let got = holds_no_nested_region(bytes, &ctx.openers, ctx.limits.max_depth);
            assert_eq!(got, passed, "{content:?}");
            // Where the keys decide it (no closer, so no scan closes).
            if !bytes.iter().any(|&b| matches!(b, b']' | b'}')) {
                assert_eq!(got, !keys, "{content:?}");
            }
        }
    }

    // `fence_kind` (no trim of a visible ASCII info string, one loop per list) names what
    // the lists name, trimmed and ignoring ASCII case: names, their cases and cuts,
    // ASCII and Unicode blanks (a vertical tab, which `trim` strips, among them) around
    // them, other languages. Fails when the trim is left out or a list is not asked.
    #[test]
    fn fence_kind_names_what_the_lists_name() {
        let named = |lang: &str, names: &[&str]| names.iter().any(|n| n.eq_ignore_ascii_case(lang));
        let mut infos = Vec::new();
        for name in CALL_FENCES
            .iter()
            .chain(MARKUP_FENCES)
            .chain(&["python", "js", "jso", "xmls", "é"])
        {
            for n in [
                name.to_string(),
                name.to_ascii_uppercase(),
                format!("{name}x"),
            ] {
                for (a, b) in [
                    ("", ""),
                    (" ", ""),
                    ("", "\t"),
                    ("\u{b}", ""),
                    ("", "\r"),
                    ("\u{a0}", "\u{3000}"),
                    (" x", ""),
                    ("", "\u{85}"),
                ] {
                    infos.push(format!("{a}{n}{b}"));
                }
            }
        }
        for info in &infos {
            let lang = info.trim();
            let markup = named(lang, MARKUP_FENCES);
            let callable = named(lang, CALL_FENCES) || markup;
            assert_eq!(fence_kind(info), (callable, markup), "{info:?}");
        }
    }

    // `fence_close` (a "```" after a byte other than a blank or newline passed without
    // its line's start looked up) finds the close that looking up every one finds, from
    // each offset of contents of backticks, blanks, newlines and other bytes. Fails when
    // the quick test passes a "```" that closes.
    #[test]
    fn fence_close_finds_what_each_line_start_finds() {
        let reference = |bytes: &[u8], mut from: usize, content: usize| {
            while let Some(i) = find_triple_backtick(&bytes[from..], true) {
                let at = from + i;
                let line_begin = bytes[..at]
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |p| p + 1);
                let only_spaces = bytes[line_begin..at]
                    .iter()
                    .all(|b| *b == b' ' || *b == b'\t');
                if only_spaces && line_begin >= content {
                    let end = if line_begin > content {
                        line_begin - 1
                    } else {
                        content
                    };
                    return Some((end.max(content), at + 3));
                }
                from = at + 3;
            }
            None
        };
        let alphabet: &[&str] = &["```", "`", "\n", " ", "\t", "x", "{\"", "````", "\r", "é"];
        let mut rng = Xorshift::new(0x9E37_79B9_7F4A_7C15_u64);
        let mut closed = 0;
        for case in 0..4000 {
            let mut text = String::new();
            for _ in 0..case % 12 + 1 {
                text.push_str(alphabet[rng.below(alphabet.len())]);
            }
            let bytes = text.as_bytes();
            for content in 0..=bytes.len().min(4) {
                for from in content..=bytes.len() {
                    let want = reference(bytes, from, content);
                    closed += usize::from(want.is_some());
                    assert_eq!(
                        fence_close(bytes, from, content),
                        want,
                        "{text:?} {content} {from}"
                    );
                }
            }
        }
        assert!(closed > 5000, "{closed}");
    }

    // `eq_ignore_case` answers what `eq_ignore_ascii_case` answers: every pair of bytes at
    // every place of an 8-byte word, and random strings of ASCII, letters and non-ASCII.
    #[test]
    fn eq_ignore_case_is_eq_ignore_ascii_case() {
        for at in [0, 3, 7, 8, 9] {
            for x in 0..=255u8 {
                for y in 0..=255u8 {
                    let mut a = b"TOOL_CALL: ab".to_vec();
                    let mut b = b"tool_call: AB".to_vec();
                    a[at] = x;
                    b[at] = y;
                    assert_eq!(
                        eq_ignore_case(&a, &b),
                        a.eq_ignore_ascii_case(&b),
                        "{a:?} {b:?}"
                    );
                }
            }
        }
        let alphabet = b"aAzZ@[`{_:09 \x7f\x80\xc3\xa9\xffTtOo";
        let mut rng = Xorshift::new(0x2F6A_91C3_5D07_E84B_u64);
        for _ in 0..20_000 {
            let n = rng.below(20);
            let a: Vec<u8> = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let mut b = a.clone();
            for c in &mut b {
                match rng.below(4) {
                    0 => *c ^= 0x20,
                    1 => *c = alphabet[rng.below(alphabet.len())],
                    _ => {}
                }
            }
            assert_eq!(
                eq_ignore_case(&a, &b),
                a.eq_ignore_ascii_case(&b),
                "{a:?} {b:?}"
            );
        }
    }

    // `backticks_at` answers what `match_at(.., "```", false)` answers, at every offset of
    // short runs of backticks and other bytes (partial at the end).
    #[test]
    fn backticks_at_is_match_at_of_three_backticks() {
        for text in [
            "`", "``", "```", "````", "x`", "`x`", "``x", "`` `", "a```b``", "",
        ] {
            let bytes = text.as_bytes();
            for pos in 0..=bytes.len() {
                let (got, want) = (backticks_at(bytes, pos), match_at(bytes, pos, "```", false));
                assert!(
                    matches!(
                        (got, want),
                        (Marker::Full, Marker::Full)
                            | (Marker::Partial, Marker::Partial)
                            | (Marker::No, Marker::No)
                    ),
                    "{text:?} {pos}"
                );
            }
        }
    }

    // `memchr_near` finds what `memchr` finds: the byte at every offset in and past the
    // first `NEAR`, twice, and not at all.
    #[test]
    fn memchr_near_finds_what_memchr_finds() {
        for len in 0..3 * NEAR {
            for at in (0..len).map(Some).chain([None]) {
                let mut hay = vec![b'x'; len];
                if let Some(at) = at {
                    hay[at] = b'`';
                    hay[(at + 5).min(len - 1)] = b'`';
                }
                assert_eq!(
                    memchr_near(b'`', &hay),
                    memchr::memchr(b'`', &hay),
                    "{len} {at:?}"
                );
            }
        }
    }

    /// Every event of `text` (call ids left out), one-shot and streamed in pushes of `size`
    /// bytes, with a fence's text before it emitted at its opener (`eager`) or when the
    /// fence decides.
    fn fence_events(
        text: &str,
        options: &crate::ParseOptions,
        size: usize,
        eager: bool,
    ) -> Vec<String> {
        let key = |e: StreamEvent| match e {
            StreamEvent::Text { text } => format!("T{text}"),
            StreamEvent::Reasoning { text } => format!("R{text}"),
            StreamEvent::CallStarted { index, name, .. } => format!("S{index}{name}"),
            StreamEvent::ArgumentsDelta { index, fragment } => format!("A{index}{fragment}"),
            StreamEvent::CallFinished { index, call } => {
                format!("F{index}{}{}{:?}", call.name, call.arguments, call.origin)
            }
            StreamEvent::Diagnostic { diagnostic } => format!("D{diagnostic:?}"),
        };
        if size == 0 {
            let (ctx, _) = options.ctx();
            let mut e = Engine::new(Arc::new(ctx));
            e.quiet = true;
            e.eager_fence_text = eager;
            let p = e.parse_whole(text, Parsed::default());
            let mut out = vec![format!("T{}", p.text)];
            out.extend(p.reasoning.iter().map(|r| format!("R{r}")));
            out.extend(
                p.calls
                    .iter()
                    .map(|c| format!("F{}{}{:?}", c.name, c.arguments, c.origin)),
            );
            out.extend(p.diagnostics.iter().map(|d| format!("D{d:?}")));
            return out;
        }
        let mut stream = crate::StreamParser::new(options.clone());
        stream.engine.eager_fence_text = eager;
        let mut events = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let mut end = (at + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            events.extend(stream.push(&text[at..end]).into_iter().map(key));
            events.push("|".to_owned());
            at = end;
        }
        events.extend(stream.finish().into_iter().map(key));
        events
    }

    // A fence's opener leaves the text before it to the fence's decision (`step_fence`
    // emits it when the fence waits for its closer, before its sub-engine's notes and
    // calls, or with the fence's own text): every event, push by push, is the one the
    // opener's emission gives (`Engine::eager_fence_text`), one-shot and streamed in 1-,
    // 7- and 64-byte pushes, for floods of fences (empty, plain, broken JSON, calls,
    // markup, other languages), unclosed fences, reasoning and text around them; and
    // streamed as one-shot (text, calls, notes), a push ending inside a fence's close.
    #[test]
    fn fence_text_emitted_when_the_fence_decides_equals_at_its_opener() {
        let call = r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#;
        let units = [
            "```\nx\n```\n".to_owned(),
            "```\n\n```\n".to_owned(),
            "```json\n{\"\n```\n".to_owned(),
            "a ```\n```json\n{\"x\n```\n1 ".to_owned(),
            format!("```json\n{call}\n```\n"),
            format!("text\n```\n{call} {{\"a\": [1]}}\n```\nafter "),
            "```xml\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>\n```\n"
                .to_owned(),
            "```xml\n<b>x</b>\n```\n".to_owned(),
            "```python\nget_weather(city=\"x\")\n```\n".to_owned(),
            "```\nget_weather(city=\"Paris\")\n```\n".to_owned(),
            "```\n[1, 2]\n```\n".to_owned(),
            "```json\n{\"name\": \"nope\", \"arguments\": {}}\n```\n".to_owned(),
            "x ```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \n```\n".to_owned(),
            "```\n{\"name\": \"get_weather\", \"arguments\": [}\n```\n".to_owned(),
            "```\n[{\"name\": \"get_weather\"}, {\"name\": 1, \"arguments\": {}}]\n```\n"
                .to_owned(),
            "<think>r ```\nx\n```</think>```\nx\n``` ".to_owned(),
            "```JSON \n{\"tools\": [{\"name\": \"get_weather\", \"arguments\": {}}, {\n```\n"
                .to_owned(),
        ];
        let mut texts = Vec::new();
        for u in &units {
            for n in [1, 3, 40] {
                texts.push(u.repeat(n));
                texts.push(format!("before {}", u.repeat(n)));
                // Unclosed at the end.
                texts.push(format!("{}```json\n{{\"x", u.repeat(n)));
                texts.push(format!("{}```\nx y", u.repeat(n)));
            }
        }
        for (i, a) in units.iter().enumerate() {
            texts.push(format!("{a}{}{a}", units[(i + 5) % units.len()]));
        }
        // A push that ends inside the close of a fence opened in it (the fence's next
        // search starts before the bytes that may still start it).
        for pad in 0..70 {
            texts.push(format!("{}\n```json\n{call}\n```\nafter", "a".repeat(pad)));
            texts.push(format!("{}\n```\nx\n```\n{call}", "a".repeat(pad)));
        }
        let (mut differ, mut fences) = (0, 0);
        for text in &texts {
            for options in [with_get_weather(), crate::ParseOptions::default()] {
                walk_equals_no_walk(text, &options);
                for size in [0, 1, 7, 64] {
                    let late = fence_events(text, &options, size, false);
                    let eager = fence_events(text, &options, size, true);
                    assert_eq!(late, eager, "{text:?}: {size}-byte pushes");
                    fences += 1;
                    differ += usize::from(
                        size > 0 && late.iter().filter(|e| e.starts_with('T')).count() > 1,
                    );
                }
            }
        }
        assert!(fences > 1000 && differ > 100, "{differ} of {fences}");
    }

    // A fence's content that `holds_no_nested_region` passes gives its sub-engine (nested,
    // as `step_fence` builds it) nothing but text: no call, note, label or markup, with a
    // registry (so `name(` reads) and without. Contents from pieces that open regions in
    // a fence (brackets, `name(`, line-start openers after blanks) and ones that do not
    // (markup openers, which a nested scan skips), one bracket whose region is broken with
    // and without a call's keys. Fails when the test passes content whose sub-engine reads
    // something.
    #[test]
    fn content_passed_without_a_sub_engine_gives_it_only_text() {
        let registry = {
            let mut r = toolcall_core::Registry::new();
            r.add_spec(toolcall_core::ToolSpec::new(
                "get_weather",
                "",
                serde_json::json!({"type": "object"}),
            ))
            .unwrap();
            Arc::new(r)
        };
        let alphabet: &[&str] = &[
            "x",
            " ",
            "\n",
            "\t",
            "TOOL_CALL: get_weather\n",
            "get_weather",
            "(",
            "[",
            "{",
            "\"city\": 1}",
            "<tool_call>",
            "[TOOL_CALLS]",
            "`",
            "functools",
            "T",
            "é",
            "]",
            "}",
            "\"",
            "\"name\": \"get_weather\", \"arguments\": ",
            "{\"tools\": ",
            "```json\n",
            "{\"",
            "[{",
            "{\"a\": [1]}",
            "{\"tools\": [{\"name\": \"get_weather\", \"arguments\": {}}, {",
            "\nthe",
            "\ntool_call",
            "\nTool_Call:x",
        ];
        let mut rng = Xorshift::new(0x2545_F491_4F6C_DD1D_u64);
        let (mut passed, mut read, mut brackets) = (0, 0, 0);
        for tools in [None, Some(registry)] {
            let options = crate::ParseOptions {
                tools,
                ..crate::ParseOptions::default()
            };
            let (ctx, _) = options.ctx();
            let ctx = Arc::new(ctx);
            for case in 0..3000 {
                let mut content = String::new();
                for _ in 0..case % 9 + 1 {
                    content.push_str(alphabet[rng.below(alphabet.len())]);
                }
                if !holds_no_nested_region(content.as_bytes(), &ctx.openers, ctx.limits.max_depth) {
                    continue;
                }
                passed += 1;
                if content.bytes().filter(|b| matches!(b, b'[' | b'{')).count() > 1 {
                    brackets += 1;
                }
                let mut sub = Engine::new_inner(ctx.clone());
                sub.nested = true;
                sub.quiet = true;
                sub.feed_whole(&content);
                sub.run(true);
                sub.finished = true;
                sub.flush_text_event();
                assert!(
                    sub.events
                        .iter()
                        .all(|e| matches!(e, StreamEvent::Text { .. })),
                    "{content:?}: {:?}",
                    sub.events
                );
                assert!(sub.labels.is_empty() && !sub.markup_found, "{content:?}");
                read += 1;
            }
        }
        assert!(
            passed > 500 && read == passed && brackets > 100,
            "{read} of {passed} ({brackets} with more than one bracket)"
        );
    }

    // covers R-1 (the bulk text skip keeps the exact per-byte identifier state, so a
    // `name(` call is found the same way whatever the run lengths and chunking)
    // The blank test answers what `trim` does: ASCII blanks and others, Unicode blanks
    // (which `trim` strips) before, after and between ASCII bytes.
    #[test]
    fn is_blank_is_an_empty_trim() {
        let parts = [
            "", " ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{1c}", "\u{85}", "\u{a0}", "\u{3000}",
            "x", "é", "\u{0}",
        ];
        for a in parts {
            for b in parts {
                for c in parts {
                    let t = format!("{a}{b}{c}");
                    assert_eq!(is_blank(&t), t.trim().is_empty(), "{t:?}");
                }
            }
        }
    }

    // The short runs `skip_plain` reads byte by byte end where its block scan ends: at the
    // first stop after the first byte that `plain_stop` does not pass (or the end), with the
    // same opener found there and the same identifier state. Runs of stops (brackets,
    // quotes, newlines, `(`, the `A`/`f` of openers) with bare JSON on and off, so that
    // brackets are passed or not, of every length around `SHORT_RUN`.
    #[test]
    fn skip_plain_short_runs_match_the_stop_loop() {
        let (ctx, _) = crate::ParseOptions::default().ctx();
        let ctx = Arc::new(ctx);
        let alphabet: &[&str] = &[
            "{",
            "[",
            "\"",
            "\n",
            "(",
            " ",
            "x",
            "A",
            "f",
            "Ac",
            "fu",
            "<",
            ">",
            "`",
            "_",
            "é",
            "\t",
            "t",
            "TOOL_CALL:",
            "<tool_call>",
        ];
        let stops = &ctx.openers.stops;
        let mut rng = Xorshift::new(0x2545_F491_4F6C_DD1D_u64);
        let mut short = 0;
        for case in 0..6000 {
            let mut s = String::new();
            for _ in 0..case % 14 + 1 {
                let seed = rng.next_u64();
                // Stops mostly, so that runs of them reach `SHORT_RUN`.
                let pick = if case % 2 == 0 {
                    seed % 4
                } else {
                    seed % alphabet.len() as u64
                };
                s.push_str(alphabet[pick as usize]);
            }
            let bytes = s.as_bytes();
            if bytes.first().is_none_or(|&b| stops.is_stop(b)) {
                continue;
            }
            for (bare_off, short_read) in
                [(false, false), (true, false), (false, true), (true, true)]
            {
                let mut e = Engine::new_inner(ctx.clone());
                e.buf = Cow::Borrowed(s.as_str());
                e.bare_off = bare_off;
                e.short_runs = short_read;
                e.line_start = false;
                let mut short_runs = short_read;
                // The stop loop: the first stop after the first byte not passed; after a
                // short run, on over a newline whose line goes on as text, within the
                // bytes read one at a time (the block scan goes on from there).
                let mut found = None;
                let (mut end, mut cut) = (1, SHORT_SCAN);
                while let Some(&b) = bytes.get(end) {
                    if !stops.is_stop(b) {
                        if end >= cut {
                            // Left to the block scan: no more newlines passed.
                            short_runs = false;
                        }
                        end += 1;
                    } else if b == b'\n' && short_runs {
                        match e.line_plain(end, &mut found) {
                            Some(next) => {
                                end = next;
                                cut = next + SHORT_SCAN;
                            }
                            None => break,
                        }
                    } else if e.plain_stop(end, &mut found) {
                        end += 1;
                    } else {
                        break;
                    }
                }
                if end < SHORT_RUN {
                    short += 1;
                }
                e.skip_plain();
                let at = format!("{s:?} bare off {bare_off} short {short_read}");
                assert_eq!(e.pos, end, "{at}");
                assert_eq!(e.scan_found, found, "{at}");
                assert_eq!(e.ident_start, reference(&bytes[..end], 0, None), "{at}");
            }
        }
        assert!(short > 1000, "{short}");
    }

    #[test]
    fn skip_plain_matches_the_byte_loop() {
        let (ctx, _) = crate::ParseOptions::default().ctx();
        let ctx = Arc::new(ctx);
        // With stops that open nothing here (`A` and `f` start openers, but not followed by
        // these; `>` followed by `.`; `(` after a blank): the scan passes over them. `u` and
        // `c` make pairs (`fu`, `Ac`) that the scan's compares count as stops, also where a
        // 64-byte block ends between the two bytes; it then passes over them too.
        let alphabet: &[&str] = &[
            "a", "Z", "_", ".", " ", "\t", ",", "é", "-", "9", "!", "A", "f", " (", ">.", "u", "c",
        ];
        let mut rng = Xorshift::new(0x9E37_79B9_7F4A_7C15_u64);
        for case in 0..400 {
            let mut s = String::new();
            let len = if case % 7 == 0 { 900 } else { case % 60 };
            for _ in 0..len {
                let seed = rng.next_u64();
                // Long name runs often, to cross the 256-byte restart.
                let pick = if case % 3 == 0 {
                    (seed % 4) as usize
                } else {
                    (seed % alphabet.len() as u64) as usize
                };
                s.push_str(alphabet[pick.min(alphabet.len() - 1)]);
            }
            let bytes = s.as_bytes();
            for from in [0, 1, 5, 300].into_iter().filter(|f| *f <= bytes.len()) {
                if !s.is_char_boundary(from) {
                    continue;
                }
                let carried = [None, from.checked_sub(1), from.checked_sub(200)];
                // Each read by the block scan and, after a short run, byte by byte first.
                let reads = carried.into_iter().flat_map(|i| [(i, false), (i, true)]);
                for (ident, short_runs) in reads {
                    // A carried-in identifier is only possible after name bytes.
                    if let Some(i) = ident
                        && !bytes[i..from].iter().all(|&b| is_name_byte(b))
                    {
                        continue;
                    }
                    let mut e = Engine::new_inner(ctx.clone());
                    e.buf = Cow::Borrowed(s.as_str());
                    e.pos = from;
                    e.line_start = false;
                    e.ident_start = ident;
                    e.short_runs = short_runs;
                    e.skip_plain();
                    // The scan stops at once on a stop, and before a last `A` or `f`, or
                    // a last `Ac` or `fu` (the start of `Action:`, `functools[` when
                    // more comes).
                    let end = if bytes.get(from).is_some_and(|&b| b"Af(>".contains(&b)) {
                        from
                    } else if bytes.last().is_some_and(|&b| b"Af".contains(&b)) {
                        (bytes.len() - 1).max(from)
                    } else if (bytes.ends_with(b"Ac") || bytes.ends_with(b"fu"))
                        && bytes.len() - 2 >= from
                    {
                        bytes.len() - 2
                    } else {
                        bytes.len()
                    };
                    assert_eq!(e.pos, end, "{s:?} from {from} short {short_runs}");
                    assert_eq!(
                        e.ident_start,
                        reference(&bytes[..end], from, ident),
                        "{s:?} from {from} ident {ident:?} short {short_runs}"
                    );
                }
            }
        }
    }

    // A run of stops read at once (`Engine::pass_stops`) and the bytes after a declined
    // suffixed marker read byte by byte (`Engine::decline_literal`) leave what reading each
    // byte through `step_text` leaves: random texts of `<`, newlines, blanks, brackets,
    // backticks, parentheses after names and not, line openers, openers, suffixed markers
    // declined and not, numbers and words parse the same with the passes and without them,
    // in text, calls and every diagnostic, one-shot and in 1-, 7- and 64-byte pushes, with a
    // registry and without.
    #[test]
    fn stop_runs_passed_read_as_each_byte() {
        let pieces: &[&str] = &[
            "<",
            "<\n",
            "<<",
            "\n",
            "\n\n",
            " ",
            "\t",
            "\r\n",
            "(",
            "get_weather(",
            "x(",
            "[",
            "{",
            "[1]",
            "{\"a\": 1}",
            "`",
            "\n```json\n",
            "x",
            "12",
            "weather",
            "é",
            "T",
            "f",
            "A",
            "<think:",
            "</think:",
            "<think:1>",
            "</think:1>",
            "<tool_call>",
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
            "TOOL_CALL: get_weather\n",
            "[TOOL_CALLS]",
            ">>>",
            "<|eot|>",
            "<think>",
            "</think>",
        ];
        let mut rng = Xorshift::new(0x3C6E_F372_FE94_F82B_u64);
        let mut next = |n: usize| rng.below(n);
        for options in [with_get_weather(), crate::ParseOptions::default()] {
            for case in 0..500 {
                let mut text = String::new();
                for _ in 0..case % 50 + 2 {
                    // Mostly `<` and newlines, so that runs of stops are long.
                    let p = match next(3) {
                        0 => ["<", "\n", "<\n", " ", "(", "[", "<think:"][next(7)],
                        _ => pieces[next(pieces.len())],
                    };
                    text.push_str(p);
                }
                walk_equals_no_walk(&text, &options);
            }
        }
    }

    // `Engine::pass_stops` reads stops where no opener starts, newlines, blanks and short
    // runs of other bytes, up to the first byte that means something of itself there: a
    // backtick, a line opener's first byte at a line start, an opener (left in
    // `scan_found`), a bracket that may open bare JSON, a `(` after a name, a long run of
    // text (the bulk skip's), or the end.
    #[test]
    fn pass_stops_ends_where_a_byte_means_something() {
        let (ctx, _) = with_get_weather().ctx();
        let ctx = Arc::new(ctx);
        let cases: &[(&str, usize, bool)] = &[
            ("<\n<\n<\n", 6, true),
            ("<\n<\n`x", 4, true),
            ("<\n<\nTOOL_CALL: x", 4, true),
            ("<\n<\n  <x", 7, false),
            ("<\n<tool_call>x", 2, true),
            ("<\n[1]", 2, true),
            ("<\n{\"a\": 1}", 2, true),
            ("<\nx(<", 3, false),
            // The last `<` may start an opener: the scan's.
            ("<\n (<", 4, false),
            ("<\n12<\n34<\n", 10, true),
            ("<\nweather today<", 3, false),
            ("< <\t<\r\n<", 7, true),
        ];
        for &(text, end, line_start) in cases {
            let mut e = Engine::new_inner(ctx.clone());
            e.buf = Cow::Borrowed(text);
            e.line_start = true;
            assert!(e.pass_stops(0), "{text:?}");
            assert_eq!((e.pos, e.line_start), (end, line_start), "{text:?}");
            let opener = text
                .get(end..)
                .is_some_and(|r| r.starts_with("<tool_call>"));
            assert_eq!(e.scan_found.is_some(), opener, "{text:?}");
        }
    }

    #[test]
    fn marker_memo_finds_what_find_marker_finds() {
        let markers: [&[u8]; 5] = [b"ab", b"a<b", b"<>", b"b", b"<>a<"];
        let mut rng = Xorshift::new(0x51f1_5eed);
        for _ in 0..200 {
            let text: Vec<u8> = (0..300).map(|_| b"ab<> "[rng.below(5)]).collect();
            let mut memo = MarkerMemo::default();
            let (mut start, mut end) = (0, 0);
            for _ in 0..60 {
                // Bytes arrive, searches start anywhere (a rescan goes back) but mostly on.
                end = (end + rng.below(24)).min(text.len());
                start = match rng.below(6) {
                    0 => rng.below(end + 1),
                    _ => (start + rng.below(12)).min(end),
                };
                let marker = markers[rng.below(markers.len())];
                let hay = &text[start..end];
                assert_eq!(
                    memo.find(start, hay, marker),
                    find_marker(hay, marker),
                    "{:?} from {start} in {:?}",
                    String::from_utf8_lossy(marker),
                    String::from_utf8_lossy(&text[..end])
                );
            }
        }
    }

    #[test]
    fn reasoning_floods_search_each_marker_once() {
        // Reasoning blocks each ended early by a call opener: every block searched the rest
        // of the reply for its close (quadratic before the memo).
        let units = [
            "<|content_thinking|>{\"<|tool_call_begin|>{#}<",
            "<|content_thinking|>x<|tool_call_begin|>{#}",
            "<think>{#}<|tool_call_begin|>",
            "<think>a<tool_call>x{#}",
        ];
        for unit in units {
            let mut text = String::new();
            let mut n = 0;
            while text.len() < 32 * 1024 {
                text.push_str(&unit.replace("{#}", &n.to_string()));
                n += 1;
            }
            let e = parsed_engine(&text, &crate::ParseOptions::default());
            // One search a block (the opener that ends it, a few bytes on): a marker with
            // no byte since its last search is not searched again.
            assert!(
                e.markers.searches <= n + 16,
                "{unit:?}: {} searches for markers in {n} blocks",
                e.markers.searches
            );
            assert!(
                e.markers.searched <= 8 * text.len(),
                "{unit:?}: {} bytes searched for markers in {}",
                e.markers.searched,
                text.len()
            );
        }
    }
}
