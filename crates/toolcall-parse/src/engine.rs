//! The streaming engine every parse goes through: `parse(text)` is one `push` and `finish`.
//!
//! Text is scanned once, left to right, by a state machine whose state survives between
//! pushes. In text mode it looks for the start of markup (markers such as `<tool_call>`,
//! fences, a `{`/`[` that can start a call, `TOOL_CALL:` at a line start, `name(` of a
//! registered tool). Bytes that are decided to be text are emitted at once; bytes that might
//! start markup are held back until decided. A candidate region is buffered (only that
//! region) and scanned incrementally by the shared [`Scanner`]; when it closes, it is decoded
//! once, repaired if needed, and offered to the formats. Every decision depends only on the
//! bytes seen and on whether the input has ended, never on where chunks split (R-1).
//!
//! A region that is not markup stays text; if it was not even balanced JSON the scan resumes
//! one byte after its start, so a stray `{` never hides calls after it (R-7). That rescan is
//! bounded by the nesting limit: each byte is rescanned at most `max_depth` times.

use std::ops::Range;
use std::sync::Arc;

use memchr::memmem;
use serde_json::Value;
use toolcall_core::{CallId, Diagnostic, StreamEvent, ToolCall};

use crate::builder::{Ctx, Draft, Outcome, build};
use crate::fallback;
use crate::formats::call_syntax::{is_name_byte, parse_args};
use crate::formats::{
    FormatId, Site, classify_value, hermes, json, key_value, llama, mistral, pythonic,
};
use crate::repair::parse_lenient;
use crate::scanner::{Scan, Scanner, array_start_plausible, object_start_plausible};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Fence info strings whose content may hold calls; other languages (python, js, ...) are
/// code samples and stay text (R-4).
const CALL_FENCES: &[&str] = &[
    "",
    "json",
    "jsonc",
    "json5",
    "tool_call",
    "tool_calls",
    "tool_code",
];

#[derive(Debug, Clone)]
enum JsonSite {
    Plain,
    PythonTag,
    Mistral {
        marker: usize,
    },
    MistralNamed {
        marker: usize,
        name: String,
        id: Option<String>,
    },
}

impl JsonSite {
    fn markup_start(&self, start: usize) -> usize {
        match self {
            JsonSite::Mistral { marker } | JsonSite::MistralNamed { marker, .. } => *marker,
            _ => start,
        }
    }
}

#[derive(Debug, Clone)]
enum Mode {
    Text,
    InlineCode,
    Think {
        content: usize,
    },
    Fence {
        start: usize,
        content: usize,
        search: usize,
        callable: bool,
    },
    Json {
        start: usize,
        scanner: Scanner,
        site: JsonSite,
    },
    Hermes {
        start: usize,
        content: usize,
        search: usize,
    },
    MistralHead {
        marker: usize,
        after: usize,
    },
    KeyValue {
        start: usize,
        name: String,
        fields: Vec<(String, String)>,
        /// Where the newline search resumes (the current line has no newline before it).
        search: usize,
    },
    Call {
        start: usize,
        open: usize,
        scanner: Scanner,
    },
}

enum Step {
    Continue,
    Wait,
}

enum Marker {
    No,
    Partial,
    Full,
}

fn match_at(bytes: &[u8], pos: usize, marker: &str, ignore_case: bool) -> Marker {
    let m = marker.as_bytes();
    let rest = bytes.get(pos..).unwrap_or(&[]);
    let n = rest.len().min(m.len());
    let (a, b) = (&rest[..n], &m[..n]);
    let same = if ignore_case {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    };
    if !same {
        Marker::No
    } else if n == m.len() {
        Marker::Full
    } else {
        Marker::Partial
    }
}

/// Bytes at which the text loop must look closer (markup starts, newlines); every other
/// byte only updates the line/identifier state, which [`Engine::skip_plain`] does in bulk.
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let stops = [b'\n', b'`', b'<', b'[', b'{', b'('];
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = true;
        i += 1;
    }
    t
};

/// Index of the first `STOP` byte in `s` (or its length). Blocks of 32 bytes are tested
/// with branch-free compares the compiler vectorises (prose has a stop byte only every
/// hundred bytes or so); the table finds the exact byte inside a block that has one.
fn find_stop(s: &[u8]) -> usize {
    const BLOCK: usize = 32;
    let mut chunks = s.chunks_exact(BLOCK);
    let mut at = 0;
    for c in &mut chunks {
        let mut hit = 0u8;
        for &b in c {
            hit |= u8::from(b == b'\n')
                | u8::from(b == b'`')
                | u8::from(b == b'<')
                | u8::from(b == b'[')
                | u8::from(b == b'{')
                | u8::from(b == b'(');
        }
        if hit != 0 {
            break;
        }
        at += BLOCK;
    }
    s.get(at..)
        .unwrap_or(&[])
        .iter()
        .position(|&b| STOP[usize::from(b)])
        .map_or(s.len(), |i| at + i)
}

/// `memmem::find`, after a `memchr` for the needle's first byte: streamed pushes search
/// a few new bytes each, where building a searcher costs more than the search.
fn find_marker(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let at = memchr::memchr(first, hay)?;
    memmem::find(hay.get(at..)?, needle).map(|i| at + i)
}

/// Largest char boundary ≤ `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn looks_like_call(region: &[u8]) -> bool {
    let has = |n: &str| memmem::find(region, n.as_bytes()).is_some();
    (has("\"name\"") || has("'name'"))
        && (has("\"arguments\"")
            || has("\"parameters\"")
            || has("'arguments'")
            || has("'parameters'"))
        || has("\"tools\"")
        || (has("\"command\"") && has("\"session_id\""))
}

/// A `<tool_call>` announced before it is complete: `CallStarted` was emitted and the
/// arguments' raw text is forwarded as `ArgumentsDelta` fragments while it streams.
#[derive(Debug)]
struct Live {
    index: usize,
    call_id: CallId,
    name: String,
    /// Buffer index of the arguments object's `{`.
    args_start: usize,
    /// Buffer index up to which argument text was forwarded.
    emitted: usize,
    scanner: Scanner,
    done: bool,
}

/// Why JSON that has a call's `name` + arguments shape was left as text (F-DIAG-1).
fn rejected_call_shape(v: &Value, ctx: &Ctx) -> Option<String> {
    let m = v.as_object()?;
    let name = m.get("name")?.as_str()?;
    if !(m.contains_key("arguments") || m.contains_key("parameters")) {
        return None;
    }
    Some(if !ctx.strict_name_ok(name) {
        format!("JSON shaped like a call to {name:?} left as text: not a registered tool")
    } else {
        let extra: Vec<&str> = m
            .keys()
            .map(String::as_str)
            .filter(|k| !["name", "arguments", "parameters", "id", "call_id", "type"].contains(k))
            .collect();
        format!(
            "JSON shaped like a call to {name:?} left as text: unexpected keys {}",
            extra.join(", ")
        )
    })
}

