//! `call_syntax` (F-PY-1): `name("a", 1, 2)` and `name(a=1)`. Positional values
//! map onto the tool's schema properties in declared order, type-directed: each value goes
//! to the next property whose schema accepts it, and a fixed-length array property
//! (`minItems == maxItems`) absorbs that many consecutive values. So
//! `computer_use("left_click", 100, 200)` → `{"action":"left_click","coordinate":[100,200]}`.
//! Prose is full of `word(...)`, so in auto mode this format needs a registry and accepts
//! only registered names; with `--format call_syntax` and no registry, keyword arguments
//! still work and positional ones are reported (there is no schema to map them onto).

use std::ops::Range;

use serde_json::{Map, Value};
use toolcall_core::{Level, Repair, ToolSpec};

use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{
    Advance, Family, Instructions, Message, Note, Pieces, Plain, ReadCx, RegionReader, UnitCall,
};
use crate::repair::decode_lenient;
use crate::scanner::{Scan, ScanError, Scanner, split_top_level};

/// Characters of a tool name (ids may contain `.`, `-` and `::`).
pub(crate) const fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b':')
}

/// A character of a tool name inside explicit markup (`[TOOL_CALLS]NAME`, GLM's `NAME`, a
/// Python call list behind a marker): letters and digits of any script (`获取天气`, as
/// Python identifiers and the peers' parsers allow), `_`, `.`, `-`, `:`. Prose keeps the
/// ASCII [`is_name_byte`]: there a non-ASCII word before `(` is text.
pub(crate) fn is_tag_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | ':')
}

/// Byte length of the tool name (see [`is_tag_name_char`]) that starts `s`.
pub(crate) fn tag_name_len(s: &str) -> usize {
    s.char_indices()
        .find(|&(_, c)| !is_tag_name_char(c))
        .map_or(s.len(), |(i, _)| i)
}

/// Parses the text between the parentheses of `name(...)`.
pub(crate) fn parse_args(
    name: &str,
    inner: &str,
    ctx: &Ctx,
    format: FormatId,
    span: Range<usize>,
) -> Result<Draft, String> {
    parse_args_into(name, inner, ctx, format, span, |e| {
        let mut m = String::new();
        // Writing to a `String` cannot fail.
        let _ = e.write(inner, &mut m);
        m
    })
}

/// [`parse_args`] with its error unwritten ([`ArgError`]).
pub(crate) fn parse_args_or(
    name: &str,
    inner: &str,
    ctx: &Ctx,
    format: FormatId,
    span: Range<usize>,
) -> Result<Draft, ArgError> {
    parse_args_into(name, inner, ctx, format, span, |e| e)
}

/// Why a `name(...)`'s arguments do not parse ([`parse_args_or`]): a written message, or an
/// argument that is no literal, its message written only when it is needed
/// ([`ArgError::write`]: a flood of closed calls whose arguments differ at each copy,
/// `get_weather(x{#})`, wrote a message for each note the cap then dropped).
#[derive(Debug)]
pub(crate) enum ArgError {
    Text(String),
    /// `argument {part:?} is not a literal: {error}`, the part at these offsets of the
    /// arguments' text.
    NotLiteral(Range<usize>, serde_json::Error),
}

impl ArgError {
    /// Writes the message; `inner`: the arguments' text the error is about.
    pub(crate) fn write(&self, inner: &str, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        match self {
            ArgError::Text(m) => out.write_str(m),
            ArgError::NotLiteral(part, e) => {
                let part = inner.get(part.clone()).unwrap_or("");
                // In pieces: a writer that stops once it has what it needs (the cap's
                // kind) stops before the error is written.
                out.write_str("argument ")?;
                write!(out, "{part:?}")?;
                out.write_str(" is not a literal: ")?;
                write!(out, "{e}")
            }
        }
    }
}

