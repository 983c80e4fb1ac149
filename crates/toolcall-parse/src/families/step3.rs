//! `step3`: Step-3 writes `<｜tool_calls_begin｜>`, then per call
//! `<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">` with
//! `<steptml:parameter name="K">V</steptml:parameter>` children and `<｜tool_call_end｜>`, then
//! `<｜tool_calls_end｜>`; values are text typed by the tool's schema.

use super::described::{Body, Described};
use std::borrow::Cow;

use serde_json::{Map, Value};
use toolcall_core::Repair;

use super::text_example::named_parameters;
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, Untyped, find_from};

use super::marked::{InvokeTags, invokes};
use super::tags::{Block, BodyRule, LeadRule, StreamTags};
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape, TextParams};

impl FormatId {
    pub(crate) const STEP3: FormatId = FormatId::builtin("step3");
}

static TAGS: InvokeTags = InvokeTags {
    invoke: "<steptml:invoke name=\"",
    invoke_end: "</steptml:invoke>",
    param: "<steptml:parameter name=\"",
    param_end: "</steptml:parameter>",
    // The per-call wrapper as the template writes it, and as vLLM's and SGLang's readers
    // also take it: without `function<｜tool_sep｜>`, with `<｜tool_sep｜>` between calls.
    between: &[
        "<｜tool_call_begin｜>function<｜tool_sep｜>",
        "<｜tool_call_begin｜>",
        "<｜tool_call_end｜>",
        "<｜tool_sep｜>",
    ],
    verbatim: true,
};

static BLOCK: Block = Block {
    format: FormatId::STEP3,
    open: "<｜tool_calls_begin｜>",
    close: "<｜tool_calls_end｜>",
    lead: LeadRule::Tag("<｜tool_call_begin｜>"),
    body: BodyRule::Fn(body),
};

fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let named = blank_sep_names(body);
    let as_template = matches!(named, Cow::Borrowed(_)) && wrapped_as_the_template_does(body);
    let mut drafts = invokes(&named, cx, format, &TAGS)?;
    if !as_template {
        // Read as vLLM and SGLang read it, but said: the template never writes it, so a
        // decoding constraint would not either.
        for d in &mut drafts {
            d.repairs.push(Repair::new(
                "wrapper_variant",
                "the Step-3 call wrapper was not written as the chat template writes it",
            ));
        }
    }
    Ok(drafts)
}

/// Whether every call opens with `<｜tool_call_begin｜>function<｜tool_sep｜>` and
/// `<｜tool_sep｜>` appears nowhere else.
fn wrapped_as_the_template_does(body: &str) -> bool {
    const WRAPPER: &str = "<｜tool_call_begin｜>function<｜tool_sep｜>";
    // Non-overlapping occurrences, as `str::matches` counts them, with `find_from` (memchr
    // on the first byte, the kept searchers past that): `str::matches` and
    // `memmem::find_iter` each set up a searcher per count, and the body is read per
    // streamed parameter.
    let count = |tag: &str| {
        let (mut n, mut at) = (0, 0);
        while let Some(i) = find_from(body, tag, at) {
            n += 1;
            at = i + tag.len();
        }
        n
    };
    let wrapped = count(WRAPPER);
    count("<｜tool_call_begin｜>") == wrapped && count("<｜tool_sep｜>") == wrapped
}

/// `function<｜tool_sep｜>NAME` before `<steptml:invoke name="NAME">` (the name written twice,
/// as DeepSeek V3's wrapper does): the first NAME is blanked out, byte for byte, so the
/// offsets of the rest stay as they are.
fn blank_sep_names(body: &str) -> Cow<'_, str> {
    const SEP: &str = "<｜tool_sep｜>";
    let mut out: Option<String> = None;
    let mut from = 0;
    while let Some(at) = body.get(from..).and_then(|s| find_from(s, SEP, 0)) {
        let start = from + at + SEP.len();
        from = start;
        let rest = &body[start..];
        let Some(lt) = rest.find('<') else { break };
        let name = rest[..lt].trim();
        if name.is_empty()
            || name.contains(char::is_whitespace)
            || !rest[lt..].starts_with(TAGS.invoke)
        {
            continue;
        }
        let text = out.get_or_insert_with(|| body.to_owned());
        text.replace_range(start..start + lt, &" ".repeat(lt));
    }
    out.map_or(Cow::Borrowed(body), Cow::Owned)
}

static STREAM: StreamTags = StreamTags::invokes(&TAGS);


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<｜tool_calls_begin｜>")],
    &[Piece::Lit("<｜tool_calls_end｜>")],
    &[
        Piece::Lit("<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\""),
        Piece::Name,
        Piece::Lit("\">"),
        Piece::Args(Args::Text(&TextParams {
            key_open: "<steptml:parameter name=\"",
            key_close_text: &[Piece::Lit("\">")],
            key_close_json: &[Piece::Lit("\">")],
            value_close: "</steptml:parameter>",
        })),
        Piece::Ws(""),
        Piece::Lit("</steptml:invoke><｜tool_call_end｜>"),
    ],
    NO_SEPARATOR,
);

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!(
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"{name}\">{}</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        named_parameters("steptml:parameter", "", args)
    )
}

