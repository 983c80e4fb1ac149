//! `tools_envelope` (F-JSON-1..4): `{"tools":[{"name","arguments"}, ...]}`, in a
//! fence or raw in prose; every entry, in order. The envelope is specific enough to accept
//! any tool name (unknown ones are flagged); the executor answers them with `unknown_tool`.
//! An object with other top-level keys, or entries carrying `type`/`description`/`function`
//! (a tools *definition* list), is not an envelope (R-4).

use super::described::{Bare, Described};
use std::ops::Range;

use serde_json::{Map, Value, json};

use super::keys_within;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};

/// On a match the arguments are moved out of `v`; on `None`, `v` is untouched.
pub(crate) fn classify(v: &mut Value, ctx: &Ctx, span: Range<usize>) -> Option<Outcome> {
    let m = v.as_object()?;
    if !keys_within(m, &["tools"]) {
        return None;
    }
    let entries = m.get("tools")?.as_array()?;
    if entries.is_empty() {
        return None;
    }
    let mut out = Outcome::default();
    let mut keys = Vec::with_capacity(entries.len());
    for e in entries {
        let e = e.as_object()?;
        if !keys_within(e, &["name", "arguments", "parameters", "id", "call_id"]) {
            return None;
        }
        let name = e.get("name")?.as_str()?;
        let key = if e.contains_key("arguments") {
            Some("arguments")
        } else if e.contains_key("parameters") {
            Some("parameters")
        } else {
            None
        };
        let mut d = Draft::new(name, None, FormatId::TOOLS_ENVELOPE);
        d.id = e
            .get("id")
            .or_else(|| e.get("call_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        d.span = span.clone();
        out.diagnostics
            .extend(ctx.unknown_name_warning(name, span.clone()));
        out.drafts.push(d);
        keys.push(key);
    }
    let entries: Vec<&mut serde_json::Map<String, Value>> = v
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .map(|a| a.iter_mut().filter_map(Value::as_object_mut).collect())
        .unwrap_or_default();
    for ((d, key), e) in out.drafts.iter_mut().zip(keys).zip(entries) {
        d.args = key.and_then(|k| e.get_mut(k)).map(Value::take);
    }
    Some(out)
}

impl FormatId {
    pub(crate) const TOOLS_ENVELOPE: FormatId = FormatId::builtin("tools_envelope");
}


fn classify_json(v: &mut Value, cx: &JsonCx<'_>, _format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, cx.span.clone())
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "```json\n{}\n```",
        json!({"tools": [{"name": name, "arguments": args}]})
    )
}

pub(crate) static TOOLS_ENVELOPE: Described = Described {
    id: FormatId::TOOLS_ENVELOPE,
    description: "{\"tools\":[...]} envelope in a ```json fence or raw in prose; every entry in order",
    example: r#"{"tools":[{"name":"computer_use","arguments":{"action":"screenshot"}}]}"#,
    bare: Some(Bare {
        objects: true,
        arrays: false,
        classify: classify_json,
    }),
    generic_because: Some("a JSON envelope many agent prompts ask for, not one model's markup"),
    instructions: Some(Instructions {
        how: "To call tools, include one fenced ```json block holding an object with a \"tools\" array; each entry has the tool's \"name\" and an \"arguments\" object.",
        several: "- To make several calls, put several entries in the \"tools\" array; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

