//! `gemma4`: Gemma 4 writes `<|tool_call>call:NAME{...}<tool_call|>`; the arguments are an
//! object with bare keys, strings between `<|"|>` markers, and numbers, booleans, lists and
//! nested objects as literals. The object is rewritten as JSON in one pass, then decoded.

use super::described::{Body, Described};
use std::fmt::Write as _;

use serde_json::Value;

use serde_json::Map;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{
    Instructions, Outcome, ReadCx, ScanFrom, Untyped, Wake, convert_text_value, find_from,
    parse_lenient, push_json_str, push_json_value,
};
use toolcall_core::{Repair, ToolSpec};

use super::tags::{
    Block, BlockStream, BodyRule, Lead, LeadRule, MAX_TOOL_NAME, finish_sent, skip_space, starts,
    valid_name,
};

impl FormatId {
    pub(crate) const GEMMA4: FormatId = FormatId::builtin("gemma4");
}

/// Gemma's string delimiter.
const QUOTE: &str = "<|\"|>";

const CLOSE: &str = "<tool_call|>";

static BLOCK: Block = Block {
    format: FormatId::GEMMA4,
    open: "<|tool_call>",
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Call {
        body,
        // One-shot reads need nothing of the parse.
        ahead: |after, close, _, format| read_ahead(after, close, format),
    },
};


fn live(ctx: &Ctx) -> Box<dyn BlockStream> {
    Box::new(LiveObject::new(BLOCK.open.len(), QUOTE, ctx.limits.max_depth, &WAKES))
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("<|tool_call>call:{name}");
    write_gemma_object(&mut s, args, QUOTE, 0);
    s.push_str("<tool_call|>");
    s
}

pub(crate) static GEMMA4: Described = Described {
    id: FormatId::GEMMA4,
    description: "<|tool_call>call:NAME{key:<|\"|>text<|\"|>,n:42}<tool_call|> (Gemma 4)",
    example: "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>",
    body: Body::Live(&BLOCK, live),
    model_names: &["gemma-4*"],
    template_markers: &["<|tool_call>", "<tool_call|>"],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <|tool_call>call:TOOL_NAME{...}<tool_call|> where the arguments object has bare keys, text between <|"|> markers, and numbers, booleans, lists and nested objects as literals, e.g. {city:<|"|>Paris<|"|>,days:3}."#,
        several: "- To make several calls, write several <|tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};


/// `call:NAME{` after the opener.
pub(crate) fn lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    match starts(s, "call:") {
        Some(true) => {}
        None if !complete => return Lead::NeedMore,
        _ => return Lead::NotMine,
    }
    name_until_brace(&s["call:".len()..], complete)
}

/// What wakes the block's reader while its lead, `call:` then part of the name right after
/// the opener of `open_len` bytes, waits for its `{` ([`crate::family::ReadCx::wake`]): a
/// byte that ends the name or refuses it ([`name_until_brace`]), or the name grown to
/// [`MAX_TOOL_NAME`] bytes (refused unless a `{` comes); any other byte is more of the
/// name. A stream read the lead on every push until the `{` (~190 instructions a push,
/// about five pushes a call at 4 bytes: `bench_profile "gemma4/small" stream4`).
pub(crate) const fn lead_wake(open_len: usize) -> Wake {
    Wake::new(LEAD_ENDS, "").up_to(open_len + CALL.len() + MAX_TOOL_NAME)
}

/// The bytes that end or refuse a lead's name ([`lead_wake`], [`NAME_ENDS`]).
const LEAD_ENDS: &[u8] = b"{<>\"' \t\n\x0c\r";

/// The lead's first bytes, before the name.
const CALL: &str = "call:";

/// [`lead_wake`] for this block.
pub(crate) static LEAD_WAKE: Wake = lead_wake("<|tool_call>".len());

/// What wakes the block's reader while the lead after the opener of `open_len` bytes is a
/// proper prefix of `call:` ([`lead_before_name`]): a push that leaves it one, or makes it
/// `call:` and part of a name ([`lead_wake`]'s bytes absent), changes nothing the lead
/// says. The held tail starts at the `c` of `call:` or is empty ([`Wake::held_from`]: no
/// `c` ends the opener, whose `>` is no byte of `call:`).
pub(crate) const fn call_wake(open_len: usize) -> Wake {
    Wake::holding_then(CALL, LEAD_ENDS).up_to(open_len + CALL.len() + MAX_TOOL_NAME)
}

/// [`call_wake`] for this block.
pub(crate) static CALL_WAKE: Wake = call_wake("<|tool_call>".len());

/// Whether the lead after the opener (`after`) is read from its name on ([`lead_wake`]
/// applies): `call:` with no blank before it, the template's own spelling.
pub(crate) fn lead_at_name(after: &str) -> bool {
    after.starts_with(CALL)
}

/// Whether the lead after the opener (`after`) is a proper prefix of `call:` ([`call_wake`]
/// applies).
pub(crate) fn lead_before_name(after: &str) -> bool {
    after.len() < CALL.len() && CALL.starts_with(after)
}

/// [`name_until`]`(rest, b'{', complete)` in one pass over the name: each byte is either
/// the `{`, refused, or more of the name. A stream reads the lead on every push until its
/// `{` (a `memchr` then the name's bytes checked again cost ~60 instructions more a read).
fn name_until_brace(rest: &str, complete: bool) -> Lead<'_> {
    let bytes = rest.as_bytes();
    // The name's bytes passed by one table lookup each (the tests a byte cost ~40
    // instructions a lead read more: `bench_profile "gemma4/100 calls" stream4`).
    let room = bytes.len().min(MAX_TOOL_NAME + 1);
    let Some(i) = bytes[..room].iter().position(|&b| NAME_ENDS[usize::from(b)]) else {
        return if room > MAX_TOOL_NAME || complete {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    };
    match bytes[i] {
        b'{' if i > 0 && i <= MAX_TOOL_NAME => Lead::Mine(Some(rest[..i].into())),
        _ => Lead::NotMine,
    }
}

/// The bytes that end a lead's name ([`name_until_brace`]): its `{`, or a byte that refuses
/// it (ASCII blanks, `<`, `>`, quotes).
static NAME_ENDS: [bool; 256] = crate::scanner::byte_set(LEAD_ENDS);

fn body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    read_call(body, format, QUOTE)
}

/// The block from after its opener ([`BodyRule::Call`]): the call as [`read_call`] reads
/// the body that ends at the first closing tag, and that body's length, when the arguments
/// are the template's own shape ([`direct`]) and the closing tag follows them after blanks.
/// The tag cannot be anywhere before (a name, `call:`, a key or a literal holds no `<`;
/// a text value is searched for it), so it is the first. One pass, where the close search
/// then [`read_call`] scanned each call twice (the search alone ~400 instructions a call,
/// its `<|"|>` quotes hits of the tag's first byte: `bench_profile "gemma4/small" one`).
fn read_ahead(after: &str, close: &str, format: FormatId) -> Option<(usize, Vec<Draft>)> {
    let rest = skip_space(after).strip_prefix("call:")?;
    let brace = memchr::memchr(b'{', rest.as_bytes())?;
    let name = &rest[..brace];
    if !valid_name(name) {
        return None;
    }
    let mut r = Direct {
        s: rest,
        at: brace,
        quote: QUOTE,
        guard: Some(close),
    };
    let args = r.value(0)?;
    let tail = rest.get(r.at..)?;
    let blanks = tail.len() - tail.trim_start().len();
    if !tail.get(blanks..)?.starts_with(close) {
        return None;
    }
    let body = after.len() - tail.len() + blanks;
    Some((body, vec![Draft::new(name, Some(args), format)]))
}

/// `call:NAME{...}` with strings between `quote` markers: one draft.
pub(crate) fn read_call(
    body: &str,
    format: FormatId,
    quote: &str,
) -> Result<Vec<Draft>, String> {
    let rest = skip_space(body)
        .strip_prefix("call:")
        .ok_or("expected call:NAME{...}")?;
    let brace = memchr::memchr(b'{', rest.as_bytes()).ok_or("expected { after the tool name")?;
    let name = &rest[..brace];
    if !valid_name(name) {
        return Err(format!("invalid tool name {name:?}"));
    }
    let literal = rest[brace..].trim_end();
    // The template's own shapes are read straight into a value; anything else is rewritten
    // to JSON and decoded with its repairs (the same value either way where both read it).
    let (args, repairs) = match direct(literal, quote) {
        Some(v) => (v, Vec::new()),
        None => parse_lenient(&to_json(literal, quote)?)
            .map_err(|e| format!("the arguments of {name:?} are malformed: {e}"))?,
    };
    if !args.is_object() {
        return Err(format!("the arguments of {name:?} are not an object"));
    }
    let mut d = Draft::new(name, Some(args), format);
    d.repairs = repairs;
    Ok(vec![d])
}

