//! `json` (and the JSON half of `llama`): a bare object `{"name", "arguments"|"parameters"}`
//! or an array of them. Ordinary JSON (data, configs) must not become a call (R-4): the
//! object may only carry call keys, must have an arguments key, and with a registry the
//! name must be registered. Objects using `parameters` are attributed to `llama` when that
//! format comes first in the priority order.

use super::described::{Bare, Described};
use std::ops::Range;

use serde_json::{Map, Value};

use super::text_example::name_arguments;
use crate::FormatId;
use crate::builder::{Ctx, Draft, Outcome};
use crate::family::{Instructions, JsonCx};
use crate::shape::{Piece, Shape};

/// The values of a call object's keys; `None` from [`CallKeys::of`] when it has any other
/// key. One pass over the (few) entries: cheaper than a hashed lookup per key, which
/// showed in the profile of replies with many calls.
#[derive(Default)]
struct CallKeys<'a> {
    name: Option<&'a Value>,
    arguments: Option<&'a Value>,
    parameters: Option<&'a Value>,
    id: Option<&'a Value>,
    call_id: Option<&'a Value>,
    kind: Option<&'a Value>,
}

impl<'a> CallKeys<'a> {
    /// `late_ids`: whether an id written after the arguments is the call's id. Where calls
    /// stream, a call is announced (under a generated id) when its arguments start, so an
    /// id after them cannot be its id, and reading the text whole must give the same call
    /// (R-1). Keys come in document order (`preserve_order`).
    fn of(m: &'a Map<String, Value>, late_ids: bool) -> Option<Self> {
        let mut k = CallKeys::default();
        let mut after_args = false;
        for (key, v) in m {
            let slot = match key.as_str() {
                "name" => &mut k.name,
                "arguments" => &mut k.arguments,
                "parameters" => &mut k.parameters,
                "id" | "call_id" if after_args && !late_ids => continue,
                "id" => &mut k.id,
                "call_id" => &mut k.call_id,
                "type" => &mut k.kind,
                _ => return None,
            };
            *slot = Some(v);
            after_args |= matches!(key.as_str(), "arguments" | "parameters");
        }
        Some(k)
    }
}

/// The draft for one call object, without its name and arguments, the name, and the key
/// holding the arguments: the caller moves both out once every object of the value is
/// accepted (no clone).
fn draft(
    m: &Map<String, Value>,
    format: FormatId,
    need_args: bool,
) -> Option<(Draft, &str, Option<&'static str>)> {
    // Mistral's `[TOOL_CALLS][…]` list writes its ids after the arguments and is never
    // announced before it is complete.
    let keys = CallKeys::of(m, format == FormatId::MISTRAL)?;
    if let Some(t) = keys.kind
        && t.as_str() != Some("function")
    {
        return None;
    }
    let name = keys.name?.as_str()?;
    let (key, args) = match (keys.arguments, keys.parameters) {
        (Some(a), None) => {
            if format == FormatId::LLAMA && need_args {
                return None;
            }
            (Some("arguments"), Some(a))
        }
        (None, Some(p)) => (Some("parameters"), Some(p)),
        (None, None) if !need_args => (None, None),
        _ => return None,
    };
    if let Some(a) = args
        && !(a.is_object() || a.is_string() || a.is_null())
    {
        return None;
    }
    let mut d = Draft::new(String::new(), None, format);
    d.id = keys
        .id
        .or(keys.call_id)
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some((d, name, key))
}

/// Moves the name and the arguments (under `key`) of an accepted call object into its
/// draft: one pass over the object's few entries.
fn take_parts(d: &mut Draft, m: &mut Map<String, Value>, key: Option<&str>) {
    for (k, v) in m.iter_mut() {
        if Some(k.as_str()) == key {
            d.args = Some(v.take());
        } else if k == "name"
            && let Value::String(name) = v
        {
            d.name = std::mem::take(name);
        }
    }
}

