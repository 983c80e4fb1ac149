//! Finds tool calls in model output, whole or streamed.
//!
//! One streaming engine ([`StreamParser`]; [`parse`] is one push and a finish) scans text for
//! markup and hands candidate regions to the model families, one module each under
//! `families/` behind the `family::Family` trait and registered in one list
//! (`families/mod.rs`): each declares its openers (literals, a literal at a line start,
//! `name(` call syntax, bare JSON brackets) and reads its regions incrementally. All share
//! one JSON scanner (`scanner`), one repair pass (`repair`) and one call builder
//! (`builder`). Native provider shapes given as JSON go through [`parse_native`].
//! Each family also declares its call markup as data ([`shape`]), which
//! `toolcall-constrain` turns into decoding constraints; the parser never reads it.
//!
//! Values written as text in markup (XML and tag families) are typed by the tool's schema:
//! a string stays exactly the text, other types are read as JSON. When the schema gives the
//! argument no type, each family follows its reference parser ([`Untyped`], declared in the
//! family's module):
//!
//! | family | a value the schema does not type |
//! |---|---|
//! | `qwen3_coder`, `seed_oss`, `dots` | `null` (any case) is null, else text |
//! | `minimax_m2` | `null`, `None`, `nil` (any case) are null, else text |
//! | `glm`, `minicpm5`, `step3` | JSON, then a Python literal (a `text_value` repair), else text |
//! | `muse_glimmer`, `functiongemma` | JSON, else text |
//! | the others | text |
//!
//! Registry policy (R-4): formats that can misfire on prose or ordinary JSON (`json`,
//! `llama` without `<|python_tag|>`, `pythonic`, `call_syntax`, `key_value`, `fallback`)
//! accept only registered names when a registry is given; `call_syntax` in auto mode needs a
//! registry at all. Explicit markup (`hermes`, `mistral`, `<|python_tag|>`, native shapes,
//! the `tools_envelope`) accepts any name and flags unknown ones with a warning; the
//! executor then answers such calls with `unknown_tool` (R-10). `action_response` drops an
//! unknown command with a diagnostic (F-ACT-3).

use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{Diagnostic, Event, Parsed, Registry, StreamEvent};

mod builder;
mod chat_template;
mod engine;
mod fallback;
mod families;
mod family;
mod model_names;
mod openers;
mod prompt;
mod repair;
mod results;
mod scanner;
pub mod shape;
#[cfg(test)]
mod stream_replay;
#[cfg(test)]
mod test_rng;

pub use builder::{Limits, ReplyEnd};
pub use chat_template::{
    ReasoningMarkers, TemplateError, TemplateInfo, detect_file_text, detect_template,
    detect_tokenizer_config,
};
pub use fallback::{FallbackKind, FallbackRule, load_fallback_rules};
pub use families::{FormatInfo, formats};
pub use family::{FormatId, Instructions, ReasoningMarker, Untyped};
pub use model_names::{ModelFamily, model_family, model_table};
pub use openers::markup_openers;
pub use prompt::{example_call, render_prompt, render_prompt_with_trigger, text_formats};
pub use results::{ToolResultText, write_tool_results};

use builder::{Ctx, build};
use engine::{Engine, Quiet};

/// Errors of configuring a parse (parsing itself never fails: it reports diagnostics).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("unknown format {0:?}; run `toolcall formats` for the list")]
    UnknownFormat(String),
    /// The fallback rules file is not a list of rules; the JSON error says where and why
    /// (its `line()`, `column()` and `classify()` tell syntax from shape errors).
    #[error("invalid fallback rules: {0}")]
    Fallbacks(#[source] serde_json::Error),
    #[error("{0:?} is not a text format; text formats: {1}")]
    NotTextFormat(String, String),
}

/// Which formats to try.
#[derive(Debug, Clone, Default)]
pub enum FormatSelection {
    /// Try every format in the default priority order.
    #[default]
    Auto,
    /// Try these formats, in this order.
    Priority(Vec<String>),
    /// Only this format.
    Only(String),
}

impl FormatSelection {
    /// `auto`, one format id, or a comma-separated priority list; names are checked.
    pub fn from_name(s: &str) -> Result<Self, ParseError> {
        let s = s.trim();
        if s.is_empty() || s == "auto" {
            return Ok(FormatSelection::Auto);
        }
        let names: Vec<String> = s.split(',').map(|n| n.trim().to_owned()).collect();
        for n in &names {
            if FormatId::from_name(n).is_none() {
                return Err(ParseError::UnknownFormat(n.clone()));
            }
        }
        Ok(match <[String; 1]>::try_from(names) {
            Ok([one]) => FormatSelection::Only(one),
            Err(names) => FormatSelection::Priority(names),
        })
    }

    /// The format a model writes, from its name ([`model_family`]: a glob table, longest
    /// match wins, case-insensitive, organisation prefix optional): that family alone, or
    /// first with the families its models also write (`Family::also_written`); auto when
    /// the name is unknown or its family is not registered.
    pub fn for_model(name: &str) -> Self {
        let Some(family) = model_family(name)
            .and_then(|m| FormatId::from_name(m.family))
            .and_then(FormatId::family)
        else {
            return FormatSelection::Auto;
        };
        let also = family.also_written();
        if also.is_empty() {
            return FormatSelection::Only(family.id().to_owned());
        }
        FormatSelection::Priority(
            std::iter::once(family.id())
                .chain(also.iter().copied())
                .map(str::to_owned)
                .collect(),
        )
    }