/// Rewrites Gemma's literal syntax as JSON: `<|"|>text<|"|>` (`quote`) → a JSON string, a bare key
/// (after `{` or a comma inside an object) → a quoted key; everything else is copied, in
/// runs up to the next byte that can change something.
fn to_json(s: &str, quote: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let q0 = quote.as_bytes().first().copied();
    let mut out = String::with_capacity(s.len() + 16);
    let mut objects: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        // A run of bytes that are copied and change no state; it ends at an ASCII byte
        // or at the quote's first byte, both char boundaries.
        let run = bytes[i..].iter().position(|&b| {
            Some(b) == q0
                || matches!(b, b'{' | b'[' | b'}' | b']' | b',' | b'"')
                || (expect_key && (b.is_ascii_alphabetic() || b == b'_'))
        });
        let stop = run.map_or(bytes.len(), |n| i + n);
        out.push_str(s.get(i..stop).ok_or("not a char boundary")?);
        i = stop;
        let Some(rest) = s.get(i..).filter(|r| !r.is_empty()) else {
            break;
        };
        if let Some(after) = rest.strip_prefix(quote) {
            let end = find_from(after, quote, 0)
                .ok_or_else(|| format!("a {quote} string is not closed"))?;
            push_json_str(&mut out, &after[..end]);
            let rest = &after[end + quote.len()..];
            i = s.len() - rest.len();
            // `k:<q>v<q>k2:…`: the next entry written without its comma (FunctionGemma's
            // model-card reader matches `key:<escape>value<escape>` pairs, commas or not).
            expect_key = objects.last() == Some(&true) && bare_key_follows(rest);
            if expect_key {
                out.push(',');
            }
            continue;
        }
        let b = bytes[i];
        match b {
            b'{' | b'[' => {
                objects.push(b == b'{');
                expect_key = b == b'{';
                out.push(char::from(b));
            }
            b'}' | b']' => {
                objects.pop();
                expect_key = false;
                out.push(char::from(b));
            }
            b',' => {
                expect_key = objects.last() == Some(&true);
                out.push(',');
            }
            b'"' => {
                // An ordinary JSON string: copy it through, escapes included.
                let mut j = 1;
                while j < rest.len() && bytes[i + j] != b'"' {
                    j += if bytes[i + j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(rest.len());
                out.push_str(rest.get(..end).ok_or("a string is cut")?);
                i += end;
                expect_key = false;
                continue;
            }
            b if expect_key && (b.is_ascii_alphabetic() || b == b'_') => {
                let n = rest
                    .bytes()
                    .position(|k| !(k.is_ascii_alphanumeric() || k == b'_' || k == b'-'))
                    .unwrap_or(rest.len());
                // Letters, digits, `_` and `-` need no escape.
                out.push('"');
                out.push_str(&rest[..n]);
                out.push('"');
                i += n;
                expect_key = false;
                continue;
            }
            _ => {
                // The quote's first byte where no quote starts: copied as it is.
                let c = rest.chars().next().ok_or("empty")?;
                out.push(c);
                i += c.len_utf8();
                continue;
            }
        }
        i += 1;
    }
    Ok(out)
}

/// Whether `rest` starts (after blanks) with a bare key and its `:`.
/// Nesting a literal read by [`direct`] may have; deeper ones take the `to_json` path.
const DIRECT_DEPTH: usize = 64;

/// A call's arguments literal as the chat template writes it (bare keys, text between
/// `quote` markers, JSON numbers and `true`/`false`/`null`, lists and objects, a comma
/// between entries, JSON whitespace) read straight into the value that [`to_json`] and a
/// JSON decode give for it, without the rewrite and the second pass (most of a one-shot
/// Gemma 4 call's cost). `None` for anything else (a JSON-quoted string or key, a quoted
/// key, a missing or trailing comma, stray text, nesting past [`DIRECT_DEPTH`]): that
/// literal takes the `to_json` path, with its repairs and errors.
fn direct(s: &str, quote: &str) -> Option<Value> {
    let mut r = Direct {
        s,
        at: 0,
        quote,
        guard: None,
    };
    let v = r.value(0)?;
    r.ws();
    (r.at == s.len() && v.is_object()).then_some(v)
}

struct Direct<'a> {
    s: &'a str,
    at: usize,
    quote: &'a str,
    /// A text value holding this (the block's closing tag, read ahead: [`read_ahead`]) is not
    /// read.
    guard: Option<&'a str>,
}

