//! `minimax_m3`: MiniMax M3 prefixes every structural tag with its namespace token
//! `]<]minimax[>[`: a block `NS<tool_call>` … `NS</tool_call>` holds one or more
//! `NS<invoke name="NAME">` … `NS</invoke>`, and each argument is an element named by
//! its key, `NS<city>Paris NS</city>` (no `name=` attribute, unlike M2). An argument may
//! hold child elements: an object, or an array when the schema says `array` (its items
//! repeat one child name). Reasoning is `<mm:think>…</mm:think>`.
//!
//! Sources: vLLM's `vllm/tool_parsers/minimax_m3_tool_parser.py` (the start token) and
//! the Rust reader it delegates to, `smg-project/smg`
//! `crates/tool_parser/src/parsers/minimax_m3.rs` (the element grammar, children as
//! objects/arrays, the five XML entities decoded, leaves typed by the schema node they sit
//! under and inferred without one: `true`/`False`/`None`/numbers); vLLM's
//! `vllm/reasoning/minimax_m3_reasoning_parser.py` (`<mm:think>`).
//!
//! The reader is its own: arguments nest, which the flat tag readers do not follow. Each
//! invoke stands alone (a broken one is reported, its siblings run). While the block
//! streams, each invoke is announced at its name and each top-level argument is sent as
//! the JSON it converts to when its element closes. The opener's first byte `]` becomes a
//! scan stop byte; it is rare in prose.
//!
//! No constraint shape (`toolcall constrain` answers `Unsupported`): an argument's closing
//! tag is named by its key (`NS</city>`), and arguments nest, while the shape data closes
//! every value with one fixed tag ([`crate::shape::TextParams`]).

use super::described::{Body, Described};
use serde_json::{Map, Number, Value};
use toolcall_core::Repair;

use super::tags::{StandaloneBlock, finish_standalone, layout_trim, skip_space, starts, streamed_whole, valid_name};
use super::text_example::tag_text;
use crate::FormatId;
use crate::builder::{Ctx, Draft};
use crate::family::{
    Advance, Instructions, ReadCx, ReasoningMarker, RegionReader, ScanFrom, Types, Wake, find_from, schema_get,
    push_json_str, push_json_value,
};

impl FormatId {
    pub(crate) const MINIMAX_M3: FormatId = FormatId::builtin("minimax_m3");
}

/// The namespace token before every structural tag.
const NS: &str = "]<]minimax[>[";
const OPEN: &str = "]<]minimax[>[<tool_call>";
const CLOSE: &str = "]<]minimax[>[</tool_call>";
const INVOKE: &str = "]<]minimax[>[<invoke";
const INVOKE_END: &str = "]<]minimax[>[</invoke>";
/// Bytes after the opener (blanks) the reader waits through before taking it for prose.
const MAX_LEAD: usize = 512;
/// An element's name is a key: short.
const MAX_NAME: usize = 256;


fn reader(_opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
    Some(Box::new(M3Reader::new(ctx.limits.max_depth)))
}

/// What a fresh [`M3Reader`] answers `NotMine` to at once: after the opener (and at most
/// [`MAX_LEAD`] blanks) no `NS<invoke`, nor the start of one with more to come.
fn declines(_opener: usize, region: &str, is_final: bool) -> bool {
    let rest = region.get(OPEN.len()..).unwrap_or("");
    let s = skip_space(rest);
    rest.len() - s.len() > MAX_LEAD
        || match starts(s, INVOKE) {
            Some(true) => false,
            None => is_final,
            Some(false) => true,
        }
}

fn example_call(name: &str, args: &Map<String, Value>) -> String {
    let mut s = format!("{OPEN}\n{INVOKE} name=\"{name}\">\n");
    for (k, v) in args {
        s.push_str(&format!("{NS}<{k}>{}{NS}</{k}>\n", tag_text(v)));
    }
    s.push_str(&format!("{INVOKE_END}\n{CLOSE}"));
    s
}

