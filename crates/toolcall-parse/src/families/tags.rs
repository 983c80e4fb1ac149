//! Shared reader for tag-delimited call blocks whose values are text (Qwen3-Coder and
//! Seed-OSS `<function=NAME><parameter=K>V</parameter></function>`, GLM
//! `NAME<arg_key>K</arg_key><arg_value>V</arg_value>`): the block is recognised from a
//! bounded lead after the opener, its closing tag is searched resumably (each byte once),
//! and the body is read in one pass when the block is complete. Values are typed by the
//! tool's schema ([`convert_text_value`]).
//!
//! While the block streams ([`StreamTags`]), each call is announced when its head is
//! complete and its arguments are sent as the JSON they convert to: a text value as
//! escaped pieces of a JSON string as its bytes arrive, any other value when its parameter
//! completes. Families whose calls hold JSON arguments stream through a [`BlockStream`]
//! (`args_object::LiveJson`, Gemma 4's own).
//!
//! A family describes its block as data: a [`Block`] whose [`LeadRule`] and [`BodyRule`]
//! name a reader several families share (an `invoke` element, JSON, `<function=NAME>`) or,
//! as `Fn(..)`, its own function, and [`StreamTags`] whose [`ValueRule`] reads a parameter's
//! opening tag. A rule is one branch taken per lead, body or parameter head, never per byte.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::{Map, Value};
use toolcall_core::{Diagnostic, Repair};

use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{
    Advance, BodyError, Outcome, ReadCx, RegionReader, ScanFrom, Untyped, Wake,
    closing_marker_repair, convert_text_value, find_from, push_json_escaped, push_json_str,
    push_json_value, text_param, untyped_is_text,
};

use super::args_object::{JsonCallTags, LiveJson, LiveList};
use super::marked::{
    BodyFn, InvokeTags, attr_param_value, invoke_head, invoke_param_alone, invokes, json_body,
    json_items, json_items_or_failure, json_lead, quotes_repair, tag_lead, unquoted,
};

/// What the lead (the bytes after the opener) says.
pub(crate) enum Lead<'a> {
    NeedMore,
    NotMine,
    /// Ours; the call's name when the lead already shows it (announced while streaming),
    /// borrowed from the lead where it is written out: a lead read only to decide (a
    /// family's `declines`, one-shot) copies nothing.
    Mine(Option<Cow<'a, str>>),
}

/// A family's description of its block: data, with the lead and body rules it shares with
/// other families or its own functions where it really differs.
pub(crate) struct Block {
    pub format: FormatId,
    pub open: &'static str,
    pub close: &'static str,
    /// Decides from the bytes after the opener (complete = the input has ended).
    pub lead: LeadRule,
    /// Reads the body (between opener and closing tag) into drafts.
    pub body: BodyRule,
}

/// How a block's lead (the bytes after its opener, at most [`MAX_LEAD`]) says whether the
/// block is the family's: a rule several families share, or the family's own function.
#[derive(Clone, Copy)]
pub(crate) enum LeadRule {
    /// `tag`, after blanks, starts the lead ([`tag_lead`]).
    Tag(&'static str),
    /// An `invoke` element of these tags starts it, its name quoted or not
    /// ([`tag_lead`] of the tag without its quote).
    Invoke(&'static InvokeTags),
    /// A JSON object or list follows the opener ([`json_lead`]).
    Json,
    /// `<function=NAME>` follows the opener ([`function_lead`]).
    Function,
    /// The family's own test.
    Fn(fn(&str, bool) -> Lead<'_>),
}

impl LeadRule {
    /// Whether a lead read as ours may name the block's first call (a later read of a
    /// longer lead, announcing it): the rules that only test the lead's first bytes never do.
    fn names(self) -> bool {
        !matches!(
            self,
            LeadRule::Tag(_) | LeadRule::Invoke(_) | LeadRule::Json
        )
    }

    /// What `lead` says; `complete`: no more bytes will come.
    pub(crate) fn read(self, lead: &str, complete: bool) -> Lead<'_> {
        match self {
            LeadRule::Tag(tag) => tag_lead(lead, complete, tag),
            LeadRule::Invoke(tags) => tag_lead(lead, complete, unquoted(tags.invoke)),
            LeadRule::Json => json_lead(lead, complete),
            LeadRule::Function => function_lead(lead, complete),
            LeadRule::Fn(f) => f(lead, complete),
        }
    }
}

/// How a block's body (between its opener and its closing tag) is read into drafts: a
/// reader several families share, or the family's own function.
#[derive(Clone, Copy)]
pub(crate) enum BodyRule {
    /// `invoke` elements of these tags ([`invokes`]).
    Invokes(&'static InvokeTags),
    /// One JSON `{name, arguments}` object or a list of them ([`json_body`]).
    Json,
    /// JSON objects, one per line or as one list, each read by this function
    /// ([`json_items`]).
    JsonItems(fn(&mut Map<String, Value>, FormatId) -> Option<Draft>),
    /// Qwen3-Coder `<function=NAME>` elements ([`xml_functions`]).
    Functions,
    /// The family's own reader.
    Fn(BodyFn),
    /// The family's own reader of a block holding one call (Gemma 4's `call:NAME{…}`), and
    /// its reader of such a block from just after the opener, for a read that announces
    /// nothing (one-shot): it reads the call and finds where the body ends in one pass,
    /// where the closing tag was searched for first and the body read after.
    Call { body: BodyFn, ahead: AheadFn },
}

/// Reads a block from the bytes after its opener (`after`) given its closing tag: the
/// calls and the length of the body before the tag, exactly as the body reader gives them
/// for the body that ends where the block's close search ends it (the tag's first
/// occurrence; outside JSON strings for a JSON body: [`CloseOutsideStrings`]); `None` where
/// it cannot tell cheaply (the closing tag is then searched for and the body read).
pub(crate) type AheadFn = fn(
    after: &str,
    close: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Option<(usize, Vec<Draft>)>;

impl BodyRule {
    /// Reads `body` as `format`'s calls.
    pub(crate) fn read(
        self,
        body: &str,
        cx: &mut ReadCx<'_>,
        format: FormatId,
    ) -> Result<Vec<Draft>, String> {
        match self {
            BodyRule::Invokes(tags) => invokes(body, cx, format, tags),
            BodyRule::Json => json_body(body, cx, format),
            BodyRule::JsonItems(one) => json_items(body, format, one),
            BodyRule::Functions => xml_functions(body, cx, format),
            BodyRule::Fn(f) | BodyRule::Call { body: f, .. } => f(body, cx, format),
        }
    }

    /// [`BodyRule::read`], a failed JSON decode's message not written
    /// ([`BodyError::Malformed`]: the engine writes it only when it is reported).
    pub(crate) fn read_or_failure(
        self,
        body: &str,
        cx: &mut ReadCx<'_>,
        format: FormatId,
    ) -> Result<Vec<Draft>, BodyError> {
        match self {
            BodyRule::JsonItems(one) => json_items_or_failure(body, format, one),
            _ => self.read(body, cx, format).map_err(BodyError::Text),
        }
    }
}

/// Bytes after the opener the lead may take before the opener is taken for prose.
pub(crate) const MAX_LEAD: usize = 512;

pub(crate) struct BlockReader {
    block: &'static Block,
    mine: bool,
    announced: bool,
    /// The first call's name as the lead announced it.
    lead_name: Option<LeadName>,
    /// The lead of the region was read as ours when the reader was made
    /// ([`crate::family::Family::open_region`]): a read that announces nothing (one-shot)
    /// does not read it again.
    lead_mine: bool,
    /// The lead was read as `NeedMore` on a region of this many bytes when the reader was
    /// made (0: it was not): the step that opened the region reads the same bytes, and
    /// reading them again said the same (~100 instructions a block, `bench_profile
    /// "gemma4/100 calls" stream4`).
    lead_more: usize,
    close: ScanFrom,
    /// The body is JSON (or JSON arguments in markup): the closing tag is looked for
    /// outside JSON strings only ([`CloseOutsideStrings`]).
    json: Option<CloseOutsideStrings>,
    live: Option<Live>,
    /// The stream of a block that decides nothing before it streams, built when the block
    /// first streams: a one-shot read never builds it.
    later: Option<Later>,
}

/// The first call's name as a block's lead announced it (a [`BlockReader`]'s): where
/// the lead wrote it in the region (the bytes stay there while the block streams), or a copy
/// of a name the lead rewrote. A copy of every name cost an allocation, its copy and its
/// free a call (~200 instructions: `bench_profile "gemma4/small" stream4`).
enum LeadName {
    At(Range<usize>),
    Owned(String),
}

impl LeadName {
    /// `name` as read from the lead of `region`.
    fn new(name: Cow<'_, str>, region: &str) -> Self {
        if let Cow::Borrowed(n) = &name {
            let at = (n.as_ptr() as usize).wrapping_sub(region.as_ptr() as usize);
            if let Some(end) = at.checked_add(n.len())
                && region.get(at..end) == Some(*n)
            {
                return LeadName::At(at..end);
            }
        }
        LeadName::Owned(name.into_owned())
    }

    /// The name, in `region` (the block's region, or the part of it before its closing tag).
    fn get<'r>(&'r self, region: &'r str) -> &'r str {
        match self {
            LeadName::At(at) => region.get(at.clone()).unwrap_or(""),
            LeadName::Owned(name) => name,
        }
    }
}

/// [`LeadName::get`] of a reader's lead name.
fn lead_name<'r>(name: &'r Option<LeadName>, region: &'r str) -> Option<&'r str> {
    name.as_ref().map(|n| n.get(region))
}

/// Builds a family's [`BlockStream`] for a parse.
pub(crate) type LiveFn = fn(&Ctx) -> Box<dyn BlockStream>;

/// A block stream built when the block first streams ([`BlockReader::later`]).
#[derive(Clone, Copy)]
enum Later {
    /// A family's own stream ([`BlockReader::streaming_from`]).
    Fn(LiveFn),
    /// JSON arguments with no per-call end ([`BlockReader::streaming_json`]).
    Json(&'static JsonCallTags),
    /// A JSON `{name, arguments}` object or a list of them ([`BlockReader::streaming_list`]).
    List,
}

/// Resumable search for a closing tag outside JSON strings, so that
/// `{"query": "what does </tool_call> mean"}` does not end the block: each byte is looked
/// at once (a tag split across pushes is looked at again, at most its length).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CloseOutsideStrings {
    pos: usize,
    in_string: bool,
    escaped: bool,
}

impl CloseOutsideStrings {
    pub(crate) fn new(from: usize) -> Self {
        CloseOutsideStrings {
            pos: from,
            in_string: false,
            escaped: false,
        }
    }

    /// The offset of the first `tag` outside a string in `region`, searching from where
    /// the last call stopped.
    pub(crate) fn find(&mut self, region: &str, tag: &str) -> Option<usize> {
        let bytes = region.as_bytes();
        let first = *tag.as_bytes().first()?;
        while let Some(rest) = bytes.get(self.pos..).filter(|r| !r.is_empty()) {
            if self.in_string {
                if self.escaped {
                    // The byte after a backslash is escaped, whatever it is.
                    self.escaped = false;
                    self.pos += 1;
                    continue;
                }
                let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                    self.pos = bytes.len();
                    return None;
                };
                self.pos += i + 1;
                if rest[i] == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                }
                continue;
            }
            let Some(i) = memchr::memchr2(b'"', first, rest) else {
                self.pos = bytes.len();
                return None;
            };
            let at = self.pos + i;
            if bytes[at] == b'"' {
                self.in_string = true;
                self.pos = at + 1;
                continue;
            }
            let tail = &bytes[at..];
            if tail.starts_with(tag.as_bytes()) {
                self.pos = at;
                return Some(at);
            }
            if tag.as_bytes().starts_with(tail) {
                // A tag may be arriving: look again from here.
                self.pos = at;
                return None;
            }
            self.pos = at + 1;
        }
        None
    }
}

/// How a block's arguments stream while it arrives.
enum Live {
    /// Text-valued parameters ([`StreamTags`]).
    Params(Box<LiveArgs>),
    /// A family's own streaming reader (JSON arguments per call: [`JsonCallTags`]).
    Stream(Box<dyn BlockStream>),
}

impl Live {
    /// The block closed with `drafts`, its body `region[..body_end]`: the stream sends what
    /// it has not yet sent of them.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        region: &str,
        body_end: usize,
        lead: &Option<LeadName>,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        match self {
            Live::Params(live) => live.finish(drafts, span, o, cx),
            Live::Stream(live) => {
                let upto = region.get(..body_end).unwrap_or("");
                live.finish(upto, lead_name(lead, region), drafts, span, o, cx)
            }
        }
    }

    fn calls(&self) -> usize {
        match self {
            Live::Params(l) => l.calls,
            Live::Stream(l) => l.calls(),
        }
    }

    /// The marker that closes one call of the block, when its calls have one of their own.
    fn call_end(&self) -> Option<&'static str> {
        match self {
            Live::Params(l) => Some(l.tags.call_end),
            Live::Stream(l) => l.call_end(),
        }
        .filter(|e| !e.is_empty())
    }
}

