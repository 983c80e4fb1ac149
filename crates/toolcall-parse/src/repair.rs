//! The one repair pass (V-5): turns the near-JSON models commonly write into JSON.
//!
//! Repairs, each recorded as a [`Repair`]: trailing commas, single-quoted strings, Python
//! `True`/`False`/`None`, unquoted keys, `//` and `/* */` comments, literal newlines and tabs
//! inside strings. The output is always re-parsed by serde_json; whatever still fails is an
//! error for the caller, never a guess. Valid JSON takes the fast path (one serde_json parse).
//! Hand-written because the crates tried (jsonrepair, llm_json) either produced invalid
//! output or silently dropped data (see CRATES.md), and we need the list of repairs made.
//! [`known_failure`] reads the failure of one common broken shape (an object whose first key
//! no colon follows) off the key, with serde_json's message, instead of decoding it: a flood
//! of such blocks (`Action: ```json{"`) measured 28.2x -> 18.1x prose one-shot at 128 KB.

use crate::families::bare_json::CallKeys;
use serde_json::Value;
use toolcall_core::Repair;

/// Parses `s` as JSON, repairing it when it is not. Returns the value and the repairs made.
pub(crate) fn parse_lenient(s: &str) -> Result<(Value, Vec<Repair>), String> {
    decode_lenient(s).map_err(|e| message_after("", &e))
}

/// [`parse_lenient`] with the decode error unwritten: for a caller that writes it with
/// words before it ([`message_after`]) or drops it (a flood of broken blocks wrote a message
/// for each line it then dropped, ~1,000 instructions each).
pub(crate) fn decode_lenient(s: &str) -> Result<(Value, Vec<Repair>), serde_json::Error> {
    match serde_json::from_str::<Value>(s) {
        Ok(v) => Ok((v, Vec::new())),
        Err(first) => {
            // No byte any repair starts from: `repair_text` would find nothing to repair,
            // and the error stands (a flood of `[TOOL_CALLS]` reads `[TOOL_CALLS]` as a
            // broken list once a region). Nor where serde read the whole text and ran out of
            // it (an error at the end): the text is then the start of a JSON value, which
            // holds nothing a repair rewrites (no `'` string, comment, Python literal,
            // unquoted key or raw control character; a comma never before a closer), so the
            // repaired text is the same unfinished value (see `eof_leaves_nothing_to_repair`).
            // A flood of broken `Action:` blocks (`{"wordAction: ` a block) repaired each.
            // Nor where the walk the repair makes notes nothing (`notes_a_repair`, its
            // walk without the copy): the repaired text would be the text, and fail again.
            // Nor where the repaired text certainly fails too (`never_decodes`): a flood
            // of broken fenced JSON (`Action:\n```json{"a":{#}["`) repaired each block.
            if first.is_eof() || !might_repair(s) || never_decodes(s) || !notes_a_repair(s) {
                return Err(first);
            }
            let (fixed, kinds) = repair_text(s);
            if kinds.is_empty() {
                return Err(first);
            }
            match serde_json::from_str::<Value>(&fixed) {
                Ok(v) => Ok((v, kinds.into_iter().map(describe).collect())),
                Err(_) => Err(first),
            }
        }
    }
}

/// Why a decode failed: serde_json's error, or the failure [`known_failure`] read off the
/// text's start without decoding it (the message serde_json would have written).
#[derive(Debug)]
pub(crate) enum Failure {
    Serde(serde_json::Error),
    Known(KnownFailure),
}

impl Failure {
    /// The failure's message after `head`, as [`message_after`] writes serde_json's.
    pub(crate) fn message_after(&self, head: &str) -> String {
        match self {
            Failure::Serde(e) => message_after(head, e),
            Failure::Known(k) => k.message_after(head),
        }
    }

    /// Appends [`Failure::message_after`]'s message to `out` (a reused buffer: a broken
    /// block's message is compared with the diagnostic cap's last one before it is kept).
    pub(crate) fn write_after(&self, head: &str, out: &mut String) {
        use std::fmt::Write as _;
        match self {
            Failure::Serde(e) => {
                out.push_str(head);
                // Writing to a `String` cannot fail.
                let _ = write!(out, "{e}");
            }
            Failure::Known(k) => k.write_after(head, out),
        }
    }
}

/// A failure [`known_failure`] found: serde_json's error code (its message) and position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KnownFailure {
    code: &'static str,
    line: usize,
    column: usize,
}

impl KnownFailure {
    /// `{head}{code} at line {line} column {column}`, serde_json's `Display` of the error,
    /// written without the formatting machinery (~600 instructions a message there).
    fn message_after(&self, head: &str) -> String {
        let mut out = String::with_capacity(head.len() + self.code.len() + 40);
        self.write_after(head, &mut out);
        out
    }

    /// Appends [`KnownFailure::message_after`]'s message to `out`.
    fn write_after(&self, head: &str, out: &mut String) {
        out.push_str(head);
        out.push_str(self.code);
        out.push_str(" at line ");
        out.push_str(itoa::Buffer::new().format(self.line));
        out.push_str(" column ");
        out.push_str(itoa::Buffer::new().format(self.column));
    }
}