pub(crate) static MINIMAX_M3: Described = Described {
    id: FormatId::MINIMAX_M3,
    description: "]<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"NAME\">]<]minimax[>[<K>V]<]minimax[>[</K>… (MiniMax M3; nested arguments as child elements); values typed by the schema",
    example: "]<]minimax[>[<tool_call>\\n]<]minimax[>[<invoke name=\"get_weather\">\\n]<]minimax[>[<city>Paris]<]minimax[>[</city>\\n]<]minimax[>[</invoke>\\n]<]minimax[>[</tool_call>",
    body: Body::Own {
        openers: &[OPEN],
        reader,
        declines,
    },
    model_names: &["minimax-m3*"],
    // The opener directly followed by itself: `NS<t` is not `NS<invoke`.
    repeats_declined: &[OPEN],
    template_markers: &[NS, "<tool_call>", "<invoke name="],
    reasoning: &[ReasoningMarker {
        open: "<mm:think>",
        close: "</mm:think>",
    }],
    instructions: Some(Instructions {
        how: "To call tools, write ]<]minimax[>[<tool_call>, then per call ]<]minimax[>[<invoke name=\"TOOL_NAME\"> with one ]<]minimax[>[<ARGUMENT_NAME>value]<]minimax[>[</ARGUMENT_NAME> per argument (text as is; numbers, booleans, arrays and objects as JSON) and ]<]minimax[>[</invoke>, then ]<]minimax[>[</tool_call>.",
        several: "- To make several calls, write several invoke elements inside the one tool_call block; they run in that order.\n",
    }),
    example_call: Some(example_call),
    ..Described::BASE
};


/// Where the streaming side is.
#[derive(Debug)]
enum Live {
    /// Before an invoke (or the block's end), at this offset.
    Between(usize),
    /// Inside an invoke announced as `name`; the next argument starts at `at`.
    Invoke { name: String, at: usize },
    /// Inside a top-level argument element starting at `start`: markers are scanned from
    /// `scan`, `depth` elements are open.
    Element {
        name: String,
        start: usize,
        scan: usize,
        depth: usize,
    },
    Stopped,
}

/// What wakes an [`M3Reader`] that read its block's first invoke tag
/// ([`crate::family::ReadCx::wake`]): a `>`. Every step that sends something or decides the
/// block ends at one: an invoke's start once its tag's `>` arrives, an argument once its
/// element's closing tag does, an invoke's end at `NS</invoke>`, the block's closing tag
/// (the stream's or the search's, once the stream stopped) at its own `>`. Other bytes only
/// move the stream (or stop it), which reads them on the next push it is called for.
static WAKE: Wake = Wake::new(b">", "");

struct M3Reader {
    max_depth: usize,
    mine: bool,
    close: ScanFrom,
    live: Live,
    calls: usize,
    sent: String,
    closed: Vec<String>,
    /// The open invoke's arguments and repairs as [`read_invoke`] reads them (a repeated
    /// key stops the stream, so each key is read once).
    args: Map<String, Value>,
    repairs: Vec<Repair>,
    /// Every invoke closed so far was read while streaming as [`read_invokes`] reads it
    /// (`exact`): the block's drafts when it closes are `built`, without reading the body
    /// again.
    exact: bool,
    built: Vec<Draft>,
}

impl M3Reader {
    fn new(max_depth: usize) -> Self {
        M3Reader {
            max_depth,
            mine: false,
            close: ScanFrom(OPEN.len()),
            live: Live::Between(OPEN.len()),
            calls: 0,
            sent: String::new(),
            closed: Vec::new(),
            args: Map::new(),
            repairs: Vec::new(),
            exact: true,
            built: Vec::new(),
        }
    }

    fn send(&mut self, fragment: &str, cx: &mut ReadCx<'_>) {
        self.sent.push_str(fragment);
        cx.arguments(fragment);
    }