impl Later {
    /// The stream for `block`, whose body is marked JSON or not (`json`); out of line:
    /// built once a block, away from the push path.
    #[inline(never)]
    fn build(self, block: &Block, json: bool, ctx: &Ctx, kept: &mut Kept) -> Box<dyn BlockStream> {
        let from = block.open.len();
        let stream: Box<dyn BlockStream> = match self {
            Later::Fn(make) => match kept.stream.take_if(|(f, _)| *f == block.format) {
                // The last block's stream of this format, reset ([`Kept::stream`]).
                Some((_, stream)) => stream,
                None => make(ctx),
            },
            Later::Json(tags) => Box::new(LiveJson::new(tags, from, ctx.limits.max_depth)),
            Later::List => Box::new(LiveList::new(from, ctx.limits.max_depth)),
        };
        debug_assert!(stream.call_end().is_none_or(str::is_empty) && (!stream.json() || json));
        // A stream of JSON entries built late is JSON, as its body was marked.
        debug_assert!(!matches!(block.body, BodyRule::JsonItems(_)) || stream.json());
        stream
    }
}

/// Streams a block's calls while it arrives, for a family whose layout [`StreamTags`] does
/// not describe. `advance` sees the region so far (it may start with the block's opener);
/// announcing the first call is left out when the block's lead already did (`lead_name`).
pub(crate) trait BlockStream: Send + Sync {
    fn advance(&mut self, region: &str, lead_name: Option<&str>, cx: &mut ReadCx<'_>);
    /// Calls announced so far (by the lead or by `advance`).
    fn calls(&self) -> usize;
    /// The block's calls are JSON (its closing tag counts only outside JSON strings).
    fn json(&self) -> bool {
        false
    }
    /// The marker closing each call of the block, when its calls have one of their own
    /// (a block cut inside a call keeps the calls closed before it).
    fn call_end(&self) -> Option<&'static str> {
        None
    }
    /// The block closed with `drafts`; `region` ends where its closing tag starts. Sends
    /// what the final arguments add to what was sent, or says they differ.
    fn finish(
        &mut self,
        region: &str,
        lead_name: Option<&str>,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    );
    /// The block closed, its body ending at region offset `body_end`: its one call as the
    /// family's `body` reads the body, built from what the stream already read, when it
    /// read all of it and the family's reader would read it the same way (`lead_name`: the
    /// call's name as the lead announced it); `None` reads the body whole.
    fn draft(
        &mut self,
        _region: &str,
        _lead_name: Option<&str>,
        _body_end: usize,
        _format: FormatId,
    ) -> Option<Draft> {
        None
    }
    /// The block closed and its outcome is made: the stream makes itself what its family's
    /// [`LiveFn`] builds for the parse's next block, and says so (`false`: it is dropped;
    /// [`Kept::stream`]).
    fn reset(&mut self) -> bool {
        false
    }
}

/// What a closed block's reader leaves for the next block of the parse ([`ReadCx::kept`]),
/// in place of what a block made and dropped (a Gemma 4 call's stream: its allocation and
/// free, ~130 instructions a call streamed: `bench_profile "gemma4/100 calls" stream4`).
#[derive(Default)]
pub(crate) struct Kept {
    /// The stream of the last block that streamed, reset ([`BlockStream::reset`]), with
    /// its block's format: the next block of that format takes it ([`Later::build`])
    /// instead of building one (an allocation, its fields, and its drop at the close).
    stream: Option<(FormatId, Box<dyn BlockStream>)>,
}

impl BlockReader {
    pub(crate) fn new(block: &'static Block) -> Self {
        BlockReader {
            block,
            mine: false,
            announced: false,
            lead_name: None,
            lead_mine: false,
            lead_more: 0,
            close: ScanFrom(block.open.len()),
            json: None,
            live: None,
            later: None,
        }
    }

    /// The region's lead was read as ours ([`lead_verdict`]) before the reader was made.
    pub(crate) fn lead_read_mine(mut self) -> Self {
        self.lead_mine = true;
        self
    }

    /// The region's lead, `region_len` bytes with the opener, was read as `NeedMore`
    /// ([`lead_verdict`]) before the reader was made.
    pub(crate) fn lead_read_more(mut self, region_len: usize) -> Self {
        self.lead_more = region_len;
        self
    }

    /// The body is JSON, or markup with JSON arguments: the closing tag counts only
    /// outside JSON strings.
    pub(crate) fn json_body(mut self) -> Self {
        self.json = Some(CloseOutsideStrings::new(self.block.open.len()));
        self
    }

    /// Streams each call's arguments while the block arrives, a fragment per completed
    /// parameter (see [`StreamTags`]).
    pub(crate) fn streaming(mut self, tags: &'static StreamTags) -> Self {
        self.live = Some(Live::Params(Box::new(LiveArgs::new(
            tags,
            self.block.open.len(),
        ))));
        self
    }

    /// Streams each call's JSON arguments text while the block arrives (see
    /// [`JsonCallTags`]). Calls with no end marker of their own decide nothing through the
    /// stream before it streams (its only say before then, [`BlockStream::json`], is made
    /// here): it is built when the block first streams, and a one-shot read builds and
    /// drops none (~130 instructions a call, `bench_profile "gpt_oss/small" one`).
    pub(crate) fn streaming_json(mut self, tags: &'static JsonCallTags, max_depth: usize) -> Self {
        if tags.call_end.is_empty() {
            self = self.json_body();
            self.later = Some(Later::Json(tags));
            return self;
        }
        let from = self.block.open.len();
        self.streaming_with(Box::new(LiveJson::new(tags, from, max_depth)))
    }

    /// Streams a block holding a JSON `{name, arguments}` object or a list of them (see
    /// [`LiveList`]).
    /// It decides nothing before it streams (no per-call end; its JSON body is marked
    /// now): built when the block first streams, as [`Self::streaming_json`]'s.
    pub(crate) fn streaming_list(mut self) -> Self {
        self = self.json_body();
        self.later = Some(Later::List);
        self
    }

    /// Streams the block's calls with the [`BlockStream`] `make` builds. A block whose body
    /// its family reads with its own function ([`BodyRule::Fn`], [`BodyRule::Call`]: Gemma
    /// 4's and FunctionGemma's call literal) streams with a stream that is not JSON and has no
    /// per-call end ([`BlockStream::json`], [`BlockStream::call_end`]; checked when it is
    /// built), so nothing is decided by it before it streams: it is built when the block
    /// first streams, and a one-shot read builds and drops none (~300 instructions a Gemma 4
    /// call, `bench_profile "gemma4/small" one`). A block of JSON entries
    /// ([`BodyRule::JsonItems`]: Cohere's, Command R+'s, Apertus's lists) streams with a
    /// JSON stream with no per-call end (checked when it is built): its body is marked JSON
    /// now and the stream built when the block first streams (a flood of broken
    /// `Action:\n```json{"` blocks built and dropped one a block, ~300 instructions). Any
    /// other stream is built now.
    pub(crate) fn streaming_from(mut self, make: LiveFn, ctx: &Ctx) -> Self {
        match self.block.body {
            BodyRule::Fn(_) | BodyRule::Call { .. } => {
                self.later = Some(Later::Fn(make));
                self
            }
            BodyRule::JsonItems(_) => {
                self = self.json_body();
                self.later = Some(Later::Fn(make));
                self
            }
            _ => self.streaming_with(make(ctx)),
        }
    }

    /// Streams the block's calls with a family's own [`BlockStream`].
    /// A stream of JSON calls ([`BlockStream::json`]) makes the body JSON ([`Self::json_body`]).
    pub(crate) fn streaming_with(mut self, stream: Box<dyn BlockStream>) -> Self {
        if stream.json() {
            self = self.json_body();
        }
        self.live = Some(Live::Stream(stream));
        self
    }
}

/// How a block's calls and parameters are delimited, for streaming arguments while the
/// block arrives: `{"k":v` once the first parameter is complete, `,"k2":v2` for each
/// next one, `}` when the call ends, so the fragments concatenate to the final arguments
/// exactly. A parameter whose value is text (the markup's `string="true"`, else the tool's
/// schema allows a string or has none for it: known at the parameter's name) streams
/// sooner: `{"k":"` once its opening tag is read, then escaped pieces of the value as
/// they arrive, holding back bytes that may start the closing tag and the one layout
/// newline that may end the value, then the rest as the family reads it and `"`.
///
/// Each completed parameter is read by the family's own `body` function on a small block
/// made of the call's head (bounded by [`MAX_LEAD`]), that one parameter and `call_end`;
/// every byte is searched once, so the work per push is proportional to the new bytes.
pub(crate) struct StreamTags {
    /// Opens a parameter (`<parameter=`); the call's head is what precedes the first one.
    pub param: &'static str,
    /// Closes a parameter (`</parameter>`).
    pub param_end: &'static str,
    /// Closes one call (`</function>`); empty when a block holds one call (GLM).
    pub call_end: &'static str,
    /// Reads a parameter's opening tag (the bytes from `param` on) to stream a text value
    /// while it arrives. Streaming reads it only once a `>` follows the tag's start (every
    /// rule's opening tag ends with one): before that, `NeedMore` is assumed.
    pub value: ValueRule,
    /// Tags that end a value whose closing tag is missing (Qwen3-Coder's body tolerates
    /// that): streaming holds back from there until the closing tag arrives.
    pub value_stops: &'static [&'static str],
    /// Empty: every `param_end` closes its value. Otherwise a `param_end` closes it only
    /// when one of these tags, the block's closing tag or the end of the block follows it
    /// (blanks between); any other is text of the value ([`closes_value`]).
    pub param_end_followers: &'static [&'static str],
    /// A text value is its bytes exactly (`true`: Step-3, as vLLM's reader keeps them),
    /// else the one layout newline on each side is dropped ([`layout_trim`]).
    pub verbatim: bool,
}

impl StreamTags {
    /// The streaming tags of a block of `invoke` elements (MiniMax M2, DeepSeek DSML,
    /// Step-3, ...): a parameter opens at `tags.param` without its quote (the name may be
    /// written single-quoted or bare) and is read by its `name` attribute, and a call ends
    /// at `tags.invoke_end`.
    pub(crate) const fn invokes(tags: &'static InvokeTags) -> StreamTags {
        StreamTags {
            param: unquoted(tags.param),
            param_end: tags.param_end,
            call_end: tags.invoke_end,
            value: ValueRule::NameAttr,
            value_stops: &[],
            param_end_followers: &[],
            verbatim: tags.verbatim,
        }
    }
}

/// The streaming tags of Qwen3-Coder's and Seed-OSS's `<function=NAME>` calls
/// (`<parameter=K>V</parameter>`, a missing `</parameter>` tolerated before the next
/// parameter or the call's end).
pub(crate) static FUNCTION_PARAMS: StreamTags = StreamTags {
    param: "<parameter=",
    param_end: "</parameter>",
    call_end: "</function>",
    value: ValueRule::EqKey,
    value_stops: &["<parameter=", "</function>"],
    param_end_followers: EQ_PARAM_FOLLOWERS,
    verbatim: false,
};

/// How a parameter's opening tag names its key ([`StreamTags::value`]): a rule several
/// families share, or the family's own function.
#[derive(Clone, Copy)]
pub(crate) enum ValueRule {
    /// A `name` attribute, quoted or not: `param` is `<parameter name=`, with or without its
    /// quote ([`attr_param_value`]).
    NameAttr,
    /// `<parameter=KEY>` ([`eq_param_value`]).
    EqKey,
    /// The family's own reader.
    Fn(fn(&str) -> ValueHead),
}

