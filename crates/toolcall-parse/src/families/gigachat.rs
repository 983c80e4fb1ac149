//! `gigachat`: GigaChat 3 ends its message with `<|message_sep|>` and writes a call as the
//! next turn, `\n\nfunction call<|role_sep|>\n` and one JSON `{"name", "arguments"}`
//! object; GigaChat 3.1 writes `<|function_call|>` and the same object. No closing marker:
//! the call ends with its JSON (the server may leave a `</s>` after it, removed when the
//! family is chosen). A `<|message_sep|>` not followed by a call ends the visible message
//! and is removed.
//!
//! Sources: vLLM's `gigachat3_tool_parser.py` (the `function call<|role_sep|>\n{json}`
//! call, the content before `<|message_sep|>`, a trailing `</s>`), llama.cpp's GigaChat-v3
//! format (`<|message_sep|>\n\nfunction call<|role_sep|>\n{json}`) and the GigaChat3.1
//! chat template's `<|function_call|>` opener. GigaChat 3.5 writes another markup (GCML),
//! read by `gigachat35`.

use super::described::{Body, Described};
use serde_json::{Map, Value};

use super::marked::{OpenJsonReader, open_json_declines};
use super::tags::starts;
use super::text_example::name_arguments;
use crate::FormatId;
use crate::builder::{Ctx, Outcome};
use crate::family::{Advance, Instructions, ReadCx, RegionReader, WhenChosen};
use crate::shape::{Piece, Shape};

impl FormatId {
    pub(crate) const GIGACHAT: FormatId = FormatId::builtin("gigachat");
}

/// GigaChat 3: the message's end, then the call as a `function call` turn.
const MESSAGE_SEP: &str = "<|message_sep|>";
const FUNCTION_TURN: &str = "function call<|role_sep|>";
/// GigaChat 3.1.
const FUNCTION_CALL: &str = "<|function_call|>";

/// Blanks allowed between `<|message_sep|>` and `function call` (the template writes two
/// newlines).
const MAX_BLANKS: usize = 64;


static WHEN_CHOSEN: WhenChosen = WhenChosen {
    strip: &["</s>"],
    ..WhenChosen::NONE
};

/// The call markup a decoder is held to: GigaChat 3.1's `<|function_call|>` and the JSON
/// object (what [`Family::instructions`] and [`Family::example_call`] write). GigaChat 3's
/// `<|message_sep|>` cannot open the constraint's calls: a message may end with it and no
/// call, so it stays prose to the grammar (unconstrained).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit(FUNCTION_CALL),
    Piece::Ws(""),
    Piece::NAME_ARGUMENTS,
]);

fn reader(opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    let max_depth = ctx.limits.max_depth;
    Some(match opener {
        0 => Box::new(TurnReader {
            call: None,
            max_depth,
        }),
        _ => Box::new(OpenJsonReader::new(
            FormatId::GIGACHAT,
            FUNCTION_CALL.len(),
            max_depth,
        )),
    })
}

/// What the reader of `opener` answers `NotMine` to at its first step, read without making
/// it: `<|function_call|>`'s JSON reader after a byte that starts no JSON
/// ([`open_json_declines`]; a flood of `<|function_call|>` and junk made, boxed and dropped
/// a reader at each, ~20x prose). `<|message_sep|>` is never declined (alone, it is
/// removed).
fn declines(opener: usize, region: &str, is_final: bool) -> bool {
    opener == 1 && open_json_declines(FUNCTION_CALL.len(), region, is_final)
}

/// What [`TurnReader`] answers at its first step when `<|message_sep|>` is alone (removed),
/// read without making it (a flood of the separator and junk made, boxed and dropped a
/// reader at each).
fn removes(opener: usize, region: &str, is_final: bool) -> Option<usize> {
    (opener == 0 && separator_alone(region, is_final)).then_some(MESSAGE_SEP.len())
}