    fn resolve(&self) -> (Vec<FormatId>, Vec<String>, bool) {
        let names: &[String] = match self {
            FormatSelection::Auto => return (FormatId::all().collect(), Vec::new(), false),
            FormatSelection::Priority(v) => v,
            FormatSelection::Only(one) => std::slice::from_ref(one),
        };
        let mut order = Vec::new();
        let mut unknown = Vec::new();
        for n in names {
            match FormatId::from_name(n) {
                Some(f) if !order.contains(&f) => order.push(f),
                Some(_) => {}
                None => unknown.push(n.clone()),
            }
        }
        (order, unknown, true)
    }
}

/// How to parse.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    pub format: FormatSelection,
    /// The registered tools; formats that can misfire on prose accept only these names.
    pub tools: Option<Arc<Registry>>,
    /// Input size, nesting depth and call-count bounds.
    pub limits: Limits,
    /// Fallback rules (F-FB-1), tried in order when nothing else matched; empty = off.
    pub fallbacks: Vec<FallbackRule>,
    /// The reply starts inside a reasoning block: set when the chat template already opened
    /// `<think>` (Qwen3, DeepSeek-R1), so everything up to `</think>` is reasoning (R-5).
    pub starts_in_reasoning: bool,
    /// How the reply ended (the server's `finish_reason`, [`ReplyEnd::from_finish_reason`]);
    /// [`StreamParser::finish_as`] overrides it for a stream. Default: unknown, read as
    /// ended by the model (see [`ReplyEnd`]).
    pub reply_end: ReplyEnd,
    /// Calls written inside reasoning; `None`: the chosen family's default
    /// ([`ReasoningCalls`]; `ignore` in auto mode).
    pub reasoning_calls: Option<ReasoningCalls>,
    /// Reads the chosen families' reasoning markers and control tokens only: reasoning is
    /// split out and control tokens removed exactly as in a full parse, but no call markup
    /// is ever taken (call-like text, JSON and fences stay text, fallbacks and
    /// [`ReasoningCalls`] do not apply). For a reply to a request that offered no tools.
    pub reasoning_only: bool,
}

/// What becomes of calls written inside a reasoning block (`<think>…</think>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningCalls {
    /// Drafts: never run (R-5). The default of most families.
    #[default]
    Ignore,
    /// When the reply holds no call outside reasoning, the calls written inside it are the
    /// reply's calls (Qwen3.5 writes its only real call inside `<think>`); otherwise they
    /// stay drafts. Each such call gets an info diagnostic; its span counts in the
    /// reasoning block's text.
    TakeIfNoneAfter,
}

impl std::str::FromStr for ReasoningCalls {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ignore" => Ok(ReasoningCalls::Ignore),
            "take_if_none_after" => Ok(ReasoningCalls::TakeIfNoneAfter),
            other => Err(format!(
                "unknown reasoning_calls {other:?}: ignore or take_if_none_after"
            )),
        }
    }
}

impl ParseOptions {
    /// The policy in force: the option, else the explicitly chosen family's default
    /// (`first`: the first family of `ctx`, these options' context).
    fn reasoning_calls(&self, ctx: &Ctx, first: Option<&dyn family::Family>) -> ReasoningCalls {
        if self.reasoning_only {
            return ReasoningCalls::Ignore;
        }
        self.reasoning_calls.unwrap_or_else(|| {
            first
                .filter(|_| ctx.explicit)
                .map_or(ReasoningCalls::Ignore, |f| f.reasoning_calls())
        })
    }

    /// [`ParseOptions::ctx`], shared: the context of the options of this thread's last
    /// parser is kept and given again while the options are the same (the same formats,
    /// registry, limits, no fallbacks and no unknown format name), so that a parse of a
    /// short reply does not resolve its formats again. The kept context holds a clone of
    /// the registry's `Arc` until options with another registry come.
    fn shared_ctx(&self) -> (Arc<Ctx>, Vec<String>) {
        thread_local! {
            static LAST: std::cell::RefCell<Option<(FormatSelection, Arc<Ctx>)>> =
                const { std::cell::RefCell::new(None) };
        }
        let same = |format: &FormatSelection, ctx: &Ctx| {
            same_selection(format, &self.format)
                && match (&ctx.registry, &self.tools) {
                    (None, None) => true,
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    _ => false,
                }
                && ctx.limits == self.limits
                && ctx.fallbacks.is_empty()
                && self.fallbacks.is_empty()
                && ctx.starts_in_reasoning == self.starts_in_reasoning
                && ctx.reply_end == self.reply_end
                && ctx.reasoning_only == self.reasoning_only
        };
        let hit = LAST
            .try_with(|last| {
                let last = last.try_borrow().ok()?;
                let (format, ctx) = last.as_ref()?;
                same(format, ctx).then(|| Arc::clone(ctx))
            })
            .ok()
            .flatten();
        if let Some(ctx) = hit {
            return (ctx, Vec::new());
        }
        let (ctx, unknown) = self.ctx();
        let ctx = Arc::new(ctx);
        if unknown.is_empty() && self.fallbacks.is_empty() {
            let _ = LAST.try_with(|last| {
                if let Ok(mut last) = last.try_borrow_mut() {
                    *last = Some((self.format.clone(), Arc::clone(&ctx)));
                }
            });
        }
        (ctx, unknown)
    }
}