impl ValueRule {
    /// What the bytes from `param` (the parameter's opening tag) on say of its value.
    fn read(self, header: &str, param: &str) -> ValueHead {
        match self {
            ValueRule::NameAttr => name_attr_value(header, param),
            ValueRule::EqKey => eq_param_value(header),
            ValueRule::Fn(f) => f(header),
        }
    }
}

enum LiveState {
    /// Looking for the next call's first parameter from `from`.
    Head { from: usize, find: ScanFrom },
    /// Inside a call whose head is `region[head]`; parameters read up to `seg`.
    Params {
        head: Range<usize>,
        name: String,
        seg: usize,
        param_end: ScanFrom,
        call_end: ScanFrom,
        /// Where the call's end was found (searched once).
        call_end_at: Option<usize>,
        /// The open parameter, once its name is known.
        value: Option<OpenValue>,
        /// No `>` at or after `seg` before this offset: the open parameter's opening tag
        /// is not complete ([`StreamTags::value`]), so it is not read again.
        no_gt: usize,
    },
}

/// What the bytes after a parameter's opening tag say about its value.
pub(crate) enum ValueHead {
    /// The opening tag is not complete yet.
    NeedMore,
    /// Not a parameter this reader follows: its value is sent when it completes.
    No,
    /// The value of `key` starts `at` bytes in; `string`: the markup says whether it is
    /// text (DSML's `string="true|false"`), else the tool's schema decides.
    At {
        key: String,
        at: usize,
        string: Option<bool>,
    },
}

/// An open parameter.
enum OpenValue {
    /// Not text (or a repeated key): sent whole when the parameter completes.
    Whole,
    /// Not text by the tool's schema, the markup saying nothing (`key`'s value starts at
    /// region offset `from`): sent whole when the parameter completes, converted from its
    /// text as the family's reader converts it ([`typed`]) without reading its opening tag
    /// again (an `invoke` parameter read alone, [`invoke_param_alone`], cost ~3.6 k
    /// instructions: minimax_m2/100 calls).
    Typed { key: String, from: usize },
    /// Text: sent as escaped pieces of a JSON string as its bytes arrive.
    Text(TextValue),
}

/// A text value streaming: `region[from..]` after the opening tag; the one layout
/// newline at its start is skipped and one at its end held back (the family's
/// [`layout_trim`]), and so is anything that may be the start of the closing tag.
struct TextValue {
    key: String,
    /// The schema does not type it: the family's rule ([`Untyped`]) decides from its first
    /// bytes whether it is a string; until then nothing is sent (`opened` false).
    rule: Untyped,
    /// The markup (`string="true"`) or the schema (a string, no other type) says it is
    /// text: the family reads it as its text exactly ([`read_text_param`]).
    sure: bool,
    /// `{"key":"` (or `,"key":"`) was sent.
    opened: bool,
    from: usize,
    /// Where the value's text starts, once its first bytes showed a layout newline or not.
    start: Option<usize>,
    /// Sent up to here.
    emitted: usize,
    /// Where a [`StreamTags::value_stops`] tag was found (the value ends there at most).
    stop_at: Option<usize>,
    /// One search per [`StreamTags::value_stops`] tag (boxed: no room for a capacity, which
    /// kept [`LiveState`] under clippy's `large_enum_variant` bound).
    stops: Box<[ScanFrom]>,
    /// Where the bytes held back as a possible closing tag (or stop) start, after the last
    /// [`TextValue::forward`]; `0` when none are (a value never starts the region, which
    /// starts with the block's opener).
    held: usize,
}

impl TextValue {
    /// Sends `{"key":"` (`,"key":"` after other arguments).
    fn open(&mut self, sent: &mut String, cx: &mut ReadCx<'_>) {
        let mut fragment = String::with_capacity(self.key.len() + 8);
        fragment.push(if sent.is_empty() { '{' } else { ',' });
        push_json_str(&mut fragment, &self.key);
        fragment.push_str(":\"");
        send_owned(sent, fragment, cx);
        self.opened = true;
    }

    /// Sends the bytes of the value that can no longer change; `false`: the family's rule
    /// says the value is not a string (it is sent whole when the parameter completes).
    fn forward(
        &mut self,
        region: &str,
        tags: &StreamTags,
        sent: &mut String,
        cx: &mut ReadCx<'_>,
    ) -> bool {
        if !self.opened && self.rule == Untyped::Text {
            self.open(sent, cx);
        }
        let bytes = region.as_bytes();
        let start = match self.start {
            Some(s) => s,
            None => {
                let s = match bytes.get(self.from) {
                    None => return true,
                    Some(_) if tags.verbatim => self.from,
                    Some(b'\n') => self.from + 1,
                    Some(b'\r') => match bytes.get(self.from + 1) {
                        None => return true,
                        Some(b'\n') => self.from + 2,
                        Some(_) => self.from,
                    },
                    Some(_) => self.from,
                };
                self.start = Some(s);
                self.emitted = s;
                s
            }
        };
        if self.stop_at.is_none() {
            for (tag, find) in tags.value_stops.iter().zip(self.stops.iter_mut()) {
                if let Some(i) = find_tag(find, region, tag).filter(|&i| i >= start) {
                    self.stop_at = Some(self.stop_at.map_or(i, |s: usize| s.min(i)));
                }
            }
        }
        let mut upto = match self.stop_at {
            Some(i) => i,
            None => {
                // Bytes that may begin the closing tag (or a stop) wait for more: from the
                // first `<` (every such tag's first byte) whose rest is a prefix of one.
                let longest = std::iter::once(tags.param_end)
                    .chain(tags.value_stops.iter().copied())
                    .map(str::len)
                    .max()
                    .unwrap_or(0);
                let window = bytes
                    .len()
                    .saturating_sub(longest.saturating_sub(1))
                    .max(start);
                let tail = bytes.get(window..).unwrap_or(&[]);
                let hold = memchr::memchr_iter(b'<', tail)
                    .map(|i| &tail[i..])
                    .find(|rest| {
                        std::iter::once(tags.param_end)
                            .chain(tags.value_stops.iter().copied())
                            .any(|t| t.len() > rest.len() && t.as_bytes().starts_with(rest))
                    })
                    .map_or(0, <[u8]>::len);
                self.held = if hold > 0 { region.len() - hold } else { 0 };
                region.len() - hold
            }
        };
        let text = region.get(start..upto).unwrap_or("");
        if tags.verbatim {
            // Every byte is the value's.
        } else if text.ends_with("\r\n") {
            upto -= 2;
        } else if text.ends_with('\n') || text.ends_with('\r') {
            upto -= 1;
        }
        while upto > self.emitted && !region.is_char_boundary(upto) {
            upto -= 1;
        }
        if !self.opened {
            match untyped_is_text(self.rule, region.get(start..upto).unwrap_or("")) {
                None => return true,
                Some(false) => return false,
                Some(true) => self.open(sent, cx),
            }
        }
        if upto > self.emitted {
            let piece = region.get(self.emitted..upto).unwrap_or("");
            let mut body = String::with_capacity(piece.len() + 8);
            push_json_escaped(&mut body, piece);
            send_owned(sent, body, cx);
            self.emitted = upto;
        }
        true
    }

    /// What was sent of the value's text.
    fn sent<'r>(&self, region: &'r str) -> &'r str {
        let start = self.start.unwrap_or(self.from);
        region.get(start..self.emitted.max(start)).unwrap_or("")
    }
}

/// A completed parameter `extra` (blanks, its opening tag, value and closing tag, which
/// starts at region offset `close`) of an `invoke` whose text value `t` streamed and is
/// text for sure: its value and its own repairs as [`invoke_param_alone`] reads them (the
/// value's text, layout newlines trimmed unless verbatim; a repair for a name not written
/// in double quotes), without reading its opening tag again or looking up its type in the
/// schema a second time (~2.9 k instructions a text parameter, minimax_m2/100 calls).
/// `None` for a value that is not sure text, not yet sent, or that the closing tag does
/// not follow (a `</parameter>` inside the opening tag): read whole then.
fn read_text_param<'r>(
    t: &TextValue,
    itags: &InvokeTags,
    extra: &str,
    region: &'r str,
    close: usize,
) -> Option<(&'r str, Option<Repair>)> {
    if !t.sure || !t.opened || close < t.from {
        return None;
    }
    let value = region.get(t.from..close)?;
    let text = if itags.verbatim {
        value
    } else {
        layout_trim(value)
    };
    // The name's quote, as `attr_value` reads it.
    let attr = skip_space(extra).strip_prefix(unquoted(itags.param))?;
    let own = (!attr.starts_with('"')).then(|| quotes_repair("parameter", &t.key));
    Some((text, own))
}

/// What wakes a block's reader whose stream of text-valued parameters is quiet
/// ([`LiveArgs::wake`], [`ReadCx::wake`]), per state of the stream: between calls it looks
/// only for the next call's first parameter tag (`head`: that tag's last byte), inside a call
/// only for tags that end with `>` (`params`: an opening tag's end, the parameter's or the
/// call's closing tag); both also wake on the block's closing tag.
pub(crate) struct ParamsWake {
    pub head: Wake,
    pub params: Wake,
    /// Inside a text value whose last bytes may begin its closing tag: a
    /// [`Wake::holding`] of that tag ([`LiveArgs::wake`]).
    pub held: Wake,
}

/// The family's own [`ParamsWake`], for a family whose stream looks only for tags that end
/// with one of its bytes (`invoke` elements: no tolerated missing closing tag, no closing tag
/// decided by what follows it), else `None` (every push is read).
pub(crate) fn params_wake(block: &Block) -> Option<&'static ParamsWake> {
    (block.format == FormatId::MINIMAX_M2).then_some(&super::minimax_m2::WAKE)
}

/// What wakes a block's reader whose lead (`after`, the bytes after the opener) waits for
/// more ([`ReadCx::wake`]): the family's own table, for a lead that only a few bytes or its
/// length can decide (Gemma 4's and FunctionGemma's `call:NAME{` once `call:` is read,
/// [`super::gemma4::lead_wake`], and while it is a proper prefix of `call:`,
/// [`super::gemma4::call_wake`]), else `None` (every push reads the lead again).
fn lead_wake(block: &Block, after: &str) -> Option<&'static Wake> {
    let (wake, before) = match block.format {
        FormatId::GEMMA4 => (&super::gemma4::LEAD_WAKE, &super::gemma4::CALL_WAKE),
        FormatId::FUNCTIONGEMMA => (
            &super::functiongemma::LEAD_WAKE,
            &super::functiongemma::CALL_WAKE,
        ),
        _ => return None,
    };
    if super::gemma4::lead_at_name(after) {
        Some(wake)
    } else {
        // `call:` not whole yet (a few bytes a push after the opener).
        super::gemma4::lead_before_name(after).then_some(before)
    }
}

/// [`ScanFrom::find`], first asking whether any byte it has not looked at may start the
/// tag: most pushes of a streamed block bring a few bytes without the tag's first byte, or
/// with one the next byte rules out (another tag's `<`: `<parameter name=` for
/// `</parameter>`), and a block's reader searches three or four tags a push (its own
/// closing tag, the call's, the parameter's, the next parameter's), each a call into the
/// search that compares the tag at every such byte (~76 instructions a search, and ~130
/// one that met another tag, minimax_m2/100 calls). A byte ruled out starts neither the tag
/// nor a part of it, so the search starts after it.
#[inline]
fn find_tag(scan: &mut ScanFrom, region: &str, tag: &str) -> Option<usize> {
    let t = tag.as_bytes();
    let first = *t.first()?;
    let rest = region.as_bytes().get(scan.0..).unwrap_or(&[]);
    if let (true, Some(&second)) = (rest.len() <= SHORT_TAG, t.get(1)) {
        // A push's few bytes: a `first` that the next byte rules out (another tag's `<`)
        // starts neither the tag nor a part of it; the search starts at the first that
        // may.
        let mut j = 0;
        while j < rest.len() {
            if rest[j] == first && rest.get(j + 1).is_none_or(|&b| b == second) {
                scan.0 += j;
                return scan.find(region, tag);
            }
            j += 1;
        }
        scan.0 = region.len();
        return None;
    }
    if !rest.contains(&first) {
        scan.0 = region.len();
        return None;
    }
    scan.find(region, tag)
}

