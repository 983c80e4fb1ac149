//! Shared reader for "JSON arguments after a name" (`<function=NAME>{…}`, `>>>NAME\n{…}`,
//! `[TOOL_CALLS]NAME[ARGS]{…}`): announces the call, forwards the raw JSON text as it
//! arrives (the fragments are the argument text the model wrote, so they decode to the
//! final arguments unless a repair was needed), finds the value's end resumably and
//! decodes it leniently. Families only word their own markup in the messages.

use std::ops::Range;

use serde_json::Value;
use toolcall_core::{CallId, Diagnostic, Repair};

use crate::FormatId;
use crate::builder::Draft;
use crate::family::{Advance, Outcome, RawArgs, ReadCx, Scan, ScanFrom, Scanner};
use crate::scanner::{SERDE_MAX_DEPTH, decode_calls_prefix, decode_prefix, is_json_blank};

use super::json::{CallObj, CallsDoc, Key};
use super::tags::{BlockStream, MAX_LEAD};

/// The arguments value of one call, read as it streams.
pub(crate) struct ArgsObject {
    /// Region offset of the value's first byte (`{` or `[`).
    start: usize,
    scanner: Scanner,
    max_depth: usize,
    live: Option<RawArgs>,
    /// Whether the caller already tried the one-shot decode ([`ArgsObject::decode_calls`]).
    tried: bool,
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

/// A read value: where it ends, the value, the repairs that made it JSON.
pub(crate) type ArgsValue = (usize, Value, Vec<Repair>);

impl ArgsRead {
    /// The value once read, or what the family's reader answers meanwhile: `NeedMore`, or
    /// `Broken` with the [`truncated`]/[`malformed`] messages for markup shown as `what()`
    /// (written only when needed: `advance` runs on every push).
    pub(crate) fn value_or_answer(
        self,
        region_len: usize,
        what: impl FnOnce() -> String,
    ) -> Result<ArgsValue, Advance> {
        match self {
            ArgsRead::NeedMore => Err(Advance::NeedMore),
            ArgsRead::Truncated => Err(Advance::Broken {
                end: region_len,
                why: truncated(&what()),
            }),
            ArgsRead::Malformed { end, error } => Err(Advance::Broken {
                end,
                why: malformed(&what(), &error),
            }),
            ArgsRead::Done {
                end,
                value,
                repairs,
            } => Ok((end, value, repairs)),
        }
    }
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
            max_depth,
            live,
            tried: false,
        }
    }

    /// The one-shot decode of [`ArgsObject::advance`] for a value that is likely a list of
    /// calls (`decode_calls_prefix`): where it ends and the value; `None` leaves the
    /// value to `advance`, which then only scans.
    pub fn decode_calls(
        &mut self,
        region: &str,
        cx: &ReadCx<'_>,
    ) -> Option<(usize, super::json::Decoded)> {
        if self.live.is_some() || cx.streaming() || self.scanner.consumed() != 0 || self.tried {
            return None;
        }
        self.tried = true;
        decode_calls_prefix(region.get(self.start..).unwrap_or(""), self.max_depth)
            .map(|(n, v)| (self.start + n, v))
    }

    /// Reads the new bytes of `region`.
    pub fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> ArgsRead {
        if let Some(live) = &mut self.live {
            live.forward(region, cx);
        }
        // One-shot, before the first scan: valid JSON is decoded in one pass.
        if self.live.is_none()
            && !cx.streaming()
            && self.scanner.consumed() == 0
            && !self.tried
            && let Some((n, value)) =
                decode_prefix(region.get(self.start..).unwrap_or(""), self.max_depth)
        {
            return ArgsRead::Done {
                end: self.start + n,
                value,
                repairs: Vec::new(),
            };
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
                // Recalling the last failure: a flood of one broken value reads the same
                // text once a region.
                match crate::repair::parse_lenient_recalling(
                    region.get(self.start..end).unwrap_or(""),
                ) {
                    Ok((value, repairs)) => ArgsRead::Done {
                        end,
                        value,
                        repairs,
                    },
                    Err(error) => ArgsRead::Malformed { end, error },
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
    d.id = id.map(CallId::from);
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

/// Ends the calls of a block body whose arguments are JSON, each closed by a marker
/// (DeepSeek's `<｜tool▁call▁end｜>`, Kimi's `<|tool_call_end|>`): a marker inside a JSON
/// string does not end the call. Bytes scanned for values that never close (a broken call
/// with an unbalanced quote) are bounded by the body's length in total, so a body of many
/// broken calls stays linear.
pub(crate) struct CallEnds {
    budget: usize,
    max_depth: usize,
}

impl CallEnds {
    pub(crate) fn new(body: &str, max_depth: usize) -> Self {
        CallEnds {
            budget: body.len(),
            max_depth,
        }
    }

    /// The offset in `s` of the `marker` that ends the call whose arguments are the JSON
    /// value starting at the first `{` from `from` on: the first marker after the value's
    /// end; the first marker at all when no value closes before the end (the call is then
    /// broken, its arguments not JSON).
    pub(crate) fn find(&mut self, s: &str, from: usize, marker: &str) -> Option<usize> {
        let plain = crate::family::find_from(s, marker, from)?;
        let Some(open) = s
            .get(from..plain)
            .and_then(|h| h.find('{'))
            .map(|i| from + i)
        else {
            return Some(plain);
        };
        let rest = s.as_bytes().get(open..).unwrap_or(&[]);
        let rest = rest.get(..rest.len().min(self.budget)).unwrap_or(&[]);
        let mut scanner = Scanner::new(self.max_depth, false);
        match scanner.advance(rest) {
            Scan::Done(n) => Some(crate::family::find_from(s, marker, open + n).unwrap_or(plain)),
            _ => {
                self.budget = self.budget.saturating_sub(scanner.consumed());
                Some(plain)
            }
        }
    }
}

/// A call's name and, when the markup carries one, its id.
pub(crate) type CallHead = (String, Option<String>);

/// How a block's calls are laid out when each holds a JSON arguments object after a head
/// naming the tool (DeepSeek V3/V3.1, Kimi K2, gpt-oss), for streaming the calls while the
/// block arrives (see [`super::tags::BlockReader::streaming_json`]).
pub(crate) struct JsonCallTags {
    /// Opens one call (`<｜tool▁call▁begin｜>`); empty: the block is one call.
    pub call: &'static str,
    /// The call's head (from after `call` to the arguments' `{`) → name and call id;
    /// `None`: not followed (the calls are then sent whole when the block closes).
    pub head: fn(&str) -> Option<CallHead>,
    /// Closes one call (`<｜tool▁call▁end｜>`); empty: the block is one call.
    pub call_end: &'static str,
}

enum JsonState {
    /// Looking for the next call from `from`.
    Call { from: ScanFrom },
    /// The call's head starts at `head`; its arguments at the first `{`.
    Head { head: usize, brace: ScanFrom },
    /// Forwarding the arguments.
    Args { raw: RawArgs },
    /// Looking for the call's end.
    End { find: ScanFrom },
}

/// The streaming side of a block of [`JsonCallTags`] calls: announces each call when its
/// head is complete and forwards its raw arguments text; every byte is looked at once.
pub(crate) struct LiveJson {
    tags: &'static JsonCallTags,
    state: JsonState,
    max_depth: usize,
    /// Calls announced (by the block's lead or here).
    calls: usize,
    /// The last announced call's arguments were forwarded whole.
    complete: bool,
    stopped: bool,
}

impl LiveJson {
    pub fn new(tags: &'static JsonCallTags, from: usize, max_depth: usize) -> Self {
        LiveJson {
            tags,
            state: JsonState::Call {
                from: ScanFrom(from),
            },
            max_depth,
            calls: 0,
            complete: false,
            stopped: false,
        }
    }

    /// Announces and forwards what the bytes so far complete; stops on anything it cannot
    /// follow (the rest is sent whole when the block closes).
    pub fn advance(&mut self, region: &str, lead_name: Option<&str>, cx: &mut ReadCx<'_>) {
        let tags = self.tags;
        while !self.stopped {
            match &mut self.state {
                JsonState::Call { from } => {
                    let head = if tags.call.is_empty() {
                        from.0
                    } else {
                        match from.find(region, tags.call) {
                            Some(at) => at + tags.call.len(),
                            None => return,
                        }
                    };
                    self.state = JsonState::Head {
                        head,
                        brace: ScanFrom(head),
                    };
                }
                JsonState::Head { head, brace } => {
                    let head = *head;
                    let Some(b) = brace.find(region, "{") else {
                        if region.len().saturating_sub(head) > MAX_LEAD {
                            self.stopped = true;
                        }
                        return;
                    };
                    let call = region
                        .get(head..b)
                        .filter(|h| h.len() <= MAX_LEAD)
                        .and_then(tags.head);
                    let Some((name, id)) = call else {
                        self.stopped = true;
                        return;
                    };
                    match (self.calls, lead_name) {
                        (0, Some(n)) if n != name => {
                            self.stopped = true;
                            return;
                        }
                        (0, Some(_)) => {}
                        _ => cx.start_call(&name, id.as_deref()),
                    }
                    self.calls += 1;
                    self.complete = false;
                    self.state = JsonState::Args {
                        raw: RawArgs::new(b, self.max_depth),
                    };
                }
                JsonState::Args { raw } => {
                    raw.forward(region, cx);
                    match raw.end() {
                        Some(end) => {
                            self.complete = true;
                            if tags.call_end.is_empty() {
                                self.stopped = true;
                                return;
                            }
                            self.state = JsonState::End {
                                find: ScanFrom(end),
                            };
                        }
                        None if raw.stopped() => {
                            self.stopped = true;
                            return;
                        }
                        None => return,
                    }
                }
                JsonState::End { find } => match find.find(region, tags.call_end) {
                    Some(at) => {
                        self.state = JsonState::Call {
                            from: ScanFrom(at + tags.call_end.len()),
                        };
                    }
                    None => return,
                },
            }
        }
    }
}

impl BlockStream for LiveJson {
    fn json(&self) -> bool {
        true
    }
    fn call_end(&self) -> Option<&'static str> {
        Some(self.tags.call_end)
    }
    fn advance(&mut self, region: &str, lead_name: Option<&str>, cx: &mut ReadCx<'_>) {
        LiveJson::advance(self, region, lead_name, cx);
    }

    fn calls(&self) -> usize {
        self.calls
    }

    /// What arrived with the closing tag is forwarded first; then the last announced
    /// call's arguments are sent whole when nothing of them was; a warning when they were
    /// cut (the finished call is authoritative).
    fn finish(
        &mut self,
        region: &str,
        lead_name: Option<&str>,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        LiveJson::advance(self, region, lead_name, cx);
        if self.calls == 0 || self.complete {
            return;
        }
        let sent = match &self.state {
            JsonState::Args { raw } => raw.sent_anything(),
            _ => false,
        };
        finish_unsent(sent, drafts.get(self.calls - 1), span, o, cx);
    }
}

/// Where a [`LiveList`] is.
enum ListState {
    /// Blanks, then `[` (a list of calls) or `{` (one call).
    Start,
    /// Looking for the next entry from here: blanks and a comma, then `{`, or `]`; the
    /// bytes between entries began at `sep`.
    Next { sep: usize, at: usize },
    /// An entry starts at `item`: waiting for its `{"name": "…", "arguments": {` prefix,
    /// whose last `{` is looked for from `brace`.
    Probe { item: usize, brace: usize },
    /// Forwarding the entry's arguments, which start at `args`.
    Args {
        item: usize,
        args: usize,
        raw: RawArgs,
    },
    /// The arguments were sent and ended at `at`: blanks and the entry's `}` are looked
    /// for from there (no scan of the entry again); anything else is scanned by `Rest`.
    Tail { item: usize, at: usize },
    /// The arguments were sent; waiting for the entry's end.
    Rest { item: usize, scanner: Scanner },
}

/// The calls of a [`LiveList`] as its stream read them, when its value is plain JSON of
/// the form `[{"name": "…", "arguments": {…}}, …]` (or one such object; `parameters` for
/// `arguments` too), for the reader that would otherwise decode the whole value again when
/// it closes ([`LiveList::built_calls`]).
struct Built {
    /// Whether the value is a list (else one object).
    list: bool,
    /// Region offset of the value's first byte (`[` or `{`).
    start: usize,
    entries: Vec<CallObj>,
    /// The open entry's name entry and its arguments' key.
    open: Option<((Key, Value), Key)>,
    /// Region offset just past the value, once it closed.
    end: Option<usize>,
}

/// Streams calls written as JSON `{"name": …, "arguments": {…}}` objects, one or a list of
/// them, behind a marker (Nemotron, `<tool_calls>`, LongCat, InternLM, Granite,
/// `functools`): announces each entry once its canonical prefix shows the name, then
/// forwards its raw arguments text. An entry written otherwise (keys in another order)
/// stops the streaming: it and the entries after it are sent whole when the block ends.
/// Not for lists whose entries carry their own ids after the arguments (Mistral's
/// `[TOOL_CALLS][…]`): a call announced before its id arrives finishes under the
/// announced id, so such a list is sent whole to keep the id it gives.
pub(crate) struct LiveList {
    /// How an entry names its call (`None`: `{"NAME": {…}}`).
    keys: Option<&'static EntryKeys>,
    from: usize,
    state: ListState,
    max_depth: usize,
    calls: usize,
    complete: bool,
    stopped: bool,
    /// The calls read so far, while the value is plain JSON and the reader asked for them
    /// ([`LiveList::building`]).
    built: Option<Built>,
}

impl LiveList {
    /// A list or object starting after blanks at region offset `from`, its entries
    /// `{"name": "…", "arguments": {…}}`.
    pub fn new(from: usize, max_depth: usize) -> Self {
        Self::with_keys(from, max_depth, Some(&NAME_ARGUMENTS))
    }

    /// The same with entries keyed as `keys` says (`None`: `{"NAME": {…}}`).
    pub fn with_keys(from: usize, max_depth: usize, keys: Option<&'static EntryKeys>) -> Self {
        LiveList {
            keys,
            from,
            state: ListState::Start,
            max_depth,
            calls: 0,
            complete: false,
            stopped: false,
            built: None,
        }
    }

    /// The same, keeping each entry's name and decoded arguments as they close, for
    /// [`LiveList::built_calls`] (a reader that decodes the value whole when it closes).
    pub fn building(from: usize, max_depth: usize) -> Self {
        let mut live = Self::new(from, max_depth);
        live.built = Some(Built {
            list: false,
            start: 0,
            entries: Vec::new(),
            open: None,
            end: None,
        });
        live
    }

    /// The value `region[start..end]` as decoding its text gives it (the typed decode of
    /// call objects, [`CallsDoc`]), built from what the stream read: `Some` only when the
    /// stream read it whole as plain JSON (no repair, each entry exactly its name and
    /// arguments keys, nested within what `serde_json` decodes) and it is not empty.
    /// Taken: a second call answers `None`.
    pub fn built_calls(&mut self, start: usize, end: usize) -> Option<CallsDoc> {
        let mut b = self.built.take()?;
        if b.start != start || b.end != Some(end) || b.entries.is_empty() || b.open.is_some() {
            return None;
        }
        if b.list {
            Some(CallsDoc::Many(b.entries))
        } else if b.entries.len() == 1 {
            b.entries.pop().map(|o| CallsDoc::One(Box::new(o)))
        } else {
            None
        }
    }

    pub fn advance(&mut self, region: &str, cx: &mut ReadCx<'_>) {
        let bytes = region.as_bytes();
        while !self.stopped {
            match &mut self.state {
                ListState::Start => {
                    let rest = bytes.get(self.from..).unwrap_or(&[]);
                    let Some(i) = rest.iter().position(|b| !b.is_ascii_whitespace()) else {
                        if rest.len() > MAX_LEAD {
                            self.stopped = true;
                        }
                        return;
                    };
                    let at = self.from + i;
                    if let Some(b) = &mut self.built {
                        b.start = at;
                        b.list = bytes[at] == b'[';
                    }
                    self.state = match bytes[at] {
                        b'[' => ListState::Next {
                            sep: at + 1,
                            at: at + 1,
                        },
                        b'{' => ListState::Probe {
                            item: at,
                            brace: at + 1,
                        },
                        _ => {
                            self.stopped = true;
                            return;
                        }
                    };
                }
                ListState::Next { sep, at } => {
                    while bytes
                        .get(*at)
                        .is_some_and(|b| b.is_ascii_whitespace() || *b == b',')
                    {
                        *at += 1;
                    }
                    let Some(&b) = bytes.get(*at) else {
                        return;
                    };
                    if let Some(built) = &mut self.built
                        && built.list
                    {
                        // Plain JSON between entries: blanks, and one comma after an entry.
                        let between = bytes.get(*sep..*at).unwrap_or(&[]);
                        let commas = between.iter().filter(|&&c| c == b',').count();
                        let want = usize::from(!built.entries.is_empty() && b == b'{');
                        if commas != want || !between.iter().all(|&c| c == b',' || is_json_blank(c))
                        {
                            self.built = None;
                        } else if b == b']' {
                            built.end = Some(*at + 1);
                        }
                    }
                    if b == b'{' {
                        self.state = ListState::Probe {
                            item: *at,
                            brace: *at + 1,
                        };
                    } else {
                        // `]` or something else: nothing more to stream.
                        self.stopped = true;
                        return;
                    }
                }
                ListState::Probe { item, brace } => {
                    let item = *item;
                    // A prefix ends with the arguments' `{` (`probe_entry` answers `Yes`
                    // only then, and what it answers of a prefix holds for every longer
                    // one): until a `{` after the entry's own arrives it is not read
                    // again (it was read on every push, ~14 % of sarashina/small).
                    match bytes.get(*brace..).and_then(|t| memchr::memchr(b'{', t)) {
                        // Looked for after this one next time.
                        Some(i) => *brace += i + 1,
                        None => {
                            *brace = bytes.len();
                            return;
                        }
                    }
                    let entry = bytes.get(item..).unwrap_or(&[]);
                    // The canonical prefix is read in one pass; anything else by the
                    // general probe and, while the value may be built, `plain_prefix`.
                    let (name, off, plain) =
                        match self.keys.and_then(|k| canonical_prefix(entry, k)) {
                            Some((name, off, args_key)) => (name, off, Some((Key::Name, args_key))),
                            None => match probe_entry(entry, self.keys) {
                                Probe::NeedMore => return,
                                Probe::No => {
                                    self.stopped = true;
                                    return;
                                }
                                Probe::Yes(name, off) => {
                                    let plain = self.built.as_ref().and_then(|_| {
                                        plain_prefix(entry.get(..=off).unwrap_or(&[]), self.keys)
                                    });
                                    (name, off, plain)
                                }
                            },
                        };
                    cx.start_call(&name, None);
                    self.calls += 1;
                    self.complete = false;
                    if let Some(b) = &mut self.built {
                        match plain {
                            Some((name_key, args_key)) => {
                                b.open = Some(((name_key, Value::String(name)), args_key));
                            }
                            None => self.built = None,
                        }
                    }
                    self.state = ListState::Args {
                        item,
                        args: item + off,
                        raw: RawArgs::new(item + off, self.max_depth),
                    };
                }
                ListState::Args { item, args, raw } => {
                    raw.forward(region, cx);
                    let Some(end) = raw.end() else {
                        if raw.stopped() {
                            self.stopped = true;
                        }
                        return;
                    };
                    self.complete = true;
                    // A scan of the whole entry from its `{` has one bracket more open
                    // than the arguments' own: at the bound it fails there.
                    if raw.peak_depth() >= self.max_depth {
                        self.stopped = true;
                        return;
                    }
                    if let Some(b) = &mut self.built {
                        let args = region.get(*args..end).unwrap_or("");
                        // A list and an entry around the arguments: `serde_json` decodes
                        // the whole value only when they fit its recursion limit too.
                        match (raw.peak_depth() + 2 <= SERDE_MAX_DEPTH)
                            .then(|| simple_json(args).or_else(|| serde_json::from_str(args).ok()))
                            .flatten()
                        {
                            Some(v) => {
                                if let Some((name, key)) = b.open.take() {
                                    b.entries.push(CallObj::pair(name, (key, v)));
                                }
                            }
                            None => self.built = None,
                        }
                    }
                    self.state = ListState::Tail {
                        item: *item,
                        at: end,
                    };
                }
                ListState::Tail { item, at } => {
                    while bytes.get(*at).is_some_and(|&b| is_json_blank(b)) {
                        *at += 1;
                    }
                    match bytes.get(*at) {
                        None => return,
                        Some(b'}') => {
                            let end = *at + 1;
                            if let Some(b) = &mut self.built
                                && !b.list
                            {
                                b.end = Some(end);
                            }
                            self.state = ListState::Next { sep: end, at: end };
                        }
                        Some(_) => {
                            // Something else follows the arguments (another key, a
                            // comment): the entry's scan resumes after them.
                            self.built = None;
                            let scanner =
                                Scanner::after_value_in_object(self.max_depth, *at - *item);
                            self.state = ListState::Rest {
                                item: *item,
                                scanner,
                            };
                        }
                    }
                }
                ListState::Rest { item, scanner } => {
                    match scanner.advance(bytes.get(*item..).unwrap_or(&[])) {
                        Scan::NeedMore => return,
                        Scan::Fail(_) => {
                            self.stopped = true;
                            return;
                        }
                        // Objects may follow one per line (Cohere) as entries of a list do.
                        Scan::Done(n) => {
                            let end = *item + n;
                            self.state = ListState::Next { sep: end, at: end };
                        }
                    }
                }
            }
        }
    }

    /// The value ended with `drafts`: the last announced call's arguments are sent whole
    /// when nothing of them was; a warning when they were cut.
    pub fn finish(
        &mut self,
        region: &str,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        self.advance(region, cx);
        if self.calls == 0 || self.complete {
            return;
        }
        let sent = match &self.state {
            ListState::Args { raw, .. } => raw.sent_anything(),
            _ => false,
        };
        finish_unsent(sent, drafts.get(self.calls - 1), span, o, cx);
    }

    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Whether the stream sends nothing more until a bracket arrives (`{`, `}`, `[`, `]`):
    /// stopped, or between its arguments (an entry's prefix waits for its arguments' `{`,
    /// the bytes after them for the entry's `}` and the next entry's `{`), where any other
    /// byte is read with the next bracket as it would be now (no event either way).
    pub fn quiet(&self) -> bool {
        self.stopped || !matches!(self.state, ListState::Start | ListState::Args { .. })
    }
}

/// The keys of an entry's prefix that [`probe_entry`] read (`{` to the arguments' `{`
/// included) when it is plain JSON holding only the name and the arguments keys, in that
/// order, each a call object key: `(name key, arguments key)`.
fn plain_prefix(s: &[u8], keys: Option<&EntryKeys>) -> Option<(Key, Key)> {
    let keys = keys?;
    let mut c = Plain { s, i: 0 };
    c.token(b'{')?;
    let name_key = c.string()?;
    c.token(b':')?;
    c.string()?;
    c.token(b',')?;
    let args_key = c.string()?;
    c.token(b':')?;
    c.token(b'{')?;
    if c.i != s.len() {
        return None;
    }
    let is = |list: &[&str], key: &[u8]| list.iter().any(|k| k.as_bytes() == key);
    if !is(keys.name, name_key) || !is(keys.args, args_key) {
        return None;
    }
    Some((call_key(name_key)?, call_key(args_key)?))
}

/// `{"name": "…", "arguments": {` (or `"parameters"`) exactly, JSON blanks between the
/// tokens, the name a non-empty string of at most 257 bytes with no escape and no control
/// byte, when `keys` reads it so: what [`probe_entry`] answers `Yes` for and
/// [`plain_prefix`] takes, read in one pass: `(name, offset of the arguments' '{', the
/// arguments' key)`. `None`: anything else (a prefix cut short too), left to those two,
/// which read such a prefix in turn at ~1.3 k instructions an entry (sarashina/small).
fn canonical_prefix(s: &[u8], keys: &EntryKeys) -> Option<(String, usize, Key)> {
    let has = |list: &[&str], key: &str| list.contains(&key);
    // `probe_entry` tries the arguments keys first, then the name keys.
    if s.first() != Some(&b'{') || has(keys.args, "name") || !has(keys.name, "name") {
        return None;
    }
    let blanks = |mut i: usize| {
        while s.get(i).is_some_and(|&b| is_json_blank(b)) {
            i += 1;
        }
        i
    };
    let mut i = blanks(1);
    let rest = s.get(i..)?;
    if !rest.starts_with(br#""name""#) {
        return None;
    }
    i = blanks(i + 6);
    if s.get(i) != Some(&b':') {
        return None;
    }
    i = blanks(i + 1);
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let from = i + 1;
    let value = s.get(from..)?;
    let len = value
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    // `probe_entry` looks for the closing quote in the 258 bytes after the opening one.
    if len == 0 || len > 257 || value[len] != b'"' {
        return None;
    }
    let name = std::str::from_utf8(&value[..len]).ok()?;
    i = blanks(from + len + 1);
    if s.get(i) != Some(&b',') {
        return None;
    }
    i = blanks(i + 1);
    let rest = s.get(i..)?;
    let (key, n) = if rest.starts_with(br#""arguments""#) {
        (Key::Arguments, 11)
    } else if rest.starts_with(br#""parameters""#) {
        (Key::Parameters, 12)
    } else {
        return None;
    };
    if !has(keys.args, if n == 11 { "arguments" } else { "parameters" }) {
        return None;
    }
    i = blanks(i + n);
    if s.get(i) != Some(&b':') {
        return None;
    }
    i = blanks(i + 1);
    (s.get(i) == Some(&b'{')).then(|| (name.to_owned(), i, key))
}

/// `serde_json::from_str::<Value>(text)` for the values most arguments are: objects and
/// lists (nested at most [`SIMPLE_DEPTH`] deep) of strings with no escape, integers from 0
/// to 18 digits, `true`, `false`, `null`, JSON blanks between tokens; `None` for anything
/// else (which `serde_json` then decodes, or refuses), never a value `serde_json` would not
/// give. Each streamed entry's arguments are decoded once as they close; `serde_json`'s
/// own decode of them was ~2.6 k instructions an entry of sarashina/small.
fn simple_json(text: &str) -> Option<Value> {
    let mut c = Simple {
        text,
        s: text.as_bytes(),
        i: 0,
    };
    let v = c.value(0)?;
    c.blanks();
    (c.i == c.s.len()).then_some(v)
}

/// How deep [`simple_json`] nests before it leaves a value to `serde_json`.
const SIMPLE_DEPTH: usize = 16;

/// A cursor for [`simple_json`].
struct Simple<'a> {
    text: &'a str,
    s: &'a [u8],
    i: usize,
}

impl Simple<'_> {
    fn blanks(&mut self) {
        while self.s.get(self.i).is_some_and(|&b| is_json_blank(b)) {
            self.i += 1;
        }
    }

    /// Blanks, then the byte there, taken.
    fn next(&mut self) -> Option<u8> {
        self.blanks();
        let b = *self.s.get(self.i)?;
        self.i += 1;
        Some(b)
    }

    /// A string after its opening quote: no escape, no control byte.
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        let len = self
            .s
            .get(start..)?
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if self.s[start + len] != b'"' {
            return None;
        }
        self.i = start + len + 1;
        // The quotes are ASCII: `start..start + len` lies on char boundaries.
        self.text.get(start..start + len).map(str::to_owned)
    }

    fn literal(&mut self, rest: &[u8], v: Value) -> Option<Value> {
        let end = self.i + rest.len();
        (self.s.get(self.i..end)? == rest).then(|| {
            self.i = end;
            v
        })
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.next()? {
            b'"' => self.string().map(Value::String),
            b'{' if depth < SIMPLE_DEPTH => {
                let mut map = serde_json::Map::new();
                self.blanks();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Some(Value::Object(map));
                }
                loop {
                    if self.next()? != b'"' {
                        return None;
                    }
                    let key = self.string()?;
                    if self.next()? != b':' {
                        return None;
                    }
                    let v = self.value(depth + 1)?;
                    map.insert(key, v);
                    match self.next()? {
                        b',' => {}
                        b'}' => return Some(Value::Object(map)),
                        _ => return None,
                    }
                }
            }
            b'[' if depth < SIMPLE_DEPTH => {
                let mut list = Vec::new();
                self.blanks();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(Value::Array(list));
                }
                loop {
                    list.push(self.value(depth + 1)?);
                    match self.next()? {
                        b',' => {}
                        b']' => return Some(Value::Array(list)),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"rue", Value::Bool(true)),
            b'f' => self.literal(b"alse", Value::Bool(false)),
            b'n' => self.literal(b"ull", Value::Null),
            d @ b'0'..=b'9' => {
                let start = self.i - 1;
                let mut n = u64::from(d - b'0');
                while let Some(&b) = self.s.get(self.i).filter(|b| b.is_ascii_digit()) {
                    n = n * 10 + u64::from(b - b'0');
                    self.i += 1;
                    // Longer integers, and `0` before a digit, are left to `serde_json`.
                    if self.i - start > 18 || d == b'0' {
                        return None;
                    }
                }
                // A fraction or an exponent: a float, left to `serde_json`.
                if matches!(self.s.get(self.i), Some(b'.' | b'e' | b'E')) {
                    return None;
                }
                Some(Value::Number(n.into()))
            }
            _ => None,
        }
    }
}

