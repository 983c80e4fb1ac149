//! `k2_horizon`: K2 Horizon writes its calls in one `<ifm|tool_calls>` … `</ifm|tool_calls>`
//! group, one `<ifm|tool_call>` … `</ifm|tool_call>` per call, blanks between. Its chat
//! template writes a call in one of three layouts (the `tool_call_format` template switch):
//! - `xml` (the default): `NAME<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value>`…,
//!   values text typed by the tool's schema;
//! - `xml_typed`: the same with `<ifm|arg_type>T</ifm|arg_type>` between key and value, a
//!   `string` value kept as text and any other read as JSON where the schema does not type
//!   it;
//! - `json`: one `{"name", "arguments"}` object.
//!
//! All three are read whatever the switch said (the markup tells them apart). A value is
//! the bytes between its tags exactly, as the reference reader keeps a string.
//!
//! Sources: vLLM's `k2_horizon` tool parser and its tests (the tags, the three layouts, a
//! group without a closing tag or with anything but calls in it is text).

use super::described::{Body, Described};
use serde_json::{Map, Value};
use toolcall_core::Repair;

use super::tags::{
    Block, BodyRule, LeadRule, StreamTags, ValueHead, ValueRule, after_tag, skip_space, starts,
    typed, valid_name,
};
use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, Scan, Scanner, parse_lenient};

impl FormatId {
    pub(crate) const K2_HORIZON: FormatId = FormatId::builtin("k2_horizon");
}

const OPEN: &str = "<ifm|tool_calls>";
const CLOSE: &str = "</ifm|tool_calls>";
const CALL: &str = "<ifm|tool_call>";
const CALL_END: &str = "</ifm|tool_call>";
const KEY: &str = "<ifm|arg_key>";
const KEY_END: &str = "</ifm|arg_key>";
const TYPE: &str = "<ifm|arg_type>";
const TYPE_END: &str = "</ifm|arg_type>";
const VALUE: &str = "<ifm|arg_value>";
const VALUE_END: &str = "</ifm|arg_value>";

/// Longest key or type text read between its tags.
const MAX_TAG_TEXT: usize = 256;

static BLOCK: Block = Block {
    format: FormatId::K2_HORIZON,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Tag(CALL),
    body: BodyRule::Fn(body),
};

static STREAM: StreamTags = StreamTags {
    param: KEY,
    param_end: VALUE_END,
    call_end: CALL_END,
    value: ValueRule::Fn(value_head),
    value_stops: &[],
    param_end_followers: &[],
    verbatim: true,
};

/// `<ifm|arg_key>K</ifm|arg_key>`, an optional `<ifm|arg_type>T</ifm|arg_type>`, then
/// `<ifm|arg_value>`: the value follows (a typed one is text only when T is `string`).
fn value_head(header: &str) -> ValueHead {
    let rest = match after_tag(header, KEY) {
        Ok(rest) => rest,
        Err(verdict) => return verdict,
    };
    match arg_head(rest) {
        Ok(Some((key, kind, used))) => ValueHead::At {
            key: key.to_owned(),
            at: KEY.len() + used,
            string: kind.map(is_string_type),
        },
        Ok(None) if rest.len() <= 3 * MAX_TAG_TEXT => ValueHead::NeedMore,
        _ => ValueHead::No,
    }
}

/// An argument's head: its key, its explicit type, and the bytes up to its value.
type ArgHead<'a> = (&'a str, Option<&'a str>, usize);