/// Bytes not yet looked at up to which [`find_tag`] looks at each itself.
const SHORT_TAG: usize = 48;

/// [`find_tag`] for a block's closing tag while the bytes not yet looked at are few (a
/// push's): the tag is found by its last byte, each such byte's tag-long prefix compared
/// with it (the first match ends the first occurrence: every occurrence is as long). A
/// tag whose last byte has not come is not complete, so no complete one starts before the
/// last `tag.len() - 1` bytes, and the search resumes there. The search by first byte
/// compared the tag at every other tag's `<` of the body (twice: whole and as a prefix;
/// ~175 instructions a push read, minimax_m2/100 calls).
#[inline]
fn find_close(scan: &mut ScanFrom, region: &str, tag: &str) -> Option<usize> {
    let t = tag.as_bytes();
    let bytes = region.as_bytes();
    let (Some(&last), false) = (t.last(), bytes.len().saturating_sub(scan.0) > SHORT_CLOSE) else {
        return find_tag(scan, region, tag);
    };
    let n = t.len();
    let mut end = scan.0 + n - 1;
    while let Some(j) = bytes
        .get(end..)
        .and_then(|r| r.iter().position(|&b| b == last))
    {
        let at = end + j + 1 - n;
        // The tag's first byte first: most bytes equal to its last end another tag (Gemma
        // 4's `<|"|>` quotes for its `<tool_call|>`), and a compare of the whole was a
        // `memcmp` call each (~25 instructions, `bench_profile "gemma4/100 calls" stream4`).
        if bytes.get(at) == t.first() && bytes.get(at..at + n) == Some(t) {
            return Some(at);
        }
        end += j + 1;
    }
    scan.0 = scan.0.max(bytes.len().saturating_sub(n - 1));
    None
}

/// Bytes not yet looked at above which [`find_close`] searches by first byte.
const SHORT_CLOSE: usize = 64;

fn send(sent: &mut String, fragment: &str, cx: &mut ReadCx<'_>) {
    sent.push_str(fragment);
    cx.arguments(fragment);
}

/// [`send`] with a fragment written for it (no copy).
fn send_owned(sent: &mut String, fragment: String, cx: &mut ReadCx<'_>) {
    sent.push_str(&fragment);
    cx.arguments_owned(fragment);
}

/// Sends the rest of a streamed string value, escaped, and its closing quote.
fn send_string_tail(sent: &mut String, rest: &str, cx: &mut ReadCx<'_>) {
    let mut tail = String::with_capacity(rest.len() + 8);
    push_json_escaped(&mut tail, rest);
    tail.push('"');
    send_owned(sent, tail, cx);
}

/// The streaming side of a [`BlockReader`]: announces each call when its head is complete
/// and forwards its arguments as parameters complete.
struct LiveArgs {
    tags: &'static StreamTags,
    state: LiveState,
    /// Calls announced (by the lead or here).
    calls: usize,
    /// What was sent of the last announced call's arguments.
    sent: String,
    /// Complete arguments sent for calls closed while streaming, in order.
    closed: ClosedArgs,
    stopped: bool,
    /// Every call so far was read by the family's reader, a parameter at a time, as it
    /// reads the whole block (`exact`): the calls closed (`built`) and the open one's
    /// arguments and repairs (its head's first, `head_repairs` of them) make the block's
    /// drafts when it closes, without reading it again ([`LiveArgs::drafts`]).
    exact: bool,
    built: Vec<Draft>,
    /// The open call's arguments sent so far, whole: their keys are the ones a repeated
    /// parameter would rewrite (no copy of each key is kept beside them).
    args: Map<String, Value>,
    repairs: Vec<Repair>,
    head_repairs: usize,
    /// The open call's parameters are each read alone ([`invoke_param_alone`]), not inside
    /// a call rebuilt around them.
    alone: bool,
    /// The drafts were built from the stream: what was sent is their arguments exactly.
    rebuilt: bool,
    /// Whether the family has schema rules ([`FormatId::schema_rules`]), once looked up.
    has_rules: Option<bool>,
    /// Which parameters the schema types as text, per tool.
    kinds: TextKinds,
}

impl LiveArgs {
    fn new(tags: &'static StreamTags, from: usize) -> Self {
        LiveArgs {
            tags,
            state: LiveState::Head {
                from,
                find: ScanFrom(from),
            },
            calls: 0,
            sent: String::new(),
            closed: ClosedArgs::default(),
            stopped: false,
            exact: true,
            built: Vec::new(),
            args: Map::new(),
            repairs: Vec::new(),
            head_repairs: 0,
            alone: false,
            rebuilt: false,
            has_rules: None,
            kinds: TextKinds::default(),
        }
    }

