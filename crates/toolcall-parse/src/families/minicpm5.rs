//! `minicpm5`: MiniCPM5 writes each call as one XML element,
//! `<function name="NAME"><param name="K">V</param></function>`, with no block around
//! several calls. Values are text typed by the tool's schema (the reference reader keeps a
//! string-typed value as text and reads the others as JSON or Python literals).
//!
//! Source: vLLM's `vllm/tool_parsers/minicpm5xml_tool_parser.py` (the `<function` /
//! `</function>` tokens, `name=` on both tags, values by the schema). The reader is
//! MiniMax M2's `invoke`/`parameter` reader ([`invokes`]) with this family's tags; the
//! lead makes the element a call only when a `<param name="` or `</function>` follows the
//! `<function name="NAME">` tag, so HTML-like prose stays prose.

use super::described::{Body, Described};
use super::marked::{InvokeTags, attr_param_value, invokes};
use super::tags::{Block, Lead, StreamTags, ValueHead, skip_space, starts, valid_name};
use super::text_example::named_parameters;
use crate::FormatId;
use crate::family::Untyped;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx};
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const MINICPM5: FormatId = FormatId::builtin("minicpm5");
}

const OPEN: &str = "<function name=\"";
const CLOSE: &str = "</function>";
const PARAM: &str = "<param name=\"";

static TAGS: InvokeTags = InvokeTags {
    invoke: OPEN,
    invoke_end: CLOSE,
    param: PARAM,
    param_end: "</param>",
    between: &[],
    verbatim: false,
};

static BLOCK: Block = Block {
    format: FormatId::MINICPM5,
    open: OPEN,
    close: CLOSE,
    lead,
    body,
};

static STREAM: StreamTags = StreamTags {
    param: PARAM,
    param_end: "</param>",
    call_end: "",
    value: param_value,
    value_stops: &[],
    param_end_followers: &[],
    verbatim: false,
};

fn param_value(header: &str) -> ValueHead {
    attr_param_value(header, PARAM)
}

/// `NAME">` then blanks, then a parameter or the element's end.
fn lead(lead: &str, complete: bool) -> Lead {
    let Some(q) = lead.find('"') else {
        return if complete || lead.len() > 256 || lead.contains(['<', '>', '\n']) {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    };
    let name = &lead[..q];
    if !valid_name(name) {
        return Lead::NotMine;
    }
    let after = &lead[q + 1..];
    let rest = match after.strip_prefix('>') {
        Some(r) => skip_space(r),
        None if after.is_empty() && !complete => return Lead::NeedMore,
        None => return Lead::NotMine,
    };
    match (starts(rest, PARAM), starts(rest, CLOSE)) {
        (Some(true), _) | (_, Some(true)) => Lead::Mine(Some(name.to_owned())),
        (None, _) | (_, None) if !complete => Lead::NeedMore,
        _ => Lead::NotMine,
    }
}

/// The element's body after `<function name="`: read as an `invoke` element.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    invokes(&format!("{OPEN}{body}{CLOSE}"), cx, format, &TAGS)
}

/// The call markup a decoder is held to: one element per call, no block around them.
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit(OPEN),
    Piece::Name,
    Piece::Lit("\">"),
    Piece::Args(Args::Text(&TextParams {
        key_open: PARAM,
        key_close_text: &[Piece::Lit("\">")],
        key_close_json: &[Piece::Lit("\">")],
        value_close: "</param>",
    })),
    Piece::Ws("\n"),
    Piece::Lit(CLOSE),
]);

pub(crate) static MINICPM5: Described = Described {
    id: FormatId::MINICPM5,
    description: "<function name=\"NAME\"><param name=\"K\">V</param></function> (MiniCPM5); values typed by the schema",
    example: r#"<function name="get_weather"><param name="city">Paris</param></function>"#,
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["minicpm5*", "minicpm-5*"],
    template_markers: &["<function name=", "<param name=", "</function>"],
    instructions: Some(Instructions {
        how: r#"To call a tool, write <function name="TOOL_NAME"> with one <param name="ARGUMENT_NAME">value</param> per argument (text as is; numbers, booleans, arrays and objects as JSON), then </function>."#,
        several: "- To make several calls, write several <function> elements; they run in that order.\n",
    }),
    example_call: Some(|name, args| {
        format!(
            "<function name=\"{name}\">\n{}</function>",
            named_parameters("param", "\n", args)
        )
    }),
    constraint: Some(&CONSTRAINT),
    untyped: Untyped::Literal,
    ..Described::BASE
};

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_minicpm5() {
        let t = "{% for tc in m.tool_calls %}<function name=\"{{ tc.name }}\">{% for k, v in tc.arguments.items() %}<param name=\"{{ k }}\">{{ v }}</param>{% endfor %}</function>{% endfor %}";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("minicpm5"));
        assert_eq!(model_family("openbmb/MiniCPM5-8B").unwrap().family, "minicpm5");
    }
}
