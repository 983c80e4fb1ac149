//! The model-family trait, the format ids read from the registry, and the reasoning-marker
//! table.
//!
//! A *family* is one way models write tool calls (`hermes`, `qwen3_coder`, `glm`, ...). Each
//! family is one module under `families/` implementing [`Family`], registered with one line
//! in the `registry!` list of `families/mod.rs`. The engine ([`crate::engine`]) keeps what
//! every family shares: one scan of the text for the enabled families' openers, reasoning
//! blocks, fences, limits, events and buffer compaction. A family only says what its
//! markup looks like and how to read one region of it.
//!
//! # How to add a family
//!
//! 1. Create `families/<id>.rs` holding one [`Described`](crate::families::described::Described)
//!    static: the family's tables, with what it does not have taken from `Described::BASE`
//!    (`..Described::BASE`), plus the reader functions that are really its own. One
//!    `impl Family` (in `families/described.rs`) serves every such static (`longcat.rs`,
//!    `seed_oss.rs`, `glm.rs`, `anthropic.rs`). Only a family with an opener kind the
//!    tables do not hold (calls written `name(…)`, line openers, bare non-JSON regions:
//!    `call_syntax.rs`, `key_value.rs`, `pythonic.rs`) is a unit struct implementing
//!    [`Family`] itself. A new [`Family`] method with a default needs a field in
//!    `Described` (its default in `Described::BASE`) and one forwarding line there. The
//!    fields:
//!    - `id` (the exact string in `Origin.format`, `--format` and `toolcall formats`),
//!      `description` and a one-line `example` (shown by `toolcall formats` and used by the
//!      registry tests: the example must parse to at least one call of this family).
//!    - what the family knows besides its reader, all in its module: `model_names` (the
//!      globs [`crate::model_family`] and `--model` read), `template_markers` (what
//!      [`crate::detect_template`] and `toolcall detect` look for), `reasoning` markers,
//!      `write_results` when its chat template gives tool results a syntax other than
//!      Hermes `<tool_response>`; or `generic_because` for a convention many models share
//!      (bare JSON, Python calls, provider shapes), which has none of these.
//!    - `body` ([`Body`](crate::families::described::Body)): its openers and the reader
//!      each gets. A block between an opener and a closer read by the shared
//!      `BlockReader` (`families/tags.rs`) is a `Block` static, data: its `lead` and `body`
//!      rules (`LeadRule`, `BodyRule`: a shared rule such as `LeadRule::Invoke(&TAGS)` or
//!      `BodyRule::Json`, or `Fn(..)` for a reader of its own) with how it streams:
//!      `JsonList`, `Tags` (text-valued parameters, `StreamTags`, whose `value` is a
//!      `ValueRule`), `JsonTags` (JSON arguments in markup), `Live` (the
//!      family's own `BlockStream`) or `Whole`; Python calls are `Calls`, JSON after an
//!      opener `OpenJson`; a reader of its own is `Own` (openers, a reader function and
//!      `declines`); several openers are `Body::each(&OPENERS, &BODIES)` (the build fails
//!      when an opener differs from its body's). `bare` claims bare JSON brackets.
//!    - how its regions start, one or more of these opener kinds, each with a method that
//!      gives a fresh [`RegionReader`] for a region starting there:
//!      - a literal anywhere in the text: `openers` (`"<tool_call>"`) and `reader`. Several
//!        families may share an opener: the engine offers the region to each of them in
//!        priority order and the first that does not answer [`Advance::NotMine`] wins.
//!        The first byte of every opener becomes a byte the text scan stops at, so prefer
//!        openers that start with `<` or `[` (already stop bytes); a letter costs prose
//!        speed. Not looked for inside fences (a quoted marker is a code sample).
//!      - a literal at a line start, any ASCII case: `line_openers` (`"tool_call:"`) and
//!        `line_reader` (`key_value`).
//!      - an identifier followed by `(`: `call_syntax` (whether this parse reads them at
//!        all), `calls_name(name)` (false for names that are no call here) and
//!        `call_start`, the region's first read, which may decide it without a reader; the
//!        region starts at the identifier (`call_syntax`).
//!      - a bare `{`/`[` (no marker): `bare_json` says which brackets; the engine checks that
//!        the bracket can start JSON, the shared bare-JSON reader decodes the balanced value
//!        and offers it to `classify_json` (and a balanced region that is not JSON to
//!        `classify_bare_text`: pythonic lists). `json`, `llama`, `xlam`, native shapes.
//!
//!      Every kind ends up in the same region path of the engine: one [`RegionReader`]
//!      protocol, one set of verdicts, the same limits, events and compaction.
//!    - optional: `when_chosen` markup read only when the family is chosen by `--format` or
//!      a model's name, never in auto mode ([`WhenChosen`]: reasoning markers, tokens to
//!      strip, a reply starting inside the `<think>` its template opened),
//!    - optional, for speed on text that only looks like markup: `declines` (an `Own`
//!      body's; the shared body kinds have their own) answers that a region is not this
//!      family's before a reader is built, and `declined_run` how many of the positions
//!      after a declined one that hold the same opener are declined too (Functionary
//!      v3.2's `>>>>>>`), so a flood of the opener is passed at once. Both must say only
//!      what the reader would (`declining_families_readers_say_not_mine` and
//!      `declined_runs_are_declined_positions` check every family).
//!    - optional: `strip` tokens (end-of-turn tokens removed from the text),
//!      `instructions` + `example_call` for text mode (the system prompt rendered by
//!      [`crate::render_prompt`]).
//!    - its decoding constraint: `constraint` (the trait's `constraint_shape`), the call
//!      markup as [`crate::shape::Shape`] data, from which `toolcall-constrain` writes the
//!      GBNF, Lark, structural tag and JSON Schema (the grammar writers are shared there;
//!      `None` for Python-like and free-form calls).
//!      `toolcall-constrain`'s llguidance tests compile it for every family that declares
//!      one and run the family's fixtures through it.
//! 2. Add one line to the `registry!` list in `families/mod.rs`, at the place of the
//!    family's auto-mode priority (earlier = tried first for a shared opener).
//! 3. Fixtures in `tests/fixtures/<id>/` (see `tests/families.rs`, which checks that every
//!    registered family has fixtures, model-name globs and template markers, or says in
//!    `generic_because` why it has none of them).
//! 4. Text mode: a family with a text syntax gives `instructions` + `example_call`
//!    (writers shared in `families/text_example.rs`); `tests/prompt_examples.rs` fails for
//!    any family that has neither and is not in its listed exemptions, and parses every
//!    rendered example back to the same call.
//!
//! Nothing else: `FormatId`, `FormatSelection`, `toolcall formats`, the model-name table,
//! chat-template detection, the prompt renderer, the engine's opener tables, the fixture
//! tests and the bench corpus all read the registry.
//!
//! # Writing a region reader
//!
//! [`RegionReader::advance`] is called with the region so far: the bytes from the opener's
//! first byte to the end of what has arrived, growing by whatever each push brought, and
//! `is_final` once the input has ended. It answers:
//! - [`Advance::NeedMore`]: undecided; called again with a longer region.
//! - [`Advance::Done`]: `region[..end]` is this family's markup; the [`Outcome`] holds its
//!   calls (as [`Draft`]s), any visible text that replaces it, and diagnostics.
//! - [`Advance::NotMine`]: not this family (another family, or prose mentioning the opener).
//!   Must be decided from a bounded prefix (e.g. what follows the opener), never later.
//! - [`Advance::Broken`]: this family's markup, but malformed or cut: `region[..end]`
//!   stays in the reply as text, with an error diagnostic saying `why`, and is not run.
//!   [`Advance::Malformed`] is one whose message (a failed JSON decode) is not yet written.
//! - [`Advance::Dropped`]: malformed or cut markup removed from the reply with an error
//!   (the markerless formats' truncated calls).
//! - [`Advance::Text`]: decided late that the region is text ([`Plain`]: how much of it,
//!   findings, and how far the reader looked, which the engine charges to its rescan
//!   budget when the scan resumes before that point).
//!
//! Rules every reader keeps:
//! - Each call of a block stands alone. A block the end of the output cut inside a call
//!   returns the calls closed before it and reports the cut one as truncated, its text kept
//!   (a `Draft::broken` call, so that a call announced while streaming never finishes),
//!   however the reply ended; with every call whole and only the block's closing marker
//!   missing, [`ReadCx::closes_at_end`] decides. `BlockReader` does this for a block whose
//!   streaming tags name the marker closing one call; `finish_standalone` for readers of
//!   their own; `CallListReader` and `cut_list_calls` for lists.
//! - The answer depends only on the bytes and on `is_final`, never on how the input was
//!   chunked: never answer `Done`/`NotMine`/`Broken` from a prefix when more bytes could
//!   change the answer (R-1). Bound every wait (a closing tag that never comes is
//!   `is_final`'s business; an opener followed by 4 KB of prose is `NotMine`).
//! - Linear time: remember how far the region was scanned (`ScanFrom`, or the shared
//!   [`Scanner`], which is resumable) and only look at new bytes on the next call.
//! - Values that are text in the markup (XML and tag styles) go through
//!   [`convert_text_value`]: JSON types by the tool's schema, strings stay exactly strings;
//!   a value the schema does not type follows the family's `untyped` rule ([`Untyped`]: its
//!   reference parser's, declared in its module), which a stream decides from the value's
//!   first bytes ([`untyped_is_text`]).
//! - Announce calls while streaming through [`ReadCx::start_call`] and
//!   [`ReadCx::arguments`]: once when the name is known, then JSON fragments of the
//!   arguments. The engine ties them to the `Done` outcome's drafts in order (same name).
//!
//! Shared helpers: [`Scanner`] (balanced JSON), [`parse_lenient`] (decode + repair),
//! [`json_calls`] (a decoded `{name, arguments}` object or list of them),
//! [`convert_text_value`], [`find_from`] (resumable tag search).

use std::ops::Range;

use serde_json::{Map, Value};
use toolcall_core::{Repair, ToolSpec};
use toolcall_wire::json_schema::resolve_local_ref;

#[allow(unused_imports)] // re-exported for family modules
pub(crate) use crate::builder::{Ctx, Draft, Outcome, closing_marker_repair};
pub(crate) use crate::families::json::classify as json_calls;
pub(crate) use crate::repair::parse_lenient;
pub(crate) use crate::results::ToolResultText;
pub(crate) use crate::scanner::{Scan, Scanner};

/// A format id: one registered family (`Origin.format`, `--format`, prompt rendering).
/// Built only from the registry, so every id names a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FormatId(&'static str);

/// Families by a key of their id, sorted ([`FormatId::family`]).
type FamilyIndex = Vec<(usize, &'static str, &'static dyn Family)>;

impl FormatId {
    /// The id of a family known to the engine itself (checked by a registry test).
    pub(crate) const fn builtin(id: &'static str) -> Self {
        FormatId(id)
    }

    /// The registered family called `name`.
    pub fn from_name(name: &str) -> Option<FormatId> {
        // The registry's index by id (see `family`): every parse resolves its formats by
        // name, where a walk of the registry cost a virtual call per family.
        let (_, by_text) = Self::index();
        let i = by_text.binary_search_by_key(&name, |&(_, id, _)| id).ok()?;
        by_text.get(i).map(|&(_, _, f)| FormatId(f.id()))
    }

    /// Every registered family in auto-mode priority order.
    pub fn all() -> impl Iterator<Item = FormatId> {
        crate::families::all().iter().map(|f| FormatId(f.id()))
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    pub(crate) fn family(self) -> Option<&'static dyn Family> {
        // Looked up per opener, region and call, where a walk of the registry cost a
        // virtual call and a comparison per family: a binary search of the ids' addresses
        // (an id is normally the very `&'static str` its family returns), then of their
        // text for an id spelled elsewhere.
        let (by_addr, by_text) = Self::index();
        let key = (self.0.as_ptr() as usize, self.0.len());
        if let Ok(i) = by_addr.binary_search_by_key(&key, |&(addr, id, _)| (addr, id.len())) {
            return by_addr.get(i).map(|&(_, _, f)| f);
        }
        let i = by_text
            .binary_search_by_key(&self.0, |&(_, id, _)| id)
            .ok()?;
        by_text.get(i).map(|&(_, _, f)| f)
    }