    /// What wakes the stream while it sends nothing until one of the tags it looks for
    /// completes:
    /// stopped, between calls (the next call's first parameter tag), or inside a call
    /// whose open parameter's opening tag has no `>` yet or whose value is sent whole
    /// (its closing tag, or the call's). Any other byte is read with the next one that
    /// completes such a tag as it would be now, with no event either way.
    ///
    /// The table of `wake` that applies: between calls only the next call's first
    /// parameter tag can end (`head`: its `=`); inside a call only tags ending with `>`
    /// (`params`); stopped, only the block's closing tag, which both tables wake on.
    ///
    /// Not quiet, a text value streams: when the bytes it holds back are a proper prefix of
    /// its closing tag (the family looks for no other tag inside a value: no
    /// [`StreamTags::value_stops`], every closing tag closes), with the tag's first byte
    /// only at their start, `wake.held`, the [`Wake::holding`] of that tag. Bytes that only
    /// continue the prefix complete no tag (the block's closing tag needs a `>` the prefix
    /// lacks) and move nothing the value sends ([`TextValue::forward`] holds from the same
    /// byte).
    #[inline]
    fn wake<'w>(&self, region: &str, wake: &'w ParamsWake) -> Option<&'w Wake> {
        match &self.state {
            _ if self.stopped => Some(&wake.params),
            LiveState::Head { .. } => Some(&wake.head),
            LiveState::Params { value, no_gt, .. } => match value {
                None => (*no_gt >= region.len()).then_some(&wake.params),
                Some(OpenValue::Whole | OpenValue::Typed { .. }) => Some(&wake.params),
                Some(OpenValue::Text(t)) if t.held > 0 => {
                    let tags = self.tags;
                    let tail = region.as_bytes().get(t.held..)?;
                    let (&first, rest) = tail.split_first()?;
                    (tail.len() < tags.param_end.len()
                        && tags.value_stops.is_empty()
                        && tags.param_end_followers.is_empty()
                        && tags.param_end.as_bytes().starts_with(tail)
                        && !rest.contains(&first))
                    .then_some(&wake.held)
                }
                Some(OpenValue::Text(_)) => None,
            },
        }
    }

    /// The block closed at `body_end`: its drafts, when every call was read while
    /// streaming and only blanks follow the last one (as the family's reader skips them).
    fn drafts(&mut self, _block: &Block, region: &str, body_end: usize) -> Option<Vec<Draft>> {
        let LiveState::Head { from, .. } = self.state else {
            return None;
        };
        if self.stopped
            || !self.exact
            || self.calls == 0
            || self.built.len() != self.calls
            || self.closed.len() != self.calls
            || !region
                .get(from..body_end)?
                .bytes()
                .all(|b| b.is_ascii_whitespace())
        {
            return None;
        }
        self.rebuilt = true;
        Some(std::mem::take(&mut self.built))
    }

    /// Reads the block's calls from `region[head] + extra + call_end` with the family's body.
    fn read(
        tags: &StreamTags,
        block: &Block,
        region: &str,
        head: Range<usize>,
        extra: &str,
        cx: &mut ReadCx<'_>,
    ) -> Option<Draft> {
        let mut synth = String::with_capacity(head.len() + extra.len() + tags.call_end.len());
        synth.push_str(region.get(head)?);
        synth.push_str(extra);
        synth.push_str(tags.call_end);
        let mut drafts = block.body.read(&synth, cx, block.format).ok()?;
        (drafts.len() == 1).then(|| drafts.pop()).flatten()
    }

    /// Announces and forwards what the bytes so far complete; stops (the rest is sent
    /// whole when the block closes) on anything it cannot follow.
    #[inline(always)]
    fn advance(
        &mut self,
        block: &Block,
        region: &str,
        lead_name: Option<&str>,
        cx: &mut ReadCx<'_>,
    ) {
        let tags = self.tags;
        while !self.stopped {
            match &mut self.state {
                LiveState::Head { from, find } => {
                    let from = *from;
                    let Some(p) = find_tag(find, region, tags.param) else {
                        if region.len().saturating_sub(from) > MAX_LEAD + tags.param.len() {
                            self.stopped = true;
                        }
                        return;
                    };
                    let head = region.get(from..p).unwrap_or("");
                    if head.len() > MAX_LEAD
                        || (!tags.call_end.is_empty() && head.contains(tags.call_end))
                    {
                        self.stopped = true;
                        return;
                    }
                    // A head of `invoke` tags that its parameters follow: each parameter is
                    // read alone as the family reads it (no call rebuilt around it).
                    let alone = match block.body {
                        BodyRule::Invokes(itags) => plain_invoke_head(head, itags)
                            .map(|name| (name, Vec::new()))
                            .or_else(|| invoke_head(head, itags)),
                        _ => None,
                    };
                    let (d_name, d_repairs, alone) = match alone {
                        Some((n, r)) => (n.to_owned(), r, true),
                        None => {
                            let Some(d) = Self::read(tags, block, region, from..p, "", cx) else {
                                self.stopped = true;
                                return;
                            };
                            if d.args
                                .as_ref()
                                .is_some_and(|a| a != &Value::Object(Map::new()))
                            {
                                self.stopped = true;
                                return;
                            }
                            (d.name, d.repairs, false)
                        }
                    };
                    match (self.calls, lead_name) {
                        (0, Some(n)) if n != d_name => {
                            self.stopped = true;
                            return;
                        }
                        (0, Some(_)) => {}
                        _ => cx.start_call(&d_name, None),
                    }
                    self.calls += 1;
                    self.sent.clear();
                    self.args.clear();
                    self.head_repairs = d_repairs.len();
                    self.repairs = d_repairs;
                    self.alone = alone;
                    self.state = LiveState::Params {
                        head: from..p,
                        name: d_name,
                        seg: p,
                        param_end: ScanFrom(p),
                        call_end: ScanFrom(p),
                        call_end_at: None,
                        value: None,
                        no_gt: p,
                    };
                }
                LiveState::Params {
                    head,
                    name,
                    seg,
                    param_end,
                    call_end,
                    call_end_at,
                    value,
                    no_gt,
                } => {
                    let seg_start = *seg;
                    // A text value streaming ends only at its closing tag.
                    let in_text = matches!(value, Some(OpenValue::Text(_)));
                    if !in_text && call_end_at.is_none() && !tags.call_end.is_empty() {
                        *call_end_at = find_tag(call_end, region, tags.call_end);
                    }
                    let mut pe = find_tag(param_end, region, tags.param_end);
                    // A closing tag that the bytes after it do not decide yet: the value is
                    // streamed up to it at most.
                    let mut held = None;
                    while let Some(c) = pe.filter(|_| !tags.param_end_followers.is_empty()) {
                        let after = region.get(c + tags.param_end.len()..).unwrap_or("");
                        match closes_value(after, tags.param_end_followers, block.close, false) {
                            Some(true) => break,
                            Some(false) => {
                                // Text of the value: the closing tag is searched after it.
                                *param_end = ScanFrom(c + 1);
                                pe = param_end.find(region, tags.param_end);
                            }
                            None if after.len() > MAX_LEAD => {
                                self.stopped = true;
                                return;
                            }
                            None => {
                                held = Some(c);
                                pe = None;
                            }
                        }
                    }
                    let ends_first = match (*call_end_at, pe) {
                        _ if in_text => None,
                        (Some(e), Some(c)) => (e < c).then_some(e),
                        (Some(e), None) => Some(e),
                        _ => None,
                    };
                    if let Some(e) = ends_first {
                        // The call ends: only blanks may remain after its last parameter.
                        if !region.get(seg_start..e).unwrap_or("x").trim().is_empty() {
                            self.stopped = true;
                            return;
                        }
                        let close = if self.sent.is_empty() { "{}" } else { "}" };
                        send(&mut self.sent, close, cx);
                        self.closed.push(&mut self.sent);
                        if self.exact {
                            let args = Value::Object(std::mem::take(&mut self.args));
                            let mut d = Draft::new(std::mem::take(name), Some(args), block.format);
                            d.repairs = std::mem::take(&mut self.repairs);
                            self.built.push(d);
                        }
                        let from = e + tags.call_end.len();
                        self.state = LiveState::Head {
                            from,
                            find: ScanFrom(from),
                        };
                        continue;
                    }
                    let Some(c) = pe else {
                        // The parameter is open: stream its value when it is text. Its
                        // opening tag ends with a `>`; until one arrives it is not read
                        // (left open, it is read whole when it completes, as `Whole` is).
                        if value.is_none() {
                            let from = (*no_gt).max(seg_start);
                            let gt = region
                                .as_bytes()
                                .get(from..)
                                .and_then(|tail| memchr::memchr(b'>', tail));
                            *no_gt = gt.map_or(region.len(), |i| from + i);
                            if gt.is_some() {
                                *value = open_value(
                                    tags,
                                    block.format,
                                    region,
                                    seg_start,
                                    name,
                                    &self.args,
                                    &mut self.kinds,
                                    self.calls > 1,
                                    cx,
                                );
                            }
                        }
                        let upto = region.get(..held.unwrap_or(region.len())).unwrap_or("");
                        if let Some(OpenValue::Text(t)) = value
                            && !t.forward(upto, tags, &mut self.sent, cx)
                        {
                            *value = Some(OpenValue::Whole);
                        }
                        return;
                    };
                    let seg_end = c + tags.param_end.len();
                    let extra = region.get(seg_start..seg_end).unwrap_or("");
                    if let (BodyRule::Invokes(itags), Some(OpenValue::Text(t))) =
                        (block.body, &*value)
                        && self.alone
                        && let Some((text, own)) = read_text_param(t, itags, extra, region, c)
                        && !*self
                            .has_rules
                            .get_or_insert_with(|| block.format.schema_rules().is_some())
                    {
                        // The rest of the value, then the quote.
                        let Some(rest) = text.strip_prefix(t.sent(region)) else {
                            self.stopped = true;
                            return;
                        };
                        send_string_tail(&mut self.sent, rest, cx);
                        if self.exact {
                            self.repairs.extend(own);
                        }
                        let text = text.to_owned();
                        if let Some(OpenValue::Text(t)) = value.take() {
                            self.args.insert(t.key, Value::String(text));
                        }
                        // The call's end is searched again after this value.
                        *call_end = ScanFrom(seg_end);
                        *call_end_at = None;
                        *seg = seg_end;
                        *param_end = ScanFrom(seg_end);
                        continue;
                    }
                    if let (BodyRule::Invokes(itags), Some(OpenValue::Typed { key, from })) =
                        (block.body, &*value)
                        && self.alone
                        && c >= *from
                        && let Some(raw) = region.get(*from..c)
                        && let Some(attr) = skip_space(extra).strip_prefix(unquoted(itags.param))
                        && !*self
                            .has_rules
                            .get_or_insert_with(|| block.format.schema_rules().is_some())
                    {
                        // As `invoke_param_alone` reads it: the name's quote, then the value
                        // typed by the schema.
                        if has_key(&self.args, key) {
                            // A repeated key would rewrite a value already sent.
                            self.stopped = true;
                            return;
                        }
                        let raw = if itags.verbatim {
                            raw
                        } else {
                            layout_trim(raw)
                        };
                        let mut own = Vec::new();
                        if !attr.starts_with('"') {
                            own.push(quotes_repair("parameter", key));
                        }
                        let v = typed(cx, block.format, name, key, raw, &mut own);
                        let mut fragment = String::with_capacity(key.len() + raw.len() + 8);
                        fragment.push(if self.sent.is_empty() { '{' } else { ',' });
                        push_json_str(&mut fragment, key);
                        fragment.push(':');
                        push_json_value(&mut fragment, &v);
                        send_owned(&mut self.sent, fragment, cx);
                        if self.exact {
                            self.repairs.extend(own);
                        }
                        if let Some(OpenValue::Typed { key, .. }) = value.take() {
                            self.args.insert(key, v);
                        }
                        *seg = seg_end;
                        *param_end = ScanFrom(seg_end);
                        continue;
                    }
                    // The parameter's arguments and its own repairs (`None`: not known).
                    let read = match block.body {
                        BodyRule::Invokes(itags) if self.alone => {
                            invoke_param_alone(extra, name, cx, block.format, itags)
                                .map(|(args, own)| (args, Some(own)))
                        }
                        _ => match Self::read(tags, block, region, head.clone(), extra, cx) {
                            Some(Draft {
                                name: n,
                                args: Some(Value::Object(args)),
                                repairs,
                                ..
                            }) if n == *name => {
                                // Its own repairs follow its call's head's, which every read
                                // of the call repeats.
                                let head_repairs = self.repairs.get(..self.head_repairs);
                                let own = repairs
                                    .split_at_checked(self.head_repairs)
                                    .filter(|(h, _)| Some(*h) == head_repairs)
                                    .map(|(_, own)| own.to_vec());
                                Some((args, own))
                            }
                            _ => None,
                        },
                    };
                    let Some((args, own)) = read else {
                        self.stopped = true;
                        return;
                    };
                    if self.exact {
                        match own {
                            Some(own) => self.repairs.extend(own),
                            None => self.exact = false,
                        }
                    }
                    match value.take() {
                        Some(OpenValue::Text(t)) if t.opened => {
                            // The rest of the value as the family read it, then the quote.
                            let rest = match args.get(&t.key) {
                                Some(Value::String(v)) if args.len() == 1 => {
                                    v.strip_prefix(t.sent(region))
                                }
                                _ => None,
                            };
                            let Some(rest) = rest else {
                                self.stopped = true;
                                return;
                            };
                            // The rest of the string, its closing quote included.
                            send_string_tail(&mut self.sent, rest, cx);
                            self.args.extend(args);
                            // The call's end is searched again after this value.
                            *call_end = ScanFrom(seg_end);
                            *call_end_at = None;
                        }
                        _ => {
                            // A repeated key would rewrite a value already sent.
                            if args.keys().any(|k| self.args.contains_key(k)) {
                                self.stopped = true;
                                return;
                            }
                            for (k, v) in args {
                                let mut fragment = String::with_capacity(k.len() + 16);
                                fragment.push(if self.sent.is_empty() { '{' } else { ',' });
                                push_json_str(&mut fragment, &k);
                                fragment.push(':');
                                push_json_value(&mut fragment, &v);
                                send_owned(&mut self.sent, fragment, cx);
                                self.args.insert(k, v);
                            }
                        }
                    }
                    *seg = seg_end;
                    *param_end = ScanFrom(seg_end);
                }
            }
        }
    }

    /// The block closed with `drafts`: sends the rest of the last announced call's
    /// arguments; a warning when what was sent is not the final arguments (a repair
    /// changed a value already sent).
    fn finish(
        &mut self,
        drafts: &[Draft],
        span: Range<usize>,
        o: &mut Outcome,
        cx: &mut ReadCx<'_>,
    ) {
        if self.rebuilt {
            // Each call's arguments are the values sent, written as the final arguments
            // serialise them, and every call closed: nothing to send or to compare.
            debug_assert!(
                (0..self.closed.len()).zip(drafts).all(|(i, d)| d
                    .args
                    .as_ref()
                    .map(Value::to_string)
                    .as_deref()
                    == Some(self.closed.get(i)))
            );
            return;
        }
        let closed = (self.closed.len(), |i| self.closed.get(i));
        finish_sent_with(closed, self.calls, &self.sent, drafts, span, o, cx);
    }
}

/// The arguments sent for each call closed while streaming, one after another in one
/// buffer: the first call's buffer is taken whole (a block of one call allocates nothing
/// more), each later one's copied and the open call's buffer cleared, so it keeps its room
/// (a `String` per call was allocated and grown while its arguments were sent: ~4
/// allocations a call, minimax_m2/100 calls).
#[derive(Default)]
struct ClosedArgs {
    text: String,
    /// Where each call's arguments end in `text`.
    ends: Vec<usize>,
}

