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
//!
//! Detokenizers sometimes lose the space in `<function name=` / `<param name=` or keep the
//! byte-level BPE space marker `Ġ` there (vLLM's tests have `<functionname="` and
//! `<functionĠname="`): those spellings are read too, whole when the element closes, and
//! each call says so in a `tag_spacing` repair.
//!
//! The reference reader also holds each call to its tool's schema; the rules toolcall takes
//! from it are [`SCHEMA_RULES`] (wrapped arguments unwrapped, undeclared ones dropped, a
//! repeated parameter breaks its call).

use super::described::{Body, Described};
use super::schema_rules::SchemaRules;
use toolcall_core::Repair;
use super::marked::{InvokeTags, invokes};
use super::tags::{
    Block, BodyRule, Lead, LeadRule, StreamTags, ValueRule, quoted_name, skip_space, starts,
};
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

/// The tags' spellings with the space lost or kept as the BPE marker `Ġ`.
const OPEN_COLLAPSED: &str = "<functionname=\"";
const OPEN_MARKED: &str = "<function\u{120}name=\"";
const PARAM_RESPELT: [&str; 2] = ["<paramname=\"", "<param\u{120}name=\""];

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
    lead: LeadRule::Fn(lead),
    body: BodyRule::Fn(body),
};

static COLLAPSED: Block = Block {
    format: FormatId::MINICPM5,
    open: OPEN_COLLAPSED,
    close: CLOSE,
    lead: LeadRule::Fn(lead_respelt),
    body: BodyRule::Fn(respelt_body),
};

static MARKED: Block = Block {
    format: FormatId::MINICPM5,
    open: OPEN_MARKED,
    close: CLOSE,
    lead: LeadRule::Fn(lead_respelt),
    body: BodyRule::Fn(respelt_body),
};

static OPENERS: [&str; 3] = [OPEN, OPEN_COLLAPSED, OPEN_MARKED];
static BODIES: [Body; 3] = [
    Body::Tags(&BLOCK, &STREAM),
    Body::Whole(&COLLAPSED),
    Body::Whole(&MARKED),
];

static STREAM: StreamTags = StreamTags {
    param: PARAM,
    param_end: "</param>",
    call_end: "",
    value: ValueRule::NameAttr,
    value_stops: &[],
    param_end_followers: &[],
    verbatim: false,
};

/// `NAME">` then blanks, then a parameter or the element's end.
fn lead(lead: &str, complete: bool) -> Lead<'_> {
    lead_before(lead, complete, &[PARAM, CLOSE])
}

/// As [`lead`], for the respelt openers: their parameter tags may be respelt too.
fn lead_respelt(lead: &str, complete: bool) -> Lead<'_> {
    lead_before(
        lead,
        complete,
        &[PARAM, CLOSE, PARAM_RESPELT[0], PARAM_RESPELT[1]],
    )
}

/// `NAME">` then blanks, then one of `next`.
fn lead_before<'a>(lead: &'a str, complete: bool, next: &[&str]) -> Lead<'a> {
    let (name, rest) = match quoted_name(lead, complete) {
        Ok((name, after)) => (name, skip_space(after)),
        Err(verdict) => return verdict,
    };
    let found: Vec<Option<bool>> = next.iter().map(|t| starts(rest, t)).collect();
    if found.contains(&Some(true)) {
        Lead::Mine(Some(name.into()))
    } else if found.contains(&None) && !complete {
        Lead::NeedMore
    } else {
        Lead::NotMine
    }
}

/// The body of an element whose tags lost their space or kept `Ġ`: the parameter tags are
/// read with their space back, and each call records the repair.
fn respelt_body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut fixed = body.to_owned();
    for p in PARAM_RESPELT {
        fixed = fixed.replace(p, PARAM);
    }
    let mut drafts = invokes(&format!("{OPEN}{fixed}{CLOSE}"), cx, format, &TAGS)?;
    for d in &mut drafts {
        d.repairs.push(Repair::new(
            "tag_spacing",
            "read <function name=/<param name= tags written without their space or with the tokenizer's \u{120} space marker",
        ));
    }
    Ok(drafts)
}

/// The element's body after `<function name="`: read as an `invoke` element.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    invokes(&format!("{OPEN}{body}{CLOSE}"), cx, format, &TAGS)
}

/// How vLLM's MiniCPM5 reader holds a call to its tool's schema, which the model's users
/// see there: an `arguments` or `properties` parameter the schema does not declare holds
/// the arguments object (the model writes OpenAI-style wrappers), arguments the schema does
/// not declare are dropped, and a parameter written twice makes the call broken. Not taken
/// from it: its map of near tool names to other tools (`get_details_by_phone` run as
/// `get_customer_by_phone`, which would run a tool the model did not name: an unknown tool
/// here), and dropping a call that lacks a required argument or names an unknown tool
/// (validation and the unknown-tool result report those).
static SCHEMA_RULES: SchemaRules = SchemaRules {
    wrappers: &["arguments", "properties"],
    drop_undeclared: true,
    repeated_breaks: true,
};

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
    body: Body::each(&OPENERS, &BODIES),
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
    schema_rules: Some(&SCHEMA_RULES),
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