pub(crate) static STEP3: Described = Described {
    id: FormatId::STEP3,
    description: "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"NAME\"><steptml:parameter name=\"K\">V</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜> (Step-3)",
    example: r#"<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather"><steptml:parameter name="city">Paris</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>"#,
    body: Body::Tags(&BLOCK, &STREAM),
    model_names: &["step3*", "step-3*"],
    template_markers: &["<steptml:invoke"],
    instructions: Some(Instructions {
        how: r#"To call tools, write <｜tool_calls_begin｜>, then per call <｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="TOOL_NAME"> with one <steptml:parameter name="ARGUMENT_NAME">value</steptml:parameter> per argument (text as is; numbers, booleans, arrays and objects as JSON), </steptml:invoke> and <｜tool_call_end｜>, then <｜tool_calls_end｜>."#,
        several: "- To make several calls, write several <｜tool_call_begin｜> entries in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    // SGLang's Step-3 readers (Python and its Rust gateway) decode every value the schema
    // does not type: JSON, then a Python literal (`True`, `None`), else the text; vLLM's
    // leaves typing to the schema.
    untyped: Untyped::Literal,
    ..Described::BASE
};


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{FormatSelection, ParseOptions, StreamParser, parse};
    use toolcall_core::StreamEvent;

    // The wrapper counts are `str::matches`' counts (non-overlapping occurrences).
    #[test]
    fn wrapper_counts_are_str_matches_counts() {
        const W: &str = "<｜tool_call_begin｜>function<｜tool_sep｜>";
        let by_str = |body: &str| {
            let wrapped = body.matches(W).count();
            body.matches("<｜tool_call_begin｜>").count() == wrapped
                && body.matches("<｜tool_sep｜>").count() == wrapped
        };
        for body in [
            String::new(),
            format!("{W}<steptml:invoke name=\"a\"></steptml:invoke><｜tool_call_end｜>"),
            format!("{W}x<｜tool_sep｜>{W}"),
            "<｜tool_call_begin｜><steptml:invoke".into(),
            format!("{W}{W}<｜tool_call_begin｜>"),
            "<｜tool_sep｜><｜tool_sep｜>".into(),
        ] {
            assert_eq!(super::wrapped_as_the_template_does(&body), by_str(&body), "{body}");
        }
    }

    fn repairs(text: &str) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
        let o = ParseOptions {
            format: FormatSelection::Only("step3".into()),
            ..ParseOptions::default()
        };
        let kinds = |c: &toolcall_core::ToolCall| {
            c.origin.repairs.iter().map(|r| r.kind.clone()).collect::<Vec<_>>()
        };
        let one: Vec<_> = parse(text, &o).calls.iter().map(kinds).collect();
        let mut sp = StreamParser::new(o);
        let mut events = Vec::new();
        for ch in text.chars() {
            events.extend(sp.push(&ch.to_string()));
        }
        events.extend(sp.finish());
        let streamed = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::CallFinished { call, .. } => Some(kinds(call)),
                _ => None,
            })
            .collect();
        (one, streamed)
    }

    // The wrappers the template never writes are read but said, one-shot and streamed alike,
    // so that whoever checks calls against the template (the decoding-constraint test) can
    // tell them apart; the template's own wrapper carries no repair.
    #[test]
    fn wrapper_variants_are_read_and_reported() {
        let invoke = r#"<steptml:invoke name="get_weather"><steptml:parameter name="city">Lyon</steptml:parameter></steptml:invoke><｜tool_call_end｜>"#;
        let template = format!(
            "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>{invoke}<｜tool_calls_end｜>"
        );
        assert_eq!(repairs(&template), (vec![vec![]], vec![vec![]]));
        for variant in [
            format!("<｜tool_calls_begin｜><｜tool_call_begin｜>{invoke}<｜tool_calls_end｜>"),
            format!(
                "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>get_weather\n{invoke}<｜tool_calls_end｜>"
            ),
            format!(
                "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>{invoke}<｜tool_sep｜><｜tool_call_begin｜>function<｜tool_sep｜>{invoke}<｜tool_calls_end｜>"
            ),
        ] {
            let (one, streamed) = repairs(&variant);
            assert!(!one.is_empty(), "{variant}");
            assert!(
                one.iter().all(|k| k == &["wrapper_variant"]),
                "{variant}: {one:?}"
            );
            assert_eq!(one, streamed, "{variant}");
        }
    }
}