    /// Announces and forwards what the bytes so far complete; the offset of the block's
    /// closing tag once it meets it. While it follows the block it looks at every token
    /// (`NS`) the block holds, in order, and every one but a last that is still arriving:
    /// the first closing tag it meets is the first in the block (tokens do not overlap),
    /// so the block's own search for it waits until the stream stops.
    fn stream(&mut self, region: &str, cx: &mut ReadCx<'_>) -> Option<usize> {
        loop {
            match std::mem::replace(&mut self.live, Live::Stopped) {
                Live::Stopped => return None,
                Live::Between(at) => {
                    let rest = region.get(at..).unwrap_or("");
                    let s = skip_space(rest);
                    let at = at + rest.len() - s.len();
                    self.live = Live::Between(at);
                    match starts(s, INVOKE) {
                        Some(true) => {}
                        None => return None,
                        Some(false) => {
                            return match starts(s, CLOSE) {
                                Some(true) => Some(at),
                                // The block's closing tag arriving.
                                None => None,
                                Some(false) => {
                                    self.live = Live::Stopped;
                                    None
                                }
                            };
                        }
                    }
                    // The namespace token holds a `>`: the tag's own comes after it.
                    let attrs = &s[INVOKE.len()..];
                    let Some(gt) = attrs.bytes().take(MAX_LEAD).position(|b| b == b'>') else {
                        if attrs.len() > MAX_LEAD {
                            self.live = Live::Stopped;
                        }
                        return None;
                    };
                    let Some(name) = invoke_name(&attrs[..gt]) else {
                        self.live = Live::Stopped;
                        return None;
                    };
                    cx.start_call(&name, None);
                    self.calls += 1;
                    self.sent.clear();
                    self.args.clear();
                    self.repairs.clear();
                    self.live = Live::Invoke {
                        name,
                        at: at + INVOKE.len() + gt + 1,
                    };
                }
                Live::Invoke { name, at } => {
                    let rest = region.get(at..).unwrap_or("");
                    let s = skip_space(rest);
                    let at = at + rest.len() - s.len();
                    match starts(s, INVOKE_END) {
                        Some(true) => {
                            let close = if self.sent.is_empty() { "{}" } else { "}" };
                            self.send(close, cx);
                            self.closed.push(std::mem::take(&mut self.sent));
                            // The whole read ends the invoke at the first closing tag after
                            // its opening one: this one, as no token the arguments hold was
                            // one (the element scan above).
                            if self.exact {
                                let args = Value::Object(std::mem::take(&mut self.args));
                                let mut d = Draft::new(name, Some(args), FormatId::MINIMAX_M3);
                                d.repairs = std::mem::take(&mut self.repairs);
                                self.built.push(d);
                            } else {
                                self.exact = false;
                            }
                            self.live = Live::Between(at + INVOKE_END.len());
                        }
                        // The invoke's closing tag may be arriving (read as an element, it
                        // stopped the stream at every invoke's end in pushes of a few bytes).
                        None => self.live = Live::Invoke { name, at },
                        Some(false) => match starts(s, NS) {
                            Some(true) => {
                                self.live = Live::Element {
                                    name,
                                    start: at,
                                    scan: at,
                                    depth: 0,
                                };
                            }
                            None => self.live = Live::Invoke { name, at },
                            Some(false) => {}
                        },
                    }
                    if matches!(self.live, Live::Invoke { .. } | Live::Stopped) {
                        return None;
                    }
                }
                Live::Element {
                    name,
                    start,
                    mut scan,
                    mut depth,
                } => {
                    // Follow the element's tags to the one closing it.
                    let end = loop {
                        // Resumed where a token may be arriving (each byte is looked at once
                        // but for a token's first bytes at the end).
                        let mut from = ScanFrom(scan);
                        let Some(m) = from.find(region, NS) else {
                            scan = from.0;
                            break None;
                        };
                        let tag = &region[m + NS.len()..];
                        let Some(gt) = tag.bytes().take(MAX_NAME + 2).position(|b| b == b'>')
                        else {
                            if tag.len() > MAX_NAME + 1 {
                                self.live = Live::Stopped;
                                return None;
                            }
                            scan = m;
                            break None;
                        };
                        // A name holding `<` is refused, and a token may start inside it
                        // (unseen by this scan, which goes on after the `>`): the stream
                        // stops, and the block's own search looks from where it last did.
                        if tag.as_bytes().get(1..gt).is_some_and(|n| n.contains(&b'<')) {
                            self.live = Live::Stopped;
                            return None;
                        }
                        // The block's closing tag inside an argument: the block ends here.
                        if tag.starts_with("</tool_call>") {
                            return Some(m);
                        }
                        if tag.starts_with("</") {
                            // Every token inside the invoke is looked at here: the whole
                            // read, which ends the invoke at the first `NS</invoke>`, differs
                            // when one is inside an argument (an element named `invoke`).
                            if tag.starts_with("</invoke>") {
                                self.exact = false;
                            }
                            depth = depth.saturating_sub(1);
                        } else if tag.starts_with('<') {
                            depth += 1;
                        } else {
                            self.live = Live::Stopped;
                            return None;
                        }
                        scan = m + NS.len() + gt + 1;
                        if depth == 0 {
                            break Some(scan);
                        }
                        if depth > self.max_depth {
                            self.live = Live::Stopped;
                            return None;
                        }
                    };
                    let Some(end) = end else {
                        self.live = Live::Element {
                            name,
                            start,
                            scan,
                            depth,
                        };
                        return None;
                    };
                    let text = region.get(start..end).unwrap_or("");
                    let schema = cx.ctx.spec(&name).map(|s| &s.parameters);
                    let parsed = Element::read(text, 0, self.max_depth)
                        .ok()
                        .filter(|(_, used)| *used == text.len())
                        .map(|(e, _)| e);
                    let Some(e) = parsed.filter(|e| !self.args.contains_key(&e.name)) else {
                        self.live = Live::Stopped;
                        return None;
                    };
                    let Ok(v) = e.value.into_json(property(schema, &e.name), &mut self.repairs)
                    else {
                        self.live = Live::Stopped;
                        return None;
                    };
                    // Written in place as `to_string` writes the key and the value.
                    let mut fragment = String::with_capacity(e.name.len() + 16);
                    fragment.push(if self.sent.is_empty() { '{' } else { ',' });
                    push_json_str(&mut fragment, &e.name);
                    fragment.push(':');
                    push_json_value(&mut fragment, &v);
                    self.sent.push_str(&fragment);
                    cx.arguments_owned(fragment);
                    self.args.insert(e.name, v);
                    self.live = Live::Invoke {
                        name,
                        at: end,
                    };
                }
            }
        }
    }

