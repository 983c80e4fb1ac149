//! `qwen3_coder`: Qwen3-Coder, Qwen3.5+ and Nemotron-3 nano write
//! `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
//! Shares `<tool_call>` with `hermes` (JSON) and `glm` (`NAME<arg_key>`): the block is ours
//! when `<function=` follows the opener. Values are text typed by the tool's schema; the
//! newline on each side of a value is layout. Explicit markup: any name (flagged when
//! unregistered). A `</parameter>` that the next parameter, `</function>`, the next call or
//! the block's end does not follow is text of the value (a file holding the markup), whole
//! and streamed ([`super::tags::EQ_PARAM_FOLLOWERS`]); the constraint still ends a value at
//! its first `</parameter>`, a subset of what is read.

use super::described::{Body, Described};
use serde_json::{Map, Value};

use crate::FormatId;
use crate::family::Instructions;

use super::text_example::tag_text;
use super::tags::{
    Block, BodyRule, FUNCTION_PARAMS, Lead, LeadRule, skip_space, starts, valid_name, xml_functions,
};
use crate::builder::Draft;
use crate::family::ReadCx;
use crate::shape::{Args, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const QWEN3_CODER: FormatId = FormatId::builtin("qwen3_coder");
}

static BLOCK: Block = Block {
    format: FormatId::QWEN3_CODER,
    open: "<tool_call>",
    close: "</tool_call>",
    lead: LeadRule::Function,
    body: BodyRule::Functions,
};

/// The same call written without `<tool_call>` (Ollama users see it about one turn in
/// five): `<function=NAME>` followed by `<parameter=` is this family's and nobody else's,
/// so auto mode takes it too; `<function=NAME>{` stays Functionary v3.1's.
static BARE: Block = Block {
    format: FormatId::QWEN3_CODER,
    open: BARE_OPEN,
    close: "</function>",
    lead: LeadRule::Fn(bare_lead),
    body: BodyRule::Fn(bare_body),
};

const BARE_OPEN: &str = "<function=";

/// The bytes of a lead [`bare_lead`] compares one by one before its search.
const SHORT_LEAD: usize = 16;

/// `NAME>` then blanks then `<parameter=`.
fn bare_lead(lead: &str, complete: bool) -> Lead<'_> {
    // A `<` or newline before the first `>` is in the name ([`valid_name`] refuses it) or
    // there is no `>`: not ours either way, decided at that byte (a flood of the opener
    // is not searched to the end of the lead at each one).
    // A name's few bytes by hand, then `memchr3` (whose set-up cost ~65 instructions an
    // opener of a flood of `<function=` and a number, where the `<` is a few bytes on).
    let bytes = lead.as_bytes();
    let near = bytes.get(..SHORT_LEAD).unwrap_or(bytes);
    let found = match near.iter().position(|&b| matches!(b, b'>' | b'<' | b'\n')) {
        Some(i) => Some(i),
        None => memchr::memchr3(b'>', b'<', b'\n', bytes.get(near.len()..).unwrap_or(&[]))
            .map(|i| near.len() + i),
    };
    let Some(gt) = found else {
        return if complete || lead.len() > 256 {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    };
    if lead.as_bytes().get(gt) != Some(&b'>') {
        return Lead::NotMine;
    }
    let name = &lead[..gt];
    if !valid_name(name) {
        return Lead::NotMine;
    }
    match starts(skip_space(&lead[gt + 1..]), "<parameter=") {
        Some(true) => Lead::Mine(Some(name.into())),
        None if !complete => Lead::NeedMore,
        _ => Lead::NotMine,
    }
}

/// The body after `<function=` (the block's closing `</function>` taken off).
fn bare_body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    xml_functions(&format!("{BARE_OPEN}{body}</function>"), cx, format)
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<tool_call>"),
    Piece::Ws("\n"),
    Piece::Lit("<function="),
    Piece::Name,
    Piece::Lit(">"),
    Piece::Args(Args::Text(&CONSTRAINT_PARAMS)),
    Piece::Ws("\n"),
    Piece::Lit("</function>"),
    Piece::Ws("\n"),
    Piece::Lit("</tool_call>"),
]);

/// `<parameter=KEY>VALUE</parameter>` (Seed-OSS writes the same).
pub(crate) static CONSTRAINT_PARAMS: TextParams = TextParams {
    key_open: "<parameter=",
    key_close_text: &[Piece::Lit(">")],
    key_close_json: &[Piece::Lit(">")],
    value_close: "</parameter>",
};

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    xml_example("<tool_call>", "</tool_call>", name, args)
}

