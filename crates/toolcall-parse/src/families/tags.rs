//! Shared reader for tag-delimited call blocks whose values are text (Qwen3-Coder and
//! Seed-OSS `<function=NAME><parameter=K>V</parameter></function>`, GLM
//! `NAME<arg_key>K</arg_key><arg_value>V</arg_value>`): the block is recognised from a
//! bounded lead after the opener, its closing tag is searched resumably (each byte once),
//! and the body is read in one pass when the block is complete. Values are typed by the
//! tool's schema ([`convert_text_value`]).

use serde_json::{Map, Value};
use toolcall_core::Repair;

use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Advance, Outcome, ReadCx, RegionReader, ScanFrom, convert_text_value};

/// What the lead (the bytes after the opener) says.
pub(crate) enum Lead {
    NeedMore,
    NotMine,
    /// Ours; the call's name when the lead already shows it (announced while streaming).
    Mine(Option<String>),
}

/// A family's description of its block.
pub(crate) struct Block {
    pub format: FormatId,
    pub open: &'static str,
    pub close: &'static str,
    /// Decides from the bytes after the opener (complete = the input has ended).
    pub lead: fn(&str, bool) -> Lead,
    /// Reads the body (between opener and closing tag) into drafts.
    pub body: fn(&str, &mut ReadCx<'_>, FormatId) -> Result<Vec<Draft>, String>,
}

/// Bytes after the opener the lead may take before the opener is taken for prose.
pub(crate) const MAX_LEAD: usize = 512;

pub(crate) struct BlockReader {
    block: &'static Block,
    mine: bool,
    announced: bool,
    close: ScanFrom,
}

impl BlockReader {
    pub(crate) fn new(block: &'static Block) -> Self {
        BlockReader {
            block,
            mine: false,
            announced: false,
            close: ScanFrom(block.open.len()),
        }
    }
}

impl RegionReader for BlockReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let b = self.block;
        let after = region.get(b.open.len()..).unwrap_or("");
        if !self.mine || !self.announced {
            let mut lead_end = after.len().min(MAX_LEAD);
            while !after.is_char_boundary(lead_end) {
                lead_end -= 1;
            }
            let lead = after.get(..lead_end).unwrap_or("");
            match (b.lead)(lead, is_final || after.len() > MAX_LEAD) {
                Lead::NeedMore if !self.mine => {
                    return if is_final {
                        Advance::NotMine
                    } else {
                        Advance::NeedMore
                    };
                }
                Lead::NotMine if !self.mine => return Advance::NotMine,
                Lead::Mine(name) => {
                    self.mine = true;
                    if let Some(name) = name
                        && !self.announced
                    {
                        self.announced = true;
                        cx.start_call(&name, None);
                    }
                }
                _ => {}
            }
            if after.len() > MAX_LEAD {
                self.announced = true;
            }
        }
        let (body_end, end, closed) = match self.close.find(region, b.close) {
            Some(i) => (i, i + b.close.len(), true),
            None if is_final => (region.len(), region.len(), false),
            None => return Advance::NeedMore,
        };
        if !closed {
            return Advance::Broken {
                end,
                why: format!(
                    "truncated tool call: {} is not closed before the end of output; not run",
                    b.open
                ),
            };
        }
        let body = region.get(b.open.len()..body_end).unwrap_or("");
        match (b.body)(body, cx, b.format) {
            Ok(mut drafts) => {
                for d in &mut drafts {
                    d.span = cx.span(0, end);
                }
                let mut o = Outcome::default();
                for d in &drafts {
                    o.diagnostics
                        .extend(cx.ctx.unknown_name_warning(&d.name, cx.span(0, end)));
                }
                if let Some(first) = drafts.first()
                    && self.announced
                {
                    let args = first.args.clone().unwrap_or(Value::Object(Map::new()));
                    cx.arguments(&args.to_string());
                }
                o.drafts = drafts;
                Advance::Done { end, outcome: o }
            }
            Err(why) => Advance::Broken { end, why },
        }
    }
}

/// Leading ASCII whitespace of `s`.
pub(crate) fn skip_space(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_ascii_whitespace())
}

/// `s` starts with `tag`, or (`None`) is a proper prefix of it (more bytes decide).
pub(crate) fn starts(s: &str, tag: &str) -> Option<bool> {
    if s.starts_with(tag) {
        Some(true)
    } else if tag.starts_with(s) {
        None
    } else {
        Some(false)
    }
}