    fn finish(&mut self, region: &str, body_end: usize, end: usize, closed: bool, cx: &mut ReadCx<'_>) -> Advance {
        let body = region.get(OPEN.len()..body_end).unwrap_or("");
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
            let (drafts, errors, cut) = read_invokes(body, cx, self.max_depth);
            (drafts, errors, cut, Some((&self.closed[..], self.calls, &self.sent[..])))
        };
        let block = StandaloneBlock {
            drafts,
            errors,
            closed,
            close: CLOSE,
            unclosed: OPEN,
            empty: "a tool-call block without invokes",
            streamed,
            cut,
        };
        finish_standalone(block, end, cx)
    }
}

impl RegionReader for M3Reader {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance {
        if !self.mine {
            let rest = region.get(OPEN.len()..).unwrap_or("");
            let s = skip_space(rest);
            if rest.len() - s.len() > MAX_LEAD {
                return Advance::NotMine;
            }
            match starts(s, INVOKE) {
                Some(true) => {}
                None if !is_final => return Advance::NeedMore,
                _ => return Advance::NotMine,
            }
            self.mine = true;
        }
        // While the stream follows the block it finds the closing tag itself (each push's
        // search for it was ~20 % of the reader's instructions on minimax_m3/100 calls).
        if cx.streaming() && !is_final {
            if let Some(i) = self.stream(region, cx) {
                return self.finish(region, i, i + CLOSE.len(), true, cx);
            }
            if !matches!(self.live, Live::Stopped) {
                cx.wake = Some(&WAKE);
                return Advance::NeedMore;
            }
        }
        match self.close.find(region, CLOSE) {
            Some(i) => self.finish(region, i, i + CLOSE.len(), true, cx),
            None if is_final => self.finish(region, region.len(), region.len(), false, cx),
            None => {
                cx.wake = Some(&WAKE);
                Advance::NeedMore
            }
        }
    }
}