impl ClosedArgs {
    /// A call closed with `sent` (left empty).
    fn push(&mut self, sent: &mut String) {
        if self.ends.is_empty() {
            self.text = std::mem::take(sent);
        } else {
            self.text.push_str(sent);
            sent.clear();
        }
        self.ends.push(self.text.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Call `i`'s arguments (`i < len()`).
    fn get(&self, i: usize) -> &str {
        let from = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        self.text.get(from..self.ends[i]).unwrap_or("")
    }
}

/// The end of a block whose calls' arguments were streamed as final-JSON text: `closed`
/// holds what was sent for each call closed while streaming, `sent` what was sent of the
/// last announced one (call `calls - 1`). Sends the rest of the last call's arguments; a
/// warning when what was sent is not the final arguments (a repair changed a value already
/// sent).
pub(crate) fn finish_sent(
    closed: &[String],
    calls: usize,
    sent: &str,
    drafts: &[Draft],
    span: Range<usize>,
    o: &mut Outcome,
    cx: &mut ReadCx<'_>,
) {
    let closed = (closed.len(), |i: usize| {
        closed.get(i).map_or("", String::as_str)
    });
    finish_sent_with(closed, calls, sent, drafts, span, o, cx);
}

/// [`finish_sent`] with what was sent for each closed call as `closed.1(i)` for `i` below
/// `closed.0` ([`ClosedArgs`] keeps them in one buffer).
fn finish_sent_with<'c>(
    closed: (usize, impl Fn(usize) -> &'c str),
    calls: usize,
    sent: &str,
    drafts: &[Draft],
    span: Range<usize>,
    o: &mut Outcome,
    cx: &mut ReadCx<'_>,
) {
    let (closed_len, closed) = closed;
    // Serialised from the draft's own value (no copy of it).
    let args = |i: usize| {
        drafts
            .get(i)
            .and_then(|d| d.args.as_ref())
            .map_or_else(|| "{}".to_owned(), Value::to_string)
    };
    let mut differ: Vec<&str> = Vec::new();
    // A broken call's stream is abandoned: it never finishes.
    let broken = |i: usize| drafts.get(i).is_some_and(|d| d.broken.is_some());
    for i in 0..closed_len {
        if !broken(i) && closed(i) != args(i) {
            differ.push(drafts.get(i).map_or("", |d| d.name.as_str()));
        }
    }
    if calls > closed_len && !broken(calls - 1) {
        let i = calls - 1;
        let full = args(i);
        match full.strip_prefix(sent) {
            Some(rest) => cx.arguments(rest),
            None => differ.push(drafts.get(i).map_or("", |d| d.name.as_str())),
        }
    }
    if !differ.is_empty() {
        o.diagnostics.push(Diagnostic::warning(
            format!(
                "arguments streamed for {differ:?} differ from the final arguments (a value was repaired after it was sent); the finished call is authoritative"
            ),
            span,
        ));
    }
}

/// What a block whose calls stand alone read, for [`finish_standalone`].
pub(crate) struct StandaloneBlock<'a> {
    /// The calls read whole.
    pub drafts: Vec<Draft>,
    /// One reason per call that could not be read (its siblings still run).
    pub errors: Vec<String>,
    /// The block's closing tag followed its body.
    pub closed: bool,
    /// The closing tag, for the repair when it is missing at the end of the output.
    pub close: &'a str,
    /// The tag named in the truncation error.
    pub unclosed: &'a str,
    /// The error of a block without any readable call.
    pub empty: &'a str,
    /// What was streamed (`closed`, `calls`, `sent` as in [`finish_sent`]), if anything.
    pub streamed: Option<(&'a [String], usize, &'a str)>,
    /// The text of the last call, from its start, when its own closing marker never came
    /// (its error is the last of `errors`): in a block the end of the output cut, the cut
    /// call (see [`BlockReader`]'s rule for a cut block).
    pub cut: Option<&'a str>,
}

/// Whether a block reader that builds its calls from its stream (MiniMax M3, Hunyuan) read
/// the block whole, so its drafts are the calls it built and what was sent is their
/// arguments exactly: the block closed, the stream stayed `exact`, every announced call was
/// built, and only blanks follow the last (`between`: where the stream stands when it is
/// between calls).
pub(crate) fn streamed_whole(
    closed: bool,
    exact: bool,
    announced: usize,
    built: usize,
    between: Option<usize>,
    region: &str,
    body_end: usize,
) -> bool {
    closed
        && exact
        && announced > 0
        && built == announced
        && between.is_some_and(|at| {
            region
                .get(at..body_end)
                .is_some_and(|rest| skip_space(rest).is_empty())
        })
}

/// The end of a block whose calls stand alone: a block cut inside a call returns the calls
/// before it and reports the cut one; a block cut before its closing tag is otherwise
/// truncated unless the output ended deliberately with every call whole; each broken call
/// is reported while its siblings run; streamed arguments are finished.
pub(crate) fn finish_standalone(
    b: StandaloneBlock<'_>,
    end: usize,
    cx: &mut ReadCx<'_>,
) -> Advance {
    let StandaloneBlock {
        mut drafts,
        mut errors,
        closed,
        close,
        unclosed,
        empty,
        streamed,
        cut,
    } = b;
    // Cut inside a call after complete ones: the cut call is reported, the others run.
    let cut = cut.filter(|_| !closed && drafts.iter().any(|d| d.broken.is_none()));
    if cut.is_some() {
        errors.pop();
    }
    let before = drafts.len() + errors.len();
    if !closed && cut.is_none() && (!errors.is_empty() || !cx.closes_at_end()) {
        return Advance::Broken {
            end,
            why: format!(
                "truncated tool call: {unclosed} is not closed before the end of output; not run"
            ),
        };
    }
    if drafts.is_empty() {
        return Advance::Broken {
            end,
            why: errors.pop().unwrap_or_else(|| empty.to_owned()),
        };
    }
    let span = cx.span(0, end);
    let mut o = Outcome::default();
    for why in errors {
        o.diagnostics.push(Diagnostic::error(
            format!("{why}; that call is not run, its siblings are"),
            span.clone(),
        ));
    }
    for d in &mut drafts {
        d.span = span.clone();
        if !closed && cut.is_none() {
            d.repairs.push(closing_marker_repair(close));
        }
        o.diagnostics
            .extend(cx.ctx.unknown_name_warning(&d.name, span.clone()));
    }
    if let Some(text) = cut {
        // Announced while streaming, the cut call never finishes.
        let format = drafts.first().map_or(FormatId::FALLBACK, |d| d.format);
        let mut d = Draft::broken(
            String::new(),
            format!(
                "truncated tool call: the output ends inside call {} of the {unclosed} block, which is not run; the calls before it are",
                before + 1
            ),
            format,
        );
        d.span = cx.span(end - text.len(), end);
        drafts.push(d);
        o.text = text.to_owned();
    }
    if let Some((sent_closed, calls, sent)) = streamed.filter(|&(_, calls, _)| calls > 0) {
        // A cut call announced while streaming never finishes (only the last can be cut,
        // and every call before the last announced one was closed while streaming).
        let whole = calls.min(drafts.len());
        let sent_closed = sent_closed
            .get(..whole.min(sent_closed.len()))
            .unwrap_or(&[]);
        finish_sent(sent_closed, whole, sent, &drafts, span, &mut o, cx);
    }
    o.drafts = drafts;
    Advance::Done { end, outcome: o }
}

/// What `block`'s lead says of `region` (the opener first), as its reader reads it.
#[inline]
fn read_lead<'a>(block: &Block, region: &'a str, is_final: bool) -> Lead<'a> {
    let after = region.get(block.open.len()..).unwrap_or("");
    let mut lead_end = after.len().min(MAX_LEAD);
    while !after.is_char_boundary(lead_end) {
        lead_end -= 1;
    }
    let lead = after.get(..lead_end).unwrap_or("");
    block.lead.read(lead, is_final || after.len() > MAX_LEAD)
}

/// Whether a fresh [`BlockReader`] of `block` answers `NotMine` to `region` at once
/// ([`crate::family::Family::declines`] for the families reading with one).
pub(crate) fn block_declines(block: &Block, region: &str, is_final: bool) -> bool {
    lead_verdict(block, region, is_final).is_none()
}

/// What a fresh [`BlockReader`]'s first read of `region`'s lead says: `None` when it
/// answers `NotMine` at once ([`block_declines`]), else whether the lead is already ours
/// (`false`: more bytes decide).
pub(crate) fn lead_verdict(block: &Block, region: &str, is_final: bool) -> Option<bool> {
    match read_lead(block, region, is_final) {
        Lead::NotMine => None,
        Lead::NeedMore if is_final => None,
        Lead::NeedMore => Some(false),
        Lead::Mine(_) => Some(true),
    }
}

impl RegionReader for BlockReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        let b = self.block;
        let after = region.get(b.open.len()..).unwrap_or("");
        if (!self.mine || !self.announced) && self.lead_mine && !cx.streaming() {
            // The lead said ours when the reader was made (and says it still: a lead's
            // verdict never changes once it is `Mine`); one-shot announces nothing, so the
            // name it shows is not needed.
            self.mine = true;
            self.announced = true;
        }
        if !self.mine || !self.announced {
            let lead = if !self.mine && !is_final && region.len() == self.lead_more {
                Lead::NeedMore
            } else {
                read_lead(b, region, is_final)
            };
            match lead {
                Lead::NeedMore if !self.mine => {
                    if is_final {
                        return Advance::NotMine;
                    }
                    // Nothing changed: the pushes that cannot decide the lead need not be read.
                    if let Some(wake) = lead_wake(b, after)
                        && !super::marked::read_every_push()
                    {
                        cx.wake = Some(wake);
                    }
                    return Advance::NeedMore;
                }
                Lead::NotMine if !self.mine => return Advance::NotMine,
                Lead::Mine(name) => {
                    self.mine = true;
                    if name.is_none() && !b.lead.names() {
                        // Its lead never names a call: reading it again announces nothing.
                        self.announced = true;
                    }
                    if let Some(name) = name
                        && !self.announced
                    {
                        self.announced = true;
                        cx.start_call_in(region, &name);
                        // Only the streamed arguments read it.
                        if cx.streaming() {
                            self.lead_name = Some(LeadName::new(name, region));
                        }
                    }
                }
                _ => {}
            }
            if after.len() > MAX_LEAD {
                self.announced = true;
            }
        }
        // A block read ahead (one-shot: `BodyRule::Call`, a JSON body's `Json` and
        // `JsonItems`, whose closing tag is searched outside strings): no search for its
        // closing tag.
        let mut ahead = match b.body {
            _ if !self.mine || cx.streaming() || !super::marked::read_ahead() => None,
            BodyRule::Call { ahead, .. } => ahead(after, b.close, cx, b.format),
            BodyRule::Json if self.json.is_some() => {
                super::marked::json_body_ahead(after, b.close, cx, b.format)
            }
            BodyRule::JsonItems(one) if self.json.is_some() => {
                super::marked::json_items_ahead(after, b.close, b.format, one)
            }
            _ => None,
        };
        let found = match (&ahead, self.json.as_mut()) {
            (Some((n, _)), _) => Some(b.open.len() + n),
            (None, Some(json)) => json.find(region, b.close).or_else(|| {
                // A body whose quotes do not balance: the first closing tag, as a
                // block that is not JSON has it.
                is_final
                    .then(|| find_from(region, b.close, b.open.len()))
                    .flatten()
            }),
            (None, None) => find_close(&mut self.close, region, b.close),
        };
        let (body_end, end, closed) = match found {
            Some(i) => (i, i + b.close.len(), true),
            None if is_final => (region.len(), region.len(), false),
            None => {
                if cx.streaming()
                    && let Some(later) = self.later.take()
                {
                    self.live = Some(Live::Stream(later.build(
                        b,
                        self.json.is_some(),
                        cx.ctx,
                        cx.kept,
                    )));
                }
                match self.live.as_mut().filter(|_| cx.streaming()) {
                    Some(Live::Params(live)) => {
                        live.advance(b, region, lead_name(&self.lead_name, region), cx);
                        if let Some(wakes) = params_wake(b)
                            && self.mine
                            && self.announced
                            && let Some(wake) = live.wake(region, wakes)
                            && !super::marked::read_every_push()
                        {
                            cx.wake = Some(wake);
                        }
                    }
                    Some(Live::Stream(live)) => {
                        live.advance(region, lead_name(&self.lead_name, region), cx)
                    }
                    None => {}
                }
                return Advance::NeedMore;
            }
        };
        let truncated = || Advance::Broken {
            end,
            why: format!(
                "truncated tool call: {} is not closed before the end of output; not run",
                b.open
            ),
        };
        let body = region.get(b.open.len()..body_end).unwrap_or("");
        if !closed && self.json.is_some() {
            // A JSON list cut inside an entry: the complete entries are calls.
            let lead = body.len() - skip_space(body).len();
            let start = b.open.len() + lead;
            if let Some(mut o) =
                super::marked::cut_list_calls(&body[lead..], start, b.format, b.body, cx)
            {
                if let Some(live) = self
                    .live
                    .as_mut()
                    .filter(|l| (1..=o.drafts.len()).contains(&l.calls()) && cx.streaming())
                {
                    let drafts = std::mem::take(&mut o.drafts);
                    let span = cx.span(0, end);
                    live.finish(region, body_end, &self.lead_name, &drafts, span, &mut o, cx);
                    o.drafts = drafts;
                }
                return Advance::Done { end, outcome: o };
            }
        }
        if !closed
            && let Some(cut) = self
                .cut_inside_a_call(region, body_end, cx)
                .or_else(|| self.cut_inside_the_last_line(region, body_end, cx))
        {
            return cut;
        }
        if !closed && !cx.closes_at_end() {
            return truncated();
        }
        // A block whose calls the stream read whole: built from them (no second read).
        let streamed = match self
            .live
            .as_mut()
            .filter(|l| closed && l.calls() > 0 && cx.streaming())
        {
            Some(Live::Params(live)) => live.drafts(b, region, body_end),
            Some(Live::Stream(live)) => live
                .draft(
                    region,
                    lead_name(&self.lead_name, region),
                    body_end,
                    b.format,
                )
                .map(|d| vec![d]),
            None => None,
        };
        let read = match streamed.or_else(|| ahead.take().map(|(_, drafts)| drafts)) {
            Some(drafts) => Ok(drafts),
            None => b.body.read_or_failure(body, cx, b.format),
        };
        match read {
            // Every call is broken: the block is, and stays in the reply as text.
            Ok(drafts) if drafts.iter().all(|d| d.broken.is_some()) => {
                if !closed {
                    return truncated();
                }
                let why = drafts.into_iter().find_map(|d| d.broken);
                Advance::Broken {
                    end,
                    why: why.unwrap_or_else(|| "empty tool call block".into()),
                }
            }
            Ok(mut drafts) => {
                for d in &mut drafts {
                    d.span = cx.span(0, end);
                    if !closed {
                        // The reply ended deliberately right after a complete body: the
                        // server stripped the closing token.
                        d.repairs.push(closing_marker_repair(b.close));
                    }
                }
                let mut o = Outcome::default();
                for d in drafts.iter().filter(|d| d.broken.is_none()) {
                    o.diagnostics
                        .extend(cx.ctx.unknown_name_warning(&d.name, cx.span(0, end)));
                }
                let span = cx.span(0, end);
                match self.live.as_mut().filter(|l| l.calls() > 0) {
                    Some(Live::Params(live)) => live.finish(&drafts, span, &mut o, cx),
                    Some(Live::Stream(live)) => {
                        let body = region.get(..body_end).unwrap_or("");
                        let lead = lead_name(&self.lead_name, region);
                        live.finish(body, lead, &drafts, span, &mut o, cx)
                    }
                    None => {
                        // Only a listener reads the fragment: one-shot skips the copy and
                        // the serialisation.
                        if let Some(first) = drafts.first()
                            && self.lead_name.is_some()
                            && cx.streaming()
                        {
                            match &first.args {
                                Some(args) => cx.arguments(&args.to_string()),
                                None => cx.arguments("{}"),
                            }
                        }
                    }
                }
                o.drafts = drafts;
                // The reader is done: its stream serves the next block of its format.
                if let Some(Live::Stream(mut live)) = self.live.take()
                    && live.reset()
                {
                    cx.kept.stream = Some((b.format, live));
                }
                Advance::Done { end, outcome: o }
            }
            Err(_) if !closed => truncated(),
            Err(why) => why.broken(end),
        }
    }
}

