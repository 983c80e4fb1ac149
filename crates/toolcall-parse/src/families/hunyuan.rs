//! `hunyuan`: Tencent's Hy3 and Hy4 (Hunyuan v3/v4) write their calls as special-token
//! tags around text values:
//! `<tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value></tool_call></tool_calls>`
//! (Hy3, a newline between tags), or the same without `<tool_sep>` and with every
//! structural token carrying the checkpoint's suffix, `<tool_calls:SUFFIX>` …
//! `<arg_key:SUFFIX>` (Hy4; the suffix differs per checkpoint, `:opensource` on
//! Hy4-preview). Any suffix is accepted: the block's opener says which one its tags carry.
//!
//! Sources: vLLM's readers `vllm/tool_parsers/hy_v3_tool_parser.py` and
//! `vllm/tool_parsers/hy_v4_tool_parser.py` (the suffix read from the vocabulary's
//! structural tokens), its reasoning reader `vllm/reasoning/hy_v4_reasoning_parser.py`
//! (`<think:SUFFIX>…</think:SUFFIX>`, the opening one written by the chat template; any
//! suffix is read, [`crate::family::SuffixedMarker`]), and
//! vLLM's Hy3/Hy4 streaming tests (the token shapes of `tencent/Hy3-preview` and
//! `tencent/Hy4-preview`). Hunyuan-A13B's JSON list is `tool_calls_tag`'s: the two share
//! `<tool_calls>` and the lead tells them apart (`<tool_call` here, `[`/`{` there).
//!
//! The reader is its own (not [`super::tags::BlockReader`], whose markers are static):
//! the closing tags are built from the opener's suffix. Each call stands alone: a broken
//! call is reported and its good siblings are returned. While the block streams, each
//! call is announced at its name and each completed argument is sent as the JSON it
//! converts to. Values are typed by the tool's schema.

use super::described::{Body, Described};
use serde_json::{Map, Value};
use toolcall_core::Repair;

use super::tags::{
    StandaloneBlock, finish_standalone, layout_trim, skip_space, starts, streamed_whole, typed,
    valid_name,
};
use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::shape::{Args, Piece, Shape, TextParams};
use crate::family::{
    Advance, Instructions, ReadCx, ReasoningMarker, RegionReader, ScanFrom, SuffixedMarker, Wake,
    find_from, push_json_str, push_json_value,
};

impl FormatId {
    pub(crate) const HUNYUAN: FormatId = FormatId::builtin("hunyuan");
}

/// The block openers: unsuffixed (Hy3) and suffixed (Hy4, `:SUFFIX>` follows).
const OPENERS: &[&str] = &["<tool_calls>", "<tool_calls:"];
/// Hy3's separator after the name.
const SEP: &str = "<tool_sep>";
/// A suffix is a short token tail, never prose.
const MAX_SUFFIX: usize = 64;
/// Blanks (and a name) the reader waits through before the opener is taken for prose.
const MAX_LEAD: usize = 512;


/// The call markup a decoder is held to: Hy3's unsuffixed tags. Hy4's tags carry a suffix
/// that differs per checkpoint, which static shape data cannot name: to this constraint
/// they are prose (unconstrained), as are `<think:SUFFIX>` blocks.
static CONSTRAINT: Shape = Shape::sectioned(
    &[Piece::Lit("<tool_calls>")],
    &[Piece::Lit("</tool_calls>")],
    &[
        Piece::Lit("<tool_call>"),
        Piece::Name,
        Piece::Lit(SEP),
        Piece::Args(Args::Text(&TextParams {
            key_open: "<arg_key>",
            key_close_text: ARG_VALUE,
            key_close_json: ARG_VALUE,
            value_close: "</arg_value>",
        })),
        Piece::Ws("\n"),
        Piece::Lit("</tool_call>"),
    ],
    &[Piece::Ws("\n")],
);
const ARG_VALUE: &[Piece] = &[
    Piece::Lit("</arg_key>"),
    Piece::Ws("\n"),
    Piece::Lit("<arg_value>"),
];

