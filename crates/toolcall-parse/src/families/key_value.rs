//! `key_value` (F-KV-1..2): a `TOOL_CALL: <tool>` line followed by `FIELD: value`
//! lines, case-insensitive. Field names map case-insensitively onto the tool's schema
//! properties (`FROM:`/`TO:` → `from`/`to`); values are read by the property's schema
//! like every text-valued family's (`"007"` stays a string where the schema says string). The
//! block ends at the first line that is not a field of the tool; that line and what follows
//! are the reply text. With a registry only registered tools are accepted; without
//! one any `NAME: value` line is a field (lower-cased).

use serde_json::{Map, Value};
use toolcall_core::{Repair, ToolSpec};

use super::text_example::tag_text;
use crate::FormatId;
use crate::family::{Family, Instructions, convert_text_value};

pub(crate) const HEADER: &str = "tool_call:";

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
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
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
        .map(|(k, raw)| (k.clone(), convert_text_value(raw, spec, k, repairs)))
        .collect()
}

impl FormatId {
    pub(crate) const KEY_VALUE: FormatId = FormatId::builtin("key_value");
}

pub(crate) struct KeyValue;

impl Family for KeyValue {
    fn id(&self) -> &'static str {
        FormatId::KEY_VALUE.as_str()
    }
    fn description(&self) -> &'static str {
        "TOOL_CALL: <tool> then FIELD: value lines, case-insensitive; trailing prose is the reply"
    }
    fn example(&self) -> &'static str {
        "TOOL_CALL: highlight_object\\nOBJECT: headphones"
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
