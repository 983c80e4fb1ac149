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

/// One event of an incremental parse, borrowed: what [`StreamEvent`] says, with its text,
/// reasoning, name and argument fragment as views into buffers the parser owns and reuses
/// from push to push (`toolcall_parse::StreamParser::push_events`), so that a streamed reply
/// allocates nothing for them. A finished call and a diagnostic are handed out by move: they
/// are what a caller keeps. [`Event::into_owned`] (or `From`) gives the owned event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// Visible reply text.
    Text {
        text: &'a str,
    },
    /// Reasoning text (inside `<think>`), never part of the reply or of calls.
    Reasoning {
        text: &'a str,
    },
    CallStarted {
        index: usize,
        call_id: &'a CallId,
        name: &'a str,
    },
    ArgumentsDelta {
        index: usize,
        fragment: &'a str,
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

impl Event<'_> {
    /// The owned [`StreamEvent`] saying the same (its text copied).
    pub fn into_owned(self) -> StreamEvent {
        match self {
            Event::Text { text } => StreamEvent::Text {
                text: text.to_owned(),
            },
            Event::Reasoning { text } => StreamEvent::Reasoning {
                text: text.to_owned(),
            },
            Event::CallStarted {
                index,
                call_id,
                name,
            } => StreamEvent::CallStarted {
                index,
                call_id: call_id.clone(),
                name: name.to_owned(),
            },
            Event::ArgumentsDelta { index, fragment } => StreamEvent::ArgumentsDelta {
                index,
                fragment: fragment.to_owned(),
            },
            Event::CallFinished { index, call } => StreamEvent::CallFinished { index, call },
            Event::Diagnostic { diagnostic } => StreamEvent::Diagnostic { diagnostic },
        }
    }
}

impl From<Event<'_>> for StreamEvent {
    fn from(e: Event<'_>) -> Self {
        e.into_owned()
    }
}

impl<'a> From<&'a StreamEvent> for Event<'a> {
    /// A view of an owned event (its call and diagnostic cloned).
    fn from(e: &'a StreamEvent) -> Self {
        match e {
            StreamEvent::Text { text } => Event::Text { text },
            StreamEvent::Reasoning { text } => Event::Reasoning { text },
            StreamEvent::CallStarted {
                index,
                call_id,
                name,
            } => Event::CallStarted {
                index: *index,
                call_id,
                name,
            },
            StreamEvent::ArgumentsDelta { index, fragment } => Event::ArgumentsDelta {
                index: *index,
                fragment,
            },
            StreamEvent::CallFinished { index, call } => Event::CallFinished {
                index: *index,
                call: call.clone(),
            },
            StreamEvent::Diagnostic { diagnostic } => Event::Diagnostic {
                diagnostic: diagnostic.clone(),
            },
        }
    }
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

    #[test]
    fn event_views_convert_to_the_owned_events_and_back() {
        let call = ToolCall::new(
            "get_weather",
            serde_json::json!({"city": "Paris"}),
            "hermes",
        );
        let owned = vec![
            StreamEvent::Text { text: "hi".into() },
            StreamEvent::Reasoning { text: "hm".into() },
            StreamEvent::CallStarted {
                index: 0,
                call_id: call.call_id.clone(),
                name: "get_weather".into(),
            },
            StreamEvent::ArgumentsDelta {
                index: 0,
                fragment: "{}".into(),
            },
            StreamEvent::CallFinished { index: 0, call },
            StreamEvent::Diagnostic {
                diagnostic: Diagnostic::info("found", 1..2),
            },
        ];
        for e in &owned {
            let view = Event::from(e);
            assert_eq!(&StreamEvent::from(view.clone()), e);
            assert_eq!(&view.into_owned(), e);
        }
    }
}