/// `name="NAME"` (or single quotes) in an invoke's attributes.
fn invoke_name(attrs: &str) -> Option<String> {
    let rest = attrs.trim_start().strip_prefix("name")?.trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &rest[1..];
    let name = rest[..rest.find(quote)?].trim();
    valid_name(name).then(|| name.to_owned())
}

/// The invokes of a block body, each read alone; the errors of the broken ones.
fn read_invokes<'b>(
    body: &'b str,
    cx: &ReadCx<'_>,
    max_depth: usize,
) -> (Vec<Draft>, Vec<String>, Option<&'b str>) {
    let (mut drafts, mut errors, mut cut) = (Vec::new(), Vec::new(), None);
    let mut p = body;
    loop {
        p = skip_space(p);
        if p.is_empty() {
            break;
        }
        if !p.starts_with(INVOKE) {
            errors.push(format!("expected {INVOKE} in the tool-call block"));
            break;
        }
        let Some(e) = find_from(p, INVOKE_END, 0) else {
            errors.push(format!("{INVOKE} is not closed by {INVOKE_END}"));
            cut = Some(p);
            break;
        };
        match read_invoke(&p[INVOKE.len()..e], cx, max_depth) {
            Ok(d) => drafts.push(d),
            Err(why) => errors.push(why),
        }
        p = &p[e + INVOKE_END.len()..];
    }
    (drafts, errors, cut)
}

/// ` name="NAME">` then argument elements.
fn read_invoke(s: &str, cx: &ReadCx<'_>, max_depth: usize) -> Result<Draft, String> {
    let gt = s.find('>').ok_or("an invoke tag is not closed by >")?;
    let name = invoke_name(&s[..gt]).ok_or("an invoke without a valid name=\"…\"")?;
    let schema = cx.ctx.spec(&name).map(|s| &s.parameters);
    let mut args = Map::new();
    let mut repairs = Vec::new();
    let mut p = &s[gt + 1..];
    loop {
        p = skip_space(p);
        if p.is_empty() {
            break;
        }
        let (e, used) = Element::read(p, 0, max_depth)
            .map_err(|why| format!("in the call to {name:?}: {why}"))?;
        let v = e.value.into_json(property(schema, &e.name), &mut repairs)?;
        insert_repeated(&mut args, e.name, v);
        p = &p[used..];
    }
    let mut d = Draft::new(name, Some(Value::Object(args)), FormatId::MINIMAX_M3);
    d.repairs = repairs;
    Ok(d)
}

/// A repeated key gathers its values in a list (the reference reader's rule).
fn insert_repeated(map: &mut Map<String, Value>, key: String, v: Value) {
    match map.get_mut(&key) {
        Some(Value::Array(list)) => list.push(v),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, v]);
        }
        None => {
            map.insert(key, v);
        }
    }
}

/// One argument element: its name and text or children.
struct Element {
    name: String,
    value: Content,
}

enum Content {
    Text(String),
    Children(Vec<Element>),
}