/// After `<ifm|arg_key>`: the key, the explicit type, and the bytes up to the value's
/// start; `Ok(None)` while incomplete, `Err` when it is no argument head.
fn arg_head(rest: &str) -> Result<Option<ArgHead<'_>>, String> {
    let Some(k) = rest.find(KEY_END) else {
        return if rest.len() > MAX_TAG_TEXT {
            Err("an argument key is not closed".into())
        } else {
            Ok(None)
        };
    };
    let key = rest[..k].trim();
    if key.is_empty() || key.len() > MAX_TAG_TEXT || key.contains('<') {
        return Err(format!("bad argument key {key:?}"));
    }
    let after_key = k + KEY_END.len();
    let mut at = after_key + (rest[after_key..].len() - skip_space(&rest[after_key..]).len());
    let mut kind = None;
    match starts(&rest[at..], TYPE) {
        None => return Ok(None),
        Some(true) => {
            let t = &rest[at + TYPE.len()..];
            let Some(e) = t.find(TYPE_END) else {
                return if t.len() > MAX_TAG_TEXT {
                    Err(format!("the type of {key:?} is not closed"))
                } else {
                    Ok(None)
                };
            };
            kind = Some(t[..e].trim());
            at += TYPE.len() + e + TYPE_END.len();
            at += rest[at..].len() - skip_space(&rest[at..]).len();
        }
        Some(false) => {}
    }
    match starts(&rest[at..], VALUE) {
        Some(true) => Ok(Some((key, kind, at + VALUE.len()))),
        None => Ok(None),
        Some(false) => Err(format!("expected {VALUE} for {key:?}")),
    }
}

/// An explicit type that keeps the value as text (`string`, `str`, `text`, `string[…]`).
fn is_string_type(kind: &str) -> bool {
    let base = kind.split('[').next().unwrap_or("").trim();
    ["string", "str", "text"]
        .iter()
        .any(|s| base.eq_ignore_ascii_case(s))
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut s = skip_space(body);
    while !s.is_empty() {
        let rest = s
            .strip_prefix(CALL)
            .ok_or_else(|| format!("expected {CALL} in the tool calls group"))?;
        let after = if skip_space(rest).starts_with('{') {
            json_call(rest, cx, format, &mut drafts)?
        } else {
            xml_call(rest, cx, format, &mut drafts)?
        };
        s = skip_space(after);
    }
    if drafts.is_empty() {
        return Err("an empty tool calls group".into());
    }
    Ok(drafts)
}

/// A `json` layout call: the object, then `</ifm|tool_call>`; the text after it.
fn json_call<'b>(
    rest: &'b str,
    cx: &ReadCx<'_>,
    format: FormatId,
    drafts: &mut Vec<Draft>,
) -> Result<&'b str, String> {
    let p = skip_space(rest);
    let n = match Scanner::new(cx.ctx.limits.max_depth, false).advance(p.as_bytes()) {
        Scan::Done(n) => n,
        _ => return Err("the call object is not closed".into()),
    };
    let after = skip_space(&p[n..])
        .strip_prefix(CALL_END)
        .ok_or_else(|| format!("expected {CALL_END} after the call object"))?;
    let (v, repairs) = parse_lenient(&p[..n]).map_err(|e| format!("the call is not JSON: {e}"))?;
    let Value::Object(mut m) = v else {
        return Err("the call is not a JSON object".into());
    };
    let name = match m.remove("name") {
        Some(Value::String(n)) if valid_name(&n) => n,
        other => return Err(format!("bad tool name {other:?}")),
    };
    let args = match m.remove("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a @ Value::Object(_)) => a,
        Some(_) => {
            drafts.push(Draft::broken(
                &name,
                format!("the arguments of {name:?} are not a JSON object"),
                format,
            ));
            return Ok(after);
        }
    };
    let mut d = Draft::new(&name, Some(args), format);
    d.repairs = repairs;
    drafts.push(d);
    Ok(after)
}

