//! The live view's memory: every recent call by `call_id`, updated from agent events and
//! pushed to every open page.
//!
//! Agents report to the hub through [`Hub::observer`]; pages read [`Hub::calls`] when they
//! render and [`Hub::subscribe`] for what changes afterwards. Everything kept is bounded:
//! the last [`MAX_CALLS`] calls, arguments and results cut to [`MAX_VALUE_BYTES`] of JSON,
//! at most [`MAX_DIAGNOSTICS`] diagnostics per call, and a window of the raw reply around
//! each call's span. Events are redacted before anything is kept or sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;
use toolcall_core::{Diagnostic, Repair, ToolCall};
use toolcall_run::{AgentEvent, Observer};

/// Calls kept for the live view.
pub const MAX_CALLS: usize = 200;
/// Serialised size above which an argument or result value is shown cut.
pub const MAX_VALUE_BYTES: usize = 16 * 1024;
/// Diagnostics kept per call.
pub const MAX_DIAGNOSTICS: usize = 20;
/// Bytes of raw reply kept on each side of a call's span.
pub const EXCERPT_CONTEXT: usize = 400;
/// Bytes of the call's own span kept.
pub const EXCERPT_CALL: usize = 4096;
/// Updates a slow page may fall behind before it is told to reload.
const CHANNEL_CAPACITY: usize = 256;

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Parsed,
    Validated,
    Running,
    Ok,
    Failed,
    Cancelled,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Parsed => "parsed",
            CallStatus::Validated => "validated",
            CallStatus::Running => "running",
            CallStatus::Ok => "ok",
            CallStatus::Failed => "failed",
            CallStatus::Cancelled => "cancelled",
        }
    }
}

/// The model's raw reply around a call: the call's own bytes are `call`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Excerpt {
    pub before: String,
    pub call: String,
    pub after: String,
    /// The call's byte span in the whole reply.
    pub span: [usize; 2],
}

/// One call as the live view shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveCall {
    pub session_id: Option<String>,
    pub round: usize,
    pub call_id: String,
    pub tool: String,
    /// How the call arrived: the model format (`hermes`, `openai_chat`, ...), or a slash
    /// command / mention route; `job` is set apart.
    pub surface: String,
    pub job: bool,
    pub status: CallStatus,
    pub duration_ms: Option<u64>,
    pub arguments: Value,
    pub result: Option<Value>,
    pub repairs: Vec<Repair>,
    pub diagnostics: Vec<Diagnostic>,
    pub excerpt: Option<Excerpt>,
    /// The replica that ran the call, when it is not this one (read from a shared archive,
    /// see [`crate::follow`]); `None` for this replica's own calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
}

/// A change pushed to open pages.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Update {
    /// A call appeared or changed.
    Call { call: Box<LiveCall> },
    /// A turn began or ended, or the reply text grew.
    Turn {
        session_id: Option<String>,
        event: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

#[derive(Default)]
struct State {
    calls: VecDeque<LiveCall>,
}

impl State {
    fn find(&mut self, session: &Option<String>, call_id: &str) -> Option<&mut LiveCall> {
        // Newest first: ids repeat across turns of long sessions.
        self.calls
            .iter_mut()
            .rev()
            .find(|c| c.call_id == call_id && &c.session_id == session)
    }
}

/// The live calls of every agent reporting here.
pub struct Hub {
    state: Mutex<State>,
    updates: broadcast::Sender<Arc<Update>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            state: Mutex::default(),
            updates: broadcast::channel(CHANNEL_CAPACITY).0,
        }
    }
}