impl Element {
    /// `NS<name>` … `NS</name>` at the start of `s`: the element and the bytes it took.
    fn read(s: &str, depth: usize, max_depth: usize) -> Result<(Element, usize), String> {
        if depth >= max_depth {
            return Err("arguments nest too deep".to_owned());
        }
        let after = s
            .strip_prefix(NS)
            .and_then(|t| t.strip_prefix('<'))
            .ok_or("expected an argument element")?;
        let gt = after
            .bytes()
            .take(MAX_NAME + 1)
            .position(|b| b == b'>')
            .ok_or("an argument tag is not closed by >")?;
        let name = after[..gt].trim();
        if !valid_name(name) || name.starts_with('/') {
            return Err(format!("bad argument name {name:?}"));
        }
        // Its closing tag `NS</name>`, compared in place (no tag written per element).
        let closes = |t: &str| {
            t.strip_prefix(NS)
                .and_then(|t| t.strip_prefix("</"))
                .and_then(|t| t.strip_prefix(name))
                .is_some_and(|t| t.starts_with('>'))
        };
        let close_len = NS.len() + name.len() + 3;
        let mut pos = NS.len() + 1 + gt + 1;
        let mut text = String::new();
        let mut children = Vec::new();
        loop {
            let rest = &s[pos..];
            let m = find_from(rest, NS, 0).ok_or_else(|| format!("argument {name:?} is not closed"))?;
            text.push_str(&rest[..m]);
            pos += m;
            let rest = &s[pos..];
            if closes(rest) {
                pos += close_len;
                break;
            }
            if rest[NS.len()..].starts_with("</") {
                return Err(format!("argument {name:?} is closed by another tag"));
            }
            let (child, used) = Element::read(rest, depth + 1, max_depth)?;
            children.push(child);
            pos += used;
        }
        let value = if children.is_empty() {
            Content::Text(text)
        } else if text.trim().is_empty() {
            Content::Children(children)
        } else {
            return Err(format!("argument {name:?} mixes text and elements"));
        };
        Ok((
            Element {
                name: name.to_owned(),
                value,
            },
            pos,
        ))
    }
}

impl Content {
    /// The JSON value, typed by `schema` (the schema node this value sits under).
    fn into_json(self, schema: Option<&Value>, repairs: &mut Vec<Repair>) -> Result<Value, String> {
        match self {
            // A text leaf is typed by the node's own types, all its alternatives included
            // (`oneOf` integer | object given `5`).
            Content::Text(t) => {
                // The element's own text when nothing is trimmed or decoded (no copy).
                let trimmed = layout_trim(&t);
                let text = if trimmed.contains('&') {
                    decode_entities(trimmed)
                } else if trimmed.len() == t.len() {
                    t
                } else {
                    trimmed.to_owned()
                };
                Ok(leaf(text, schema, repairs))
            }
            Content::Children(children) => {
                let schema = container(schema).or(schema);
                if types(schema).contains(&"array") {
                    let items = schema.and_then(|s| schema_get(s, "items"));
                    return children
                        .into_iter()
                        .map(|c| c.value.into_json(items, repairs))
                        .collect::<Result<Vec<_>, _>>()
                        .map(Value::Array);
                }
                let mut map = Map::new();
                for c in children {
                    let v = c.value.into_json(property(schema, &c.name), repairs)?;
                    insert_repeated(&mut map, c.name, v);
                }
                Ok(Value::Object(map))
            }
        }
    }
}

/// The property `key` of an object schema.
fn property<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    schema_get(schema_get(container(schema).or(schema)?, "properties")?, key)
}

/// The one object/array branch of a schema (`anyOf: [{…object…}, {"type": "null"}]`).
fn container(schema: Option<&Value>) -> Option<&Value> {
    let s = schema?;
    match schema_get(s, "type") {
        // `types` without its list (a container is looked up per argument).
        Some(Value::String(t)) => return matches!(t.as_str(), "object" | "array").then_some(s),
        Some(Value::Array(ts)) => {
            return ts
                .iter()
                .any(|t| matches!(t.as_str(), Some("object" | "array")))
                .then_some(s);
        }
        Some(_) => {
            return types(Some(s))
                .iter()
                .any(|t| matches!(*t, "object" | "array"))
                .then_some(s);
        }
        None => {}
    }
    let branches = schema_get(s, "anyOf").or_else(|| schema_get(s, "oneOf"))?.as_array()?;
    let mut found = branches.iter().filter(|b| container(Some(b)).is_some());
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// The types a schema node allows (its `type`, or its alternatives' types).
fn types(schema: Option<&Value>) -> Types<'_> {
    let mut out = Types::default();
    let Some(s) = schema else { return out };
    match schema_get(s, "type") {
        Some(Value::String(t)) => out.push(t.as_str()),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => out.extend(
            ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| schema_get(s, k)?.as_array())
                .flatten()
                .filter_map(|b| schema_get(b, "type")?.as_str()),
        ),
    }
    out
}