/// [`parse_args`] and [`parse_args_or`]: the error made by `err` (one body, inlined into
/// both: through a result of the other kind, each call's draft was moved from one result to
/// the other, `pythonic/small` 1 % more).
#[inline(always)]
fn parse_args_into<E>(
    name: &str,
    inner: &str,
    ctx: &Ctx,
    format: FormatId,
    span: Range<usize>,
    err: impl Fn(ArgError) -> E,
) -> Result<Draft, E> {
    let text = |m: &str| err(ArgError::Text(m.to_owned()));
    let mut positional = Vec::new();
    let mut keywords = Map::new();
    let mut repairs: Vec<Repair> = Vec::new();
    if !inner.trim().is_empty() {
        let parts = split_top_level(inner, b',', ctx.limits.max_depth)
            .map_err(|e| err(ArgError::Text(e)))?;
        let count = parts.len();
        for (i, part) in parts.into_iter().enumerate() {
            let part = part.trim();
            if part.is_empty() {
                if i + 1 == count {
                    continue; // trailing comma, as Python allows
                }
                return Err(text("empty argument"));
            }
            let (key, value_text) = split_keyword(part);
            let (value, r) = decode_lenient(value_text).map_err(|e| {
                // The part's offsets in `inner` (a slice of it).
                let at = (part.as_ptr() as usize).saturating_sub(inner.as_ptr() as usize);
                err(ArgError::NotLiteral(at..at + part.len(), e))
            })?;
            for x in r {
                if !repairs.contains(&x) {
                    repairs.push(x);
                }
            }
            match key {
                Some(k) => {
                    keywords.insert(k.to_owned(), value);
                }
                None => {
                    if !keywords.is_empty() {
                        return Err(text("positional argument after a keyword argument"));
                    }
                    positional.push(value);
                }
            }
        }
    }
    let mut args = Map::new();
    if !positional.is_empty() {
        let spec = ctx.spec(name).ok_or_else(|| {
            err(ArgError::Text(format!(
                "positional arguments of {name:?} need the tool's schema (pass --tools)"
            )))
        })?;
        args = map_positional(&positional, spec).map_err(|e| err(ArgError::Text(e)))?;
    }
    for (k, v) in keywords {
        if args.contains_key(&k) {
            return Err(err(ArgError::Text(format!("argument {k:?} given twice"))));
        }
        args.insert(k, v);
    }
    let mut d = Draft::new(name, Some(Value::Object(args)), format);
    d.repairs = repairs;
    d.span = span;
    Ok(d)
}

/// `key=value` (not `==`) → (Some(key), value); otherwise the whole part.
fn split_keyword(part: &str) -> (Option<&str>, &str) {
    let bytes = part.as_bytes();
    let mut i = 0;
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        i += 1;
    }
    if i == 0 || bytes.first().is_some_and(u8::is_ascii_digit) {
        return (None, part);
    }
    let mut j = i;
    while bytes.get(j).is_some_and(|b| *b == b' ' || *b == b'\t') {
        j += 1;
    }
    if bytes.get(j) == Some(&b'=') && bytes.get(j + 1) != Some(&b'=') {
        let key = part.get(..i).unwrap_or("");
        let value = part.get(j + 1..).unwrap_or("").trim();
        return (Some(key), value);
    }
    (None, part)
}