    /// The registry indexed by the address of each id and by its text, both sorted.
    fn index() -> &'static (FamilyIndex, FamilyIndex) {
        static BY_ID: std::sync::OnceLock<(FamilyIndex, FamilyIndex)> = std::sync::OnceLock::new();
        BY_ID.get_or_init(|| {
            let mut by_text: FamilyIndex = crate::families::all()
                .iter()
                .map(|f| (f.id().as_ptr() as usize, f.id(), *f))
                .collect();
            // Stable: of two families with one id (a registry test forbids it) the first.
            by_text.sort_by_key(|&(_, id, _)| id);
            by_text.dedup_by_key(|&mut (_, id, _)| id);
            let mut by_addr = by_text.clone();
            by_addr.sort_by_key(|&(addr, id, _)| (addr, id.len()));
            (by_addr, by_text)
        })
    }

    /// The family's call markup as data, for decoding constraints (`toolcall-constrain`);
    /// `None`: no constraint is written for it (Python-like or free-form calls, provider
    /// shapes, and tag families whose markup the shape data cannot express yet, such as
    /// Hunyuan's per-checkpoint suffixes), callers keep parse-and-repair alone.
    pub fn constraint_shape(self) -> Option<&'static crate::shape::Shape> {
        self.family().and_then(|f| f.constraint_shape())
    }

    /// How the family reads a text value its tool's schema does not type ([`Untyped`]).
    pub fn untyped(self) -> Untyped {
        self.family().map_or(Untyped::Text, |f| f.untyped())
    }

    /// How the family holds a call's parameters to its tool's schema, when its reference
    /// reader does ([`SchemaRules`](crate::families::schema_rules::SchemaRules)).
    pub(crate) fn schema_rules(
        self,
    ) -> Option<&'static crate::families::schema_rules::SchemaRules> {
        self.family().and_then(|f| f.schema_rules())
    }

    /// Native provider shapes (arguments as a JSON string are normal there, not a repair).
    pub fn is_native(self) -> bool {
        self.family().is_some_and(|f| f.native())
    }
}

impl std::fmt::Display for FormatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// A reasoning block: reported apart as `Reasoning`, never parsed for calls (R-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasoningMarker {
    pub open: &'static str,
    pub close: &'static str,
}

/// A reasoning block whose markers carry a per-checkpoint suffix (Hunyuan Hy4's
/// `<think:SUFFIX>` … `</think:SUFFIX>`): `open` and `close` are the markers' common
/// starts, each followed by the suffix and `>`. Any suffix is read ([`read_suffix`]); the
/// block ends at the close with the opener's suffix, and a block the chat template opened
/// (the reply never shows its suffix) at the close with any suffix. A close without its
/// opener is removed, as `</think>` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SuffixedMarker {
    pub open: &'static str,
    pub close: &'static str,
}

/// The longest marker suffix read: a token tail (`6124c78e`, `opensource`), never prose.
pub(crate) const MAX_MARKER_SUFFIX: usize = 64;

/// What the bytes after a suffixed marker's common start say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suffix {
    /// More bytes decide (the input has not ended).
    Wait,
    /// Not a marker: no suffix, a blank, `<` or a suffix too long before the `>`.
    No,
    /// A suffix of this many bytes, then `>`.
    Len(usize),
}

/// Reads a marker suffix at the start of `bytes`: one to [`MAX_MARKER_SUFFIX`] bytes other
/// than blanks, `<` and `>`, ended by `>` (vLLM's Hy4 readers take `[^\s>]+`).
pub(crate) fn read_suffix(bytes: &[u8], is_final: bool) -> Suffix {
    let window = bytes.get(..=MAX_MARKER_SUFFIX).unwrap_or(bytes);
    match window
        .iter()
        .position(|&b| b == b'>' || b == b'<' || b.is_ascii_whitespace())
    {
        Some(0) => Suffix::No,
        Some(n) if window[n] == b'>' => Suffix::Len(n),
        Some(_) => Suffix::No,
        None if is_final || window.len() > MAX_MARKER_SUFFIX => Suffix::No,
        None => Suffix::Wait,
    }
}

/// `<think>…</think>`: every family may see it (Qwen3, DeepSeek-R1, GLM, MiniMax, ...).
pub const THINK: ReasoningMarker = ReasoningMarker {
    open: "<think>",
    close: "</think>",
};

/// Markup a family's models write that is read only when the family is chosen (by
/// `--format` or a model's name), never in auto mode, where the same text is prose or
/// another family's ([`Family::when_chosen`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WhenChosen {
    /// Reasoning blocks (Granite's `Here is my thought process:` … `Here is my response:`).
    pub reasoning: &'static [ReasoningMarker],
    /// Tokens removed from the visible text (ERNIE 4.5's `<response>` wrapper).
    pub strip: &'static [&'static str],
    /// The chat template opens `<think>` in its generation prompt, so the reply starts
    /// inside reasoning and only closes it (MiniMax M2, ERNIE 4.5 Thinking). Read from the
    /// reply itself: its start is held until it shows a `</think>` (everything before it is
    /// reasoning), its own `<think>`, a call or one of `strip`'s tokens first (no opened
    /// reasoning), or ends.
    pub opens_think: bool,
}

impl WhenChosen {
    pub(crate) const NONE: WhenChosen = WhenChosen {
        reasoning: &[],
        strip: &[],
        opens_think: false,
    };
}

/// How to tell a model to write calls in this family's syntax (system prompt, text mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instructions {
    /// One or two sentences: how to write a call.
    pub how: &'static str,
    /// One rule line (starting `- `, ending with a newline): several calls per reply.
    pub several: &'static str,
}

/// Which bare brackets in prose a family may claim (its `classify_json` is offered them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BareJson {
    pub objects: bool,
    pub arrays: bool,
}

/// The most positions one [`Family::declined_run`] answer covers: a run longer than this
/// is passed over in several answers, and an answer the engine cannot use (another opener
/// inside the run) costs at most this many bytes of counting.
pub(crate) const MAX_DECLINED_RUN: usize = 256;

/// How a region at one of a family's openers is opened, resolved once per opener table:
/// the decline test every false start of a flood asks is then a plain function call, not a
/// trait call through the family's body.
#[derive(Clone, Copy)]
pub(crate) enum Opening {
    /// [`Family::open_region`] decides (a family that reads its lead once, for declining
    /// and for its reader).
    Region,
    /// [`Family::open_region`] is exactly `declines(opener, region, is_final)` (`true`:
    /// declined), then [`Family::reader`]: asked here directly, with this opener index.
    Declines {
        declines: fn(usize, &str, bool) -> bool,
        opener: usize,
    },
}

/// A family shows as its id (in [`crate::builder::Ctx`]'s `Debug`).
impl std::fmt::Debug for dyn Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// [`Family::removes`]: the region's bytes removed without a reader, if so.
pub(crate) type Removes = fn(usize, &str, bool) -> Option<usize>;