/// What a fresh [`HunyuanReader`]'s first step answers `NotMine` to, read without making it
/// (its suffix and tags are allocated; a flood of `<tool_calls>` cost a reader each): the
/// suffix of `<tool_calls:SUFFIX>` (`HunyuanReader::suffix`) and the `<tool_call` tag after
/// the lead's blanks (`starts_tag`, the suffix compared as `:` and its text).
fn declines(opener: usize, region: &str, is_final: bool) -> bool {
    let (suffix, body) = if opener == 1 {
        let from = OPENERS[1].len();
        let rest = region.get(from..).unwrap_or("");
        let bad = |b: u8| b.is_ascii_whitespace() || matches!(b, b'<' | b'"' | b'\'');
        match rest.bytes().position(|b| b == b'>' || bad(b)) {
            Some(i) if i > 0 && i <= MAX_SUFFIX && rest.as_bytes().get(i) == Some(&b'>') => {
                (rest.get(..i).unwrap_or(""), from + i + 1)
            }
            None if !is_final && rest.len() <= MAX_SUFFIX => return false,
            _ => return true,
        }
    } else {
        ("", OPENERS[0].len())
    };
    let rest = region.get(body..).unwrap_or("");
    let mut s = skip_space(rest);
    if rest.len() - s.len() > MAX_LEAD {
        return true;
    }
    let colon = if opener == 1 { ":" } else { "" };
    for part in ["<tool_call", colon, suffix, ">"] {
        match starts(s, part) {
            Some(true) => s = s.get(part.len()..).unwrap_or(""),
            None if !is_final => return false,
            _ => return true,
        }
    }
    false
}

fn reader(opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(HunyuanReader::new(opener == 1)))
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("<tool_calls>\n<tool_call>{name}{SEP}\n");
    for (k, v) in args {
        s.push_str(&format!(
            "<arg_key>{k}</arg_key>\n<arg_value>{}</arg_value>\n",
            tag_text(v)
        ));
    }
    s.push_str("</tool_call>\n</tool_calls>");
    s
}

pub(crate) static HUNYUAN: Described = Described {
    id: FormatId::HUNYUAN,
    description: "<tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value></tool_call></tool_calls> (Hy3; Hy4 with <tool_calls:SUFFIX>-style tags); values typed by the schema",
    example: "<tool_calls>\\n<tool_call>get_weather<tool_sep>\\n<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n</tool_call>\\n</tool_calls>",
    body: Body::Own {
        openers: OPENERS,
        reader,
        declines,
    },
    model_names: &["hy3*", "hy4*", "hy-3*", "hy-4*"],
    // Prefixes, so that a template writing suffixed tokens matches too.
    template_markers: &["<tool_calls", "</tool_calls", "<tool_call", "<arg_key", "<arg_value"],
    // Hy4-preview's markers, so that `detect` reports them in its template; the
    // suffixed markers below read them and every other checkpoint's.
    reasoning: &[ReasoningMarker {
        open: "<think:opensource>",
        close: "</think:opensource>",
    }],
    // Hy4's `<think:SUFFIX>` … `</think:SUFFIX>` with any suffix (vLLM's Hy4 reasoning
    // reader takes the suffix `:[^\s>]+` from the vocabulary); a block the template
    // opened ends at `</think:SUFFIX>` whatever its suffix.
    suffixed_reasoning: &[SuffixedMarker {
        open: "<think:",
        close: "</think:",
    }],
    suffixed_tags: &["<tool_calls:", "<tool_call:", "<arg_key:", "<think:"],
    instructions: Some(Instructions {
        how: "To call tools, write <tool_calls>, then per call <tool_call>TOOL_NAME<tool_sep> and for each argument <arg_key>ARGUMENT_NAME</arg_key><arg_value>value</arg_value> (text as is; numbers, booleans, arrays and objects as JSON), then </tool_call>; end with </tool_calls>.",
        several: "- To make several calls, write several <tool_call> blocks inside the one <tool_calls>; they run in that order.\n",
    }),
    example_call: Some(example_call),
    constraint: Some(&CONSTRAINT),
    ..Described::BASE
};


/// The block's tags, with the opener's suffix (`""` for Hy3).
#[derive(Debug)]
struct Tags {
    /// Region offset just past the opener (its suffix and `>` included).
    body: usize,
    calls_end: String,
    call: String,
    call_end: String,
    key: String,
    key_end: String,
    value: String,
    value_end: String,
}