impl Hub {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The recent calls, oldest first.
    pub fn calls(&self) -> Vec<LiveCall> {
        self.state
            .lock()
            .map(|s| s.calls.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Update>> {
        self.updates.subscribe()
    }

    /// An observer for one agent: it remembers the agent's session and its last raw reply
    /// (for excerpts) between events.
    pub fn observer(self: &Arc<Self>) -> Observer {
        let hub = self.clone();
        let local = Mutex::new(AgentState::default());
        Arc::new(move |event: &AgentEvent| {
            if let Ok(mut local) = local.lock() {
                hub.record(&mut local, event);
            }
        })
    }

    fn publish(&self, update: Update) {
        // No page open is not an error.
        let _ = self.updates.send(Arc::new(update));
    }

    fn record(&self, agent: &mut AgentState, event: &AgentEvent) {
        let event = event.redacted();
        match &event {
            AgentEvent::TurnStarted { session_id, .. } => {
                agent.session = session_id.clone();
                agent.raw = None;
                self.publish(Update::Turn {
                    session_id: agent.session.clone(),
                    event: "turn_started",
                    text: None,
                });
            }
            AgentEvent::ReplyParsed {
                raw, diagnostics, ..
            } => {
                agent.raw = raw.clone();
                agent.diagnostics = diagnostics.iter().take(MAX_DIAGNOSTICS).cloned().collect();
            }
            AgentEvent::TextDelta { text, .. } => self.publish(Update::Turn {
                session_id: agent.session.clone(),
                event: "text_delta",
                text: Some(cut_str(text, MAX_VALUE_BYTES).to_owned()),
            }),
            AgentEvent::TurnFinished { .. } => self.publish(Update::Turn {
                session_id: agent.session.clone(),
                event: "turn_finished",
                text: None,
            }),
            AgentEvent::CallParsed { round, call } => {
                let live = LiveCall {
                    session_id: agent.session.clone(),
                    round: *round,
                    call_id: call.call_id.as_str().to_owned(),
                    tool: call.name.clone(),
                    surface: call.origin.format.to_string(),
                    job: false,
                    status: CallStatus::Parsed,
                    duration_ms: None,
                    arguments: bounded(&call.arguments),
                    result: None,
                    repairs: call.origin.repairs.clone(),
                    diagnostics: agent.diagnostics.clone(),
                    excerpt: agent.raw.as_deref().and_then(|raw| excerpt(raw, call)),
                    replica: None,
                };
                self.upsert(live);
            }
            AgentEvent::CallValidated { round, call, error } => {
                self.change(&agent.session, call.call_id.as_str(), |c| {
                    c.round = *round;
                    c.arguments = bounded(&call.arguments);
                    c.repairs = call.origin.repairs.clone();
                    if error.is_none() {
                        c.status = CallStatus::Validated;
                    }
                });
            }
            AgentEvent::CallStarted { call_id, .. } => {
                self.change(&agent.session, call_id.as_str(), |c| {
                    c.status = CallStatus::Running
                });
            }
            AgentEvent::CallCompleted {
                call_id,
                result,
                duration_ms,
                job,
                ..
            } => {
                self.change(&agent.session, call_id.as_str(), |c| {
                    c.job = *job;
                    // A job's acknowledgement: still running until its result comes.
                    c.status = if *job {
                        CallStatus::Running
                    } else {
                        CallStatus::Ok
                    };
                    c.duration_ms = Some(*duration_ms);
                    c.result = Some(bounded(result));
                });
            }
            AgentEvent::CallFailed {
                call_id,
                error,
                duration_ms,
                ..
            } => {
                self.change(&agent.session, call_id.as_str(), |c| {
                    c.status = if error.code == toolcall_core::ErrorCode::Cancelled {
                        CallStatus::Cancelled
                    } else {
                        CallStatus::Failed
                    };
                    c.duration_ms = Some(*duration_ms);
                    c.result = Some(bounded(&serde_json::json!({ "error": error })));
                });
            }
            AgentEvent::JobDelivered {
                call_id,
                result,
                duration_ms,
                ..
            } => {
                self.change(&agent.session, call_id.as_str(), |c| {
                    c.job = true;
                    c.status = if result.get("error").is_some() {
                        CallStatus::Failed
                    } else {
                        CallStatus::Ok
                    };
                    c.duration_ms = Some(*duration_ms);
                    c.result = Some(bounded(result));
                });
            }
            _ => {}
        }
    }

    fn upsert(&self, call: LiveCall) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match state.find(&call.session_id, &call.call_id) {
            Some(existing) if existing.round == call.round => *existing = call.clone(),
            _ => {
                if state.calls.len() >= MAX_CALLS {
                    state.calls.pop_front();
                }
                state.calls.push_back(call.clone());
            }
        }
        drop(state);
        self.publish(Update::Call {
            call: Box::new(call),
        });
    }

    /// Shows a call another replica ran (see [`crate::follow`]), as it stands.
    pub fn add_remote(&self, mut call: LiveCall) {
        call.arguments = bounded(&call.arguments);
        call.result = call.result.as_ref().map(bounded);
        self.upsert(call);
    }

    /// Updates the newest call shown with `call_id` in `session` that another replica ran;
    /// whether there was one.
    pub fn settle_remote(
        &self,
        session: &str,
        call_id: &str,
        f: impl FnOnce(&mut LiveCall),
    ) -> bool {
        let session = Some(session.to_owned());
        let mut found = false;
        self.change(&session, call_id, |c| {
            if c.replica.is_some() {
                found = true;
                f(c);
                c.result = c.result.as_ref().map(bounded);
            }
        });
        found
    }

    fn change(&self, session: &Option<String>, call_id: &str, f: impl FnOnce(&mut LiveCall)) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let Some(call) = state.find(session, call_id) else {
            return;
        };
        f(call);
        let call = call.clone();
        drop(state);
        self.publish(Update::Call {
            call: Box::new(call),
        });
    }
}