/// One model family: see the module doc for how to add one.
pub(crate) trait Family: Sync + Send {
    fn id(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// A one-line example that parses to a call of this family.
    fn example(&self) -> &'static str;
    /// Literal strings that open a region of this family.
    fn openers(&self) -> &'static [&'static str] {
        &[]
    }
    /// A fresh reader for a region that starts with `self.openers()[opener]`.
    fn reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        None
    }
    /// Whether the reader [`Family::reader`] builds for opener `opener` answers
    /// [`Advance::NotMine`] at once to `region` (which starts with the opener): asked
    /// before the reader is built, so that an opener followed by what the family never
    /// reads (a flood of `>>>` or `<tool_call>`) costs no reader, region and decline.
    /// `true` only where that first `advance(region, is_final)` is `NotMine`; `false` when
    /// unsure (the default: the reader decides).
    fn declines(&self, _opener: usize, _region: &str, _is_final: bool) -> bool {
        false
    }
    /// Asked once every family of an opener declined a region at once (`region` starts with
    /// opener `opener`, which this family declined): how many of the positions right after
    /// the region's start (offsets 1, 2, …) also start with this opener and are declined by
    /// this family at once too, whatever more input comes: `0` when none is known (the
    /// default). The engine passes over such positions as ordinary bytes after checking that
    /// the opener is the longest one there, so that a run like `>>>>>>` declines once, not at
    /// every byte. At most [`MAX_DECLINED_RUN`] (each ask bounded).
    fn declined_run(&self, _opener: usize, _region: &str) -> usize {
        0
    }
    /// Whether [`Family::declined_run`] may answer more than `0` (`false`: it never does,
    /// and the engine does not ask it).
    fn has_declined_run(&self) -> bool {
        false
    }
    /// A check `removes(opener, region, is_final)` answering `Some(n)` where this family's
    /// reader of opener `opener`, made now and asked once with `region` and `is_final`,
    /// would answer that the region's first `n` bytes are markup removed with nothing in
    /// its place ([`crate::family::Advance::Done`] with an empty outcome): the engine then
    /// removes them without making the reader (a flood of a lone `<|message_sep|>` made,
    /// boxed and dropped a reader at each). Asked only where the family does not decline
    /// the region, `None` from it: ask the reader. Resolved once when the opener table is
    /// built (`None`, the default: no such check; an opener without one pays a load).
    fn removes(&self) -> Option<Removes> {
        None
    }
    /// Whether this family declines at once every region of opener `opener` that the same
    /// opener follows directly (`<tool_call><tool_call>`), whatever follows that: asked
    /// once every family of an opener declined a region, so that the engine passes the
    /// opener repeated back to back in one step (each repeat followed by another, where the
    /// opener is the longest one, is declined). `false` (the default) when unsure.
    fn declines_repeated(&self, _opener: usize) -> bool {
        false
    }
    /// [`Family::declines`], then (`Some`) [`Family::reader`] when the region is not
    /// declined (`Some(None)`: the family has no reader for it). A family that reads its
    /// lead to decline it may hand that reading to the reader, which then does not read
    /// the lead again where nothing is announced (one-shot).
    fn open_region(
        &self,
        opener: usize,
        region: &str,
        is_final: bool,
        ctx: &Ctx,
    ) -> Option<Option<Box<dyn RegionReader>>> {
        (!self.declines(opener, region, is_final)).then(|| self.reader(opener, ctx))
    }
    /// How the engine opens a region at opener `opener`, resolved once when the opener
    /// table is built ([`Opening`]); the default asks [`Family::open_region`].
    fn opening(&self, _opener: usize) -> Opening {
        Opening::Region
    }
    /// Reasoning blocks this family's models write (besides `<think>`); also the markers
    /// [`crate::detect_template`] reports when a chat template holds them.
    fn reasoning(&self) -> &'static [ReasoningMarker] {
        &[]
    }
    /// Openers of this family's calls that end a reasoning block left open (Kimi K2
    /// Thinking starts its tool section inside a `<think>` it never closes; vLLM's Kimi K2
    /// reasoning reader ends the reasoning there): the block ends before the opener,
    /// which is then read as markup.
    fn ends_reasoning(&self) -> &'static [&'static str] {
        &[]
    }
    /// Reasoning blocks whose markers carry a per-checkpoint suffix ([`SuffixedMarker`]).
    fn suffixed_reasoning(&self) -> &'static [SuffixedMarker] {
        &[]
    }
    /// Tag starts whose per-checkpoint suffix follows them in a chat template
    /// (`<tool_calls:` of `<tool_calls:opensource>`): [`crate::detect_template`] reports
    /// the suffix it finds there (or a tokenizer config's `token_suffix`). The reader
    /// takes any suffix; the report names the checkpoint's.
    fn suffixed_tags(&self) -> &'static [&'static str] {
        &[]
    }
    /// Model-name globs whose models write this family ([`crate::model_family`]: lowercase,
    /// `*` any run, `?` one character; the longest match over all families wins).
    fn model_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// Markers a chat template holds when it renders this family's calls, all of them
    /// ([`crate::detect_template`]: the match whose markers are longest in total wins).
    fn template_markers(&self) -> &'static [&'static str] {
        &[]
    }
    /// What becomes of calls its models write inside reasoning when the caller does not
    /// say ([`crate::ReasoningCalls`]): drafts, unless the family's models are known to
    /// write their real call there.
    fn reasoning_calls(&self) -> crate::ReasoningCalls {
        crate::ReasoningCalls::Ignore
    }
    /// Why this family has no model names, template markers or fixture directory of its
    /// own (a convention many models share, a provider shape, an opt-in rule); `None`
    /// for a model family, which has all three (checked by the registry tests).
    fn generic_because(&self) -> Option<&'static str> {
        None
    }
    /// Its call markup as data ([`crate::shape`]), from which `toolcall-constrain` writes
    /// the decoding constraint; `None` where no grammar can hold its calls.
    fn constraint_shape(&self) -> Option<&'static crate::shape::Shape> {
        None
    }
    /// Markup read only when this family is chosen ([`WhenChosen`]).
    fn when_chosen(&self) -> &'static WhenChosen {
        &WhenChosen::NONE
    }
    /// How a text value the tool's schema does not type is read (its reference parser's
    /// rule, [`Untyped`]); text-valued tag families only.
    fn untyped(&self) -> Untyped {
        Untyped::Text
    }
    /// How a call's parameters are held to the tool's schema beyond their types (its
    /// reference parser's rules, declared in its module); `invoke`/`parameter` readers only.
    fn schema_rules(&self) -> Option<&'static crate::families::schema_rules::SchemaRules> {
        None
    }
    /// Control tokens removed from the visible text wherever they appear.
    fn strip(&self) -> &'static [&'static str] {
        &[]
    }
    /// Bare JSON brackets this family claims through [`Family::classify_json`].
    fn bare_json(&self) -> BareJson {
        BareJson::default()
    }
    /// The top-level keys without which [`Family::classify_json`] claims no value: a
    /// family that reads bare JSON declares them beside its classifier (values that meet
    /// no family's are read as text without a decode).
    fn json_needs(&self) -> crate::families::bare_json::JsonNeeds {
        crate::families::bare_json::JsonNeeds::NONE
    }
    /// A decoded bare JSON value (in prose or a fence): this family's calls, or `None`.
    /// On `None`, `v` must be left untouched.
    fn classify_json(&self, _v: &mut Value, _cx: &JsonCx<'_>) -> Option<Outcome> {
        None
    }
    /// [`Family::classify_json`] of a value decoded as call objects, where the family
    /// answers without the `Value`: `Some` of what `classify_json` gives for
    /// `doc.into_value()` (on `None` inside, `doc` is untouched); `None`: ask
    /// `classify_json` with the `Value`.
    fn classify_calls(
        &self,
        _doc: &mut crate::families::json::CallsDoc,
        _cx: &JsonCx<'_>,
    ) -> Option<Option<Outcome>> {
        None
    }
    /// The brackets whose balanced regions [`Family::classify_bare_text`] may take: it
    /// answers `None` for any other (then it is not asked).
    fn bare_text(&self) -> BareJson {
        BareJson::default()
    }
    /// A balanced bare bracket region (`[...]`/`{...}`) that is not JSON: this family's
    /// calls (`Ok`), its markup but unusable (`Err(why)`: dropped with an error), or `None`.
    fn classify_bare_text(
        &self,
        _region: &str,
        _cx: &JsonCx<'_>,
    ) -> Option<Result<Outcome, String>> {
        None
    }
    /// Literals that open a region only at the start of a line (leading blanks not
    /// included), matched ignoring ASCII case: `TOOL_CALL:`.
    fn line_openers(&self) -> &'static [&'static str] {
        &[]
    }
    /// A fresh reader for a region that starts with `self.line_openers()[opener]`.
    fn line_reader(&self, _opener: usize, _ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        None
    }
    /// The region of line opener `opener` decided before a reader is built: `Some(plain)`
    /// exactly when [`Family::line_reader`]'s reader would answer its first `advance` on
    /// these bytes with `Advance::Text(plain)` (a flood of such lines then builds no
    /// reader), or with `Advance::NotMine` (then a `plain` with no note or label: the
    /// region's first byte is text, and `plain.end` bytes are where the text scan reads
    /// them all as ordinary bytes, [`ReadCx::ordinary`]; the engine takes it only where no
    /// other family reads the opener); asked of the opener's first family only.
    fn line_text(
        &self,
        _opener: usize,
        _region: &str,
        _is_final: bool,
        _cx: &mut ReadCx<'_>,
    ) -> Option<Plain> {
        None
    }
    /// Whether [`Family::line_text`] declines the line at the start of `region` (no note,
    /// no label: its first byte is text) whatever the parse's state, decided on the line's
    /// bytes alone: a walk over text reads on after its first byte, as the scan does.
    fn line_declines(&self, _opener: usize, _region: &str, _is_final: bool) -> bool {
        false
    }
    /// After [`Family::line_text`] decided the line at the start of `region` as text up to
    /// its newline at `line_end` (with a note), `region` being `reps + 1` copies of a unit
    /// of `period` bytes that starts with that line and its newline, every byte the text
    /// scan reads around copies `1..=reps` among them:
    /// how many `m` of those copies `line_text` would decide the same way in turn, each with
    /// the note it gave this one (the span aside). `0`: not known, each is read.
    fn text_line_repeats(
        &self,
        _opener: usize,
        _region: &str,
        _line_end: usize,
        _period: usize,
        _reps: usize,
        _cx: &mut ReadCx<'_>,
    ) -> usize {
        0
    }
    /// Whether this parse reads calls written `name(arguments)` anywhere in the text for
    /// this family (prose is full of `word(`: usually only with a registry).
    fn call_syntax(&self, _ctx: &Ctx) -> bool {
        false
    }
    /// Whether the identifier `name` before a `(` starts a call region of this family here
    /// (e.g. a registered tool). Only asked when [`Family::call_syntax`] said yes. A name
    /// that a parse's registry does not hold is taken by none: the engine may pass it
    /// unasked when the registry's filter rules it out ([`NameMemo::filtered_out`]).
    fn calls_name(&self, _name: &str, _cx: &mut ReadCx<'_>) -> bool {
        false
    }
    /// The region of a `name(` this family calls ([`Family::calls_name`]): `region` starts
    /// with the name, whose `(` is at region offset `open`. Its first read, before a reader
    /// is built: `Err` decides the region as text at once ([`Advance::Text`], as a reader's
    /// first `advance` would: the fate of most `name(` in a flood, which then costs no boxed
    /// reader), `Ok` the reader that reads it (from its first `advance` on).
    fn call_start(
        &self,
        _region: &str,
        _open: usize,
        _cx: &mut ReadCx<'_>,
    ) -> Result<Box<dyn RegionReader>, Plain> {
        Err(Plain::default())
    }
    /// After [`Family::call_start`] decided the `name(` at the start of `region` as text
    /// (its `(` at region offset `open`), with more `(` after it at the offsets `parens`
    /// from it (`parens[0]` is 0), each after a name this family reads as a call, at
    /// region offsets `names` (the openers of a unit that repeats: `name(` with anything
    /// but a `(` between, or a few names in turn): whether `call_start` decides each of
    /// them as text whatever comes before it, as `decided[k]` says, having read only
    /// `region[open..open + reach[k]]` (its `(` at `parens[k]`). A decision is a fact
    /// about the bytes read (R-1): an opener of the same name whose next
    /// `reach[k] - parens[k]` bytes are those is decided the same way. `false` (nothing
    /// known): each is read.
    #[allow(clippy::too_many_arguments)]
    fn failed_call_scans(
        &self,
        _region: &str,
        _open: usize,
        _parens: &[usize],
        _names: &[Range<usize>],
        _decided: &mut [UnitCall],
        _reach: &mut [usize],
        _cx: &mut ReadCx<'_>,
    ) -> bool {
        false
    }
    /// The note [`Family::call_start`] gives a `name(` decided as text whose scan failed
    /// with `error`, the name at `slice` of its region (its level and message pieces; `None`:
    /// not known without reading it).
    fn failed_call_note(
        &self,
        _slice: std::ops::Range<usize>,
        _error: crate::scanner::ScanError,
    ) -> Option<(toolcall_core::Level, Pieces)> {
        None
    }
    /// A native provider shape (read from JSON given whole, never from text markers).
    fn native(&self) -> bool {
        false
    }
    /// Text-mode instructions; `None`: this family is not offered as a text format.
    fn instructions(&self) -> Option<Instructions> {
        None
    }
    /// One call written in this family's syntax (the prompt's worked example).
    fn example_call(&self, _name: &str, _args: &Map<String, Value>) -> Option<String> {
        None
    }
    /// Tool results as this family's models read them in text mode: the text of one user
    /// message answering a round of calls. Default: Hermes `<tool_response>` blocks; a
    /// family whose chat template renders results otherwise writes its own (see
    /// [`crate::results`] for the escaping every writer keeps).
    fn write_results(&self, results: &[ToolResultText<'_>]) -> String {
        crate::results::tool_response_blocks(results)
    }
    /// Other families this family's models also write, tried after it when a model's name
    /// picks this family ([`crate::FormatSelection::for_model`]): e.g. Llama 4 writes its
    /// pythonic list with or without `<|python_start|>`.
    fn also_written(&self) -> &'static [&'static str] {
        &[]
    }
    /// An opener the family's chat template writes at the end of its generation prompt
    /// (Functionary v3.2's `>>>`), so a reply starts right after it. Read only when this
    /// family is chosen explicitly (`--format`, a model's name): in auto mode a reply
    /// starting `all\n` is prose.
    fn implied_opener(&self) -> Option<&'static str> {
        None
    }
    /// Whether the reply starting `start` continues [`Family::implied_opener`]; `None`:
    /// more bytes decide (at most a bounded prefix; always decided when `is_final`).
    fn continues_implied(&self, _start: &str, _is_final: bool) -> Option<bool> {
        Some(false)
    }
}

/// Where a bare JSON value was found.
pub(crate) struct JsonCx<'a> {
    pub ctx: &'a Ctx,
    pub span: Range<usize>,
    /// Nothing visible precedes it: a whole-reply JSON answer.
    pub at_start: bool,
}

/// What a reader decided about the region so far.
#[derive(Debug)]
pub(crate) enum Advance {
    NeedMore,
    Done {
        end: usize,
        outcome: Outcome,
    },
    /// Not this family's: the next reader is asked; when none is left the opener's first
    /// byte is read as ordinary text.
    NotMine,
    /// This family's markup, malformed or cut: `region[..end]` stays as text, with an error.
    Broken {
        end: usize,
        why: String,
    },
    /// [`Advance::Broken`] whose message is `malformed JSON: ` and the decode's failure
    /// ([`MALFORMED`]), not yet written: the engine writes it only when the diagnostic cap
    /// reports it (a flood of broken blocks, `Action:\n```json{"` repeated, wrote and freed
    /// a message a block, most of them dropped by the cap).
    Malformed {
        end: usize,
        failure: crate::repair::Failure,
    },
    /// This family's markup, malformed or cut: `region[..end]` is removed from the reply,
    /// with an error, and not run (bare JSON and call syntax that look like a call).
    Dropped {
        end: usize,
        why: String,
    },
    /// Not markup after all (decided late, e.g. a bare bracket region that is not a call).
    Text(Plain),
}

/// The head of an [`Advance::Malformed`] block's message, before its failure.
pub(crate) const MALFORMED: &str = "malformed JSON: ";

/// A block body reader's error: a written message, or a failed decode
/// ([`Advance::Malformed`]) whose message is written only when it is reported.
#[derive(Debug)]
pub(crate) enum BodyError {
    Text(String),
    Malformed(crate::repair::Failure),
}

impl BodyError {
    /// The message, written.
    pub(crate) fn into_message(self) -> String {
        match self {
            BodyError::Text(m) => m,
            BodyError::Malformed(f) => f.message_after(MALFORMED),
        }
    }

    /// A broken block `region[..end]` with this error.
    pub(crate) fn broken(self, end: usize) -> Advance {
        match self {
            BodyError::Text(why) => Advance::Broken { end, why },
            BodyError::Malformed(failure) => Advance::Malformed { end, failure },
        }
    }
}

/// A region found to be text: see [`Advance::Text`].
#[derive(Debug, Default)]
pub(crate) struct Plain {
    /// `region[..end]` is text and the scan resumes after it; `0`: only the first byte is
    /// decided, and it is read as an ordinary byte (as after [`Advance::NotMine`]).
    pub end: usize,
    /// How far the reader looked (region offset): the bytes between `end` and it are
    /// scanned again, which the engine bounds in total (R-7, linear time).
    pub scanned: usize,
    /// A finding, reported before the text (at most one: held here, not in a `Vec`
    /// allocated for it per region, which a flood of `name(` paid once an opener).
    pub diagnostic: Option<Note>,
    /// A label that opt-in fallback rules may match (a JSON value's `type`/`name`); boxed
    /// (seldom given) to keep [`Advance`], which every reader step returns, small.
    pub label: Option<Box<str>>,
}

/// A diagnostic a reader hands to the engine ([`Plain::diagnostic`]) whose message may be
/// given in pieces ([`Message::Pieces`]): the engine's per-kind cap decides on it without
/// writing the message, which is written only when the note is reported. A flood of
/// `name(` or `TOOL_CALL: x` lines makes one note an opener, of which the cap reports
/// the first few of a kind; each of the rest was written, compared and freed.
#[derive(Debug)]
pub(crate) struct Note {
    pub level: toolcall_core::Level,
    pub message: Message,
    /// Absolute byte span, as a [`toolcall_core::Diagnostic`]'s.
    pub span: Range<usize>,
}

/// How [`Family::failed_call_scans`] found one opener of a unit decided as text.
#[derive(Debug, Clone)]
pub(crate) enum UnitCall {
    /// Its scan failed with this error: the note [`Family::failed_call_note`] gives.
    Failed(crate::scanner::ScanError),
    /// Its call closed (reading no other `(`) and its arguments do not parse: the whole
    /// call is text, with this note (its level and message).
    Closed(toolcall_core::Level, String),
}

/// A [`Note`]'s message: written, or in pieces.
#[derive(Debug)]
pub(crate) enum Message {
    Text(String),
    /// `{head}{region[slice]}{tail}{error}`: static text around bytes of the region the
    /// note's reader read (by region offsets, written as they are), then a failed bracket
    /// scan's error as [`crate::scanner::ScanError::push_to`] writes it, if any. (One
    /// shape, not a list of pieces: it keeps [`Advance`], which every reader step
    /// returns, within the size a list made it outgrow.)
    Pieces(Pieces),
    /// The note [`NameMemo`] keeps in this slot for a closed call ([`NameMemo::kept_text`]),
    /// read there, not copied, and written only when the cap reports it: a flood whose closed calls repeat
    /// a few texts in turn (`get_weather({w}) `) copied the kept note at each copy and
    /// worked out its cap slot again (~450 instructions a copy of ~1,700).
    Kept(usize),
}

/// See [`Message::Pieces`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pieces {
    pub head: &'static str,
    pub slice: Range<usize>,
    pub tail: &'static str,
    pub error: Option<crate::scanner::ScanError>,
}

impl Note {
    /// A note whose message is written.
    pub(crate) fn text(level: toolcall_core::Level, message: String, span: Range<usize>) -> Note {
        Note {
            level,
            message: Message::Text(message),
            span,
        }
    }
}

