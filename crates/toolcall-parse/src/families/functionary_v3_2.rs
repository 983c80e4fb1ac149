//! `functionary_v3_2`: Functionary v3.2 (meetkai/functionary-*-v3.2, Llama 3 based)
//! addresses each part of a reply to a recipient: `>>>RECIPIENT\n` then the content.
//! `>>>all\n` starts reply text (the marker is removed, the text after it is the reply);
//! `>>>NAME\n{json}` is a call. Parts follow each other directly
//! (`>>>all\nLet me check.>>>get_weather\n{"city": "Paris"}`). `>>>` followed by a blank,
//! by anything not a name and a newline, or a name not followed by a JSON object (a
//! Python REPL prompt, a quoted marker) stays text. Explicit markup: any name (flagged when
//! unregistered).

use super::described::{Body, Described, Implied};
use serde_json::{Map, Value, json};

use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Advance, Instructions, MAX_DECLINED_RUN, Outcome, ReadCx, RegionReader};

use super::args_object::{ArgsObject, named_call};

use super::llama::END_TOKENS;
use super::tags::{MAX_GAP, gap_at, valid_name};

impl FormatId {
    pub(crate) const FUNCTIONARY_V3_2: FormatId = FormatId::builtin("functionary_v3_2");
}

const OPEN: &str = ">>>";
/// The recipient that marks reply text rather than a call.
const ALL: &str = "all";
/// Longest recipient read.
const MAX_NAME: usize = 256;


fn declines(_opener: usize, region: &str, is_final: bool) -> bool {
    // `head` decides a first byte no recipient starts with at its first look ([`STOPS`]);
    // asking that apart first decided each opener's first byte twice (~70 instructions an
    // opener of a numbered flood `>>>0>>>1…`).
    matches!(head(region, is_final), Head::NotMine)
}

/// [`crate::family::Family::declined_run`]: in a run of `>`, every `>>>` followed by a
/// fourth `>` is declined ([`head`]'s [`STOPS`]): the positions after the region's start whose
/// `>>>` has another `>` after it.
fn declined_run(_opener: usize, region: &str) -> usize {
    // Most regions have no fourth `>`: no run, without setting up the count (~35
    // instructions an opener of `>>>0>>>1…`).
    if region.as_bytes().get(OPEN.len()) != Some(&b'>') {
        return 0;
    }
    let run = region
        .bytes()
        .take(MAX_DECLINED_RUN + OPEN.len() + 2)
        .take_while(|&b| b == b'>')
        .count();
    run.saturating_sub(OPEN.len() + 1).min(MAX_DECLINED_RUN)
}

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(Reader {
        state: State::Head,
        max_depth: ctx.limits.max_depth,
    }))
}

fn continues_implied(start: &str, is_final: bool) -> Option<bool> {
    match head(&format!("{OPEN}{start}"), is_final) {
        Head::NeedMore => None,
        Head::NotMine => Some(false),
        Head::Text(_) | Head::Call(..) => Some(true),
    }
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    format!("{OPEN}{name}\n{}", json!(args))
}