/// Whether two selections are the same list of names (what [`FormatSelection::resolve`]
/// reads).
fn same_selection(a: &FormatSelection, b: &FormatSelection) -> bool {
    match (a, b) {
        (FormatSelection::Auto, FormatSelection::Auto) => true,
        (FormatSelection::Only(a), FormatSelection::Only(b)) => a == b,
        (FormatSelection::Priority(a), FormatSelection::Priority(b)) => a == b,
        _ => false,
    }
}

impl ParseOptions {
    fn ctx(&self) -> (Ctx, Vec<String>) {
        let (order, unknown, explicit) = self.format.resolve();
        let reasoning_only = self.reasoning_only;
        let bare = order
            .iter()
            .filter(|_| !reasoning_only)
            .filter_map(|f| f.family())
            .fold(family::BareJson::default(), |acc, f| {
                let b = f.bare_json();
                family::BareJson {
                    objects: acc.objects || b.objects,
                    arrays: acc.arrays || b.arrays,
                }
            });
        let first = order.first().and_then(|f| f.family());
        let mut ctx = Ctx {
            first,
            openers: openers::Openers::cached(&order, explicit, reasoning_only),
            bare,
            families: order.iter().filter_map(|f| f.family()).collect(),
            order,
            registry: self.tools.clone(),
            limits: self.limits,
            fallbacks: if reasoning_only {
                Vec::new()
            } else {
                self.fallbacks.clone()
            },
            explicit,
            starts_in_reasoning: self.starts_in_reasoning,
            reply_end: self.reply_end,
            calls: Vec::new(),
            reasoning_only,
        };
        if reasoning_only {
            return (ctx, unknown);
        }
        ctx.calls = ctx
            .order
            .iter()
            .filter_map(|f| f.family())
            .filter(|fam| fam.call_syntax(&ctx))
            .collect();
        (ctx, unknown)
    }
}

/// The options' own warnings: unknown format names, and tool schemas whose non-standard
/// type names were read as JSON Schema types.
fn unknown_format_diags(unknown: &[String], ctx: &Ctx) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = unknown
        .iter()
        .map(|n| Diagnostic::warning(format!("unknown format {n:?} ignored"), 0..0))
        .collect();
    if let Some(r) = ctx.registry.as_deref() {
        out.extend(r.schema_warnings());
    }
    out
}

fn collect(events: Vec<StreamEvent>, into: &mut Parsed) {
    let (mut calls, mut diagnostics) = (0, 0);
    for e in &events {
        match e {
            StreamEvent::CallFinished { .. } => calls += 1,
            StreamEvent::Diagnostic { .. } => diagnostics += 1,
            _ => {}
        }
    }
    into.calls.reserve_exact(calls);
    into.diagnostics.reserve_exact(diagnostics);
    for e in events {
        match e {
            StreamEvent::Text { text } => into.text.push_str(&text),
            StreamEvent::CallFinished { call, .. } => into.calls.push(call),
            StreamEvent::Diagnostic { diagnostic } => into.diagnostics.push(diagnostic),
            StreamEvent::Reasoning { .. }
            | StreamEvent::CallStarted { .. }
            | StreamEvent::ArgumentsDelta { .. } => {}
        }
    }
}

/// Parses one whole reply: the same as one `push` and a `finish`.
pub fn parse(text: &str, options: &ParseOptions) -> Parsed {
    let (ctx, unknown) = options.shared_ctx();
    // Reasoning only, and no marker, control token or header occurs in the reply: the
    // reply is its text, and the engine is not started (most replies to requests without
    // tools).
    let implied = ctx.explicit && ctx.first.is_some_and(|f| f.implied_opener().is_some());
    if ctx.reasoning_only
        && !ctx.starts_in_reasoning
        && !implied
        && text.len() <= ctx.limits.max_input_bytes
        && !ctx.openers.occurs_in(text)
    {
        return Parsed {
            text: text.to_owned(),
            diagnostics: unknown_format_diags(&unknown, &ctx),
            ..Parsed::default()
        };
    }
    // Nothing reads the events between the engine and `Parsed` (no implied opener, no
    // held start of reasoning, no second look at the reasoning: what `StreamParser` would
    // hold, worked out as it does, an implied opener dropped when the reply's start does
    // not continue it as below): the engine alone, made here and writing the result itself
    // (no `StreamParser` built, moved and dropped around it).
    let implied = StreamParser::implied(&ctx);
    if !StreamParser::opens_think(&ctx, implied.is_some())
        && implied.is_none_or(|imp| imp.decide.continues(text, false) == Some(false))
        && options.reasoning_calls(&ctx, ctx.first) != ReasoningCalls::TakeIfNoneAfter
    {
        let start = Parsed {
            diagnostics: unknown_format_diags(&unknown, &ctx),
            ..Parsed::default()
        };
        let mut engine = Engine::new(ctx);
        // Only text, finished calls and diagnostics are kept.
        engine.quiet = true;
        // The engine reads `text` where it lies (no copy into its buffer).
        let mut parsed = engine.parse_whole(text, start);
        parsed.reasoning = std::mem::take(&mut engine.reasoning);
        return parsed;
    }
    let mut p = StreamParser::with_ctx(options, ctx, unknown);
    // Only text, finished calls and diagnostics are kept.
    p.engine.quiet = true;
    // The reply's start already says it does not continue the implied opener (what the
    // first push decides the same way): the engine reads it as it is.
    if let Some(imp) = &p.implied
        && imp.held.is_empty()
        && imp.decide.continues(text, false) == Some(false)
    {
        p.implied = None;
    }
    // Nothing reads the events between the engine and `Parsed` (no span shift, no second
    // look at the reasoning): the engine writes the result itself.
    if p.implied.is_none() && p.opened_think.is_none() && p.reasoning_options.is_none() {
        let start = Parsed {
            diagnostics: std::mem::take(&mut p.pending),
            ..Parsed::default()
        };
        // The engine reads `text` where it lies (no copy into its buffer).
        let mut engine: Engine<'_> = p.engine;
        let mut parsed = engine.parse_whole(text, start);
        parsed.reasoning = std::mem::take(&mut engine.reasoning);
        return parsed;
    }
    let mut parsed = Parsed::default();
    // Grown as events come: a buffer sized up front for a short reply is a large
    // allocation, which makes the allocator consolidate its free lists on every parse.
    let mut events = Vec::new();
    p.push_into(text, &mut events);
    p.finish_mut(&mut events);
    collect(events, &mut parsed);
    parsed.reasoning = std::mem::take(&mut p.engine.reasoning);
    parsed
}

