//! `glm`: GLM 4.5 / 4.6 write `<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>`,
//! GLM 4.7+ the same without newlines. Shares `<tool_call>` with `hermes` (JSON) and
//! `qwen3_coder` (`<function=`): the block is ours when a bare name follows the opener and
//! then `<arg_key>` or the closing tag. Values are text typed by the tool's schema.

use super::described::{Body, Described};
use crate::family::ToolResultText;
use crate::results::break_marker;
use serde_json::{Map, Value};

use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, Untyped};

use super::text_example::tag_text;
use super::tags::{
    Block, BodyRule, Lead, LeadRule, StreamTags, ValueHead, ValueRule, after_tag, layout_trim,
    skip_space, starts, typed, valid_name,
};
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const GLM: FormatId = FormatId::builtin("glm");
}

const KEY: &str = "<arg_key>";
const KEY_END: &str = "</arg_key>";
const VALUE: &str = "<arg_value>";
const VALUE_END: &str = "</arg_value>";
const CLOSE: &str = "</tool_call>";

static BLOCK: Block = Block {
    format: FormatId::GLM,
    open: "<tool_call>",
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Fn(body),
};

static STREAM: StreamTags = StreamTags {
    param: KEY,
    param_end: VALUE_END,
    call_end: "",
    value: ValueRule::Fn(value_head),
    value_stops: &[],
    param_end_followers: &[],
    verbatim: false,
};

/// `<arg_key>K</arg_key>` then blanks and `<arg_value>`: the value follows.
fn value_head(header: &str) -> ValueHead {
    let rest = match after_tag(header, KEY) {
        Ok(rest) => rest,
        Err(verdict) => return verdict,
    };
    let Some(k) = rest.find(KEY_END) else {
        return if rest.len() > 256 { ValueHead::No } else { ValueHead::NeedMore };
    };
    let after = &rest[k + KEY_END.len()..];
    let value = skip_space(after);
    match starts(value, VALUE) {
        Some(true) => ValueHead::At {
            key: rest[..k].trim().to_owned(),
            at: header.len() - value.len() + VALUE.len(),
            string: None,
        },
        None if after.len() - value.len() <= 256 => ValueHead::NeedMore,
        _ => ValueHead::No,
    }
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<tool_call>"),
    Piece::Name,
    Piece::Args(Args::Text(&TextParams {
        key_open: "<arg_key>",
        key_close_text: ARG_VALUE,
        key_close_json: ARG_VALUE,
        value_close: "</arg_value>",
    })),
    Piece::Ws("\n"),
    Piece::Lit("</tool_call>"),
]);
const ARG_VALUE: &[Piece] = &[
    Piece::Lit("</arg_key>"),
    Piece::Ws("\n"),
    Piece::Lit("<arg_value>"),
];

