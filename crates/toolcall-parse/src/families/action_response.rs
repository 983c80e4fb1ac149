//! `action_response` (F-ACT-1..3): `{"session_id","command","args","text"}` is one
//! call `command(args)` plus `text` for speech; `{"text"}` alone is a plain reply. A command
//! without `session_id`, or missing a required argument, is dropped with a diagnostic and
//! the text is still returned. "Required" comes from the registered tool's schema
//! (`required`, and `anyOf`/`oneOf` of `required` sets; empty strings count as missing);
//! without a schema for the command nothing is required (the parser knows no tool).

use super::described::{Bare, Described};
use std::ops::Range;

use serde_json::{Map, Value, json};
use toolcall_core::Diagnostic;

use super::keys_within;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};

/// `at_start`: the object is the start of the reply. Elsewhere in prose only a complete
/// action (`session_id` and `command`) is claimed, so `{"text": ...}` or `{"command": ...}`
/// quoted in a sentence stays text (R-4).
pub(crate) fn classify(
    v: &Value,
    ctx: &Ctx,
    span: Range<usize>,
    at_start: bool,
) -> Option<Outcome> {
    let m = v.as_object()?;
    if m.is_empty() || !keys_within(m, &["session_id", "command", "args", "text"]) {
        return None;
    }
    let complete_action = m.contains_key("session_id") && m.contains_key("command");
    if !(at_start || complete_action) {
        return None;
    }
    let text = match m.get("text") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(_) => return None,
    };
    let mut out = Outcome {
        text,
        ..Outcome::default()
    };
    let Some(command) = m.get("command") else {
        if !m.contains_key("text") {
            return None;
        }
        return Some(out);
    };
    let command = command.as_str()?;
    let args = match m.get("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => {
            out.diagnostics.push(Diagnostic::error(
                format!("command {command:?} dropped: \"args\" is not an object"),
                span,
            ));
            return Some(out);
        }
    };
    let has_session = m
        .get("session_id")
        .and_then(Value::as_str)
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
    let mut d = Draft::new(command, Some(Value::Object(args)), FormatId::ACTION_RESPONSE);
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

fn required_list(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Names the missing requirement, e.g. `"app_name"` or `one of ["app_name"] / ["app_path"]`.
fn missing_required(command: &str, args: &Map<String, Value>, ctx: &Ctx) -> Option<String> {
    let (all, alternatives): (Vec<String>, Vec<Vec<String>>) = match ctx.spec(command) {
        Some(spec) => {
            let p = &spec.parameters;
            let all = required_list(p).into_iter().map(str::to_owned).collect();
            let alts = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| p.get(*k).and_then(Value::as_array))
                .flatten()
                .map(|s| required_list(s).into_iter().map(str::to_owned).collect())
                .collect();
            (all, alts)
        }
        // Without a schema nothing is known to be required: the parser knows no app.
        None => return None,
    };
    if let Some(k) = all.iter().find(|k| !present(args, k)) {
        return Some(format!("{k:?}"));
    }
    if !alternatives.is_empty()
        && !alternatives
            .iter()
            .any(|set| set.iter().all(|k| present(args, k)))
    {
        let sets: Vec<String> = alternatives.iter().map(|s| format!("{s:?}")).collect();
        return Some(format!("(one of {})", sets.join(" / ")));
    }
    None
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
    }),
    generic_because: Some("a JSON shape many agent prompts ask for, not one model's markup"),
    instructions: Some(Instructions {
        how: "Always reply with one JSON object. To act, use {\"session_id\": the session id from the request, \"command\": TOOL_NAME, \"args\": {...}, \"text\": what to say to the user}. To only talk, reply {\"text\": \"...\"}.",
        several: "- One command per reply; \"text\" is spoken to the user and may be empty.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};