/// The call object key written `key` ([`Key`]'s own spelling).
fn call_key(key: &[u8]) -> Option<Key> {
    Some(match key {
        b"name" => Key::Name,
        b"arguments" => Key::Arguments,
        b"parameters" => Key::Parameters,
        _ => return None,
    })
}

/// A cursor over a JSON prefix that takes only plain JSON (for [`plain_prefix`]).
struct Plain<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Plain<'a> {
    /// JSON blanks, then `want`.
    fn token(&mut self, want: u8) -> Option<()> {
        while self.s.get(self.i).is_some_and(|&b| is_json_blank(b)) {
            self.i += 1;
        }
        let ok = self.s.get(self.i) == Some(&want);
        self.i += 1;
        ok.then_some(())
    }

    /// A string with no escape and no raw control byte (which JSON refuses).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.token(b'"')?;
        let start = self.i;
        let len = self.s.get(start..)?.iter().position(|&b| b == b'"')?;
        self.i = start + len + 1;
        let text = self.s.get(start..start + len)?;
        text.iter()
            .all(|&b| b >= 0x20 && b != b'\\')
            .then_some(text)
    }
}

impl BlockStream for LiveList {
    fn json(&self) -> bool {
        true
    }
    fn advance(&mut self, region: &str, _lead_name: Option<&str>, cx: &mut ReadCx<'_>) {
        LiveList::advance(self, region, cx);
    }