impl From<toolcall_core::Diagnostic> for Note {
    fn from(d: toolcall_core::Diagnostic) -> Note {
        Note::text(d.level, d.message, d.span)
    }
}

impl Pieces {
    /// Appends the message to `out`; `region`: the text `slice` indexes.
    pub(crate) fn write(&self, region: &str, out: &mut String) {
        out.push_str(self.head);
        out.push_str(region.get(self.slice.clone()).unwrap_or(""));
        out.push_str(self.tail);
        if let Some(e) = &self.error {
            e.push_to(out);
        }
    }
}

/// A call announced while its region streams.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LiveEvent {
    Started {
        name: LiveName,
        /// The model's id, rare in streams: kept as text (a `CallId` made the event, moved at
        /// each push of one, larger).
        id: Option<String>,
    },
    Arguments(String),
}

/// An announced call's name: where the region wrote it (absolute offsets in the reply; the
/// engine keeps a region's bytes while it streams, and the name is read there for the
/// call's `CallStarted` and to match the call its region finally makes), or a copy of a
/// name the reader rewrote. Kept where it was written, the name is copied once for
/// `CallStarted` instead of once more for the engine: an allocation, a copy and a free a
/// call less (`bench_profile "gemma4/100 calls" stream4`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LiveName {
    At(Range<usize>),
    Owned(String),
}

impl LiveName {
    /// The name, `buf` being the engine's buffer, which starts at absolute offset `base`.
    pub(crate) fn get<'b>(&'b self, buf: &'b str, base: usize) -> &'b str {
        match self {
            LiveName::At(at) => at
                .start
                .checked_sub(base)
                .and_then(|a| buf.get(a..at.end - base))
                .unwrap_or(""),
            LiveName::Owned(name) => name,
        }
    }
}

/// What a reader gets besides the region: the context, the region's absolute offset (for
/// spans), and the channel for announcing calls early.
pub(crate) struct ReadCx<'a> {
    pub ctx: &'a Ctx,
    /// Absolute offset of the region's first byte in the whole reply.
    pub base: usize,
    pub(crate) live: &'a mut Vec<LiveEvent>,
    /// `false` when nobody listens (one-shot parse): skip building fragments.
    pub(crate) streaming: bool,
    /// Nothing visible precedes the region (a whole-reply answer).
    pub at_start: bool,
    /// How the reply ended; read it only once the input has ended (`is_final`).
    pub end: crate::ReplyEnd,
    /// The last few bracket scans that failed in this parse, for a region opened inside one
    /// to resume from ([`crate::scanner::FailedScans`]).
    pub(crate) failed_scan: &'a mut crate::scanner::FailedScans,
    /// The same for call syntax (`name(`), whose scans nest parentheses too.
    pub(crate) failed_call_scan: &'a mut crate::scanner::FailedScans,
    /// The last tool name looked up in the registry ([`ReadCx::strict_name_ok`]).
    pub(crate) names: &'a mut NameMemo,
    /// What a closed block's reader leaves for the next block of the parse
    /// ([`crate::families::tags::Kept`]).
    pub(crate) kept: &'a mut crate::families::tags::Kept,
    /// Set by a reader that returns [`Advance::NeedMore`] when the bytes that may still come
    /// change nothing it does unless one of them is in this table: its next `advance`, on
    /// this region and any bytes outside the table, would return `NeedMore` again with no
    /// event and no other effect. The engine then appends such a push and returns without
    /// calling the reader (the reader reads those bytes with the next push it is called
    /// for). `None` (the default): every push calls the reader.
    pub(crate) wake: Option<&'static Wake>,
    /// Set by a reader that returns [`Advance::Broken`]: the number of region bytes (the
    /// opener's included) that decided it, when a promise holds: its family, asked first
    /// at the opener, opens any region that starts with those bytes (removes nothing,
    /// declines nothing), and a fresh reader given them in its first step reads it to the
    /// same `Broken` (end and message) whatever follows them, sending nothing. The engine
    /// then keeps such a region broken without a reader (`Engine::broken_again`). `None`
    /// (the default): no promise. Here, not a method of the reader: asked of every broken
    /// region, a call through the reader's table cost a flood of `[TOOL_CALLS]` ~14
    /// instructions a copy.
    pub(crate) broken_by: Option<usize>,
}

/// The last name [`ReadCx::strict_name_ok`] looked up and its answer, kept by the engine
/// for its parse (whose registry does not change): a flood of one `name(` or `TOOL_CALL:
/// name` line asks the registry (a search of its tree, ~120-190 instructions) about the
/// same name at every opener.
#[derive(Debug, Default)]
pub(crate) struct NameMemo {
    /// Boxed (made at the first lookup): every engine, a fence's per fence, carries one.
    last: Option<Box<(String, bool)>>,
    /// The name looked up before the last, and its answer: a flood of two names in turn
    /// (`get_weather(computer_use(x)`) asks about each at every other opener (a search of
    /// the registry's tree each time, ~100 instructions).
    prev: Option<Box<(String, bool)>>,
    /// Closed `name(...)` regions (their bytes, up to [`MAX_CALL_KEY`]) whose arguments did
    /// not parse, and their notes' texts, one in each of [`CALL_TEXTS`] slots picked by a
    /// hash of the bytes: a region of the same bytes is decided the same (the verdict
    /// depends on its bytes and the parse's registry and limits only), without its
    /// arguments parsed and its message formatted again (~3,000 instructions a closed
    /// `get_weather(x)` in a flood of `get_weather(get_weather(x)`). Several, not the last
    /// one only: a flood whose copies hold a few words in turn (`get_weather({w})` after
    /// another family's opener) parsed each copy's arguments (~8,000 instructions a copy
    /// with its note's kind, 54x prose).
    call_text: Vec<KeptCall>,
    /// Which of a region's two slots [`NameMemo::keep_call_text`] replaced last.
    call_flip: bool,
    /// The slot of `call_text` kept or found last.
    call_last: usize,
    /// Lookups that missed the last name ([`ReadCx::strict_name_ok`]): the registry's
    /// [`NameFilter`] is made after [`FILTER_AFTER`] of them.
    misses: u32,
    /// A filter of the registry's names, made once a parse asked about many names (a
    /// numbered flood `(x0(x1…` asks about a new name at every opener, each a search of the
    /// registry's tree, ~320 instructions with five tools: 38.4x prose at 128 KB).
    filter: Option<Box<NameFilter>>,
}

/// How many lookups of a name other than the last one [`NameMemo`] answers from the
/// registry before it makes its [`NameFilter`] (a reply with a few calls never makes it).
const FILTER_AFTER: u32 = 16;

/// A Bloom filter of a registry's names (two bits a name of 256): a name whose bits are not
/// all set is not registered, told by one hash of its bytes. A name whose bits are set is
/// looked up in the registry, so the filter changes only the cost of an answer.
#[derive(Debug, Default)]
pub(crate) struct NameFilter {
    bits: [u64; 4],
}

impl NameFilter {
    fn new<'n>(names: impl Iterator<Item = &'n str>) -> Self {
        let mut f = NameFilter::default();
        for name in names {
            let (a, b) = Self::bits_of(name.as_bytes());
            for bit in [a, b] {
                if let Some(w) = f.bits.get_mut(bit / 64) {
                    *w |= 1 << (bit % 64);
                }
            }
        }
        f
    }

    /// The two bits of `name`: a multiplicative hash of its bytes read eight at a time.
    pub(crate) fn bits_of(name: &[u8]) -> (usize, usize) {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h = name.len() as u64;
        let mut chunks = name.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // The same word read byte by byte: a copy of the few bytes into an array was a
            // call of `memcpy` (~20 instructions a name; a worded flood of `name(` asks
            // about a new name at almost every opener).
            let w = rest
                .iter()
                .rev()
                .fold(0u64, |w, &b| (w << 8) | u64::from(b));
            h = (h.rotate_left(23) ^ w).wrapping_mul(K);
        }
        h ^= h >> 29;
        ((h >> 56) as usize, ((h >> 48) & 0xff) as usize)
    }

    /// Whether `name` may be one of the filter's names (`false`: it is not).
    fn may_hold(&self, name: &str) -> bool {
        self.may_hold_bytes(name.as_bytes())
    }

    /// [`NameFilter::may_hold`] for a name's bytes.
    fn may_hold_bytes(&self, name: &[u8]) -> bool {
        let (a, b) = Self::bits_of(name);
        [a, b].iter().all(|&bit| {
            self.bits
                .get(bit / 64)
                .is_some_and(|w| w & (1 << (bit % 64)) != 0)
        })
    }
}

/// A closed `name(...)` region [`NameMemo`] keeps, with its note.
#[derive(Debug, Default)]
struct KeptCall {
    region: String,
    /// Its note, once written ([`NameMemo::kept_text`]).
    text: String,
    /// Its `(`'s offset and why its arguments do not parse, while its note is unwritten: a
    /// note the cap drops is never written (a numbered flood, `get_weather(x{#})`, wrote
    /// each copy's).
    error: Option<(usize, crate::families::call_syntax::ArgError)>,
    /// The diagnostic cap's slot its note is counted in, once known.
    cap: Option<usize>,
}

/// The longest region [`NameMemo::call_text`] keeps (its key is copied at each miss).
const MAX_CALL_KEY: usize = 256;
/// How many closed regions [`NameMemo::call_text`] keeps.
const CALL_TEXTS: usize = 64;

impl NameMemo {
    /// Whether the registry's [`NameFilter`], once made, tells that `name` is not
    /// registered (`false`: not known without a lookup): what [`ReadCx::strict_name_ok`]
    /// answers for it, asked before its memo and with no [`ReadCx`] built
    /// ([`crate::engine`]'s `open_call`).
    #[inline]
    pub(crate) fn filtered_out(&self, name: &str) -> bool {
        self.filter.as_ref().is_some_and(|f| !f.may_hold(name))
    }

    /// [`NameMemo::filtered_out`] for a name's bytes (the engine's walk over a worded
    /// flood's names, which slicing the text at each checked its character boundaries).
    pub(crate) fn filtered_out_bytes(&self, name: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_some_and(|f| !f.may_hold_bytes(name))
    }

    /// The note text kept for a closed `name(...)` region of exactly these bytes.
    #[cfg(test)]
    pub(crate) fn call_text(&mut self, region: &str) -> Option<&str> {
        let slot = self.call_slot(region)?;
        self.kept_text(slot)
    }

    /// Whether any closed region has been kept ([`NameMemo::call_text`]).
    #[inline]
    pub(crate) fn keeps_calls(&self) -> bool {
        !self.call_text.is_empty()
    }

    /// The slot of [`NameMemo::call_text`] holding `region` (see there).
    /// The slot kept or found last is compared first, with no hash (a flood of one closed
    /// call, `get_weather(get_weather(x){w}`, hashed it at each copy: 6 % more).
    #[inline]
    pub(crate) fn call_slot(&mut self, region: &str) -> Option<usize> {
        if self
            .call_text
            .get(self.call_last)
            .is_none_or(|kept| kept.region != region)
        {
            self.call_last = self.call_slot_of(region)?;
        }
        Some(self.call_last)
    }

    /// The note kept in `slot` ([`Message::Kept`]), written now if it was kept unwritten.
    pub(crate) fn kept_text(&mut self, slot: usize) -> Option<&str> {
        let kept = self.call_text.get_mut(slot)?;
        if let Some((open, e)) = kept.error.take() {
            kept.text.clear();
            let name = kept.region.get(..open).unwrap_or("");
            let inner = kept
                .region
                .get(open + 1..kept.region.len() - 1)
                .unwrap_or("");
            // Writing to a `String` cannot fail.
            let _ = crate::families::call_syntax::write_call_note(name, inner, &e, &mut kept.text);
        }
        Some(kept.text.as_str())
    }

    /// Writes the note kept in `slot` to `out` as [`NameMemo::kept_text`] gives it, without
    /// keeping it written (the diagnostic cap reads a note's kind off its first bytes).
    pub(crate) fn write_kept(
        &self,
        slot: usize,
        out: &mut impl std::fmt::Write,
    ) -> std::fmt::Result {
        let Some(kept) = self.call_text.get(slot) else {
            return Ok(());
        };
        match &kept.error {
            Some((open, e)) => {
                let name = kept.region.get(..*open).unwrap_or("");
                let inner = kept
                    .region
                    .get(open + 1..kept.region.len() - 1)
                    .unwrap_or("");
                crate::families::call_syntax::write_call_note(name, inner, e, out)
            }
            None => out.write_str(&kept.text),
        }
    }

    /// The diagnostic cap's slot for the note kept in `slot` (at error level, the level of
    /// every kept note), once [`NameMemo::set_kept_cap`] noted it: a message's cap slot
    /// never changes within a parse.
    pub(crate) fn kept_cap(&self, slot: usize) -> Option<usize> {
        self.call_text.get(slot)?.cap
    }

    /// Notes the cap slot of the note kept in `slot`.
    pub(crate) fn set_kept_cap(&mut self, slot: usize, cap: usize) {
        if let Some(kept) = self.call_text.get_mut(slot) {
            kept.cap = Some(cap);
        }
    }