/// `<|observation|>` then one `<tool_response>` block per result (the GLM 4.5+ template).
fn write_results(results: &[ToolResultText<'_>]) -> String {
    let mut s = String::from("<|observation|>");
    for r in results {
        s.push_str("\n<tool_response>\n");
        s.push_str(&break_marker(&break_marker(r.content, "</tool_response"), "<|"));
        s.push_str("\n</tool_response>");
    }
    s
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("<tool_call>{name}\n");
    for (k, v) in args {
        let text = tag_text(v);
        s.push_str(&format!("{KEY}{k}{KEY_END}\n{VALUE}{text}{VALUE_END}\n"));
    }
    s.push_str(CLOSE);
    s
}

pub(crate) static GLM: Described = Described {
    id: FormatId::GLM,
    description: "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call> (GLM 4.5-4.7); values typed by the schema",
    example: "<tool_call>get_weather\\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n</tool_call>",
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &[
        "glm-4.5*",
        "glm-4.6*",
        "glm-4.7*",
        "glm-5*",
        // Poolside's Laguna writes GLM's arg_key/arg_value layout (vLLM's poolside_v1).
        "laguna*",
        "poolside*",
        // Ling/Ring 3 (vLLM's ling3: the glm_4_7 structural tag).
        "ling-3*",
        "ring-3*",
        // Spark-X2.5 writes GLM's layout too (SGLang's spark25 detector).
        "spark-x2.5*",
        "spark-x2_5*",
    ],
    template_markers: &["<tool_call>", "<arg_key>", "<arg_value>"],
    instructions: Some(Instructions {
        how: "To call a tool, write <tool_call>TOOL_NAME, then for each argument <arg_key>ARGUMENT_NAME</arg_key><arg_value>value</arg_value> (text as is; numbers, booleans, arrays and objects as JSON), then </tool_call>.",
        several: "- To make several calls, write several <tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    // vLLM's GLM-4.5 reader decodes every value not typed `string`: JSON, then a Python
    // literal, else the text.
    untyped: Untyped::Literal,
    // `<tool_call>` directly followed by `<`: an empty name (`lead`).
    repeats_declined: &["<tool_call>"],
    ..Described::BASE
};


/// `NAME` then blanks then `<arg_key>` or `</tool_call>`.
///
/// What follows the name is asked first: it refuses most leads that are not ours (a flood of
/// `<tool_call>` with anything but a tag after its first word) for a few compares, where the
/// name's checks walked it by chars (~100 instructions an opener of `<tool_call>0<tool_call>1…`).
/// The verdict is the same in either order (an invalid name or a refusing rest: not ours).
fn lead(lead: &str, complete: bool) -> Lead<'_> {
    // The stops are ASCII, so a byte search finds the same char boundary.
    let name_len = lead
        .bytes()
        .position(|b| b.is_ascii_whitespace() || b == b'<')
        .unwrap_or(lead.len());
    let name = lead.get(..name_len).unwrap_or("");
    if name_len == lead.len() {
        return if complete || !name_ok(name) {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    }
    let rest = skip_space(lead.get(name_len..).unwrap_or(""));
    let mine = if rest.is_empty() {
        (!complete).then_some(false)
    } else {
        // Both tags start with `<`: any other byte settles it at once.
        match (rest.as_bytes().first() == Some(&b'<')).then(|| (starts(rest, KEY), starts(rest, CLOSE))) {
            None => None,
            Some((Some(true), _) | (_, Some(true))) => Some(true),
            Some((None, _) | (_, None)) if !complete => Some(false),
            _ => None,
        }
    };
    match mine {
        None => Lead::NotMine,
        Some(_) if !valid_name(name) || !name_ok(name) => Lead::NotMine,
        Some(true) => Lead::Mine(Some(name.into())),
        Some(false) => Lead::NeedMore,
    }
}

/// A tool name: letters and digits of any script, `_ . - : /`.
fn name_ok(name: &str) -> bool {
    name.chars()
        .all(|c| super::call_syntax::is_tag_name_char(c) || c == '/')
}

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let name_len = body
        .find(|c: char| c.is_ascii_whitespace() || c == '<')
        .unwrap_or(body.len());
    let name = &body[..name_len];
    let mut p = &body[name_len..];
    let mut args = Map::new();
    let mut repairs = Vec::new();
    loop {
        p = skip_space(p);
        if p.is_empty() {
            break;
        }
        let after = p
            .strip_prefix(KEY)
            .ok_or_else(|| format!("expected <arg_key> in the call to {name:?}"))?;
        let k_end = after
            .find(KEY_END)
            .ok_or("<arg_key> is not closed by </arg_key>")?;
        let key = after[..k_end].trim();
        let rest = skip_space(&after[k_end + KEY_END.len()..]);
        let rest = rest
            .strip_prefix(VALUE)
            .ok_or_else(|| format!("argument {key:?} has no <arg_value>"))?;
        let v_end = rest
            .find(VALUE_END)
            .ok_or("<arg_value> is not closed by </arg_value>")?;
        let v = typed(cx, format, name, key, layout_trim(&rest[..v_end]), &mut repairs);
        args.insert(key.to_owned(), v);
        p = &rest[v_end + VALUE_END.len()..];
    }
    let mut d = Draft::new(name, Some(Value::Object(args)), format);
    d.repairs = repairs;
    Ok(vec![d])
}
