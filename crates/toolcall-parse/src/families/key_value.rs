//! `key_value` (F-KV-1..2): a `TOOL_CALL: <tool>` line followed by `FIELD: value`
//! lines, case-insensitive. Field names map case-insensitively onto the tool's schema
//! properties (`FROM:`/`TO:` → `from`/`to`); values are read by the property's schema
//! like every text-valued family's (`"007"` stays a string where the schema says string). The
//! block ends at the first line that is not a field of the tool; that line and what follows
//! are the reply text. With a registry only registered tools are accepted (R-4); without
//! one any `NAME: value` line is a field (lower-cased).
//!
//! The header is a line opener ([`Family::line_openers`]); the region runs from it to the
//! line that is not a field. Streamed, the call is announced at the header and each field
//! is forwarded as a JSON fragment (`{"key":value`, then `,"key":value`, then `}`) once
//! its line is complete, the value converted exactly as in the final arguments.

use serde_json::{Map, Value};
use toolcall_core::{Level, Repair, ToolSpec};

use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{
    Advance, Family, Instructions, Message, Note, Pieces, Plain, ReadCx, RegionReader, Untyped,
    convert_text_value,
};

pub(crate) const HEADER: &str = "tool_call:";
/// A header line longer than this is not one (bounds the wait for its newline).
const MAX_HEADER: usize = 1024;

/// Whether `line` is a `TOOL_CALL:` header (any case, leading blanks allowed).
pub(crate) fn is_header(line: &str) -> bool {
    line.trim_start()
        .get(..HEADER.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(HEADER))
}

/// The tool name of a header line (`line` starts with `TOOL_CALL:`, any case).
pub(crate) fn header_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().get(HEADER.len()..)?;
    let name = rest.trim();
    // Bytes first, characters only from the first non-ASCII one (a declined header's
    // line, `tool_call:the<function name="`, was decoded character by character, ~260
    // instructions a line): the ASCII blanks are `char::is_whitespace`'s.
    let blank = match name
        .bytes()
        .position(|b| matches!(b, b'\t'..=b'\r' | b' ') || b >= 0x80)
    {
        None => false,
        Some(i) if name.as_bytes()[i] < 0x80 => true,
        Some(i) => name.get(i..).is_some_and(|r| r.contains(char::is_whitespace)),
    };
    (!name.is_empty() && !blank).then_some(name)
}