    /// The slot of [`NameMemo::call_text`] holding `region`, found by its hash.
    #[inline(never)]
    fn call_slot_of(&self, region: &str) -> Option<usize> {
        let (a, b) = Self::call_slots(region);
        [a, b].into_iter().find(|&i| {
            self.call_text
                .get(i)
                .is_some_and(|kept| kept.region == region)
        })
    }

    /// Keeps `text`, the note of a closed `name(...)` region whose arguments did not parse.
    #[cfg(test)]
    pub(crate) fn keep_call_text(&mut self, region: &str, text: &str) {
        if let Some(kept) = self
            .keep_call(region)
            .and_then(|s| self.call_text.get_mut(s))
        {
            kept.text.push_str(text);
        }
    }

    /// Keeps the note of a closed `name(...)` region whose arguments did not parse (`e`;
    /// its `(` at `open`) unwritten: its slot, or `e` back where the region is not kept.
    pub(crate) fn keep_call_error(
        &mut self,
        region: &str,
        open: usize,
        e: crate::families::call_syntax::ArgError,
    ) -> Result<usize, crate::families::call_syntax::ArgError> {
        if open >= region.len() {
            return Err(e);
        }
        match self.keep_call(region) {
            Some(slot) => match self.call_text.get_mut(slot) {
                Some(kept) => {
                    kept.error = Some((open, e));
                    Ok(slot)
                }
                None => Err(e),
            },
            None => Err(e),
        }
    }

    /// A slot for `region`'s note, emptied (the first of its two slots that is free, else
    /// the one of the two not replaced last): `None` where the region is not kept.
    fn keep_call(&mut self, region: &str) -> Option<usize> {
        if region.is_empty() || region.len() > MAX_CALL_KEY {
            return None;
        }
        let (a, b) = Self::call_slots(region);
        if self.call_text.is_empty() {
            self.call_text.resize_with(CALL_TEXTS, Default::default);
        }
        let free = |i: usize| self.call_text.get(i).is_some_and(|k| k.region.is_empty());
        let slot = if free(a) {
            a
        } else if free(b) {
            b
        } else {
            self.call_flip = !self.call_flip;
            if self.call_flip { a } else { b }
        };
        self.call_last = slot;
        let kept = self.call_text.get_mut(slot)?;
        kept.region.clear();
        kept.region.push_str(region);
        kept.text.clear();
        kept.error = None;
        kept.cap = None;
        Some(slot)
    }

    /// The two slots of [`NameMemo::call_text`] a region's bytes may be kept in (two, so
    /// that a few regions whose first slots are the same are all kept).
    fn call_slots(region: &str) -> (usize, usize) {
        let (a, b) = NameFilter::bits_of(region.as_bytes());
        (a % CALL_TEXTS, b % CALL_TEXTS)
    }
}

impl ReadCx<'_> {
    /// Whether the engine's text scan reads `region[range]` as ordinary bytes whatever
    /// comes before, as its bulk skip passes them (not at a line start, so `range` must
    /// not start a line): each byte is no stop, or a stop that means nothing of itself (no
    /// newline, backtick, bracket or parenthesis) where no opener starts. A region decided
    /// as text may then end after them, when what follows them ends the name the scan
    /// tracks.
    pub(crate) fn ordinary(&self, region: &str, range: Range<usize>) -> bool {
        let end = range.end;
        end <= region.len() && self.ordinary_to(region, range) == end
    }

    /// Where the bytes of `region[range]` that [`ReadCx::ordinary`] passes end: the first
    /// it does not pass, else the range's end (or the region's).
    pub(crate) fn ordinary_to(&self, region: &str, range: Range<usize>) -> usize {
        let openers = &self.ctx.openers;
        let bytes = region.as_bytes();
        let end = range.end.min(bytes.len());
        for i in range.start..end {
            let b = bytes[i];
            if openers.stops.is_stop(b)
                && (matches!(b, b'\n' | b'`' | b'[' | b'{' | b'(')
                    || openers.none_at(bytes, i) != Ok(true))
            {
                return i;
            }
        }
        end
    }

    /// How many bytes from a position an opener lookup there may read (the longest
    /// opener and one byte more): [`ReadCx::ordinary`] over a range reads nothing past its
    /// end plus this, less one.
    pub(crate) fn lookup_reach(&self) -> usize {
        self.ctx.openers.lookahead()
    }

    /// [`Ctx::strict_name_ok`], the last name's answer remembered.
    pub(crate) fn strict_name_ok(&mut self, name: &str) -> bool {
        if let Some(last) = &self.names.last
            && last.0 == name
        {
            return last.1;
        }
        if let Some(prev) = &self.names.prev
            && prev.0 == name
        {
            let ok = prev.1;
            std::mem::swap(&mut self.names.last, &mut self.names.prev);
            return ok;
        }
        if let Some(r) = self.ctx.registry.as_deref() {
            // Many names asked about: those the registry's filter tells apart are not in it.
            match &self.names.filter {
                Some(f) if !f.may_hold(name) => return false,
                Some(_) => {}
                None if self.names.misses >= FILTER_AFTER => {
                    let f = NameFilter::new(r.names());
                    let held = f.may_hold(name);
                    self.names.filter = Some(Box::new(f));
                    if !held {
                        return false;
                    }
                }
                None => self.names.misses += 1,
            }
        }
        let ok = self.ctx.strict_name_ok(name);
        // The last goes second; the buffer of the one before it holds this name.
        std::mem::swap(&mut self.names.last, &mut self.names.prev);
        let last = self
            .names
            .last
            .get_or_insert_with(|| Box::new((String::new(), ok)));
        last.0.clear();
        last.0.push_str(name);
        last.1 = ok;
        ok
    }
}

/// [`Wake`]'s mark of a byte whose arrival calls the reader.
const WAKES: u8 = 1;
/// [`Wake`]'s mark of its tag's last byte.
const ENDS_TAG: u8 = 2;

/// The bytes whose arrival may change what a waiting reader does ([`ReadCx::wake`]).
#[derive(Debug)]
pub(crate) struct Wake {
    /// Per byte: [`WAKES`] when a push holding it calls the reader, [`ENDS_TAG`] when it is
    /// the tag's last byte (a push without it completes no tag).
    bytes: [u8; 256],
    /// A tag the reader searches for (a closing tag): a push that completes it (whole in
    /// the push, or begun in the bytes before) calls the reader too.
    tag: &'static str,
    /// A push that makes the region longer than this many bytes calls the reader too (a
    /// verdict that a length decides: a lead whose name grows past its limit).
    max_region: usize,
    /// [`Wake::holding`]: every byte of `bytes` is marked [`ENDS_TAG`], and a push calls the
    /// reader unless the region's held tail stays a proper prefix of `tag`.
    holds: bool,
    /// [`Wake::holding_then`]: a held tail that is `tag` and more calls the reader only
    /// through a byte marked [`WAKES`].
    then: bool,
}

impl Wake {
    pub(crate) const fn new(bytes: &[u8], tag: &'static str) -> Wake {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < bytes.len() {
            t[bytes[i] as usize] |= WAKES;
            i += 1;
        }
        if let Some(&last) = tag.as_bytes().last() {
            t[last as usize] |= ENDS_TAG;
        }
        Wake {
            bytes: t,
            tag,
            max_region: usize::MAX,
            holds: false,
            then: false,
        }
    }

    /// The wake of a reader that holds back the region's tail because it may begin `tag`
    /// (a text value's closing tag), and whose next read changes nothing while that tail
    /// stays a proper prefix of it: the tail starts at the region's last byte equal to the
    /// tag's first ([`Wake::held_from`]; the reader says so only where that byte starts the
    /// tail and nowhere else in it), and a push that leaves it a proper prefix of `tag` does
    /// not call the reader; any other does.
    pub(crate) const fn holding(tag: &'static str) -> Wake {
        Wake {
            bytes: [ENDS_TAG; 256],
            tag,
            max_region: usize::MAX,
            holds: true,
            then: false,
        }
    }

    /// A [`Wake::holding`] of `tag` that goes on as [`Wake::new`]`(bytes, "")` once the held
    /// tail is `tag` and more: a push calls the reader when it holds one of `bytes`, or
    /// when the held tail is neither a proper prefix of `tag` nor `tag` and more. A lead
    /// whose fixed start (`tag`, Gemma 4's `call:`) arrives a few bytes a push, then a name
    /// that only some bytes end: its reader was called for every push until the start was
    /// whole (~400 instructions a call, `bench_profile "gemma4/small" into4`).
    pub(crate) const fn holding_then(tag: &'static str, bytes: &[u8]) -> Wake {
        let mut t = [ENDS_TAG; 256];
        let mut i = 0;
        while i < bytes.len() {
            t[bytes[i] as usize] |= WAKES;
            i += 1;
        }
        Wake {
            bytes: t,
            tag,
            max_region: usize::MAX,
            holds: true,
            then: true,
        }
    }

    /// A [`Wake::holding`] of the opener that the engine's text scan waits on, which
    /// [`Wake::wakes`] is given (`opener`).
    pub(crate) const fn holding_opener() -> Wake {
        Wake::holding("")
    }

    /// For a [`Wake::holding`]: where the held tail of `buf` (the buffer as the reader left
    /// it) starts, the last of the tag's first byte among its last `tag.len() - 1` bytes.
    #[inline]
    pub(crate) fn held_from(&self, buf: &[u8]) -> usize {
        let tag = self.tag.as_bytes();
        let from = buf.len().saturating_sub(tag.len().saturating_sub(1));
        match tag.first() {
            // A tag's few bytes looked at in a plain loop (a `memrchr` call's setup cost
            // ~60 instructions more: `bench_profile "gemma4/small" into4`).
            Some(&first) => buf
                .get(from..)
                .and_then(|tail| tail.iter().rposition(|&b| b == first))
                .map_or(buf.len(), |i| from + i),
            None => buf.len(),
        }
    }

    /// This wake, and a push that makes the region longer than `max` bytes.
    pub(crate) const fn up_to(self, max: usize) -> Wake {
        Wake {
            max_region: max,
            ..self
        }
    }

    /// Whether this is a [`Wake::holding`].
    #[inline]
    pub(crate) fn holds(&self) -> bool {
        self.holds
    }

    /// The longest region a push of none of the wake's bytes leaves waiting.
    #[inline]
    pub(crate) fn max_region(&self) -> usize {
        self.max_region
    }

    /// Whether `delta`, the end of `buf` (the buffer with it), calls the reader (`held`: for
    /// a [`Wake::holding`], where its held tail starts in `buf`; `opener`: the tag of a
    /// [`Wake::holding_opener`]):
    /// it holds one of `bytes`, or the tag ends in it. A tag's first bytes at the end of
    /// `delta` do not: the push that completes it does.
    // Inlined into each caller's copy of `Engine::append_quiet` (called, ~50 instructions a
    // push more: `bench_profile "gemma4/small" stream4`).
    #[inline(always)]
    pub(crate) fn wakes(&self, buf: &[u8], delta: &[u8], held: usize, opener: &str) -> bool {
        // Four bytes a step (a streamed token is a few bytes: the byte-at-a-time loop cost
        // ~5 instructions a byte, `bench_profile "gemma4/small" stream4`).
        let t = &self.bytes;
        let seen = match delta {
            // A push of four bytes (a common token size) in one step, without the loop's
            // setup (~10 instructions a push: `bench_profile "gemma4/100 calls" stream4`).
            &[a, b, c, d] => {
                t[usize::from(a)] | t[usize::from(b)] | t[usize::from(c)] | t[usize::from(d)]
            }
            _ => {
                let mut seen = 0;
                let mut quads = delta.chunks_exact(4);
                for q in &mut quads {
                    if let &[a, b, c, d] = q {
                        seen |= t[usize::from(a)]
                            | t[usize::from(b)]
                            | t[usize::from(c)]
                            | t[usize::from(d)];
                    }
                }
                for &b in quads.remainder() {
                    seen |= t[usize::from(b)];
                }
                seen
            }
        };
        if seen & WAKES != 0 {
            return true;
        }
        // A tag completed in `delta` (begun before it or whole in it) ends in it: without
        // its last byte there is no tag to look for (the search of the bytes before cost
        // ~50 instructions a push: `bench_profile "gemma4/small" stream4`).
        if seen & ENDS_TAG == 0 {
            return false;
        }
        let tag = self.tag.as_bytes();
        if self.holds {
            // Every byte is marked `ENDS_TAG` (the other wakes pay no test for this one):
            // the held tail (from `held`, [`Wake::held_from`]) with `delta` after it, its
            // few bytes compared in a loop (a `memcmp` call costs more).
            let tag = if tag.is_empty() {
                opener.as_bytes()
            } else {
                tag
            };
            return !buf.get(held..).is_some_and(|tail| {
                if tail.len() < tag.len() {
                    tail.iter().zip(tag).all(|(a, b)| a == b)
                } else if self.then {
                    // A tail that was `tag` and more before this push was compared when it
                    // became so (a push that left it otherwise called the reader, which
                    // set a new wake).
                    tail.len().saturating_sub(delta.len()) >= tag.len()
                        || tail.iter().zip(tag).all(|(a, b)| a == b)
                } else {
                    false
                }
            });
        }
        Self::tag_ends_in(tag, buf, delta.len())
    }

    /// Whether `tag` ends in the last `n` bytes of `buf` (a tag completed by the push of
    /// those bytes): at each of them equal to the tag's last byte, the `tag.len()` bytes
    /// that end there compared with it. A push that holds the last byte of the tag without
    /// completing it (Gemma 4's `<|"|>` quotes for its `<tool_call|>`) cost ~135
    /// instructions when the tag was searched by its first byte in the bytes before and in
    /// the push (`bench_profile "gemma4/small" stream4`).
    #[inline]
    fn tag_ends_in(tag: &[u8], buf: &[u8], n: usize) -> bool {
        let Some(&last) = tag.last() else {
            return false;
        };
        let from = buf.len().saturating_sub(n);
        for (j, &b) in buf.get(from..).unwrap_or(&[]).iter().enumerate() {
            let end = from + j + 1;
            // The tag's first byte first (see `tags::find_close`: a `memcmp` call each).
            if b == last
                && end >= tag.len()
                && buf.get(end - tag.len()) == tag.first()
                && buf.get(end - tag.len()..end) == Some(tag)
            {
                return true;
            }
        }
        false
    }
}