/// An incremental parser: `push` deltas as they arrive, then `finish`.
///
/// Events: `Text` (visible reply), `Reasoning`, and per call `CallStarted`,
/// `ArgumentsDelta` and `CallFinished` (the complete, repaired call: the one to act on), plus
/// `Diagnostic`s. A family with call markup announces a call as soon as its name is known
/// and sends its arguments as they arrive: families writing JSON arguments forward the raw
/// JSON text (Hermes, Llama 3 `<|python_tag|>`, Mistral `name[ARGS]`, Functionary,
/// DeepSeek V3/V3.1, Kimi K2, gpt-oss, and the `{name, arguments}` objects behind a marker:
/// Nemotron, Granite, `<tool_calls>`, `functools`, InternLM, LongCat, Cohere, Apertus);
/// text-valued families send the JSON their values convert to (a text value in pieces as
/// its bytes arrive, other values as each parameter completes; Gemma 4, the Python call
/// lists and Llama 3's built-in `tool.call(…)` per completed argument), so the fragments are the final arguments exactly. A call
/// announced but cut off or malformed never gets `CallFinished` (an error diagnostic says
/// why). Mistral's `[TOOL_CALLS][…]` list (its ids follow the arguments), bare JSON and
/// call syntax announce a call when its markup is complete, with the arguments JSON as one
/// fragment.
pub struct StreamParser {
    engine: Engine<'static>,
    /// Kept for a second look at the reasoning (`ReasoningCalls::TakeIfNoneAfter`).
    reasoning_options: Option<ParseOptions>,
    /// Calls finished so far.
    finished_calls: usize,
    pending: Vec<Diagnostic>,
    /// The reply's start, held until it shows whether it continues the explicit family's
    /// implied opener ([`family::Family::implied_opener`]).
    implied: Option<Implied>,
    /// The reply's start, held until it shows whether it starts inside the reasoning the
    /// chosen family's template opened.
    opened_think: Option<OpenedThink>,
    /// Bytes fed to the engine ahead of the reply (the implied opener): spans are shifted
    /// back by this much.
    shift: usize,
    /// No diagnostic, implied opener's start or opened reasoning's start is held and no span
    /// is shifted ([`StreamParser::plain_now`]): a push goes straight to the engine. One
    /// test a push instead of four (kept in step by `push_into_held`, where they change).
    plain: bool,
    /// The events of the last [`StreamParser::push_events`], made at the first (lent to the
    /// engine for each push).
    records: Option<Box<engine::Records>>,
}

struct Implied {
    decide: ImpliedBy,
    opener: &'static str,
    held: String,
}

/// What decides whether the reply continues an implied opener.
enum ImpliedBy {
    /// The explicitly chosen family ([`family::Family::continues_implied`]).
    Family(&'static dyn family::Family),
    /// Auto mode: a reply that starts inside a harmony-style role header the template
    /// opened (`<|start|>assistant`), ` to=RECIPIENT` then `<|message|>` or `<|channel|>`
    /// (gpt-oss, MuseGlimmer): no prose starts so.
    RoleHeader,
}

/// The generation prompt harmony-style templates end with.
const ROLE_HEADER: &str = "<|start|>assistant";

impl ImpliedBy {
    fn continues(&self, start: &str, is_final: bool) -> Option<bool> {
        match self {
            ImpliedBy::Family(f) => f.continues_implied(start, is_final),
            ImpliedBy::RoleHeader => continues_role_header(start, is_final),
        }
    }
}

/// ` to=RECIPIENT<|message|>` or ` to=RECIPIENT<|channel|>` at the reply's start; `None`
/// while its first bytes (at most a recipient's length) do not decide.
fn continues_role_header(start: &str, is_final: bool) -> Option<bool> {
    const TO: &str = " to=";
    const MAX_RECIPIENT: usize = 256;
    let Some(rest) = start.strip_prefix(TO) else {
        return if TO.starts_with(start) && !is_final {
            None
        } else {
            Some(false)
        };
    };
    let n = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    if n == rest.len() {
        return if n < MAX_RECIPIENT && !is_final {
            None
        } else {
            Some(false)
        };
    }
    if n == 0 {
        return Some(false);
    }
    let after = &rest[n..];
    let heads = ["<|message|>", "<|channel|>"];
    if heads.iter().any(|h| after.starts_with(h)) {
        return Some(true);
    }
    if heads.iter().any(|h| h.starts_with(after)) && !is_final {
        return None;
    }
    Some(false)
}

/// A reply whose chosen family's template opened `<think>`
/// ([`family::WhenChosen::opens_think`]), held until it shows whether it starts inside
/// reasoning: a `</think>` before any call or answer marker says so (everything before it
/// is reasoning); its own `<think>` at the start, a marker first, or the end say not.
struct OpenedThink {
    held: String,
    /// The chosen families' openers and when-chosen strip tokens.
    markers: Vec<&'static str>,
    /// `held` was searched from here on (a marker split by a push starts later).
    searched: usize,
    /// What the engine is rebuilt from when the reply starts inside reasoning.
    options: ParseOptions,
}

impl OpenedThink {
    /// `Some(true)`: the reply starts inside reasoning; `None`: more bytes decide. The
    /// answer is the same for every prefix that decides it, so chunking never changes it.
    fn decide(&mut self, is_final: bool) -> Option<bool> {
        use family::{THINK, find_from};
        let start = self.held.trim_start();
        if start.starts_with(THINK.open) {
            return Some(false);
        }
        if THINK.open.starts_with(start) && !is_final {
            return None;
        }
        let from = self.searched;
        let close = find_from(&self.held, THINK.close, from);
        let marker = self
            .markers
            .iter()
            .filter_map(|m| find_from(&self.held, m, from))
            .min();
        match (close, marker) {
            (Some(c), Some(m)) => Some(c < m),
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (None, None) if is_final => Some(false),
            (None, None) => {
                let longest = self
                    .markers
                    .iter()
                    .map(|m| m.len())
                    .chain([THINK.close.len()])
                    .max()
                    .unwrap_or(0);
                self.searched = self.held.len().saturating_sub(longest.saturating_sub(1));
                None
            }
        }
    }
}

impl StreamParser {
    pub fn new(options: ParseOptions) -> Self {
        let (ctx, unknown) = options.shared_ctx();
        Self::with_ctx(&options, ctx, unknown)
    }

