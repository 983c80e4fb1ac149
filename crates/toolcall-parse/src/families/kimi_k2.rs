//! `kimi_k2`: Kimi K2 writes `<|tool_calls_section_begin|>`, then per call
//! `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>`,
//! then `<|tool_calls_section_end|>`. `functions.NAME:IDX` is the call's id and is kept.

use super::described::{Body, Described};
use crate::family::ToolResultText;
use crate::results::{bare_name, break_marker};
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx, closing_marker_repair, find_from};
use crate::scanner::{Scan, Scanner};

use super::args_object::{CallEnds, JsonCallTags};
use super::tags::{Block, BodyRule, Lead, LeadRule, skip_space, valid_name};
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape};

impl FormatId {
    pub(crate) const KIMI_K2: FormatId = FormatId::builtin("kimi_k2");
}

const CALL: &str = "<|tool_call_begin|>";
const ARGS: &str = "<|tool_call_argument_begin|>";
const CALL_END: &str = "<|tool_call_end|>";

static BLOCK: Block = Block {
    format: FormatId::KIMI_K2,
    open: "<|tool_calls_section_begin|>",
    close: "<|tool_calls_section_end|>",
    lead: LeadRule::Tag(CALL),
    body: BodyRule::Fn(body),
};

/// A call written without its section (`<|tool_call_begin|>` first, as llama.cpp's reader
/// takes it): the block is the one call, up to its `<|tool_call_end|>`.
static BARE: Block = Block {
    format: FormatId::KIMI_K2,
    open: CALL,
    close: CALL_END,
    lead: LeadRule::Fn(bare_lead),
    body: BodyRule::Fn(bare_body),
};

/// `functions.NAME:IDX<|tool_call_argument_begin|>` after the opener.
///
/// The head holds no `<` (the name would, and [`valid_name`] refuses it), so only the
/// lead's first `<` may start the marker: a lead whose first `<` starts anything else is
/// not this family's whatever follows (a flood of the opener is decided at its next one,
/// not after a search of the whole lead).
fn bare_lead(lead: &str, complete: bool) -> Lead<'_> {
    let marker = match memchr::memchr(b'<', lead.as_bytes()) {
        Some(lt) => {
            let from = lead.as_bytes().get(lt..).unwrap_or(&[]);
            if from.starts_with(ARGS.as_bytes()) {
                Some(lt)
            } else if ARGS.as_bytes().starts_with(from) {
                // Cut inside the marker: more input decides.
                None
            } else {
                return Lead::NotMine;
            }
        }
        None => None,
    };
    match marker {
        Some(a) => match call_head(&lead[..a + ARGS.len()]) {
            Some((name, _)) => Lead::Mine(Some(name.into())),
            None => Lead::NotMine,
        },
        None if complete || lead.len() > 256 => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

fn bare_body(b: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    body(&format!("{CALL}{b}{CALL_END}"), cx, format)
}

static BARE_STREAM: JsonCallTags = JsonCallTags {
    call: "",
    head: call_head,
    call_end: "",
};

/// The header of a tool message in the Kimi K2 template (`## Return of ID`).
const RETURN_OF: &str = "## Return of";

static STREAM: JsonCallTags = JsonCallTags {
    call: CALL,
    head: call_head,
    call_end: CALL_END,
};

/// `functions.NAME:IDX<|tool_call_argument_begin|>` → the name, and the whole id.
fn call_head(head: &str) -> Option<(String, Option<String>)> {
    let id = head.trim_end().strip_suffix(ARGS)?.trim();
    let name = name_of(id);
    valid_name(name).then(|| (name.to_owned(), Some(id.to_owned())))
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<|tool_calls_section_begin|>")],
    &[Piece::Lit("<|tool_calls_section_end|>")],
    &[
        Piece::Lit("<|tool_call_begin|>functions."),
        Piece::Name,
        Piece::Lit(":"),
        Piece::Index,
        Piece::Lit("<|tool_call_argument_begin|>"),
        Piece::Args(Args::Json),
        Piece::Lit("<|tool_call_end|>"),
    ],
    NO_SEPARATOR,
);

/// `## Return of ID` then the content, as the Kimi K2 template writes a tool message.
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results
        .iter()
        .map(|r| {
            format!(
                "{RETURN_OF} {}\n{}\n",
                bare_name(r.call_id),
                break_marker(&break_marker(r.content, "<|"), RETURN_OF)
            )
        })
        .collect()
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>", Value::Object(args.clone()))
}

const OPENERS: [&str; 2] = ["<|tool_calls_section_begin|>", CALL];

static BODIES: [Body; 2] = [
    Body::JsonTags(&BLOCK, &STREAM),
    Body::JsonTags(&BARE, &BARE_STREAM),
];

