//! What a turn does, told as it happens: the events the agent loop produces.
//!
//! One turn of [`crate::Agent`] is a sequence of [`AgentEvent`]s:
//!
//! ```text
//! TurnStarted
//!   RoundStarted(1)  TextDelta*  ReplyParsed
//!     CallParsed  CallValidated  CallStarted  CallCompleted | CallFailed     (per call)
//!     JobDelivered*                                                          (jobs that finished)
//!   RoundFinished(1)
//!   RoundStarted(2) ...
//! TurnFinished
//! ```
//!
//! and [`AgentEvent::MessageAdded`] whenever a message joins the conversation (the system
//! prompt, the user's input, each reply, the results), so that a consumer can keep the
//! conversation itself: the session archive does ([`crate::archive::recorder`]).
//!
//! Every consumer reads the same events: a library user or `toolcall run`'s printer through
//! [`crate::Agent::run_turn_stream`], or any number of observers attached with
//! [`crate::Agent::add_observer`] (the gateway's progress events, the inspector). Events carry what the agent saw, secrets included, because they stay in the
//! process; a consumer that shows or stores them calls [`AgentEvent::redacted`] first.
//!
//! On the wire (JSON) an event is an object tagged by `"event"`, e.g.
//! `{"event":"call_completed","round":1,"call_id":"call_1","name":"move_player",
//! "result":{"status":"ok","data":...},"duration_ms":3}`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolcall_core::{CallId, Diagnostic, ToolCall, ToolError, ToolResult};

use crate::agent::TurnReport;
use crate::client::Message;
use crate::redact::{redact, redact_call_text};

/// One thing that happened during a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A user turn began.
    TurnStarted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        input: String,
    },
    /// A model request is about to be sent. `tools` names the tools it offers natively
    /// (empty in text mode and for the final, tool-free request, where `final_request`).
    RoundStarted {
        round: usize,
        tools: Vec<String>,
        #[serde(default)]
        final_request: bool,
    },
    /// Visible reply text as it arrives: from a streaming client, piece by piece as the
    /// model writes it; from a whole-reply client, one delta per reply. In text and auto
    /// mode the call markup and reasoning are not part of it (the streaming parser's text).
    /// A round's deltas never restart: once one was told, a failed request is not retried
    /// but ends the turn with the error (see [`crate::agent`]).
    TextDelta { round: usize, text: String },
    /// The reply was read: the raw text the calls' spans point into (text-format replies;
    /// secret argument values masked with `*` of the same byte length, so the spans hold),
    /// the parser's findings and the reasoning blocks.
    ReplyParsed {
        round: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
        calls: usize,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        diagnostics: Vec<Diagnostic>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<String>,
    },
    /// A call was found; `call.origin` has its format, byte span and repairs.
    CallParsed { round: usize, call: ToolCall },
    /// A call was checked against its tool: `call` is as it will run (coerced, repairs
    /// recorded); `error` says why it will not (unknown, disabled, invalid, denied).
    CallValidated {
        round: usize,
        call: ToolCall,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
    },
    /// A validated call's tool is running.
    CallStarted {
        round: usize,
        call_id: CallId,
        name: String,
    },
    /// A call answered. `result` is what the model receives (`{"status":"ok","data":..}`);
    /// for a job tool it is the `{"job_id","state":"running"}` acknowledgement and the
    /// outcome follows as [`AgentEvent::JobDelivered`].
    CallCompleted {
        round: usize,
        call_id: CallId,
        name: String,
        result: Value,
        duration_ms: u64,
        #[serde(default)]
        job: bool,
    },
    /// A call failed (rejected before running, or the tool failed, timed out, panicked or
    /// was cancelled); the model receives `{"error": error}`.
    CallFailed {
        round: usize,
        call_id: CallId,
        name: String,
        error: ToolError,
        duration_ms: u64,
    },
    /// A job's result reached the conversation under its call's `call_id`.
    JobDelivered {
        round: usize,
        call_id: CallId,
        name: String,
        result: Value,
        duration_ms: u64,
    },
    /// A message joined the conversation (and is sent with the next request).
    /// `text_calls` are the calls found in a text-format reply's text, whose argument
    /// values [`AgentEvent::redacted`] hides in that text.
    MessageAdded {
        message: Message,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        text_calls: Vec<ToolCall>,
    },
    /// A round's calls all ran and their results joined the conversation (pack states are
    /// saved now).
    RoundFinished { round: usize },
    /// The turn ended; the report holds everything the events told.
    TurnFinished { report: Box<TurnReport> },
}