    /// [`StreamParser::new`] with `options.shared_ctx()` already worked out.
    /// The reply's start held until it shows whether it continues an implied opener.
    fn implied(ctx: &Ctx) -> Option<Implied> {
        if ctx.explicit {
            ctx.first.and_then(|family| {
                family.implied_opener().map(|opener| Implied {
                    decide: ImpliedBy::Family(family),
                    opener,
                    held: String::new(),
                })
            })
        } else {
            (!ctx.reasoning_only && !ctx.starts_in_reasoning).then_some(Implied {
                decide: ImpliedBy::RoleHeader,
                opener: ROLE_HEADER,
                held: String::new(),
            })
        }
    }

    /// Whether the reply's start is held until it shows whether it starts inside the
    /// reasoning the chosen family's template opened (`implied`: an implied opener is held).
    fn opens_think(ctx: &Ctx, implied: bool) -> bool {
        ctx.explicit
            && !ctx.starts_in_reasoning
            && !implied
            && ctx.first.is_some_and(|f| f.when_chosen().opens_think)
    }

    fn with_ctx(options: &ParseOptions, ctx: Arc<Ctx>, unknown: Vec<String>) -> Self {
        let first = ctx.first;
        let implied = Self::implied(&ctx);
        let opened_think = Self::opens_think(&ctx, implied.is_some()).then(|| OpenedThink {
            held: String::new(),
            markers: ctx
                .order
                .iter()
                .filter_map(|f| f.family())
                .flat_map(|f| f.openers().iter().chain(f.when_chosen().strip))
                .copied()
                .collect(),
            searched: 0,
            options: options.clone(),
        });
        let reasoning_options = (options.reasoning_calls(&ctx, first)
            == ReasoningCalls::TakeIfNoneAfter)
            .then(|| ParseOptions {
                starts_in_reasoning: false,
                reasoning_calls: Some(ReasoningCalls::Ignore),
                ..options.clone()
            });
        let pending = unknown_format_diags(&unknown, &ctx);
        StreamParser {
            engine: Engine::new(ctx),
            reasoning_options,
            finished_calls: 0,
            pending,
            implied,
            opened_think,
            shift: 0,
            plain: false,
            records: None,
        }
        .with_plain()
    }

    fn with_plain(mut self) -> Self {
        self.plain = self.plain_now();
        self
    }

    /// Whether nothing is held and no span is shifted (what [`StreamParser::plain`] says).
    fn plain_now(&self) -> bool {
        self.pending.is_empty()
            && self.implied.is_none()
            && self.opened_think.is_none()
            && self.shift == 0
    }

    /// Feeds the next piece of the reply; returns the events it completed.
    ///
    /// A thin wrapper over [`StreamParser::push_into`], which a caller streaming many small
    /// pieces should prefer: it appends to a buffer the caller keeps and reuses.
    #[inline]
    pub fn push(&mut self, delta: &str) -> Vec<StreamEvent> {
        // Inside a region whose reader waits (`engine::Engine::append_quiet`): a push of
        // none of the bytes that wake it returns here, in the caller's loop.
        if self.plain {
            match self.engine.append_quiet(delta) {
                Quiet::Done => return Vec::new(),
                Quiet::Read => return self.read_appended(),
                Quiet::No => {}
            }
        }
        self.push_fed(delta)
    }

    /// [`StreamParser::push`] of a push [`engine::Engine::append_quiet`] appended for the
    /// waiting reader to read.
    #[inline(never)]
    fn read_appended(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.engine.read_pushed_into(&mut out);
        self.count_calls(&out);
        out
    }