#[cfg(test)]
thread_local! {
    /// Turns [`known_failure`] off (it finds none): a test compares a parse with it and
    /// without it.
    pub(crate) static KNOWN_FAILURES_OFF: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

#[cfg(test)]
thread_local! {
    /// Turns [`never_decodes`] off (it decides none): a test compares a parse with it and
    /// without it.
    pub(crate) static NEVER_DECODES_OFF: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

/// [`decode_lenient`], or the failure [`known_failure`] finds without decoding. After a
/// text that failed, the next is first asked [`never_decodes`]: one that certainly fails
/// gets serde_json's error from a read that builds no value ([`Skip`]), the error
/// [`decode_lenient`] gives (its first parse's). A flood of broken blocks
/// (`Action:\n```json{"a":{#}["`) built each block's map before failing; asked of every
/// text, the walk would cost each valid one a second read.
#[inline]
pub(crate) fn decode_or_failure(s: &str) -> Result<(Value, Vec<Repair>), Failure> {
    if let Some(k) = known_failure(s) {
        return Err(Failure::Known(k));
    }
    decode_unknown(s)
}

/// [`decode_or_failure`] past [`known_failure`]. Out of line: inlined, its frame cost a
/// flood of broken blocks that `known_failure` reads (`Action:\n```json{"`) ~8
/// instructions a block (1-2 %).
#[inline(never)]
fn decode_unknown(s: &str) -> Result<(Value, Vec<Repair>), Failure> {
    if LAST_DECODE_FAILED.get() && never_decodes(s) {
        #[cfg(test)]
        FAILED_UNBUILT.set(FAILED_UNBUILT.get() + 1);
        return Err(match strict_failure(s) {
            Some(k) => Failure::Known(k),
            None => Failure::Serde(skip_error(s)),
        });
    }
    let out = decode_lenient(s).map_err(Failure::Serde);
    LAST_DECODE_FAILED.set(out.is_err());
    out
}

/// [`never_decodes`] asked only after a text that failed to decode (as
/// [`decode_or_failure`] asks it): a reader of closed bare values decodes a valid one once,
/// not walking it first (asked of every value, the walk cost a streamed reply of bare
/// JSON calls ~7 %), and passes a flood of broken ones after the first. The reader says
/// how each decode it made ended ([`note_decoded`]).
pub(crate) fn fails_again(s: &str) -> bool {
    LAST_DECODE_FAILED.get() && {
        #[cfg(test)]
        WALKS_ASKED.set(WALKS_ASKED.get() + 1);
        never_decodes(s)
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: the times [`fails_again`] walked a text.
    pub(crate) static WALKS_ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the last decode a reader noted ([`note_decoded`], [`decode_or_failure`]) failed:
/// a reader's one-shot decode, which fails at each region of a flood of broken values, is
/// skipped then (the region's scan and [`fails_again`] decide it).
#[inline]
pub(crate) fn last_decode_failed() -> bool {
    #[cfg(test)]
    if ONE_SHOT_AFTER_FAILURE.with(std::cell::Cell::get) {
        return false;
    }
    LAST_DECODE_FAILED.get()
}

#[cfg(test)]
thread_local! {
    /// Turns [`last_decode_failed`] off (it answers `false`): a test compares a parse with
    /// the one-shot decodes skipped and without.
    pub(crate) static ONE_SHOT_AFTER_FAILURE: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

/// Records whether a decode a reader made failed, for [`fails_again`].
pub(crate) fn note_decoded(failed: bool) {
    LAST_DECODE_FAILED.set(failed);
}

#[cfg(test)]
thread_local! {
    /// Tests: the failures [`decode_or_failure`] gave with no value built.
    pub(crate) static FAILED_UNBUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

thread_local! {
    /// Whether the last text [`decode_or_failure`] decoded failed.
    static LAST_DECODE_FAILED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// serde_json's error for `s` read off its bytes without parsing it, where it is one of
/// the common ones of broken markup: a byte where a value goes (`expected value`), after a
/// key (`expected `:``), after an object's or a list's value (`expected `,` or `}``, `…
/// `]``) or after the whole value (`trailing characters`), each a peek error at that byte.
/// Also a control character in a string before any escape, and a word that is not
/// `true`, `false` or `null` where a value goes (`expected ident`, past its first byte that
/// differs). `None` (parse it) at anything else: an escape in a string, a number with a
/// fraction or exponent, the end of the text, a closer after a comma, a key that is no
/// string, nesting past 64. A flood of broken blocks
/// (`Action:\n```json{"a":{#}["`) parsed each and formatted its error (~600 instructions);
/// see `strict_failure_is_the_serde_error`.
fn strict_failure(s: &str) -> Option<KnownFailure> {
    #[derive(Clone, Copy, PartialEq)]
    enum St {
        Value,
        /// After `[`: a value or `]`.
        First,
        /// After `{`: a key or `}`.
        ObjFirst,
        /// After an object's comma: a key.
        Key,
        Colon,
        After,
    }
    let b = s.as_bytes();
    // The line (from 1) and the offset it starts at, as the walk passes blanks.
    let mut line = (1usize, 0usize);
    let (mut objects, mut depth) = (0u64, 0u32);
    let mut st = St::Value;
    let mut i = 0;
    let fail = |code: &'static str, at: usize, line: (usize, usize)| {
        Some(KnownFailure {
            code,
            line: line.0,
            column: at + 1 - line.1,
        })
    };
    // A control character in a string, at `at`: serde_json fails past it (a newline
    // starts the line it fails on).
    let control = |at: usize, line: (usize, usize)| {
        let line = if b.get(at) == Some(&b'\n') {
            (line.0 + 1, at + 1)
        } else {
            line
        };
        Some(KnownFailure {
            code: "control character (\\u0000-\\u001F) found while parsing a string",
            line: line.0,
            column: at + 1 - line.1,
        })
    };
    loop {
        while let Some(&c @ (b' ' | b'\t' | b'\n' | b'\r')) = b.get(i) {
            i += 1;
            if c == b'\n' {
                line = (line.0 + 1, i);
            }
        }
        let c = *b.get(i)?;
        st = match st {
            St::First if c == b']' => {
                depth -= 1;
                objects >>= 1;
                i += 1;
                St::After
            }
            St::ObjFirst if c == b'}' => {
                depth -= 1;
                objects >>= 1;
                i += 1;
                St::After
            }
            St::Value | St::First => match c {
                b'{' | b'[' => {
                    if depth == 64 {
                        return None;
                    }
                    depth += 1;
                    objects = objects << 1 | u64::from(c == b'{');
                    i += 1;
                    if c == b'{' { St::ObjFirst } else { St::First }
                }
                b'"' => {
                    i = match string_end(b, i) {
                        Ok(end) => end?,
                        Err(at) => return control(at, line),
                    };
                    St::After
                }
                b't' | b'f' | b'n' => {
                    let word: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    // serde_json reads the word byte by byte and fails past the first that
                    // differs (`expected ident`; a reply's word, `the`, `nothing`); the
                    // end of the text or a newline there is left to it.
                    let rest = b.get(i..)?;
                    if let Some(k) = word.iter().zip(rest).position(|(w, r)| w != r) {
                        return match rest.get(k) {
                            Some(b'\n') => None,
                            _ => fail("expected ident", i + k, line),
                        };
                    }
                    if rest.len() < word.len() {
                        return None;
                    }
                    i += word.len();
                    St::After
                }
                b'-' | b'0'..=b'9' => {
                    let from = i + usize::from(c == b'-');
                    let digits = b
                        .get(from..)?
                        .iter()
                        .take_while(|d| d.is_ascii_digit())
                        .count();
                    i = from + digits;
                    let lead_zero = digits > 1 && b.get(from) == Some(&b'0');
                    if digits == 0 || digits > 300 || lead_zero {
                        return None;
                    }
                    if matches!(b.get(i), None | Some(b'.' | b'e' | b'E')) {
                        return None;
                    }
                    St::After
                }
                b']' | b'}' => return None,
                _ => return fail("expected value", i, line),
            },
            St::ObjFirst | St::Key => {
                if c != b'"' {
                    return None;
                }
                i = match string_end(b, i) {
                    Ok(end) => end?,
                    Err(at) => return control(at, line),
                };
                St::Colon
            }
            St::Colon => {
                if c != b':' {
                    return fail("expected `:`", i, line);
                }
                i += 1;
                St::Value
            }
            St::After if depth == 0 => return fail("trailing characters", i, line),
            St::After => {
                let object = objects & 1 == 1;
                match c {
                    b',' => {
                        i += 1;
                        if object { St::Key } else { St::Value }
                    }
                    b'}' | b']' if object == (c == b'}') => {
                        depth -= 1;
                        objects >>= 1;
                        i += 1;
                        St::After
                    }
                    _ if object => return fail("expected `,` or `}`", i, line),
                    _ => return fail("expected `,` or `]`", i, line),
                }
            }
        };
    }
}

/// The end of the string whose quote is at `i` (past its closing quote), or `Err` with
/// the offset of its first control character (before any escape); `Ok(None)` at an
/// escape (its errors are not read here) or where the text ends in the string.
fn string_end(b: &[u8], i: usize) -> Result<Option<usize>, usize> {
    let Some(rest) = b.get(i + 1..) else {
        return Ok(None);
    };
    match rest
        .iter()
        .position(|&d| d == b'"' || d == b'\\' || d < 0x20)
    {
        Some(k) if rest.get(k) == Some(&b'"') => Ok(Some(i + k + 2)),
        Some(k) if rest.get(k).is_some_and(|&d| d < 0x20) => Err(i + 1 + k),
        _ => Ok(None),
    }
}

/// serde_json's error for `s`, which does not parse: [`Skip`] is read as `Value` is
/// (`deserialize_any` at every value, map key and element, each visit accepted), so the
/// parser stops at the same byte with the same error, having built nothing.
fn skip_error(s: &str) -> serde_json::Error {
    match serde_json::from_str::<Skip>(s) {
        Err(e) => e,
        // Not reached for a text `never_decodes` refuses; the value's own error then.
        Ok(Skip) => match serde_json::from_str::<Value>(s) {
            Err(e) => e,
            Ok(_) => serde::de::Error::custom("no error"),
        },
    }
}

/// Any JSON value, read and dropped ([`skip_error`]).
struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> serde::de::Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<Skip>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

/// The failure of [`decode_lenient`] on `s` when `s` is an object whose first key is not
/// followed by a colon (`{"key` then the end, or any byte but `:`, a blank or `/`), read
/// off the first key without decoding: the shape of broken markup that opens a JSON body
/// with the text of a reply (`Action: ```json{"wordAction: ```json{"…`, each block's body
/// `{"` and a string of the next copies). serde_json decoded each such block into a
/// map before failing, the repair walked it, and the error was formatted: ~2,300
/// instructions a block of a flood of `Action: ```json{"` (28x prose). `None` (decode it)
/// for anything else.
///
/// serde_json fails at the first of: a control character in the key (the position after
/// it), the text ending inside the key, the text ending after it, or a byte after it that
/// is not `:`. The repair changes none of these into a colon: it escapes the key's control
/// characters, keeps its quotes, and a byte after a string (a comma, a word, a quote, any
/// other) stays a byte that is not `:`; only a comment (`/`) could hide one, and a key
/// with a backslash is left to the decode. So the lenient decode fails too, with
/// serde_json's first error (see `known_failure_is_the_decode_failure`).
pub(crate) fn known_failure(s: &str) -> Option<KnownFailure> {
    #[cfg(test)]
    if KNOWN_FAILURES_OFF.with(std::cell::Cell::get) {
        return None;
    }
    let b = s.as_bytes();
    // serde_json's position (`SliceRead::position_of_index`) is the line (from 1) and the
    // bytes before the offset on it: the line and the offset it starts at, kept as the walk
    // passes newlines (its count of the text's newlines again was ~270 instructions a
    // block of the flood).
    let mut line = (1usize, 0usize);
    // Past serde_json's blanks from `i`.
    let blanks = |mut i: usize, line: &mut (usize, usize)| {
        while let Some(&c) = b.get(i) {
            match c {
                b'\n' => *line = (line.0 + 1, i + 1),
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            i += 1;
        }
        i
    };
    let mut i = blanks(0, &mut line);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = blanks(i + 1, &mut line);
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    // The key's first control character (where serde_json reports it: `parse_str` steps
    // past it first), and its closing quote.
    let mut control = None;
    let close = loop {
        match b.get(i) {
            None => break None,
            Some(b'"') => break Some(i),
            Some(b'\\') => return None,
            Some(&c) if c < 0x20 => {
                if control.is_none() {
                    let at = if c == b'\n' {
                        (line.0 + 1, i + 1)
                    } else {
                        line
                    };
                    control = Some((i + 1, at));
                }
                i += 1;
            }
            Some(_) => i += 1,
        }
    };
    // What follows the key decides the repaired text too: a colon (or a comment that may
    // hide one) and it may decode.
    let after_key = match close {
        Some(q) => {
            let after = blanks(q + 1, &mut line);
            match b.get(after) {
                // A peek error: the position after the byte peeked (capped at the end).
                None => ("EOF while parsing an object", b.len()),
                Some(b':' | b'/') => return None,
                Some(_) => ("expected `:`", after + 1),
            }
        }
        None => ("EOF while parsing a string", b.len()),
    };
    let (code, at, (line, start)) = match control {
        Some((at, line)) => (
            "control character (\\u0000-\\u001F) found while parsing a string",
            at,
            line,
        ),
        None => (after_key.0, after_key.1, line),
    };
    Some(KnownFailure {
        code,
        line,
        column: at - start,
    })
}

/// [`parse_lenient`], for a text likely to fail as the last one did: a text (of at most
/// [`FAILED_MAX`] bytes) that failed last time fails again with the same message (the
/// result is a function of the text alone), without serde_json's failed parse and the
/// formatting of its error. For a reader's value that the one-shot decode already failed
/// on: a flood of one broken value (`[TOOL_CALLS][TOOL_CALLS]…` reads `[TOOL_CALLS]` once
/// a region) measured 24.54 → 14.98 M instructions one-shot at 128 KB; checked first in
/// every `parse_lenient` it cost `pythonic/small` 1.6 %.
pub(crate) fn parse_lenient_recalling(s: &str) -> Result<(Value, Vec<Repair>), String> {
    if s.len() > FAILED_MAX {
        return parse_lenient(s);
    }
    if let Some(message) = LAST_FAILED
        .with_borrow(|(text, message)| (!text.is_empty() && text == s).then(|| message.clone()))
    {
        return Err(message);
    }
    let out = parse_lenient(s);
    if let Err(message) = &out {
        LAST_FAILED.with_borrow_mut(|(text, last)| {
            text.clear();
            text.push_str(s);
            last.clear();
            last.push_str(message);
        });
    }
    out
}

/// The longest text whose failure [`parse_lenient_recalling`] remembers (a flood's unit,
/// not a long value: the compare is cheap next to what it saves only for short texts).
const FAILED_MAX: usize = 64;

thread_local! {
    /// The last text (at most [`FAILED_MAX`] bytes, non-empty) [`parse_lenient_recalling`]
    /// failed on, with its error message.
    static LAST_FAILED: std::cell::RefCell<(String, String)> =
        const { std::cell::RefCell::new((String::new(), String::new())) };
}

/// Whether [`decode_lenient`] certainly fails on `s`, read in one walk with no allocation:
/// the text [`repair_text`] makes of `s` is not JSON (a valid text is its own repair, so
/// `s` is not JSON either). The walk reads `s` into the tokens the repair writes (strings
/// of either quote, always closed; a word a key before a colon is quoted; `True`, `False`,
/// `None` the literals; a comma before a closer dropped) and checks them against JSON's
/// grammar, failing at the first token out of place, a word or number JSON has not, or any
/// other byte outside strings (copied as it is, none JSON allows there). `false` (decode
/// it): a comment (removing one may join the tokens either side) or nesting past 64; a
/// string's escapes, a number's range and serde_json's depth bound are left to the decode.
/// A flood of broken bare JSON (`</think:{"\n{w}}`, each region's key string running into
/// the next copy) decoded each region twice (strict, then repaired) and wrote its error.
pub(crate) fn never_decodes(s: &str) -> bool {
    #[cfg(test)]
    if NEVER_DECODES_OFF.with(std::cell::Cell::get) {
        return false;
    }
    never_decodes_walk::<false>(s, &mut CallKeys::default()).0
}

/// [`never_decodes`] of a bare JSON region and whether it holds no call's keys
/// (`looks_like_call`): both in one walk, the keys noted at each quote the walk passes
/// (`KEYS`) and, where it stops early, at the quotes after it. A flood of broken bare JSON
/// (`x{"\n{w}}`, whose regions fail at the word after their first string) walked each
/// region twice (~150 instructions a region).
pub(crate) fn never_decodes_nor_calls(s: &str) -> bool {
    #[cfg(test)]
    if NEVER_DECODES_OFF.with(std::cell::Cell::get) {
        return false;
    }
    let mut keys = CallKeys::default();
    let (fails, at) = never_decodes_walk::<true>(s, &mut keys);
    fails && {
        // A short rest without a quote (a region's closer after the word it failed at)
        // skips the quote walk's setup.
        let rest = s.as_bytes().get(at..).unwrap_or(&[]);
        if rest.len() > 8 || rest.iter().any(|&d| d == b'"' || d == b'\'') {
            keys.note_quotes(rest);
        }
        !keys.looks_like_call()
    }
}

/// [`never_decodes`]'s walk, and the offset it stopped at; with `KEYS`, the call keys at
/// every quote before that offset are noted in `keys` (in strings too: the other quote,
/// one after a `\\`).
#[inline(always)]
fn never_decodes_walk<const KEYS: bool>(s: &str, keys: &mut CallKeys) -> (bool, usize) {
    #[derive(Clone, Copy, PartialEq)]
    enum Want {
        Value,
        /// After `[`: a value or `]`.
        ValueOrClose,
        /// After `{`: a key or `}`.
        KeyOrClose,
        Key,
        Colon,
        CommaOrClose,
        End,
    }
    let b = s.as_bytes();
    // The open containers, a bit each (1: an object), `depth` of them.
    let (mut objects, mut depth) = (0u64, 0u32);
    let mut want = Want::Value;
    // The last significant byte the repair wrote (its `last_sig`, a word's `a`).
    let mut last = b' ';
    let mut i = 0;
    let blanks = |mut j: usize| {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(j) {
            j += 1;
        }
        j
    };
    // What the grammar wants after a value.
    let after_value = |depth: u32| {
        if depth == 0 {
            Want::End
        } else {
            Want::CommaOrClose
        }
    };
    let mut walk = || {
        while let Some(&c) = b.get(i) {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    i += 1;
                    continue;
                }
                b'"' | b'\'' => {
                    // To the closing quote as the repair reads it (a `\` takes the byte after
                    // it: a multi-byte character's rest is no quote), or the end.
                    if KEYS {
                        keys.at_quote(c, b.get(i + 1..).unwrap_or(&[]));
                    }
                    i += 1;
                    loop {
                        let rest = b.get(i..).unwrap_or(&[]);
                        let stop = if KEYS {
                            quote_stop(rest)
                        } else {
                            string_stop(rest, c)
                        };
                        let Some(k) = stop else {
                            i = b.len();
                            break;
                        };
                        let d = rest.get(k).copied().unwrap_or(c);
                        if d == b'\\' {
                            if KEYS && let Some(&q @ (b'"' | b'\'')) = rest.get(k + 1) {
                                keys.at_quote(q, rest.get(k + 2..).unwrap_or(&[]));
                            }
                            i += k + 2;
                            continue;
                        }
                        if KEYS {
                            keys.at_quote(d, rest.get(k + 1..).unwrap_or(&[]));
                        }
                        i += k + 1;
                        if d == c {
                            break;
                        }
                    }
                    want = match want {
                        Want::Value | Want::ValueOrClose => after_value(depth),
                        Want::KeyOrClose | Want::Key => Want::Colon,
                        _ => return true,
                    };
                    last = b'"';
                    continue;
                }
                b'/' => return !matches!(b.get(i + 1), Some(b'/' | b'*')),
                b',' => {
                    let j = blanks(i + 1);
                    match b.get(j) {
                        // Dropped (a trailing comma): no token, `last` kept.
                        Some(b'}' | b']') => {
                            i += 1;
                            continue;
                        }
                        // Unicode blanks the repair looks past, and any other such byte,
                        // are copied where JSON allows none: the repair fails either way.
                        Some(0x0b | 0x0c | 0x80..) => return true,
                        _ => {}
                    }
                    if want != Want::CommaOrClose {
                        return true;
                    }
                    want = if objects & 1 == 1 {
                        Want::Key
                    } else {
                        Want::Value
                    };
                }
                b'{' | b'[' => {
                    if !matches!(want, Want::Value | Want::ValueOrClose) {
                        return true;
                    }
                    if depth == 64 {
                        return false;
                    }
                    depth += 1;
                    objects = objects << 1 | u64::from(c == b'{');
                    want = if c == b'{' {
                        Want::KeyOrClose
                    } else {
                        Want::ValueOrClose
                    };
                }
                b'}' | b']' => {
                    let object = objects & 1 == 1;
                    let fits = match want {
                        Want::KeyOrClose => c == b'}',
                        Want::ValueOrClose => c == b']',
                        Want::CommaOrClose => object == (c == b'}'),
                        _ => false,
                    };
                    if !fits {
                        return true;
                    }
                    depth -= 1;
                    objects >>= 1;
                    want = after_value(depth);
                }
                b':' => {
                    if want != Want::Colon {
                        return true;
                    }
                    want = Want::Value;
                }
                c if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-' | b'+' | b'.') => {
                    // A run of the bytes words and numbers are made of: the repair writes it
                    // as one token (a word beside digits or signs joins them).
                    // Its classes gathered in one loop (`TOKEN_BYTES`): a word is a run with no
                    // `-`, `+` or `.` that starts with no digit (a second walk over the run and
                    // the byte tests cost a flood of broken bare JSON, `x{"\n{w}}`, ~110
                    // instructions a region).
                    let from = i;
                    let mut classes = 0;
                    while let Some(&t) = b.get(i).map(|&d| &TOKEN_BYTES[usize::from(d)])
                        && t != 0
                    {
                        classes |= t;
                        i += 1;
                    }
                    let run = b.get(from..i).unwrap_or(&[]);
                    let word = !c.is_ascii_digit() && classes & NUMBER_ONLY == 0;
                    let key = word && matches!(last, b'{' | b',') && {
                        match b.get(blanks(i)) {
                            Some(b':') => true,
                            Some(0x0b | 0x0c | 0x80..) => return true,
                            _ => false,
                        }
                    };
                    want = match want {
                        Want::KeyOrClose | Want::Key if key => Want::Colon,
                        Want::Value | Want::ValueOrClose
                            if key
                                || matches!(
                                    run,
                                    b"true" | b"false" | b"null" | b"True" | b"False" | b"None"
                                )
                                || (!word && is_json_number(run)) =>
                        {
                            after_value(depth)
                        }
                        _ => return true,
                    };
                    last = b'a';
                    continue;
                }
                _ => return true,
            }
            last = c;
            i += 1;
        }
        want != Want::End
    };
    let fails = walk();
    (fails, i)
}

/// [`never_decodes`]'s classes of the bytes words and numbers are made of: `WORD_BYTE`
/// for ASCII letters, digits, `_` and `$`, `NUMBER_ONLY` for `-`, `+` and `.`; 0 for
/// every other byte.
static TOKEN_BYTES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' {
            WORD_BYTE
        } else if c == b'-' || c == b'+' || c == b'.' {
            NUMBER_ONLY
        } else {
            0
        };
        i += 1;
    }
    t
};
const WORD_BYTE: u8 = 1;
const NUMBER_ONLY: u8 = 2;

/// The offset in `rest` of the first `quote` or `\`: [`never_decodes`] in a string. The
/// last few bytes of a text byte by byte (the vector search's setup cost a flood of broken
/// bare JSON, `x{"\n{w}}`, whose regions are ~20 bytes, ~70 instructions a region; its
/// first 16 bytes so, before the search, cost `[TOOL_CALLS]{"\n{w}}` 1 %).
#[inline(always)]
fn string_stop(rest: &[u8], quote: u8) -> Option<usize> {
    if rest.len() < 24 {
        rest.iter().position(|&d| d == quote || d == b'\\')
    } else {
        memchr::memchr2(quote, b'\\', rest)
    }
}

/// The offset in `rest` of the first quote (`"`, `'`) or `\\`: [`never_decodes_nor_calls`]
/// in a string, which notes the call keys at every quote ([`string_stop`]'s search).
#[inline(always)]
fn quote_stop(rest: &[u8]) -> Option<usize> {
    if rest.len() < 24 {
        rest.iter().position(|&d| matches!(d, b'"' | b'\'' | b'\\'))
    } else {
        memchr::memchr3(b'"', b'\'', b'\\', rest)
    }
}

/// Whether `run` is a JSON number: `-`? then `0` or digits not starting with `0`, then
/// `.` and digits, `e`/`E`, a sign and digits, each part optional.
fn is_json_number(run: &[u8]) -> bool {
    let digits = |i: &mut usize| {
        let from = *i;
        while run.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    let mut i = usize::from(run.first() == Some(&b'-'));
    match run.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if run.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if let Some(b'e' | b'E') = run.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = run.get(i) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == run.len()
}

/// Whether `s` holds something [`repair_text`] could repair: a quote `'`, a `/` (comments),
/// a `,` (trailing commas), a `:` (unquoted keys), a control character (raw inside a
/// string) or `True`/`False`/`None`. A superset of what it notes, checked without its
/// copy of the text: `false` only where it would note no repair.
fn might_repair(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().any(|(i, &c)| match c {
        b'\'' | b'/' | b',' | b':' | 0..=0x1f => true,
        b'T' => b.get(i..).is_some_and(|r| r.starts_with(b"True")),
        b'F' => b.get(i..).is_some_and(|r| r.starts_with(b"False")),
        b'N' => b.get(i..).is_some_and(|r| r.starts_with(b"None")),
        _ => false,
    })
}

/// Whether [`repair_text`] notes a repair in `s`: its walk over the text, deciding as it
/// decides, without the copy of the text and of its characters it makes. A failed decode
/// that holds nothing to repair (a flood of broken blocks, `{"theAction: ```json{"city
/// Action: ` a block, whose `:` [`might_repair`] takes for a key's) made the copies and
/// decoded the copy again: ~2,300 instructions a block. The syntax it decides on is ASCII
/// (a byte of a multi-byte character never equals one); a character that is not is
/// decoded where the walk asks whether it is whitespace, as `repair_text` asks.
fn notes_a_repair(s: &str) -> bool {
    let b = s.as_bytes();
    // The byte after the whitespace characters from `j` (`repair_text`'s look ahead).
    let after_space = |j: usize| {
        let rest = s.get(j..).unwrap_or("");
        let blank: usize = rest
            .chars()
            .take_while(|c| c.is_whitespace())
            .map(char::len_utf8)
            .sum();
        b.get(j + blank).copied()
    };
    let mut i = 0;
    // Whether the last significant character was `{` or `,` (where a key may start).
    let mut key_may_start = false;
    while let Some(&c) = b.get(i) {
        match c {
            b'\'' => return true,
            b'"' => {
                i += 1;
                while let Some(&d) = b.get(i) {
                    i += 1;
                    match d {
                        // The escaped byte is copied as it is (a multi-byte character's
                        // first: the rest are none of the bytes below).
                        b'\\' => i += 1,
                        b'"' => break,
                        0..=0x1f => return true,
                        _ => {}
                    }
                }
                key_may_start = false;
            }
            b'/' if matches!(b.get(i + 1), Some(b'/' | b'*')) => return true,
            b',' => {
                if matches!(after_space(i + 1), Some(b'}' | b']')) {
                    return true;
                }
                key_may_start = true;
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|&d| d.is_ascii_alphanumeric() || d == b'_' || d == b'$')
                {
                    i += 1;
                }
                if key_may_start && after_space(i) == Some(b':') {
                    return true;
                }
                if matches!(b.get(start..i), Some(b"True" | b"False" | b"None")) {
                    return true;
                }
                key_may_start = false;
            }
            c if c.is_ascii() => {
                // `char::is_whitespace` of an ASCII character (U+000B included).
                if !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
                    key_may_start = c == b'{';
                }
                i += 1;
            }
            _ => {
                let ch = s.get(i..).and_then(|r| r.chars().next());
                if ch.is_some_and(|ch| !ch.is_whitespace()) {
                    key_may_start = false;
                }
                i += ch.map_or(1, char::len_utf8);
            }
        }
    }
    false
}