/// An `xml` or `xml_typed` layout call: the name, its arguments, `</ifm|tool_call>`; the
/// text after it.
fn xml_call<'b>(
    rest: &'b str,
    cx: &ReadCx<'_>,
    format: FormatId,
    drafts: &mut Vec<Draft>,
) -> Result<&'b str, String> {
    let name_end = [rest.find(KEY), rest.find(CALL_END)]
        .into_iter()
        .flatten()
        .min()
        .ok_or("the call is not closed")?;
    let name = rest[..name_end].trim();
    if !valid_name(name) {
        return Err(format!("bad tool name {name:?}"));
    }
    let mut args = Map::new();
    let mut repairs = Vec::new();
    let mut p = &rest[name_end..];
    loop {
        p = skip_space(p);
        if let Some(after) = p.strip_prefix(CALL_END) {
            p = after;
            break;
        }
        let a = p
            .strip_prefix(KEY)
            .ok_or_else(|| format!("expected an argument or {CALL_END} in the call to {name:?}"))?;
        let (key, kind, at) = arg_head(a)?.ok_or("an argument is not complete")?;
        let v = &a[at..];
        let end = v
            .find(VALUE_END)
            .ok_or_else(|| format!("argument {key:?} of {name:?} is not closed"))?;
        let raw = &v[..end];
        let value = match kind {
            Some(k) if is_string_type(k) => Value::String(raw.to_owned()),
            Some(k) if cx.ctx.spec(name).is_none() => json_value(raw, k, key, &mut repairs),
            _ => typed(cx, format, name, key, raw, &mut repairs),
        };
        if args.insert(key.to_owned(), value).is_some() {
            return Err(format!("argument {key:?} of {name:?} given twice"));
        }
        p = &v[end + VALUE_END.len()..];
    }
    let mut d = Draft::new(name, Some(Value::Object(args)), format);
    d.repairs = repairs;
    drafts.push(d);
    Ok(p)
}

/// A value its `<ifm|arg_type>` says is not text and no schema types: JSON, else the text.
fn json_value(raw: &str, kind: &str, key: &str, repairs: &mut Vec<Repair>) -> Value {
    match parse_lenient(raw.trim()) {
        Ok((v, fixed)) => {
            repairs.extend(fixed);
            v
        }
        Err(_) => {
            repairs.push(Repair::new(
                "text_value",
                format!("argument {key:?}: type {kind:?} but not JSON; kept as text"),
            ));
            Value::String(raw.to_owned())
        }
    }
}


/// No decoding constraint: the template writes one of three layouts as a request asks
/// (`tool_call_format`), which one grammar written from [`crate::shape::Shape`] data cannot
/// tell apart; callers keep parse-and-repair.
fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("{OPEN}{CALL}{name}");
    for (k, v) in args {
        s.push_str(&format!("{KEY}{k}{KEY_END}{VALUE}{}{VALUE_END}", tag_text(v)));
    }
    s.push_str(CALL_END);
    s.push_str(CLOSE);
    s
}

pub(crate) static K2_HORIZON: Described = Described {
    id: FormatId::K2_HORIZON,
    description: "<ifm|tool_calls><ifm|tool_call>NAME<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value></ifm|tool_call></ifm|tool_calls> (K2 Horizon; also <ifm|arg_type>, or a JSON {\"name\", \"arguments\"} call)",
    example: "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Paris</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["k2-horizon*", "k2_horizon*", "k2-v2-horizon*"],
    template_markers: &["ifm|tool_call", "ifm|arg_key"],
    instructions: Some(Instructions {
        how: "To call tools, write <ifm|tool_calls>, then per call <ifm|tool_call>TOOL_NAME with <ifm|arg_key>ARGUMENT_NAME</ifm|arg_key><ifm|arg_value>VALUE</ifm|arg_value> per argument (numbers, booleans, arrays and objects as JSON) and </ifm|tool_call>, then </ifm|tool_calls>.",
        several: "- To make several calls, write several <ifm|tool_call> blocks inside the one <ifm|tool_calls>, one per line; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_k2_horizon() {
        let t = "{%- if tool_call_format == 'json' %}{{ '<ifm|tool_call>' + call | tojson + '</ifm|tool_call>' }}{%- else %}{{ '<ifm|tool_call>' + call.name }}{%- for k, v in call.arguments.items() %}{{ '<ifm|arg_key>' + k + '</ifm|arg_key><ifm|arg_value>' + v + '</ifm|arg_value>' }}{%- endfor %}{{ '</ifm|tool_call>' }}{%- endif %}";
        assert_eq!(
            detect_template(t).unwrap().family.as_deref(),
            Some("k2_horizon")
        );
        assert_eq!(model_family("LLM360/K2-Horizon").unwrap().family, "k2_horizon");
    }
}