/// `<|message_sep|>` at `region`'s start is alone: `function call<|role_sep|>` does not
/// follow it after at most [`MAX_BLANKS`] blanks, whatever more input comes.
fn separator_alone(region: &str, is_final: bool) -> bool {
    let after = region.get(MESSAGE_SEP.len()..).unwrap_or("");
    let blanks = after.len() - after.trim_start_matches(|c: char| c.is_ascii_whitespace()).len();
    if blanks > MAX_BLANKS {
        return true;
    }
    match starts(&after[blanks..], FUNCTION_TURN) {
        Some(true) => false,
        None => is_final,
        Some(false) => true,
    }
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("{FUNCTION_CALL}{}", name_arguments(name, args))
}

pub(crate) static GIGACHAT: Described = Described {
    id: FormatId::GIGACHAT,
    description: "<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{\"name\", \"arguments\"} (GigaChat 3), <|function_call|>{…} (GigaChat 3.1); ends with the JSON",
    example: r#"<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
    body: Body::Own {
        openers: &[MESSAGE_SEP, FUNCTION_CALL],
        reader,
        declines,
    },
    model_names: &["gigachat3-*", "gigachat3.1*", "gigachat-3-*", "gigachat-3.1*"],
    template_markers: &["<|message_sep|>", "<|role_sep|>", "function call"],
    when_chosen: &WHEN_CHOSEN,
    instructions: Some(Instructions {
        how: r#"To call a tool, write <|function_call|> followed by one JSON object {"name": TOOL_NAME, "arguments": {...}}; nothing closes it."#,
        several: "- To make several calls, write several <|function_call|> objects, one after the other; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    removes: Some(removes),
    ..Described::BASE
};


/// A region opened by `<|message_sep|>`: a call when `function call<|role_sep|>` follows
/// (after blanks), read by the shared open-JSON reader from there; otherwise the separator
/// alone is removed (it ends the visible message).
struct TurnReader {
    /// Boxed: a reader made at every `<|message_sep|>` (most of them ending a message, no
    /// call) is then two words, not the JSON reader's copy (~60 instructions a separator).
    call: Option<Box<OpenJsonReader>>,
    max_depth: usize,
}

impl RegionReader for TurnReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if let Some(call) = self.call.as_mut() {
            return call.advance(region, is_final, cx);
        }
        let after = region.get(MESSAGE_SEP.len()..).unwrap_or("");
        let blanks = after.len() - after.trim_start_matches(|c: char| c.is_ascii_whitespace()).len();
        let separator_alone = || Advance::Done {
            end: MESSAGE_SEP.len(),
            outcome: Outcome::default(),
        };
        if blanks > MAX_BLANKS {
            return separator_alone();
        }
        match starts(&after[blanks..], FUNCTION_TURN) {
            Some(true) => {
                let mut call = Box::new(OpenJsonReader::new(
                    FormatId::GIGACHAT,
                    MESSAGE_SEP.len() + blanks + FUNCTION_TURN.len(),
                    self.max_depth,
                ));
                let verdict = call.advance(region, is_final, cx);
                self.call = Some(call);
                verdict
            }
            None if !is_final => Advance::NeedMore,
            _ => separator_alone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{detect_template, model_family};

    #[test]
    fn detect_and_model_names_pick_gigachat() {
        let t = "{% for m in messages %}{{ m.role }}<|role_sep|>\n{{ m.content }}<|message_sep|>\n\n{% if m.function_call %}function call<|role_sep|>\n{{ m.function_call | tojson }}<|message_sep|>\n\n{% endif %}{% endfor %}assistant<|role_sep|>\n";
        assert_eq!(detect_template(t).unwrap().family.as_deref(), Some("gigachat"));
        for name in ["ai-sage/GigaChat3-10B-A1.8B", "ai-sage/GigaChat3.1-10B-A1.8B", "ai-sage/GigaChat3-702B-A36B-preview"] {
            assert_eq!(model_family(name).unwrap().family, "gigachat", "{name}");
        }
    }
}