    /// [`StreamParser::push`] of a push fed the general way.
    #[inline(never)]
    fn push_fed(&mut self, delta: &str) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.feed_into(delta, &mut out);
        out
    }

    /// Feeds the next piece of the reply, appending the events it completed to `out` (the
    /// events already there stay): a caller that drains and reuses one buffer allocates
    /// nothing for a push that completes no event, and nothing for the list of events of
    /// one that does (the events themselves own their text).
    ///
    /// ```
    /// use toolcall_parse::{ParseOptions, StreamParser};
    /// use toolcall_core::StreamEvent;
    ///
    /// let mut parser = StreamParser::new(ParseOptions::default());
    /// let mut events = Vec::new(); // one buffer for the whole reply
    /// let (mut text, mut calls) = (String::new(), Vec::new());
    /// for piece in ["Sure. <tool_", r#"call>{"name":"get_weather","#, r#""arguments":{}}</tool_call>"#] {
    ///     parser.push_into(piece, &mut events);
    ///     for event in events.drain(..) {
    ///         match event {
    ///             StreamEvent::Text { text: t } => text.push_str(&t),
    ///             StreamEvent::CallFinished { call, .. } => calls.push(call.name),
    ///             _ => {}
    ///         }
    ///     }
    /// }
    /// parser.finish_into(&mut events);
    /// assert_eq!((text.as_str(), calls), ("Sure. ", vec!["get_weather".to_owned()]));
    /// ```
    #[inline]
    pub fn push_into(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        // As `push`: a push that wakes no waiting reader returns here.
        if self.plain {
            match self.engine.append_quiet(delta) {
                Quiet::Done => return,
                Quiet::Read => return self.read_appended_into(out),
                Quiet::No => {}
            }
        }
        self.push_into_fed(delta, out);
    }

    /// [`StreamParser::push_into`] of a push [`engine::Engine::append_quiet`] appended for
    /// the waiting reader to read.
    #[inline(never)]
    fn read_appended_into(&mut self, out: &mut Vec<StreamEvent>) {
        let from = out.len();
        self.engine.read_pushed_into(out);
        self.count_calls(out.get(from..).unwrap_or_default());
    }

    /// [`StreamParser::push_into`] of a push fed the general way.
    #[inline(never)]
    fn push_into_fed(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        self.feed_into(delta, out);
    }

    /// Feeds a push the general way, its events appended to `out`: inlined into each of
    /// [`StreamParser::push_fed`] and [`StreamParser::push_into_fed`] (a call of one from
    /// the other, a push of a family whose reader sets no wake, cost ~20 instructions:
    /// `bench_profile "json/small" stream4`).
    #[inline(always)]
    fn feed_into(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        // The common case: the engine appends straight to `out`.
        if self.plain {
            let from = out.len();
            self.engine.push_into(delta, out);
            self.count_calls(out.get(from..).unwrap_or_default());
        } else {
            self.push_into_held(delta, out);
        }
    }

    /// [`StreamParser::push_into`] while diagnostics or an implied opener's start are held.
    #[cold]
    fn push_into_held(&mut self, delta: &str, out: &mut Vec<StreamEvent>) {
        let from = out.len();
        self.drain_pending(out);
        match (self.implied.as_mut(), self.opened_think.as_mut()) {
            // The reply's first bytes already say it does not continue the opener: fed
            // as they are, without holding a copy (most replies, in auto mode).
            (Some(imp), _)
                if imp.held.is_empty() && imp.decide.continues(delta, false) == Some(false) =>
            {
                self.implied = None;
                self.engine.push_into(delta, out);
            }
            (Some(imp), _) => {
                imp.held.push_str(delta);
                if let Some(start) = self.implied_start(false) {
                    self.engine.push_into(&start, out);
                }
            }
            (None, Some(op)) => {
                op.held.push_str(delta);
                if let Some(start) = self.opened_think_start(false) {
                    self.engine.push_into(&start, out);
                }
            }
            (None, None) => self.engine.push_into(delta, out),
        }
        self.count_calls(out.get(from..).unwrap_or_default());
        self.unshift(out.get_mut(from..).unwrap_or_default());
        self.plain = self.plain_now();
    }

