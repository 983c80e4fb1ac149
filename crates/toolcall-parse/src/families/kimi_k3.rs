//! `kimi_k3`: Kimi K3 writes its reply as XTML channels made of the special tokens
//! `<|open|>`, `<|close|>` and `<|sep|>`: reasoning in `<|open|>think<|sep|>` …
//! `<|close|>think<|sep|>`, the visible reply in `<|open|>response<|sep|>` …
//! `<|close|>response<|sep|>`, and calls in a tools channel:
//! `<|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|><|open|>argument key="K" type="string"<|sep|>V<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>`.
//! Each argument is typed by its `type=` attribute: `string` keeps the text, any other
//! type is read as JSON (text that is not JSON stays text, with a repair). Attribute
//! values escape `"` and `&` as `&quot;` and `&amp;`. The response channel's markers and
//! the message end (`<|close|>message<|sep|>`, `<|end_of_msg|>`) are control tokens
//! removed from the visible text.
//!
//! Sources: `smg-project/smg` `crates/tool_parser/src/parsers/kimi_k3.rs` (the channel
//! grammar, the attribute escaping, typing by `type=`), vLLM's
//! `vllm/tool_parsers/kimi_k3_tool_parser.py` and `vllm/reasoning/kimi_k3_reasoning_parser.py`
//! (the think channel, which the generation prompt may already have opened).

use super::described::{Body, Described};
use serde_json::{Map, Value};
use toolcall_core::Repair;

use super::tags::{
    Block, BodyRule, LeadRule, StreamTags, ValueHead, ValueRule, after_tag, layout_trim,
    skip_space, valid_name,
};
use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, ReasoningMarker};
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const KIMI_K3: FormatId = FormatId::builtin("kimi_k3");
}

const SEP: &str = "<|sep|>";
const CALL: &str = "<|open|>call";
const CALL_END: &str = "<|close|>call<|sep|>";
const ARG: &str = "<|open|>argument";
const ARG_END: &str = "<|close|>argument<|sep|>";
/// An attribute list is short.
const MAX_ATTRS: usize = 512;

static BLOCK: Block = Block {
    format: FormatId::KIMI_K3,
    open: "<|open|>tools<|sep|>",
    close: "<|close|>tools<|sep|>",
    lead: LeadRule::Tag(CALL),
    body: BodyRule::Fn(body),
};

static STREAM: StreamTags = StreamTags {
    param: ARG,
    param_end: ARG_END,
    call_end: CALL_END,
    value: ValueRule::Fn(arg_value),
    value_stops: &[],
    param_end_followers: &[],
    verbatim: false,
};


/// The think channel.
const THINK_CHANNEL: ReasoningMarker = ReasoningMarker {
    open: "<|open|>think<|sep|>",
    close: "<|close|>think<|sep|>",
};

/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it):
/// a string argument says `type="string"`, any other one names a JSON type.
static CONSTRAINT: Shape = Shape {
    reasoning: THINK_CHANNEL,
    ..Shape::sectioned(
        &[Piece::Lit("<|open|>tools<|sep|>")],
        &[Piece::Lit("<|close|>tools<|sep|>")],
        &[
            Piece::Lit("<|open|>call tool=\""),
            Piece::Name,
            Piece::Lit("\" index=\""),
            Piece::Index,
            Piece::Lit("\"<|sep|>"),
            Piece::Args(Args::Text(&TextParams {
                key_open: "<|open|>argument key=\"",
                key_close_text: &[Piece::Lit("\" type=\"string\"<|sep|>")],
                key_close_json: &[
                    Piece::Lit("\" type=\""),
                    Piece::Either(
                        &[Piece::Lit("integer")],
                        &[Piece::Either(
                            &[Piece::Lit("number")],
                            &[Piece::Either(
                                &[Piece::Lit("boolean")],
                                &[Piece::Either(
                                    &[Piece::Lit("object")],
                                    &[Piece::Either(&[Piece::Lit("array")], &[Piece::Lit("null")])],
                                )],
                            )],
                        )],
                    ),
                    Piece::Lit("\"<|sep|>"),
                ],
                value_close: ARG_END,
            })),
            Piece::Lit(CALL_END),
        ],
        NO_SEPARATOR,
    )
};

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!(
        "<|open|>tools<|sep|>{CALL} tool=\"{}\" index=\"1\"{SEP}",
        escape_attr(name)
    );
    for (k, v) in args {
        let kind = match v {
            Value::String(_) => "string",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        s.push_str(&format!(
            "{ARG} key=\"{}\" type=\"{kind}\"{SEP}{}{ARG_END}",
            escape_attr(k),
            tag_text(v)
        ));
    }
    s.push_str(CALL_END);
    s.push_str("<|close|>tools<|sep|>");
    s
}

