//! `gemma4`: Gemma 4 writes `<|tool_call>call:NAME{...}<tool_call|>`; the arguments are an
//! object with bare keys, strings between `<|"|>` markers, and numbers, booleans, lists and
//! nested objects as literals. The object is rewritten as JSON in one pass, then decoded.

use serde_json::Value;

use serde_json::Map;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{Family, Instructions, ReadCx, RegionReader, parse_lenient};

use super::tags::{Block, BlockReader, Lead, skip_space, starts, valid_name};

impl FormatId {
    pub(crate) const GEMMA4: FormatId = FormatId::builtin("gemma4");
}

/// Gemma's string delimiter.
const QUOTE: &str = "<|\"|>";

static BLOCK: Block = Block {
    format: FormatId::GEMMA4,
    open: "<|tool_call>",
    close: "<tool_call|>",
    lead,
    body,
};

pub(crate) struct Gemma4;

impl Family for Gemma4 {
    fn id(&self) -> &'static str {
        FormatId::GEMMA4.as_str()
    }
    fn description(&self) -> &'static str {
        "<|tool_call>call:NAME{key:<|\"|>text<|\"|>,n:42}<tool_call|> (Gemma 4)"
    }
    fn example(&self) -> &'static str {
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>"
    }
    fn openers(&self) -> &'static [&'static str] {
        &["<|tool_call>"]
    }
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        Some(Box::new(BlockReader::new(&BLOCK)))
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: r#"To call a tool, write <|tool_call>call:TOOL_NAME{...}<tool_call|> where the arguments object has bare keys, text between <|"|> markers, and numbers, booleans, lists and nested objects as literals, e.g. {city:<|"|>Paris<|"|>,days:3}."#,
            several: "- To make several calls, write several <|tool_call> blocks; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        let mut s = format!("<|tool_call>call:{name}");
        write_gemma_object(&mut s, args, 0);
        s.push_str("<tool_call|>");
        Some(s)
    }
}

/// `call:NAME{` after the opener.
fn lead(lead: &str, complete: bool) -> Lead {
    let s = skip_space(lead);
    match starts(s, "call:") {
        Some(true) => {}
        None if !complete => return Lead::NeedMore,
        _ => return Lead::NotMine,
    }
    let rest = &s["call:".len()..];
    match rest.find('{') {
        Some(i) if valid_name(&rest[..i]) => Lead::Mine(Some(rest[..i].to_owned())),
        Some(_) => Lead::NotMine,
        None if complete || rest.len() > 256 || rest.contains(char::is_whitespace) => {
            Lead::NotMine
        }
        None => Lead::NeedMore,
    }
}

fn body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let rest = skip_space(body)
        .strip_prefix("call:")
        .ok_or("expected call:NAME{...}")?;
    let brace = rest.find('{').ok_or("expected { after the tool name")?;
    let name = &rest[..brace];
    if !valid_name(name) {
        return Err(format!("invalid tool name {name:?}"));
    }
    let json = to_json(rest[brace..].trim_end())?;
    let (args, repairs) =
        parse_lenient(&json).map_err(|e| format!("the arguments of {name:?} are malformed: {e}"))?;
    if !args.is_object() {
        return Err(format!("the arguments of {name:?} are not an object"));
    }
    let mut d = Draft::new(name, Some(args), format);
    d.repairs = repairs;
    Ok(vec![d])
}

/// Rewrites Gemma's literal syntax as JSON: `<|"|>text<|"|>` → a JSON string, a bare key
/// (after `{` or a comma inside an object) → a quoted key; everything else is copied.
fn to_json(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len() + 16);
    let mut objects: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix(QUOTE) {
            let end = after.find(QUOTE).ok_or("a <|\"|> string is not closed")?;
            out.push_str(&Value::String(after[..end].to_owned()).to_string());
            rest = &after[end + QUOTE.len()..];
            expect_key = false;
            continue;
        }
        match c {
            '{' | '[' => {
                objects.push(c == '{');
                expect_key = c == '{';
                out.push(c);
            }
            '}' | ']' => {
                objects.pop();
                expect_key = false;
                out.push(c);
            }
            ',' => {
                expect_key = objects.last() == Some(&true);
                out.push(c);
            }
            '"' => {
                // An ordinary JSON string: copy it through, escapes included.
                let bytes = rest.as_bytes();
                let mut i = 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = (i + 1).min(rest.len());
                out.push_str(rest.get(..end).ok_or("a string is cut")?);
                rest = &rest[end..];
                expect_key = false;
                continue;
            }
            c if expect_key && (c.is_ascii_alphabetic() || c == '_') => {
                let n = rest
                    .find(|k: char| !(k.is_ascii_alphanumeric() || k == '_' || k == '-'))
                    .unwrap_or(rest.len());
                out.push_str(&Value::String(rest[..n].to_owned()).to_string());
                rest = &rest[n..];
                expect_key = false;
                continue;
            }
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// Writes `args` in Gemma's literal syntax; nesting past a small bound (examples are
/// shallow) is written as `null`.
fn write_gemma_object(out: &mut String, args: &Map<String, Value>, depth: usize) {
    out.push('{');
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push(':');
        write_gemma_value(out, v, depth + 1);
    }
    out.push('}');
}

fn write_gemma_value(out: &mut String, v: &Value, depth: usize) {
    if depth > 16 {
        out.push_str("null");
        return;
    }
    match v {
        Value::String(s) => {
            out.push_str(QUOTE);
            out.push_str(s);
            out.push_str(QUOTE);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_gemma_value(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => write_gemma_object(out, map, depth),
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_json() {
        let j = to_json(r#"{a:<|"|>x, "y"<|"|>,n:-4.5,b:true,l:[<|"|>p<|"|>,1],o:{k:null}}"#)
            .unwrap();
        let v: Value = serde_json::from_str(&j).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "x, \"y\"", "n": -4.5, "b": true, "l": ["p", 1], "o": {"k": null}})
        );
        assert!(to_json(r#"{a:<|"|>open}"#).is_err());
    }
}
