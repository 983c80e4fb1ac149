//! `functionary_v3_1`: Functionary v3.1 (Llama 3.1 based) writes
//! `<function=NAME>{json}</function>`. `<function=name>` in prose is not followed by a JSON
//! object and stays text. Explicit markup: any name (flagged when unregistered).

use super::described::{Body, Described, never};
use serde_json::{Map, Value, json};

use std::ops::Range;

use toolcall_core::Repair;

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Advance, Instructions, ReadCx, RegionReader};

use super::args_object::{ArgsObject, named_call};

use super::tags::valid_name;
use crate::shape::{Args, Piece, Shape};

impl FormatId {
    pub(crate) const FUNCTIONARY_V3_1: FormatId = FormatId::builtin("functionary_v3_1");
}

const OPEN: &str = "<function=";
const CLOSE: &str = "</function>";
/// Longest name read, and blanks allowed around the JSON.
const MAX_NAME: usize = 256;
const MAX_GAP: usize = 256;


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
        declines: never,
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
                    let rest = region.get(OPEN.len()..).unwrap_or("");
                    // A byte search: the window may end inside a character.
                    let Some(gt) = rest.bytes().take(MAX_NAME + 1).position(|b| b == b'>') else {
                        return if is_final || rest.len() > MAX_NAME {
                            Advance::NotMine
                        } else {
                            Advance::NeedMore
                        };
                    };
                    let name = &rest[..gt];
                    if !valid_name(name) {
                        return Advance::NotMine;
                    }
                    let after = OPEN.len() + gt + 1;
                    let gap = bytes
                        .iter()
                        .skip(after)
                        .take(MAX_GAP + 1)
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
                    match bytes.get(after + gap) {
                        Some(b'{') => {}
                        Some(_) => return Advance::NotMine,
                        None if is_final || gap > MAX_GAP => return Advance::NotMine,
                        None => return Advance::NeedMore,
                    }
                    let args =
                        ArgsObject::new(region, after + gap, Some((name, None)), self.max_depth, cx);
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
                    let gap = bytes
                        .iter()
                        .skip(end)
                        .take(MAX_GAP + 1)
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
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