impl BlockReader {
    /// A block the end of the output cut inside a call, after calls closed by their own
    /// marker (issue 21: each call in a block stands alone): those calls are returned, the
    /// cut one is reported as truncated and its text stays in the reply, however the reply
    /// ended, as for a cut JSON list ([`super::marked::cut_list_calls`]). `None` when the
    /// block's calls have no marker of their own, no call closed before the cut, or nothing
    /// but blanks follows the last closed call (only the block's closing marker is
    /// missing: how the reply ended decides, [`crate::ReplyEnd`]).
    fn cut_inside_a_call(
        &mut self,
        region: &str,
        body_end: usize,
        cx: &mut ReadCx<'_>,
    ) -> Option<Advance> {
        let b = self.block;
        let call_end = self.live.as_ref()?.call_end()?;
        let body = region.get(b.open.len()..body_end)?;
        let whole = body.rfind(call_end)? + call_end.len();
        let cut = body.get(whole..)?;
        if cut.trim().is_empty() {
            return None;
        }
        let mut drafts = b.body.read(body.get(..whole)?, cx, b.format).ok()?;
        if drafts.iter().all(|d| d.broken.is_some()) {
            return None;
        }
        let end = region.len();
        let span = cx.span(0, end);
        let mut o = Outcome::default();
        for d in &mut drafts {
            d.span = span.clone();
            if d.broken.is_none() {
                o.diagnostics
                    .extend(cx.ctx.unknown_name_warning(&d.name, span.clone()));
            }
        }
        // The cut call: announced while streaming, it never finishes.
        let mut cut_call = Draft::broken(
            String::new(),
            format!(
                "truncated tool call: the output ends inside call {} of the {} block, which is not run; the calls before it are",
                drafts.len() + 1,
                b.open
            ),
            b.format,
        );
        cut_call.span = cx.span(b.open.len() + whole, end);
        drafts.push(cut_call);
        if let Some(live) = self.live.as_mut().filter(|l| l.calls() > 0) {
            live.finish(region, body_end, &self.lead_name, &drafts, span, &mut o, cx);
        }
        o.text = cut.to_owned();
        o.drafts = drafts;
        Some(Advance::Done { end, outcome: o })
    }

    /// A block of one call per line with no marker closing a call and no streaming of its
    /// calls (MiniCPM3's Python lines) that the end of the output cut inside its last line: the family's body reader
    /// reads that line as a broken call after whole ones; it is reported as the cut call,
    /// its text kept, and the calls before it run, however the reply ended.
    fn cut_inside_the_last_line(
        &mut self,
        region: &str,
        body_end: usize,
        cx: &mut ReadCx<'_>,
    ) -> Option<Advance> {
        let b = self.block;
        // Only a block that does not stream its calls (the same whole and streamed).
        if self.live.is_some() || self.later.is_some() {
            return None;
        }
        let body = region.get(b.open.len()..body_end)?;
        let line = body.rfind('\n')? + 1;
        let cut = body.get(line..)?;
        if cut.trim().is_empty() {
            return None;
        }
        let mut drafts = b.body.read(body, cx, b.format).ok()?;
        let (last, before) = drafts.split_last_mut()?;
        if last.broken.is_none() || before.iter().all(|d| d.broken.is_some()) {
            return None;
        }
        let end = region.len();
        let span = cx.span(0, end);
        last.broken = Some(format!(
            "truncated tool call: the output ends inside call {} of the {} block, which is not run; the calls before it are",
            before.len() + 1,
            b.open
        ));
        last.span = cx.span(b.open.len() + line, end);
        let mut o = Outcome::default();
        for d in before.iter_mut() {
            d.span = span.clone();
            if d.broken.is_none() {
                o.diagnostics
                    .extend(cx.ctx.unknown_name_warning(&d.name, span.clone()));
            }
        }
        o.text = cut.to_owned();
        o.drafts = drafts;
        Some(Advance::Done { end, outcome: o })
    }
}

/// [`invoke_head`] of a head as the templates write it: blanks, the `invoke` tag with its
/// name double-quoted and `>` right after, blanks; `None` for any other head (read by
/// [`invoke_head`] then). Same answer: the name ends at the next `"`, is checked by
/// [`valid_name`], needs no repair, and no token between invokes is read (a family with
/// some is left to [`invoke_head`]); two byte searches, not a `str` searcher (~670
/// instructions a call head, minimax_m2/100 calls).
fn plain_invoke_head<'h>(head: &'h str, tags: &InvokeTags) -> Option<&'h str> {
    if !tags.between.is_empty() || !tags.invoke.ends_with('"') {
        return None;
    }
    let rest = skip_space(head).strip_prefix(tags.invoke)?;
    let end = memchr::memchr(b'"', rest.as_bytes())?;
    let name = rest.get(..end)?;
    let after = rest.get(end + 1..)?.strip_prefix('>')?;
    (skip_space(after).is_empty() && valid_name(name)).then_some(name)
}

/// Whether the arguments `map` hold `key`: a few keys compared in turn (a call's arguments
/// while they stream; hashing the key cost more), else looked up.
#[inline]
fn has_key(map: &Map<String, Value>, key: &str) -> bool {
    if map.len() <= 8 {
        map.keys().any(|k| k == key)
    } else {
        map.contains_key(key)
    }
}

/// [`text_param`]'s verdict per tool and key, kept from a block's second call on (a block
/// of many calls names the same few again): the tool's spec looked up by name and the key's
/// schema types read once each (~450 instructions a parameter, minimax_m2/100 calls). A
/// block's first call keeps none (a block of one call, Qwen3-Coder's, paid the copies of
/// tool and key for nothing: qwen3_coder/100 calls +2.2 %). The registry does not change
/// while a reply is parsed. At most [`TEXT_KINDS`] are kept.
#[derive(Default)]
struct TextKinds(Vec<(String, String, Option<bool>)>);

/// The most verdicts a [`TextKinds`] keeps.
const TEXT_KINDS: usize = 32;

impl TextKinds {
    /// `keep`: a miss is kept for later calls.
    fn get(&mut self, cx: &ReadCx<'_>, tool: &str, key: &str, keep: bool) -> Option<bool> {
        if let Some(&(_, _, kind)) = self.0.iter().find(|(t, k, _)| t == tool && k == key) {
            return kind;
        }
        let kind = text_param(cx.ctx.spec(tool), key);
        if keep && self.0.len() < TEXT_KINDS {
            self.0.push((tool.to_owned(), key.to_owned(), kind));
        }
        kind
    }
}

/// Reads the open parameter's opening tag (after blanks from `seg`): `None` while it is
/// not complete; a text value when the markup or the tool's schema says the value is text
/// and its key was not sent before.
#[allow(clippy::too_many_arguments)]
fn open_value(
    tags: &StreamTags,
    format: FormatId,
    region: &str,
    seg: usize,
    name: &str,
    keys: &Map<String, Value>,
    kinds: &mut TextKinds,
    later_call: bool,
    cx: &ReadCx<'_>,
) -> Option<OpenValue> {
    let rest = region.get(seg..).unwrap_or("");
    let blank = rest
        .bytes()
        .take(MAX_LEAD + 1)
        .take_while(u8::is_ascii_whitespace)
        .count();
    if blank > MAX_LEAD {
        return Some(OpenValue::Whole);
    }
    let p = seg + blank;
    let mut end = region.len().min(p + MAX_LEAD);
    while !region.is_char_boundary(end) {
        end -= 1;
    }
    let header = region.get(p..end).unwrap_or("");
    if header.is_empty() {
        return None;
    }
    match tags.value.read(header, tags.param) {
        ValueHead::NeedMore if end < p + MAX_LEAD => None,
        ValueHead::NeedMore | ValueHead::No => Some(OpenValue::Whole),
        ValueHead::At { key, at, string } => {
            // Text for sure (the markup or the schema says so), or left to the family's
            // rule for values the schema does not type, decided from the value's first bytes.
            let (rule, sure) = match string {
                Some(true) => (Untyped::Text, true),
                Some(false) => return Some(OpenValue::Whole),
                None => match kinds.get(cx, name, &key, later_call) {
                    Some(true) => (Untyped::Text, true),
                    Some(false) => return Some(OpenValue::Typed { key, from: p + at }),
                    // A value the family's schema rules drop or unwrap: sent as they read it.
                    None if format
                        .schema_rules()
                        .is_some_and(|r| r.reshapes(cx.ctx.spec(name), &key)) =>
                    {
                        return Some(OpenValue::Whole);
                    }
                    None => (format.untyped(), false),
                },
            };
            if has_key(keys, &key) {
                return Some(OpenValue::Whole);
            }
            Some(OpenValue::Text(TextValue {
                key,
                rule,
                sure,
                opened: false,
                from: p + at,
                start: None,
                emitted: p + at,
                stop_at: None,
                stops: vec![ScanFrom(p + at); tags.value_stops.len()].into_boxed_slice(),
                held: 0,
            }))
        }
    }
}

/// [`attr_param_value`] of an opening tag as the templates write it, `tag"KEY">` and the
/// value's first byte (not a blank, not `<`), read with two byte searches; any other header
/// (another quote, attributes, a value not begun or that may be a CDATA section) is read by
/// [`attr_param_value`] itself. Same answer: `attr_value` ends a double-quoted name at the
/// next `"`, the `>` right after it closes the tag (no attributes: `string` unknown), and a
/// value that starts with neither a blank nor `<` is no CDATA section nor the start of one
/// (~540 instructions an opening tag, minimax_m2/100 calls).
fn name_attr_value(header: &str, tag: &str) -> ValueHead {
    let head = unquoted(tag);
    let canonical = header
        .strip_prefix(head)
        .and_then(|rest| rest.strip_prefix('"'))
        .and_then(|name| {
            let end = memchr::memchr(b'"', name.as_bytes())?;
            let key = name.get(..end)?;
            let after = name.get(end + 1..)?.strip_prefix('>')?;
            let first = *after.as_bytes().first()?;
            (first != b'<' && !first.is_ascii_whitespace()).then(|| ValueHead::At {
                key: key.to_owned(),
                at: head.len() + end + 3,
                string: None,
            })
        });
    canonical.unwrap_or_else(|| attr_param_value(header, tag))
}

/// The bytes after `tag` at the start of a parameter's opening tag `header`; `NeedMore`
/// while `header` may still become `tag`, `No` when it cannot.
pub(crate) fn after_tag<'h>(header: &'h str, tag: &str) -> Result<&'h str, ValueHead> {
    header.strip_prefix(tag).ok_or_else(|| {
        if tag.starts_with(header) {
            ValueHead::NeedMore
        } else {
            ValueHead::No
        }
    })
}

/// `<parameter=KEY>` (Qwen3-Coder, Seed-OSS): the value follows the `>`.
pub(crate) fn eq_param_value(header: &str) -> ValueHead {
    const TAG: &str = "<parameter=";
    let rest = match after_tag(header, TAG) {
        Ok(rest) => rest,
        Err(verdict) => return verdict,
    };
    match rest.find('>') {
        Some(gt) => ValueHead::At {
            key: rest[..gt].to_owned(),
            at: TAG.len() + gt + 1,
            string: None,
        },
        None if rest.len() > 256 || rest.contains('<') => ValueHead::No,
        None => ValueHead::NeedMore,
    }
}

/// The `<parameter=K>` families (Qwen3-Coder, Seed-OSS): a `</parameter>` ends its value
/// only when the next parameter, the end of the call or the next call follows it (blanks
/// between), or the end of the block; any other `</parameter>` is text of the value (a
/// file that holds the markup), as vLLM's `qwen3_xml` reader takes it
/// (`_is_structural_closing_tag`). Where the first `</parameter>` is such an end, this is
/// the first-`</parameter>` rule of vLLM's and SGLang's `qwen3_coder` readers.
pub(crate) const EQ_PARAM_FOLLOWERS: &[&str] = &["<parameter=", "</function>", "<function="];