impl ReadCx<'_> {
    /// At the end of the input: whether a call whose closing marker is missing but whose
    /// body is complete is a call ([`crate::ReplyEnd`]); the draft then carries
    /// [`closing_marker_repair`].
    pub fn closes_at_end(&self) -> bool {
        self.end.closes_calls()
    }

    /// Absolute span of `region[a..b]`.
    pub fn span(&self, a: usize, b: usize) -> Range<usize> {
        self.base + a..self.base + b
    }

    pub fn streaming(&self) -> bool {
        self.streaming
    }

    /// Announces a call whose name is now known (once per call, in order).
    pub fn start_call(&mut self, name: &str, id: Option<&str>) {
        if self.streaming {
            self.live.push(LiveEvent::Started {
                name: LiveName::Owned(name.to_owned()),
                id: id.map(str::to_owned),
            });
        }
    }

    /// [`ReadCx::start_call`] of a call without an id of the model's whose `name` is
    /// `region`'s own bytes, kept as where they are ([`LiveName::At`]; a name that is not a
    /// slice of `region` is copied).
    pub fn start_call_in(&mut self, region: &str, name: &str) {
        if !self.streaming {
            return;
        }
        let at = (name.as_ptr() as usize).wrapping_sub(region.as_ptr() as usize);
        let name = match at.checked_add(name.len()) {
            Some(end) if region.get(at..end) == Some(name) => {
                LiveName::At(self.base + at..self.base + end)
            }
            _ => LiveName::Owned(name.to_owned()),
        };
        self.live.push(LiveEvent::Started { name, id: None });
    }

    /// Forwards a fragment of the last announced call's arguments JSON.
    pub fn arguments(&mut self, fragment: &str) {
        if self.streaming && !fragment.is_empty() {
            self.live.push(LiveEvent::Arguments(fragment.to_owned()));
        }
    }

    /// [`ReadCx::arguments`] with a fragment the reader wrote for it (no copy).
    pub fn arguments_owned(&mut self, fragment: String) {
        if self.streaming && !fragment.is_empty() {
            self.live.push(LiveEvent::Arguments(fragment));
        }
    }

    /// [`ReadCx::arguments`] appended to the fragment this read already sent last, when it
    /// sent one (the same call's: fragments go to the last announced call), as one event:
    /// the bytes go out with the same push either way. An object's closing `}` comes with
    /// its last entry's fragment, and sent alone it cost an allocation, an event and its
    /// drop a call (`bench_profile "gemma4/100 calls" stream4`).
    pub fn arguments_after(&mut self, fragment: &str) {
        if !self.streaming || fragment.is_empty() {
            return;
        }
        match self.live.last_mut() {
            Some(LiveEvent::Arguments(last)) => last.push_str(fragment),
            _ => self.live.push(LiveEvent::Arguments(fragment.to_owned())),
        }
    }
}

/// Reads one region of a family's markup, incrementally (see the module doc).
pub(crate) trait RegionReader: Send + Sync {
    fn advance(&mut self, region: &str, is_final: bool, cx: &mut ReadCx<'_>) -> Advance;
}

/// Resumable search for a closing tag: `find(region)` looks only at bytes it has not
/// looked at before, but for a tag's first bytes at the end (a tag split across pushes).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScanFrom(pub usize);

impl ScanFrom {
    pub fn find(&mut self, region: &str, needle: &str) -> Option<usize> {
        let hay = region.as_bytes();
        let n = needle.as_bytes();
        let first = *n.first()?;
        let from = self.0.min(hay.len());
        let rest = hay.get(from..).unwrap_or(&[]);
        if rest.len() <= SHORT_SEARCH {
            // A push's few bytes after a possible partial tag (most searches while a block
            // streams): one plain loop, cheaper than setting up the vector searches.
            for (j, &b) in rest.iter().enumerate() {
                if b != first {
                    continue;
                }
                let tail = &rest[j..];
                if tail.starts_with(n) {
                    return Some(from + j);
                }
                if n.starts_with(tail) {
                    // A tag split across pushes: looked at again from here.
                    self.0 = from + j;
                    return None;
                }
            }
            self.0 = hay.len();
            return None;
        }
        match find_from(region, needle, from) {
            Some(i) => Some(i),
            None => {
                // Only a tag split across pushes can still start before the end: the next
                // search starts at the first byte whose rest is a prefix of `needle` (no
                // such byte: at the end), so the bytes of the tail that cannot start it
                // (other tags' `<` in markup) are not looked at again.
                let tail_from = hay
                    .len()
                    .saturating_sub(n.len().saturating_sub(1))
                    .max(from);
                let tail = hay.get(tail_from..).unwrap_or(&[]);
                let partial = memchr::memchr_iter(first, tail)
                    .find(|&j| n.starts_with(&tail[j..]))
                    .unwrap_or(tail.len());
                self.0 = tail_from + partial;
                None
            }
        }
    }
}

/// Bytes left to search below which [`ScanFrom::find`] loops plainly.
const SHORT_SEARCH: usize = 48;

/// Forwards the raw text of a JSON arguments object as it streams: `forward` sends what
/// arrived since the last call, up to the object's own end (never past it).
#[derive(Debug)]
pub(crate) struct RawArgs {
    /// Region offset of the object's `{`.
    start: usize,
    emitted: usize,
    scanner: Scanner,
    done: bool,
    /// Region offset just past the value, once it was forwarded whole.
    end: Option<usize>,
}

impl RawArgs {
    pub fn new(start: usize, max_depth: usize) -> Self {
        RawArgs {
            start,
            emitted: start,
            scanner: Scanner::new(max_depth, false),
            done: false,
            end: None,
        }
    }

    /// Region offset just past the value, once it has been forwarded whole.
    pub fn end(&self) -> Option<usize> {
        self.end
    }

    /// Some of the value was forwarded.
    pub fn sent_anything(&self) -> bool {
        self.emitted > self.start
    }

    /// Forwarding stopped: the value ended, or is not JSON.
    pub fn stopped(&self) -> bool {
        self.done
    }

    /// The deepest bracket nesting the value reached so far (the value's own bracket is 1).
    pub fn peak_depth(&self) -> usize {
        self.scanner.peak_depth()
    }

    /// Sends `region[emitted..]` up to the object's end as far as it has arrived.
    pub fn forward(&mut self, region: &str, cx: &mut ReadCx<'_>) {
        if self.done {
            return;
        }
        let bytes = region.as_bytes().get(self.start..).unwrap_or(&[]);
        let upto = match self.scanner.advance(bytes) {
            Scan::Done(n) => {
                self.done = true;
                self.end = Some(self.start + n);
                self.start + n
            }
            Scan::NeedMore => self.start + self.scanner.consumed(),
            Scan::Fail(_) => {
                self.done = true;
                self.emitted
            }
        };
        let mut upto = upto.min(region.len());
        while upto > self.emitted && !region.is_char_boundary(upto) {
            upto -= 1;
        }
        if upto > self.emitted {
            cx.arguments(region.get(self.emitted..upto).unwrap_or(""));
            self.emitted = upto;
        }
    }
}

/// Appends `s` as a JSON string, quotes included, escaped exactly as `serde_json` writes
/// it (`Value::String(s).to_string()`), without the owned copy and the formatter: runs of
/// bytes that need no escape are found eight at a time and copied whole.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    push_json_escaped(out, s);
    out.push('"');
}

/// Appends `v` as `v.to_string()` writes it; strings, booleans, null, integers, lists and
/// objects without the formatter (a streamed argument's fragment is written so: `Display`
/// through `serde_json`'s serializer cost ~300 instructions a short string, callgrind
/// hunyuan/100 calls, and ~450 an integer or a list of two: minimax_m2/100 calls); only a
/// float goes through it.
pub(crate) fn push_json_value(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => push_json_str(out, s),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Null => out.push_str("null"),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => out.push_str(itoa::Buffer::new().format(u)),
            (None, Some(i)) => out.push_str(itoa::Buffer::new().format(i)),
            _ => {
                use std::fmt::Write as _;
                // Writing to a `String` cannot fail.
                let _ = write!(out, "{n}");
            }
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_value(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_str(out, k);
                out.push(':');
                push_json_value(out, item);
            }
            out.push('}');
        }
    }
}

/// [`push_json_str`] without the quotes: `s` escaped as inside a JSON string (escaping is
/// per character, so pieces escaped one by one concatenate to the escaped whole).
pub(crate) fn push_json_escaped(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(i) = next_json_escape(bytes, start) {
        let b = bytes[i];
        // `b` is ASCII: `start..i` ends on a char boundary.
        out.push_str(s.get(start..i).unwrap_or(""));
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or(""));
}

/// The first byte at or after `from` that a JSON string escapes (`"`, `\`, a control
/// byte). Eight bytes are tested at once (a word has such a byte when one of its bytes is
/// below 0x20 or equals `"` or `\`; the test may also flag the bytes after a real hit,
/// never miss one), then the flagged word a byte at a time.
fn next_json_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let escapes = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut i = from;
    while let Some(word) = bytes.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let x = u64::from_le_bytes(w);
        let quote = x ^ (ONES * u64::from(b'"'));
        let slash = x ^ (ONES * u64::from(b'\\'));
        let flagged = (x.wrapping_sub(ONES * 0x20) & !x)
            | (quote.wrapping_sub(ONES) & !quote)
            | (slash.wrapping_sub(ONES) & !slash);
        if flagged & HIGH != 0
            && let Some(k) = word.iter().position(|&b| escapes(b))
        {
            return Some(i + k);
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|&b| escapes(b))
        .map(|k| i + k)
}

/// First occurrence of `needle` in `hay[from..]`, as an index into `hay`.
///
/// A `memchr` for the first byte and a compare at each hit, for the first few hits: a
/// streamed push searches a few new bytes, where building a `memmem` searcher per call
/// cost more than the search (it showed in the profile of replies with many calls). Past
/// them the rest goes to `memmem` ([`memmem_find`]), whose prefilter keeps a hay full of
/// the first byte (`<` in markup) fast.
pub(crate) fn find_from(hay: &str, needle: &str, from: usize) -> Option<usize> {
    const QUICK_HITS: usize = 4;
    let n = needle.as_bytes();
    let first = *n.first()?;
    let mut at = from;
    for _ in 0..QUICK_HITS {
        let h = hay.as_bytes().get(at..)?;
        let i = memchr::memchr(first, h)?;
        if h.get(i..)?.starts_with(n) {
            return Some(at + i);
        }
        at += i + 1;
    }
    memmem_find(hay.as_bytes().get(at..)?, n).map(|i| at + i)
}

/// `memmem::find` with the searcher of each of the last few needles kept (per thread):
/// the needles are a parse's few closing tags, and building a searcher cost more than a
/// search past a call's arguments (once per Gemma 4 call, whose `<|"|>` quotes are hits
/// of its closing tag's first byte). Long needles are searched without keeping one.
fn memmem_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    use memchr::memmem::Finder;
    use std::cell::RefCell;
    /// Searchers kept, and the longest needle kept.
    const KEPT: usize = 8;
    const KEPT_LEN: usize = 64;
    thread_local! {
        static FINDERS: RefCell<Vec<Finder<'static>>> = const { RefCell::new(Vec::new()) };
    }
    if needle.len() > KEPT_LEN {
        return memchr::memmem::find(hay, needle);
    }
    FINDERS
        .try_with(|finders| {
            let mut finders = finders.try_borrow_mut().ok()?;
            if let Some(f) = finders.iter().find(|f| f.needle() == needle) {
                return Some(f.find(hay));
            }
            let f = Finder::new(needle).into_owned();
            let found = f.find(hay);
            if finders.len() >= KEPT {
                finders.remove(0);
            }
            finders.push(f);
            Some(found)
        })
        .ok()
        .flatten()
        .unwrap_or_else(|| memchr::memmem::find(hay, needle))
}