/// A decode error's message after `head`, written into room for it (`to_string` grows its
/// string from nothing, reallocating several times: a flood of broken markup writes one per
/// opener). serde_json's longest messages (`control character (\u0000-\u001F) found while
/// parsing a string at line L column C`) take ~90 bytes.
pub(crate) fn message_after(head: &str, e: &serde_json::Error) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(head.len() + 96);
    out.push_str(head);
    // Writing to a `String` cannot fail.
    let _ = write!(out, "{e}");
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    TrailingComma,
    SingleQuotes,
    PythonLiterals,
    UnquotedKeys,
    Comments,
    LiteralNewlines,
}

fn describe(kind: Kind) -> Repair {
    match kind {
        Kind::TrailingComma => Repair::new("trailing_comma", "removed a trailing comma"),
        Kind::SingleQuotes => Repair::new(
            "single_quotes",
            "turned single-quoted strings into JSON strings",
        ),
        Kind::PythonLiterals => {
            Repair::new("python_literals", "turned Python True/False/None into JSON")
        }
        Kind::UnquotedKeys => Repair::new("unquoted_keys", "quoted unquoted object keys"),
        Kind::Comments => Repair::new("comments", "removed comments"),
        Kind::LiteralNewlines => Repair::new(
            "literal_newlines",
            "escaped raw control characters inside strings",
        ),
    }
}