/// `KEY: value` → the schema property it names (or the lower-cased key without a schema).
pub(crate) fn field(line: &str, spec: Option<&ToolSpec>) -> Option<(String, String)> {
    let (key, value) = line.split_once(':')?;
    let key = key.trim();
    if key.is_empty()
        || key.len() > 64
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b' '))
    {
        return None;
    }
    let norm: String = key
        .chars()
        .map(|c| {
            if c == ' ' || c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let prop = match spec {
        Some(spec) => spec
            .property_names()
            .find(|p| p.eq_ignore_ascii_case(&norm))?
            .to_owned(),
        None => {
            if norm.contains(' ') || norm.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            norm
        }
    };
    Some((prop, value.trim().to_owned()))
}

/// The arguments object, each value read by the tool's schema like every text-valued
/// family ([`convert_text_value`]: strings kept exactly, other types read as JSON, a repair
/// recorded where a value was not what the schema asked).
pub(crate) fn arguments(
    fields: &[(String, String)],
    spec: Option<&ToolSpec>,
    repairs: &mut Vec<Repair>,
) -> Map<String, Value> {
    fields
        .iter()
        .map(|(k, raw)| (k.clone(), convert_text_value(raw, spec, k, Untyped::Text, repairs)))
        .collect()
}

/// The message of the note for a block of an unregistered tool `name` (at `at..` in the
/// region): a name `{:?}` would not escape is a piece of the region between its quotes,
/// written only when the cap reports the note (a flood of `TOOL_CALL: x` lines makes one
/// a line; see [`Note`]).
fn unregistered(name: &str, at: usize) -> Message {
    if !name
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    {
        return Message::Text(format!(
            "TOOL_CALL block for unregistered tool {name:?} left as text"
        ));
    }
    Message::Pieces(Pieces {
        head: "TOOL_CALL block for unregistered tool \"",
        slice: at..at + name.len(),
        tail: "\" left as text",
        error: None,
    })
}

/// Reads one `TOOL_CALL:` block: the header line, then field lines up to the first line
/// that is not a field of the tool.
struct BlockReader {
    /// Tool name, once the header line is complete and accepted.
    name: Option<String>,
    fields: Vec<(String, String)>,
    /// Start of the first line not yet read as a field.
    line: usize,
    /// Where the newline search resumes (`line..search` has no newline).
    search: usize,
}

/// The end of the header line at the start of `region` and the next line's start, once
/// the line is complete: `Err` is the decision when it cannot be one.
fn header_line(region: &str, is_final: bool) -> Result<(usize, usize), Advance> {
    let len = region.len();
    let window = region.as_bytes().get(..len.min(MAX_HEADER)).unwrap_or(&[]);
    match memchr::memchr(b'\n', window) {
        Some(nl) => Ok((nl, nl + 1)),
        None if is_final && len <= MAX_HEADER => Ok((len, len)),
        None if len < MAX_HEADER => Err(Advance::NeedMore),
        None => Err(Advance::NotMine),
    }
}

/// The region of a header line (ending at `line_end`) naming `name`, a tool the registry
/// lacks: text, with a note. The line is text at once when the scan would read all of it
/// as ordinary bytes (its newline, read next, ends the name the scan tracks), else from its
/// second byte on.
fn unregistered_line(region: &str, line_end: usize, name: &str, cx: &ReadCx<'_>) -> Plain {
    // `name` is a slice of `region`.
    let at = (name.as_ptr() as usize).wrapping_sub(region.as_ptr() as usize);
    let end = if cx.ordinary(region, 1..line_end) { line_end } else { 0 };
    Plain {
        end,
        scanned: end,
        diagnostic: Some(Note {
            level: Level::Info,
            message: unregistered(name, at),
            span: cx.span(0, line_end),
        }),
        label: None,
    }
}

impl BlockReader {
    /// The header line, once complete: `Err` is the decision when it is not a usable one.
    fn header(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Result<(), Advance> {
        let (line_end, next) = header_line(region, is_final)?;
        let line = region.get(..line_end).unwrap_or("");
        let Some(name) = header_name(line) else {
            return Err(Advance::NotMine);
        };
        if !cx.strict_name_ok(name) {
            return Err(Advance::Text(unregistered_line(region, line_end, name, cx)));
        }
        cx.start_call(name, None);
        self.name = Some(name.to_owned());
        self.line = next;
        self.search = next;
        Ok(())
    }
}

impl RegionReader for BlockReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if self.name.is_none()
            && let Err(decided) = self.header(region, is_final, cx)
        {
            return decided;
        }
        let spec = match &self.name {
            Some(name) => cx.ctx.spec(name),
            None => return Advance::NotMine,
        };
        let len = region.len();
        loop {
            let from = self.search.max(self.line);
            let rest = region.as_bytes().get(from..).unwrap_or(&[]);
            let (line_end, next) = match memchr::memchr(b'\n', rest) {
                Some(nl) => (from + nl, from + nl + 1),
                None if is_final => (len, len),
                None => {
                    self.search = len;
                    return Advance::NeedMore;
                }
            };
            let line = region
                .get(self.line..line_end)
                .unwrap_or("")
                .trim_end_matches('\r');
            // A new `TOOL_CALL:` header starts the next call, never a field of this one.
            if self.line < len
                && !is_header(line)
                && let Some((key, raw)) = field(line, spec)
            {
                if cx.streaming() {
                    let value = convert_text_value(&raw, spec, &key, Untyped::Text, &mut Vec::new());
                    let sep = if self.fields.is_empty() { "{" } else { "," };
                    let key_json = Value::String(key.clone());
                    cx.arguments(&format!("{sep}{key_json}:{value}"));
                }
                self.fields.push((key, raw));
                self.line = next;
                self.search = next;
                continue;
            }
            // The block ends before this line.
            cx.arguments(if self.fields.is_empty() { "{}" } else { "}" });
            let mut repairs = Vec::new();
            let args = arguments(&self.fields, spec, &mut repairs);
            let name = self.name.take().unwrap_or_default();
            let mut d = Draft::new(name, Some(Value::Object(args)), FormatId::KEY_VALUE);
            d.repairs = repairs;
            d.span = cx.span(0, self.line);
            return Advance::Done {
                end: self.line,
                outcome: Outcome {
                    drafts: vec![d],
                    ..Outcome::default()
                },
            };
        }
    }
}

impl FormatId {
    pub(crate) const KEY_VALUE: FormatId = FormatId::builtin("key_value");
}

pub(crate) struct KeyValue;