/// How a family reads a text value whose argument the tool's schema does not type (no
/// tool, no property, or a property without a type): its reference parser's rule
/// ([`Family::untyped`], declared in the family's module). With a type, the schema decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Untyped {
    /// The text stays a string.
    #[default]
    Text,
    /// These words, in any ASCII case, are `null`; any other text stays a string.
    Null(&'static [&'static str]),
    /// JSON, then a Python literal (`True`, `None`, `{'a': 1}`); any other text stays a
    /// string.
    Literal,
    /// JSON; any other text stays a string.
    Json,
}

/// `null` alone (vLLM's and SGLang's Qwen3-Coder, Seed-OSS and dots readers).
pub const NULL_WORD: Untyped = Untyped::Null(&["null"]);

/// Converts a value written as text in markup (XML/tag styles) by the tool's schema for
/// that argument: integer, number, boolean, null, object and array are read as JSON; a
/// string stays exactly the text (never `"007"` → `7`). When the schema gives no type for
/// the argument, the family's [`Untyped`] rule decides. A repair is recorded when the text
/// was not what the schema asked, or was read as a Python literal.
pub(crate) fn convert_text_value(
    raw: &str,
    spec: Option<&ToolSpec>,
    key: &str,
    untyped: Untyped,
    repairs: &mut Vec<Repair>,
) -> Value {
    let types = param_types(spec, key);
    if types.is_empty() {
        return untyped_value(raw, key, untyped, repairs);
    }
    let text = raw.trim();
    if types.contains(&"string") {
        // A string or another type (`["string", "object"]`, `["string", "null"]`, `anyOf`
        // string | integer): text that is a value of one of the other types in JSON is that
        // value (as vLLM's readers take a structure and llama.cpp's any of them); anything
        // else, `"007"`, `1abc` and JSON strings included, stays exactly the text.
        return typed_alternative(text, &types).unwrap_or_else(|| Value::String(raw.to_owned()));
    }
    let decoded = crate::repair::parse_lenient(text).ok();
    if decoded
        .as_ref()
        .is_none_or(|(v, _)| !of_json_type(v, &types))
        && let Some(v) = zero_padded_integer(text, &types)
    {
        // `018956` for an integer: JSON has no leading zeros, the decimal reading is the
        // only one (vLLM's `int()`, toolcall-core's coercion).
        repairs.push(Repair::new(
            "text_value",
            format!("argument {key:?}: {text:?} read as {v} (leading zeros)"),
        ));
        return v;
    }
    match decoded {
        Some((v, fixed)) if of_json_type(&v, &types) => {
            if !fixed.is_empty() {
                // e.g. Python's `True`, or a trailing comma: readable, but not JSON.
                repairs.push(Repair::new(
                    "text_value",
                    format!("argument {key:?}: {text:?} read as {v}"),
                ));
            }
            v
        }
        other => {
            repairs.push(Repair::new(
                "text_value",
                format!(
                    "argument {key:?}: expected {}, got {}; kept as text",
                    types.join(" or "),
                    other
                        .as_ref()
                        .map_or("text", |(v, _)| toolcall_core::json_kind(v))
                ),
            ));
            Value::String(raw.to_owned())
        }
    }
}

/// A decimal integer written with leading zeros (`007`, `-018956`), when the types allow
/// an integer or a number.
pub(crate) fn zero_padded_integer(text: &str, types: &[&str]) -> Option<Value> {
    if !types.iter().any(|t| matches!(*t, "integer" | "number")) {
        return None;
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.len() < 2 || !digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let signed = text.strip_prefix('+').unwrap_or(text);
    signed
        .parse::<i64>()
        .map(Value::from)
        .or_else(|_| signed.parse::<u64>().map(Value::from))
        .ok()
}

/// Whether the types allow a string and also some other type.
fn typed_union(types: &[&str]) -> bool {
    types.contains(&"string") && types.iter().any(|t| *t != "string")
}

/// `text` as a value of a type `types` allows besides a string, when it is one in strict
/// JSON (`null`, `42`, `{"a": 1}`); `None` for any other text, JSON strings included.
pub(crate) fn typed_alternative(text: &str, types: &[&str]) -> Option<Value> {
    if !typed_union(types) {
        return None;
    }
    let v: Value = serde_json::from_str(text).ok()?;
    of_json_type(&v, types).then_some(v)
}

/// Whether `v` is of one of the JSON Schema `types` other than `string` (an `integer` is
/// a whole number written without a fraction).
pub(crate) fn of_json_type(v: &Value, types: &[&str]) -> bool {
    types.iter().any(|t| match *t {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        _ => false,
    })
}

/// A text value the schema does not type, read by the family's rule.
fn untyped_value(raw: &str, key: &str, untyped: Untyped, repairs: &mut Vec<Repair>) -> Value {
    let text = raw.trim();
    match untyped {
        Untyped::Text => {}
        Untyped::Null(words) => {
            if words.iter().any(|w| w.eq_ignore_ascii_case(text)) {
                return Value::Null;
            }
        }
        Untyped::Json => {
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                return v;
            }
        }
        Untyped::Literal => {
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                return v;
            }
            // A Python literal: what the lenient reader fixes that Python's
            // `ast.literal_eval` also reads (quotes, True/False/None, a trailing comma).
            const PYTHON: [&str; 3] = ["single_quotes", "python_literals", "trailing_comma"];
            if let Ok((v, fixed)) = crate::repair::parse_lenient(text)
                && fixed.iter().all(|r| PYTHON.contains(&r.kind.as_str()))
            {
                repairs.push(Repair::new(
                    "text_value",
                    format!("argument {key:?}: {text:?} read as the Python literal {v}"),
                ));
                return v;
            }
        }
    }
    Value::String(raw.to_owned())
}

/// What the schema says of a text value of argument `key` ([`convert_text_value`]), known
/// at the parameter's name before its value arrives: `Some(true)`, a string whatever it
/// holds (the schema allows a string); `Some(false)`, another type; `None`, no type (the
/// family's [`Untyped`] rule decides, see [`untyped_is_text`]).
pub(crate) fn text_param(spec: Option<&ToolSpec>, key: &str) -> Option<bool> {
    let types = param_types(spec, key);
    // A value that may be a string or another type is decided whole ([`convert_text_value`]).
    (!types.is_empty()).then(|| types.contains(&"string") && !typed_union(&types))
}

/// Whether an untyped value whose text starts `so_far` is a string under `rule`, as
/// [`convert_text_value`] will read it whole: `None` while more bytes decide. Once
/// decided it stays so whatever follows, so a stream may send the text as it arrives.
pub(crate) fn untyped_is_text(rule: Untyped, so_far: &str) -> Option<bool> {
    match rule {
        Untyped::Text => Some(true),
        Untyped::Null(words) => {
            // Still a prefix of a null word (blanks around it are trimmed).
            let t = so_far.trim();
            let maybe = words
                .iter()
                .any(|w| w.get(..t.len()).is_some_and(|p| p.eq_ignore_ascii_case(t)));
            (!maybe).then_some(true)
        }
        Untyped::Json => {
            // JSON values start with one of these.
            let c = so_far.trim_start().chars().next()?;
            Some(!matches!(
                c,
                '-' | '0'..='9' | '"' | '[' | '{' | 't' | 'f' | 'n'
            ))
        }
        Untyped::Literal => {
            // JSON and the Python literals read start with one of these; a value that
            // starts otherwise is text whatever follows.
            let c = so_far.trim_start().chars().next()?;
            Some(!matches!(
                c,
                '-' | '0'..='9' | '"' | '\'' | '[' | '{' | 't' | 'f' | 'n' | 'T' | 'F' | 'N'
            ))
        }
    }
}

/// The types the schema allows for argument `key`, local `$ref`s followed (Pydantic writes
/// a nested model or an enum as `{"$ref": "#/$defs/Model"}`, an optional one as
/// `anyOf: [{"$ref": …}, {"type": "null"}]`).
fn param_types<'a>(spec: Option<&'a ToolSpec>, key: &str) -> Types<'a> {
    let Some(root) = spec.map(|s| &s.parameters) else {
        return Types::default();
    };
    schema_get(root, "properties")
        .and_then(|p| schema_get(p, key))
        .map(|node| schema_types(follow_ref(node, root), root))
        .unwrap_or_default()
}

/// Keys a schema object may hold before [`schema_get`] hashes the key instead of looking
/// at each.
const SMALL_SCHEMA: usize = 8;

/// `node[key]` for a schema node: a small object's keys are compared in turn (a property's
/// schema holds a few), which costs less than hashing the key (the schema is looked up per
/// parameter of every call, and per streamed one).
pub(crate) fn schema_get<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    let m = node.as_object()?;
    if m.len() <= SMALL_SCHEMA {
        m.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        m.get(key)
    }
}

/// [`resolve_local_ref`], skipped for a node with no `$ref`.
fn follow_ref<'a>(node: &'a Value, root: &'a Value) -> &'a Value {
    if schema_get(node, "$ref").is_some() {
        resolve_local_ref(node, root)
    } else {
        node
    }
}

/// A schema node's types: up to four in place, more in a list (looked up per text
/// parameter, twice per streamed one; a `Vec` each time was an allocation and a free).
/// Hand-written rather than `smallvec::SmallVec<[&str; 4]>` (already built for
/// `jsonschema`): that measured 1.2 % more on `minimax_m2/small` in 4-byte pushes (197 728
/// against 195 286 instructions a parse, callgrind, session 35).
pub(crate) enum Types<'a> {
    Few([&'a str; 4], usize),
    Many(Vec<&'a str>),
}

impl Default for Types<'_> {
    fn default() -> Self {
        Types::Few([""; 4], 0)
    }
}

impl<'a> Types<'a> {
    pub(crate) fn push(&mut self, t: &'a str) {
        match self {
            Types::Few(few, n) if *n < few.len() => {
                few[*n] = t;
                *n += 1;
            }
            Types::Few(few, n) => {
                let mut many = few[..*n].to_vec();
                many.push(t);
                *self = Types::Many(many);
            }
            Types::Many(many) => many.push(t),
        }
    }
}

impl<'a> Extend<&'a str> for Types<'a> {
    fn extend<I: IntoIterator<Item = &'a str>>(&mut self, iter: I) {
        for t in iter {
            self.push(t);
        }
    }
}

