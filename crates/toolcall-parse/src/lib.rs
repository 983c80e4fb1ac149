//! Finds tool calls in model output, whole or streamed.
//!
//! TEMPORARY SKELETON: the parser issue replaces this file; the public entry points
//! (`ParseOptions`, `parse`, `StreamParser::{new, push, finish}`) keep these signatures.

use std::sync::Arc;

use toolcall_core::{Parsed, Registry, StreamEvent};

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

/// How to parse.
#[derive(Debug, Clone, Default)]
pub struct ParseOptions {
    pub format: FormatSelection,
    /// The registered tools; formats that can misfire on prose accept only these names.
    pub tools: Option<Arc<Registry>>,
}

/// Parses one whole reply: the same as one `push` and a `finish`.
pub fn parse(text: &str, options: &ParseOptions) -> Parsed {
    let _ = options;
    Parsed {
        text: text.to_owned(),
        ..Parsed::default()
    }
}

/// An incremental parser: `push` deltas as they arrive, then `finish`.
pub struct StreamParser {
    _options: ParseOptions,
}

impl StreamParser {
    pub fn new(options: ParseOptions) -> Self {
        StreamParser { _options: options }
    }

    pub fn push(&mut self, delta: &str) -> Vec<StreamEvent> {
        vec![StreamEvent::Text {
            text: delta.to_owned(),
        }]
    }

    pub fn finish(self) -> Vec<StreamEvent> {
        Vec::new()
    }
}
