//! `deepseek_v3_1`: DeepSeek V3.1 writes `<｜tool▁calls▁begin｜>`, then per call
//! `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`, then `<｜tool▁calls▁end｜>`
//! (no `function` type, no fence; see `deepseek_v3` for the older layout).

use super::described::{Body, Described};
use crate::family::ToolResultText;
use super::deepseek_v3::deepseek_output;
use serde_json::{Map, Value};
use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Instructions, ReadCx};

use super::args_object::JsonCallTags;
use super::deepseek_v3::{CALL, CALL_END, CLOSE, OPEN, SEP, calls, draft};
use super::tags::{Block, BodyRule, Lead, LeadRule, skip_space, starts, valid_name};
use crate::family::find_from;
use crate::shape::{Args, NO_SEPARATOR, Piece, Shape};

impl FormatId {
    pub(crate) const DEEPSEEK_V3_1: FormatId = FormatId::builtin("deepseek_v3_1");
}

static BLOCK: Block = Block {
    format: FormatId::DEEPSEEK_V3_1,
    open: OPEN,
    close: CLOSE,
    lead: LeadRule::Fn(lead),
    body: BodyRule::Call { body, ahead },
};

/// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>` where NAME is not V3's `function` type.
fn lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    match starts(s, CALL) {
        Some(true) => {}
        None if !complete => return Lead::NeedMore,
        _ => return Lead::NotMine,
    }
    let rest = &s[CALL.len()..];
    match rest.find(SEP) {
        Some(i) if valid_name(&rest[..i]) && &rest[..i] != "function" => {
            Lead::Mine(Some(rest[..i].into()))
        }
        Some(_) => Lead::NotMine,
        None if complete || rest.len() > 256 => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

static STREAM: JsonCallTags = JsonCallTags {
    call: CALL,
    head: call_head,
    call_end: CALL_END,
};

/// `NAME<｜tool▁sep｜>` → the name.
fn call_head(head: &str) -> Option<(String, Option<String>)> {
    let name = head.trim_end().strip_suffix(SEP)?.trim();
    (valid_name(name) && name != "function").then(|| (name.to_owned(), None))
}


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<｜tool▁calls▁begin｜>")],
    &[Piece::Lit("<｜tool▁calls▁end｜>")],
    &[
        Piece::Lit("<｜tool▁call▁begin｜>"),
        Piece::Name,
        Piece::Lit("<｜tool▁sep｜>"),
        Piece::Args(Args::Json),
        Piece::Lit("<｜tool▁call▁end｜>"),
    ],
    NO_SEPARATOR,
);

