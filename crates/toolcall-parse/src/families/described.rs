//! Families given as data. What a family knows is mostly tables: its id, description and
//! example, its model-name globs, chat-template markers and reasoning markers, its openers
//! and the reader each opener gets, its text-mode instructions and example writer, its
//! result writer, its decoding constraint. Such a family is one [`Described`] static in its
//! own module (the tables, plus the reader functions that are really its own), and
//! [`Described`] implements [`Family`] once for all of them. Only a family that reads an
//! opener kind the tables do not hold (calls written `name(…)`, line openers, a bare
//! non-JSON region) implements [`Family`] itself.

use serde_json::{Map, Value};

use super::args_object::JsonCallTags;
use super::bare_json::JsonNeeds;
use super::json::CallsDoc;
use super::marked::{CallList, CallListReader, OpenJsonReader};
use super::tags::{Block, BlockReader, BlockStream, StreamTags};
use crate::FormatId;
use crate::builder::{Ctx, Outcome};
use crate::family::{
    BareJson, Family, Instructions, JsonCx, Opening, ReasoningMarker, RegionReader, SuffixedMarker,
    ToolResultText, Untyped, WhenChosen,
};
use crate::shape::Shape;

/// How a described family's regions are read: the openers and the reader each gets.
pub(crate) enum Body {
    /// No opener of its own (provider shapes and other bare JSON, opt-in rules).
    None,
    /// `block.open` … `block.close` holding a JSON `{name, arguments}` object or a list of
    /// them; calls stream as the JSON arrives.
    JsonList(&'static Block),
    /// `block.open` … `block.close` holding text-valued tags, streamed parameter by
    /// parameter as `tags` delimits them.
    Tags(&'static Block, &'static StreamTags),
    /// `block.open` … `block.close` holding calls with JSON arguments in markup, streamed
    /// as `tags` delimits them.
    JsonTags(&'static Block, &'static JsonCallTags),
    /// `block.open` … `block.close` streamed by the family's own [`BlockStream`], made
    /// fresh for each region.
    Live(&'static Block, fn(&Ctx) -> Box<dyn BlockStream>),
    /// `block.open` … `block.close`, read whole when it closes (nothing streams).
    Whole(&'static Block),
    /// `open` … `close` holding Python calls laid out as `layout` (`open` is a one-item
    /// list: it is the family's opener list too).
    Calls {
        open: &'static [&'static str; 1],
        close: &'static str,
        layout: CallList,
    },
    /// `open` followed by a JSON list of calls and no closing marker; the JSON may start
    /// at region offset `from` (`open.len()`, or less when the opener ends with the
    /// list's own `[`).
    OpenJson {
        open: &'static [&'static str; 1],
        from: usize,
    },
    /// Several openers, each read as its one-opener body; built by [`Body::each`], which
    /// checks that `openers[i]` is `bodies[i]`'s opener.
    Each {
        openers: &'static [&'static str],
        bodies: &'static [Body],
    },
    /// Openers read by the family's own [`RegionReader`]; `declines` as
    /// [`Family::declines`] ([`never`] when the reader decides).
    Own {
        openers: &'static [&'static str],
        reader: fn(usize, &Ctx) -> Option<Box<dyn RegionReader>>,
        declines: fn(usize, &str, bool) -> bool,
    },
}