fn note(kinds: &mut Vec<Kind>, k: Kind) {
    if !kinds.contains(&k) {
        kinds.push(k);
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// One pass over `s`; returns the rewritten text and what was changed.
fn repair_text(s: &str) -> (String, Vec<Kind>) {
    let mut out = String::with_capacity(s.len() + 16);
    let mut kinds = Vec::new();
    // Sized once (a character takes at least a byte): collecting grows it from a guess,
    // reallocating a few times per call, which showed in floods of broken markup.
    let mut chars: Vec<(usize, char)> = Vec::with_capacity(s.len());
    chars.extend(s.char_indices());
    let mut i = 0;
    let mut last_sig = ' ';
    while let Some(&(_, c)) = chars.get(i) {
        match c {
            '"' | '\'' => {
                let quote = c;
                if quote == '\'' {
                    note(&mut kinds, Kind::SingleQuotes);
                }
                out.push('"');
                i += 1;
                while let Some(&(_, d)) = chars.get(i) {
                    i += 1;
                    match d {
                        '\\' => {
                            if let Some(&(_, e)) = chars.get(i) {
                                i += 1;
                                if e == '\'' && quote == '\'' {
                                    out.push('\'');
                                } else {
                                    out.push('\\');
                                    out.push(e);
                                }
                            }
                        }
                        d if d == quote => break,
                        '"' => out.push_str("\\\""),
                        '\n' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\n");
                        }
                        '\r' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\r");
                        }
                        '\t' => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str("\\t");
                        }
                        d if (d as u32) < 0x20 => {
                            note(&mut kinds, Kind::LiteralNewlines);
                            out.push_str(&format!("\\u{:04x}", d as u32));
                        }
                        d => out.push(d),
                    }
                }
                out.push('"');
                last_sig = '"';
            }
            '/' if matches!(chars.get(i + 1), Some((_, '/'))) => {
                note(&mut kinds, Kind::Comments);
                while let Some(&(_, d)) = chars.get(i) {
                    if d == '\n' {
                        break;
                    }
                    i += 1;
                }
            }
            '/' if matches!(chars.get(i + 1), Some((_, '*'))) => {
                note(&mut kinds, Kind::Comments);
                i += 2;
                while let Some(&(_, d)) = chars.get(i) {
                    i += 1;
                    if d == '*' && matches!(chars.get(i), Some((_, '/'))) {
                        i += 1;
                        break;
                    }
                }
            }
            ',' => {
                let mut j = i + 1;
                while let Some(&(_, d)) = chars.get(j) {
                    if !d.is_whitespace() {
                        break;
                    }
                    j += 1;
                }
                if matches!(chars.get(j), Some((_, '}' | ']'))) {
                    note(&mut kinds, Kind::TrailingComma);
                } else {
                    out.push(',');
                    last_sig = ',';
                }
                i += 1;
            }
            c if is_ident_start(c) => {
                let start = i;
                while let Some(&(_, d)) = chars.get(i) {
                    if !is_ident(d) {
                        break;
                    }
                    i += 1;
                }
                // The word is `s`'s own bytes (ASCII identifier characters): a slice, not a
                // collected copy (a flood of broken `[TOOL_CALLS]` markup repairs one word
                // a region).
                let from = chars.get(start).map_or(s.len(), |&(b, _)| b);
                let to = chars.get(i).map_or(s.len(), |&(b, _)| b);
                let word = s.get(from..to).unwrap_or("");
                let mut j = i;
                while let Some(&(_, d)) = chars.get(j) {
                    if !d.is_whitespace() {
                        break;
                    }
                    j += 1;
                }
                let is_key =
                    matches!(last_sig, '{' | ',') && matches!(chars.get(j), Some((_, ':')));
                if is_key {
                    note(&mut kinds, Kind::UnquotedKeys);
                    out.push('"');
                    out.push_str(word);
                    out.push('"');
                } else {
                    match word {
                        "True" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("true");
                        }
                        "False" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("false");
                        }
                        "None" => {
                            note(&mut kinds, Kind::PythonLiterals);
                            out.push_str("null");
                        }
                        _ => out.push_str(word),
                    }
                }
                last_sig = 'a';
            }
            c => {
                out.push(c);
                if !c.is_whitespace() {
                    last_sig = c;
                }
                i += 1;
            }
        }
    }
    kinds.sort();
    (out, kinds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(r: &[Repair]) -> Vec<&str> {
        r.iter().map(|r| r.kind.as_str()).collect()
    }

    // covers V-5
    #[test]
    fn each_repair_is_applied_and_reported() {
        let cases = [
            (r#"{"a":1,}"#, json!({"a":1}), "trailing_comma"),
            (
                r#"{'a':'it\'s "x"'}"#,
                json!({"a":"it's \"x\""}),
                "single_quotes",
            ),
            (
                r#"{"a":True,"b":None}"#,
                json!({"a":true,"b":null}),
                "python_literals",
            ),
            (
                r#"{a: 1, b_2: "x"}"#,
                json!({"a":1,"b_2":"x"}),
                "unquoted_keys",
            ),
            (
                "{\"a\":1 // one\n, /* two */ \"b\":2}",
                json!({"a":1,"b":2}),
                "comments",
            ),
            (
                "{\"a\":\"line\nbreak\"}",
                json!({"a":"line\nbreak"}),
                "literal_newlines",
            ),
        ];
        for (input, want, kind) in cases {
            let (v, r) = parse_lenient(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(v, want, "{input}");
            assert_eq!(kinds(&r), [kind], "{input}");
        }
    }

    // covers V-5
    #[test]
    fn valid_json_needs_no_repair_and_strings_are_untouched() {
        let (v, r) = parse_lenient(r#"{"a":"True, // not a comment,}"}"#).unwrap();
        assert_eq!(v, json!({"a":"True, // not a comment,}"}));
        assert!(r.is_empty());
    }

    // `might_repair` is false only where `repair_text` notes no repair: every input of
    // these tests, each cut at every byte, and markup floods.
    #[test]
    fn might_repair_covers_every_repair() {
        let mut inputs: Vec<String> = vec![
            r#"{"a":1,}"#.into(),
            r#"{'a':'it\'s "x"'}"#.into(),
            r#"{"a":True,"b":None}"#.into(),
            "[False]".into(),
            r#"{a: 1, b_2: "x"}"#.into(),
            "{\"a\":1 // one\n, /* two */ \"b\":2}".into(),
            "{\"a\":\"line\nbreak\"}".into(),
            "[\"tab\there\", \"bell\u{7}\"]".into(),
            "[TOOL_CALLS]".into(),
            "[Nonesuch, Truer]".into(),
            r#"{"a":1,"b""#.into(),
            "{a b c}".into(),
        ];
        let whole = inputs.clone();
        for s in &whole {
            inputs.extend(
                (0..s.len())
                    .filter(|&i| s.is_char_boundary(i))
                    .map(|i| s[..i].to_owned()),
            );
            inputs.extend(
                (0..s.len())
                    .filter(|&i| s.is_char_boundary(i))
                    .map(|i| s[i..].to_owned()),
            );
        }
        let mut skipped = 0;
        for s in &inputs {
            if !might_repair(s) {
                skipped += 1;
                assert!(repair_text(s).1.is_empty(), "{s:?}");
            }
        }
        assert!(skipped > 20, "{skipped}");
    }

    // covers R-6
    #[test]
    fn unrepairable_input_is_an_error() {
        for bad in [r#"{"a":1,"b""#, r#"{"a": }"#, "{a b c}", r#"{"a":1"#] {
            assert!(parse_lenient(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_recalled_failure_is_the_failure() {
        // Each text twice in a row (the second recalled), then the next: the same result as
        // `parse_lenient`'s every time, failures and successes alike.
        let long = format!("[{}x]", "1, ".repeat(30));
        for text in [
            "[TOOL_CALLS]",
            "[TOOL_CALLS]",
            "{a b c}",
            "{'a': 1,}",
            "{'a': 1,}",
            "[1]",
            "[TOOL_CALLS]",
            &long,
            &long,
            "[x]",
        ] {
            assert_eq!(parse_lenient_recalling(text), parse_lenient(text), "{text}");
        }
    }

    /// What `parse_lenient` gives when it always tries the repair after a failed decode.
    fn always_repairing(s: &str) -> Result<(Value, Vec<Repair>), String> {
        match serde_json::from_str::<Value>(s) {
            Ok(v) => Ok((v, Vec::new())),
            Err(first) => {
                let (fixed, kinds) = repair_text(s);
                match serde_json::from_str::<Value>(&fixed) {
                    Ok(v) if !kinds.is_empty() => {
                        Ok((v, kinds.into_iter().map(describe).collect()))
                    }
                    _ => Err(message_after("", &first)),
                }
            }
        }
    }

    /// Every prefix of each of `whole` (and each whole text, with `and_whole`), then `count`
    /// random texts of up to 31 characters of `alphabet`, drawn from `seed`.
    fn prefixes_and_random(
        whole: &[&str],
        and_whole: bool,
        alphabet: &str,
        mut seed: u64,
        count: usize,
    ) -> Vec<String> {
        let alphabet: Vec<char> = alphabet.chars().collect();
        let mut texts: Vec<String> = Vec::new();
        for w in whole {
            texts.extend(w.char_indices().map(|(i, _)| w[..i].to_owned()));
            if and_whole {
                texts.push((*w).to_owned());
            }
        }
        for _ in 0..count {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = (seed >> 59) as usize;
            let mut t = String::new();
            for k in 0..len {
                let r = seed.rotate_left(7 * k as u32 + 3) >> 40;
                t.push(alphabet[r as usize % alphabet.len()]);
            }
            texts.push(t);
        }
        texts
    }

    /// A decode that ran out of text (`is_eof`) is not repaired: every such text, here each
    /// prefix of valid and repairable JSON and random texts of JSON's and the repairs'
    /// bytes, gets no repair and the same error from the repairing path.
    #[test]
    fn eof_leaves_nothing_to_repair() {
        let whole = [
            r#"{"a": [1, -2.5e+3, true, false, null], "b": {"c": "x\"y\\ \u00e9 'q' /z"}}"#,
            "[\n {\"k\" :\t\"v, w\"} , [ ] ,{ }, \"é\u{2028}\", 0.5E7 ]",
            r#"{'a': 'it\'s', b: True, "c": None, "d": [1,], /* c */ "e": 1 // x
}"#,
            r#"{"text": "line
break", "n": False}"#,
        ];
        let alphabet = "{}[]\",:' /*\\\ntrueTrufalsFnulN01e-.+ax_$\u{e9}";
        let texts = prefixes_and_random(&whole, false, alphabet, 0x9e37_79b9_7f4a_7c15, 20_000);
        let mut eofs = 0;
        for t in &texts {
            if serde_json::from_str::<Value>(t).is_err_and(|e| e.is_eof()) {
                eofs += 1;
                assert!(repair_text(t).1.is_empty(), "{t:?}");
                assert_eq!(parse_lenient(t), always_repairing(t), "{t:?}");
            }
        }
        assert!(eofs > 1_000, "{eofs}");
    }

    /// `notes_a_repair` decides as `repair_text` notes, over prefixes of valid and
    /// repairable JSON and random texts of JSON's and the repairs' bytes (Unicode blanks,
    /// control characters and multi-byte characters after a backslash among them).
    #[test]
    fn notes_a_repair_is_what_repair_text_notes() {
        let whole = [
            r#"{"a": [1, -2.5e+3, true, false, null], "b": {"c": "x\"y\\ \u00e9 'q' /z"}}"#,
            "{'a': 'it\\'s', b\u{a0}: True, \"c\": None, \"d\": [1,\u{2028}], /* c */ \"e\": 1 // x\n}",
            "{\"text\": \"line\nbreak\\\u{e9}\", \u{b}k: False, $x_1 : 1, \"t\": \"a\tb\"}",
        ];
        let alphabet =
            "{}[]\",:' /*\\\n\t\u{b}\u{1}\u{a0}\u{85}\u{2028}trueTrufalsFnulN01e-ax_$\u{e9}";
        let texts = prefixes_and_random(&whole, true, alphabet, 0x2545_f491_4f6c_dd1d, 50_000);
        let mut noted = 0;
        for t in &texts {
            let notes = !repair_text(t).1.is_empty();
            noted += usize::from(notes);
            assert_eq!(notes_a_repair(t), notes, "{t:?}");
        }
        assert!(noted > 1_000 && noted < texts.len() - 1_000, "{noted}");
    }

    /// `never_decodes` says a text fails only where the lenient decode fails: every prefix
    /// of valid, repairable and broken JSON (each whole too), and random texts of JSON's,
    /// the repairs' and markup's bytes; it says so of most that fail.
    #[test]
    fn never_decodes_only_what_fails() {
        let whole = [
            r#"{"a": [1, -2.5e+3, true, false, null, 0, 1E5], "b": {"c": "x\"y\\ \u00e9 'q' /z"}}"#,
            "{'a': 'it\\'s', b\u{a0}: True, \"c\": None, \"d\": [1,\u{2028}], /* c */ \"e\": 1 // x\n}",
            "{\"text\": \"line\nbreak\\\u{e9}\", \u{b}k: False, $x_1 : 1, \"t\": \"a\tb\", z: [,]}",
            "[get_weather(city=\"Paris\"), {a: 1,}, [1, a: 2], {,}, -1.5e-3, 01, 1.]",
            "{\"\nthe}</think:{\"\nweather}",
            "{\"a\":0[\"Action:\n```json{\"a\":1[\"",
            "{\"a\":alphaAction: ```json{\"a\":beta",
        ];
        let alphabet =
            "{}[]\",:' /*\\\n\t\u{b}\u{1}\u{a0}\u{2028}trueTrufalsFnulN01e-+.ax_$\u{e9}<>()";
        let mut texts = prefixes_and_random(&whole, true, alphabet, 0x6a09_e667_f3bc_c908, 60_000);
        let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        texts.extend([
            nested(64),
            nested(65),
            nested(200),
            "{a:1}".into(),
            "{true: 1}".into(),
        ]);
        let (mut fails, mut said) = (0, 0);
        for t in &texts {
            let never = never_decodes(t);
            let fail = decode_lenient(t).is_err();
            assert!(!never || fail, "{t:?}");
            fails += usize::from(fail);
            said += usize::from(never);
        }
        assert!(said * 10 > fails * 9, "{said} of {fails}");
        for (t, never) in [
            ("{a:1}", false),
            ("{true: 1}", false),
            ("[,]", false),
            ("[1e5, -0.5E+2]", false),
            ("{\"a\":1 // c\n}", false),
            ("{\"a\":1, /* c */}x", false),
            ("{\"\nthe}</think:{\"\nweather}", true),
            ("[get_weather()]", true),
            ("{\"a\": 1]", true),
            ("[1 2]", true),
        ] {
            assert_eq!(never_decodes(t), never, "{t:?}");
        }
    }

    /// `skip_error` is serde_json's error for `Value`, message and position, over texts
    /// that fail (numbers out of range, bad escapes and lone surrogates, nesting past
    /// serde_json's bound among them); and `decode_or_failure`, after a failure or not,
    /// fails as `decode_lenient` does.
    #[test]
    fn skip_error_is_the_value_error() {
        let whole = [
            r#"{"a": [1, -2.5e+3, 1e400, true, "\ud800", "\x", "\u12"], "b": {"c": "x\"y\\ \u00e9"}}"#,
            "{\"text\": \"line\nbreak\", k: False, \"t\": [1,], \"u\": -}",
            "{\"a\":0[\"Action:\n```json{\"a\":1[\"",
        ];
        let alphabet = "{}[]\",:' /\\\n\t\u{1}\u{a0}trueTrufalsFnulN01e-+.ax_$\u{e9}u";
        let mut texts = prefixes_and_random(&whole, true, alphabet, 0xbb67_ae85_84ca_a73b, 30_000);
        texts.push(format!("{}1{}", "[".repeat(130), "]".repeat(130)));
        let mut failed = 0;
        for t in &texts {
            let Err(e) = serde_json::from_str::<Value>(t) else {
                continue;
            };
            failed += 1;
            assert_eq!(skip_error(t).to_string(), e.to_string(), "{t:?}");
            // Once after a failure (`LAST_DECODE_FAILED` set), once after a success.
            for before in ["{", "{}"] {
                let _ = decode_or_failure(before);
                let got = decode_or_failure(t).map_err(|f| f.message_after(""));
                assert_eq!(got, parse_lenient(t), "{t:?}");
            }
        }
        assert!(failed > 10_000, "{failed}");
        assert!(
            FAILED_UNBUILT.get() * 2 > failed,
            "{}",
            FAILED_UNBUILT.get()
        );
    }

    /// Where `strict_failure` reads an error, serde_json's is that error (code, line and
    /// column), over prefixes of broken blocks and random texts of JSON's and markup's
    /// bytes; it reads most of them.
    #[test]
    fn strict_failure_is_the_serde_error() {
        let whole = [
            "{\"a\":0[\"Action:\n```json{\"a\":1[\"",
            "{\"a\":12Action:\n```json{\"a\":13",
            "{\"a\":theAction: ```json{\"a\":weather",
            " [ 1 ,\n\r\t{ \"b\" : [ true , false , null ] } , -0 , -12 x ] y",
            "{\"k\" \n 1}",
            "[1, 2.5, 1e3, 01, -, \"a\\b\", \"\u{1}\", tru, ]",
            // Control characters in strings and keys, words that are no literal (`expected
            // ident`): a flood of `Action: ```json{"a":"\n{w}` or `{"a":{w}`.
            "{\"a\":\"\ntheAction: ```json{\"a\":\"\nweather",
            "{\"a\":theAction: ```json{\"a\":nothing}",
            " [\"x\", \n\"\u{1f}\", {\"k\u{1}\": 1}, fals, nul\n, t\u{e9}]",
        ];
        let alphabet = "{}[]\",: \n\t\r\\\u{1}trueflsn01259.e-xA\u{e9}";
        let texts = prefixes_and_random(&whole, true, alphabet, 0x3c6e_f372_fe94_f82b, 40_000);
        let (mut read, mut failed) = (0, 0);
        for t in &texts {
            let Err(e) = serde_json::from_str::<Value>(t) else {
                assert!(strict_failure(t).is_none(), "{t:?}");
                continue;
            };
            failed += 1;
            if let Some(k) = strict_failure(t) {
                read += 1;
                assert_eq!(k.message_after(""), e.to_string(), "{t:?}");
            }
        }
        assert!(read * 3 > failed, "{read} of {failed}");
    }

    /// `never_decodes_nor_calls` is `never_decodes` and no call's keys (`looks_like_call`),
    /// over texts of keys, quotes of both kinds, escapes and JSON's bytes (keys before,
    /// inside and after the byte the walk stops at, in strings of the other quote).
    #[test]
    fn never_decodes_nor_calls_is_both() {
        let pieces = [
            "\"name\"",
            "'name'",
            "\"arguments\"",
            "'parameters'",
            "\"tools\"",
            "\"command\"",
            "\"session_id\"",
            "\"",
            "'",
            "\\",
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            " ",
            "\n",
            "x",
            "1",
            "true",
            "name",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut seen = [0usize; 3];
        for _ in 0..60_000 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let mut t = String::new();
            for k in 0..(seed >> 60) as u32 + 2 {
                let r = (seed.rotate_left(5 * k + 3) >> 40) as usize;
                t.push_str(pieces[r % pieces.len()]);
            }
            let never = never_decodes(&t);
            let keys = crate::families::bare_json::looks_like_call(t.as_bytes());
            assert_eq!(never_decodes_nor_calls(&t), never && !keys, "{t:?}");
            seen[usize::from(never) + usize::from(never && keys)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 500), "{seen:?}");
    }

    /// Where `known_failure` finds a failure, the lenient decode fails with the message it
    /// writes: over prefixes of objects whose first key is or is not followed by a colon
    /// (control characters, blanks, comments, repairs after it) and random texts that open
    /// an object with a key.
    #[test]
    fn known_failure_is_the_decode_failure() {
        let whole = [
            "{\"Action: ```json{\"1Action: ```json{\"2Action: ",
            "{\"Action:\n```json{\"Action:\n",
            " {\r\n\t\"a\tb\" : 1}",
            "{\"a\nb\": 'x', c: True,}",
            "{\"a\" /* c */ : 1}",
            "{\"a\" // c\n: 1}",
            "{\"k\u{e9}\" \n x, 'y': [1,], z: None}",
            "{\"a\\\"b\": 1}",
            "{\"a\"\u{a0}: 1}",
        ];
        let alphabet = "{}[]\",:' /*\\\n\t\r\u{b}\u{1}\u{a0}trueTrufalsFnulN01e-ax_$\u{e9}";
        let mut texts = prefixes_and_random(&whole, true, alphabet, 0x51_7cc1_b727_220a, 20_000);
        let random: Vec<String> = texts.iter().map(|t| format!("{{\"{t}")).collect();
        texts.extend(random);
        let mut known = 0;
        for t in &texts {
            let Some(k) = known_failure(t) else { continue };
            known += 1;
            let e = decode_lenient(t).err();
            let e = e.unwrap_or_else(|| panic!("{t:?} decodes"));
            assert_eq!(k.message_after("h: "), message_after("h: ", &e), "{t:?}");
            assert_eq!(
                Failure::Known(k).message_after(""),
                parse_lenient(t).err().unwrap_or_default()
            );
        }
        assert!(known > 5_000, "{known}");
    }
}
