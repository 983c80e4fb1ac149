//! What a parse returns: visible text, calls, readable diagnostics, and stream events.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::call::{CallId, ToolCall};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// A finding a person can read (F-DIAG-1): what was found or rejected, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    /// Byte span in the parsed text, serialised as `[start, end]`.
    #[serde(with = "span_as_pair")]
    pub span: Range<usize>,
}

impl Diagnostic {
    pub fn new(level: Level, message: impl Into<String>, span: Range<usize>) -> Self {
        Diagnostic {
            level,
            message: message.into(),
            span,
        }
    }
    pub fn info(message: impl Into<String>, span: Range<usize>) -> Self {
        Self::new(Level::Info, message, span)
    }
    pub fn warning(message: impl Into<String>, span: Range<usize>) -> Self {
        Self::new(Level::Warning, message, span)
    }
    pub fn error(message: impl Into<String>, span: Range<usize>) -> Self {
        Self::new(Level::Error, message, span)
    }
}

pub(crate) mod span_as_pair {
    use std::ops::Range;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(span: &Range<usize>, s: S) -> Result<S::Ok, S::Error> {
        [span.start, span.end].serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Range<usize>, D::Error> {
        let [start, end] = <[usize; 2]>::deserialize(d)?;
        Ok(start..end)
    }
}

/// The result of parsing one whole model reply.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Parsed {
    /// The visible reply: model text with call markup and reasoning removed.
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub diagnostics: Vec<Diagnostic>,
    /// Reasoning blocks (`<think>…</think>`), kept apart from text and calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
}

/// One event of an incremental parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Visible reply text.
    Text {
        text: String,
    },
    /// Reasoning text (inside `<think>`), never part of the reply or of calls.
    Reasoning {
        text: String,
    },
    CallStarted {
        index: usize,
        call_id: CallId,
        name: String,
    },
    ArgumentsDelta {
        index: usize,
        fragment: String,
    },
    /// The complete, repaired call: the only event a consumer must act on.
    CallFinished {
        index: usize,
        call: ToolCall,
    },
    Diagnostic {
        diagnostic: Diagnostic,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers F-DIAG-1
    #[test]
    fn diagnostic_span_serialises_as_pair() {
        let d = Diagnostic::warning("dropped", 3..9);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"level":"warning","message":"dropped","span":[3,9]})
        );
        let back: Diagnostic = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }
}
