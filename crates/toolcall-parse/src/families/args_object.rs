//! Shared reader for "JSON arguments after a name" (`<function=NAME>{…}`, `>>>NAME\n{…}`,
//! `[TOOL_CALLS]NAME[ARGS]{…}`): announces the call, forwards the raw JSON text as it
//! arrives (the fragments are the argument text the model wrote, so they decode to the
//! final arguments unless a repair was needed), finds the value's end resumably and
//! decodes it leniently. Families only word their own markup in the messages.

use std::ops::Range;

use serde_json::Value;
use toolcall_core::{Diagnostic, Repair};

use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Outcome, RawArgs, ReadCx, Scan, Scanner, parse_lenient};

/// The arguments value of one call, read as it streams.
pub(crate) struct ArgsObject {
    /// Region offset of the value's first byte (`{` or `[`).
    start: usize,
    scanner: Scanner,
    live: Option<RawArgs>,
}

/// What the bytes so far say about the value.
pub(crate) enum ArgsRead {
    NeedMore,
    /// The input ended inside the value.
    Truncated,
    /// Not JSON (or a repair could not read it); the markup ends at `end`.
    Malformed {
        end: usize,
        error: String,
    },
    /// The value is `region[start..end]`.
    Done {
        end: usize,
        value: Value,
        repairs: Vec<Repair>,
    },
}

impl ArgsObject {
    /// The value starting at `region[start]`. With `call` (name, id) the call is announced
    /// now and its arguments forwarded as they arrive (only for an object: a list is not
    /// one call's arguments).
    pub fn new(
        region: &str,
        start: usize,
        call: Option<(&str, Option<&str>)>,
        max_depth: usize,
        cx: &mut ReadCx<'_>,
    ) -> Self {
        let live = match call {
            Some((name, id)) if cx.streaming() && region.as_bytes().get(start) == Some(&b'{') => {
                cx.start_call(name, id);
                Some(RawArgs::new(start, max_depth))
            }
            _ => None,
        };
        ArgsObject {
            start,
            scanner: Scanner::new(max_depth, false),
            live,
        }
    }

    /// Reads the new bytes of `region`.
    pub fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> ArgsRead {
        if let Some(live) = &mut self.live {
            live.forward(region, cx);
        }
        let json = region.as_bytes().get(self.start..).unwrap_or(&[]);
        match self.scanner.advance(json) {
            Scan::NeedMore if is_final => ArgsRead::Truncated,
            Scan::NeedMore => ArgsRead::NeedMore,
            Scan::Fail(e) => ArgsRead::Malformed {
                end: self.start + self.scanner.consumed(),
                error: e.to_string(),
            },
            Scan::Done(n) => {
                let end = self.start + n;
                match parse_lenient(region.get(self.start..end).unwrap_or("")) {
                    Ok((value, repairs)) => ArgsRead::Done {
                        end,
                        value,
                        repairs,
                    },
                    Err(e) => ArgsRead::Malformed {
                        end,
                        error: e.to_string(),
                    },
                }
            }
        }
    }

    pub fn start(&self) -> usize {
        self.start
    }
}

/// The outcome of one named call whose arguments were read by [`ArgsObject`]: the draft
/// (spanning `region[..end]`), a warning for an unregistered name, and a note of the JSON
/// repairs made.
pub(crate) fn named_call(
    name: &str,
    id: Option<String>,
    format: FormatId,
    (value, repairs): (Value, Vec<Repair>),
    json: Range<usize>,
    end: usize,
    cx: &ReadCx<'_>,
) -> Outcome {
    let span = cx.span(0, end);
    let mut o = Outcome::default();
    o.diagnostics
        .extend(cx.ctx.unknown_name_warning(name, span.clone()));
    if !repairs.is_empty() {
        o.diagnostics
            .push(repaired(&repairs, cx.span(json.start, json.end)));
    }
    let mut d = Draft::new(name, Some(value), format);
    d.id = id;
    d.span = span;
    d.repairs = repairs;
    o.drafts.push(d);
    o
}

/// An info diagnostic naming the repairs made to a JSON text.
pub(crate) fn repaired(repairs: &[Repair], span: Range<usize>) -> Diagnostic {
    let kinds: Vec<&str> = repairs.iter().map(|r| r.kind.as_str()).collect();
    Diagnostic::info(format!("repaired JSON: {}", kinds.join(", ")), span)
}

/// The messages of a value that did not read, for markup shown as `what` (`<function=get>`).
pub(crate) fn truncated(what: &str) -> String {
    format!("truncated tool call: the arguments of {what} are not closed; not run")
}

pub(crate) fn malformed(what: &str, error: &str) -> String {
    format!("{what} arguments are malformed, not run: {error}")
}