impl Tags {
    fn new(suffix: &str, body: usize) -> Self {
        // Written in place (`format!` cost ~1 k instructions a tag, 7 a block).
        let tag = |name: &str| {
            let mut t = String::with_capacity(name.len() + suffix.len() + 2);
            t.push('<');
            t.push_str(name);
            t.push_str(suffix);
            t.push('>');
            t
        };
        Tags {
            body,
            calls_end: tag("/tool_calls"),
            call: tag("tool_call"),
            call_end: tag("/tool_call"),
            key: tag("arg_key"),
            key_end: tag("/arg_key"),
            value: tag("arg_value"),
            value_end: tag("/arg_value"),
        }
    }
}

/// Where the streaming side is.
#[derive(Debug)]
enum Live {
    /// Before a call's opening tag (or the block's end), at this offset.
    Between(usize),
    /// Inside a call announced as `name` whose body (after its opening tag) starts at
    /// `body`, its next argument at `at`.
    Call {
        name: String,
        body: usize,
        at: usize,
        value_end: ScanFrom,
        /// The argument at `at` opened with its key tag: only its value's end is awaited
        /// (the tags before it are not looked at again on every push).
        in_pair: bool,
    },
    Stopped,
}

struct HunyuanReader {
    suffixed: bool,
    /// The opener's suffix (`""` for Hy3) and where the body starts, once read.
    suffix: Option<(String, usize)>,
    /// The block's tags, built once the block is known to be ours (a flood of openers
    /// that are prose allocates none).
    tags: Option<Tags>,
    close: ScanFrom,
    live: Live,
    /// Calls announced.
    calls: usize,
    /// What was sent of the last announced call's arguments, and of each closed one.
    sent: String,
    closed: Vec<String>,
    /// Every call so far was read while streaming as [`read_calls`] reads it (`exact`):
    /// the closed calls (`built`) and the open one's arguments and repairs make the block's
    /// drafts when it closes, without reading the body again.
    exact: bool,
    built: Vec<Draft>,
    args: Map<String, Value>,
    repairs: Vec<Repair>,
    /// The stream waits on a `<` after a call's name that may start `<tool_sep>`: the byte
    /// that tells it does not starts the call (no [`WAKE`] then).
    at_sep: bool,
}

/// What wakes a [`HunyuanReader`] whose block's tags are known
/// ([`crate::family::ReadCx::wake`]): `<` and `>`. Every step of its stream that sends
/// something or decides the block ends at a tag's `>` (a call's tag, an argument's value
/// tag, a call's or the block's closing tag, the block's closing tag its search finds once
/// the stream stopped); a tag that does not complete only moves or stops the stream. The
/// one other step, a call started by the byte after its name's `<` that is no
/// `<tool_sep>`, is waited for without it (`at_sep`).
static WAKE: Wake = Wake::new(b"<>", "");

impl HunyuanReader {
    fn new(suffixed: bool) -> Self {
        HunyuanReader {
            suffixed,
            suffix: None,
            tags: None,
            close: ScanFrom(0),
            live: Live::Stopped,
            calls: 0,
            sent: String::new(),
            closed: Vec::new(),
            exact: true,
            built: Vec::new(),
            args: Map::new(),
            repairs: Vec::new(),
            at_sep: false,
        }
    }

    /// Reads the opener's suffix; `None`: more bytes decide; `Some(false)`: not ours.
    fn suffix(&mut self, region: &str, is_final: bool) -> Option<bool> {
        if !self.suffixed {
            self.suffix = Some((String::new(), OPENERS[0].len()));
            return Some(true);
        }
        let from = OPENERS[1].len();
        let rest = region.get(from..).unwrap_or("");
        let bad = |b: u8| b.is_ascii_whitespace() || matches!(b, b'<' | b'"' | b'\'');
        match rest.bytes().position(|b| b == b'>' || bad(b)) {
            Some(i) if i > 0 && i <= MAX_SUFFIX && rest.as_bytes().get(i) == Some(&b'>') => {
                let mut suffix = String::with_capacity(i + 1);
                suffix.push(':');
                suffix.push_str(&rest[..i]);
                self.suffix = Some((suffix, from + i + 1));
                Some(true)
            }
            None if !is_final && rest.len() <= MAX_SUFFIX => None,
            _ => Some(false),
        }
    }

