//! `action_response` (F-ACT-1..3): `{"session_id","command","args","text"}` is one
//! call `command(args)` plus `text` for speech; `{"text"}` alone is a plain reply. A command
//! without `session_id`, or missing a required argument, is dropped with a diagnostic and
//! the text is still returned. "Required" comes from the registered tool's schema
//! (`required`, and `anyOf`/`oneOf` of `required` sets; empty strings count as missing);
//! without a schema for the command nothing is required (the parser knows no tool).

use super::bare_json::JsonNeeds;
use super::described::{Bare, Described};
use std::ops::Range;

use serde_json::{Map, Value, json};
use toolcall_core::Diagnostic;

use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};

/// `at_start`: the object is the start of the reply. Elsewhere in prose only a complete
/// action (`session_id` and `command`) is claimed, so `{"text": ...}` or `{"command": ...}`
/// quoted in a sentence stays text (R-4). On a match the text, command and arguments are
/// moved out of `v`; on `None`, `v` is untouched.
///
/// The object's keys are walked once, not looked up (each lookup in the order-preserving
/// map hashes its key), and nothing is cloned (the arguments map and text were copied):
/// an `action_response/small` one-shot parse 18,664 → 15,334 instructions (session 37's
/// `bench_profile`).
pub(crate) fn classify(
    v: &mut Value,
    ctx: &Ctx,
    span: Range<usize>,
    at_start: bool,
) -> Option<Outcome> {
    let m = v.as_object_mut()?;
    if m.is_empty() {
        return None;
    }
    let (mut session, mut command, mut args, mut text) = (None, None, None, None);
    for (k, val) in m.iter_mut() {
        match k.as_str() {
            "session_id" => session = Some(val),
            "command" => command = Some(val),
            "args" => args = Some(val),
            "text" => text = Some(val),
            _ => return None,
        }
    }
    let complete_action = session.is_some() && command.is_some();
    if !(at_start || complete_action)
        || !matches!(text.as_deref(), None | Some(Value::Null | Value::String(_)))
    {
        return None;
    }
    let command = match command {
        None if text.is_none() => return None,
        None => None,
        Some(Value::String(c)) => Some(c),
        Some(_) => return None,
    };
    let mut out = Outcome {
        text: match text {
            Some(Value::String(s)) => std::mem::take(s),
            _ => String::new(),
        },
        ..Outcome::default()
    };
    let Some(command) = command else {
        return Some(out);
    };
    let args = match args {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => std::mem::take(a),
        Some(_) => {
            out.diagnostics.push(Diagnostic::error(
                format!("command {command:?} dropped: \"args\" is not an object"),
                span,
            ));
            return Some(out);
        }
    };
    let has_session = session
        .and_then(|s| s.as_str())
        .is_some_and(|s| !s.is_empty());
    if !has_session {
        out.diagnostics.push(Diagnostic::warning(
            format!("command {command:?} dropped: session_id is missing"),
            span,
        ));
        return Some(out);
    }
    if let Some(r) = ctx.registry.as_deref()
        && !r.contains(command)
    {
        out.diagnostics.push(Diagnostic::warning(
            format!("command {command:?} dropped: no such registered tool"),
            span,
        ));
        return Some(out);
    }
    if let Some(missing) = missing_required(command, &args, ctx) {
        out.diagnostics.push(Diagnostic::warning(
            format!("command {command:?} dropped: required argument {missing} is missing or empty"),
            span,
        ));
        return Some(out);
    }
    let mut d = Draft::new(
        std::mem::take(command),
        Some(Value::Object(args)),
        FormatId::ACTION_RESPONSE,
    );
    d.span = span;
    out.drafts.push(d);
    Some(out)
}

fn present(args: &Map<String, Value>, key: &str) -> bool {
    match args.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    }
}

/// The names a schema's `required` lists (none when it has no such list).
fn required_list(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Names the missing requirement, e.g. `"app_name"` or `one of ["app_name"] / ["app_path"]`.
/// Read from the schema where it lies (no list copied unless something is missing).
fn missing_required(command: &str, args: &Map<String, Value>, ctx: &Ctx) -> Option<String> {
    // Without a schema nothing is known to be required: the parser knows no app.
    let p = &ctx.spec(command)?.parameters;
    if let Some(k) = required_list(p).find(|k| !present(args, k)) {
        return Some(format!("{k:?}"));
    }
    let alternatives = || {
        ["anyOf", "oneOf"]
            .into_iter()
            .filter_map(|k| p.get(k).and_then(Value::as_array))
            .flatten()
    };
    if alternatives().next().is_none()
        || alternatives().any(|set| required_list(set).all(|k| present(args, k)))
    {
        return None;
    }
    let sets: Vec<String> = alternatives()
        .map(|s| format!("{:?}", required_list(s).collect::<Vec<_>>()))
        .collect();
    Some(format!("(one of {})", sets.join(" / ")))
}

impl FormatId {
    pub(crate) const ACTION_RESPONSE: FormatId = FormatId::builtin("action_response");
}


fn classify_json(v: &mut Value, cx: &JsonCx<'_>, _format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, cx.span.clone(), cx.at_start)
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    json!({
            "session_id": "session_123",
            "command": name,
            "args": args,
            "text": "Doing it now."
        })
        .to_string()
}

pub(crate) static ACTION_RESPONSE: Described = Described {
    id: FormatId::ACTION_RESPONSE,
    description: "{session_id, command, args, text}; {\"text\"} alone is a plain reply",
    example: r#"{"session_id":"s1","command":"open_app","args":{"app_name":"Safari"},"text":"Opening Safari."}"#,
    bare: Some(Bare {
        objects: true,
        arrays: false,
        classify: classify_json,
        calls: None,
        needs: JsonNeeds {
            objects: &[&["text"], &["command"]],
            elements: &[],
        },
    }),
    generic_because: Some("a JSON shape many agent prompts ask for, not one model's markup"),
    instructions: Some(Instructions {
        how: "Always reply with one JSON object. To act, use {\"session_id\": the session id from the request, \"command\": TOOL_NAME, \"args\": {...}, \"text\": what to say to the user}. To only talk, reply {\"text\": \"...\"}.",
        several: "- One command per reply; \"text\" is spoken to the user and may be empty.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