pub(crate) static KIMI_K3: Described = Described {
    id: FormatId::KIMI_K3,
    description: "<|open|>tools<|sep|><|open|>call tool=\"NAME\" index=\"1\"<|sep|><|open|>argument key=\"K\" type=\"T\"<|sep|>V<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|> (Kimi K3); values typed by type=",
    example: "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["kimi-k3*"],
    template_markers: &["<|open|>", "<|close|>", "<|sep|>", "call tool=", "argument key="],
    reasoning: &[THINK_CHANNEL],
    strip: &[
        "<|open|>response<|sep|>",
        "<|close|>response<|sep|>",
        "<|close|>message<|sep|>",
        "<|end_of_msg|>",
    ],
    instructions: Some(Instructions {
        how: "To call tools, write <|open|>tools<|sep|>, then per call <|open|>call tool=\"TOOL_NAME\" index=\"N\"<|sep|> (N counts the calls from 1) with one <|open|>argument key=\"ARGUMENT_NAME\" type=\"TYPE\"<|sep|>value<|close|>argument<|sep|> per argument (TYPE is the JSON type: string values as is, others as JSON) and <|close|>call<|sep|>, then <|close|>tools<|sep|>.",
        several: "- To make several calls, write several call blocks inside the one tools block; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


/// An argument's opening tag, `<|open|>argument key="K" type="T"<|sep|>`: text when `T`
/// is `string` (or missing).
fn arg_value(header: &str) -> ValueHead {
    let rest = match after_tag(header, ARG) {
        Ok(rest) => rest,
        Err(verdict) => return verdict,
    };
    let Some(end) = rest.find(SEP) else {
        // `<|sep|>` may be arriving; another token before it is no attribute list.
        let other_token = rest.find("<|").is_some_and(|i| !SEP.starts_with(&rest[i..]));
        return if rest.len() > MAX_ATTRS || other_token {
            ValueHead::No
        } else {
            ValueHead::NeedMore
        };
    };
    let attrs = &rest[..end];
    match attr(attrs, "key") {
        Some(key) => ValueHead::At {
            key,
            at: ARG.len() + end + SEP.len(),
            string: Some(attr(attrs, "type").is_none_or(|t| t == "string")),
        },
        None => ValueHead::No,
    }
}

/// The value of `name="…"` among `attrs`, unescaped (`&quot;` then `&amp;`).
fn attr(attrs: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = attrs.get(from..)?.find(name) {
        let at = from + i;
        let before_ok = at == 0 || attrs.as_bytes().get(at - 1).is_some_and(u8::is_ascii_whitespace);
        let rest = &attrs[at + name.len()..];
        if before_ok && let Some(v) = rest.strip_prefix("=\"") {
            let v = &v[..v.find('"')?];
            return Some(v.replace("&quot;", "\"").replace("&amp;", "&"));
        }
        from = at + name.len();
    }
    None
}

fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;")
}

/// One or more calls, blanks between.
fn body(body: &str, _cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut p = skip_space(body);
    while !p.is_empty() {
        let rest = p
            .strip_prefix(CALL)
            .ok_or("expected <|open|>call in the tools channel")?;
        let end = rest
            .find(SEP)
            .filter(|&e| e <= MAX_ATTRS)
            .ok_or("a call tag is not closed by <|sep|>")?;
        let name = attr(&rest[..end], "tool").ok_or("a call without tool=\"…\"")?;
        if !valid_name(&name) {
            return Err(format!("bad tool name {name:?}"));
        }
        let mut args = Map::new();
        let mut repairs = Vec::new();
        let mut q = skip_space(&rest[end + SEP.len()..]);
        loop {
            if let Some(after) = q.strip_prefix(CALL_END) {
                q = after;
                break;
            }
            let a = q
                .strip_prefix(ARG)
                .ok_or_else(|| format!("expected an argument or the end of the call to {name:?}"))?;
            let e = a
                .find(SEP)
                .filter(|&e| e <= MAX_ATTRS)
                .ok_or("an argument tag is not closed by <|sep|>")?;
            let attrs = &a[..e];
            let key = attr(attrs, "key").ok_or("an argument without key=\"…\"")?;
            let kind = attr(attrs, "type");
            let v = &a[e + SEP.len()..];
            let v_end = v.find(ARG_END).ok_or_else(|| format!("argument {key:?} is not closed"))?;
            let text = layout_trim(&v[..v_end]);
            let value = typed(text, kind.as_deref(), &key, &mut repairs);
            args.insert(key, value);
            q = skip_space(&v[v_end + ARG_END.len()..]);
        }
        let mut d = Draft::new(name, Some(Value::Object(args)), format);
        d.repairs = repairs;
        drafts.push(d);
        p = skip_space(q);
    }
    if drafts.is_empty() {
        return Err("an empty tools channel".into());
    }
    Ok(drafts)
}

/// A value by its `type=`: text for `string` (or none), JSON otherwise.
fn typed(text: &str, kind: Option<&str>, key: &str, repairs: &mut Vec<Repair>) -> Value {
    if kind.is_none_or(|k| k == "string") {
        return Value::String(text.to_owned());
    }
    match crate::repair::parse_lenient(text.trim()) {
        Ok((v, fixed)) => {
            if !fixed.is_empty() {
                repairs.push(Repair::new(
                    "text_value",
                    format!("argument {key:?}: {text:?} read as {v}"),
                ));
            }
            v
        }
        Err(_) => {
            repairs.push(Repair::new(
                "text_value",
                format!("argument {key:?}: type {kind:?} but not JSON; kept as text"),
            ));
            Value::String(text.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::attr;
    use crate::{detect_template, model_family};

    #[test]
    fn attributes_are_unescaped_and_matched_whole() {
        assert_eq!(attr(r#"key="a&quot;b&amp;c" type="string""#, "key").unwrap(), "a\"b&c");
        assert_eq!(attr(r#"monkey="x" key="y""#, "key").unwrap(), "y");
        assert_eq!(attr(r#"key="x"#, "key"), None);
    }

    #[test]
    fn detect_and_model_names_pick_kimi_k3() {
        let t = "{%- macro open(n) -%}<|open|>{{ n }}<|sep|>{%- endmacro -%}{{ '<|open|>think<|sep|>' + m.reasoning + '<|close|>think<|sep|>' }}{{ open('tools') }}{% for tc in m.tool_calls %}<|open|>call tool=\"{{ tc.name }}\" index=\"{{ loop.index }}\"<|sep|>{% for k, v in tc.arguments.items() %}<|open|>argument key=\"{{ k }}\" type=\"{{ v.type }}\"<|sep|>{{ v }}<|close|>argument<|sep|>{% endfor %}<|close|>call<|sep|>{% endfor %}<|close|>tools<|sep|>";
        let info = detect_template(t).unwrap();
        assert_eq!(info.family.as_deref(), Some("kimi_k3"));
        assert_eq!(info.reasoning[0].open, "<|open|>think<|sep|>");
        assert_eq!(model_family("moonshotai/Kimi-K3").unwrap().family, "kimi_k3");
        assert_eq!(model_family("moonshotai/Kimi-K2-Instruct").unwrap().family, "kimi_k2");
    }
}