    /// Announces and forwards what the bytes so far complete; the offset of the block's
    /// closing tag once it meets it. While it follows the block it looks at every `</` the
    /// block holds, in order, but a last one still arriving (a call's name holds no `<`,
    /// only blanks lie between tags, and a pair's key and value are searched for their end
    /// by every `</`): the first closing tag it meets is the block's first, so the block's
    /// own search for it waits until the stream stops.
    fn stream(&mut self, region: &str, cx: &mut ReadCx<'_>) -> Option<usize> {
        self.at_sep = false;
        let t = self.tags.as_ref()?;
        loop {
            match &mut self.live {
                Live::Stopped => return None,
                Live::Between(at) => {
                    let rest = region.get(*at..).unwrap_or("");
                    let s = skip_space(rest);
                    *at += rest.len() - s.len();
                    match starts(s, &t.call) {
                        Some(true) => {}
                        None => return None,
                        Some(false) => {
                            return match starts(s, &t.calls_end) {
                                Some(true) => Some(*at),
                                // The block's closing tag arriving.
                                None => None,
                                Some(false) => {
                                    self.live = Live::Stopped;
                                    None
                                }
                            };
                        }
                    }
                    let head = &s[t.call.len()..];
                    let Some(lt) = head.find('<') else {
                        if head.len() > MAX_LEAD {
                            self.live = Live::Stopped;
                        }
                        return None;
                    };
                    let name = head[..lt].trim();
                    let mut after = &head[lt..];
                    match starts(after, SEP) {
                        Some(true) => after = &after[SEP.len()..],
                        // `<tool_sep>` may still be arriving.
                        None => {
                            self.at_sep = true;
                            return None;
                        }
                        Some(false) => {}
                    }
                    if !valid_name(name) {
                        self.live = Live::Stopped;
                        return None;
                    }
                    cx.start_call(name, None);
                    self.calls += 1;
                    self.sent.clear();
                    self.args.clear();
                    self.repairs.clear();
                    let at = region.len() - after.len();
                    self.live = Live::Call {
                        name: name.to_owned(),
                        body: region.len() - head.len(),
                        at,
                        value_end: ScanFrom(at),
                        in_pair: false,
                    };
                }
                Live::Call {
                    name,
                    body,
                    at,
                    in_pair,
                    ..
                } if !*in_pair => {
                    let rest = region.get(*at..).unwrap_or("");
                    let s = skip_space(rest);
                    *at += rest.len() - s.len();
                    if s.starts_with(t.call_end.as_str()) {
                        let close = if self.sent.is_empty() { "{}" } else { "}" };
                        self.sent.push_str(close);
                        cx.arguments(close);
                        self.closed.push(std::mem::take(&mut self.sent));
                        // The whole read ends the call at the first closing tag after its
                        // opening one: this one, as none was inside a pair (`exact`).
                        if self.exact {
                            let args = Value::Object(std::mem::take(&mut self.args));
                            let mut d = Draft::new(std::mem::take(name), Some(args), FormatId::HUNYUAN);
                            d.repairs = std::mem::take(&mut self.repairs);
                            self.built.push(d);
                        } else {
                            self.exact = false;
                        }
                        self.live = Live::Between(*at + t.call_end.len());
                        continue;
                    }
                    // The call's closing tag may be arriving; anything else opens a pair,
                    // whose key tag is checked when the pair is read whole (the tag is not
                    // compared on every push while it arrives), and whose `</` are scanned
                    // from here.
                    starts(s, &t.call_end)?;
                    *in_pair = true;
                }
                Live::Call { .. } => {}
            }
            // Inside a call, an argument open at its key tag: its value's end.
            if let Live::Call {
                name,
                at,
                value_end,
                in_pair,
                ..
            } = &mut self.live
            {
                if !*in_pair {
                    continue;
                }
                {
                    // Every `</` of the pair: the value's end, or the block's or the call's
                    // closing tag inside the key or the value (the whole read ends the block
                    // or the call there).
                    let e = loop {
                        let c = next_close(region, value_end)?;
                        let rest = region.get(c..).unwrap_or("");
                        // Compared one after the other, each only as far as needed.
                        let value = starts_close(rest, &t.value_end);
                        if value == Some(true) {
                            break c;
                        }
                        let block = starts_close(rest, &t.calls_end);
                        if block == Some(true) {
                            self.live = Live::Stopped;
                            return Some(c);
                        }
                        let call = starts_close(rest, &t.call_end);
                        if value.is_none() || block.is_none() || call.is_none() {
                            // A tag may be arriving.
                            *value_end = ScanFrom(c);
                            return None;
                        }
                        if call == Some(true) {
                            self.exact = false;
                        }
                        *value_end = ScanFrom(c + 2);
                    };
                    let end = e + t.value_end.len();
                    let pair = region.get(*at..end).unwrap_or("");
                    let mut repairs = Vec::new();
                    let Some((key, v)) = read_pair(pair, t, name, cx, &mut repairs, true)
                        .ok()
                        .filter(|(_, rest)| rest.is_empty())
                        .map(|(kv, _)| kv)
                    else {
                        self.live = Live::Stopped;
                        return None;
                    };
                    // Written in place as `to_string` writes the key and the value.
                    let mut fragment = String::with_capacity(key.len() + 16);
                    fragment.push(if self.sent.is_empty() { '{' } else { ',' });
                    push_json_str(&mut fragment, &key);
                    fragment.push(':');
                    push_json_value(&mut fragment, &v);
                    self.sent.push_str(&fragment);
                    cx.arguments_owned(fragment);
                    if self.exact {
                        // A repeated key: the whole read keeps one value, the stream sent both.
                        if self.args.contains_key(&key) {
                            self.exact = false;
                        } else {
                            self.args.insert(key, v);
                            self.repairs.append(&mut repairs);
                        }
                    }
                    *at = end;
                    *value_end = ScanFrom(end);
                    *in_pair = false;
                }
            }
        }
    }