/// Whether a value-closing tag followed by `after` closes the value: it does when `after`
/// is blank to the end of a `complete` block, or starts (after blanks) with one of
/// `followers` or `close` (the block's closing tag, empty when `after` is the body alone);
/// `None` while more bytes decide (blanks or a tag's first bytes end what arrived).
pub(crate) fn closes_value(
    after: &str,
    followers: &[&str],
    close: &str,
    complete: bool,
) -> Option<bool> {
    let s = skip_space(after);
    if s.is_empty() {
        return complete.then_some(true);
    }
    let mut undecided = false;
    for tag in followers
        .iter()
        .chain(Some(&close))
        .filter(|t| !t.is_empty())
    {
        match starts(s, tag) {
            Some(true) => return Some(true),
            None => undecided = true,
            Some(false) => {}
        }
    }
    if undecided && !complete {
        None
    } else {
        Some(false)
    }
}

/// The offset in `v` (a parameter's value and what follows it, to the end of the body) of
/// the `</parameter>` that closes the value by [`EQ_PARAM_FOLLOWERS`], if any.
fn eq_param_end(v: &str) -> Option<usize> {
    const END: &str = "</parameter>";
    let mut from = 0;
    while let Some(i) = find_from(v, END, from) {
        let after = v.get(i + END.len()..).unwrap_or("");
        if closes_value(after, EQ_PARAM_FOLLOWERS, "", true) == Some(true) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// Blanks allowed between a call's head and its JSON arguments, or after them.
pub(crate) const MAX_GAP: usize = 256;

/// The ASCII blanks at `from` in `bytes`, counted up to `MAX_GAP + 1` (more than
/// [`MAX_GAP`] is too many), so that each push looks at a bounded number of them.
pub(crate) fn gap_at(bytes: &[u8], from: usize) -> usize {
    bytes
        .iter()
        .skip(from)
        .take(MAX_GAP + 1)
        .take_while(|b| b.is_ascii_whitespace())
        .count()
}

/// Leading ASCII whitespace of `s`.
///
/// By bytes (an ASCII blank is one byte, and a byte of a longer character is none), not by
/// characters: a lead declined at its first bytes (`<tool_call>0<tool_call>1…`, asked at
/// every opener) paid for the decoding.
pub(crate) fn skip_space(s: &str) -> &str {
    let n = s.bytes().take_while(u8::is_ascii_whitespace).count();
    s.get(n..).unwrap_or("")
}

/// `s` starts with `tag`, or (`None`) is a proper prefix of it (more bytes decide).
///
/// The first two bytes are compared first: most tags asked of a lead that is not theirs
/// differ there (`<tool_call>0<tool_call>1…`: glm's `<arg_key>` and `</tool_call>` at
/// every opener), where the two prefix tests each compared whole slices. A tag that
/// matches is compared whole as before (a byte loop cost qwen3_coder's reader more).
pub(crate) fn starts(s: &str, tag: &str) -> Option<bool> {
    let (a, t) = (s.as_bytes(), tag.as_bytes());
    for k in 0..2 {
        match (a.get(k), t.get(k)) {
            (Some(x), Some(y)) if x != y => return Some(false),
            (Some(_), Some(_)) => {}
            _ => break,
        }
    }
    if s.starts_with(tag) {
        Some(true)
    } else if tag.starts_with(s) {
        None
    } else {
        Some(false)
    }
}

/// A tool name is at most this long.
pub(crate) const MAX_TOOL_NAME: usize = 256;

/// A tool name: non-empty, no whitespace or markup, bounded.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty() && may_start_name(name)
}

/// Whether more bytes after `s` can still make it a [`valid_name`]: bounded, no byte a name
/// refuses. The one rule for a name not yet ended, so that a lead cut before the name's end
/// refuses exactly what the whole lead's name would (a vertical tab, which is no ASCII
/// blank, is in a name for both).
fn may_start_name(s: &str) -> bool {
    s.len() <= MAX_TOOL_NAME
        && !s
            .bytes()
            .any(|b| b.is_ascii_whitespace() || matches!(b, b'<' | b'>' | b'"' | b'\''))
}

/// A tool name ended by `end` at the start of `rest`: the name once `end` is there; until
/// then, more bytes decide while what is there may still start one ([`may_start_name`]), so
/// every prefix of a lead gets the verdict of the whole lead or `NeedMore`.
pub(crate) fn name_until(rest: &str, end: u8, complete: bool) -> Lead<'_> {
    // `end` is ASCII: its byte is never inside another character (a vectorised search,
    // where `str::find` walked a short lead byte by byte).
    debug_assert!(end.is_ascii());
    match memchr::memchr(end, rest.as_bytes()) {
        Some(i) if valid_name(&rest[..i]) => Lead::Mine(Some(rest[..i].into())),
        Some(_) => Lead::NotMine,
        None if complete || !may_start_name(rest) => Lead::NotMine,
        None => Lead::NeedMore,
    }
}

/// `NAME">` at the start of `lead`, after an opener that ends with the name's opening quote
/// (`<function name="`): the name and the bytes after the `>`, or the lead's verdict while
/// either is missing or when the name is no tool name.
pub(crate) fn quoted_name(lead: &str, complete: bool) -> Result<(&str, &str), Lead<'_>> {
    // The quote or a byte no name holds ([`valid_name`]), whichever comes first: the latter
    // decides at once (`find` searched on to the quote, in a flood of `<function name="`
    // and a number the next copy's: ~90 instructions an opener, twice).
    let stop = lead
        .bytes()
        .position(|b| matches!(b, b'"' | b'<' | b'>' | b'\n'));
    let q = match stop {
        Some(q) if lead.as_bytes().get(q) == Some(&b'"') => q,
        Some(_) => return Err(Lead::NotMine),
        None if complete || lead.len() > 256 => return Err(Lead::NotMine),
        None => return Err(Lead::NeedMore),
    };
    let name = &lead[..q];
    if !valid_name(name) {
        return Err(Lead::NotMine);
    }
    match lead[q + 1..].strip_prefix('>') {
        Some(after) => Ok((name, after)),
        None if complete || q + 1 < lead.len() => Err(Lead::NotMine),
        None => Err(Lead::NeedMore),
    }
}

/// `<function=NAME>` at the start of `lead` (after blanks).
pub(crate) fn function_lead(lead: &str, complete: bool) -> Lead<'_> {
    let s = skip_space(lead);
    if s.is_empty() {
        return if complete {
            Lead::NotMine
        } else {
            Lead::NeedMore
        };
    }
    match starts(s, "<function=") {
        Some(false) => return Lead::NotMine,
        None => {
            return if complete {
                Lead::NotMine
            } else {
                Lead::NeedMore
            };
        }
        Some(true) => {}
    }
    name_until(&s["<function=".len()..], b'>', complete)
}

/// Strips the one newline of layout on each side of a tag-delimited value.
pub(crate) fn layout_trim(v: &str) -> &str {
    let v = v
        .strip_prefix("\r\n")
        .or_else(|| v.strip_prefix('\n'))
        .unwrap_or(v);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

/// Types a text value by the tool's schema, else by `format`'s rule for values the schema
/// does not type ([`crate::family::Untyped`]), recording repairs on the draft.
pub(crate) fn typed(
    cx: &ReadCx<'_>,
    format: FormatId,
    tool: &str,
    key: &str,
    raw: &str,
    repairs: &mut Vec<Repair>,
) -> Value {
    convert_text_value(raw, cx.ctx.spec(tool), key, format.untyped(), repairs)
}

/// The body of a Qwen3-Coder / Seed-OSS block: one or more
/// `<function=NAME>(<parameter=K>V</parameter>)*</function>`, blanks between.
pub(crate) fn xml_functions(
    body: &str,
    cx: &mut ReadCx<'_>,
    format: FormatId,
) -> Result<Vec<Draft>, String> {
    let mut drafts = Vec::new();
    let mut s = skip_space(body);
    while !s.is_empty() {
        let rest = s
            .strip_prefix("<function=")
            .ok_or("expected <function=NAME> in the tool call")?;
        let gt = rest.find('>').ok_or("<function= is not closed by >")?;
        let name = &rest[..gt];
        if !valid_name(name) {
            return Err(format!("invalid tool name {name:?}"));
        }
        let mut p = &rest[gt + 1..];
        let mut args = Map::new();
        let mut repairs = Vec::new();
        loop {
            p = skip_space(p);
            if let Some(after) = p.strip_prefix("</function>") {
                p = after;
                break;
            }
            if p.is_empty() || p.starts_with("<function=") {
                // `</function>` missing before `</tool_call>` or the next call: the
                // parameters are complete, as the peers read it.
                repairs.push(Repair::new(
                    "closing_tag",
                    format!("{name:?}: </function> was missing"),
                ));
                break;
            }
            let after = p.strip_prefix("<parameter=").ok_or_else(|| {
                format!("expected <parameter=KEY> or </function> in the call to {name:?}")
            })?;
            let gt = after.find('>').ok_or("<parameter= is not closed by >")?;
            let key = &after[..gt];
            let value_and_rest = &after[gt + 1..];
            // The value ends at the </parameter> the next parameter, the call's end or the
            // body's end follows ([`EQ_PARAM_FOLLOWERS`]); a missing one is tolerated
            // before the next parameter or the end of the function.
            let (raw, next) = match eq_param_end(value_and_rest) {
                Some(i) => (
                    &value_and_rest[..i],
                    &value_and_rest[i + "</parameter>".len()..],
                ),
                None => {
                    let stop = ["\n<parameter=", "<parameter=", "</function>"]
                        .iter()
                        .filter_map(|t| value_and_rest.find(t))
                        .min()
                        .ok_or_else(|| format!("parameter {key:?} of {name:?} is not closed"))?;
                    repairs.push(Repair::new(
                        "closing_tag",
                        format!("parameter {key:?}: </parameter> was missing"),
                    ));
                    (&value_and_rest[..stop], &value_and_rest[stop..])
                }
            };
            let v = typed(cx, format, name, key, layout_trim(raw), &mut repairs);
            args.insert(key.to_owned(), v);
            p = next;
        }
        let mut d = Draft::new(name, Some(Value::Object(args)), format);
        d.repairs = repairs;
        drafts.push(d);
        s = skip_space(p);
    }
    if drafts.is_empty() {
        return Err("empty tool call block".into());
    }
    Ok(drafts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads() {
        assert!(
            matches!(function_lead("\n<function=get>", false), Lead::Mine(Some(n)) if n == "get")
        );
        assert!(matches!(function_lead("\n<func", false), Lead::NeedMore));
        assert!(matches!(function_lead("{\"name\"", false), Lead::NotMine));
        assert!(matches!(
            function_lead("<function=a b>", false),
            Lead::NotMine
        ));
        assert_eq!(layout_trim("\nx\n\n"), "x\n");
    }

    /// Every prefix of a lead is read as the whole lead is, or waits for more.
    #[test]
    fn a_cut_name_gets_the_whole_names_verdict_or_waits() {
        let key = |l: Lead<'_>| match l {
            Lead::NeedMore => "more".to_owned(),
            Lead::NotMine => "not".to_owned(),
            Lead::Mine(n) => format!("mine {n:?}"),
        };
        for lead in [
            "<function=get\u{b}weather>",
            "<function=]\u{b}\u{b}get>",
            "<function=get weather>",
            "<function=a<b>",
            "<function=获取天气>",
            "<function=get\u{a0}x>",
        ] {
            let whole = key(function_lead(lead, true));
            for at in (0..lead.len()).filter(|&at| lead.is_char_boundary(at)) {
                let cut = key(function_lead(&lead[..at], false));
                assert!(
                    cut == whole || cut == "more",
                    "{lead:?} at {at}: {cut} vs {whole}"
                );
            }
        }
        assert_eq!(key(name_until(&"x".repeat(257), b'>', false)), "not");
        assert_eq!(key(name_until(&"x".repeat(256), b'>', false)), "more");
    }
}