pub(crate) struct Engine {
    ctx: Arc<Ctx>,
    nested: bool,
    /// Nobody reads `CallStarted`/`ArgumentsDelta` for calls finished whole (one-shot
    /// `parse` and a fence's sub-engine): skip re-serialising their arguments.
    pub(crate) quiet: bool,
    buf: String,
    base: usize,
    pos: usize,
    emit_from: usize,
    mode: Mode,
    line_start: bool,
    ident_start: Option<usize>,
    python_tag: bool,
    received: usize,
    overflow: bool,
    call_count: usize,
    /// Next event index (a started call that never finishes still used one).
    next_index: usize,
    live: Option<Live>,
    /// The current `<tool_call>` body is not announced early (prefix not canonical).
    probe_failed: bool,
    pub(crate) markup_found: bool,
    text_acc: String,
    events: Vec<StreamEvent>,
    visible: String,
    labels: Vec<(String, Range<usize>)>,
    pub(crate) reasoning: Vec<String>,
    finished: bool,
    /// Visible text (non-whitespace) or a call has been produced.
    seen_visible: bool,
}

impl Engine {
    pub(crate) fn new(ctx: Arc<Ctx>) -> Self {
        let mut e = Self::new_inner(ctx);
        if e.ctx.starts_in_reasoning {
            e.reasoning.push(String::new());
            e.mode = Mode::Think { content: 0 };
        }
        e
    }

    fn new_inner(ctx: Arc<Ctx>) -> Self {
        Engine {
            ctx,
            nested: false,
            quiet: false,
            buf: String::new(),
            base: 0,
            pos: 0,
            emit_from: 0,
            mode: Mode::Text,
            line_start: true,
            ident_start: None,
            python_tag: false,
            received: 0,
            overflow: false,
            call_count: 0,
            next_index: 0,
            live: None,
            probe_failed: false,
            markup_found: false,
            text_acc: String::new(),
            events: Vec::new(),
            visible: String::new(),
            labels: Vec::new(),
            reasoning: Vec::new(),
            finished: false,
            seen_visible: false,
        }
    }

    fn fallbacks_on(&self) -> bool {
        !self.ctx.fallbacks.is_empty() && self.ctx.enabled(FormatId::Fallback)
    }