fn type_accepts(ty: &str, v: &Value) -> bool {
    match ty {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// Whether a property's schema accepts a value (type and enum only: enough to direct).
fn accepts(schema: &Value, v: &Value) -> bool {
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        return false;
    }
    match schema.get("type") {
        Some(Value::String(t)) => type_accepts(t, v),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .any(|t| type_accepts(t, v)),
        _ => true,
    }
}

fn fixed_len(schema: &Value) -> Option<usize> {
    if schema.get("type").and_then(Value::as_str) != Some("array") {
        return None;
    }
    let min = schema.get("minItems").and_then(Value::as_u64)?;
    let max = schema.get("maxItems").and_then(Value::as_u64)?;
    (min == max && min > 0 && min <= 64).then_some(min as usize)
}

/// Type-directed mapping of positional values onto the schema's properties.
pub(crate) fn map_positional(
    values: &[Value],
    spec: &ToolSpec,
) -> Result<Map<String, Value>, String> {
    let props: Vec<(&String, &Value)> = spec
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    let mut out = Map::new();
    let mut p = 0;
    let mut i = 0;
    while let Some(v) = values.get(i) {
        let mut placed = false;
        while let Some((key, schema)) = props.get(p) {
            p += 1;
            if let Some(n) = fixed_len(schema)
                && !v.is_array()
            {
                let item_schema = schema.get("items").cloned().unwrap_or(Value::Bool(true));
                let run = values.get(i..i + n);
                if let Some(run) = run
                    && run.iter().all(|x| accepts(&item_schema, x))
                {
                    out.insert((*key).clone(), Value::Array(run.to_vec()));
                    i += n;
                    placed = true;
                    break;
                }
                continue;
            }
            if accepts(schema, v) {
                out.insert((*key).clone(), v.clone());
                i += 1;
                placed = true;
                break;
            }
        }
        if !placed {
            return Err(format!(
                "positional argument {v} fits no remaining parameter of {:?}",
                spec.name
            ));
        }
    }
    Ok(out)
}

/// `key=value, ...` for a prompt example: JSON values, or Python literals.
pub(crate) fn keyword_args(args: &Map<String, Value>, python: bool) -> String {
    args.iter()
        .map(|(k, v)| {
            let v = if python {
                python_literal(v, 0)
            } else {
                v.to_string()
            };
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A JSON value written as a Python literal (bounded depth: examples are small).
fn python_literal(v: &Value, depth: usize) -> String {
    if depth > 8 {
        return "None".to_owned();
    }
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|i| python_literal(i, depth + 1))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_literal(v, depth + 1)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Reads one `name(...)` region: the identifier, then balanced parentheses (strings and
/// brackets inside them counted by the shared [`Scanner`]).
struct CallReader {
    /// Region offset of the `(` (the identifier's length).
    open: usize,
    /// Made at the first read ([`CallSyntax::call_start`]), resumed from a failed scan
    /// this region lies in when there is one ([`crate::scanner::FailedScan`]: `f(f(f(…`
    /// scans each byte a bounded number of times, not once per opener before it).
    scanner: Scanner,
    /// The first read's verdict, acted on at the first `advance` (on the same bytes).
    first: Option<Scan>,
}

impl RegionReader for CallReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let open = self.open;
        let name = region.get(..open).unwrap_or("");
        let at = cx.base + open;
        let scanner = &mut self.scanner;
        let scan = match self.first.take() {
            Some(scan) => scan,
            None => scanner.advance(region.as_bytes().get(open..).unwrap_or(&[])),
        };
        match scan {
            Scan::NeedMore if !is_final => Advance::NeedMore,
            Scan::NeedMore => Advance::Dropped {
                end: region.len(),
                why: format!("truncated tool call: {name}( is not closed; not run"),
            },
            Scan::Done(n) => match closed_call(region, open, n, cx) {
                Ok(d) => Advance::Done {
                    end: open + n,
                    outcome: Outcome {
                        drafts: vec![d],
                        ..Outcome::default()
                    },
                },
                Err(plain) => Advance::Text(plain),
            },
            Scan::Fail(e) => {
                let consumed = scanner.consumed();
                let scanner = std::mem::replace(&mut self.scanner, Scanner::new(0, true));
                scanner.fail_into(cx.failed_call_scan, at);
                Advance::Text(failed(e, open, consumed, cx))
            }
        }
    }
}

/// The `name(...)` at the start of `region`, its `(` at `open`, closed `n` bytes on: its
/// call, or text with a note where its arguments do not parse.
fn closed_call(region: &str, open: usize, n: usize, cx: &mut ReadCx<'_>) -> Result<Draft, Plain> {
    let end = open + n;
    if let Some(plain) = kept_call_text(region, end, cx) {
        return Err(plain);
    }
    let name = region.get(..open).unwrap_or("");
    let inner = region.get(open + 1..end - 1).unwrap_or("");
    let span = cx.span(0, end);
    let closed = region.get(..end).unwrap_or("");
    match parse_args_or(name, inner, cx.ctx, FormatId::CALL_SYNTAX, span.clone()) {
        Ok(d) => Ok(d),
        // Kept unwritten: the engine writes its note, or only its kind, when it counts it.
        Err(e) => match keep_call_error(closed, open, e, cx) {
            Ok(slot) => Err(Plain {
                end,
                scanned: end,
                diagnostic: Some(Note {
                    level: Level::Error,
                    message: Message::Kept(slot),
                    span,
                }),
                label: None,
            }),
            Err(e) => {
                let mut text = String::new();
                // Writing to a `String` cannot fail.
                let _ = write_call_note(name, inner, &e, &mut text);
                Err(text_plain(end, text, span))
            }
        },
    }
}

/// [`crate::family::NameMemo::keep_call_error`] (not in tests that turn the memo off:
/// there each note is written at once).
fn keep_call_error(
    closed: &str,
    open: usize,
    e: ArgError,
    cx: &mut ReadCx<'_>,
) -> Result<usize, ArgError> {
    #[cfg(test)]
    if tests::KEPT_OFF.with(std::cell::Cell::get) {
        return Err(e);
    }
    cx.names.keep_call_error(closed, open, e)
}

/// The note of a closed `name(...)` whose arguments `inner` do not parse (`e`).
pub(crate) fn write_call_note(
    name: &str,
    inner: &str,
    e: &ArgError,
    out: &mut impl std::fmt::Write,
) -> std::fmt::Result {
    out.write_str(name)?;
    out.write_str("(...) left as text, not run: ")?;
    e.write(inner, out)
}

/// A closed `name(...)` of `region[..end]`, the same bytes as the last region whose
/// arguments did not parse: text with the same note ([`crate::family::NameMemo::call_text`]).
/// Its note is the kept one, not copied ([`Message::Kept`]).
fn kept_call_text(region: &str, end: usize, cx: &mut ReadCx<'_>) -> Option<Plain> {
    #[cfg(test)]
    if tests::KEPT_OFF.with(std::cell::Cell::get) {
        return None;
    }
    let slot = cx.names.call_slot(region.get(..end)?)?;
    Some(Plain {
        end,
        scanned: end,
        diagnostic: Some(Note {
            level: Level::Error,
            message: Message::Kept(slot),
            span: cx.span(0, end),
        }),
        label: None,
    })
}

/// The note of the closed `name(...)` whose name is at `name` (region offsets) and whose
/// `(` at region offset `paren` closes `n` bytes on (`from` its bytes from the `(`), when
/// its bytes hold no other `(` and its arguments do not parse (as [`closed_call`] decides
/// it, the note kept for the next): `None` where it is a call, or may read another `(`.
fn closed_text(
    region: &str,
    name: Range<usize>,
    paren: usize,
    n: usize,
    from: &[u8],
    cx: &mut ReadCx<'_>,
) -> Option<(Level, String)> {
    if name.end != paren || from.get(1..n).is_none_or(|b| b.contains(&b'(')) {
        return None;
    }
    let call = region.get(name.start..)?;
    match closed_call(call, paren - name.start, n, cx) {
        Ok(_) => None,
        Err(Plain {
            diagnostic:
                Some(Note {
                    level,
                    message: Message::Text(text),
                    ..
                }),
            ..
        }) => Some((level, text)),
        Err(Plain {
            diagnostic:
                Some(Note {
                    level,
                    message: Message::Kept(slot),
                    ..
                }),
            ..
        }) => Some((level, cx.names.kept_text(slot)?.to_owned())),
        Err(_) => None,
    }
}

/// A closed call's region up to `end` as text, with its note.
fn text_plain(end: usize, text: String, span: Range<usize>) -> Plain {
    Plain {
        end,
        scanned: end,
        diagnostic: Some(Note::text(Level::Error, text, span)),
        label: None,
    }
}

/// A `name(` region whose scan failed after `consumed` bytes from its `(` (the failed scan
/// kept for the regions opened inside it): the name and `(` are text, the scan resumes
/// inside the parentheses.
fn failed(e: ScanError, open: usize, consumed: usize, cx: &ReadCx<'_>) -> Plain {
    let span = cx.span(0, open + consumed);
    Plain {
        end: open + 1,
        scanned: open + 1,
        diagnostic: Some(left_as_text(open, e, span)),
        label: None,
    }
}

/// `{name}(...) left as text: {e}` (the name is `region[..open]`), in pieces: a flood of
/// `name(` makes one an opener, and the cap reports the first few ([`Note`]).
fn left_as_text(open: usize, e: ScanError, span: Range<usize>) -> Note {
    Note {
        level: Level::Error,
        message: Message::Pieces(Pieces {
            head: "",
            slice: 0..open,
            tail: "(...) left as text: ",
            error: Some(e),
        }),
        span,
    }
}

/// How many bytes [`CallSyntax::failed_call_scans`] reads from each `(` of a unit before
/// any reads on.
const FIRST_LOOK: usize = 64;

impl FormatId {
    pub(crate) const CALL_SYNTAX: FormatId = FormatId::builtin("call_syntax");
}

pub(crate) struct CallSyntax;

impl Family for CallSyntax {
    fn generic_because(&self) -> Option<&'static str> {
        Some("calls written `name(...)` in prose, read only for registered tools")
    }
    fn id(&self) -> &'static str {
        FormatId::CALL_SYNTAX.as_str()
    }
    fn description(&self) -> &'static str {
        "name(args) with positional arguments mapped onto the schema, or keywords; registered tools only"
    }
    fn example(&self) -> &'static str {
        r#"computer_use("left_click", 100, 200)"#
    }
    // Prose is full of `word(`: in auto mode only with a registry, and only its names.
    fn call_syntax(&self, ctx: &Ctx) -> bool {
        ctx.registry.is_some() || ctx.explicit
    }
    fn calls_name(&self, name: &str, cx: &mut ReadCx<'_>) -> bool {
        cx.strict_name_ok(name)
    }
    // The bracket scan runs here: one that fails within the bytes at hand (a flood of
    // `name(`, each opened inside the last) is text with no reader built.
    fn call_start(
        &self,
        region: &str,
        open: usize,
        cx: &mut ReadCx<'_>,
    ) -> Result<Box<dyn RegionReader>, Plain> {
        let at = cx.base + open;
        let bytes = region.as_bytes().get(open..).unwrap_or(&[]);
        // A closed call the memo keeps whose `)` is the first after its `(`: text with its
        // kept note before any bracket scan. Its bytes decide the scan, which closes there
        // as the kept region's did (a copy of `get_weather({w}) ` scanned its few bytes,
        // ~330 instructions). Asked only once the memo keeps a region.
        let mut tried = None;
        if cx.names.keeps_calls()
            && let Some(close) = memchr::memchr(b')', bytes.get(..256).unwrap_or(bytes))
        {
            #[cfg(test)]
            tests::EARLY_ASKED.with(|n| n.set(n.get() + 1));
            if let Some(plain) = kept_call_text(region, open + close + 1, cx) {
                return Err(plain);
            }
            tried = Some(close + 1);
        }
        let max_depth = cx.ctx.limits.max_depth;
        match Scanner::scan_from(cx.failed_call_scan, at, b'(', max_depth, true, bytes) {
            Err((e, consumed)) => Err(failed(e, open, consumed, cx)),
            // A closed call of the same bytes as the last whose arguments did not parse is
            // text with no reader built either (a flood of `get_weather(get_weather(x)`
            // boxed one at each inner call, ~1,000 instructions); others are read by their
            // reader (parsed here, a call cost 1.2 % more, `call_syntax/100 calls`).
            Ok((scanner, first)) => match first {
                Scan::Done(n) => match (tried != Some(n))
                    .then(|| kept_call_text(region, open + n, cx))
                    .flatten()
                {
                    Some(plain) => {
                        cx.failed_call_scan.spare_scanner(scanner);
                        Err(plain)
                    }
                    None => Ok(Box::new(CallReader {
                        open,
                        scanner,
                        first: Some(first),
                    })),
                },
                first => Ok(Box::new(CallReader {
                    open,
                    scanner,
                    first: Some(first),
                })),
            },
        }
    }
    // A failed scan's verdict is a fact about the bytes it read (R-1): a new scan from
    // a `(` whose bytes up to where another's failed are a copy of those fails the same way
    // after as many bytes (a resumed or memoised scan reads as a new one would). So each
    // `(` of a repeating unit is scanned once, here, and the engine decides every copy
    // whose bytes that far lie in the periodic run with it, whatever the unit holds
    // (strings that swallow the next unit, brackets, junk) and however far the scan read.
    // So is a closed call's (`get_weather(computer_use(x)`: the inner call closes in each
    // copy, the outer scan fails `max_depth` copies on): its bytes, which hold no other
    // `(` of the unit, decide it, and one whose arguments do not parse is text with the
    // same note at every copy (one that parses is a call: nothing is passed). Each opener
    // of such floods was read one by one (its resumed scan, the closed call's new scan,
    // the note kept for it copied: ~3,700 instructions a 27-byte unit, 38x prose).
    fn failed_call_scans(
        &self,
        region: &str,
        open: usize,
        parens: &[usize],
        names: &[Range<usize>],
        decided: &mut [UnitCall],
        reach: &mut [usize],
        cx: &mut ReadCx<'_>,
    ) -> bool {
        let bytes = region.as_bytes().get(open..).unwrap_or(&[]);
        if decided.len() != parens.len()
            || reach.len() != parens.len()
            || names.len() != parens.len()
        {
            return false;
        }
        let max_depth = cx.ctx.limits.max_depth;
        // Each scan first over its next `FIRST_LOOK` bytes: an inner call that closes
        // (`get_weather(computer_use(x)`) is found there, and one that is a call ends the
        // look before a scan that fails reads `max_depth` copies on (~75 k instructions a
        // 28-byte unit, asked again a few openers on where copies differ in digits).
        let mut scans = Vec::with_capacity(parens.len());
        for (k, (&p, name)) in parens.iter().zip(names).enumerate() {
            let Some(from) = bytes.get(p..) else {
                return false;
            };
            let mut sc = Scanner::new(max_depth, true);
            let first = sc.advance(from.get(..FIRST_LOOK).unwrap_or(from));
            if let Scan::Done(n) = first {
                let Some(d) = decided.get_mut(k) else {
                    return false;
                };
                // (The first too: a unit whose first call closed at once, `get_weather(x)`,
                // where the engine checks it closed where its read did.)
                match closed_text(region, name.clone(), open + p, n, from, cx) {
                    Some((level, text)) => *d = UnitCall::Closed(level, text),
                    None => return false,
                }
                if let Some(r) = reach.get_mut(k) {
                    *r = p + n;
                }
            }
            scans.push((sc, first));
        }
        for (((&p, (mut sc, first)), d), reach) in parens
            .iter()
            .zip(scans)
            .zip(decided.iter_mut())
            .zip(reach.iter_mut())
        {
            let scan = match first {
                Scan::NeedMore => match bytes.get(p..) {
                    Some(from) => sc.advance(from),
                    None => return false,
                },
                Scan::Done(_) => continue,
                scan => scan,
            };
            let Scan::Fail(e) = scan else {
                return false;
            };
            *d = UnitCall::Failed(e);
            *reach = p + sc.consumed();
        }
        true
    }
    fn failed_call_note(
        &self,
        slice: Range<usize>,
        error: ScanError,
    ) -> Option<(Level, Pieces)> {
        let note = left_as_text(0, error, 0..0);
        match note.message {
            Message::Pieces(p) => Some((note.level, Pieces { slice, ..p })),
            Message::Text(_) | Message::Kept(_) => None,
        }
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call a tool, write it like a function call: tool_name(argument=\"value\", other=1). Strings are double-quoted; numbers, true, false, arrays and objects are written as JSON.",
            several: "- To make several calls, write each on its own line; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{name}({})", keyword_args(args, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    thread_local! {
        /// Turns the closed-call memo off ([`kept_call_text`] finds nothing, nothing is
        /// kept): every closed call's arguments are parsed and its note written and counted
        /// anew.
        pub(crate) static KEPT_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// The times `call_start` looked for a kept region before its bracket scan.
        pub(crate) static EARLY_ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A parse with the memo's kept notes ([`Message::Kept`], counted by the slot the cap
    /// gave them first, written only when reported) equals one that writes and counts
    /// every note anew: floods of closed calls that repeat a few texts in turn and that
    /// differ at each copy (numbered), past the cap's share, between other notes (fails if
    /// a kept note is counted in another slot, skipped, or reported with another text).
    #[test]
    fn kept_notes_count_as_written_ones() {
        let mut tools = toolcall_core::Registry::new();
        for name in ["get_weather", "computer_use"] {
            let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
            assert!(tools.add_spec(ToolSpec::new(name, "", schema)).is_ok());
        }
        let o = crate::ParseOptions {
            tools: Some(std::sync::Arc::new(tools)),
            ..crate::ParseOptions::default()
        };
        // (Some whose first `)` does not close the call: `(x)`, `")"`.)
        let words = ["the", "weather", "x", "a b", "7", "it's", "\"q", "y1", "(x) 1", "\")\" z"];
        let mut text = String::from("Hi ");
        for i in 0..300 {
            let w = words[i % words.len()];
            text.push_str(&format!("get_weather({w}) "));
            if i % 7 == 3 {
                text.push_str(&format!("computer_use({w}, {i}) "));
            }
            if i % 11 == 5 {
                text.push_str("[TOOL_CALLS] x ");
            }
            // Numbered: a new region at each copy (and a note longer than its kind reads).
            text.push_str(&format!("get_weather(x{i}) computer_use(\"a\", {i}q) "));
            if i % 5 == 0 {
                text.push_str(&format!("get_weather(\"{}\" {i}) ", "é\\\"".repeat(i % 30)));
            }
        }
        let parse = |off: bool| {
            KEPT_OFF.with(|k| k.set(off));
            let p = crate::parse(&text, &o);
            KEPT_OFF.with(|k| k.set(false));
            p
        };
        EARLY_ASKED.with(|n| n.set(0));
        let (kept, fresh) = (parse(false), parse(true));
        // (The kept notes were found before the bracket scan too.)
        assert!(EARLY_ASKED.with(std::cell::Cell::get) > 100);
        assert_eq!(kept.text, fresh.text);
        assert_eq!(kept.diagnostics, fresh.diagnostics);
        assert!(kept.diagnostics.len() > 40, "{:?}", kept.diagnostics);
    }

    #[test]
    fn keyword_split() {
        assert_eq!(split_keyword("a = 1"), (Some("a"), "1"));
        assert_eq!(split_keyword("a == 1"), (None, "a == 1"));
        assert_eq!(split_keyword("\"x=1\""), (None, "\"x=1\""));
    }

    // covers F-PY-1
    #[test]
    fn fixed_arrays_absorb_consecutive_values() {
        let spec = ToolSpec::new(
            "t",
            "",
            json!({"type":"object","properties":{
                "action":{"type":"string","enum":["a","b"]},
                "xy":{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":2},
                "text":{"type":"string"}}}),
        );
        assert_eq!(
            map_positional(&[json!("a"), json!(1), json!(2)], &spec).unwrap(),
            *json!({"action":"a","xy":[1,2]}).as_object().unwrap()
        );
        assert_eq!(
            map_positional(&[json!("b"), json!("hi")], &spec).unwrap(),
            *json!({"action":"b","text":"hi"}).as_object().unwrap()
        );
        assert!(map_positional(&[json!("a"), json!(1)], &spec).is_err());
    }
}
