//! Native provider shapes given as JSON (F-NAT-1): Chat Completions (`openai_chat`),
//! Responses API items (`responses`), Gemini parts (`gemini`), Anthropic content blocks
//! (`anthropic`). Provider ids are kept. These are explicit markup: any tool name is
//! accepted and flagged when a registry lacks it. Recognised both through
//! [`crate::parse_native`] and when such a JSON object appears in text.
//!
//! Arguments are decoded by the wire formats' one policy ([`toolcall_wire::decode_arguments`]),
//! the same the model clients and the gateway use: a call whose arguments are not a JSON
//! object is dropped with an error diagnostic, never run with `{}`.

use std::ops::Range;

use serde_json::{Map, Value};

use toolcall_core::Diagnostic;

use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k).and_then(Value::as_str)
}

/// A call from its provider id, name and arguments, decoded by the wire policy.
fn call(
    out: &mut Outcome,
    ctx: &Ctx,
    span: &Range<usize>,
    format: FormatId,
    (id, name, args): (Option<&str>, &str, Option<&Value>),
) {
    match toolcall_wire::decode_arguments(args) {
        Ok(m) => {
            let mut d = Draft::new(name, Some(Value::Object(m)), format);
            d.id = id.map(str::to_owned);
            push(out, ctx, d, span);
        }
        Err(e) => out.diagnostics.push(Diagnostic::error(
            format!("call to {name:?} dropped: {e}"),
            span.clone(),
        )),
    }
}

fn push(out: &mut Outcome, ctx: &Ctx, mut d: Draft, span: &Range<usize>) {
    d.span = span.clone();
    out.diagnostics
        .extend(ctx.unknown_name_warning(&d.name, span.clone()));
    out.drafts.push(d);
}

fn append_text(out: &mut Outcome, t: &str) {
    out.text.push_str(t);
}

/// Reads `v` as the given native format; `None` when it is not that shape.
pub(crate) fn classify(v: &Value, ctx: &Ctx, f: FormatId, span: Range<usize>) -> Option<Outcome> {
    let mut out = Outcome::default();
    let found = match f {
        FormatId::OPENAI_CHAT => openai(v, ctx, &span, &mut out),
        FormatId::RESPONSES => responses(v, ctx, &span, &mut out),
        FormatId::GEMINI => gemini(v, ctx, &span, &mut out),
        FormatId::ANTHROPIC => anthropic(v, ctx, &span, &mut out),
        _ => false,
    };
    found.then_some(out)
}

fn openai(v: &Value, ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    let Some(m) = v.as_object() else { return false };
    if let Some(choices) = m.get("choices").and_then(Value::as_array) {
        let mut any = false;
        for c in choices {
            if let Some(msg) = c.get("message").or_else(|| c.get("delta")) {
                any |= openai(msg, ctx, span, out);
            }
        }
        return any;
    }
    let is_message = m.contains_key("tool_calls")
        || m.contains_key("function_call")
        || (s(m, "role") == Some("assistant")
            && matches!(m.get("content"), Some(Value::String(_) | Value::Null)));
    if !is_message {
        return false;
    }
    if let Some(t) = s(m, "content") {
        append_text(out, t);
    }
    if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
        for c in calls {
            let Some(f) = c.get("function").and_then(Value::as_object) else {
                continue;
            };
            let Some(name) = s(f, "name") else { continue };
            let id = c.get("id").and_then(Value::as_str);
            call(
                out,
                ctx,
                span,
                FormatId::OPENAI_CHAT,
                (id, name, f.get("arguments")),
            );
        }
    }
    if let Some(f) = m.get("function_call").and_then(Value::as_object)
        && let Some(name) = s(f, "name")
    {
        call(
            out,
            ctx,
            span,
            FormatId::OPENAI_CHAT,
            (None, name, f.get("arguments")),
        );
    }
    true
}

fn responses_item(item: &Value, ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    let Some(m) = item.as_object() else {
        return false;
    };
    match s(m, "type") {
        Some("function_call") => {
            let Some(name) = s(m, "name") else {
                return false;
            };
            let id = s(m, "call_id").or_else(|| s(m, "id"));
            call(
                out,
                ctx,
                span,
                FormatId::RESPONSES,
                (id, name, m.get("arguments")),
            );
            true
        }
        Some("message") => {
            if let Some(parts) = m.get("content").and_then(Value::as_array) {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        append_text(out, t);
                    }
                }
            }
            true
        }
        Some("reasoning") => true,
        _ => false,
    }
}