/// A [`Body::Own`] family's `declines` when only its reader decides.
pub(crate) fn never(_opener: usize, _region: &str, _is_final: bool) -> bool {
    false
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Body {
    /// A body of several openers, each read as `bodies[i]`; a mismatch of `openers` and
    /// the bodies' own openers fails the build (the static's initializer panics).
    pub(crate) const fn each(openers: &'static [&'static str], bodies: &'static [Body]) -> Body {
        assert!(openers.len() == bodies.len(), "one body per opener");
        let mut i = 0;
        while i < bodies.len() {
            let ok = match bodies[i].single_opener() {
                Some(open) => same(open, openers[i]),
                None => false,
            };
            assert!(ok, "an opener differs from its body's");
            i += 1;
        }
        Body::Each { openers, bodies }
    }

    /// The one opener of a one-opener body.
    const fn single_opener(&self) -> Option<&'static str> {
        match self {
            Body::JsonList(b)
            | Body::Tags(b, _)
            | Body::JsonTags(b, _)
            | Body::Live(b, _)
            | Body::Whole(b) => Some(b.open),
            Body::Calls { open, .. } | Body::OpenJson { open, .. } => Some(open[0]),
            Body::Own { openers, .. } if openers.len() == 1 => Some(openers[0]),
            _ => None,
        }
    }

    fn openers(&self) -> &'static [&'static str] {
        match *self {
            Body::None => &[],
            Body::JsonList(b)
            | Body::Tags(b, _)
            | Body::JsonTags(b, _)
            | Body::Live(b, _)
            | Body::Whole(b) => std::slice::from_ref(&b.open),
            Body::Calls { open, .. } | Body::OpenJson { open, .. } => open,
            Body::Each { openers, .. } | Body::Own { openers, .. } => openers,
        }
    }

    #[inline]
    fn declines(&self, opener: usize, region: &str, is_final: bool) -> bool {
        match self {
            Body::JsonList(b)
            | Body::Tags(b, _)
            | Body::JsonTags(b, _)
            | Body::Live(b, _)
            | Body::Whole(b) => super::tags::block_declines(b, region, is_final),
            Body::Each { bodies, .. } => bodies
                .get(opener)
                .is_some_and(|b| b.declines(0, region, is_final)),
            Body::Own { declines, .. } => declines(opener, region, is_final),
            Body::OpenJson { from, .. } => {
                super::marked::open_json_declines(*from, region, is_final)
            }
            Body::Calls { open, layout, .. } => {
                super::marked::call_list_declines(open[0].len(), *layout, region, is_final)
            }
            Body::None => false,
        }
    }

    /// The reader of a block body (`None` for the other bodies).
    fn block_reader(&self, ctx: &Ctx) -> Option<BlockReader> {
        let max_depth = ctx.limits.max_depth;
        Some(match self {
            Body::JsonList(b) => BlockReader::new(b).streaming_list(),
            Body::Tags(b, tags) => BlockReader::new(b).streaming(tags),
            Body::JsonTags(b, tags) => BlockReader::new(b).streaming_json(tags, max_depth),
            Body::Live(b, live) => BlockReader::new(b).streaming_from(*live, ctx),
            Body::Whole(b) => BlockReader::new(b),
            _ => return None,
        })
    }

    /// [`crate::family::Family::open_region`]: a block's lead is read once, for declining
    /// the region and for its reader.
    fn open_region(
        &self,
        id: FormatId,
        opener: usize,
        region: &str,
        is_final: bool,
        ctx: &Ctx,
    ) -> Option<Option<Box<dyn RegionReader>>> {
        match self {
            Body::JsonList(b)
            | Body::Tags(b, _)
            | Body::JsonTags(b, _)
            | Body::Live(b, _)
            | Body::Whole(b) => {
                let mine = super::tags::lead_verdict(b, region, is_final)?;
                let reader = self.block_reader(ctx)?;
                let reader: Box<dyn RegionReader> = if mine {
                    Box::new(reader.lead_read_mine())
                } else {
                    Box::new(reader.lead_read_more(region.len()))
                };
                Some(Some(reader))
            }
            Body::Each { bodies, .. } => match bodies.get(opener) {
                Some(b) => b.open_region(id, 0, region, is_final, ctx),
                None => Some(None),
            },
            _ => (!self.declines(opener, region, is_final)).then(|| self.reader(id, opener, ctx)),
        }
    }

    /// [`crate::family::Family::opening`]: an own body's decline test is its function.
    fn opening(&self, opener: usize) -> Opening {
        match self {
            Body::Own { declines, .. } => Opening::Declines {
                declines: *declines,
                opener,
            },
            Body::Each { bodies, .. } => {
                bodies.get(opener).map_or(Opening::Region, |b| b.opening(0))
            }
            _ => Opening::Region,
        }
    }

    fn reader(&self, id: FormatId, opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        if let Some(reader) = self.block_reader(ctx) {
            return Some(Box::new(reader));
        }
        let max_depth = ctx.limits.max_depth;
        Some(match self {
            Body::None
            | Body::JsonList(_)
            | Body::Tags(..)
            | Body::JsonTags(..)
            | Body::Live(..)
            | Body::Whole(_) => return None,
            Body::Calls {
                open,
                close,
                layout,
            } => Box::new(CallListReader::new(id, open[0], close, *layout)),
            Body::OpenJson { from, .. } => Box::new(OpenJsonReader::new(id, *from, max_depth)),
            Body::Each { bodies, .. } => return bodies.get(opener)?.reader(id, 0, ctx),
            Body::Own { reader, .. } => return reader(opener, ctx),
        })
    }
}

