//! `tools_envelope` (F-JSON-1..4, seed 000): `{"tools":[{"name","arguments"}, ...]}`, in a
//! fence or raw in prose; every entry, in order. The envelope is specific enough to accept
//! any tool name (unknown ones are flagged); the executor answers them with `unknown_tool`.
//! An object with other top-level keys, or entries carrying `type`/`description`/`function`
//! (a tools *definition* list), is not an envelope.

use std::ops::Range;

use serde_json::Value;

use super::keys_within;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};

pub(crate) fn classify(v: &Value, ctx: &Ctx, span: Range<usize>) -> Option<Outcome> {
    let m = v.as_object()?;
    if !keys_within(m, &["tools"]) {
        return None;
    }
    let entries = m.get("tools")?.as_array()?;
    if entries.is_empty() {
        return None;
    }
    let mut out = Outcome::default();
    for e in entries {
        let e = e.as_object()?;
        if !keys_within(e, &["name", "arguments", "parameters", "id", "call_id"]) {
            return None;
        }
        let name = e.get("name")?.as_str()?;
        let args = e.get("arguments").or_else(|| e.get("parameters")).cloned();
        let mut d = Draft::new(name, args, FormatId::ToolsEnvelope);
        d.id = e
            .get("id")
            .or_else(|| e.get("call_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        d.span = span.clone();
        out.diagnostics
            .extend(ctx.unknown_name_warning(name, span.clone()));
        out.drafts.push(d);
    }
    Some(out)
}
