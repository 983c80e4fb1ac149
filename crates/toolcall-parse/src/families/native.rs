//! Native provider shapes given as JSON (F-NAT-1): Chat Completions (`openai_chat`),
//! Responses API items (`responses`), Gemini parts (`gemini`), Anthropic content blocks
//! (`anthropic`). Provider ids are kept. These are explicit markup: any tool name is
//! accepted and flagged when a registry lacks it. Recognised both through
//! [`crate::parse_native`] and when such a JSON object appears in text.
//!
//! Each shape is read by its dialect's module in `toolcall-wire`
//! ([`toolcall_wire::Dialect::read_fragment`]), the same modules the model clients and the
//! gateway use; nothing here walks provider JSON. Arguments are decoded by the wire
//! formats' one policy ([`toolcall_wire::decode_arguments`]): a call whose arguments are not
//! a JSON object is dropped with an error diagnostic, never run with `{}`.

use std::ops::Range;

use serde_json::Value;

use toolcall_core::{CallId, Diagnostic};
use toolcall_wire::Dialect;

use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::JsonCx;

/// The wire dialect whose shape a native format reads.
fn dialect_of(format: FormatId) -> Option<&'static dyn Dialect> {
    match format {
        FormatId::OPENAI_CHAT => Some(&toolcall_wire::chat::Chat),
        FormatId::RESPONSES => Some(&toolcall_wire::responses::Responses),
        FormatId::GEMINI => Some(&toolcall_wire::gemini::Gemini),
        FormatId::ANTHROPIC => Some(&toolcall_wire::anthropic::Messages),
        _ => None,
    }
}

/// A bare JSON value in text read as the native `format` ([`super::described::Bare`]).
pub(crate) fn classify_json(v: &mut Value, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, format, cx.span.clone())
}

/// Reads `v` as the given native format; `None` when it is not that shape.
pub(crate) fn classify(
    v: &Value,
    ctx: &Ctx,
    format: FormatId,
    span: Range<usize>,
) -> Option<Outcome> {
    let fragment = dialect_of(format)?.read_fragment(v)?;
    let mut out = Outcome {
        text: fragment.text,
        ..Outcome::default()
    };
    for call in fragment.calls {
        match call.arguments {
            Ok(m) => {
                let mut d = Draft::new(&call.name, Some(Value::Object(m)), format);
                d.id = call.id.map(CallId::from);
                d.span = span.clone();
                out.diagnostics
                    .extend(ctx.unknown_name_warning(&d.name, span.clone()));
                out.drafts.push(d);
            }
            Err(e) => out.diagnostics.push(Diagnostic::error(
                format!("call to {:?} dropped: {e}", call.name),
                span.clone(),
            )),
        }
    }
    Some(out)
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