/// A text leaf: typed by its schema node; without one, inferred as the reference reader
/// does (JSON and Python literals, numbers), else text.
fn leaf(text: String, schema: Option<&Value>, repairs: &mut Vec<Repair>) -> Value {
    let allowed = types(schema);
    if schema.is_none() || allowed.is_empty() {
        return infer(text);
    }
    if allowed.contains(&"string") {
        return match crate::family::typed_alternative(text.trim(), &allowed) {
            Some(v) => v,
            None => Value::String(text),
        };
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        if allowed.contains(&"array") {
            return Value::Array(Vec::new());
        }
        if allowed.contains(&"object") {
            return Value::Object(Map::new());
        }
    }
    match crate::repair::parse_lenient(trimmed) {
        Ok((v, fixed)) if crate::family::of_json_type(&v, &allowed) => {
            if !fixed.is_empty() {
                repairs.push(Repair::new("text_value", format!("{trimmed:?} read as {v}")));
            }
            v
        }
        _ if let Some(v) = crate::family::zero_padded_integer(trimmed, &allowed) => {
            repairs.push(Repair::new(
                "text_value",
                format!("{trimmed:?} read as {v} (leading zeros)"),
            ));
            v
        }
        _ => {
            repairs.push(Repair::new(
                "text_value",
                format!("expected {}, got {trimmed:?}; kept as text", allowed.join(" or ")),
            ));
            Value::String(text)
        }
    }
}

fn infer(text: String) -> Value {
    match text.as_str() {
        "true" | "True" => return Value::Bool(true),
        "false" | "False" => return Value::Bool(false),
        "null" | "None" => return Value::Null,
        _ => {}
    }
    if let Ok(n) = text.parse::<i64>() {
        return Value::Number(n.into());
    }
    if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
        return Value::Number(n);
    }
    Value::String(text)
}