/// `lenient`: inside explicit markup (any name, arguments optional, flagged if unknown).
/// On a match the names and arguments are moved out of `v`; on `None`, `v` is untouched.
pub(crate) fn classify(
    v: &mut Value,
    ctx: &Ctx,
    format: FormatId,
    lenient: bool,
    span: Range<usize>,
) -> Option<Outcome> {
    let mut out = Outcome::default();
    // Whether the object is a call, and its draft (kept in `out`) and arguments key.
    let accept = |m: &Map<String, Value>, out: &mut Outcome| {
        let (mut d, name, key) = draft(m, format, !lenient)?;
        if lenient {
            out.diagnostics
                .extend(ctx.unknown_name_warning(name, span.clone()));
        } else if !ctx.strict_name_ok(name) {
            return None;
        }
        d.span = span.clone();
        out.drafts.push(d);
        Some(key)
    };
    match v {
        Value::Object(m) => {
            let key = accept(m, &mut out)?;
            if let Some(d) = out.drafts.first_mut() {
                take_parts(d, m, key);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            out.drafts.reserve_exact(a.len());
            let mut keys = Vec::with_capacity(a.len());
            for e in a.iter() {
                keys.push(accept(e.as_object()?, &mut out)?);
            }
            for ((d, key), e) in out.drafts.iter_mut().zip(keys).zip(a.iter_mut()) {
                if let Value::Object(m) = e {
                    take_parts(d, m, key);
                }
            }
        }
        _ => return None,
    }
    Some(out)
}

/// A JSON list of calls that the end of the input cut (`[{…}, {…}, {"na`), a `tools`
/// envelope whose list was cut (`{"tools": [{…}, {"na`), or objects one a line cut inside
/// a later one (`{…}\n{…}\n{"na`, Cohere's second layout): each entry stands alone, so the
/// complete ones before the cut are calls and the cut one is reported (issue 20: whole and
/// streamed agree).
#[derive(Debug)]
pub(crate) struct CutList {
    /// The complete entries, re-wrapped as the value they were cut from (`[e1,e2]`,
    /// `{"tools":[e1,e2]}`), for the family's own classifier.
    pub json: String,
    /// Complete entries.
    pub entries: usize,
    /// Offset in the text of the entry the cut fell in (`None`: every entry is whole and
    /// only the closing brackets are missing).
    pub cut: Option<usize>,
}

impl CutList {
    /// The finding for the cut: an error naming the entry not run, or a warning that only
    /// the closing brackets were missing.
    pub(crate) fn diagnostic(&self, span: Range<usize>) -> toolcall_core::Diagnostic {
        match self.cut {
            Some(_) => toolcall_core::Diagnostic::error(
                format!(
                    "truncated tool call: the list of calls ends inside entry {}, which is not run; the {} complete call(s) before it are",
                    self.entries + 1,
                    self.entries
                ),
                span,
            ),
            None => toolcall_core::Diagnostic::warning(
                format!(
                    "the list of calls is not closed before the end of output; its {} complete call(s) are run",
                    self.entries
                ),
                span,
            ),
        }
    }
}

/// Reads `text` (starting at its `[` or `{`, the end of the input) as a cut list of calls
/// (see [`CutList`]); `None` when it is not one: another value, a list whose `]` came or
/// objects one a line all whole (the family's rules for a missing closing marker decide),
/// no complete entry, or an entry that is malformed rather than cut. One pass over the
/// bytes.
pub(crate) fn cut_list(text: &str, max_depth: usize) -> Option<CutList> {
    use crate::scanner::{Scan, Scanner};
    let bytes = text.as_bytes();
    let skip = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    // `lines`: objects one after another, each on its own line, no list around them.
    let (mut at, envelope, lines) = match bytes.first()? {
        b'[' => (1, false, false),
        b'{' => {
            let i = skip(1);
            let key = b"\"tools\"";
            if !bytes.get(i..)?.starts_with(key) {
                (0, false, true)
            } else {
                let i = skip(i + key.len());
                if bytes.get(i) != Some(&b':') {
                    return None;
                }
                let i = skip(i + 1);
                if bytes.get(i) != Some(&b'[') {
                    return None;
                }
                (i + 1, true, false)
            }
        }
        _ => return None,
    };
    let mut entries: Vec<&str> = Vec::new();
    let cut = loop {
        let before = at;
        at = skip(at);
        if lines && !entries.is_empty() {
            match bytes.get(at) {
                // Whole objects up to the end: not cut.
                None => return None,
                Some(b'{') if bytes[before..at].contains(&b'\n') => {}
                Some(_) => return None,
            }
        } else if !entries.is_empty() {
            match bytes.get(at) {
                Some(b',') => at = skip(at + 1),
                None => break None,
                Some(_) => return None,
            }
        }
        match bytes.get(at) {
            Some(b'{') => {}
            None => break None,
            Some(_) => return None,
        }
        let rest = bytes.get(at..)?;
        match Scanner::new(max_depth.saturating_sub(1).max(1), false).advance(rest) {
            Scan::Done(n) => {
                entries.push(text.get(at..at + n)?);
                at += n;
            }
            Scan::NeedMore => break Some(at),
            Scan::Fail(_) => return None,
        }
    };
    if entries.is_empty() {
        return None;
    }
    let list = entries.join(",");
    let json = if envelope {
        format!("{{\"tools\":[{list}]}}")
    } else {
        format!("[{list}]")
    };
    Some(CutList {
        json,
        entries: entries.len(),
        cut,
    })
}

impl FormatId {
    pub(crate) const JSON: FormatId = FormatId::builtin("json");
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::whole_reply(&[Piece::NAME_ARGUMENTS]);

fn classify_json(v: &mut Value, cx: &JsonCx<'_>, format: FormatId) -> Option<Outcome> {
    classify(v, cx.ctx, format, false, cx.span.clone())
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    name_arguments(name, args)
}

pub(crate) static JSON: Described = Described {
    id: FormatId::JSON,
    description: "a bare JSON object or array of {name, arguments|parameters}",
    example: r#"{"name":"get_weather","arguments":{"city":"Paris"}}"#,
    bare: Some(Bare {
        objects: true,
        arrays: true,
        classify: classify_json,
    }),
    generic_because: Some("bare JSON calls, written by many models and prompts"),
    instructions: Some(Instructions {
        how: "To call a tool, reply with only a JSON object {\"name\": TOOL_NAME, \"arguments\": {...}}.",
        several: "- Make one call per reply.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};