fn responses(v: &Value, ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    match v {
        Value::Array(items) if !items.is_empty() => {
            let mut all = true;
            let mut scratch = Outcome::default();
            for i in items {
                all &= responses_item(i, ctx, span, &mut scratch);
            }
            if all {
                out.drafts.extend(scratch.drafts);
                out.text.push_str(&scratch.text);
                out.diagnostics.extend(scratch.diagnostics);
            }
            all
        }
        Value::Object(m) => {
            if let Some(items) = m.get("output").and_then(Value::as_array) {
                for i in items {
                    responses_item(i, ctx, span, out);
                }
                true
            } else {
                s(m, "type") == Some("function_call") && responses_item(v, ctx, span, out)
            }
        }
        _ => false,
    }
}

fn gemini_parts(parts: &[Value], ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    let mut any = false;
    for p in parts {
        if let Some(fc) = p.get("functionCall").and_then(Value::as_object) {
            if let Some(name) = s(fc, "name") {
                let args = (s(fc, "id"), name, fc.get("args"));
                call(out, ctx, span, FormatId::GEMINI, args);
                any = true;
            }
        } else if let Some(t) = p.get("text").and_then(Value::as_str)
            && p.get("thought").and_then(Value::as_bool) != Some(true)
        {
            append_text(out, t);
        }
    }
    any
}

fn gemini(v: &Value, ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    let Some(m) = v.as_object() else { return false };
    if let Some(cands) = m.get("candidates").and_then(Value::as_array) {
        for c in cands {
            if let Some(parts) = c.pointer("/content/parts").and_then(Value::as_array) {
                gemini_parts(parts, ctx, span, out);
            }
        }
        return true;
    }
    if let Some(parts) = m.get("parts").and_then(Value::as_array) {
        let mut scratch = Outcome::default();
        if gemini_parts(parts, ctx, span, &mut scratch) || s(m, "role") == Some("model") {
            out.drafts.extend(scratch.drafts);
            out.text.push_str(&scratch.text);
            out.diagnostics.extend(scratch.diagnostics);
            return true;
        }
        return false;
    }
    if m.contains_key("functionCall") && m.len() <= 2 {
        return gemini_parts(std::slice::from_ref(v), ctx, span, out);
    }
    false
}

fn anthropic_blocks(blocks: &[Value], ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    let typed = blocks
        .iter()
        .all(|b| b.get("type").and_then(Value::as_str).is_some());
    let has_tool = blocks
        .iter()
        .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
    if !typed || !has_tool {
        return false;
    }
    for b in blocks {
        let Some(m) = b.as_object() else { continue };
        match s(m, "type") {
            Some("tool_use") => {
                let Some(name) = s(m, "name") else { continue };
                let args = (s(m, "id"), name, m.get("input"));
                call(out, ctx, span, FormatId::ANTHROPIC, args);
            }
            Some("text") => {
                if let Some(t) = s(m, "text") {
                    append_text(out, t);
                }
            }
            _ => {}
        }
    }
    true
}

fn anthropic(v: &Value, ctx: &Ctx, span: &Range<usize>, out: &mut Outcome) -> bool {
    match v {
        Value::Array(blocks) => anthropic_blocks(blocks, ctx, span, out),
        Value::Object(m) => {
            if let Some(blocks) = m.get("content").and_then(Value::as_array) {
                anthropic_blocks(blocks, ctx, span, out)
            } else if s(m, "type") == Some("tool_use") {
                anthropic_blocks(std::slice::from_ref(v), ctx, span, out)
            } else {
                false
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{ParseOptions, parse_native};

    // covers R-6: the wire policy, not a repair, decides native arguments.
    #[test]
    fn undecodable_native_arguments_drop_the_call_with_a_reason() {
        let message = json!({"role":"assistant","content":null,"tool_calls":[
            {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1"}},
            {"id":"c2","type":"function","function":{"name":"g","arguments":""}}
        ]});
        let p = parse_native(&message, &ParseOptions::default());
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].call_id.as_str(), "c2");
        assert_eq!(p.calls[0].arguments, json!({}));
        assert!(
            p.diagnostics
                .iter()
                .any(|d| d.message.contains("\"f\" dropped") && d.message.contains("not JSON")),
            "{:?}",
            p.diagnostics
        );
    }
}