    pub(crate) fn push(&mut self, delta: &str) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        if self.overflow {
            self.emit_raw_text(delta);
            self.flush_text_event();
            return std::mem::take(&mut self.events);
        }
        let room = self
            .ctx
            .limits
            .max_input_bytes
            .saturating_sub(self.received);
        if delta.len() > room {
            let cut = floor_boundary(delta, room);
            let (head, tail) = delta.split_at(cut);
            self.received += head.len();
            self.buf.push_str(head);
            self.run(true);
            self.overflow = true;
            let at = self.base + self.buf.len();
            self.diag(Diagnostic::error(
                format!(
                    "input exceeds {} bytes; the rest is passed through as text, unparsed",
                    self.ctx.limits.max_input_bytes
                ),
                at..at,
            ));
            self.emit_raw_text(tail);
            self.flush_text_event();
            return std::mem::take(&mut self.events);
        }
        self.received += delta.len();
        self.buf.push_str(delta);
        self.run(false);
        self.compact();
        std::mem::take(&mut self.events)
    }

    pub(crate) fn finish(&mut self) -> Vec<StreamEvent> {
        if !self.finished {
            if !self.overflow {
                self.run(true);
            }
            self.finished = true;
            if self.call_count == 0 && self.fallbacks_on() {
                let ctx = self.ctx.clone();
                let ok = |name: &str| ctx.strict_name_ok(name);
                if let Some((d, diag)) =
                    fallback::apply(&ctx.fallbacks, &self.visible, &self.labels, &ok)
                {
                    self.diag(diag);
                    self.build_and_emit(d);
                }
            }
            self.flush_text_event();
        }
        std::mem::take(&mut self.events)
    }

    fn abs(&self, i: usize) -> usize {
        self.base + i
    }

    fn span(&self, a: usize, b: usize) -> Range<usize> {
        self.abs(a)..self.abs(b)
    }

    fn emit_raw_text(&mut self, t: &str) {
        if t.is_empty() {
            return;
        }
        if !self.seen_visible && !t.trim().is_empty() {
            self.seen_visible = true;
        }
        self.text_acc.push_str(t);
        if self.fallbacks_on() && self.visible.len() < self.ctx.limits.max_input_bytes {
            self.visible.push_str(t);
        }
    }

    /// Emits `buf[emit_from..to]` as visible text.
    fn emit_text(&mut self, to: usize) {
        if to > self.emit_from {
            // Same as `emit_raw_text`, copying straight from the buffer (no temporary).
            let keep_visible =
                self.fallbacks_on() && self.visible.len() < self.ctx.limits.max_input_bytes;
            let t = self.buf.get(self.emit_from..to).unwrap_or("");
            if !t.is_empty() {
                if !self.seen_visible && !t.trim().is_empty() {
                    self.seen_visible = true;
                }
                self.text_acc.push_str(t);
                if keep_visible {
                    self.visible.push_str(t);
                }
            }
            self.emit_from = to;
        }
    }

    fn flush_text_event(&mut self) {
        if !self.text_acc.is_empty() {
            let text = std::mem::take(&mut self.text_acc);
            self.events.push(StreamEvent::Text { text });
        }
    }

    fn diag(&mut self, d: Diagnostic) {
        self.flush_text_event();
        self.events.push(StreamEvent::Diagnostic { diagnostic: d });
    }

    fn emit_call(&mut self, call: ToolCall) {
        if self.call_count >= self.ctx.limits.max_calls {
            let span = call.origin.span.clone();
            self.diag(Diagnostic::error(
                format!(
                    "call to {:?} dropped: more than {} calls in one reply",
                    call.name, self.ctx.limits.max_calls
                ),
                span,
            ));
            return;
        }
        self.flush_text_event();
        self.seen_visible = true;
        self.call_count += 1;
        let index = match self.live.take() {
            Some(live) if live.name == call.name && live.call_id == call.call_id => live.index,
            other => {
                self.live = other;
                let index = self.next_index;
                self.next_index += 1;
                if self.quiet {
                    self.events.push(StreamEvent::CallFinished { index, call });
                    return;
                }
                self.events.push(StreamEvent::CallStarted {
                    index,
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                });
                self.events.push(StreamEvent::ArgumentsDelta {
                    index,
                    fragment: call.arguments.to_string(),
                });
                index
            }
        };
        self.events.push(StreamEvent::CallFinished { index, call });
    }

    fn build_and_emit(&mut self, d: Draft) {
        let span = d.span.clone();
        match build(d) {
            Ok(call) => {
                if self.call_count < self.ctx.limits.max_calls {
                    self.diag(Diagnostic::info(
                        format!("found {} call to {:?}", call.origin.format, call.name),
                        call.origin.span.clone(),
                    ));
                }
                self.emit_call(call)
            }
            Err(e) => self.diag(Diagnostic::error(format!("call dropped: {e}"), span)),
        }
    }

    /// `buf[markup..end]` was markup: replaced by the outcome's text, calls and findings.
    fn apply_outcome(&mut self, markup: usize, end: usize, o: Outcome) {
        self.emit_text(markup);
        self.emit_from = end;
        self.enter_text(end);
        self.markup_found = true;
        self.emit_raw_text(&o.text);
        for d in o.diagnostics {
            self.diag(d);
        }
        let mut drafts = o.drafts;
        if let Some(live) = &mut self.live {
            match drafts.first_mut() {
                Some(d) if d.name == live.name => {
                    d.id = Some(live.call_id.to_string());
                    // Forward the rest of the raw argument text before the call finishes.
                    let upto = if live.done {
                        live.emitted
                    } else {
                        match live
                            .scanner
                            .advance(self.buf.as_bytes().get(live.args_start..end).unwrap_or(&[]))
                        {
                            Scan::Done(n) => live.args_start + n,
                            Scan::NeedMore => live.args_start + live.scanner.consumed(),
                            Scan::Fail(_) => live.emitted,
                        }
                    };
                    let upto = floor_boundary(&self.buf, upto);
                    if upto > live.emitted {
                        let fragment = self.buf.get(live.emitted..upto).unwrap_or("").to_owned();
                        live.emitted = upto;
                        let index = live.index;
                        self.events
                            .push(StreamEvent::ArgumentsDelta { index, fragment });
                    }
                }
                // The announced call did not complete; its error diagnostic says why.
                _ => self.live = None,
            }
        }
        for d in drafts {
            self.build_and_emit(d);
        }
        // An announced call that failed to build is abandoned, never finished.
        self.live = None;
    }

    /// Drops `buf[markup..end]` (broken markup) with an error.
    fn drop_markup(&mut self, markup: usize, end: usize, message: String) {
        // A call announced while streaming is abandoned; the error says why.
        self.live = None;
        self.emit_text(markup);
        let span = self.span(markup, end);
        self.diag(Diagnostic::error(message, span));
        self.emit_from = end;
        self.enter_text(end);
    }

    fn enter_text(&mut self, pos: usize) {
        self.pos = pos;
        self.mode = Mode::Text;
        self.ident_start = None;
        if pos > 0 {
            self.line_start = self.buf.as_bytes().get(pos - 1) == Some(&b'\n');
        }
    }

    fn compact(&mut self) {
        let mode_start = match &self.mode {
            Mode::Text | Mode::InlineCode => self.pos,
            Mode::Think { content } => *content,
            Mode::Fence { start, .. }
            | Mode::Hermes { start, .. }
            | Mode::KeyValue { start, .. } => *start,
            Mode::Json { start, site, .. } => site.markup_start(*start),
            Mode::MistralHead { marker, .. } => *marker,
            Mode::Call { start, .. } => *start,
        };
        let keep = self
            .emit_from
            .min(self.pos)
            .min(mode_start)
            .min(self.ident_start.unwrap_or(usize::MAX));
        // Amortised: drain only when at least half the buffer is dead.
        if keep == 0 || keep * 2 < self.buf.len() {
            return;
        }
        let keep = floor_boundary(&self.buf, keep);
        // Keep one byte of history for line-start decisions.
        let keep = floor_boundary(&self.buf, keep.saturating_sub(1));
        if keep == 0 {
            return;
        }
        self.buf.drain(..keep);
        self.base += keep;
        self.pos -= keep;
        self.emit_from -= keep;
        if let Some(i) = &mut self.ident_start {
            *i -= keep;
        }
        if let Some(live) = &mut self.live {
            live.args_start -= keep;
            live.emitted -= keep;
        }
        match &mut self.mode {
            Mode::Text | Mode::InlineCode => {}
            Mode::Think { content } => *content -= keep,
            Mode::Fence {
                start,
                content,
                search,
                ..
            } => {
                *start -= keep;
                *content -= keep;
                *search -= keep;
            }
            Mode::Json { start, site, .. } => {
                *start -= keep;
                match site {
                    JsonSite::Mistral { marker } | JsonSite::MistralNamed { marker, .. } => {
                        *marker -= keep
                    }
                    _ => {}
                }
            }
            Mode::Hermes {
                start,
                content,
                search,
            } => {
                *start -= keep;
                *content -= keep;
                *search -= keep;
            }
            Mode::MistralHead { marker, after } => {
                *marker -= keep;
                *after -= keep;
            }
            Mode::KeyValue { start, search, .. } => {
                *start -= keep;
                *search -= keep;
            }
            Mode::Call { start, open, .. } => {
                *start -= keep;
                *open -= keep;
            }
        }
    }

    fn run(&mut self, is_final: bool) {
        loop {
            let step = match self.mode {
                Mode::Text => self.step_text(is_final),
                Mode::InlineCode => self.step_inline(),
                Mode::Think { .. } => self.step_think(is_final),
                Mode::Fence { .. } => self.step_fence(is_final),
                Mode::Json { .. } => self.step_json(is_final),
                Mode::Hermes { .. } => self.step_hermes(is_final),
                Mode::MistralHead { .. } => self.step_mistral_head(is_final),
                Mode::KeyValue { .. } => self.step_key_value(is_final),
                Mode::Call { .. } => self.step_call(is_final),
            };
            match step {
                Step::Continue => {
                    if self.pos >= self.buf.len()
                        && matches!(self.mode, Mode::Text | Mode::InlineCode)
                    {
                        break;
                    }
                }
                Step::Wait => break,
            }
        }
        if matches!(self.mode, Mode::Text | Mode::InlineCode) {
            // Hold back a trailing word only when `word(` could be a call.
            let hold = if self.call_syntax_possible() && !is_final {
                self.ident_start.unwrap_or(self.pos)
            } else {
                self.pos
            };
            self.emit_text(hold.min(self.pos));
        }
        if is_final {
            let len = self.buf.len();
            self.emit_text(len);
        }
        self.flush_text_event();
    }

    fn object_formats(&self) -> bool {
        [
            FormatId::ToolsEnvelope,
            FormatId::ActionResponse,
            FormatId::Json,
            FormatId::Llama,
            FormatId::OpenaiChat,
            FormatId::Responses,
            FormatId::Gemini,
            FormatId::Anthropic,
        ]
        .iter()
        .any(|f| self.ctx.enabled(*f))
            || self.python_tag
    }

    fn array_formats(&self) -> bool {
        [
            FormatId::Json,
            FormatId::Llama,
            FormatId::Pythonic,
            FormatId::Responses,
            FormatId::Anthropic,
        ]
        .iter()
        .any(|f| self.ctx.enabled(*f))
            || self.fallbacks_on()
            || self.python_tag
    }

    fn call_syntax_possible(&self) -> bool {
        self.ctx.enabled(FormatId::CallSyntax) && (self.ctx.registry.is_some() || self.ctx.explicit)
    }

    fn call_syntax_name_ok(&self, name: &str) -> bool {
        self.call_syntax_possible() && self.ctx.strict_name_ok(name)
    }

    fn start_json(&mut self, start: usize, site: JsonSite) {
        self.mode = Mode::Json {
            start,
            scanner: Scanner::new(self.ctx.limits.max_depth, false),
            site,
        };
    }

    /// Skips a run of bytes that cannot start markup (the bulk of prose) in one go,
    /// leaving `line_start`/`ident_start` exactly as the byte-by-byte loop would.
    ///
    /// Only used when not at a line start (where `T`, fences and leading blanks matter), so
    /// `line_start` stays false. The scan is a table lookup per byte and the ident state is
    /// recomputed from the run's trailing name bytes only.
    fn skip_plain(&mut self) {
        debug_assert!(!self.line_start);
        let bytes = self.buf.as_bytes();
        let from = self.pos;
        let rest = bytes.get(from..).unwrap_or(&[]);
        let n = find_stop(rest);
        if n == 0 {
            return;
        }
        let end = from + n;
        let run = &rest[..n];
        // Trailing name bytes decide `ident_start`; everything before them reset it.
        let trailing = run.iter().rev().take_while(|&&b| is_name_byte(b)).count();
        self.ident_start = if trailing == 0 {
            None
        } else {
            let r = if trailing == n {
                self.ident_start.unwrap_or(from)
            } else {
                end - trailing
            };
            // The byte loop restarts a name after 256 bytes: the last restart point.
            let last = end - 1;
            Some(r + (last - r) / 257 * 257)
        };
        self.pos = end;
    }

    fn step_text(&mut self, is_final: bool) -> Step {
        let len = self.buf.len();
        while self.pos < len {
            if !self.line_start {
                self.skip_plain();
                if self.pos >= len {
                    break;
                }
            }
            let pos = self.pos;
            let b = self.buf.as_bytes()[pos];
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line_start = true;
                    self.ident_start = None;
                    continue;
                }
                b' ' | b'\t' | b'\r' => {
                    self.pos += 1;
                    self.ident_start = None;
                    continue;
                }
                b'`' => {
                    let bytes = self.buf.as_bytes();
                    let triple = match_at(bytes, pos, "```", false);
                    if self.line_start && !self.nested {
                        match triple {
                            Marker::Partial if !is_final => return Step::Wait,
                            Marker::Full => {
                                let info_from = pos + 3;
                                // An info string longer than this is no fence opener.
                                const MAX_INFO: usize = 256;
                                let window = &bytes[info_from..len.min(info_from + MAX_INFO)];
                                let (info_end, content) = match memchr::memchr(b'\n', window) {
                                    Some(nl) => (info_from + nl, info_from + nl + 1),
                                    None if is_final && len - info_from <= MAX_INFO => (len, len),
                                    None if len - info_from < MAX_INFO => return Step::Wait,
                                    None => {
                                        // Too long to be an info string: plain backticks.
                                        self.pos = info_from;
                                        self.line_start = false;
                                        self.ident_start = None;
                                        return Step::Continue;
                                    }
                                };
                                let lang = self
                                    .buf
                                    .get(info_from..info_end)
                                    .unwrap_or("")
                                    .trim()
                                    .to_ascii_lowercase();
                                let callable = CALL_FENCES.contains(&lang.as_str());
                                self.emit_text(pos);
                                self.mode = Mode::Fence {
                                    start: pos,
                                    content,
                                    search: content,
                                    callable,
                                };
                                return Step::Continue;
                            }
                            _ => {}
                        }
                    }
                    if let Marker::Full = triple {
                        self.pos += 3;
                    } else {
                        self.pos += 1;
                        self.mode = Mode::InlineCode;
                    }
                    self.line_start = false;
                    self.ident_start = None;
                    return Step::Continue;
                }
                b'<' => {
                    let bytes = self.buf.as_bytes();
                    let (hermes_on, llama_on) = (
                        self.ctx.enabled(FormatId::Hermes),
                        self.ctx.enabled(FormatId::Llama),
                    );
                    let markers = [
                        (THINK_OPEN, true),
                        (THINK_CLOSE, true),
                        (hermes::OPEN, hermes_on),
                        (llama::PYTHON_TAG, llama_on),
                        (llama::END_TOKENS[0], llama_on),
                        (llama::END_TOKENS[1], llama_on),
                        (llama::END_TOKENS[2], llama_on),
                    ];
                    let mut partial = false;
                    let mut full = None;
                    for m in markers.into_iter().filter(|m| m.1).map(|m| m.0) {
                        match match_at(bytes, pos, m, false) {
                            Marker::Full => {
                                full = Some(m);
                                break;
                            }
                            Marker::Partial => partial = true,
                            Marker::No => {}
                        }
                    }
                    if let Some(m) = full {
                        self.emit_text(pos);
                        let after = pos + m.len();
                        self.emit_from = after;
                        if m != hermes::OPEN {
                            self.markup_found = true;
                        }
                        match m {
                            THINK_OPEN => {
                                self.reasoning.push(String::new());
                                self.mode = Mode::Think { content: after };
                                self.pos = after;
                            }
                            hermes::OPEN => {
                                self.probe_failed = false;
                                self.live = None;
                                self.mode = Mode::Hermes {
                                    start: pos,
                                    content: after,
                                    search: after,
                                };
                                self.pos = after;
                            }
                            llama::PYTHON_TAG => {
                                self.python_tag = true;
                                self.enter_text(after);
                            }
                            THINK_CLOSE => {
                                // A closing tag without an opening one: markup, dropped.
                                self.enter_text(after);
                            }
                            _ => {
                                // An end-of-message token closes a <|python_tag|> section.
                                self.python_tag = false;
                                self.enter_text(after);
                            }
                        }
                        return Step::Continue;
                    }
                    if partial && !is_final {
                        return Step::Wait;
                    }
                }
                b'[' => {
                    if self.ctx.enabled(FormatId::Mistral) {
                        match match_at(self.buf.as_bytes(), pos, mistral::MARKER, false) {
                            Marker::Full => {
                                self.emit_text(pos);
                                let after = pos + mistral::MARKER.len();
                                self.mode = Mode::MistralHead { marker: pos, after };
                                self.pos = after;
                                return Step::Continue;
                            }
                            Marker::Partial if !is_final => return Step::Wait,
                            _ => {}
                        }
                    }
                    if self.array_formats() {
                        let plausible =
                            array_start_plausible(&self.buf.as_bytes()[pos..], is_final);
                        if let Some(step) = self.open_plain_json(pos, plausible) {
                            return step;
                        }
                    }
                }
                b'{' if self.object_formats() => {
                    let plausible = object_start_plausible(&self.buf.as_bytes()[pos..], is_final);
                    if let Some(step) = self.open_plain_json(pos, plausible) {
                        return step;
                    }
                }
                b'(' => {
                    if let Some(s) = self.ident_start {
                        let name = self.buf.get(s..pos).unwrap_or("");
                        let skip = name
                            .bytes()
                            .take_while(|b| !(b.is_ascii_alphabetic() || *b == b'_'))
                            .count();
                        let name = name.get(skip..).unwrap_or("");
                        if !name.is_empty() && self.call_syntax_name_ok(name) {
                            let start = s + skip;
                            self.emit_text(start);
                            self.mode = Mode::Call {
                                start,
                                open: pos,
                                scanner: Scanner::new(self.ctx.limits.max_depth, true),
                            };
                            return Step::Continue;
                        }
                    }
                }
                b'T' | b't' if self.line_start && self.ctx.enabled(FormatId::KeyValue) => {
                    match match_at(self.buf.as_bytes(), pos, key_value::HEADER, true) {
                        Marker::Partial if !is_final => return Step::Wait,
                        Marker::Full => {
                            // A header line longer than this is not one (bounds the wait).
                            const MAX_HEADER: usize = 1024;
                            let window = &self.buf.as_bytes()[pos..len.min(pos + MAX_HEADER)];
                            let (line_end, next) = match memchr::memchr(b'\n', window) {
                                Some(nl) => (pos + nl, pos + nl + 1),
                                None if is_final && len - pos <= MAX_HEADER => (len, len),
                                None if len - pos < MAX_HEADER => return Step::Wait,
                                None => (pos, pos),
                            };
                            let line = self.buf.get(pos..line_end).unwrap_or("");
                            if let Some(name) = key_value::header_name(line) {
                                if self.ctx.strict_name_ok(name) {
                                    let name = name.to_owned();
                                    self.emit_text(pos);
                                    self.mode = Mode::KeyValue {
                                        start: pos,
                                        name,
                                        fields: Vec::new(),
                                        search: next,
                                    };
                                    self.pos = next;
                                    return Step::Continue;
                                }
                                let msg = format!(
                                    "TOOL_CALL block for unregistered tool {name:?} left as text"
                                );
                                let span = self.span(pos, line_end);
                                self.emit_text(pos);
                                self.diag(Diagnostic::info(msg, span));
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
            // An ordinary byte.
            if is_name_byte(b) {
                match self.ident_start {
                    None => self.ident_start = Some(pos),
                    Some(s) if pos - s > 256 => self.ident_start = Some(pos),
                    Some(_) => {}
                }
            } else {
                self.ident_start = None;
            }
            self.line_start = false;
            self.pos += 1;
        }
        Step::Continue
    }

    /// Acts on a plausibility verdict for a bare `{`/`[` at `pos`: wait for more bytes, start
    /// a JSON region there, or (`None`) carry on with the text.
    fn open_plain_json(&mut self, pos: usize, plausible: Option<bool>) -> Option<Step> {
        match plausible {
            None => Some(Step::Wait),
            Some(true) => {
                self.emit_text(pos);
                let site = self.plain_site();
                self.start_json(pos, site);
                Some(Step::Continue)
            }
            Some(false) => None,
        }
    }

    fn plain_site(&mut self) -> JsonSite {
        if self.python_tag {
            JsonSite::PythonTag
        } else {
            JsonSite::Plain
        }
    }

    fn step_inline(&mut self) -> Step {
        let bytes = self.buf.as_bytes();
        match memchr::memchr2(b'`', b'\n', &bytes[self.pos..]) {
            Some(i) => {
                let at = self.pos + i;
                if bytes[at] == b'`' {
                    self.pos = at + 1;
                } else {
                    self.pos = at;
                }
                self.mode = Mode::Text;
            }
            None => self.pos = self.buf.len(),
        }
        Step::Continue
    }

    fn step_think(&mut self, is_final: bool) -> Step {
        let Mode::Think { content } = self.mode else {
            return Step::Continue;
        };
        let bytes = self.buf.as_bytes();
        let found = find_marker(&bytes[content..], THINK_CLOSE.as_bytes());
        let (upto, close) = match found {
            Some(i) => (content + i, Some(content + i + THINK_CLOSE.len())),
            None if is_final => (self.buf.len(), None),
            None => (
                floor_boundary(
                    &self.buf,
                    self.buf.len().saturating_sub(THINK_CLOSE.len() - 1),
                )
                .max(content),
                None,
            ),
        };
        let piece = self.buf.get(content..upto).unwrap_or("").to_owned();
        if !piece.is_empty() {
            if let Some(block) = self.reasoning.last_mut() {
                block.push_str(&piece);
            }
            self.flush_text_event();
            self.events.push(StreamEvent::Reasoning { text: piece });
        }
        match close {
            Some(end) => {
                self.emit_from = end;
                self.enter_text(end);
                Step::Continue
            }
            None if is_final => {
                let span = self.span(content, upto);
                self.diag(Diagnostic::info(
                    "reasoning block not closed before the end of output",
                    span,
                ));
                self.emit_from = upto;
                self.enter_text(upto);
                Step::Continue
            }
            None => {
                self.mode = Mode::Think { content: upto };
                self.emit_from = upto;
                self.pos = upto;
                Step::Wait
            }
        }
    }

    fn step_fence(&mut self, is_final: bool) -> Step {
        let Mode::Fence {
            start,
            content,
            search,
            callable,
        } = self.mode
        else {
            return Step::Continue;
        };
        let bytes = self.buf.as_bytes();
        let mut from = search;
        let mut close: Option<(usize, usize)> = None; // (content end, fence end)
        while let Some(i) = find_marker(&bytes[from..], b"```") {
            let at = from + i;
            let line_begin = bytes[..at]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |p| p + 1);
            let only_spaces = bytes[line_begin..at]
                .iter()
                .all(|b| *b == b' ' || *b == b'\t');
            if only_spaces && line_begin >= content {
                let content_end = if line_begin > content {
                    line_begin - 1
                } else {
                    content
                };
                close = Some((content_end.max(content), at + 3));
                break;
            }
            from = at + 3;
        }
        let (content_end, end) = match close {
            Some(c) => c,
            None if is_final => (self.buf.len(), self.buf.len()),
            None => {
                let search = self.buf.len().saturating_sub(3).max(content);
                self.mode = Mode::Fence {
                    start,
                    content,
                    search,
                    callable,
                };
                return Step::Wait;
            }
        };
        if !callable {
            self.enter_text(end);
            return Step::Continue;
        }
        let inner = self.buf.get(content..content_end).unwrap_or("").to_owned();
        let mut sub = Engine::new_inner(self.ctx.clone());
        sub.nested = true;
        sub.quiet = true;
        sub.base = self.abs(content);
        sub.python_tag = self.python_tag;
        sub.seen_visible = self.seen_visible;
        let mut events = sub.push(&inner);
        events.extend(sub.finish_nested());
        if sub.markup_found {
            self.emit_text(start);
            self.emit_from = end;
            self.enter_text(end);
            self.markup_found = true;
            let mut text = String::new();
            for e in events {
                match e {
                    StreamEvent::Text { text: t } => text.push_str(&t),
                    StreamEvent::Reasoning { text: t } => {
                        self.reasoning.push(t.clone());
                        self.events.push(StreamEvent::Reasoning { text: t });
                    }
                    StreamEvent::CallFinished { call, .. } => self.emit_call(call),
                    StreamEvent::Diagnostic { diagnostic } => self.diag(diagnostic),
                    StreamEvent::CallStarted { .. } | StreamEvent::ArgumentsDelta { .. } => {}
                }
            }
            if !text.trim().is_empty() {
                self.emit_raw_text(&text);
            }
        } else {
            for e in events {
                if let StreamEvent::Diagnostic { diagnostic } = e {
                    self.diag(diagnostic);
                }
            }
            self.enter_text(end);
        }
        self.labels.extend(sub.labels);
        Step::Continue
    }

    /// Finish for a fence's sub-engine: no fallbacks (they apply once, to the whole reply).
    fn finish_nested(&mut self) -> Vec<StreamEvent> {
        self.run(true);
        self.finished = true;
        self.flush_text_event();
        std::mem::take(&mut self.events)
    }

    fn step_json(&mut self, is_final: bool) -> Step {
        let Mode::Json {
            start,
            mut scanner,
            site,
        } = std::mem::replace(&mut self.mode, Mode::Text)
        else {
            return Step::Continue;
        };
        let bytes = self.buf.as_bytes();
        match bytes.get(start) {
            None => {
                if is_final {
                    let len = self.buf.len();
                    self.json_unusable(start, site, "nothing follows the marker".into(), len);
                    return Step::Continue;
                }
                self.mode = Mode::Json {
                    start,
                    scanner,
                    site,
                };
                return Step::Wait;
            }
            Some(b'{' | b'[') => {}
            Some(_) => {
                self.json_unusable(start, site, "expected a JSON object or array".into(), start);
                return Step::Continue;
            }
        }
        match scanner.advance(&bytes[start..]) {
            Scan::NeedMore => {
                if is_final {
                    let region = &self.buf.as_bytes()[start..];
                    if looks_like_call(region) || !matches!(site, JsonSite::Plain) {
                        let m = site.markup_start(start);
                        self.drop_markup(
                            m,
                            self.buf.len(),
                            "truncated tool call: the JSON ends before it is closed; not run"
                                .into(),
                        );
                    } else {
                        self.enter_text(start + 1);
                    }
                    return Step::Continue;
                }
                // `name[ARGS]{...` is announced while its arguments stream.
                if let JsonSite::MistralNamed { name, id, .. } = &site
                    && self.buf.as_bytes().get(start) == Some(&b'{')
                {
                    if self.live.is_none() && self.call_count < self.ctx.limits.max_calls {
                        self.announce(name.clone(), id.clone(), start);
                    }
                    self.advance_live();
                }
                self.mode = Mode::Json {
                    start,
                    scanner,
                    site,
                };
                Step::Wait
            }
            Scan::Done(n) => {
                self.complete_json(start, start + n, site);
                Step::Continue
            }
            Scan::Fail(e) => {
                self.json_unusable(start, site, e, start + scanner.consumed());
                Step::Continue
            }
        }
    }

    /// A region that is not balanced JSON: text (rescanned from the next byte), or for
    /// explicit markup an error.
    fn json_unusable(&mut self, start: usize, site: JsonSite, why: String, end: usize) {
        // `end` is where the scan stopped: never the buffer length, which depends on chunking.
        match site {
            JsonSite::Plain | JsonSite::PythonTag => {
                let region = self.buf.as_bytes().get(start..end).unwrap_or(&[]);
                if looks_like_call(region) {
                    let span = self.span(start, end);
                    self.diag(Diagnostic::error(
                        format!("malformed tool call JSON left as text: {why}"),
                        span,
                    ));
                }
                self.enter_text(start + 1);
            }
            JsonSite::Mistral { marker } | JsonSite::MistralNamed { marker, .. } => {
                self.drop_markup(
                    marker,
                    end,
                    format!("[TOOL_CALLS] not followed by a call: {why}"),
                );
            }
        }
    }

    fn complete_json(&mut self, start: usize, end: usize, site: JsonSite) {
        let region = self.buf.get(start..end).unwrap_or("").to_owned();
        let span = self.span(start, end);
        let markup = site.markup_start(start);
        match parse_lenient(&region) {
            Ok((mut v, repairs)) => {
                let outcome = match &site {
                    JsonSite::Plain => classify_value(
                        &mut v,
                        &self.ctx,
                        &Site::Plain {
                            at_start: !self.seen_visible,
                        },
                        span.clone(),
                    ),
                    JsonSite::PythonTag => {
                        classify_value(&mut v, &self.ctx, &Site::PythonTag, span.clone())
                    }
                    JsonSite::Mistral { .. } => {
                        json::classify(&mut v, &self.ctx, FormatId::Mistral, true, span.clone())
                    }
                    JsonSite::MistralNamed { name, id, .. } => {
                        let args = std::mem::take(&mut v);
                        let mut d = Draft::new(name.clone(), Some(args), FormatId::Mistral);
                        d.id = id.clone();
                        d.span = self.span(markup, end);
                        let mut o = Outcome::default();
                        o.diagnostics
                            .extend(self.ctx.unknown_name_warning(name, d.span.clone()));
                        o.drafts.push(d);
                        Some(o)
                    }
                };
                match outcome {
                    Some(mut o) => {
                        for d in &mut o.drafts {
                            d.repairs.extend(repairs.iter().cloned());
                        }
                        if !repairs.is_empty() {
                            let kinds: Vec<&str> =
                                repairs.iter().map(|r| r.kind.as_str()).collect();
                            o.diagnostics.push(Diagnostic::info(
                                format!("repaired JSON: {}", kinds.join(", ")),
                                span.clone(),
                            ));
                        }
                        self.apply_outcome(markup, end, o);
                    }
                    None => match site {
                        JsonSite::Plain | JsonSite::PythonTag => {
                            if let Some(why) = rejected_call_shape(&v, &self.ctx) {
                                self.diag(Diagnostic::info(why, span.clone()));
                            }
                            if self.fallbacks_on()
                                && let Some(l) = fallback::label_of(&v)
                            {
                                self.labels.push((l, span));
                            }
                            self.enter_text(end);
                        }
                        _ => self.drop_markup(
                            markup,
                            end,
                            "[TOOL_CALLS] content is not a list of {name, arguments} calls".into(),
                        ),
                    },
                }
            }
            Err(e) => {
                if matches!(site, JsonSite::Plain)
                    && region.starts_with('[')
                    && self.ctx.enabled(FormatId::Pythonic)
                {
                    match pythonic::classify(&region, &self.ctx, span.clone()) {
                        Some(Ok(o)) => {
                            self.apply_outcome(start, end, o);
                            return;
                        }
                        Some(Err(msg)) => {
                            self.drop_markup(start, end, msg);
                            return;
                        }
                        None => {}
                    }
                }
                match site {
                    JsonSite::Plain | JsonSite::PythonTag => {
                        if looks_like_call(region.as_bytes()) {
                            self.drop_markup(
                                start,
                                end,
                                format!("malformed tool call JSON, not run: {e}"),
                            );
                        } else {
                            self.enter_text(start + 1);
                        }
                    }
                    _ => self.drop_markup(markup, end, format!("malformed [TOOL_CALLS] JSON: {e}")),
                }
            }
        }
    }

    fn step_hermes(&mut self, is_final: bool) -> Step {
        let Mode::Hermes {
            start,
            content,
            search,
        } = self.mode
        else {
            return Step::Continue;
        };
        let bytes = self.buf.as_bytes();
        // `<tool_call>` mentioned in prose is not followed by JSON: it stays text.
        const MAX_LEAD: usize = 4096;
        let lead = &bytes[content..bytes.len().min(content + MAX_LEAD)];
        match lead.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{' | b'[') => {}
            Some(_) => {
                self.emit_from = start;
                self.enter_text(start + 1);
                return Step::Continue;
            }
            None if !is_final && bytes.len() - content < MAX_LEAD => {
                self.mode = Mode::Hermes {
                    start,
                    content,
                    search,
                };
                return Step::Wait;
            }
            None => {}
        }
        let (content_end, end, closed) =
            match find_marker(&bytes[search..], hermes::CLOSE.as_bytes()) {
                Some(i) => (search + i, search + i + hermes::CLOSE.len(), true),
                None if is_final => (self.buf.len(), self.buf.len(), false),
                None => {
                    let search = self
                        .buf
                        .len()
                        .saturating_sub(hermes::CLOSE.len() - 1)
                        .max(content);
                    self.mode = Mode::Hermes {
                        start,
                        content,
                        search,
                    };
                    self.stream_live(content);
                    return Step::Wait;
                }
            };
        let inner = self.buf.get(content..content_end).unwrap_or("").to_owned();
        let mut o = Outcome::default();
        let mut i = 0;
        let ib = inner.as_bytes();
        let mut complete_values = 0;
        loop {
            while ib.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            let Some(&b) = ib.get(i) else { break };
            let vstart = self.abs(content + i);
            if b != b'{' && b != b'[' {
                o.diagnostics.push(Diagnostic::error(
                    "<tool_call> content is not JSON; dropped",
                    vstart..self.abs(content_end),
                ));
                break;
            }
            let mut sc = Scanner::new(self.ctx.limits.max_depth, false);
            match sc.advance(&ib[i..]) {
                Scan::Done(n) => {
                    let text = inner.get(i..i + n).unwrap_or("");
                    let span = vstart..vstart + n;
                    match parse_lenient(text) {
                        Ok((mut v, repairs)) => {
                            match json::classify(
                                &mut v,
                                &self.ctx,
                                FormatId::Hermes,
                                true,
                                self.span(start, end),
                            ) {
                                Some(mut found) => {
                                    for d in &mut found.drafts {
                                        d.repairs.extend(repairs.iter().cloned());
                                    }
                                    o.drafts.extend(found.drafts);
                                    o.diagnostics.extend(found.diagnostics);
                                    complete_values += 1;
                                }
                                None => o.diagnostics.push(Diagnostic::error(
                                    "<tool_call> content is not a {name, arguments} call; dropped",
                                    span,
                                )),
                            }
                        }
                        Err(e) => o.diagnostics.push(Diagnostic::error(
                            format!("<tool_call> JSON is malformed, not run: {e}"),
                            span,
                        )),
                    }
                    i += n;
                }
                Scan::NeedMore => {
                    o.diagnostics.push(Diagnostic::error(
                        "truncated tool call: <tool_call> JSON ends before it is closed; not run",
                        vstart..self.abs(content_end),
                    ));
                    break;
                }
                Scan::Fail(e) => {
                    o.diagnostics.push(Diagnostic::error(
                        format!("<tool_call> JSON is malformed, not run: {e}"),
                        vstart..self.abs(content_end),
                    ));
                    break;
                }
            }
        }
        if !closed && complete_values > 0 {
            o.diagnostics.push(Diagnostic::info(
                "<tool_call> not closed at the end of output; its complete JSON was accepted",
                self.span(start, end),
            ));
        }
        self.apply_outcome(start, end, o);
        Step::Continue
    }

    /// While a `<tool_call>` body streams: announce the call once its name is known, then
    /// forward the raw argument text as it arrives (bounded by the arguments' own end).
    fn stream_live(&mut self, content: usize) {
        if self.live.is_none() {
            if self.probe_failed || self.call_count >= self.ctx.limits.max_calls {
                return;
            }
            let body = self.buf.as_bytes().get(content..).unwrap_or(&[]);
            match hermes::probe(body) {
                hermes::Probe::NeedMore => return,
                hermes::Probe::No => {
                    self.probe_failed = true;
                    return;
                }
                hermes::Probe::Yes(name, off) => self.announce(name, None, content + off),
            }
        }
        self.advance_live();
    }

    /// Emits `CallStarted` for a call whose arguments object starts at `args_start`.
    fn announce(&mut self, name: String, id: Option<String>, args_start: usize) {
        let index = self.next_index;
        self.next_index += 1;
        let call_id = id
            .filter(|i| !i.is_empty())
            .map_or_else(CallId::generate, CallId);
        self.flush_text_event();
        self.events.push(StreamEvent::CallStarted {
            index,
            call_id: call_id.clone(),
            name: name.clone(),
        });
        self.live = Some(Live {
            index,
            call_id,
            name,
            args_start,
            emitted: args_start,
            scanner: Scanner::new(self.ctx.limits.max_depth, false),
            done: false,
        });
    }

    /// Forwards the argument text that arrived since the last push.
    fn advance_live(&mut self) {
        let Some(live) = &mut self.live else { return };
        if live.done {
            return;
        }
        let region = self.buf.as_bytes().get(live.args_start..).unwrap_or(&[]);
        let upto = match live.scanner.advance(region) {
            Scan::Done(n) => {
                live.done = true;
                live.args_start + n
            }
            Scan::NeedMore => live.args_start + live.scanner.consumed(),
            Scan::Fail(_) => {
                live.done = true;
                live.emitted
            }
        };
        let upto = floor_boundary(&self.buf, upto);
        if upto > live.emitted {
            let fragment = self.buf.get(live.emitted..upto).unwrap_or("").to_owned();
            live.emitted = upto;
            let index = live.index;
            self.events
                .push(StreamEvent::ArgumentsDelta { index, fragment });
        }
    }

    fn step_mistral_head(&mut self, is_final: bool) -> Step {
        let Mode::MistralHead { marker, after } = self.mode else {
            return Step::Continue;
        };
        let rest = self.buf.get(after..).unwrap_or("");
        match mistral::head(rest, is_final) {
            None => Step::Wait,
            Some(mistral::Head::Json(off)) => {
                self.start_json(after + off, JsonSite::Mistral { marker });
                Step::Continue
            }
            Some(mistral::Head::Named(name, id, off)) => {
                self.start_json(after + off, JsonSite::MistralNamed { marker, name, id });
                Step::Continue
            }
            Some(mistral::Head::Invalid) => {
                self.drop_markup(marker, after, "[TOOL_CALLS] not followed by calls".into());
                Step::Continue
            }
        }
    }

    fn step_key_value(&mut self, is_final: bool) -> Step {
        loop {
            let Mode::KeyValue { start, .. } = &self.mode else {
                return Step::Continue;
            };
            let start = *start;
            let pos = self.pos;
            let len = self.buf.len();
            let from = match &self.mode {
                Mode::KeyValue { search, .. } => (*search).max(pos),
                _ => pos,
            };
            let (line_end, next) = match memchr::memchr(b'\n', &self.buf.as_bytes()[from..]) {
                Some(nl) => (from + nl, from + nl + 1),
                None if is_final => (len, len),
                None => {
                    if let Mode::KeyValue { search, .. } = &mut self.mode {
                        *search = len;
                    }
                    return Step::Wait;
                }
            };
            let line = self
                .buf
                .get(pos..line_end)
                .unwrap_or("")
                .trim_end_matches('\r');
            let Mode::KeyValue { name, fields, .. } = &mut self.mode else {
                return Step::Continue;
            };
            let spec = self.ctx.registry.as_deref().and_then(|r| r.spec(name));
            if pos < len
                && let Some(f) = key_value::field(line, spec)
            {
                fields.push(f);
                self.pos = next;
                if let Mode::KeyValue { search, .. } = &mut self.mode {
                    *search = next;
                }
                continue;
            }
            // The block ends before this line.
            let args = key_value::arguments(fields, spec);
            let mut d = Draft::new(name.clone(), Some(Value::Object(args)), FormatId::KeyValue);
            d.span = self.span(start, pos);
            let o = Outcome {
                drafts: vec![d],
                ..Outcome::default()
            };
            self.apply_outcome(start, pos, o);
            self.line_start = true;
            return Step::Continue;
        }
    }

    fn step_call(&mut self, is_final: bool) -> Step {
        let Mode::Call {
            start,
            open,
            mut scanner,
        } = std::mem::replace(&mut self.mode, Mode::Text)
        else {
            return Step::Continue;
        };
        let name = self.buf.get(start..open).unwrap_or("").to_owned();
        match scanner.advance(&self.buf.as_bytes()[open..]) {
            Scan::NeedMore if !is_final => {
                self.mode = Mode::Call {
                    start,
                    open,
                    scanner,
                };
                Step::Wait
            }
            Scan::NeedMore => {
                self.drop_markup(
                    start,
                    self.buf.len(),
                    format!("truncated tool call: {name}( is not closed; not run"),
                );
                Step::Continue
            }
            Scan::Done(n) => {
                let end = open + n;
                let inner = self.buf.get(open + 1..end - 1).unwrap_or("").to_owned();
                let span = self.span(start, end);
                match parse_args(&name, &inner, &self.ctx, FormatId::CallSyntax, span.clone()) {
                    Ok(d) => {
                        let o = Outcome {
                            drafts: vec![d],
                            ..Outcome::default()
                        };
                        self.apply_outcome(start, end, o);
                    }
                    Err(e) => {
                        self.diag(Diagnostic::error(
                            format!("{name}(...) left as text, not run: {e}"),
                            span,
                        ));
                        self.enter_text(end);
                    }
                }
                Step::Continue
            }
            Scan::Fail(e) => {
                let span = self.span(start, open + scanner.consumed());
                self.diag(Diagnostic::error(
                    format!("{name}(...) left as text: {e}"),
                    span,
                ));
                self.enter_text(open + 1);
                Step::Continue
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-by-byte rule `skip_plain` replaces, for bytes that are not in `STOP`.
    fn reference(bytes: &[u8], from: usize, mut ident: Option<usize>) -> Option<usize> {
        for (pos, &b) in bytes.iter().enumerate().skip(from) {
            if is_name_byte(b) {
                match ident {
                    None => ident = Some(pos),
                    Some(s) if pos - s > 256 => ident = Some(pos),
                    Some(_) => {}
                }
            } else {
                ident = None;
            }
        }
        ident
    }

    // covers R-1 (the bulk text skip keeps the exact per-byte identifier state, so a
    // `name(` call is found the same way whatever the run lengths and chunking)
    #[test]
    fn skip_plain_matches_the_byte_loop() {
        let (ctx, _) = crate::ParseOptions::default().ctx();
        let ctx = Arc::new(ctx);
        let alphabet: &[&str] = &["a", "Z", "_", ".", " ", "\t", ",", "é", "-", "9", "!"];
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        for case in 0..400 {
            let mut s = String::new();
            let len = if case % 7 == 0 { 900 } else { case % 60 };
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Long name runs often, to cross the 256-byte restart.
                let pick = if case % 3 == 0 {
                    (seed % 4) as usize
                } else {
                    (seed % 11) as usize
                };
                s.push_str(alphabet[pick.min(alphabet.len() - 1)]);
            }
            let bytes = s.as_bytes();
            for from in [0, 1, 5, 300].into_iter().filter(|f| *f <= bytes.len()) {
                if !s.is_char_boundary(from) {
                    continue;
                }
                let carried = [None, from.checked_sub(1), from.checked_sub(200)];
                for ident in carried {
                    // A carried-in identifier is only possible after name bytes.
                    if let Some(i) = ident
                        && !bytes[i..from].iter().all(|&b| is_name_byte(b))
                    {
                        continue;
                    }
                    let mut e = Engine::new_inner(ctx.clone());
                    e.buf = s.clone();
                    e.pos = from;
                    e.line_start = false;
                    e.ident_start = ident;
                    e.skip_plain();
                    assert_eq!(e.pos, bytes.len(), "{s:?}");
                    assert_eq!(
                        e.ident_start,
                        reference(bytes, from, ident),
                        "{s:?} from {from} ident {ident:?}"
                    );
                }
            }
        }
    }
}