    /// The block ends at `body_end` (`closed`: its closing tag follows).
    fn finish(
        &mut self,
        region: &str,
        body_end: usize,
        end: usize,
        closed: bool,
        cx: &mut ReadCx<'_>,
    ) -> Advance {
        let Some(t) = self.tags.as_ref() else {
            return Advance::NotMine;
        };
        let body = region.get(t.body..body_end).unwrap_or("");
        let between = match self.live {
            Live::Between(at) => Some(at),
            _ => None,
        };
        let whole = streamed_whole(
            closed,
            self.exact,
            self.calls,
            self.built.len(),
            between,
            region,
            body_end,
        );
        let (drafts, errors, cut, streamed) = if whole {
            (std::mem::take(&mut self.built), Vec::new(), None, None)
        } else {
            let (drafts, errors, cut) = read_calls(body, t, cx);
            (drafts, errors, cut, Some((&self.closed[..], self.calls, &self.sent[..])))
        };
        let block = StandaloneBlock {
            drafts,
            errors,
            closed,
            close: &t.calls_end,
            unclosed: &t.calls_end,
            empty: "a tool-call block without calls",
            streamed,
            cut,
        };
        finish_standalone(block, end, cx)
    }
}

impl RegionReader for HunyuanReader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if self.suffix.is_none() {
            match self.suffix(region, is_final) {
                None => return Advance::NeedMore,
                Some(false) => return Advance::NotMine,
                Some(true) => {}
            }
        }
        if self.tags.is_none() {
            let Some((suffix, body)) = self.suffix.as_ref() else {
                return Advance::NotMine;
            };
            let rest = region.get(*body..).unwrap_or("");
            let s = skip_space(rest);
            if rest.len() - s.len() > MAX_LEAD {
                return Advance::NotMine;
            }
            match starts_tag(s, "<tool_call", suffix) {
                Some(true) => {}
                None if !is_final => return Advance::NeedMore,
                _ => return Advance::NotMine,
            }
            let tags = Tags::new(suffix, *body);
            self.close = ScanFrom(tags.body);
            self.live = Live::Between(tags.body);
            self.tags = Some(tags);
        }
        // While the stream follows the block it finds the closing tag itself (the search
        // on every push was ~9 % of hunyuan/100 calls); the search catches up once it stops.
        if cx.streaming() && !is_final {
            if let Some(i) = self.stream(region, cx) {
                let close_len = self.tags.as_ref().map_or(0, |t| t.calls_end.len());
                return self.finish(region, i, i + close_len, true, cx);
            }
            if !matches!(self.live, Live::Stopped) {
                cx.wake = (!self.at_sep).then_some(&WAKE);
                return Advance::NeedMore;
            }
        }
        let Some(t) = self.tags.as_ref() else {
            return Advance::NotMine;
        };
        // The closing tag is borrowed, not copied on every push.
        let found = self
            .close
            .find(region, &t.calls_end)
            .map(|i| (i, i + t.calls_end.len()));
        match found {
            Some((i, end)) => self.finish(region, i, end, true, cx),
            None if is_final => self.finish(region, region.len(), region.len(), false, cx),
            None => {
                cx.wake = Some(&WAKE);
                Advance::NeedMore
            }
        }
    }
}