#[derive(Default)]
struct AgentState {
    session: Option<String>,
    raw: Option<String>,
    diagnostics: Vec<Diagnostic>,
}

/// A value as kept: itself when small, else the start of its JSON text, marked as cut.
fn bounded(value: &Value) -> Value {
    let text = value.to_string();
    if text.len() <= MAX_VALUE_BYTES {
        return value.clone();
    }
    Value::String(format!(
        "{}… ({} bytes in all)",
        cut_str(&text, MAX_VALUE_BYTES),
        text.len()
    ))
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The reply around a text-format call's span; `None` for native calls (empty span).
fn excerpt(raw: &str, call: &ToolCall) -> Option<Excerpt> {
    let span = &call.origin.span;
    if span.start >= span.end || span.end > raw.len() {
        return None;
    }
    let floor = |mut i: usize| {
        while !raw.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let (start, end) = (floor(span.start), floor(span.end));
    let call_end = floor(end.min(start.saturating_add(EXCERPT_CALL)));
    let before_start = floor(start.saturating_sub(EXCERPT_CONTEXT));
    let after_end = floor(end.saturating_add(EXCERPT_CONTEXT).min(raw.len()));
    Some(Excerpt {
        before: raw[before_start..start].to_owned(),
        call: raw[start..call_end].to_owned(),
        after: raw[end..after_end].to_owned(),
        span: [span.start, span.end],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::{ErrorCode, ToolError};

    fn parsed(raw: &str, call: ToolCall) -> Vec<AgentEvent> {
        vec![
            AgentEvent::TurnStarted {
                session_id: Some("ses_1".into()),
                input: "go".into(),
            },
            AgentEvent::ReplyParsed {
                round: 1,
                raw: Some(raw.into()),
                calls: 1,
                diagnostics: vec![],
                reasoning: vec![],
            },
            AgentEvent::CallParsed { round: 1, call },
        ]
    }

    #[test]
    fn a_call_moves_through_its_statuses_and_every_change_is_pushed() {
        let hub = Hub::new();
        let mut rx = hub.subscribe();
        let observe = hub.observer();
        let raw = "Sure. <tool_call>{\"name\":\"login\",\"arguments\":{\"password\":\"pw\"}}</tool_call> ok";
        let mut call = ToolCall::new("login", json!({"password": "pw"}), "hermes");
        call.call_id = "call_a".into();
        call.origin.span = 6..raw.len() - 3;
        for e in parsed(raw, call.clone()) {
            observe(&e);
        }
        let live = hub.calls();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].status, CallStatus::Parsed);
        assert_eq!(live[0].session_id.as_deref(), Some("ses_1"));
        assert_eq!(live[0].arguments, json!({"password": "[REDACTED]"}));
        let ex = live[0].excerpt.as_ref().unwrap();
        assert_eq!(ex.before, "Sure. ");
        assert!(ex.call.starts_with("<tool_call>"));
        assert_eq!(ex.after, " ok");

        observe(&AgentEvent::CallValidated {
            round: 1,
            call: call.clone(),
            error: None,
        });
        assert_eq!(hub.calls()[0].status, CallStatus::Validated);
        observe(&AgentEvent::CallStarted {
            round: 1,
            call_id: "call_a".into(),
            name: "login".into(),
        });
        assert_eq!(hub.calls()[0].status, CallStatus::Running);
        observe(&AgentEvent::CallCompleted {
            round: 1,
            call_id: "call_a".into(),
            name: "login".into(),
            result: json!({"status": "ok", "data": {"token": "t"}}),
            duration_ms: 12,
            job: false,
        });
        let done = &hub.calls()[0];
        assert_eq!(done.status, CallStatus::Ok);
        assert_eq!(done.duration_ms, Some(12));
        assert_eq!(done.result.as_ref().unwrap()["data"]["token"], "[REDACTED]");

        let mut kinds = Vec::new();
        while let Ok(u) = rx.try_recv() {
            kinds.push(match &*u {
                Update::Call { call } => call.status.as_str(),
                Update::Turn { event, .. } => event,
            });
        }
        assert_eq!(
            kinds,
            ["turn_started", "parsed", "validated", "running", "ok"]
        );
    }

    #[test]
    fn failures_cancellations_and_jobs_get_their_status() {
        let hub = Hub::new();
        let observe = hub.observer();
        for (id, code) in [
            ("c1", ErrorCode::ToolDisabled),
            ("c2", ErrorCode::Cancelled),
        ] {
            let mut call = ToolCall::new("t", json!({}), "openai_chat");
            call.call_id = id.into();
            observe(&AgentEvent::CallParsed { round: 1, call });
            observe(&AgentEvent::CallFailed {
                round: 1,
                call_id: id.into(),
                name: "t".into(),
                error: ToolError::new(code, "no"),
                duration_ms: 0,
            });
        }
        let mut call = ToolCall::new("j", json!({}), "openai_chat");
        call.call_id = "c3".into();
        observe(&AgentEvent::CallParsed { round: 1, call });
        observe(&AgentEvent::CallCompleted {
            round: 1,
            call_id: "c3".into(),
            name: "j".into(),
            result: json!({"status": "ok", "data": {"job_id": "job_c3"}}),
            duration_ms: 0,
            job: true,
        });
        let statuses: Vec<_> = hub.calls().iter().map(|c| c.status).collect();
        assert_eq!(
            statuses,
            [
                CallStatus::Failed,
                CallStatus::Cancelled,
                CallStatus::Running
            ]
        );
        assert_eq!(
            hub.calls()[0].result.as_ref().unwrap()["error"]["code"],
            "tool_disabled"
        );
        observe(&AgentEvent::JobDelivered {
            round: 2,
            call_id: "c3".into(),
            name: "j".into(),
            result: json!({"status": "ok", "data": 7}),
            duration_ms: 40,
        });
        let job = &hub.calls()[2];
        assert_eq!(
            (job.status, job.job, job.duration_ms),
            (CallStatus::Ok, true, Some(40))
        );
        // Native calls have no span: no excerpt.
        assert!(job.excerpt.is_none());
    }

    #[test]
    fn memory_is_bounded_in_calls_and_value_size() {
        let hub = Hub::new();
        let observe = hub.observer();
        for i in 0..MAX_CALLS + 10 {
            let mut call = ToolCall::new("t", json!({"blob": "x".repeat(MAX_VALUE_BYTES)}), "j");
            call.call_id = format!("c{i}").into();
            observe(&AgentEvent::CallParsed { round: 1, call });
        }
        let calls = hub.calls();
        assert_eq!(calls.len(), MAX_CALLS);
        assert_eq!(calls[0].call_id, "c10");
        let Value::String(shown) = &calls[0].arguments else {
            panic!("a large value is shown cut")
        };
        assert!(shown.len() < MAX_VALUE_BYTES + 64);
        assert!(shown.ends_with("bytes in all)"));
    }

    #[test]
    fn excerpts_cut_at_character_boundaries() {
        let raw = format!("{}<c>ż</c>{}", "é".repeat(500), "ł".repeat(500));
        let start = raw.find("<c>").unwrap();
        let end = raw.find("</c>").unwrap() + 4;
        let mut call = ToolCall::new("t", json!({}), "x");
        call.origin.span = start..end;
        let ex = excerpt(&raw, &call).unwrap();
        assert_eq!(ex.call, "<c>ż</c>");
        assert!(ex.before.len() <= EXCERPT_CONTEXT && ex.after.len() <= EXCERPT_CONTEXT);
        // A span past the text (a bug elsewhere) shows nothing rather than panicking.
        call.origin.span = 0..raw.len() + 1;
        assert!(excerpt(&raw, &call).is_none());
    }
}