impl<'a> Direct<'a> {
    fn ws(&mut self) {
        while matches!(
            self.s.as_bytes().get(self.at),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.s.as_bytes().get(self.at) == Some(&b);
        self.at += usize::from(hit);
        hit
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > DIRECT_DEPTH {
            return None;
        }
        self.ws();
        let rest = self.s.get(self.at..)?;
        if let Some(after) = rest.strip_prefix(self.quote) {
            // Most texts hold no byte of the quote's first: its first occurrence then ends
            // the text, and a guard starting with that byte is not in it.
            let q0 = self.quote.as_bytes().first().copied()?;
            let (end, q0_free) = match memchr::memchr(q0, after.as_bytes()) {
                Some(i) if after.as_bytes()[i..].starts_with(self.quote.as_bytes()) => (i, true),
                _ => (find_from(after, self.quote, 0)?, false),
            };
            let text = after.get(..end)?;
            if let Some(guard) = self.guard
                && !(q0_free && guard.as_bytes().first() == Some(&q0))
                && find_from(text, guard, 0).is_some()
            {
                return None;
            }
            self.at += 2 * self.quote.len() + end;
            return Some(Value::String(text.to_owned()));
        }
        match *rest.as_bytes().first()? {
            b'{' => {
                self.at += 1;
                let mut m = Map::new();
                self.ws();
                if self.eat(b'}') {
                    return Some(Value::Object(m));
                }
                loop {
                    self.ws();
                    let key = self.key()?;
                    self.ws();
                    if !self.eat(b':') {
                        return None;
                    }
                    let v = self.value(depth + 1)?;
                    m.insert(key.to_owned(), v);
                    self.ws();
                    if self.eat(b'}') {
                        return Some(Value::Object(m));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']') {
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b']') {
                        return Some(Value::Array(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            _ => self.scalar(),
        }
    }

    /// A bare key as [`to_json`] quotes it: a letter or `_`, then letters, digits, `_`, `-`.
    fn key(&mut self) -> Option<&'a str> {
        let s: &'a str = self.s;
        let rest = s.get(self.at..)?;
        if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        let n = rest
            .bytes()
            .position(|k| !(k.is_ascii_alphanumeric() || k == b'_' || k == b'-'))
            .unwrap_or(rest.len());
        self.at += n;
        rest.get(..n)
    }

    /// A number, `true`, `false` or `null`: the token up to the next delimiter, decoded as
    /// JSON decodes it (a plain unsigned integer without the decoder).
    fn scalar(&mut self) -> Option<Value> {
        let rest = self.s.get(self.at..)?;
        let n = rest
            .bytes()
            .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        let token = rest.get(..n)?;
        let b = token.as_bytes();
        let v = if !b.is_empty()
            && b.len() <= 18
            && b.iter().all(u8::is_ascii_digit)
            && (b[0] != b'0' || b.len() == 1)
        {
            Value::from(token.parse::<u64>().ok()?)
        } else {
            match serde_json::from_str::<Value>(token).ok()? {
                v @ (Value::Number(_) | Value::Bool(_) | Value::Null) => v,
                _ => return None,
            }
        };
        self.at += n;
        Some(v)
    }
}

fn bare_key_follows(rest: &str) -> bool {
    let rest = rest.trim_start();
    if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    let n = rest
        .find(|k: char| !(k.is_ascii_alphanumeric() || k == '_' || k == '-'))
        .unwrap_or(rest.len());
    rest[n..].trim_start().starts_with(':')
}

/// Writes `args` in Gemma's literal syntax; nesting past a small bound (examples are
/// shallow) is written as `null`.
pub(crate) fn write_gemma_object(
    out: &mut String,
    args: &Map<String, Value>,
    quote: &str,
    depth: usize,
) {
    out.push('{');
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push(':');
        write_gemma_value(out, v, quote, depth + 1);
    }
    out.push('}');
}

fn write_gemma_value(out: &mut String, v: &Value, quote: &str, depth: usize) {
    if depth > 16 {
        out.push_str("null");
        return;
    }
    match v {
        Value::String(s) => {
            out.push_str(quote);
            out.push_str(s);
            out.push_str(quote);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_gemma_value(out, item, quote, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => write_gemma_object(out, map, quote, depth),
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_json() {
        let j = to_json(r#"{a:<|"|>x, "y"<|"|>,n:-4.5,b:true,l:[<|"|>p<|"|>,1],o:{k:null}}"#, QUOTE)
            .unwrap();
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "x, \"y\"", "n": -4.5, "b": true, "l": ["p", 1], "o": {"k": null}})
        );
        assert!(to_json(r#"{a:<|"|>open}"#, QUOTE).is_err());
    }

    // The run copying keeps every state change: a `<` that opens no string, a JSON string
    // with escapes and braces, non-ASCII text, nested keys, and a pair written without
    // its comma after a string.
    // The direct reader gives the value the rewrite and a JSON decode give, and leaves
    // every literal it does not read whole to them.
    #[test]
    fn direct_reads_what_to_json_reads() {
        let read = [
            r#"{city:<|"|>Kyiv<|"|>,unit:<|"|>celsius<|"|>,days:3}"#,
            r#"{ a : 1 , b_-9:[ <|"|>x, "y" {}<|"|> , -4.5e3,true,false,null,[],{}] ,c:{d:{e:0}}}"#,
            r#"{a:<|"|>é\n✓<|"|>,a:2,n:18446744073709551615,m:123456789012345678901,z:-0,f:0.1}"#,
            "{}",
            "{k:\t\r\n1\n}",
        ];
        for lit in read {
            let want: Value = serde_json::from_str(&to_json(lit, QUOTE).unwrap()).unwrap();
            let got = direct(lit, QUOTE).unwrap();
            assert_eq!(got, want, "{lit}");
            assert_eq!(got.to_string(), want.to_string(), "{lit}");
        }
        for lit in [
            r#"{a:<|"|>x<|"|> b:1}"#,
            r#"{a:1,}"#,
            r#"{"a":1}"#,
            r#"{a:"x"}"#,
            r#"{<|"|>k<|"|>:1}"#,
            r#"{a:1} tail"#,
            r#"{a:<|"|>open}"#,
            r#"{a:1<2}"#,
            r#"{a:abc}"#,
            r#"{a:01}"#,
            r#"[1]"#,
            r#"{1:2}"#,
            "{a:\u{a0}1}",
        ] {
            assert_eq!(direct(lit, QUOTE), None, "{lit}");
        }
        let deep = format!("{{a:{}1{}}}", "[".repeat(70), "]".repeat(70));
        assert_eq!(direct(&deep, QUOTE), None);
        let ok = format!("{{a:{}1{}}}", "[".repeat(60), "]".repeat(60));
        assert!(direct(&ok, QUOTE).is_some());
    }

    // The lead's name is read as `name_until` reads it, for every prefix of each lead.
    #[test]
    fn name_until_brace_reads_as_name_until() {
        use super::super::tags::name_until;
        let long = format!("{}{{", "n".repeat(MAX_TOOL_NAME));
        let longer = format!("{}{{", "n".repeat(MAX_TOOL_NAME + 1));
        let leads = [
            "get_weather{city:1}", "{", "a{", "a b{", "é✓{", "a<{", "a'{", "x\"{", "a>b{",
            "a\u{b}b{", &long, &longer, "abc",
        ];
        let verdict = |l: Lead<'_>| match l {
            Lead::NeedMore => "more".to_owned(),
            Lead::NotMine => "not".to_owned(),
            Lead::Mine(n) => format!("mine {n:?}"),
        };
        for lead in leads {
            for end in (0..=lead.len()).filter(|&e| lead.is_char_boundary(e)) {
                for complete in [false, true] {
                    let cut = &lead[..end];
                    assert_eq!(
                        verdict(name_until_brace(cut, complete)),
                        verdict(name_until(cut, b'{', complete)),
                        "{cut:?} {complete}"
                    );
                }
            }
        }
    }

    // Read ahead, a block gives what the close search and `read_call` give for the body
    // before the first closing tag, or is left to them; the template's shapes are read.
    #[test]
    fn ahead_reads_what_the_close_search_and_read_call_read() {
        let close = BLOCK.close;
        let read = [
            r#"call:get_weather{city:<|"|>Kyiv<|"|>,unit:<|"|>celsius<|"|>,days:3}<tool_call|>"#,
            " call:f{ a : 1 , b:[ <|\"|>x<|\"|> ,{}] } \u{a0}<tool_call|>text<tool_call|>",
            "call:f{}\n<tool_call|>",
            r#"call:f{a:<|"|>< tool_call|><|"|>}<tool_call|>"#,
        ];
        let left = [
            r#"call:f{a:<|"|>x<tool_call|>y<|"|>}<tool_call|>"#,
            r#"call:f{a:<|"|>x<tool_call|>"#,
            r#"call:f{a:1} x<tool_call|>"#,
            r#"call:f{a:1<tool_call|>}<tool_call|>"#,
            r#"call:f<tool_call|>{a:1}<tool_call|>"#,
            r#"call:f{"a":1}<tool_call|>"#,
            r#"call:f{a:1}"#,
            r#"call:f{a:1}<tool_call"#,
            r#"call:f{a:<|"|>x<|"|>"#,
        ];
        for after in read.iter().chain(&left) {
            let general = after
                .find(close)
                .map(|i| (i, read_call(&after[..i], FormatId::GEMMA4, QUOTE)));
            let Some((n, drafts)) = read_ahead(after, close, FormatId::GEMMA4) else {
                assert!(!read.contains(after), "{after}");
                continue;
            };
            assert!(read.contains(after), "{after}");
            let (i, want) = general.unwrap();
            let want = want.unwrap();
            assert_eq!(n, i, "{after}");
            assert_eq!(drafts.len(), want.len());
            for (d, w) in drafts.iter().zip(&want) {
                assert_eq!((&d.name, &d.args, &d.repairs), (&w.name, &w.args, &w.repairs));
            }
        }
    }

    // Streamed in pushes of every size, a call finishes as one-shot reads it, and its
    // fragments are its arguments; a repeated key (its first value sent before the second
    // came) warns that what was sent differs. Covers calls rebuilt from the stream, calls
    // that leave the template's shape midway (what was sent then kept as text) and calls
    // read whole after their stream stopped.
    #[test]
    fn streamed_calls_equal_one_shot() {
        use crate::ParseOptions;
        use crate::stream_replay::{one_shot, stream_in_char_pushes};
        let o = ParseOptions::default();
        let texts = [
            r#"Sure. <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|> ok"#,
            r#"<|tool_call>call:f{a:1,a:2}<tool_call|>"#,
            r#"<|tool_call>call:f{a:<|"|>x<|"|>,b:"y\"z",c:[1,{d:null}]}<tool_call|>"#,
            r#"<|tool_call>call:f{a:1,"b":2,b:3}<tool_call|>"#,
            r#"<|tool_call>call:f{a:1} x<tool_call|>"#,
            r#"<|tool_call>call:f{}<tool_call|><|tool_call>call:g{ k : -4.5e3 }  <tool_call|>"#,
            r#"<|tool_call>call:f{a:<|"|>x<|"|> b:1}<tool_call|>"#,
            r#"<|tool_call>call:f{c:[857,386],l:[<|"|>a, b]<|"|>,2],e:[],n:[1, 2]}<tool_call|>"#,
        ];
        for text in texts {
            // A key written twice, in the template's shape or after leaving it.
            let repeated = text.contains("a:1,a:2") || text.contains("2,b:3");
            let want = one_shot(text, &o);
            for n in 1..=9 {
                let got = stream_in_char_pushes(text, &o, n, |_, _| {});
                let context = format!("{text:?} in {n}-char pushes");
                got.assert_equals_one_shot(&want, !repeated, repeated, &context);
            }
        }
    }

    // A block's stream serves the parse's next Gemma 4 block, reset (`LiveObject::reset`,
    // `Kept`): every pair of blocks below, the first leaving its stream in any state
    // (stopped, past the template's shape with keys and text sent, a key repeated, nested
    // past the depth cap), streams as one-shot reads it.
    #[test]
    fn a_kept_stream_reads_the_next_block_as_a_new_one() {
        use crate::ParseOptions;
        use crate::stream_replay::{one_shot, stream_in_char_pushes};
        let o = ParseOptions::default();
        let deep = format!(
            "<|tool_call>call:f{{a:{}1{}}}<tool_call|>",
            "[".repeat(130),
            "]".repeat(130)
        );
        let blocks = [
            r#"<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>"#,
            r#"<|tool_call>call:f{a:1,a:2}<tool_call|>"#,
            r#"<|tool_call>call:f{a:<|"|>x<|"|>,b:"y\"z",c:[1,{d:null}]}<tool_call|>"#,
            r#"<|tool_call>call:f{a:1} x<tool_call|>"#,
            r#"<|tool_call>call:g{ k : -4.5e3 }  <tool_call|>"#,
            &deep,
            r#"<|tool_call>call:f{b:<|"|>x<|"|>,c:2"#,
        ];
        // The cut block is last only (the reply's end cuts it).
        for a in &blocks[..blocks.len() - 1] {
            for b in blocks {
                let text = format!("{a} and {b}");
                let repeated = text.contains("a:1,a:2");
                let want = one_shot(&text, &o);
                for n in [1, 4, 7] {
                    let got = stream_in_char_pushes(&text, &o, n, |_, _| {});
                    let context = format!("{text:?} in {n}-char pushes");
                    got.assert_equals_one_shot(&want, !repeated, repeated, &context);
                }
            }
        }
    }

    // The object's closing `}` goes out with the push that brings it, joined to the last
    // entry's fragment when the same push completes that entry (one event, the same bytes),
    // and alone when the entry went out with an earlier push.
    #[test]
    fn the_closing_brace_joins_the_last_fragment_of_its_push() {
        use crate::{ParseOptions, StreamParser};
        use toolcall_core::StreamEvent;
        let fragments = |pushes: &[&str]| -> Vec<Vec<String>> {
            let mut p = StreamParser::new(ParseOptions::default());
            pushes
                .iter()
                .map(|piece| {
                    p.push(piece)
                        .into_iter()
                        .filter_map(|e| match e {
                            StreamEvent::ArgumentsDelta { fragment, .. } => Some(fragment),
                            _ => None,
                        })
                        .collect()
                })
                .collect()
        };
        let open = "<|tool_call>call:f";
        assert_eq!(
            fragments(&[open, "{a:1,b:<|\"|>x<|\"|>}", "<tool_call|>"]),
            [vec![], vec![r#"{"a":1"#.to_owned(), r#","b":"x"}"#.to_owned()], vec![]]
        );
        assert_eq!(
            fragments(&[open, "{a:1,b:2", "}", "<tool_call|>"]),
            [vec![], vec![r#"{"a":1"#.to_owned()], vec![r#","b":2}"#.to_owned()], vec![]]
        );
        assert_eq!(
            fragments(&[open, "{a:[1]", ",b:[2]", "}<tool_call|>"]),
            [
                vec![],
                vec![],
                vec![r#"{"a":[1]"#.to_owned()],
                vec![r#","b":[2]}"#.to_owned()]
            ]
        );
        assert_eq!(
            fragments(&[open, "{", "}<tool_call|>"]),
            [vec![], vec![], vec!["{}".to_owned()]]
        );
    }

    // A push that the block reader is not called for (no byte of its `Wake`: the engine
    // appends it and returns) delays nothing: after every push of every size, the calls
    // finished and the fragments sent are those of the same bytes pushed one at a time
    // (each byte that ends an entry, and each closing tag's last byte, wakes the reader),
    // and a call finishes with the push that completes its closing tag, even when that
    // push holds only the tag's last bytes, after long text, or after the stream stopped.
    #[test]
    fn pushes_that_wake_nothing_delay_nothing() {
        use crate::ParseOptions;
        use crate::stream_replay::assert_no_push_waits;
        let o = ParseOptions::default();
        let texts = [
            r#"Sure. <|tool_call>call:get_weather{city:<|"|>Paris, France<|"|>,days:3}<tool_call|> ok"#,
            r#"<|tool_call>call:f{a:<|"|>a long text without an entry's end<|"|>}<tool_call|>x"#,
            r#"<|tool_call>call:f{a:1,a:2, b:<|"|>after the stream stopped<|"|>}<tool_call|>"#,
            r#"<|tool_call>call:f{a:"x,}]<tool_", b:[1,[2,{c:<|"|><tool_call<|"|>}]]}  <tool_call|><|tool_call>call:g{}<tool_call|>"#,
            r#"<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|"#,
            r#"<|tool_call>call:f{a:<|"|>x, y]}<|"|>,b:[1,[2,3],{c:4,d:[5]}],e:{f:[6,7]},g:8}<tool_call|>"#,
            r#"<|tool_call>call:f{a:[<|"|>x,<|"|>,<|"|>]<|"|>],b:<|"|>,<|"|>,c:1}<tool_call|>"#,
        ];
        for text in texts {
            let finished = assert_no_push_waits(text, &o, 12);
            for (at, finished) in finished.into_iter().enumerate() {
                let closed = text[..=at].matches(CLOSE).count();
                assert_eq!(finished, closed, "{text:?}: {} bytes pushed", at + 1);
            }
        }
    }

    // Inside a text or a nested list or object no entry can end: a comma there does not
    // wake the block reader, the byte that ends the text or a closing bracket does, and a
    // comma back at the top level does ([`live_wakes`]). Fails with one wake for every
    // state (a comma always wakes it).
    #[test]
    fn commas_inside_texts_and_nested_brackets_wake_nothing() {
        use crate::{ParseOptions, StreamParser};
        let wakes = |before: &str, push: &str| {
            let mut p = StreamParser::new(ParseOptions::default());
            p.push(before);
            let wake = p.engine.wake_now().expect("the reader waits");
            let buf = format!("{before}{push}");
            wake.wakes(buf.as_bytes(), push.as_bytes(), 0, "")
        };
        let open = "<|tool_call>call:f{";
        for (before, push, woken) in [
            ("a:<|\"|>Paris", ", Fr", false),
            ("a:<|\"|>Paris", "<|\"|", false),
            ("a:<|\"|>Paris", "<|\"|>", true),
            ("a:<|\"|>Paris", "]}", false),
            ("a:[1", ",2", false),
            ("a:[1,{b:2", ",c:3", false),
            ("a:[1", "]", true),
            ("a:[1,{b:2", "}", true),
            ("a:1", ",", true),
            ("a:[1]", ",", true),
            ("a:1", "}", true),
            ("a:1", "<tool_call|>", true),
            ("a:<|\"|>x", "<tool_call|>", true),
            ("a:[1", "<tool_call|>", true),
        ] {
            let before = format!("{open}{before}");
            assert_eq!(wakes(&before, push), woken, "{before:?} then {push:?}");
        }
    }

    // While the lead after the opener is a proper prefix of `call:`, a push that keeps it
    // one, or completes it with part of a name, does not wake the block reader; a push
    // that refuses it, or ends the name, does ([`call_wake`]). Fails with no wake before
    // `call:` is whole (every such push read the lead).
    #[test]
    fn pushes_of_call_and_a_name_wake_nothing() {
        use crate::{ParseOptions, StreamParser};
        for (before, push, woken) in [
            ("", "cal", false),
            ("", "call:get_w", false),
            ("c", "all", false),
            ("c", "all:", false),
            ("ca", "ll:g", false),
            ("cal", "l:get_weather", false),
            ("cal", "l:f{", true),
            ("c", "all:f ", true),
            ("ca", "x", true),
            ("ca", "ll;", true),
            ("", " ", true),
            ("cal", "<", true),
        ] {
            let mut p = StreamParser::new(ParseOptions::default());
            let before = format!("Sure. <|tool_call>{before}");
            p.push(&before);
            let wake = p.engine.wake_now().expect("the reader waits");
            let buf = format!("{before}{push}");
            let held = wake.held_from(before.as_bytes());
            let woken_now = wake.wakes(buf.as_bytes(), push.as_bytes(), held, "");
            assert_eq!(woken_now, woken, "{before:?} then {push:?}");
        }
    }

    /// A lead refused mid-name, by a byte or by its name's length, is text as soon as
    /// that byte comes ([`lead_wake`]: pushes of more of the name do not read the lead): after
    /// every push of 1–12 bytes, the text given out, and the calls, are those of the same
    /// bytes pushed at once. Fails without the wake's blanks, quotes or `<`/`>`, or its bound.
    #[test]
    fn a_lead_refused_mid_name_is_text_at_once() {
        use crate::stream_replay::assert_no_push_waits;
        use crate::{ParseOptions, StreamParser};
        use toolcall_core::StreamEvent;
        let o = ParseOptions::default();
        let text_after = |text: &str, n: usize| {
            let mut p = StreamParser::new(o.clone());
            let (mut pushed, mut out, mut at) = (0, 0, Vec::new());
            for chunk in text.as_bytes().chunks(n) {
                let piece = std::str::from_utf8(chunk).unwrap();
                pushed += piece.len();
                for e in p.push(piece) {
                    if let StreamEvent::Text { text } = e {
                        out += text.len();
                    }
                }
                at.push((pushed, out));
            }
            at
        };
        let long = format!(
            "<|tool_call>call:{}xyz and more text{{a:1}}<tool_call|> end",
            "n".repeat(MAX_TOOL_NAME - 1)
        );
        let texts = [
            "ok <|tool_call>call:get weather and more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather<b>and more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather>and more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather\"and more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather'and more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather\tand more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather\nand more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather\rand more text{a:1}<tool_call|> end",
            "<|tool_call>call:get_weather\x0cand more text{a:1}<tool_call|> end",
            "<|tool_call>call:f<|tool_call>call:get_weather{a:1}<tool_call|> end",
            "<|tool_call>cal get_weather{a:1}<tool_call|> end",
            "<|tool_call>callx:get_weather{a:1}<tool_call|> end",
            "<|tool_call>ca<b>{a:1}<tool_call|> end",
            "<|tool_call> call:f{a:1}<tool_call|> end",
            "<|tool_call>c<|tool_call>call:f{a:1}<tool_call|> end",
            &long,
        ];
        for text in texts {
            assert_no_push_waits(text, &o, 12);
            let whole: Vec<usize> = (1..=text.len())
                .map(|end| text_after(&text[..end], end).last().unwrap().1)
                .collect();
            for n in 1..=12 {
                for (pushed, out) in text_after(text, n) {
                    assert_eq!(out, whole[pushed - 1], "{text:?} in {n}-byte pushes, {pushed} bytes");
                }
            }
        }
    }

    // A fragment's value is written as the final arguments serialise it.
    #[test]
    fn values_are_written_as_display_writes_them() {
        let values = serde_json::json!([
            "plain", "q\"b\\s/\u{1}\n\u{7f}é✓", "", true, false, null, 0, -4.5e3, 18446744073709551615u64,
            [1, "x", {"k": null}], {"a": {"b": [true]}}, 7, 10, -1, -10, 9223372036854775807i64,
            -9223372036854775808i64, 0.5, -0.0, 1e300, [857, 386, [-2, {"q\"k": 120}]], [], {}
        ]);
        for v in values.as_array().unwrap() {
            let mut out = String::new();
            push_json_value(&mut out, v);
            assert_eq!(out, v.to_string());
        }
    }

    // An entry read in one pass is the one `direct_entry` reads, its fragment the key and
    // value as the final arguments serialise them; the others are left to `direct_entry`.
    #[test]
    fn plain_entries_read_as_direct_entry_reads() {
        let read = [
            r#"city:<|"|>Kyiv<|"|>"#,
            r#"a_-9:<|"|>x, "y" {}\n<|"|>"#,
            r#"e:<|"|><|"|>"#,
            r#"t:<|"|>é✓ < |"|><|"|>"#,
            "days:3",
            "n:0",
            "n:123456789012345678",
            "coordinate:[857,386]",
            "l:[]",
            "l:[0]",
            r#"l:[<|"|>a, b]<|"|>,7,<|"|><|"|>,<|"|>é<x<|"|>]"#,
        ];
        let left = [
            r#"a:<|"|>x<|"|>y<|"|>"#,
            r#"a:<|"|>x<|"|> "#,
            r#" a:<|"|>x<|"|>"#,
            r#"a :1"#,
            r#"a:<|"|>x"#,
            r#"a:<|"|>"#,
            "n:01",
            "n:-1",
            "n:1.5",
            "n:1234567890123456789",
            "n:",
            "n:3 ",
            "n:[1, 2]",
            "n:[1,2,]",
            "n:[,]",
            "n:[01]",
            "n:[-1]",
            "n:[1.5]",
            "n:[true]",
            "n:[[1]]",
            "n:[1]]",
            "n:[1],",
            "n:[1",
            r#"n:[<|"|>x<|"|>y<|"|>]"#,
            r#"n:[<|"|>x<|"|> ]"#,
            r#"n:[<|"|>x]"#,
            "n:true",
            "1:2",
            "a",
            "",
        ];
        for entry in read.iter().chain(&left) {
            let Some((k, v, fragment)) = plain_entry(entry, QUOTE, ',') else {
                assert!(!read.contains(entry), "{entry}");
                continue;
            };
            assert!(read.contains(entry), "{entry}");
            let (dk, dv) = direct_entry(entry, QUOTE).unwrap();
            assert_eq!((k, &v), (dk, &dv), "{entry}");
            assert_eq!(fragment, format!(",{}:{v}", Value::from(k)), "{entry}");
        }
    }

    // A short text is written as it is exactly when it needs no escape and holds no byte
    // of the quote's first (its fragment, as `plain_entries_read_as_direct_entry_reads`
    // checks, is what the escaping writer gives). Fails with the verbatim copy off.
    #[test]
    fn texts_needing_no_escape_are_written_as_they_are() {
        for t in ["Kyiv", "", "left_click", "é✓ \u{7f}", "a b, c: {d} [e] > |"] {
            assert!(verbatim_text(t, b'<'), "{t:?}");
            let mut json = String::new();
            push_json_str(&mut json, t);
            assert_eq!(json, format!("\"{t}\""));
        }
        for t in ["a\"b", "a\\b", "a\nb", "\u{1f}", "\t", "a<b"] {
            assert!(!verbatim_text(t, b'<'), "{t:?}");
        }
        for entry in [r#"k:<|"|>a"b<|"|>"#, r#"k:<|"|>a\b<|"|>"#, "k:<|\"|>a\nb<|\"|>"] {
            let (k, v, fragment) = plain_entry(entry, QUOTE, ',').unwrap();
            assert_eq!(fragment, format!(",{}:{v}", Value::from(k)), "{entry}");
        }
    }

    #[test]
    fn runs_are_copied_with_every_state_change() {
        let j = to_json(
            r#"{ a : 1<2 , "b\"}" : "x{y}", c:<|"|>é<"✓<|"|> d:[{e_1:-2,f:<|"|>\<|"|>}],g:{}}"#,
            QUOTE,
        )
        .unwrap();
        assert_eq!(
            j,
            r#"{ "a" : 1<2 , "b\"}" : "x{y}", "c":"é<\"✓", "d":[{"e_1":-2,"f":"\\"}],"g":{}}"#
        );
    }
}

/// Where the streaming scan of the arguments object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// Between values (keys, literals, brackets).
    Plain,
    /// Inside a `<|"|>` string.
    Quoted,
    /// Inside an ordinary JSON string; `true` right after a backslash.
    Json(bool),
}

/// Streams a Gemma 4 call's arguments while the block arrives: each top-level
/// `key:value` is converted to JSON (by [`to_json`], as the whole object is at the end) once
/// the `,` or `}` after it arrives, and sent as `{"k":v` / `,"k":v`; the final `}` when the
/// object closes. Every byte is scanned once.
pub(crate) struct LiveObject {
    /// Region offset where the call starts (just past the opener).
    from: usize,
    /// What wakes the block's reader in each state of the scan ([`live_wakes`] of the
    /// block's closing tag and `quote`).
    wakes: &'static LiveWakes,
    /// The string delimiter (`<|"|>`, FunctionGemma's `<escape>`).
    quote: &'static str,
    /// Region offset of the object's `{`, once found.
    open: Option<usize>,
    /// Scan position, bracket depth (1 inside the object), lexical state.
    pos: usize,
    depth: usize,
    lex: Lex,
    /// Start of the current top-level entry.
    entry: usize,
    /// Something was sent; the object's closing `}` was.
    sent_any: bool,
    closed: bool,
    /// What was sent, once the call is no longer `exact` (until then it is what `args`
    /// serialises to, [`LiveObject::exact_sent`]: not kept, one allocation and a copy of
    /// each fragment less a call).
    sent: String,
    /// Reused for each entry wrapped as an object.
    scratch: String,
    /// Keys sent, once the call is no longer `exact` (until then, those of `args`).
    /// Made when the call leaves `exact` (most calls never do: a set made for every call
    /// cost its hasher's seeding and drop).
    keys: Option<std::collections::HashSet<String>>,
    calls: usize,
    max_depth: usize,
    stopped: bool,
    /// Top-level string values are text typed by the schema, else by this rule
    /// ([`type_text_values`]); `None`: values stay as written.
    text_values: Option<Untyped>,
    /// What typing the values of `args` recorded, in their order (as [`type_text_values`]
    /// records it for the object read whole).
    repairs: Vec<Repair>,
    /// The entries sent so far, decoded, while every entry is one the whole-object reader
    /// ([`direct`]) reads the same way (`exact`): the call is then built from them when the
    /// block closes instead of reading the body again ([`BlockStream::drafts`]).
    args: Map<String, Value>,
    exact: bool,
    /// Region offset just past the object's closing `}`, once the scan reached it.
    end: Option<usize>,
    /// The draft was built from `args`: what was sent is its arguments exactly.
    rebuilt: bool,
}

/// One top-level entry `key:value` of an arguments object (the text between the object's
/// `{` or a top-level `,` and the next top-level `,` or `}`) as [`direct`] reads it inside
/// the whole object: `None` where it would not read the object.
fn direct_entry<'s>(s: &'s str, quote: &'s str) -> Option<(&'s str, Value)> {
    let mut r = Direct {
        s,
        at: 0,
        quote,
        guard: None,
    };
    r.ws();
    let key = r.key()?;
    r.ws();
    if !r.eat(b':') {
        return None;
    }
    // An entry's value is one level in, as in `Direct::value` of the object.
    let v = r.value(1)?;
    r.ws();
    (r.at == s.len()).then_some((key, v))
}

/// The template's commonest entries, `key:<q>text<q>` and `key:DIGITS` with no blank, read
/// and written in one pass: the key, the value [`direct_entry`] gives, and the fragment
/// (`lead`, the key quoted, `:`, the value's JSON) written from the entry's own bytes (a
/// plain integer is its `Display`; a text escaped once), without the general reader's
/// per-byte steps and the formatter a number took (~400 instructions an entry:
/// `bench_profile "gemma4/small" stream4`). `None` for any other entry (it takes
/// [`direct_entry`]).
fn plain_entry<'s>(s: &'s str, quote: &str, lead: char) -> Option<(&'s str, Value, String)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_') {
        return None;
    }
    let n = b
        .iter()
        .position(|&k| !(k.is_ascii_alphanumeric() || k == b'_' || k == b'-'))?;
    if b[n] != b':' {
        return None;
    }
    let key = s.get(..n)?;
    let rest = s.get(n + 1..)?;
    // A text ends at its first quote, which must end the entry (as `direct` reads it): most
    // texts hold no byte of the quote's first, one search says so (a short text's bytes
    // looked at in a plain loop: a `memchr` call's setup cost ~80 instructions more on a
    // word, `bench_profile "gemma4/100 calls" stream4`).
    // A short text that holds no byte of the quote's first and none that JSON escapes is
    // written as it is, found in the same pass.
    let mut verbatim = false;
    let text = rest.strip_prefix(quote).and_then(|after| {
        let body = after.strip_suffix(quote)?;
        let q0 = *quote.as_bytes().first()?;
        let has_q0 = if body.len() <= SHORT_TEXT {
            verbatim = verbatim_text(body, q0);
            !verbatim && body.bytes().any(|c| c == q0)
        } else {
            memchr::memchr(q0, body.as_bytes()).is_some()
        };
        if !has_q0 {
            return Some(body);
        }
        (find_from(after, quote, 0)? == body.len()).then_some(body)
    });
    let integer = text.is_none() && plain_integer(rest);
    let list = text.is_none() && !integer && rest.starts_with('[') && rest.ends_with(']');
    if text.is_none() && !integer && !list {
        return None;
    }
    let mut fragment = String::with_capacity(s.len() + 8);
    fragment.push(lead);
    // A bare key (letters, digits, `_`, `-`) needs no escape.
    fragment.push('"');
    fragment.push_str(key);
    fragment.push_str("\":");
    let v = match text {
        Some(t) => {
            if verbatim {
                fragment.push('"');
                fragment.push_str(t);
                fragment.push('"');
            } else {
                push_json_str(&mut fragment, t);
            }
            Value::String(t.to_owned())
        }
        None if integer => {
            fragment.push_str(rest);
            Value::from(rest.parse::<u64>().ok()?)
        }
        None => plain_list(rest, quote, &mut fragment)?,
    };
    Some((key, v, fragment))
}

/// Whether a short text (`body`, at most [`SHORT_TEXT`] bytes) holds no `q0` (the quote's
/// first byte) and no byte a JSON string escapes: [`plain_entry`] writes it as it is, from
/// the one pass that looked for `q0` (the escape search, then its copy, cost ~120
/// instructions a text: `bench_profile "gemma4/100 calls" into4`).
fn verbatim_text(body: &str, q0: u8) -> bool {
    body.bytes().all(|c| c != q0 && !JSON_ESCAPED[usize::from(c)])
}

/// The bytes a JSON string escapes: `"`, `\` and the control bytes below 0x20.
static JSON_ESCAPED: [bool; 256] = {
    let mut t = crate::scanner::byte_set(b"\"\\");
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t
};

/// A plain unsigned integer as [`Direct::scalar`] reads it without the decoder: 1-18
/// digits, no leading zero.
fn plain_integer(token: &str) -> bool {
    let b = token.as_bytes();
    !b.is_empty() && b.len() <= 18 && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1)
}

/// A flat list of [`plain_entry`]'s values, `[1,<q>x<q>,2]` (plain integers and texts, a
/// comma and no blank between them; `[]`), as [`direct`] reads it, its JSON written to
/// `out` as it is read; `None` for any other list (blanks, nesting, other literals), left
/// to [`direct_entry`]. The template writes coordinates and lists of names so, and the
/// general reader and writer cost ~1,000 instructions such an entry (`[857,386]`:
/// `bench_profile "gemma4/100 calls" stream4`).
fn plain_list(list: &str, quote: &str, out: &mut String) -> Option<Value> {
    let mut rest = list.strip_prefix('[')?;
    let mut items = Vec::new();
    out.push('[');
    if rest == "]" {
        out.push(']');
        return Some(Value::Array(items));
    }
    loop {
        let end = if let Some(after) = rest.strip_prefix(quote) {
            // The text ends at the first quote, which must end the item.
            let n = find_from(after, quote, 0)?;
            let t = after.get(..n)?;
            if !items.is_empty() {
                out.push(',');
            }
            push_json_str(out, t);
            items.push(Value::String(t.to_owned()));
            quote.len() + n + quote.len()
        } else {
            let n = rest.bytes().position(|b| b == b',' || b == b']')?;
            let token = rest.get(..n)?;
            if !plain_integer(token) {
                return None;
            }
            if !items.is_empty() {
                out.push(',');
            }
            out.push_str(token);
            items.push(Value::from(token.parse::<u64>().ok()?));
            n
        };
        match rest.as_bytes().get(end) {
            Some(b',') => rest = rest.get(end + 1..)?,
            Some(b']') if end + 1 == rest.len() => {
                out.push(']');
                return Some(Value::Array(items));
            }
            _ => return None,
        }
    }
}

/// Bytes of a text up to which [`plain_entry`] looks for the quote's first byte itself.
const SHORT_TEXT: usize = 24;

/// The bytes [`LiveObject::scan`] acts on outside strings (besides the quote's first byte):
/// a JSON string's quote, brackets and the comma between entries.
static PLAIN_STOPS: [bool; 256] = crate::scanner::byte_set(b"\"{[}],");

/// What wakes the block reader of a [`LiveObject`] whose closing tag is `close` and whose
/// string delimiter is `quote` ([`LiveObject::wake`]), the closing tag always, and:
/// - between a top-level object's entries, a byte that can end an entry (`,`, `}`, `]`);
/// - inside a nested list or object, only a closing bracket (`}`, `]`): no entry ends
///   before the scan is back at the top level, and a comma there changes nothing;
/// - inside a `quote` string, only the quote's last byte: no entry ends before the string
///   does, and the push that ends it holds that byte;
/// - once the stream stopped, nothing else.
///
/// Each push woken for nothing (a list's comma, a comma in a text) cost the block reader's
/// step, ~1,000 instructions (`bench_profile "gemma4/100 calls" stream4`: `[857,386]`).
pub(crate) const fn live_wakes(close: &'static str, quote: &'static str) -> LiveWakes {
    let q = quote.as_bytes();
    let end = [q[q.len() - 1]];
    LiveWakes {
        entries: Wake::new(b",}]", close),
        nested: Wake::new(b"}]", close),
        quoted: Wake::new(&end, close),
        stopped: Wake::new(b"", close),
    }
}

/// [`live_wakes`]: what wakes the block reader of a [`LiveObject`] in each of its states.
pub(crate) struct LiveWakes {
    entries: Wake,
    nested: Wake,
    quoted: Wake,
    stopped: Wake,
}

static WAKES: LiveWakes = live_wakes(CLOSE, QUOTE);

/// JSON whitespace only, as [`direct`] skips it.
fn json_blank(s: &str) -> bool {
    s.bytes().all(crate::scanner::is_json_blank)
}

/// Types the top-level string values of `args` as text written in markup
/// ([`convert_text_value`]): the tool's schema decides, else `rule`. FunctionGemma's
/// model-card reader casts every `<escape>` value (`42` is a number, `true` a boolean).
pub(crate) fn type_text_values(
    args: &mut Value,
    spec: Option<&ToolSpec>,
    rule: Untyped,
    repairs: &mut Vec<Repair>,
) {
    if let Value::Object(m) = args {
        for (k, v) in m.iter_mut() {
            if let Value::String(text) = v {
                *v = convert_text_value(text, spec, k, rule, repairs);
            }
        }
    }
}

impl LiveObject {
    pub(crate) fn new(
        from: usize,
        quote: &'static str,
        max_depth: usize,
        wakes: &'static LiveWakes,
    ) -> Self {
        LiveObject {
            from,
            wakes,
            quote,
            open: None,
            pos: from,
            depth: 0,
            lex: Lex::Plain,
            entry: 0,
            sent_any: false,
            closed: false,
            sent: String::new(),
            scratch: String::new(),
            keys: None,
            calls: 0,
            max_depth,
            stopped: false,
            text_values: None,
            repairs: Vec::new(),
            // Made with room at the first entry ([`LiveObject::keep_and_send`]).
            args: Map::new(),
            exact: true,
            end: None,
            rebuilt: false,
        }
    }

    /// Top-level string values typed as text ([`type_text_values`]).
    pub(crate) fn with_text_values(mut self, rule: Untyped) -> Self {
        self.text_values = Some(rule);
        self
    }

    /// An entry the whole-object reader may read otherwise: the call is read whole when the
    /// block closes, and the keys sent so far (those of `args`) are tracked in `keys`.
    fn leave_exact(&mut self) {
        if self.exact {
            self.sent = self.exact_sent();
            self.exact = false;
            let args = std::mem::take(&mut self.args);
            self.keys
                .get_or_insert_default()
                .extend(args.into_iter().map(|(k, _)| k));
        }
    }

    fn send(&mut self, fragment: String, cx: &mut ReadCx<'_>) {
        self.sent_any = true;
        if !self.exact {
            self.sent.push_str(&fragment);
        }
        cx.arguments_owned(fragment);
    }

    /// [`LiveObject::send`] of `fragment` joined to the fragment this read sent last
    /// ([`ReadCx::arguments_after`]: the object's closing `}` with its last entry's).
    fn send_after(&mut self, fragment: &str, cx: &mut ReadCx<'_>) {
        self.sent_any = true;
        if !self.exact {
            self.sent.push_str(fragment);
        }
        cx.arguments_after(fragment);
    }

    /// What was sent while the call is `exact`: each fragment wrote an entry of `args`
    /// (in order, as the final arguments serialise it), then the closing `}` if sent.
    fn exact_sent(&self) -> String {
        if !self.sent_any {
            return String::new();
        }
        // Compact, as `Value`'s `Display` writes the object (a map of strings cannot fail).
        let mut sent = serde_json::to_string(&self.args).unwrap_or_default();
        if !self.closed {
            sent.pop();
        }
        sent
    }

    /// What wakes the block's reader ([`crate::family::ReadCx::wake`]) once this stream
    /// was called. The reader (`tags::BlockReader`, its lead read and announced) does two
    /// things on a push: search the closing tag and call this stream, whose scan sends
    /// something or says the block's calls are read only on a byte that ends a top-level
    /// entry (`,`, `}`, `]` at depth 1, outside strings): other bytes (a name, a literal,
    /// text, a quote, a bracket that opens) only move the scan, which reads them on the
    /// next push it is called for as it would have on this one (a quote split across
    /// pushes is looked at again anyway). Where the scan stands narrows it
    /// ([`live_wakes`]): inside a `quote` string only the byte that can end it, inside a
    /// nested bracket only a closing one, as the scan must pass them before an entry ends.
    fn wake(&self) -> &'static Wake {
        let w = self.wakes;
        match self.lex {
            _ if self.stopped => &w.stopped,
            Lex::Quoted => &w.quoted,
            Lex::Plain if self.depth > 1 => &w.nested,
            _ => &w.entries,
        }
    }

    /// An entry read as [`direct`] reads it (`exact`): its value kept for the call and its
    /// fragment sent. One lookup: a repeated key sends nothing (its stream stops; the first
    /// value, which was sent, is put back: `exact_sent` reads it).
    fn keep_and_send(&mut self, k: &str, v: Value, fragment: String, cx: &mut ReadCx<'_>) -> bool {
        if self.args.is_empty() {
            // Room for the template's usual few entries at once (the first insert's growth
            // from nothing cost ~140 instructions a call more: `bench_profile "gemma4/100
            // calls" stream4`), made at the first entry: a stream kept for the next block
            // ([`LiveObject::reset`]) holds none until then.
            self.args = Map::with_capacity(3);
        }
        if let Some(first) = self.args.insert(k.to_owned(), v) {
            self.args.insert(k.to_owned(), first);
            return false;
        }
        self.send(fragment, cx);
        true
    }

    /// One top-level entry `key:value` is complete: sends its JSON.
    fn entry_done(&mut self, entry: &str, last: bool, tool: &str, cx: &mut ReadCx<'_>) -> bool {
        if self.exact && self.text_values.is_none() {
            let lead = if self.sent_any { ',' } else { '{' };
            if let Some((k, v, fragment)) = plain_entry(entry, self.quote, lead) {
                return self.keep_and_send(k, v, fragment, cx);
            }
        }
        if entry.trim().is_empty() {
            // `{}` is read whole the same way; an empty entry beside others (`{a:1,}`) or
            // blanks `direct` does not skip are left to the whole-body read.
            if !(last && !self.sent_any && json_blank(entry)) {
                self.leave_exact();
            }
            return true;
        }
        if self.exact {
            // The template's own shape: decoded directly, the value kept for the call (its
            // keys are the keys sent); a text typed as the whole object's are
            // ([`type_text_values`]: only top-level texts, in order).
            if let Some((k, v)) = direct_entry(entry, self.quote) {
                let v = match (v, self.text_values) {
                    (Value::String(text), Some(rule)) => {
                        let spec = cx.ctx.spec(tool);
                        convert_text_value(&text, spec, k, rule, &mut self.repairs)
                    }
                    (v, _) => v,
                };
                // Room for the JSON of most entries: a `<|"|>` pair is longer than its `""`.
                let mut fragment = String::with_capacity(entry.len() + 8);
                fragment.push(if self.sent_any { ',' } else { '{' });
                // A bare key (`Direct::key`: letters, digits, `_`, `-`) needs no escape.
                fragment.push('"');
                fragment.push_str(k);
                fragment.push_str("\":");
                push_json_value(&mut fragment, &v);
                return self.keep_and_send(k, v, fragment, cx);
            }
        }
        self.leave_exact();
        // The entry as an object of its own, in a buffer kept between entries.
        let mut wrapped = std::mem::take(&mut self.scratch);
        wrapped.clear();
        wrapped.push('{');
        wrapped.push_str(entry);
        wrapped.push('}');
        let json = to_json(&wrapped, self.quote);
        self.scratch = wrapped;
        let Ok(json) = json else {
            return false;
        };
        let Ok((mut args, _)) = parse_lenient(&json) else {
            return false;
        };
        if let Some(rule) = self.text_values {
            let spec = cx.ctx.spec(tool);
            type_text_values(&mut args, spec, rule, &mut Vec::new());
        }
        let Value::Object(m) = args else {
            return false;
        };
        // One entry, or several whose commas were left out; a repeated key would rewrite
        // a value already sent.
        let keys = self.keys.get_or_insert_default();
        if m.is_empty() || m.keys().any(|k| keys.contains(k)) {
            return false;
        }
        // Each fragment is written in place (the key escaped as `serde_json` writes it, the
        // value by its compact `Display`), the converted text's buffer serving the first.
        let mut spare = Some(json);
        for (k, v) in m {
            let mut fragment = spare.take().unwrap_or_default();
            fragment.clear();
            fragment.push(if self.sent_any { ',' } else { '{' });
            push_json_str(&mut fragment, &k);
            fragment.push(':');
            // Writing to a `String` cannot fail.
            let _ = write!(fragment, "{v}");
            self.send(fragment, cx);
            self.keys.get_or_insert_default().insert(k);
        }
        true
    }

    fn scan(&mut self, region: &str, tool: &str, cx: &mut ReadCx<'_>) {
        let bytes = region.as_bytes();
        // The quote's first byte (`<` of `<|"|>` and of `<escape>`).
        let q0 = self.quote.as_bytes().first().copied().unwrap_or(b'<');
        while !self.stopped && self.pos < bytes.len() {
            match self.lex {
                Lex::Quoted => {
                    // A push's few bytes are looked at plainly; a quote split across pushes
                    // is looked at again from its first byte.
                    let mut search = ScanFrom(self.pos);
                    match search.find(region, self.quote) {
                        Some(i) => {
                            self.pos = i + self.quote.len();
                            self.lex = Lex::Plain;
                        }
                        None => {
                            self.pos = search.0.max(self.pos);
                            return;
                        }
                    }
                }
                Lex::Json(escaped) => {
                    let b = bytes[self.pos];
                    self.pos += 1;
                    self.lex = match (escaped, b) {
                        (true, _) => Lex::Json(false),
                        (false, b'\\') => Lex::Json(true),
                        (false, b'"') => Lex::Plain,
                        _ => Lex::Json(false),
                    };
                }
                Lex::Plain => {
                    // The bytes that change nothing here (names, literals, blanks) are
                    // passed in one run, a table lookup each.
                    let Some(n) = bytes[self.pos..]
                        .iter()
                        .position(|&b| PLAIN_STOPS[usize::from(b)] || b == q0)
                    else {
                        self.pos = bytes.len();
                        return;
                    };
                    self.pos += n;
                    let b = bytes[self.pos];
                    if b == q0 {
                        let rest = region.get(self.pos..).unwrap_or("");
                        if rest.starts_with(self.quote) {
                            self.pos += self.quote.len();
                            self.lex = Lex::Quoted;
                            continue;
                        }
                        if self.quote.starts_with(rest) {
                            return; // more bytes decide
                        }
                    }
                    self.pos += 1;
                    match b {
                        b'"' => self.lex = Lex::Json(false),
                        b'{' | b'[' => {
                            self.depth += 1;
                            if self.depth > self.max_depth {
                                self.stopped = true;
                            }
                        }
                        b'}' | b']' => {
                            self.depth = self.depth.saturating_sub(1);
                            if self.depth == 0 {
                                let entry = region.get(self.entry..self.pos - 1).unwrap_or("");
                                if !self.entry_done(entry, true, tool, cx) {
                                    self.stopped = true;
                                    return;
                                }
                                let close = if self.sent_any { "}" } else { "{}" };
                                self.send_after(close, cx);
                                self.closed = true;
                                self.stopped = true;
                                if b == b'}' {
                                    self.end = Some(self.pos);
                                }
                            }
                        }
                        b',' if self.depth == 1 => {
                            let entry = region.get(self.entry..self.pos - 1).unwrap_or("");
                            if !self.entry_done(entry, false, tool, cx) {
                                self.stopped = true;
                                return;
                            }
                            self.entry = self.pos;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

impl BlockStream for LiveObject {
    fn advance(&mut self, region: &str, lead_name: Option<&str>, cx: &mut ReadCx<'_>) {
        let Some(tool) = lead_name.filter(|_| !self.stopped) else {
            if self.stopped {
                cx.wake = Some(self.wake());
            }
            return;
        };
        self.calls = 1;
        if self.open.is_none() {
            // The lead named the call, so its `{` has arrived: right after the name where
            // the lead's name lies in the region (no `memchr` call, ~80 instructions a call:
            // `bench_profile "gemma4/small" into4`), else the first after the opener.
            let after_name = (tool.as_ptr() as usize)
                .wrapping_sub(region.as_ptr() as usize)
                .wrapping_add(tool.len());
            let at = if after_name >= self.from && region.as_bytes().get(after_name) == Some(&b'{')
            {
                Some(after_name)
            } else {
                region
                    .as_bytes()
                    .get(self.from..)
                    .and_then(|r| memchr::memchr(b'{', r))
                    .map(|i| self.from + i)
            };
            let Some(at) = at else {
                self.stopped = true;
                return;
            };
            self.open = Some(at);
            self.pos = at + 1;
            self.depth = 1;
            self.entry = at + 1;
        }
        self.scan(region, tool, cx);
        cx.wake = Some(self.wake());
    }

    fn calls(&self) -> usize {
        self.calls
    }

    fn finish(
        &mut self,
        _region: &str,
        _lead_name: Option<&str>,
        drafts: &[Draft],
        span: std::ops::Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        if self.rebuilt {
            // The call's arguments are the values sent, each written as the final
            // arguments serialise it: nothing is left to send or to compare.
            return;
        }
        if self.exact {
            let sent = self.exact_sent();
            finish_sent(&[], self.calls, &sent, drafts, span, o, cx);
        } else {
            finish_sent(&[], self.calls, &self.sent, drafts, span, o, cx);
        }
    }

    fn draft(
        &mut self,
        region: &str,
        lead_name: Option<&str>,
        body_end: usize,
        format: FormatId,
    ) -> Option<Draft> {
        // The object closed, every entry was read as `read_call` reads the whole object,
        // and only blanks follow it (`read_call` trims them).
        let end = self.end.filter(|_| self.exact)?;
        if !region.get(end..body_end)?.trim().is_empty() {
            return None;
        }
        let name = lead_name?;
        let args = std::mem::take(&mut self.args);
        self.rebuilt = true;
        let mut draft = Draft::new(name, Some(Value::Object(args)), format);
        draft.repairs = std::mem::take(&mut self.repairs);
        Some(draft)
    }

    /// [`LiveObject::new`] with the same settings again, its buffers kept (the stream of
    /// the parse's next block of its format: [`super::tags::Kept::stream`]).
    /// Field by field (every field named: one added must be said here): a new object
    /// built and moved in cost ~300 instructions more than it saved.
    fn reset(&mut self) -> bool {
        let LiveObject {
            from,
            wakes: _,
            quote: _,
            open,
            pos,
            depth,
            lex,
            entry,
            sent_any,
            closed,
            sent,
            scratch: _,
            keys,
            calls,
            max_depth: _,
            stopped,
            text_values: _,
            repairs,
            args,
            exact,
            end,
            rebuilt,
        } = self;
        *open = None;
        *pos = *from;
        *depth = 0;
        *lex = Lex::Plain;
        *entry = 0;
        *sent_any = false;
        *closed = false;
        sent.clear();
        // An empty set reads as none (each use makes one when there is none).
        if let Some(k) = keys {
            k.clear();
        }
        *calls = 0;
        *stopped = false;
        repairs.clear();
        // As `new` makes it (the last call's moved into its draft, or dropped here).
        if !args.is_empty() {
            *args = Map::new();
        }
        *exact = true;
        *end = None;
        *rebuilt = false;
        true
    }
}