impl AgentEvent {
    /// The name of the event (its JSON tag), e.g. `call_completed`.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::TurnStarted { .. } => "turn_started",
            AgentEvent::RoundStarted { .. } => "round_started",
            AgentEvent::TextDelta { .. } => "text_delta",
            AgentEvent::ReplyParsed { .. } => "reply_parsed",
            AgentEvent::CallParsed { .. } => "call_parsed",
            AgentEvent::CallValidated { .. } => "call_validated",
            AgentEvent::CallStarted { .. } => "call_started",
            AgentEvent::CallCompleted { .. } => "call_completed",
            AgentEvent::CallFailed { .. } => "call_failed",
            AgentEvent::JobDelivered { .. } => "job_delivered",
            AgentEvent::MessageAdded { .. } => "message_added",
            AgentEvent::RoundFinished { .. } => "round_finished",
            AgentEvent::TurnFinished { .. } => "turn_finished",
        }
    }

    /// The call an event is about, if any.
    pub fn call_id(&self) -> Option<&CallId> {
        match self {
            AgentEvent::CallParsed { call, .. } | AgentEvent::CallValidated { call, .. } => {
                Some(&call.call_id)
            }
            AgentEvent::CallStarted { call_id, .. }
            | AgentEvent::CallCompleted { call_id, .. }
            | AgentEvent::CallFailed { call_id, .. }
            | AgentEvent::JobDelivered { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// The result a call's answer event tells ([`AgentEvent::CallCompleted`],
    /// [`AgentEvent::CallFailed`], [`AgentEvent::JobDelivered`]), as the turn report holds it.
    pub fn tool_result(&self) -> Option<ToolResult> {
        match self {
            AgentEvent::CallCompleted {
                call_id,
                name,
                result,
                ..
            }
            | AgentEvent::JobDelivered {
                call_id,
                name,
                result,
                ..
            } => {
                let body = result.as_object()?;
                crate::agent::results_json::from_json(call_id.clone(), name.clone(), body).ok()
            }
            AgentEvent::CallFailed {
                call_id,
                name,
                error,
                ..
            } => Some(ToolResult::err(
                call_id.clone(),
                name.clone(),
                error.clone(),
            )),
            _ => None,
        }
    }

    /// The event with secrets redacted (X-7) in arguments, results and error details, as
    /// the archive stores them: for consumers that show, log or send events elsewhere.
    pub fn redacted(&self) -> AgentEvent {
        let call = |c: &ToolCall| ToolCall {
            arguments: redact(&c.arguments),
            ..c.clone()
        };
        let error = |e: &ToolError| ToolError {
            details: e.details.as_ref().map(redact),
            ..e.clone()
        };
        match self {
            AgentEvent::CallParsed { round, call: c } => AgentEvent::CallParsed {
                round: *round,
                call: call(c),
            },
            AgentEvent::CallValidated {
                round,
                call: c,
                error: e,
            } => AgentEvent::CallValidated {
                round: *round,
                call: call(c),
                error: e.as_ref().map(error),
            },
            AgentEvent::CallCompleted {
                round,
                call_id,
                name,
                result,
                duration_ms,
                job,
            } => AgentEvent::CallCompleted {
                round: *round,
                call_id: call_id.clone(),
                name: name.clone(),
                result: redact(result),
                duration_ms: *duration_ms,
                job: *job,
            },
            AgentEvent::CallFailed {
                round,
                call_id,
                name,
                error: e,
                duration_ms,
            } => AgentEvent::CallFailed {
                round: *round,
                call_id: call_id.clone(),
                name: name.clone(),
                error: error(e),
                duration_ms: *duration_ms,
            },
            AgentEvent::JobDelivered {
                round,
                call_id,
                name,
                result,
                duration_ms,
            } => AgentEvent::JobDelivered {
                round: *round,
                call_id: call_id.clone(),
                name: name.clone(),
                result: redact(result),
                duration_ms: *duration_ms,
            },
            AgentEvent::MessageAdded {
                message,
                text_calls,
            } => AgentEvent::MessageAdded {
                message: redact_message(message, text_calls),
                text_calls: text_calls.iter().map(call).collect(),
            },
            AgentEvent::TurnFinished { report } => {
                let mut report = report.clone();
                for round in &mut report.rounds {
                    for c in &mut round.calls {
                        c.arguments = redact(&c.arguments);
                    }
                    for r in round.results.iter_mut().chain(&mut round.job_results) {
                        redact_result(r);
                    }
                }
                AgentEvent::TurnFinished { report }
            }
            other => other.clone(),
        }
    }
}

/// A message as the archive stores it: call arguments and results redacted, and in a
/// text-format reply the secret values of the calls written in it.
pub(crate) fn redact_message(message: &Message, text_calls: &[ToolCall]) -> Message {
    let mut m = message.clone();
    match &mut m {
        Message::System { .. } | Message::User { .. } => {}
        Message::Assistant { text, calls } => {
            for c in calls.iter_mut() {
                c.arguments = redact(&c.arguments);
            }
            if !text_calls.is_empty()
                && let Some(t) = text
            {
                *t = redact_call_text(t, text_calls);
            }
        }
        Message::Tool { content, .. } | Message::JobResult { content, .. } => {
            *content = redact(content);
        }
        Message::TextResults { results } => {
            for r in results.iter_mut() {
                r.content = redact(&r.content);
            }
        }
    }
    m
}

fn redact_result(r: &mut toolcall_core::ToolResult) {
    match &mut r.outcome {
        Ok(out) => {
            out.data = redact(&out.data);
            if let Value::Object(m) = redact(&Value::Object(std::mem::take(&mut out.metadata))) {
                out.metadata = m;
            }
        }
        Err(e) => e.details = e.details.as_ref().map(redact),
    }
}

/// A consumer of events attached to an agent for all its turns (see
/// [`crate::Agent::add_observer`]). It runs on the agent's task, between steps of the
/// loop: it must return quickly (hand slow work to a channel or a task).
pub type Observer = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::ErrorCode;

    #[test]
    fn events_are_tagged_by_kind_on_the_wire() {
        let e = AgentEvent::CallCompleted {
            round: 1,
            call_id: "call_1".into(),
            name: "move_player".into(),
            result: json!({"status": "ok", "data": 1}),
            duration_ms: 3,
            job: false,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["event"], json!(e.kind()));
        assert_eq!(v["call_id"], json!("call_1"));
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.call_id().map(CallId::as_str), Some("call_1"));
    }

    #[test]
    fn answer_events_give_back_the_result_the_report_holds() {
        let mut ok = ToolResult::ok("c1".into(), "t", json!({"x": 1}));
        if let Ok(out) = &mut ok.outcome {
            out.metadata.insert("context_id".into(), json!("k"));
        }
        let done = AgentEvent::CallCompleted {
            round: 1,
            call_id: "c1".into(),
            name: "t".into(),
            result: ok.to_json(),
            duration_ms: 1,
            job: false,
        };
        assert_eq!(done.tool_result(), Some(ok));
        let error = ToolError::new(ErrorCode::Timeout, "slow");
        let failed = AgentEvent::CallFailed {
            round: 1,
            call_id: "c2".into(),
            name: "u".into(),
            error: error.clone(),
            duration_ms: 1,
        };
        assert_eq!(
            failed.tool_result(),
            Some(ToolResult::err("c2".into(), "u", error))
        );
        assert_eq!(AgentEvent::RoundFinished { round: 1 }.tool_result(), None);
    }

    // covers X-7
    #[test]
    fn redacted_hides_secrets_in_arguments_results_and_error_details() {
        let call = ToolCall::new("login", json!({"user": "ann", "password": "hunter2"}), "x");
        let parsed = AgentEvent::CallParsed { round: 1, call }.redacted();
        let AgentEvent::CallParsed { call, .. } = parsed else {
            panic!("kind changed")
        };
        assert_eq!(
            call.arguments,
            json!({"user": "ann", "password": "[REDACTED]"})
        );

        let done = AgentEvent::CallCompleted {
            round: 1,
            call_id: "c".into(),
            name: "t".into(),
            result: json!({"status": "ok", "data": {"token": "abc"}}),
            duration_ms: 0,
            job: false,
        }
        .redacted();
        let v = serde_json::to_value(done).unwrap();
        assert_eq!(v["result"]["data"]["token"], json!("[REDACTED]"));

        let mut err = ToolError::new(ErrorCode::ToolFailed, "no");
        err.details = Some(json!({"api_key": "k"}));
        let failed = AgentEvent::CallFailed {
            round: 1,
            call_id: "c".into(),
            name: "t".into(),
            error: err,
            duration_ms: 0,
        }
        .redacted();
        let v = serde_json::to_value(failed).unwrap();
        assert_eq!(v["error"]["details"]["api_key"], json!("[REDACTED]"));
    }
}