impl<'a> std::ops::Deref for Types<'a> {
    type Target = [&'a str];
    fn deref(&self) -> &[&'a str] {
        match self {
            Types::Few(few, n) => few.get(..*n).unwrap_or(&[]),
            Types::Many(many) => many,
        }
    }
}

fn schema_types<'a>(schema: &'a Value, root: &'a Value) -> Types<'a> {
    let mut out = Types::default();
    match schema_get(schema, "type") {
        Some(Value::String(t)) => out.push(t.as_str()),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(alts) = schema_get(schema, k).and_then(Value::as_array) {
            for a in alts {
                let a = follow_ref(a, root);
                match schema_get(a, "type") {
                    Some(Value::String(t)) => out.push(t),
                    Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
                    _ if schema_get(a, "properties").is_some() => out.push("object"),
                    _ if schema_get(a, "items").is_some() => out.push("array"),
                    _ => {}
                }
            }
        }
    }
    if out.is_empty() {
        if schema_get(schema, "properties").is_some() {
            out.push("object");
        } else if schema_get(schema, "items").is_some() {
            out.push("array");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::NameMemo;

    // A kept note is given back for the same bytes only.
    #[test]
    fn a_kept_call_note_is_given_for_its_own_bytes_only() {
        let mut memo = NameMemo::default();
        assert_eq!(memo.call_text("f(x)"), None);
        memo.keep_call_text("f(x)", "note x");
        assert_eq!(memo.call_text("f(x)"), Some("note x"));
        assert_eq!(memo.call_text("f(y)"), None);
        assert_eq!(memo.call_text("f(x) "), None);
        memo.keep_call_text("f(y)", "note y");
        assert_eq!(memo.call_text("f(y)"), Some("note y"));
        // Several are kept (those whose slots differ), each for its own bytes.
        let words = (0..40).map(|i| format!("f(w{i})")).collect::<Vec<_>>();
        for w in &words {
            memo.keep_call_text(w, &format!("note {w}"));
        }
        let kept = words
            .iter()
            .filter(|w| memo.call_text(w) == Some(format!("note {w}").as_str()))
            .count();
        assert!(kept >= 8, "{kept}");
        for w in &words {
            assert!(memo.call_text(w).is_none_or(|t| t == format!("note {w}")));
        }
        // Too long a region is not kept (the one in its slot stays).
        memo.keep_call_text("f(y)", "note y");
        memo.keep_call_text(&format!("f({})", "x".repeat(300)), "long");
        assert_eq!(memo.call_text("f(y)"), Some("note y"));
        assert_eq!(memo.call_text(&format!("f({})", "x".repeat(300))), None);
    }

    // The filter holds every name it was made of (names of every length around its
    // eight-byte reads), and tells most others apart.
    #[test]
    fn a_name_filter_holds_its_names_and_refuses_most_others() {
        let names: Vec<String> = (0..40)
            .map(|i| format!("{}{i}", "tool_name_x".get(..i % 12).unwrap_or("")))
            .collect();
        let filter = super::NameFilter::new(names.iter().map(String::as_str));
        assert!(names.iter().all(|n| filter.may_hold(n)));
        let refused = (0..1000)
            .filter(|i| !filter.may_hold(&format!("other{i}")))
            .count();
        assert!(refused > 500, "{refused}");
    }

    use super::*;

    use serde_json::json;

    // `push_json_value` writes what `Value::to_string` writes: integers at both ends of
    // their range, floats, escapes, nested lists and objects, keys kept in order.
    #[test]
    fn push_json_value_is_to_string() {
        let values = [
            json!(0),
            json!(7),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(1.5),
            json!(-0.0),
            json!(1e300),
            json!(null),
            json!(true),
            json!("a \"b\" \\ \n \u{1} \u{7f} é 😀"),
            json!([]),
            json!({}),
            json!([412, 33]),
            json!([1, [2, [3, {"a": -4}]], "x", null, false, 2.25]),
            json!({"z": 1, "a": {"k\"": [true, {}], "": -9}, "m": "v"}),
        ];
        for v in values {
            let mut out = String::from("prefix");
            push_json_value(&mut out, &v);
            assert_eq!(out, format!("prefix{v}"), "{v:?}");
        }
    }

    // A push wakes a reader waiting for a tag exactly when a byte of its table is in the
    // push or an occurrence of the tag ends in it (begun before it or whole in it), for
    // every split of texts dense in the tag's bytes and prefixes; a hold of the opener
    // given, exactly when the bytes held and pushed are no longer a proper prefix of it.
    #[test]
    fn a_wake_fires_on_its_bytes_and_on_a_tag_completed_in_the_push() {
        let tag = "<tool_call|>";
        let wake = Wake::new(b",}", tag);
        let quiet = Wake::new(b"", tag);
        let texts = [
            r#"a:<|"|>x<|"|><tool_call|>"#,
            "<tool_call|<tool_call|>tool_call|><<tool_call|>",
            "<<<tool_call||>><tool_call|><tool_call|>",
            "x,<tool_ca}ll|>",
            "<tool_call|>",
            "|>|>l|>",
        ];
        for text in texts {
            let b = text.as_bytes();
            for from in 0..b.len() {
                for to in from + 1..=b.len() {
                    let (buf, delta) = (&b[..to], &b[from..to]);
                    let ends = (tag.len()..=to)
                        .any(|end| end > from && &buf[end - tag.len()..end] == tag.as_bytes());
                    let byte = delta.iter().any(|c| b",}".contains(c));
                    assert_eq!(
                        wake.wakes(buf, delta, 0, ""),
                        ends || byte,
                        "{text:?} {from}..{to}"
                    );
                    assert_eq!(
                        quiet.wakes(buf, delta, 0, ""),
                        ends,
                        "{text:?} {from}..{to}"
                    );
                    // Held from `from`: quiet while the bytes from there are a proper prefix
                    // of the opener given.
                    let held = &buf[from..];
                    let prefix = held.len() < tag.len() && tag.as_bytes().starts_with(held);
                    let hold = Wake::holding_opener();
                    assert_eq!(
                        hold.wakes(buf, delta, from, tag),
                        !prefix,
                        "{text:?} {from}..{to}"
                    );
                }
            }
        }
    }

    // A small schema object's keys are looked at in turn, a large one's hashed: the same
    // answer as `Value::get` either way.
    #[test]
    fn schema_get_is_value_get() {
        let mut big = Map::new();
        for i in 0..(SMALL_SCHEMA + 3) {
            big.insert(format!("k{i}"), json!(i));
        }
        let nodes = [
            json!({"type": "string", "description": "d", "$ref": "#/x"}),
            json!({}),
            Value::Object(big),
            json!([1, 2]),
            json!("type"),
        ];
        for node in &nodes {
            for key in ["type", "$ref", "k0", "k10", "missing", ""] {
                assert_eq!(schema_get(node, key), node.get(key), "{node} {key}");
            }
        }
    }

    // Escaped exactly as serde_json writes a string: quotes, backslashes, every control
    // byte, DEL and non-ASCII text.
    #[test]
    fn push_json_str_writes_what_serde_json_writes() {
        let mut all_controls: String = (0u8..0x20).map(char::from).collect();
        all_controls.push_str("\u{7f}\"\\/é✓ end");
        let long = format!("{}\u{1}{}\"é", "word ".repeat(9), "ü".repeat(7));
        for s in [
            "",
            "plain",
            "a\"b\\c",
            "line\nnext\ttab\r",
            all_controls.as_str(),
            long.as_str(),
        ] {
            let mut out = String::from("x");
            push_json_str(&mut out, s);
            assert_eq!(out, format!("x{}", Value::String(s.to_owned())), "{s:?}");
        }
        // Each escaped byte (and its unescaped neighbours) at every place in a word.
        for b in [0u8, 0x1f, b'"', b'\\', 0x20, 0x7f, b'!', b'#', b'[', b']'] {
            for at in 0..20 {
                let mut s = "a".repeat(20);
                s.replace_range(at..=at, &char::from(b).to_string());
                let mut out = String::new();
                push_json_str(&mut out, &s);
                assert_eq!(out, Value::String(s.clone()).to_string(), "{s:?}");
            }
        }
    }

    fn spec(props: Value) -> ToolSpec {
        ToolSpec::new("t", "", json!({"type": "object", "properties": props}))
    }

    // covers the text-valued families' rule: strings stay strings, other types read as JSON
    #[test]
    fn text_values_follow_the_schema() {
        let s = spec(json!({
            "code": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
            "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array"},
            "maybe": {"type": ["integer", "null"]}
        }));
        let mut r = Vec::new();
        let c = |raw: &str, key: &str, r: &mut Vec<Repair>| {
            convert_text_value(raw, Some(&s), key, Untyped::Text, r)
        };
        assert_eq!(c("007", "code", &mut r), json!("007"));
        assert_eq!(c(" 42 ", "n", &mut r), json!(42));
        assert_eq!(c("1.5", "x", &mut r), json!(1.5));
        assert_eq!(c("true", "b", &mut r), json!(true));
        assert_eq!(c("{\"k\": [1]}", "o", &mut r), json!({"k": [1]}));
        assert_eq!(c("[1, 2]", "a", &mut r), json!([1, 2]));
        assert_eq!(c("null", "maybe", &mut r), json!(null));
        assert!(r.is_empty(), "{r:?}");
        assert_eq!(c("True", "b", &mut r), json!(true));
        assert_eq!(r.len(), 1);
        assert_eq!(c("many", "n", &mut r), json!("many"));
        assert_eq!(r[1].kind, "text_value");
        // no schema for the key, or no spec: text stays text
        assert_eq!(c("42", "other", &mut r), json!("42"));
        assert_eq!(
            convert_text_value("42", None, "n", Untyped::Text, &mut r),
            json!("42")
        );
        assert_eq!(r.len(), 2);
    }

    // covers: a zero-padded decimal integer typed integer or number is that integer (with a
    // repair); a string type keeps it; other digits-like text stays text
    #[test]
    fn zero_padded_integers_are_read_for_numeric_types() {
        let s = spec(json!({
            "code": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}
        }));
        let mut r = Vec::new();
        let mut c =
            |raw: &str, key: &str| convert_text_value(raw, Some(&s), key, Untyped::Text, &mut r);
        assert_eq!(c("018956", "n"), json!(18956));
        assert_eq!(c(" -007 ", "n"), json!(-7));
        assert_eq!(c("+00", "x"), json!(0));
        assert_eq!(c("018956", "code"), json!("018956"));
        assert_eq!(c("0x10", "n"), json!("0x10"));
        assert_eq!(c("007.5", "n"), json!("007.5"));
        assert_eq!(
            r.iter()
                .filter(|r| r.message.contains("leading zeros"))
                .count(),
            3
        );
    }

    // Values the schema does not type follow the family's rule; a stream may send the text
    // once `untyped_is_text` says so, and the whole value then converts to that text.
    #[test]
    fn untyped_values_follow_the_family_rule() {
        let mut r = Vec::new();
        let mut c = |raw: &str, rule| convert_text_value(raw, None, "k", rule, &mut r);
        let null = Untyped::Null(&["null", "none"]);
        assert_eq!(c("42", Untyped::Text), json!("42"));
        assert_eq!(c("null", Untyped::Text), json!("null"));
        assert_eq!(c(" NULL ", null), json!(null));
        assert_eq!(c("None", null), json!(null));
        assert_eq!(c("nullify", null), json!("nullify"));
        assert_eq!(c("true", null), json!("true"));
        assert_eq!(c("42", Untyped::Literal), json!(42));
        assert_eq!(c("{\"a\": 1}", Untyped::Literal), json!({"a": 1}));
        assert_eq!(c("{'a': True}", Untyped::Literal), json!({"a": true}));
        assert_eq!(c("{a: 1}", Untyped::Literal), json!("{a: 1}"));
        assert_eq!(c("Paris", Untyped::Literal), json!("Paris"));
        assert_eq!(c("007", Untyped::Literal), json!("007"));
        // Only the Python literal is a repair.
        assert_eq!(r.len(), 1, "{r:?}");
        // A property with a type: the schema decides, whatever the rule.
        let s = spec(json!({"s": {"type": "string"}, "any": {"description": "no type"}}));
        let mut r = Vec::new();
        assert_eq!(
            convert_text_value("null", Some(&s), "s", null, &mut r),
            json!("null")
        );
        assert_eq!(
            convert_text_value("null", Some(&s), "any", null, &mut r),
            json!(null)
        );
        assert_eq!(text_param(Some(&s), "s"), Some(true));
        assert_eq!(text_param(Some(&s), "any"), None);
        assert_eq!(text_param(None, "k"), None);
        // Streaming: decided only when no more bytes can change the conversion.
        assert_eq!(untyped_is_text(Untyped::Text, ""), Some(true));
        assert_eq!(untyped_is_text(null, " nu"), None);
        assert_eq!(untyped_is_text(null, "null "), None);
        assert_eq!(untyped_is_text(null, "nulx"), Some(true));
        assert_eq!(untyped_is_text(null, "null x"), Some(true));
        assert_eq!(untyped_is_text(Untyped::Literal, " "), None);
        assert_eq!(untyped_is_text(Untyped::Literal, "Paris"), Some(true));
        assert_eq!(untyped_is_text(Untyped::Literal, "{"), Some(false));
        assert_eq!(untyped_is_text(Untyped::Literal, "True"), Some(false));
        assert_eq!(untyped_is_text(Untyped::Json, "True"), Some(true));
        assert_eq!(untyped_is_text(Untyped::Json, "[1"), Some(false));
        let mut r = Vec::new();
        assert_eq!(
            convert_text_value("[1, 2]", None, "k", Untyped::Json, &mut r),
            json!([1, 2])
        );
        assert_eq!(
            convert_text_value("True", None, "k", Untyped::Json, &mut r),
            json!("True")
        );
    }

    #[test]
    fn find_from_skips_partial_matches() {
        assert_eq!(find_from("<<</tool></tool>", "</tool>", 0), Some(2));
        assert_eq!(find_from("<<</tool></tool>", "</tool>", 4), Some(9));
        assert_eq!(find_from("<</too", "</tool>", 0), None);
        assert_eq!(find_from("abc", "", 0), None);
        assert_eq!(find_from("abc", "c", 9), None);
        // Past the quick hits, the searcher finds it too.
        let many = "<a".repeat(10) + "</tool>";
        assert_eq!(find_from(&many, "</tool>", 0), Some(20));
        assert_eq!(find_from(&many, "</tool>", 21), None);
    }

    // The kept searchers answer as a fresh `memmem::find` does, for more needles than are
    // kept (each evicted and built again), a needle too long to keep, and the empty one.
    #[test]
    fn kept_searchers_find_what_memmem_finds() {
        let hay = "<a><b></t0></tool></t1><tool_call|></t2>".repeat(3);
        let long = "</".to_owned() + &"x".repeat(80);
        let needles: Vec<String> = (0..12)
            .map(|i| format!("</t{i}>"))
            .chain(["</tool>", "<tool_call|>", "", "nope", &long].map(str::to_owned))
            .collect();
        for round in 0..3 {
            for n in &needles {
                for from in [0, 5, 17, 40] {
                    let h = &hay.as_bytes()[from..];
                    assert_eq!(
                        memmem_find(h, n.as_bytes()),
                        memchr::memmem::find(h, n.as_bytes()),
                        "{n:?} from {from}, round {round}"
                    );
                }
            }
        }
    }

    #[test]
    fn scan_from_resumes_across_a_split_tag() {
        let mut s = ScanFrom(0);
        assert_eq!(s.find("abc</to", "</tool>"), None);
        assert_eq!(s.find("abc</tool>", "</tool>"), Some(3));
    }

    // A search resumed push after push (other tags' `<` in the tail skipped) finds the
    // first tag where one search of the whole text does, at every split.
    #[test]
    fn scan_from_in_pushes_finds_what_one_search_finds() {
        let text = "<a><b></to</t<</tool <</tool></tool>";
        for tag in ["</tool>", "<", "</to", "x"] {
            let whole = find_from(text, tag, 0);
            for n in 1..=8 {
                let mut s = ScanFrom(0);
                let mut found = None;
                let mut end = 0;
                while found.is_none() && end < text.len() {
                    end = (end + n).min(text.len());
                    found = s.find(&text[..end], tag);
                }
                assert_eq!(found, whole, "{tag:?} in pushes of {n}");
            }
        }
    }
}