/// The next `</` in `region` from `from`, which then stays at a last `<` that may start
/// one (or at the end). Inline and a byte at a time over a push's few bytes: a call of
/// [`ScanFrom::find`] per push cost ~80 instructions (callgrind, hunyuan/100 calls).
fn next_close(region: &str, from: &mut ScanFrom) -> Option<usize> {
    let bytes = region.as_bytes();
    loop {
        let rest = bytes.get(from.0..).unwrap_or(&[]);
        let i = if rest.len() <= 32 {
            rest.iter().position(|&b| b == b'<')
        } else {
            memchr::memchr(b'<', rest)
        };
        let Some(i) = i else {
            from.0 = bytes.len().max(from.0);
            return None;
        };
        let c = from.0 + i;
        match bytes.get(c + 1) {
            Some(b'/') => return Some(c),
            Some(_) => from.0 = c + 1,
            None => {
                from.0 = c;
                return None;
            }
        }
    }
}

/// [`starts`] for `s` and `tag` that both start with `</`: their third bytes are compared
/// first (the closing tags a pair's `</` may start mostly differ there; three full
/// comparisons per `</` were ~4 % of hunyuan/small stream4).
#[inline]
fn starts_close(s: &str, tag: &str) -> Option<bool> {
    match (s.as_bytes().get(2), tag.as_bytes().get(2)) {
        (Some(a), Some(b)) if a != b => Some(false),
        _ => starts(s, tag),
    }
}

/// `s` starts with `head`, `suffix`, `>` (or, `None`, with a proper prefix of them).
fn starts_tag(s: &str, head: &str, suffix: &str) -> Option<bool> {
    let mut rest = s;
    for part in [head, suffix, ">"] {
        match starts(rest, part) {
            Some(true) => rest = &rest[part.len()..],
            other => return other,
        }
    }
    Some(true)
}

/// The calls of a block body: each `<tool_call…>NAME…</tool_call…>` read alone; the
/// errors of those that are broken. Text that is no call ends the reading with an error.
fn read_calls<'b>(body: &'b str, t: &Tags, cx: &ReadCx<'_>) -> (Vec<Draft>, Vec<String>, Option<&'b str>) {
    let (mut drafts, mut errors, mut cut) = (Vec::new(), Vec::new(), None);
    let mut p = body;
    loop {
        p = skip_space(p);
        if p.is_empty() {
            break;
        }
        let Some(after) = p.strip_prefix(t.call.as_str()) else {
            errors.push(format!("expected {} in the tool-call block", t.call));
            break;
        };
        let Some(e) = find_from(after, &t.call_end, 0) else {
            errors.push(format!("{} is not closed by {}", t.call, t.call_end));
            cut = Some(p);
            break;
        };
        match read_call(&after[..e], t, cx) {
            Ok(d) => drafts.push(d),
            Err(why) => errors.push(why),
        }
        p = &after[e + t.call_end.len()..];
    }
    (drafts, errors, cut)
}