    fn calls(&self) -> usize {
        self.calls
    }

    fn finish(
        &mut self,
        region: &str,
        _lead_name: Option<&str>,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        LiveList::finish(self, region, drafts, span, o, cx);
    }
}

/// The last announced call (`last`) did not get its arguments forwarded whole: sent whole
/// now when nothing was sent, else a warning that what was sent is cut.
fn finish_unsent(
    sent_anything: bool,
    last: Option<&Draft>,
    span: Range<usize>,
    o: &mut Outcome,
    cx: &mut ReadCx<'_>,
) {
    if last.is_some_and(|d| d.broken.is_some()) {
        // A broken call never finishes: nothing more is sent for it.
        return;
    }
    if sent_anything {
        o.diagnostics.push(Diagnostic::warning(
            format!(
                "arguments streamed for {:?} are cut; the finished call is authoritative",
                last.map_or("", |d| d.name.as_str())
            ),
            span,
        ));
    } else if let Some(args) = last.and_then(|d| d.args.as_ref()) {
        cx.arguments(&args.to_string());
    }
}

/// The keys of a call entry written as a JSON object, for announcing it from its prefix.
pub(crate) struct EntryKeys {
    /// Keys whose string value is the tool's name.
    pub name: &'static [&'static str],
    /// Keys whose object value is the arguments.
    pub args: &'static [&'static str],
    /// Other string-valued keys that may come first (ignored).
    pub skip: &'static [&'static str],
}