    /// Feeds the next piece of the reply; returns the events it completed, borrowed from
    /// buffers this parser keeps and reuses: a push allocates nothing for its text,
    /// reasoning, call names or argument fragments once those buffers have grown to the
    /// reply's largest push (a finished call and a diagnostic are handed out by move, as
    /// the caller keeps them). The events are those [`StreamParser::push_into`] appends,
    /// in the same order ([`Event::into_owned`] gives each as a [`StreamEvent`]); a call or
    /// diagnostic not taken from the iterator is dropped at the next push.
    ///
    /// ```
    /// use toolcall_parse::{ParseOptions, StreamParser};
    /// use toolcall_core::Event;
    ///
    /// let mut parser = StreamParser::new(ParseOptions::default());
    /// let (mut text, mut calls) = (String::new(), Vec::new());
    /// for piece in ["Sure. <tool_", r#"call>{"name":"get_weather","#, r#""arguments":{}}</tool_call>"#] {
    ///     for event in parser.push_events(piece) {
    ///         match event {
    ///             Event::Text { text: t } => text.push_str(t),
    ///             Event::CallFinished { call, .. } => calls.push(call),
    ///             _ => {}
    ///         }
    ///     }
    /// }
    /// for event in parser.finish_events() {
    ///     if let Event::CallFinished { call, .. } = event {
    ///         calls.push(call);
    ///     }
    /// }
    /// assert_eq!(text, "Sure. ");
    /// assert_eq!(calls.len(), 1);
    /// assert_eq!(calls[0].name, "get_weather");
    /// ```
    #[inline]
    pub fn push_events(&mut self, delta: &str) -> Events<'_> {
        if self.plain && self.reasoning_options.is_none() && self.records.is_some() {
            // As `push`: a push that wakes no waiting reader forgets the last push's events
            // and returns here.
            match self.engine.append_quiet(delta) {
                Quiet::Done => {
                    if let Some(r) = self.records.as_deref_mut() {
                        r.clear();
                    }
                }
                Quiet::Read => self.engine.read_pushed_records(&mut self.records),
                Quiet::No => self.engine.push_records(delta, &mut self.records),
            }
            return self.events();
        }
        self.push_events_held(delta)
    }

    /// [`StreamParser::push_events`] at the first push, while diagnostics or a start are
    /// held, or with calls counted.
    #[cold]
    fn push_events_held(&mut self, delta: &str) -> Events<'_> {
        let records = self.records.get_or_insert_default();
        records.clear();
        if self.plain {
            self.engine.push_records(delta, &mut self.records);
            if self.reasoning_options.is_some() {
                self.finished_calls += self.records.as_ref().map_or(0, |r| r.finished_calls());
            }
        } else {
            // Held diagnostics or a held start (the reply's first pushes at most): the
            // owned events, recorded.
            let mut out = Vec::new();
            self.push_into_held(delta, &mut out);
            self.record_owned(out);
        }
        self.events()
    }

    /// Ends the reply as [`StreamParser::finish`] does, returning its last events as
    /// [`StreamParser::push_events`] returns a push's. The parser reads nothing after it
    /// (a later push or finish returns no event).
    pub fn finish_events(&mut self) -> Events<'_> {
        self.records.get_or_insert_default().clear();
        if self.plain {
            self.engine.finish_records(&mut self.records);
            if self.reasoning_options.is_some() {
                self.finished_calls += self.records.as_ref().map_or(0, |r| r.finished_calls());
            }
            let rest = self.calls_from_reasoning();
            self.record_owned(rest);
        } else {
            let mut out = Vec::new();
            self.finish_mut(&mut out);
            self.record_owned(out);
        }
        self.events()
    }

    /// Owned events appended to the recorded ones.
    fn record_owned(&mut self, events: Vec<StreamEvent>) {
        let records = self.records.get_or_insert_default();
        for e in events {
            records.push_owned(e);
        }
    }

    /// The recorded events.
    #[inline]
    fn events(&mut self) -> Events<'_> {
        self.records.get_or_insert_default().events()
    }

    fn count_calls(&mut self, events: &[StreamEvent]) {
        if self.reasoning_options.is_some() {
            self.finished_calls += events
                .iter()
                .filter(|e| matches!(e, StreamEvent::CallFinished { .. }))
                .count();
        }
    }

    /// `ReasoningCalls::TakeIfNoneAfter` at the end of the reply: when it made no call, the
    /// calls written inside its reasoning blocks, as events after the others.
    fn calls_from_reasoning(&mut self) -> Vec<StreamEvent> {
        let Some(options) = self.reasoning_options.take() else {
            return Vec::new();
        };
        if self.finished_calls > 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut index = self.engine.next_call_index();
        for block in &self.engine.reasoning {
            for call in parse(block, &options).calls {
                out.push(StreamEvent::Diagnostic {
                    diagnostic: Diagnostic::info(
                        format!(
                            "call to {:?} taken from the reasoning: the reply made no call after it",
                            call.name
                        ),
                        call.origin.span.clone(),
                    ),
                });
                out.push(StreamEvent::CallStarted {
                    index,
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                });
                out.push(StreamEvent::ArgumentsDelta {
                    index,
                    fragment: call.arguments.to_string(),
                });
                out.push(StreamEvent::CallFinished { index, call });
                index += 1;
            }
        }
        out
    }

    /// Ends the reply as [`ParseOptions::reply_end`] says it ended; returns the last events
    /// (a call cut off by the end is reported).
    pub fn finish(mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        self.finish_mut(&mut out);
        out
    }

    /// Ends the stream, saying how the reply ended (the server's `finish_reason`, read with
    /// [`ReplyEnd::from_finish_reason`]): a call whose closing marker is missing at the end
    /// is a call when the model ended the reply, truncated when it was cut.
    pub fn finish_as(mut self, end: ReplyEnd) -> Vec<StreamEvent> {
        self.engine.reply_end = end;
        let mut out = Vec::new();
        self.finish_mut(&mut out);
        out
    }

    /// [`StreamParser::finish`], appending the last events to `out`.
    pub fn finish_into(mut self, out: &mut Vec<StreamEvent>) {
        self.finish_mut(out);
    }

    fn finish_mut(&mut self, out: &mut Vec<StreamEvent>) {
        let from = out.len();
        self.drain_pending(out);
        if let Some(start) = self.implied_start(true) {
            self.engine.push_into(&start, out);
        }
        if let Some(start) = self.opened_think_start(true) {
            self.engine.push_into(&start, out);
        }
        self.engine.finish_into(out);
        self.count_calls(out.get(from..).unwrap_or_default());
        self.unshift(out.get_mut(from..).unwrap_or_default());
        out.extend(self.calls_from_reasoning());
    }

    /// Diagnostics held from construction (unknown format names), sent with the first events.
    fn drain_pending(&mut self, out: &mut Vec<StreamEvent>) {
        out.extend(
            self.pending
                .drain(..)
                .map(|diagnostic| StreamEvent::Diagnostic { diagnostic }),
        );
    }

    /// Once the held start decides: the text to feed, with the implied opener ahead of it
    /// when the reply continues it.
    fn implied_start(&mut self, is_final: bool) -> Option<String> {
        let imp = self.implied.as_ref()?;
        let continues = imp.decide.continues(&imp.held, is_final)?;
        let imp = self.implied.take()?;
        if !continues {
            return Some(imp.held);
        }
        self.shift = imp.opener.len();
        self.engine.hidden = self.shift;
        Some(format!("{}{}", imp.opener, imp.held))
    }

    /// Once the held start decides whether the reply starts inside the opened reasoning:
    /// the text to feed, to an engine that starts inside it when it does.
    fn opened_think_start(&mut self, is_final: bool) -> Option<String> {
        let inside = self.opened_think.as_mut()?.decide(is_final)?;
        let op = self.opened_think.take()?;
        if inside {
            let (mut ctx, _) = op.options.ctx();
            ctx.starts_in_reasoning = true;
            let (quiet, reply_end) = (self.engine.quiet, self.engine.reply_end);
            self.engine = Engine::new(Arc::new(ctx));
            self.engine.quiet = quiet;
            self.engine.reply_end = reply_end;
        }
        Some(op.held)
    }

    /// Spans count from the reply's first byte, not from the implied opener.
    fn unshift(&self, events: &mut [StreamEvent]) {
        if self.shift == 0 {
            return;
        }
        let back = |r: &mut std::ops::Range<usize>| {
            *r = r.start.saturating_sub(self.shift)..r.end.saturating_sub(self.shift);
        };
        for e in events {
            match e {
                StreamEvent::Diagnostic { diagnostic } => back(&mut diagnostic.span),
                StreamEvent::CallFinished { call, .. } => back(&mut call.origin.span),
                _ => {}
            }
        }
    }
}