/// The five XML entities, `&amp;` last so that `&amp;lt;` stays `&lt;`.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{ParseOptions, detect_template, model_family, parse};
    use serde_json::json;

    #[test]
    fn detect_and_model_names_pick_minimax_m3() {
        let t = "{%- set ns = ']<]minimax[>[' %}{{ ns + '<tool_call>' }}{% for tc in m.tool_calls %}{{ ns + '<invoke name=\"' + tc.name + '\">' }}{% for k, v in tc.arguments.items() %}{{ ns + '<' + k + '>' + v + ns + '</' + k + '>' }}{% endfor %}{{ ns + '</invoke>' }}{% endfor %}{{ ns + '</tool_call>' }}{{ '<mm:think>' + m.reasoning + '</mm:think>' }}";
        let info = detect_template(t).unwrap();
        assert_eq!(info.family.as_deref(), Some("minimax_m3"));
        assert_eq!(info.reasoning[0].open, "<mm:think>");
        assert_eq!(model_family("MiniMaxAI/MiniMax-M3").unwrap().family, "minimax_m3");
        assert_eq!(model_family("MiniMaxAI/MiniMax-M2.5").unwrap().family, "minimax_m2");
    }

    // Without a schema, leaves are inferred (the reference reader's rule); nested
    // elements are objects, a repeated key a list.
    #[test]
    fn without_a_schema_leaves_are_inferred() {
        let text = "]<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"run\">]<]minimax[>[<n>3]<]minimax[>[</n>]<]minimax[>[<ok>True]<]minimax[>[</ok>]<]minimax[>[<o>]<]minimax[>[<a>x &amp; y]<]minimax[>[</a>]<]minimax[>[<a>z]<]minimax[>[</a>]<]minimax[>[</o>]<]minimax[>[</invoke>]<]minimax[>[</tool_call>";
        let p = parse(text, &ParseOptions::default());
        assert_eq!(p.calls.len(), 1, "{:?}", p.diagnostics);
        assert_eq!(
            p.calls[0].arguments,
            json!({"n": 3, "ok": true, "o": {"a": ["x & y", "z"]}})
        );
    }

    // A block whose invokes the stream read is built from them (no second read); where the
    // whole read would differ (a repeated key, a closing invoke tag inside a value, text
    // that is no invoke, a block cut short) the body is read whole. Either way streamed in
    // any chunks equals one-shot, and a push the reader is not called for (no `>`: `WAKE`)
    // delays nothing.
    #[test]
    fn streamed_blocks_equal_one_shot() {
        use crate::stream_replay::{assert_no_push_waits, one_shot, stream_in_char_pushes};
        use toolcall_core::StreamEvent;
        const NS: &str = super::NS;
        let o = ParseOptions::default();
        let invoke = |name: &str, pairs: &[(&str, &str)]| {
            let mut c = format!("{NS}<invoke name=\"{name}\">\n");
            for (k, v) in pairs {
                c.push_str(&format!("{NS}<{k}>{v}{NS}</{k}>\n"));
            }
            c + NS + "</invoke>\n"
        };
        let block = |calls: &[String]| {
            format!("Sure. {NS}<tool_call>\n{}{NS}</tool_call> ok", calls.concat())
        };
        let texts = [
            block(&[
                invoke("get_weather", &[("city", "Paris"), ("days", "3")]),
                invoke("get_time", &[]),
            ]),
            block(&[invoke("get_weather", &[("city", "Paris"), ("city", "Rome")])]),
            block(&[invoke("get_weather", &[("city", &format!("a{NS}</invoke>b"))])]),
            block(&[
                invoke("get_weather", &[("city", "Oslo")]),
                "stray ".into(),
                invoke("get_time", &[]),
            ]),
            block(&[invoke(
                "run",
                &[("o", &format!("{NS}<a>x &amp; y{NS}</a>{NS}<a>z{NS}</a>")), ("ok", "True")],
            )]),
            block(&[invoke("get_weather", &[("days", "[1, 2")])]),
            block(&[invoke("get_weather", &[("invoke", "x")])]),
            // The block's closing tag inside an argument, at its top or nested: the block
            // ends there; a tag whose name holds a token.
            block(&[
                invoke("get_time", &[]),
                invoke("get_weather", &[("city", &format!("a{NS}</tool_call>b"))]),
            ]),
            block(&[invoke("run", &[("o", &format!("{NS}<a>x{NS}</tool_call>{NS}</a>"))])]),
            block(&[invoke("run", &[("o", &format!("{NS}<a{NS}</tool_call>x{NS}</a>"))])]),
            format!("{NS}<tool_call>\n{}", invoke("get_weather", &[("city", "Paris")])),
            format!(
                "{NS}<tool_call>\n{}{NS}<invoke name=\"x\">{NS}</tool_call>",
                invoke("get_weather", &[("city", "Paris")])
            ),
        ];
        for text in &texts {
            // A push without a `>` (which wakes nothing) delays nothing.
            assert_no_push_waits(text, &o, 12);
            let want = one_shot(text, &o);
            // Calls announced before the block's closing tag is complete.
            let close_end = text.find(&format!("{NS}</tool_call>")).map(|i| i + 25);
            for n in 1..=9 {
                let mut early = 0;
                let got = stream_in_char_pushes(text, &o, n, |pushed, events| {
                    if close_end.is_some_and(|e| pushed < e) {
                        early += events
                            .iter()
                            .filter(|e| matches!(e, StreamEvent::CallStarted { .. }))
                            .count();
                    }
                });
                let context = format!("{text:?} in {n}-char pushes");
                if text == &texts[0] {
                    // Every invoke streams while the block arrives (an invoke's closing tag
                    // arriving in pieces stopped the stream after the first).
                    assert_eq!(early, 2, "{n}-char pushes");
                }
                // A repeated key (Rome after Paris) stops the stream with what it sent cut,
                // and the stream warns that what it sent differs.
                let repeated = text.contains("Rome");
                got.assert_equals_one_shot(&want, !repeated, repeated, &context);
            }
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!(
            "]<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"run\">{}x{}]<]minimax[>[</invoke>]<]minimax[>[</tool_call>",
            "]<]minimax[>[<a>".repeat(500),
            "]<]minimax[>[</a>".repeat(500)
        );
        let p = parse(&deep, &ParseOptions::default());
        assert!(p.calls.is_empty());
        assert!(!p.diagnostics.is_empty());
    }
}