pub(crate) static KIMI_K2: Described = Described {
    id: FormatId::KIMI_K2,
    description: "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{json}<|tool_call_end|>… (Kimi K2; the id is kept)",
    example: r#"<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>"#,
    body: Body::each(&OPENERS, &BODIES),
    model_names: &["kimi-k2*"],
    template_markers: &["<|tool_calls_section_begin|>", "<|tool_call_begin|>"],
    // Kimi K2 Thinking may open its tool section (or, as llama.cpp reads it, a bare call)
    // inside a `<think>` it never closes: the reasoning ends there.
    ends_reasoning: &["<|tool_calls_section_begin|>", CALL],
    instructions: Some(Instructions {
        how: "To call tools, write <|tool_calls_section_begin|>, then per call <|tool_call_begin|>functions.TOOL_NAME:INDEX<|tool_call_argument_begin|>, the arguments as a JSON object and <|tool_call_end|> (INDEX counts calls from 0), then <|tool_calls_section_end|>.",
        several: "- To make several calls, write several <|tool_call_begin|> entries in the one section; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


/// `functions.NAME:IDX` (or `NAME:IDX`) → `NAME`.
fn name_of(id: &str) -> &str {
    let id = id.strip_prefix("functions.").unwrap_or(id);
    match id.rsplit_once(':') {
        Some((name, idx)) if !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    }
}

/// Each call stands alone: one whose arguments are not JSON is a broken draft (reported,
/// its siblings run); a separator inside a JSON string does not end a call.
fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut ends = CallEnds::new(body, cx.ctx.limits.max_depth);
    // Bytes scanned for values that do not close before the next call: at most the body.
    let mut budget = body.len();
    let mut s = skip_space(body);
    while !s.is_empty() {
        let rest = s.strip_prefix(CALL).ok_or("expected <|tool_call_begin|>")?;
        // `find_from`, not `str::find`: building a two-way searcher per call cost ~2 k of
        // `kimi_k2/small`'s three calls.
        let a = find_from(rest, ARGS, 0).ok_or("a call has no <|tool_call_argument_begin|>")?;
        let id = rest[..a].trim();
        let name = name_of(id);
        if !valid_name(name) {
            return Err(format!("invalid tool name {name:?}"));
        }
        let after = &rest[a + ARGS.len()..];
        if let Some((json, next)) = unended(after, &mut budget, cx.ctx.limits.max_depth) {
            // `<|tool_call_end|>` left out before the next call (llama.cpp reads it so).
            let mut d = Draft::json_args(name, json, format);
            d.repairs.push(closing_marker_repair(CALL_END));
            d.id = Some(toolcall_core::CallId::from(id));
            drafts.push(d);
            s = next;
            continue;
        }
        let e = ends
            .find(after, 0, CALL_END)
            .ok_or("a call is not closed by <|tool_call_end|>")?;
        let mut d = Draft::json_args(name, after[..e].trim(), format);
        d.id = Some(toolcall_core::CallId::from(id));
        drafts.push(d);
        s = skip_space(&after[e + CALL_END.len()..]);
    }
    if drafts.is_empty() {
        return Err("empty tool call section".into());
    }
    Ok(drafts)
}

/// Arguments that are a JSON object followed (blanks between) by the next call's
/// `<|tool_call_begin|>` rather than `<|tool_call_end|>`: the object, and the text from the
/// next call on. Bytes scanned for a value that does not end so are taken from `budget`.
fn unended<'s>(after: &'s str, budget: &mut usize, max_depth: usize) -> Option<(&'s str, &'s str)> {
    let v = skip_space(after);
    if !v.starts_with('{') || *budget == 0 {
        return None;
    }
    let bytes = v.as_bytes();
    let mut scanner = Scanner::new(max_depth, false);
    let n = match scanner.advance(bytes.get(..bytes.len().min(*budget))?) {
        Scan::Done(n) => n,
        _ => {
            *budget = budget.saturating_sub(scanner.consumed());
            return None;
        }
    };
    let next = skip_space(v.get(n..)?);
    next.starts_with(CALL).then(|| (&v[..n], next))
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

    /// The lead as read before it was decided at its first `<`: a search of the whole
    /// lead for the arguments marker.
    fn searched(lead: &str, complete: bool) -> (u8, Option<String>) {
        key(match lead.find(ARGS) {
            Some(a) => match call_head(&lead[..a + ARGS.len()]) {
                Some((name, _)) => Lead::Mine(Some(name.into())),
                None => Lead::NotMine,
            },
            None if complete || lead.len() > 256 => Lead::NotMine,
            None => Lead::NeedMore,
        })
    }

    // Decided at its first `<`, the lead reads as the search of the whole lead did: the
    // same verdict on every prefix of these leads once complete, and where it says
    // `NotMine` while the search would wait, the search says `NotMine` for the whole lead
    // and for it followed by anything.
    #[test]
    fn the_lead_is_decided_at_its_first_angle_bracket() {
        let flood = CALL.repeat(20);
        let leads = [
            "functions.get_weather:0<|tool_call_argument_begin|>{\"a\":1}",
            " functions.get:12 <|tool_call_argument_begin|>",
            "functions.a b:1<|tool_call_argument_begin|>{}",
            "functions.x<y:0<|tool_call_argument_begin|>{}",
            "x<|tool_call_end|>functions.get:0<|tool_call_argument_begin|>",
            "functions.get:0<|tool_call_argument_begi",
            "<|tool_call_argument_begin|>",
            "functions.é:0<|tool_call_argument_begin|>",
            &flood,
        ];
        for lead in leads {
            for cut in (0..=lead.len()).filter(|&c| lead.is_char_boundary(c)) {
                let l = &lead[..cut];
                assert_eq!(key(bare_lead(l, true)), searched(l, true), "{l:?}");
                let (now, before) = (key(bare_lead(l, false)), searched(l, false));
                if now != before {
                    assert_eq!((now.0, before.0), (1, 0), "{l:?}");
                    for rest in ["", "x", "<|tool_call_argument_begin|>{}", &"y".repeat(300)] {
                        let more = format!("{lead}{rest}");
                        assert_eq!(searched(&more, true).0, 1, "{more:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_name_comes_from_the_id() {
        assert_eq!(name_of("functions.get_weather:0"), "get_weather");
        assert_eq!(name_of("get_weather:12"), "get_weather");
        assert_eq!(name_of("functions.ns:tool"), "ns:tool");
    }
}