/// `{"name": "…", "arguments": {` (or `"parameters"`): the canonical call object.
pub(crate) const NAME_ARGUMENTS: EntryKeys = EntryKeys {
    name: &["name"],
    args: &["arguments", "parameters"],
    skip: &[],
};

/// What the start of a call entry says, for announcing the call while it streams.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    NeedMore,
    /// Not a prefix this reader follows: the entry is sent whole.
    No,
    /// The name, and the offset of the arguments object's `{`.
    Yes(String, usize),
}

/// An entry's prefix is read from at most this many bytes; past that it is sent whole.
const MAX_PROBE: usize = 512;

/// Reads the prefix of a call entry up to its arguments' `{`: with `keys`, string keys
/// (the name among them) then the arguments key; without, `{"NAME": {` (the key is the
/// name). `Yes(name, offset of the arguments' '{')`.
pub(crate) fn probe_entry(s: &[u8], keys: Option<&EntryKeys>) -> Probe {
    let mut c = Cursor { s, i: 0 };
    let mut name: Option<&str> = None;
    macro_rules! step {
        ($e:expr) => {
            match $e {
                Some(true) => {}
                Some(false) => return Probe::No,
                None if s.len() > MAX_PROBE => return Probe::No,
                None => return Probe::NeedMore,
            }
        };
    }
    step!(c.byte(b'{'));
    loop {
        step!(c.byte(b'"'));
        let key = match c.string() {
            Some(Some(k)) => k,
            Some(None) => return Probe::No,
            None if s.len() > MAX_PROBE => return Probe::No,
            None => return Probe::NeedMore,
        };
        step!(c.byte(b':'));
        let Some(keys) = keys else {
            step!(c.byte(b'{'));
            return match std::str::from_utf8(key) {
                Ok(n) if !n.is_empty() => Probe::Yes(n.to_owned(), c.i - 1),
                _ => Probe::No,
            };
        };
        // Compared as bytes: a key between two quotes of the region's text is its text.
        let is = |list: &[&str]| list.iter().any(|k| k.as_bytes() == key);
        if is(keys.args) {
            step!(c.byte(b'{'));
            return match name {
                Some(n) => Probe::Yes(n.to_owned(), c.i - 1),
                None => Probe::No,
            };
        }
        let names = is(keys.name);
        if !names && !is(keys.skip) {
            return Probe::No;
        }
        step!(c.byte(b'"'));
        let value = match c.string() {
            Some(Some(v)) => v,
            Some(None) => return Probe::No,
            None if s.len() > MAX_PROBE => return Probe::No,
            None => return Probe::NeedMore,
        };
        if names {
            match std::str::from_utf8(value) {
                Ok(n) if !n.is_empty() => name = Some(n),
                _ => return Probe::No,
            }
        }
        step!(c.byte(b','));
    }
}