/// Bare JSON a family claims ([`Family::bare_json`]) and how it reads a decoded value as
/// the family `FormatId` ([`Family::classify_json`]).
/// A family's classifier of call objects decoded typed ([`Bare::calls`]).
pub(crate) type ClassifyCalls = fn(&mut CallsDoc, &JsonCx<'_>, FormatId) -> Option<Outcome>;

pub(crate) struct Bare {
    pub objects: bool,
    pub arrays: bool,
    pub classify: fn(&mut Value, &JsonCx<'_>, FormatId) -> Option<Outcome>,
    /// What `classify` answers for a value decoded as call objects (`doc.into_value()`),
    /// read without the `Value` ([`crate::family::Family::classify_calls`]); `None`: the
    /// value is built for `classify`.
    pub calls: Option<ClassifyCalls>,
    /// The keys without which `classify` claims no value ([`Family::json_needs`]).
    pub needs: JsonNeeds,
}

/// An opener the chat template writes at the end of its generation prompt
/// ([`Family::implied_opener`], [`Family::continues_implied`]).
pub(crate) struct Implied {
    pub opener: &'static str,
    pub continues: fn(&str, bool) -> Option<bool>,
}

/// Writes one call in a family's syntax (text mode's worked example).
pub(crate) type ExampleCall = fn(&str, &Map<String, Value>) -> String;

/// One family given as data (see the module doc). A static lists what its family has and
/// takes the rest from [`Described::BASE`] (`..Described::BASE`).
pub(crate) struct Described {
    pub id: FormatId,
    /// `toolcall formats`' description.
    pub description: &'static str,
    /// One line that parses to a call of this family (`\n` written as `\\n`).
    pub example: &'static str,
    /// Its openers and how each region is read.
    pub body: Body,
    /// Bare JSON it claims, and how it reads a decoded value.
    pub bare: Option<Bare>,
    /// Model-name globs ([`crate::model_family`]).
    pub model_names: &'static [&'static str],
    /// Markers its chat template writes, all of them ([`crate::detect_template`]).
    pub template_markers: &'static [&'static str],
    /// Why it has no model names, template markers or fixtures ([`Family::generic_because`]).
    pub generic_because: Option<&'static str>,
    /// Reasoning blocks its models write besides `<think>`.
    pub reasoning: &'static [ReasoningMarker],
    /// Openers that end a reasoning block left open ([`Family::ends_reasoning`]).
    pub ends_reasoning: &'static [&'static str],
    /// Reasoning blocks with a per-checkpoint suffix ([`Family::suffixed_reasoning`]).
    pub suffixed_reasoning: &'static [SuffixedMarker],
    /// Tag starts followed by a per-checkpoint suffix ([`Family::suffixed_tags`]).
    pub suffixed_tags: &'static [&'static str],
    /// What becomes of calls written inside reasoning ([`Family::reasoning_calls`]).
    pub reasoning_calls: crate::ReasoningCalls,
    /// Control tokens removed from the visible text ([`Family::strip`]).
    pub strip: &'static [&'static str],
    /// Markup read only when the family is chosen ([`Family::when_chosen`]).
    pub when_chosen: &'static WhenChosen,
    /// Families its models also write ([`Family::also_written`]).
    pub also_written: &'static [&'static str],
    /// An opener its generation prompt ends with ([`Family::implied_opener`]).
    pub implied: Option<Implied>,
    /// A native provider shape ([`Family::native`]).
    pub native: bool,
    /// Text-mode instructions; `None`: not offered as a text format.
    pub instructions: Option<Instructions>,
    /// One call in its syntax (text mode's worked example).
    pub example_call: Option<ExampleCall>,
    /// Tool results as its chat template renders them ([`Family::write_results`]).
    pub write_results: fn(&[ToolResultText<'_>]) -> String,
    /// Its call markup as data, for decoding constraints ([`Family::constraint_shape`]).
    pub constraint: Option<&'static Shape>,
    /// How a text value the schema does not type is read ([`Family::untyped`]).
    pub untyped: Untyped,
    /// How parameters are held to the schema ([`Family::schema_rules`]).
    pub schema_rules: Option<&'static super::schema_rules::SchemaRules>,
    /// Positions after a declined region's start declined too ([`Family::declined_run`]).
    pub declined_run: Option<fn(usize, &str) -> usize>,
    /// Openers whose region is declined when the same opener follows it directly
    /// ([`Family::declines_repeated`]).
    pub repeats_declined: &'static [&'static str],
    /// Regions removed without a reader ([`Family::removes`]).
    pub removes: Option<crate::family::Removes>,
}