/// One call's body: `NAME`, Hy3's `<tool_sep>`, then key/value pairs.
fn read_call(body: &str, t: &Tags, cx: &ReadCx<'_>) -> Result<Draft, String> {
    let name_end = body.find('<').unwrap_or(body.len());
    let name = body[..name_end].trim();
    if !valid_name(name) {
        return Err(format!("no valid tool name in {}", t.call));
    }
    let mut p = &body[name_end..];
    p = p.strip_prefix(SEP).unwrap_or(p);
    let mut args = Map::new();
    let mut repairs = Vec::new();
    loop {
        p = skip_space(p);
        if p.is_empty() {
            break;
        }
        let ((key, v), rest) = read_pair(p, t, name, cx, &mut repairs, false)?;
        args.insert(key, v);
        p = rest;
    }
    let mut d = Draft::new(name, Some(Value::Object(args)), FormatId::HUNYUAN);
    d.repairs = repairs;
    Ok(d)
}

/// `<arg_key…>K</arg_key…>` blanks `<arg_value…>V</arg_value…>` at the start of `p`: the
/// key, its typed value, and what follows. `ends`: `p` ends with the value's closing tag
/// and holds no other before it (the stream found it so), which is not searched again.
fn read_pair<'a>(
    p: &'a str,
    t: &Tags,
    tool: &str,
    cx: &ReadCx<'_>,
    repairs: &mut Vec<Repair>,
    ends: bool,
) -> Result<((String, Value), &'a str), String> {
    let after = p
        .strip_prefix(t.key.as_str())
        .ok_or_else(|| format!("expected {} in the call to {tool:?}", t.key))?;
    // The memchr-based search (`str::find` sets up a two-way searcher on every pair read,
    // twice per streamed one).
    let k_end = find_from(after, &t.key_end, 0)
        .ok_or_else(|| format!("{} is not closed by {}", t.key, t.key_end))?;
    let key = after[..k_end].trim();
    let rest = skip_space(&after[k_end + t.key_end.len()..]);
    let rest = rest
        .strip_prefix(t.value.as_str())
        .ok_or_else(|| format!("argument {key:?} has no {}", t.value))?;
    let v_end = match rest.strip_suffix(t.value_end.as_str()) {
        Some(v) if ends => Some(v.len()),
        _ => find_from(rest, &t.value_end, 0),
    }
    .ok_or_else(|| format!("{} is not closed by {}", t.value, t.value_end))?;
    let v = typed(cx, FormatId::HUNYUAN, tool, key, layout_trim(&rest[..v_end]), repairs);
    Ok(((key.to_owned(), v), &rest[v_end + t.value_end.len()..]))
}


