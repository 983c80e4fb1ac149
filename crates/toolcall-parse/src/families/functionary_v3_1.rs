//! `functionary_v3_1`: Functionary v3.1 (Llama 3.1 based) writes
//! `<function=NAME>{json}</function>`. `<function=name>` in prose is not followed by a JSON
//! object and stays text. Explicit markup: any name (flagged when unregistered).

use super::described::{Body, Described};
use serde_json::{Map, Value, json};

use std::ops::Range;

use toolcall_core::Repair;

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Advance, Instructions, ReadCx, RegionReader};

use super::args_object::{ArgsObject, named_call};

use super::tags::{MAX_GAP, gap_at, valid_name};
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const FUNCTIONARY_V3_1: FormatId = FormatId::builtin("functionary_v3_1");
}

const OPEN: &str = "<function=";
const CLOSE: &str = "</function>";
/// Longest name read.
const MAX_NAME: usize = 256;


/// The call markup a decoder is held to (`toolcall-constrain` writes every dialect from it).
static CONSTRAINT: Shape = Shape::prose(&[
    Piece::Lit("<function="),
    Piece::Name,
    Piece::Lit(">"),
    Piece::Ws(""),
    Piece::Args(Args::Json),
    Piece::Ws(""),
    Piece::Lit("</function>"),
]);

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(Reader {
        state: State::Head,
        max_depth: ctx.limits.max_depth,
    }))
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("<function={name}>{}</function>", json!(args))
}

pub(crate) static FUNCTIONARY_V3_1: Described = Described {
    id: FormatId::FUNCTIONARY_V3_1,
    description: "<function=NAME>{json}</function> (Functionary v3.1)",
    example: r#"<function=get_weather>{"city": "Paris"}</function>"#,
    body: Body::Own {
        openers: &[OPEN],
        reader,
        declines,
    },
    model_names: &["functionary-*v3.1*"],
    template_markers: &["<function=", "</function>"],
    instructions: Some(Instructions {
        how: "To call a tool, write <function=TOOL_NAME>{...}</function> with the arguments as one JSON object.",
        several: "- To make several calls, write several <function=...> blocks; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


/// What the bytes after `<function=` say: `NAME>`, blanks, then `{`.
enum Head {
    NotMine,
    NeedMore,
    /// The name ends at region offset `name_end` (its `>`), the JSON starts at `json`.
    Json { name_end: usize, json: usize },
}

/// The bytes [`head`] ends a name's search at: `>`, a blank (`is_ascii_whitespace`), `<`
/// and the quotes.
static NAME_ENDS: [bool; 256] = crate::scanner::byte_set(b">\t\n\x0c\r <\"'");

fn head(region: &str, is_final: bool) -> Head {
    let bytes = region.as_bytes();
    let rest = bytes.get(OPEN.len()..).unwrap_or(&[]);
    // The name ends at its `>`; a byte no name holds ([`valid_name`]) before it, within
    // the longest name, is not ours whatever follows (decided there: a flood of the
    // opener is not searched a name's length ahead at each one).
    // By a table over the bytes within the longest name (the iterator's `take` and the
    // compares cost ~20 instructions a byte: ~118 an opener of a flood of `<function=` and
    // a number, 25x prose).
    let stop = rest
        .get(..MAX_NAME + 1)
        .unwrap_or(rest)
        .iter()
        .position(|&b| NAME_ENDS[usize::from(b)]);
    let Some(gt) = stop.filter(|&i| rest.get(i) == Some(&b'>')) else {
        return if stop.is_some() || is_final || rest.len() > MAX_NAME {
            Head::NotMine
        } else {
            Head::NeedMore
        };
    };
    let name = region.get(OPEN.len()..OPEN.len() + gt).unwrap_or("");
    if !valid_name(name) {
        return Head::NotMine;
    }
    let after = OPEN.len() + gt + 1;
    let gap = gap_at(bytes, after);
    match bytes.get(after + gap) {
        Some(b'{') => Head::Json {
            name_end: OPEN.len() + gt,
            json: after + gap,
        },
        Some(_) => Head::NotMine,
        None if is_final || gap > MAX_GAP => Head::NotMine,
        None => Head::NeedMore,
    }
}

/// The reader's first look ([`crate::family::Family::declines`]): a `<function=` that is
/// not `NAME>{` (prose naming the tag, or a flood of it) builds no reader.
fn declines(_opener: usize, region: &str, is_final: bool) -> bool {
    matches!(head(region, is_final), Head::NotMine)
}

enum State {
    Head,
    Json {
        name: String,
        args: ArgsObject,
    },
    Tail {
        name: String,
        json: Range<usize>,
        value: Option<Value>,
        repairs: Vec<Repair>,
    },
}

struct Reader {
    state: State,
    max_depth: usize,
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let bytes = region.as_bytes();
        loop {
            match &mut self.state {
                State::Head => {
                    let (gt, json) = match head(region, is_final) {
                        Head::NotMine => return Advance::NotMine,
                        Head::NeedMore => return Advance::NeedMore,
                        Head::Json { name_end, json } => (name_end, json),
                    };
                    let name = region.get(OPEN.len()..gt).unwrap_or("");
                    let args = ArgsObject::new(region, json, Some((name, None)), self.max_depth, cx);
                    self.state = State::Json {
                        name: name.to_owned(),
                        args,
                    };
                }
                State::Json { name, args } => {
                    let read = args.advance(region, is_final, cx);
                    let (end, value, repairs) = match read
                        .value_or_answer(region.len(), || format!("<function={name}>"))
                    {
                        Ok(read) => read,
                        Err(answer) => return answer,
                    };
                    self.state = State::Tail {
                        name: std::mem::take(name),
                        json: args.start()..end,
                        value: Some(value),
                        repairs,
                    };
                }
                State::Tail {
                    name,
                    json,
                    value,
                    repairs,
                } => {
                    let end = json.end;
                    let gap = gap_at(bytes, end);
                    let rest = region.get(end + gap..).unwrap_or("");
                    let close_end = if rest.starts_with(CLOSE) {
                        end + gap + CLOSE.len()
                    } else if !is_final && gap <= MAX_GAP && CLOSE.starts_with(rest) {
                        return Advance::NeedMore;
                    } else {
                        return Advance::Broken {
                            end,
                            why: "<function=...> arguments are not followed by </function>; not run"
                                .into(),
                        };
                    };
                    let o = named_call(
                        name,
                        None,
                        FormatId::FUNCTIONARY_V3_1,
                        (value.take().unwrap_or(Value::Null), std::mem::take(repairs)),
                        json.clone(),
                        close_end,
                        cx,
                    );
                    return Advance::Done {
                        end: close_end,
                        outcome: o,
                    };
                }
            }
        }
    }
}