/// The events of one [`StreamParser::push_events`] or [`StreamParser::finish_events`], in
/// order, borrowed from the parser until its next push. A call or diagnostic not taken is
/// dropped at the next push (or with the parser).
pub struct Events<'a> {
    list: std::slice::Iter<'a, engine::Record>,
    text: &'a str,
    /// The finished calls not yet handed out, the next one last.
    calls: &'a mut Vec<toolcall_core::ToolCall>,
    /// The diagnostics, as `calls`.
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl<'a> Iterator for Events<'a> {
    type Item = Event<'a>;

    #[inline]
    fn next(&mut self) -> Option<Event<'a>> {
        use engine::Record;
        let text = self.text;
        let at = |range: &std::ops::Range<usize>| text.get(range.clone()).unwrap_or("");
        Some(match self.list.next()? {
            Record::Text(range) => Event::Text { text: at(range) },
            Record::Reasoning(range) => Event::Reasoning { text: at(range) },
            Record::CallStarted {
                index,
                call_id,
                name,
            } => Event::CallStarted {
                index: *index,
                call_id,
                name: at(name),
            },
            Record::ArgumentsDelta { index, fragment } => Event::ArgumentsDelta {
                index: *index,
                fragment: at(fragment),
            },
            // Each record has its call (and diagnostic): pushed together.
            Record::CallFinished { index } => Event::CallFinished {
                index: *index,
                call: self.calls.pop()?,
            },
            Record::Diagnostic => Event::Diagnostic {
                diagnostic: self.diagnostics.pop()?,
            },
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.list.size_hint()
    }
}

impl ExactSizeIterator for Events<'_> {}

impl std::fmt::Debug for Events<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("left", &self.list.len())
            .finish()
    }
}

/// Reads native provider output given as JSON (F-NAT-1): a Chat Completions message or
/// response, Responses output items, Gemini parts or candidates, Anthropic content blocks.
/// Provider ids are kept. The formats tried follow `options.format` (auto: all four).
pub fn parse_native(value: &Value, options: &ParseOptions) -> Parsed {
    let (ctx, unknown) = options.ctx();
    let mut parsed = Parsed {
        diagnostics: unknown_format_diags(&unknown, &ctx),
        ..Parsed::default()
    };
    let natives = ctx.order.iter().copied().filter(|f| f.is_native());
    for f in natives {
        if let Some(o) = families::native::classify(value, &ctx, f, 0..0) {
            parsed.text = o.text;
            parsed.diagnostics.extend(o.diagnostics);
            for d in o.drafts {
                if parsed.calls.len() >= ctx.limits.max_calls {
                    parsed.diagnostics.push(Diagnostic::error(
                        format!(
                            "call to {:?} dropped: more than {} calls",
                            d.name, ctx.limits.max_calls
                        ),
                        0..0,
                    ));
                    continue;
                }
                match build(d, ctx.limits.max_depth, None) {
                    Ok(c) => {
                        parsed.diagnostics.push(Diagnostic::info(
                            format!("found {} call to {:?}", c.origin.format, c.name),
                            0..0,
                        ));
                        parsed.calls.push(c)
                    }
                    Err(e) => parsed
                        .diagnostics
                        .push(Diagnostic::error(format!("call dropped: {e}"), 0..0)),
                }
            }
            return parsed;
        }
    }
    parsed.diagnostics.push(Diagnostic::warning(
        "no native tool-call shape recognised (Chat Completions, Responses, Gemini, Anthropic)",
        0..0,
    ));
    parsed
}