impl Family for KeyValue {
    fn generic_because(&self) -> Option<&'static str> {
        Some("a text convention many prompts ask for, not one model's markup")
    }
    fn id(&self) -> &'static str {
        FormatId::KEY_VALUE.as_str()
    }
    fn description(&self) -> &'static str {
        "TOOL_CALL: <tool> then FIELD: value lines, case-insensitive; trailing prose is the reply"
    }
    fn example(&self) -> &'static str {
        "TOOL_CALL: highlight_object\\nOBJECT: headphones"
    }
    fn line_openers(&self) -> &'static [&'static str] {
        &[HEADER]
    }
    // A complete header naming an unregistered tool is decided here, as the reader's first
    // step would decide it (a flood of such lines builds no reader), and so is one naming
    // no tool, which the reader declines (`end == 0`): a flood of `tool_call:\n` built a
    // reader at every line only to hear it decline (~1,750 instructions an 11-byte line,
    // 44.3x prose).
    fn line_text(
        &self,
        _opener: usize,
        region: &str,
        is_final: bool,
        cx: &mut ReadCx<'_>,
    ) -> Option<Plain> {
        let (line_end, _) = header_line(region, is_final).ok()?;
        let Some(name) = header_name(region.get(..line_end)?) else {
            // Declined: its first byte is text, and so are the bytes after it the scan
            // reads as ordinary ones, up to the line's end or the first it reads otherwise
            // (where the scan then goes on: `tool_call:the<function name="` read the
            // bytes before `<` twice, ~350 instructions a line).
            let end = cx.ordinary_to(region, 1..line_end);
            return Some(Plain {
                end,
                scanned: end,
                diagnostic: None,
                label: None,
            });
        };
        (!cx.strict_name_ok(name)).then(|| unregistered_line(region, line_end, name, cx))
    }
    // A header naming no tool (a blank in its name, or none), on its bytes alone.
    fn line_declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        header_line(region, is_final)
            .ok()
            .and_then(|(line_end, _)| region.get(..line_end))
            .is_some_and(|line| header_name(line).is_none())
    }
    // A copy of a line decided as text is decided the same way where the bytes the
    // decision reads lie in the copies: its line (the header, the name, its registry
    // answer) and what the ordinary-bytes check's opener lookups read past it.
    fn text_line_repeats(
        &self,
        _opener: usize,
        region: &str,
        line_end: usize,
        period: usize,
        reps: usize,
        cx: &mut ReadCx<'_>,
    ) -> usize {
        let run = (reps + 1) * period;
        if region.len() < run || line_end > MAX_HEADER {
            return 0;
        }
        let reach = line_end + cx.lookup_reach();
        (run.saturating_sub(reach) / period).min(reps)
    }
    fn line_reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(BlockReader {
            name: None,
            fields: Vec::new(),
            line: 0,
            search: 0,
        }))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call a tool, write a line `TOOL_CALL: tool_name`, then one line `ARGUMENT_NAME: value` per argument (the argument name in capitals). Arrays and objects are written as JSON.",
            several: "- To make several calls, start each with its own TOOL_CALL line; they run in that order. Friendly text may follow after a blank line.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut s = format!("TOOL_CALL: {name}");
        for (k, v) in args {
            s.push_str(&format!("\n{}: {}", k.to_uppercase(), tag_text(v)));
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use crate::family::Message;

    // `header_name` reads bytes up to the first non-ASCII one: the name it gives is the
    // one read by characters, for ASCII and Unicode blanks alike.
    #[test]
    fn header_names_are_read_as_by_characters() {
        fn by_chars(line: &str) -> Option<&str> {
            let name = line.trim_start().get(super::HEADER.len()..)?.trim();
            (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
        }
        let pieces = [
            "x", " ", "\t", "\u{b}", "\u{c}", "\r", "\u{1c}", "\u{a0}", "\u{3000}", "\u{85}",
            "\u{e9}", "get_weather", "<", "\u{2028}", "\u{ff5c}",
        ];
        let mut n = 0;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let line = format!("TOOL_CALL:{a}{b}{c}");
                    assert_eq!(super::header_name(&line), by_chars(&line), "{line:?}");
                    n += usize::from(by_chars(&line).is_some());
                }
            }
        }
        assert!(n > 100, "{n}");
    }

    #[test]
    fn unregistered_note_is_the_debug_quoted_name() {
        for name in ["x", "it's", "get weather", "a\"b", "back\\slash", "tab\there", "é", "~ok~", ""] {
            let region = format!("TOOL_CALL: {name}");
            let written = match super::unregistered(name, 11) {
                Message::Text(m) => m,
                Message::Kept(_) => String::new(),
                Message::Pieces(pieces) => {
                    let mut m = String::new();
                    pieces.write(&region, &mut m);
                    m
                }
            };
            assert_eq!(
                written,
                format!("TOOL_CALL block for unregistered tool {name:?} left as text"),
                "{name:?}"
            );
        }
    }
}