const OPENERS: [&str; 2] = ["<tool_call>", BARE_OPEN];

static BODIES: [Body; 2] = [Body::Tags(&BLOCK, &FUNCTION_PARAMS), Body::Tags(&BARE, &FUNCTION_PARAMS)];

pub(crate) static QWEN3_CODER: Described = Described {
    id: FormatId::QWEN3_CODER,
    description: "<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call> (Qwen3-Coder, Qwen3.5+, Nemotron-3 nano); values typed by the schema",
    example: "<tool_call>\\n<function=get_weather>\\n<parameter=city>\\nParis\\n</parameter>\\n</function>\\n</tool_call>",
    body: Body::each(&OPENERS, &BODIES),
    model_names: &[
        "qwen3-coder*",
        "qwen3.5*",
        "qwen3.6*",
        "*nemotron-3-nano*",
        // Step-3.5 left Step 3's steptml markup for this layout (vLLM's step3p5).
        "step-3.5*",
        "step3.5*",
        "step3p5*",
        // INTELLECT-3's card serves it with the qwen3_coder parser.
        "intellect-3*",
        // vLLM's registry reads MiMo with its Qwen3 XML engine.
        "mimo*",
    ],
    template_markers: &["<tool_call>", "<function=", "<parameter="],
    // Qwen3.5 sometimes writes its only real call inside `<think>` and nothing after it:
    // taken when no call follows the reasoning.
    reasoning_calls: crate::ReasoningCalls::TakeIfNoneAfter,
    instructions: Some(Instructions {
        how: "To call a tool, write <tool_call>, then <function=TOOL_NAME>, then each argument as <parameter=ARGUMENT_NAME>value</parameter> (text as is; numbers, booleans, arrays and objects as JSON), then </function></tool_call>, each tag on its own line.",
        several: "- To make several calls, write several <tool_call> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    // vLLM's and SGLang's Qwen3-Coder readers: `null` (any case) is null, other untyped
    // text stays text.
    untyped: crate::family::NULL_WORD,
    // `<tool_call>` directly followed by `<tool_call>`: not `<function=` (`function_lead`).
    repeats_declined: &["<tool_call>"],
    ..Described::BASE
};


/// `<function=NAME>` with one `<parameter=K>` per argument, inside `open`…`close`.
pub(crate) fn xml_example(open: &str, close: &str, name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("{open}\n<function={name}>\n");
    for (k, v) in args {
        let text = tag_text(v);
        s.push_str(&format!("<parameter={k}>\n{text}\n</parameter>\n"));
    }
    s.push_str(&format!("</function>\n{close}"));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(l: Lead<'_>) -> (u8, Option<String>) {
        match l {
            Lead::NeedMore => (0, None),
            Lead::NotMine => (1, None),
            Lead::Mine(n) => (2, n.map(std::borrow::Cow::into_owned)),
        }
    }

    /// The bare lead as read before it stopped at the first `<` or newline: a search for
    /// `>`, then the name checked.
    fn searched(lead: &str, complete: bool) -> (u8, Option<String>) {
        let Some(gt) = lead.find('>') else {
            return key(if complete || lead.len() > 256 || lead.contains(['<', '\n']) {
                Lead::NotMine
            } else {
                Lead::NeedMore
            });
        };
        let name = &lead[..gt];
        if !valid_name(name) {
            return key(Lead::NotMine);
        }
        key(match starts(skip_space(&lead[gt + 1..]), "<parameter=") {
            Some(true) => Lead::Mine(Some(name.into())),
            None if !complete => Lead::NeedMore,
            _ => Lead::NotMine,
        })
    }

    // The same verdict as the search, on every prefix of these leads, complete or not.
    #[test]
    fn the_bare_lead_stops_at_the_first_byte_no_name_holds() {
        let flood = BARE_OPEN.repeat(30);
        let leads = [
            "get_weather>\n<parameter=city>\nParis",
            "get weather>\n<parameter=city>",
            "get\nweather>\n<parameter=city>",
            "a<b>\n<parameter=x>",
            "get_weather>{\"city\": 1}",
            "get_weather>   <parameter=",
            "<function=get>",
            "é>\n<parameter=x>",
            &flood,
        ];
        for lead in leads {
            for cut in (0..=lead.len()).filter(|&c| lead.is_char_boundary(c)) {
                let l = &lead[..cut];
                for complete in [false, true] {
                    assert_eq!(key(bare_lead(l, complete)), searched(l, complete), "{l:?}");
                }
            }
        }
    }
}