/// A tool name: non-empty, no whitespace or markup, bounded.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && !name
            .bytes()
            .any(|b| b.is_ascii_whitespace() || matches!(b, b'<' | b'>' | b'"' | b'\''))
}

/// `<function=NAME>` at the start of `lead` (after blanks).
pub(crate) fn function_lead(lead: &str, complete: bool) -> Lead {
    let s = skip_space(lead);
    if s.is_empty() {
        return if complete {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    }
    match starts(s, "<function=") {
        Some(false) => return Lead::NotMine,
        None => {
            return if complete {
                Lead::NotMine
            } else {
                Lead::NeedMore
            };
        }
        Some(true) => {}
    }
    let rest = &s["<function=".len()..];
    match rest.find('>') {
        Some(i) if valid_name(&rest[..i]) => Lead::Mine(Some(rest[..i].to_owned())),
        Some(_) => Lead::NotMine,
        None if complete || rest.len() > 256 || rest.contains(char::is_whitespace) => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

/// Strips the one newline of layout on each side of a tag-delimited value.
pub(crate) fn layout_trim(v: &str) -> &str {
    let v = v
        .strip_prefix("\r\n")
        .or_else(|| v.strip_prefix('\n'))
        .unwrap_or(v);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

/// Types a text value by the tool's schema, recording repairs on the draft.
pub(crate) fn typed(
    cx: &ReadCx<'_>,
    tool: &str,
    key: &str,
    raw: &str,
    repairs: &mut Vec<Repair>,
) -> Value {
    convert_text_value(raw, cx.ctx.spec(tool), key, repairs)
}

/// The body of a Qwen3-Coder / Seed-OSS block: one or more
/// `<function=NAME>(<parameter=K>V</parameter>)*</function>`, blanks between.
pub(crate) fn xml_functions(
    body: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut s = skip_space(body);
    while !s.is_empty() {
        let rest = s
            .strip_prefix("<function=")
            .ok_or("expected <function=NAME> in the tool call")?;
        let gt = rest.find('>').ok_or("<function= is not closed by >")?;
        let name = &rest[..gt];
        if !valid_name(name) {
            return Err(format!("invalid tool name {name:?}"));
        }
        let mut p = &rest[gt + 1..];
        let mut args = Map::new();
        let mut repairs = Vec::new();
        loop {
            p = skip_space(p);
            if let Some(after) = p.strip_prefix("</function>") {
                p = after;
                break;
            }
            let after = p.strip_prefix("<parameter=").ok_or_else(|| {
                format!("expected <parameter=KEY> or </function> in the call to {name:?}")
            })?;
            let gt = after.find('>').ok_or("<parameter= is not closed by >")?;
            let key = &after[..gt];
            let value_and_rest = &after[gt + 1..];
            // The value ends at </parameter>; a missing one is tolerated before the next
            // parameter or the end of the function.
            let (raw, next) = match value_and_rest.find("</parameter>") {
                Some(i) => (
                    &value_and_rest[..i],
                    &value_and_rest[i + "</parameter>".len()..],
                ),
                None => {
                    let stop = ["\n<parameter=", "<parameter=", "</function>"]
                        .iter()
                        .filter_map(|t| value_and_rest.find(t))
                        .min()
                        .ok_or_else(|| format!("parameter {key:?} of {name:?} is not closed"))?;
                    repairs.push(Repair::new(
                        "closing_tag",
                        format!("parameter {key:?}: </parameter> was missing"),
                    ));
                    (&value_and_rest[..stop], &value_and_rest[stop..])
                }
            };
            let v = typed(cx, name, key, layout_trim(raw), &mut repairs);
            args.insert(key.to_owned(), v);
            p = next;
        }
        let mut d = Draft::new(name, Some(Value::Object(args)), format);
        d.repairs = repairs;
        drafts.push(d);
        s = skip_space(p);
    }
    if drafts.is_empty() {
        return Err("empty tool call block".into());
    }
    Ok(drafts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads() {
        assert!(
            matches!(function_lead("\n<function=get>", false), Lead::Mine(Some(n)) if n == "get")
        );
        assert!(matches!(function_lead("\n<func", false), Lead::NeedMore));
        assert!(matches!(function_lead("{\"name\"", false), Lead::NotMine));
        assert!(matches!(
            function_lead("<function=a b>", false),
            Lead::NotMine
        ));
        assert_eq!(layout_trim("\nx\n\n"), "x\n");
    }
}