impl Described {
    /// What a family has when its static does not say: the [`Family`] trait's defaults
    /// (no id: every static gives its own, and the registry tests check them).
    pub(crate) const BASE: Described = Described {
        id: FormatId::builtin(""),
        description: "",
        example: "",
        body: Body::None,
        bare: None,
        model_names: &[],
        template_markers: &[],
        generic_because: None,
        reasoning: &[],
        ends_reasoning: &[],
        suffixed_reasoning: &[],
        suffixed_tags: &[],
        reasoning_calls: crate::ReasoningCalls::Ignore,
        strip: &[],
        when_chosen: &WhenChosen::NONE,
        also_written: &[],
        implied: None,
        native: false,
        instructions: None,
        example_call: None,
        write_results: crate::results::tool_response_blocks,
        constraint: None,
        untyped: Untyped::Text,
        schema_rules: None,
        declined_run: None,
        repeats_declined: &[],
        removes: None,
    };
}

impl Family for Described {
    fn id(&self) -> &'static str {
        self.id.as_str()
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn example(&self) -> &'static str {
        self.example
    }
    fn openers(&self) -> &'static [&'static str] {
        self.body.openers()
    }
    fn declines(&self, opener: usize, region: &str, is_final: bool) -> bool {
        self.body.declines(opener, region, is_final)
    }
    fn reader(&self, opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        self.body.reader(self.id, opener, ctx)
    }
    fn open_region(
        &self,
        opener: usize,
        region: &str,
        is_final: bool,
        ctx: &Ctx,
    ) -> Option<Option<Box<dyn RegionReader>>> {
        self.body
            .open_region(self.id, opener, region, is_final, ctx)
    }
    fn opening(&self, opener: usize) -> Opening {
        self.body.opening(opener)
    }
    fn declined_run(&self, opener: usize, region: &str) -> usize {
        self.declined_run.map_or(0, |run| run(opener, region))
    }
    fn has_declined_run(&self) -> bool {
        self.declined_run.is_some()
    }
    fn removes(&self) -> Option<crate::family::Removes> {
        self.removes
    }
    fn declines_repeated(&self, opener: usize) -> bool {
        self.body
            .openers()
            .get(opener)
            .is_some_and(|o| self.repeats_declined.contains(o))
    }
    fn bare_json(&self) -> BareJson {
        self.bare
            .as_ref()
            .map_or_else(BareJson::default, |b| BareJson {
                objects: b.objects,
                arrays: b.arrays,
            })
    }
    fn json_needs(&self) -> JsonNeeds {
        self.bare.as_ref().map_or(JsonNeeds::NONE, |b| b.needs)
    }
    fn classify_json(&self, v: &mut Value, cx: &JsonCx<'_>) -> Option<Outcome> {
        (self.bare.as_ref()?.classify)(v, cx, self.id)
    }
    fn classify_calls(&self, doc: &mut CallsDoc, cx: &JsonCx<'_>) -> Option<Option<Outcome>> {
        match &self.bare {
            // `classify_json` declines every value.
            None => Some(None),
            Some(b) => b.calls.map(|calls| calls(doc, cx, self.id)),
        }
    }
    fn model_names(&self) -> &'static [&'static str] {
        self.model_names
    }
    fn template_markers(&self) -> &'static [&'static str] {
        self.template_markers
    }
    fn generic_because(&self) -> Option<&'static str> {
        self.generic_because
    }
    fn reasoning(&self) -> &'static [ReasoningMarker] {
        self.reasoning
    }
    fn ends_reasoning(&self) -> &'static [&'static str] {
        self.ends_reasoning
    }
    fn suffixed_reasoning(&self) -> &'static [SuffixedMarker] {
        self.suffixed_reasoning
    }
    fn suffixed_tags(&self) -> &'static [&'static str] {
        self.suffixed_tags
    }
    fn reasoning_calls(&self) -> crate::ReasoningCalls {
        self.reasoning_calls
    }
    fn strip(&self) -> &'static [&'static str] {
        self.strip
    }
    fn when_chosen(&self) -> &'static WhenChosen {
        self.when_chosen
    }
    fn also_written(&self) -> &'static [&'static str] {
        self.also_written
    }
    fn implied_opener(&self) -> Option<&'static str> {
        self.implied.as_ref().map(|i| i.opener)
    }
    fn continues_implied(&self, start: &str, is_final: bool) -> Option<bool> {
        match &self.implied {
            Some(i) => (i.continues)(start, is_final),
            None => Some(false),
        }
    }
    fn native(&self) -> bool {
        self.native
    }
    fn instructions(&self) -> Option<Instructions> {
        self.instructions
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some((self.example_call?)(name, args))
    }
    fn write_results(&self, results: &[ToolResultText<'_>]) -> String {
        (self.write_results)(results)
    }
    fn constraint_shape(&self) -> Option<&'static Shape> {
        self.constraint
    }
    fn untyped(&self) -> Untyped {
        self.untyped
    }
    fn schema_rules(&self) -> Option<&'static super::schema_rules::SchemaRules> {
        self.schema_rules
    }
}