pub(crate) static FUNCTIONARY_V3_2: Described = Described {
    id: FormatId::FUNCTIONARY_V3_2,
    description: ">>>NAME\\n{json} calls, >>>all\\n reply text (Functionary v3.2)",
    example: ">>>all\\nLet me check.>>>get_weather\\n{\"city\": \"Paris\"}",
    body: Body::Own {
        openers: &[OPEN],
        reader,
        declines,
    },
    declined_run: Some(declined_run),
    model_names: &["functionary-*v3.2*"],
    template_markers: &[">>>all"],
    strip: &END_TOKENS,
    // The v3.2 chat template's generation prompt ends with `>>>`: the reply starts with
    // the recipient (`all\n…` or `NAME\n{json}`).
    implied: Some(Implied {
        opener: OPEN,
        continues: continues_implied,
    }),
    instructions: Some(Instructions {
        how: "To call a tool, write >>>TOOL_NAME on a line of its own, then the arguments as one JSON object on the next line. Write reply text after >>>all on a line of its own.",
        several: "- To make several calls, write several >>>TOOL_NAME parts one after the other; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};


enum State {
    Head,
    /// Boxed: the scanner's resume fields put the value's reader past the size at which a
    /// bare `Head` would waste it.
    Json { name: String, args: Box<ArgsObject> },
}

struct Reader {
    state: State,
    max_depth: usize,
}

/// What the recipient line after `>>>` says.
enum Head {
    NeedMore,
    NotMine,
    /// `>>>all\n`: reply text follows; the marker ends at this region offset.
    Text(usize),
    /// `>>>NAME\n` then blanks and `{` at this region offset.
    Call(String, usize),
}

/// The bytes that end a recipient line's pass in [`head`]: a newline, or a byte no
/// recipient has (a blank other than `\r`, markup), which decides prose (`>>> x`, `>>>>`).
/// A table: the predicate's compares cost ~4 instructions a byte at each opener of a flood.
static STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = (b.is_ascii_whitespace() && b != b'\r') || matches!(b, b'<' | b'>' | b'"');
        i += 1;
    }
    t
};

fn head(region: &str, is_final: bool) -> Head {
    let bytes = region.as_bytes();
    let rest = bytes.get(OPEN.len()..).unwrap_or(&[]);
    let line = rest.get(..MAX_NAME + 2).unwrap_or(rest);
    // One pass to the newline or the first byte no recipient has (a blank, markup), which
    // decides prose (`>>> x`, `>>>>`) at once: a flood of `>>>` costs a few bytes an opener,
    // not a search of the whole line window.
    let stop = line.iter().position(|&b| STOPS[usize::from(b)]);
    let nl = match stop {
        Some(i) if line.get(i) == Some(&b'\n') => i,
        Some(_) => return Head::NotMine,
        None if is_final || rest.len() > MAX_NAME + 1 => return Head::NotMine,
        None => return Head::NeedMore,
    };
    let raw = &line[..nl];
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let Ok(name) = std::str::from_utf8(raw) else {
        return Head::NotMine;
    };
    if !valid_name(name) {
        return Head::NotMine;
    }
    let after = OPEN.len() + nl + 1;
    if name == ALL {
        return Head::Text(after);
    }
    let gap = gap_at(bytes, after);
    match bytes.get(after + gap) {
        Some(b'{') => Head::Call(name.to_owned(), after + gap),
        Some(_) => Head::NotMine,
        None if is_final || gap > MAX_GAP => Head::NotMine,
        None => Head::NeedMore,
    }
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        loop {
            match &mut self.state {
                State::Head => match head(region, is_final) {
                    Head::NeedMore => return Advance::NeedMore,
                    Head::NotMine => return Advance::NotMine,
                    Head::Text(end) => {
                        return Advance::Done {
                            end,
                            outcome: Outcome::default(),
                        };
                    }
                    Head::Call(name, start) => {
                        let args =
                            ArgsObject::new(region, start, Some((&name, None)), self.max_depth, cx);
                        self.state = State::Json {
                            name,
                            args: Box::new(args),
                        };
                    }
                },
                State::Json { name, args } => {
                    let read = args.advance(region, is_final, cx);
                    return match read.value_or_answer(region.len(), || format!(">>>{name}")) {
                        Ok((end, value, repairs)) => Advance::Done {
                            end,
                            outcome: named_call(
                                name,
                                None,
                                FormatId::FUNCTIONARY_V3_2,
                                (value, repairs),
                                args.start()..end,
                                end,
                                cx,
                            ),
                        },
                        Err(answer) => answer,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipient_lines() {
        assert!(matches!(head(">>>all\nHi", false), Head::Text(7)));
        assert!(matches!(head(">>>all\r\nHi", false), Head::Text(8)));
        assert!(matches!(head(">>>get\n{", false), Head::Call(n, 7) if n == "get"));
        assert!(matches!(head(">>>get\n  \n{", false), Head::Call(_, 10)));
        assert!(matches!(head(">>>get", false), Head::NeedMore));
        assert!(matches!(head(">>>get", true), Head::NotMine));
        assert!(matches!(head(">>>get\n", false), Head::NeedMore));
        assert!(matches!(head(">>> print(1)", false), Head::NotMine));
        assert!(matches!(head(">>>>", false), Head::NotMine));
        assert!(matches!(head(">>>python\nprint(1)", false), Head::NotMine));
        let long = format!(">>>{}", "a".repeat(MAX_NAME + 2));
        assert!(matches!(head(&long, false), Head::NotMine));
    }
}
