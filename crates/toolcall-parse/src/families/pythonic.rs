//! `pythonic`: a Python list of calls, `[f(a=1), g()]`, with Python literals (`True`,
//! `None`, single quotes). Every element must be a call, else the list is ordinary text.
//! With a registry, every name must be registered (R-4).

use std::ops::Range;

use serde_json::{Map, Value};
use toolcall_core::Diagnostic;

use super::call_syntax::{is_tag_name_char, parse_args};
use super::text_example::python_call;
use crate::FormatId;
use crate::builder::{Ctx, Outcome};
use crate::family::{BareJson, Family, Instructions, JsonCx};
use crate::scanner::split_top_level;

/// `name(inner)` → (name, inner) when `s` is exactly one call expression.
pub(crate) fn split_call(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let open = memchr::memchr(b'(', s.as_bytes())?;
    let name = s.get(..open)?.trim_end();
    let inner = s.get(open + 1..)?.strip_suffix(')')?;
    let ok_name = !name.is_empty()
        && name.chars().all(is_tag_name_char)
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_');
    ok_name.then_some((name, inner))
}

/// `region` is a whole `[...]` that did not parse as JSON.
pub(crate) fn classify(
    region: &str,
    ctx: &Ctx,
    span: Range<usize>,
) -> Option<Result<Outcome, String>> {
    let inner = region.strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return None;
    }
    let parts = split_top_level(inner, b',', ctx.limits.max_depth).ok()?;
    let mut calls = Vec::new();
    for p in parts {
        if p.trim().is_empty() {
            continue;
        }
        let (name, args) = split_call(p)?;
        if !ctx.strict_name_ok(name) {
            return None;
        }
        calls.push((p, name, args));
    }
    if calls.is_empty() {
        return None;
    }
    // Each call stands alone: a bad one is reported and its text kept, its good siblings
    // run.
    let mut out = Outcome::default();
    let mut first_error = None;
    for (entry, name, args) in calls {
        match parse_args(name, args, ctx, FormatId::PYTHONIC, span.clone()) {
            Ok(d) => out.drafts.push(d),
            Err(e) => {
                let why = format!("pythonic call {name:?}: {e}");
                out.diagnostics.push(Diagnostic::error(
                    format!("{why}; not run, its text kept"),
                    span.clone(),
                ));
                if !out.text.is_empty() {
                    out.text.push('\n');
                }
                out.text.push_str(entry.trim());
                first_error.get_or_insert(why);
            }
        }
    }
    match first_error {
        Some(why) if out.drafts.is_empty() => Some(Err(why)),
        _ => Some(Ok(out)),
    }
}

impl FormatId {
    pub(crate) const PYTHONIC: FormatId = FormatId::builtin("pythonic");
}

pub(crate) struct Pythonic;

impl Family for Pythonic {
    fn generic_because(&self) -> Option<&'static str> {
        Some("bare Python call lists, written by many models and prompts")
    }
    fn id(&self) -> &'static str {
        FormatId::PYTHONIC.as_str()
    }
    fn description(&self) -> &'static str {
        "a Python list of calls with keyword arguments and Python literals"
    }
    fn example(&self) -> &'static str {
        r#"[get_weather(city="Paris"), get_time()]"#
    }
    // Lists that are not JSON come back from the bare JSON reader as text.
    fn bare_json(&self) -> BareJson {
        BareJson {
            objects: false,
            arrays: true,
        }
    }
    fn bare_text(&self) -> BareJson {
        BareJson {
            objects: false,
            arrays: true,
        }
    }
    fn classify_bare_text(&self, region: &str, cx: &JsonCx<'_>) -> Option<Result<Outcome, String>> {
        if !region.starts_with('[') {
            return None;
        }
        classify(region, cx.ctx, cx.span.clone())
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(Instructions {
            how: "To call tools, write a Python list of calls: [tool_name(argument=\"value\"), other_tool()]. Use Python literals: strings in double quotes, True/False/None, lists and dicts.",
            several: "- To make several calls, put them all in the one list; they run in that order.\n",
        })
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("[{}]", python_call(name, args)))
    }
}
