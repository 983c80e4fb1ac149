//! Families given as data: a family whose markup is one opener around a body one of the
//! shared readers reads differs from its siblings only in tables (its markers, its reader,
//! its names and templates, its text-mode instructions). Such a family is one
//! [`Described`] static in its own module, and [`Described`] implements [`Family`] once
//! for all of them. A family with a reader of its own implements [`Family`] itself.

use serde_json::{Map, Value};

use super::marked::{CallList, CallListReader, OpenJsonReader};
use super::tags::{Block, BlockReader, StreamTags};
use crate::FormatId;
use crate::builder::Ctx;
use crate::family::{Family, Instructions, ReasoningMarker, RegionReader, Untyped, WhenChosen};
use crate::shape::Shape;

/// How a described family's region is read.
pub(crate) enum Body {
    /// `block.open` … `block.close` holding a JSON `{name, arguments}` object or a list of
    /// them; calls stream as the JSON arrives.
    JsonList(&'static Block),
    /// `block.open` … `block.close` holding text-valued tags, streamed parameter by
    /// parameter as `tags` delimits them.
    Tags(&'static Block, &'static StreamTags),
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
}

/// One family given as data (see the module doc).
pub(crate) struct Described {
    pub id: FormatId,
    /// `toolcall formats`' description.
    pub description: &'static str,
    /// One line that parses to a call of this family (`\n` written as `\\n`).
    pub example: &'static str,
    pub body: Body,
    /// Reasoning blocks its models write besides `<think>`.
    pub reasoning: &'static [ReasoningMarker],
    /// Model-name globs ([`crate::model_family`]).
    pub model_names: &'static [&'static str],
    /// Markers its chat template writes, all of them ([`crate::detect_template`]).
    pub template_markers: &'static [&'static str],
    pub instructions: Instructions,
    /// One call in its syntax (text mode's worked example).
    pub example_call: fn(&str, &Map<String, Value>) -> String,
    /// Its call markup as data, for decoding constraints ([`Family::constraint_shape`]).
    pub constraint: Option<&'static Shape>,
    /// How a text value the schema does not type is read ([`Family::untyped`]).
    pub untyped: Untyped,
    /// Markup read only when the family is chosen ([`Family::when_chosen`]).
    pub when_chosen: &'static WhenChosen,
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
        match &self.body {
            Body::JsonList(b) | Body::Tags(b, _) => std::slice::from_ref(&b.open),
            Body::Calls { open, .. } | Body::OpenJson { open, .. } => *open,
        }
    }
    fn declines(&self, _opener: usize, region: &str, is_final: bool) -> bool {
        match &self.body {
            Body::JsonList(block) | Body::Tags(block, _) => {
                super::tags::block_declines(block, region, is_final)
            }
            Body::Calls { .. } | Body::OpenJson { .. } => false,
        }
    }
    fn reader(&self, _opener: usize, ctx: &Ctx) -> Option<Box<dyn RegionReader>> {
        let max_depth = ctx.limits.max_depth;
        Some(match &self.body {
            Body::JsonList(block) => Box::new(BlockReader::new(block).streaming_list(max_depth)),
            Body::Tags(block, tags) => Box::new(BlockReader::new(block).streaming(tags)),
            Body::Calls {
                open,
                close,
                layout,
            } => Box::new(CallListReader::new(self.id, open[0], close, *layout)),
            Body::OpenJson { from, .. } => Box::new(OpenJsonReader::new(self.id, *from, max_depth)),
        })
    }
    fn reasoning(&self) -> &'static [ReasoningMarker] {
        self.reasoning
    }
    fn model_names(&self) -> &'static [&'static str] {
        self.model_names
    }
    fn template_markers(&self) -> &'static [&'static str] {
        self.template_markers
    }
    fn instructions(&self) -> Option<Instructions> {
        Some(self.instructions)
    }
    fn example_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some((self.example_call)(name, args))
    }
    fn constraint_shape(&self) -> Option<&'static Shape> {
        self.constraint
    }
    fn untyped(&self) -> Untyped {
        self.untyped
    }
    fn when_chosen(&self) -> &'static WhenChosen {
        self.when_chosen
    }
}
