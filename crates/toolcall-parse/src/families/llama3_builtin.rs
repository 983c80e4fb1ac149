//! `llama3_builtin`: Llama 3.1+ built-in tools, `<|python_tag|>brave_search.call(query="…")`
//! (also `wolfram_alpha`, or any `tool.call(key=value, ...)`), ended by `<|eom_id|>`, which
//! `llama` strips. Explicit markup: any name, flagged when unregistered. Keyword values are
//! Python/JSON literals read by the shared call-syntax argument parser. Streamed, the call is
//! announced at its name and each completed keyword argument is sent as the JSON it converts
//! to, as the Python call lists do ([`LiveCall`]).

use super::described::{Body, Described};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Advance, Outcome, ReadCx, RegionReader, Scan, Scanner};

use super::call_syntax::parse_args;
use super::llama::PYTHON_TAG;
use super::marked::LiveCall;
use super::tags::{MAX_GAP, gap_at};

const CALL: &str = ".call(";
/// Longest built-in tool name read.
const MAX_NAME: usize = 64;

impl FormatId {
    pub(crate) const LLAMA3_BUILTIN: FormatId = FormatId::builtin("llama3_builtin");
}


/// What a fresh [`Reader`]'s first step answers `NotMine` to, read without making it (its
/// scanner is allocated; a flood of `<|python_tag|>` cost a reader each): no
/// `NAME.call(` after the tag ([`head`]).
fn declines(_opener: usize, region: &str, is_final: bool) -> bool {
    match head(region.as_bytes(), region) {
        Head::Not => true,
        Head::Undecided => is_final,
        Head::Call(..) => false,
    }
}

/// What follows the tag, as a [`Reader`]'s first step reads it.
enum Head {
    /// Not a built-in tool's call.
    Not,
    /// A prefix of one: more bytes decide.
    Undecided,
    /// `NAME.call(`: the name's offset and length.
    Call(usize, usize),
}

fn head(bytes: &[u8], region: &str) -> Head {
    let after = PYTHON_TAG.len();
    let gap = gap_at(bytes, after);
    let name_at = after + gap;
    let name_len = bytes
        .iter()
        .skip(name_at)
        .take(MAX_NAME + 1)
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    let rest = region.get(name_at + name_len..).unwrap_or("");
    let undecided = name_at + name_len == region.len()
        || (rest.len() < CALL.len() && CALL.starts_with(rest));
    if gap > MAX_GAP
        || name_len > MAX_NAME
        || (!undecided && (name_len == 0 || !rest.starts_with(CALL)))
        || bytes.get(name_at).is_some_and(u8::is_ascii_digit)
    {
        return Head::Not;
    }
    if undecided {
        return Head::Undecided;
    }
    Head::Call(name_at, name_len)
}

fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(Reader {
        head: None,
        scanner: Scanner::new(ctx.limits.max_depth, true),
        live: None,
    }))
}

pub(crate) static LLAMA3_BUILTIN: Described = Described {
    id: FormatId::LLAMA3_BUILTIN,
    description: "Llama 3 built-in tools: <|python_tag|>tool.call(key=\"value\") ended by <|eom_id|>",
    example: r#"<|python_tag|>brave_search.call(query="weather in Paris")<|eom_id|>"#,
    body: Body::Own {
        openers: &[PYTHON_TAG],
        reader,
        declines,
    },
    generic_because: Some("Llama 3.1's built-in tools; its models are `llama`'s, whose template markers and names pick `llama`"),
    // The end-of-message token after the call (and Llama 3's other end tokens), also when
    // this family is chosen alone.
    strip: &super::llama::END_TOKENS,
    ..Described::BASE
};


struct Reader {
    /// The tool name and the offset of the call's `(`, once read.
    head: Option<(String, usize)>,
    scanner: Scanner,
    /// The keyword arguments streamed so far (streaming only).
    live: Option<LiveCall>,
}

impl RegionReader for Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let bytes = region.as_bytes();
        if self.head.is_none() {
            let (name_at, name_len) = match head(bytes, region) {
                Head::Not => return Advance::NotMine,
                Head::Undecided if is_final => return Advance::NotMine,
                Head::Undecided => return Advance::NeedMore,
                Head::Call(at, len) => (at, len),
            };
            let name = region.get(name_at..name_at + name_len).unwrap_or("");
            cx.start_call(name, None);
            let open = name_at + name_len + CALL.len() - 1;
            self.head = Some((name.to_owned(), open));
            if cx.streaming() {
                self.live = Some(LiveCall::new(open, cx.ctx.limits.max_depth));
            }
        }
        let Some((name, open)) = &self.head else {
            return Advance::NeedMore;
        };
        let open = *open;
        match self.scanner.advance(&bytes[open..]) {
            Scan::NeedMore if is_final => Advance::Broken {
                end: region.len(),
                why: format!("truncated tool call: {name}.call( is not closed; not run"),
            },
            Scan::NeedMore => {
                if let Some(live) = &mut self.live {
                    live.advance(region, cx);
                }
                Advance::NeedMore
            }
            Scan::Fail(e) => Advance::Broken {
                end: open + self.scanner.consumed(),
                why: format!("{name}.call(...) is malformed, not run: {e}"),
            },
            Scan::Done(n) => {
                let end = open + n;
                let inner = region.get(open + 1..end - 1).unwrap_or("");
                let span = cx.span(0, end);
                match parse_args(name, inner, cx.ctx, FormatId::LLAMA3_BUILTIN, span.clone()) {
                    Ok(d) => {
                        let mut o = Outcome::default();
                        o.diagnostics
                            .extend(cx.ctx.unknown_name_warning(name, span.clone()));
                        o.drafts.push(d);
                        if let Some(live) = &mut self.live {
                            live.advance(region.get(..end).unwrap_or(""), cx);
                            let drafts = std::mem::take(&mut o.drafts);
                            live.finish(&drafts, span, &mut o, cx);
                            o.drafts = drafts;
                        }
                        Advance::Done { end, outcome: o }
                    }
                    Err(e) => Advance::Broken {
                        end,
                        why: format!("{name}.call(...) is malformed, not run: {e}"),
                    },
                }
            }
        }
    }
}