#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{ParseOptions, detect_template, model_family, parse};

    // Small templates holding the markers Hy3's and Hy4's templates render for an
    // assistant's calls (our own text).
    #[test]
    fn detect_names_hunyuan_from_its_templates() {
        let hy3 = "{{- '<tool_calls>' }}{% for tc in m.tool_calls %}{{- '\\n<tool_call>' + tc.name + '<tool_sep>' }}{% for k, v in tc.arguments.items() %}{{- '\\n<arg_key>' + k + '</arg_key>\\n<arg_value>' + v + '</arg_value>' }}{% endfor %}{{- '\\n</tool_call>' }}{% endfor %}{{- '\\n</tool_calls>' }}";
        assert_eq!(detect_template(hy3).unwrap().family.as_deref(), Some("hunyuan"));
        let hy4 = "{{- '<tool_calls:opensource>' }}{% for tc in m.tool_calls %}{{- '<tool_call:opensource>' + tc.name }}{% for k, v in tc.arguments.items() %}{{- '<arg_key:opensource>' + k + '</arg_key:opensource><arg_value:opensource>' + v + '</arg_value:opensource>' }}{% endfor %}{{- '</tool_call:opensource>' }}{% endfor %}{{- '</tool_calls:opensource>' }}";
        assert_eq!(detect_template(hy4).unwrap().family.as_deref(), Some("hunyuan"));
        // GLM's template has the same key/value tags but no <tool_calls> block.
        let glm = "<tool_call>{{ tc.name }}{% for k, v in a.items() %}<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>{% endfor %}</tool_call>";
        assert_eq!(detect_template(glm).unwrap().family.as_deref(), Some("glm"));
    }

    #[test]
    fn model_names_pick_hunyuan() {
        for name in ["tencent/Hy3-preview", "tencent/Hy4-preview"] {
            assert_eq!(model_family(name).unwrap().family, "hunyuan", "{name}");
        }
        // Hunyuan-A13B writes the JSON list.
        assert_eq!(
            model_family("tencent/Hunyuan-A13B-Instruct").unwrap().family,
            "tool_calls_tag"
        );
    }

    // Any suffix: the opener says which one the block's tags carry; a tag with another
    // suffix is not this block's.
    #[test]
    fn any_suffix_is_read_from_the_opener() {
        let o = ParseOptions::default();
        let text = "<tool_calls:6124c78e><tool_call:6124c78e>get_weather<arg_key:6124c78e>city</arg_key:6124c78e><arg_value:6124c78e>Paris</arg_value:6124c78e></tool_call:6124c78e></tool_calls:6124c78e>";
        let p = parse(text, &o);
        assert_eq!(p.calls.len(), 1, "{:?}", p.diagnostics);
        assert_eq!(p.calls[0].arguments, serde_json::json!({"city": "Paris"}));
        let mixed = "<tool_calls:a><tool_call:b>get_weather</tool_call:b></tool_calls:a>";
        assert!(parse(mixed, &o).calls.is_empty());
        // A suffix is a short token tail, not prose.
        let prose = format!("<tool_calls:{}> and more", "x".repeat(100));
        assert!(parse(&prose, &o).calls.is_empty());
    }

    // A block whose calls the stream read is built from them (no second read); where the
    // whole read would differ (a repeated key, a closing call tag inside a value, text that
    // is no call) the body is read whole. Either way streamed in any chunks equals one-shot,
    // and a push the reader is not called for (no `<` or `>`: `WAKE`) delays nothing.
    #[test]
    fn streamed_blocks_equal_one_shot() {
        use crate::stream_replay::{assert_no_push_waits, one_shot, stream_in_char_pushes};
        let o = ParseOptions::default();
        let call = |name: &str, pairs: &[(&str, &str)]| {
            let mut c = format!("<tool_call:opensource>{name}");
            for (k, v) in pairs {
                c.push_str(&format!(
                    "<arg_key:opensource>{k}</arg_key:opensource><arg_value:opensource>{v}</arg_value:opensource>"
                ));
            }
            c + "</tool_call:opensource>"
        };
        let block = |calls: &[String]| format!("Sure. <tool_calls:opensource>{}</tool_calls:opensource> ok", calls.concat());
        let texts = [
            block(&[call("get_weather", &[("city", "Paris"), ("days", "3")]), call("get_time", &[])]),
            block(&[call("get_weather", &[("city", "Paris"), ("city", "Rome")])]),
            block(&[call("get_weather", &[("city", "a</tool_call:opensource>b")])]),
            block(&[call("get_weather", &[("city", "Oslo")]), "\nstray ".into(), call("get_time", &[])]),
            block(&[call("get_weather", &[("days", "[1, 2")])]),
            // The block's closing tag inside a value or a key: the block ends there.
            block(&[
                call("get_time", &[]),
                call("get_weather", &[("city", "a</tool_calls:opensource>b")]),
            ]),
            block(&[call("get_weather", &[("ci</tool_calls:opensource>ty", "x")])]),
            block(&[call("get_weather", &[("ci</tool_call:opensource>ty", "x")])]),
            "<tool_calls><tool_call>get_weather<tool_sep>\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n</tool_calls>".into(),
        ];
        for text in &texts {
            assert_no_push_waits(text, &o, 12);
            let want = one_shot(text, &o);
            for n in 1..=9 {
                let got = stream_in_char_pushes(text, &o, n, |_, _| {});
                // A repeated key (Rome after Paris) warns that what was sent differs.
                got.assert_equals_one_shot(&want, true, text.contains("Rome"), &format!("{text:?} in {n}-char pushes"));
            }
        }
    }
}