/// `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>` per result (the V3.1 template).
fn write_results(results: &[ToolResultText<'_>]) -> String {
    results.iter().map(|r| deepseek_output(r.content)).collect()
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", Value::Object(args.clone()))
}

pub(crate) static DEEPSEEK_V3_1: Described = Described {
    id: FormatId::DEEPSEEK_V3_1,
    description: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜><｜tool▁calls▁end｜> (DeepSeek V3.1)",
    example: r#"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"#,
    body: Body::JsonTags(&BLOCK, &STREAM),
    model_names: &["deepseek-v3.1*"],
    template_markers: &["<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"],
    instructions: Some(Instructions {
        how: "To call tools, write <｜tool▁calls▁begin｜>, then per call <｜tool▁call▁begin｜>TOOL_NAME<｜tool▁sep｜>, the arguments as a JSON object and <｜tool▁call▁end｜>, then <｜tool▁calls▁end｜>.",
        several: "- To make several calls, write several <｜tool▁call▁begin｜> entries in the one list; they run in that order.\n",
    }),
    example_call: Some(example_call),
    write_results,
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


fn body(body: &str, cx: &mut ReadCx<'_>, format: FormatId) -> Result<Vec<Draft>, String> {
    calls(body, cx.ctx.limits.max_depth)?
        .into_iter()
        .map(|call| {
            let (name, args) = call.split_once(SEP).ok_or("a call has no <｜tool▁sep｜>")?;
            draft(name.trim(), args, format)
        })
        .collect()
}

/// The block from after its opener, one-shot ([`BodyRule::Call`]): the calls [`body`]
/// reads from the body that ends at the first `<｜tool▁calls▁end｜>` outside JSON strings,
/// and that body's length, when every call is `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>`,
/// JSON blanks, an object serde's stream reader decodes, JSON blanks and
/// `<｜tool▁call▁end｜>`, where that is the first `<｜tool▁call▁end｜>` after the call's
/// opener (so [`calls`]' `CallEnds::find` ends the call there, whatever its depth-limited
/// scan finds) and the name has no `{` (the scan starts at the object's), with ASCII blanks
/// between calls ([`skip_space`], as [`calls`]) and the block's tag after the last. A
/// valid name holds no `"` (nor `<`), the markers none: the only quotes before the tag are
/// the objects', so it is the first outside strings, where the close search ends the
/// block. [`body`] trims the same JSON and decodes it to the same `Value` (valid, so no
/// repair). One pass, where the close search (two `memchr2` a JSON string), `CallEnds`'
/// scan of each object and the decode read each call three times. Anything else (a broken
/// or repaired object, Unicode blanks, text after an object, an invalid name) is left to
/// the search and [`body`] (`None`).
fn ahead(
    after: &str,
    close: &str,
    _cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Option<(usize, Vec<Draft>)> {
    let mut drafts = Vec::new();
    let mut at = after.len() - skip_space(after).len();
    loop {
        let here = after.get(at..)?;
        if here.starts_with(close) {
            break;
        }
        let rest = here.strip_prefix(CALL)?;
        let sep = rest.find(SEP)?;
        let raw = &rest[..sep];
        let name = raw.trim();
        if !valid_name(name) || raw.contains('{') {
            return None;
        }
        let from = sep + SEP.len();
        let args = rest.get(from..)?;
        let lead = crate::scanner::json_blanks(args.as_bytes());
        let json = args.get(lead..).filter(|j| j.starts_with('{'))?;
        let mut docs = serde_json::Deserializer::from_str(json).into_iter::<Value>();
        let value = docs.next()?.ok()?;
        let end = from + lead + docs.byte_offset();
        let blanks = crate::scanner::json_blanks(rest.as_bytes().get(end..)?);
        let e = end + blanks;
        if find_from(rest, CALL_END, 0) != Some(e) {
            return None;
        }
        drafts.push(Draft::new(name, Some(value), format));
        let next = &rest[e + CALL_END.len()..];
        at = after.len() - skip_space(next).len();
    }
    (!drafts.is_empty()).then_some((at, drafts))
}

#[cfg(test)]
mod tests {
    /// One-shot reads blocks through [`super::ahead`] where it can: it gives what the same
    /// parse gives with no read-ahead (the closing tag searched outside strings, the body
    /// read: calls, spans, repairs, diagnostics, text) and what 1-, 3- and 7-char streams
    /// give, for blocks it reads and blocks it leaves.
    #[test]
    fn read_ahead_equals_the_search_and_streams() {
        use super::{CALL, CALL_END, CLOSE, OPEN, SEP};
        use crate::families::marked::assert_read_ahead_equals_search_and_streams;
        use crate::{FormatSelection, ParseOptions};
        let call = |name: &str, args: &str| format!("{CALL}{name}{SEP}{args}{CALL_END}");
        let bodies = [
            call("get_weather", "{\"city\": \"Lisbon\", \"days\": 4}"),
            format!(
                "\n{}\n{}\n",
                call("f", "{}"),
                call("g", "\n{\"x\": [1, {\"y\": null}]}\r\n")
            ),
            call("f", &format!("{{\"a\": \"{CALL_END}{CLOSE} \\\"x\\\\\"}}")),
            call(" f ", "{}"),
            call("f", "{} x"),
            call("f", "{'a': 1}"),
            call("f", "{\"a\": 1,}"),
            call("f", "\u{a0}{}"),
            call("f", "{}\u{a0}"),
            call("f", "[1]"),
            call("f", "{\"a\": \"x}"),
            call("f{", "{}"),
            call("no such tool!", "{}"),
            call("function", "{}"),
            format!("{}{}", call("f", "{}"), call("function", "{}")),
            format!("{}{}", call("f", "{}"), call("no such tool!", "{}")),
            format!("{}{}", call("f", "{}"), call("g{", "{}")),
            format!("{CALL}f{SEP}{{}}"),
            format!("{CALL}f{{}}{CALL_END}"),
            format!("{}\u{c}{}", call("f", "{}"), call("g", "{}")),
            format!("{} x {}", call("f", "{}"), call("g", "{}")),
            String::new(),
            "\n".into(),
        ];
        let only = ParseOptions {
            format: FormatSelection::Only("deepseek_v3_1".into()),
            ..ParseOptions::default()
        };
        let auto = ParseOptions::default();
        for body in &bodies {
            for text in [
                format!("{OPEN}{body}{CLOSE}"),
                format!("Sure.\n{OPEN}{body}{CLOSE} done {OPEN}{body}{CLOSE}"),
                format!("{OPEN}{body}"),
            ] {
                for o in [&only, &auto] {
                    // A repaired object streams as written: its fragments are not checked.
                    assert_read_ahead_equals_search_and_streams(&text, o, false, "deepseek_v3_1");
                }
            }
        }
    }
}