/// A cursor over a JSON prefix: blanks are skipped before each token.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Blanks then `want`: `None` when the input ends first.
    fn byte(&mut self, want: u8) -> Option<bool> {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
        let b = *self.s.get(self.i)?;
        self.i += 1;
        Some(b == want)
    }

    /// The rest of a string after its opening quote: `Some(None)` for one this prefix
    /// reader does not take (an escape, or longer than a name may be: no closing quote in
    /// its first 258 bytes).
    fn string(&mut self) -> Option<Option<&'a [u8]>> {
        let rest = self.s.get(self.i..)?;
        let window = rest.get(..rest.len().min(258)).unwrap_or(rest);
        match window.iter().position(|&b| b == b'"' || b == b'\\') {
            Some(j) if rest[j] == b'"' => {
                self.i += j + 1;
                Some(rest.get(..j))
            }
            Some(_) => Some(None),
            None if rest.len() > 257 => Some(None),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A push that the reader of a JSON list behind a marker is not called for (no bracket
    /// while its stream is quiet, `LiveList::quiet`) delays nothing: after every push of
    /// every size, the calls announced and finished and the fragments sent are those of the
    /// same pushes each read (`marked::READ_EVERY_PUSH`).
    #[test]
    fn open_list_pushes_that_wake_nothing_delay_nothing() {
        use crate::ParseOptions;
        use crate::stream_replay::stream_in_char_pushes;
        use toolcall_core::StreamEvent;
        let o = ParseOptions::default();
        let texts = [
            r#"Sure. <|tool_calls|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}, {"name": "get_time", "arguments": {}}] ok"#,
            r#"<|tool_call|>[ {"name" : "a", "parameters": {"q": "x]}"}} , {"name": "b", "arguments": {"r": {"s": null}}, "id": "c1"}, {"id": "2", "name": "c", "arguments": {}} ]"#,
            r#"<|tool_calls|>[{'name': 'a', 'arguments': {'x': True}}, {"name": "b", "arguments": {"y": 1 /* } */}}] x"#,
            r#"functools[{"name": "a", "arguments": {"x": "{[}]"}}, {"name": "b" "arguments": {}}]"#,
            r#"<|tool_call|>{"name": "a", "arguments": {"x": 1}} and more"#,
            r#"<|tool_calls|>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": ]}}]"#,
            r#"<|tool_calls|>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "argu"#,
            r#"<|tool_calls|>[{"name": "a", "arguments": {"x": "long text, no bracket", "y": 1]}]"#,
            r#"<|tool_calls|>[{"name": "a", "arguments": {"x": "a", "y": {"z": "b"}, "w": [1, "c"]}}, {"name": "b", "arguments": {"q": "r"}]"#,
        ]
        .map(str::to_owned)
        .into_iter()
        // Nested up to the bound (128) and past it inside the arguments.
        .chain([124, 125, 126, 127].map(|k| {
            format!(
                r#"<|tool_calls|>[{{"name": "a", "arguments": {{"x": "text", "y": {}1{}}}}}] ok"#,
                "[".repeat(k),
                "]".repeat(k)
            )
        }));
        // After each push: calls announced and finished so far, each call's fragments, the
        // text and the diagnostics so far.
        let replay = |text: &str, n: usize| {
            let mut at = Vec::new();
            let (mut finished, mut sent) = (0, Vec::<String>::new());
            let (mut shown, mut said) = (String::new(), 0);
            stream_in_char_pushes(text, &o, n, |pushed, events| {
                for e in events {
                    match e {
                        StreamEvent::CallStarted { .. } => sent.push(String::new()),
                        StreamEvent::ArgumentsDelta { index, fragment } => {
                            sent[*index].push_str(fragment)
                        }
                        StreamEvent::CallFinished { .. } => finished += 1,
                        StreamEvent::Text { text } => shown.push_str(text),
                        StreamEvent::Diagnostic { .. } => said += 1,
                        _ => {}
                    }
                }
                at.push((pushed, finished, sent.clone(), shown.clone(), said));
            });
            at
        };
        let every = |read: bool| super::super::marked::READ_EVERY_PUSH.with(|c| c.set(read));
        for text in texts {
            for n in 1..=12 {
                every(true);
                let want = replay(&text, n);
                every(false);
                let got = replay(&text, n);
                assert_eq!(got, want, "{text:?} in {n}-char pushes");
            }
        }
    }

    /// A JSON list behind a marker with no closing marker (Sarashina, Granite, `functools`)
    /// builds its calls from what its stream read when the list is plain JSON, else decodes
    /// it whole: streamed in pushes of every size it equals one-shot either way, and the
    /// arguments sent are the calls' arguments.
    #[test]
    fn streamed_open_lists_equal_one_shot() {
        use crate::ParseOptions;
        use crate::stream_replay::{one_shot, stream_in_char_pushes};
        let nest = |k: usize| format!("{}1{}", "{\"a\": ".repeat(k), "}".repeat(k));
        let bodies = [
            r#"[{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, {"u": null}]}}, {"name": "get_time", "arguments": {}}]"#.to_owned(),
            r#"{"name": "get_weather", "arguments": {"city": "Kyiv"}}"#.to_owned(),
            r#"[ {"name":"a","parameters":{"q":"x}"}} ,{"name": "b",  "arguments" : {"r": "é"}} ]"#.to_owned(),
            r#"[{'name': 'a', 'arguments': {'x': True}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {"x": 'y'}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {"x": 1 /* c */}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {}, "id": "c1"}, {"name": "b", "arguments": {}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {}},]"#.to_owned(),
            r#"[{"name": "a", "arguments": {}},, {"name": "b", "arguments": {}}]"#.to_owned(),
            "[{\"name\":\u{c} \"a\", \"arguments\": {}}]".to_owned(),
            "[{\"name\": \"a\tb\", \"arguments\": {}}]".to_owned(),
            r#"[{"name": "a\u0062", "arguments": {}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": "{}"}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {}} {"name": "b", "arguments": {}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {}}, 7]"#.to_owned(),
            "[]".to_owned(),
            r#"[{"name": "a", "arguments": {"x": ]}}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {"x": 1}]"#.to_owned(),
            r#"[{"name": "a", "arguments": {"x": 1}}"#.to_owned(),
            // Nested to `serde_json`'s bound and the parse's own (128) around it.
            format!(r#"[{{"name": "a", "arguments": {}}}]"#, nest(124)),
            format!(r#"[{{"name": "a", "arguments": {}}}]"#, nest(125)),
            format!(r#"[{{"name": "a", "arguments": {}}}]"#, nest(126)),
            format!(r#"[{{"name": "a", "arguments": {}}}]"#, nest(127)),
            format!(r#"{{"name": "a", "arguments": {}}}"#, nest(126)),
            format!(r#"{{"name": "a", "arguments": {}}}"#, nest(127)),
        ];
        let o = ParseOptions::default();
        for body in &bodies {
            for open in ["<|tool_calls|>", "<|tool_call|>", "functools"] {
                if open == "functools" && !body.starts_with('[') {
                    continue;
                }
                let text = format!("{open}{body} done");
                let want = one_shot(&text, &o);
                // Repaired arguments are sent as written (the finished call is the
                // repaired value).
                let plain = serde_json::from_str::<Value>(body).is_ok();
                for n in [1, 2, 3, 4, 7, 64] {
                    let got = stream_in_char_pushes(&text, &o, n, |_, _| {});
                    let context = format!("{text:?} in {n}-char pushes");
                    got.assert_equals_one_shot(&want, plain, false, &context);
                }
            }
        }
    }

    static COHERE: EntryKeys = EntryKeys {
        name: &["tool_name"],
        args: &["parameters"],
        skip: &["tool_call_id"],
    };

    #[test]
    fn entry_prefixes_name_the_call() {
        let full = br#"{"tool_call_id": "0", "tool_name": "get", "parameters": {"a": 1}}"#;
        for cut in 0..full.len() {
            let p = probe_entry(&full[..cut], Some(&COHERE));
            assert!(
                matches!(p, Probe::NeedMore | Probe::Yes(..)),
                "{cut}: {p:?}"
            );
        }
        assert_eq!(
            probe_entry(full, Some(&COHERE)),
            Probe::Yes("get".into(), 56)
        );
        assert_eq!(
            probe_entry(br#" { "get_time" : {}}"#, None),
            Probe::Yes("get_time".into(), 16)
        );
        // The name after the arguments, an unknown key, an escaped name: sent whole.
        let no = [
            &br#"{"arguments": {}, "name": "x"}"#[..],
            br#"{"id": "1", "name": "x", "arguments": {}}"#,
            br#"{"name": "a\"b", "arguments": {}}"#,
            br#"{"name": "x", "arguments": []}"#,
        ];
        for s in no {
            assert_eq!(probe_entry(s, Some(&NAME_ARGUMENTS)), Probe::No, "{s:?}");
        }
        let long = format!("{{\"name\": \"{}", "x".repeat(600));
        assert_eq!(
            probe_entry(long.as_bytes(), Some(&NAME_ARGUMENTS)),
            Probe::No
        );
    }

    /// The one-pass read of the canonical prefix answers what `probe_entry` and
    /// `plain_prefix` answer in turn wherever it answers, and answers for the canonical
    /// prefixes (blanks, both arguments keys, a name of 257 bytes and a non-ASCII one); it
    /// leaves alone what they refuse or read otherwise (an escape, a control byte, a form
    /// feed, a name of 258 bytes, other keys, keys it does not know, a cut prefix).
    #[test]
    fn canonical_prefix_reads_what_probe_and_plain_prefix_read() {
        let n257 = "x".repeat(257);
        let n258 = "x".repeat(258);
        let yes = [
            r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#.to_owned(),
            r#"{"name":"f","parameters":{}}"#.to_owned(),
            "{ \"name\"\t:\r\n \"caf\u{e9} \u{1f600}\" ,\n\"arguments\" : {}".to_owned(),
            format!(r#"{{"name": "{n257}", "arguments": {{}}}}"#),
        ];
        let no = [
            r#"{"name": "a\"b", "arguments": {}}"#.to_owned(),
            "{\"name\": \"a\u{1}b\", \"arguments\": {}}".to_owned(),
            "{\"name\":\u{c} \"f\", \"arguments\": {}}".to_owned(),
            format!(r#"{{"name": "{n258}", "arguments": {{}}}}"#),
            r#"{"name": "", "arguments": {}}"#.to_owned(),
            r#"{"id": "1", "name": "x", "arguments": {}}"#.to_owned(),
            r#"{"arguments": {}, "name": "x"}"#.to_owned(),
            r#"{"name": "x", "arguments": []}"#.to_owned(),
            r#" {"name": "x", "arguments": {}}"#.to_owned(),
        ];
        let keys = [&NAME_ARGUMENTS, &COHERE];
        let mut answered = 0;
        for (i, s) in yes.iter().chain(&no).enumerate() {
            for cut in 0..=s.len() {
                let p = &s.as_bytes()[..cut];
                for k in keys {
                    let Some((name, off, key)) = canonical_prefix(p, k) else {
                        continue;
                    };
                    answered += 1;
                    assert!(i < yes.len(), "{s:?} {cut}");
                    assert_eq!(probe_entry(p, Some(k)), Probe::Yes(name.clone(), off));
                    let plain = plain_prefix(&p[..=off], Some(k));
                    assert!(
                        matches!(plain, Some((Key::Name, a)) if a == key),
                        "{s:?} {cut}"
                    );
                }
            }
            if i < yes.len() {
                let cut = s.rfind('{').map_or(0, |b| b + 1);
                let got = canonical_prefix(&s.as_bytes()[..cut], &NAME_ARGUMENTS);
                assert!(got.is_some(), "{s:?}");
            }
        }
        assert!(answered > 0);
    }

    /// `simple_json` gives what `serde_json` gives wherever it answers, and answers for the
    /// usual arguments; generated values (and each with a byte changed) cover escapes,
    /// control bytes, floats, long and leading-zero integers, blanks, nesting past its bound.
    #[test]
    fn simple_json_decodes_as_serde_json() {
        let mut cases: Vec<String> = [
            r#"{"city": "Paris", "unit": "celsius", "days": 3}"#,
            r#"{"action": "left_click", "coordinate": [512, 0]}"#,
            "{ \"a\" :[ true,false , null,{},[] ,\"caf\u{e9}\"] }",
            "{\"a\":\n\t\r 1}",
            r#"{"a": "x", "a": "y", "b": 1}"#,
            r#"{"n": 123456789012345678}"#,
            r#"{"n": 1234567890123456789}"#,
            r#"{"n": 18446744073709551616}"#,
            r#"{"n": 01}"#,
            r#"{"n": 0, "m": -1, "f": 1.5, "e": 1e3, "E": 2E1}"#,
            r#"{"s": "a\"b", "t": "a\\b"}"#,
            "{\"s\": \"a\u{1}b\"}",
            "{\"s\":\u{c}1}",
            r#"{"a": tru}"#,
            r#"{"a": truex}"#,
            r#"{"a": 1,}"#,
            r#"{"a" 1}"#,
            r#"[1, 2]"#,
            r#"{"a": 1} x"#,
            r#"{"a": 1}  "#,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let deep = |n: usize| format!("{{\"a\": {}1{}}}", "[".repeat(n), "]".repeat(n));
        cases.extend([deep(14), deep(15), deep(16), deep(40)]);
        let mut more = Vec::new();
        for c in &cases {
            for (i, _) in c.char_indices() {
                for b in ["", "\"", "\\", ",", "}", "]", "0", " ", "\u{1}", ".", "-"] {
                    let mut m = c.clone();
                    m.insert_str(i, b);
                    more.push(m.clone());
                    if let Some(ch) = m[i + b.len()..].chars().next() {
                        m.replace_range(i + b.len()..i + b.len() + ch.len_utf8(), "");
                        more.push(m);
                    }
                }
            }
        }
        cases.extend(more);
        let mut answered = 0;
        for c in &cases {
            if let Some(v) = simple_json(c) {
                answered += 1;
                let want: Option<Value> = serde_json::from_str(c).ok();
                assert_eq!(Some(&v), want.as_ref(), "{c:?}");
                assert_eq!(
                    v.to_string(),
                    want.map(|w| w.to_string()).unwrap_or_default()
                );
            }
        }
        assert!(answered > 1000, "{answered}");
        for c in &cases[..6] {
            assert!(simple_json(c).is_some(), "{c:?}");
        }
        assert!(simple_json(&deep(14)).is_some());
    }
}
