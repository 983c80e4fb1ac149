//! `toolcall run`'s output: a consumer of the turn's [`AgentEvent`]s, printing each as it
//! happens (the reply's text as it streams, each call when parsed, validated, started and
//! answered, the round boundaries, the turn's summary), or with `--json` writing each event
//! as one JSON line. Secrets are shown as the events' [`AgentEvent::redacted`] has them.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use serde_json::Value;
use toolcall_core::{CallId, ErrorCode, ToolCall, ToolError, ToolResult};
use toolcall_packs::RoundOutput;
use toolcall_run::{AgentEvent, TurnReport};

use crate::display::shorten;

/// How the events are written.
pub enum Style {
    /// For a person: rounds, text, calls and results.
    Human {
        /// Where the session is archived (named with the session).
        archive: String,
        /// What the loaded packs add to a round (client lines and notes).
        hooks: Vec<Arc<dyn RoundOutput>>,
    },
    /// One JSON object per event and line (tagged by `"event"`).
    JsonLines,
}

/// Prints a turn's events as they arrive.
pub struct Printer<W: Write> {
    out: W,
    style: Style,
    session: Option<String>,
    /// The round whose header is printed.
    header: Option<usize>,
    /// An `assistant:` line is open (reply text is streaming).
    in_text: bool,
    /// Whitespace at the end of the text so far: printed only if more text follows.
    held_space: String,
    /// The call the last printed call lines are about.
    current_call: Option<CallId>,
    /// How many repairs each of the round's calls had when parsed (the validator's are
    /// printed when it is validated).
    parse_repairs: HashMap<CallId, usize>,
    /// The open round so far, as the packs' round output reads it.
    text: String,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
}

impl<W: Write> Printer<W> {
    pub fn new(out: W, style: Style) -> Self {
        Printer {
            out,
            style,
            session: None,
            header: None,
            in_text: false,
            held_space: String::new(),
            current_call: None,
            parse_repairs: HashMap::new(),
            text: String::new(),
            calls: Vec::new(),
            results: Vec::new(),
        }
    }

    /// Writes `event` (as it happened: redacted here) and flushes, so that a reader sees
    /// it before the turn goes on.
    pub fn event(&mut self, event: &AgentEvent) -> io::Result<()> {
        let shown = event.redacted();
        if matches!(self.style, Style::JsonLines) {
            let line = serde_json::to_string(&shown).map_err(io::Error::other)?;
            writeln!(self.out, "{line}")?;
        } else {
            self.human(event, &shown)?;
        }
        self.out.flush()
    }

    /// Ends an open line of reply text (the turn failed, say).
    pub fn finish(&mut self) -> io::Result<()> {
        self.end_text()?;
        self.out.flush()
    }

    fn human(&mut self, event: &AgentEvent, shown: &AgentEvent) -> io::Result<()> {
        match shown {
            AgentEvent::TurnStarted { session_id, .. } => {
                self.session = session_id.clone();
                if let (Some(id), Style::Human { archive, .. }) = (session_id, &self.style) {
                    writeln!(self.out, "session {id} (archive {})", archive)?;
                }
            }
            AgentEvent::RoundStarted {
                round,
                final_request,
                ..
            } => {
                self.end_text()?;
                self.text.clear();
                self.calls.clear();
                self.results.clear();
                self.parse_repairs.clear();
                self.current_call = None;
                if *final_request {
                    self.header = Some(*round);
                    writeln!(self.out, "\n── final reply (asked without tools)")?;
                } else {
                    self.round_header(*round)?;
                }
            }
            AgentEvent::TextDelta { round, text } => {
                self.text.push_str(text);
                let mut pending = std::mem::take(&mut self.held_space);
                pending.push_str(if self.in_text {
                    text
                } else {
                    text.trim_start()
                });
                let shown = pending.trim_end();
                self.held_space = pending[shown.len()..].to_owned();
                if !shown.is_empty() {
                    if !self.in_text {
                        self.round_header(*round)?;
                        write!(self.out, "  assistant: ")?;
                        self.in_text = true;
                    }
                    // Continuation lines stay inside the round's block.
                    write!(self.out, "{}", shown.replace('\n', "\n    "))?;
                }
            }
            AgentEvent::ReplyParsed {
                diagnostics,
                reasoning,
                ..
            } => {
                self.end_text()?;
                for r in reasoning {
                    writeln!(self.out, "  reasoning: {}", shorten(r, 200))?;
                }
                for d in diagnostics {
                    writeln!(self.out, "  parser {:?}: {}", d.level, d.message)?;
                }
            }
            AgentEvent::CallParsed { call, .. } => {
                self.end_text()?;
                writeln!(
                    self.out,
                    "  call {} [{}] via {}",
                    call.name, call.call_id, call.origin.format
                )?;
                self.current_call = Some(call.call_id.clone());
                writeln!(
                    self.out,
                    "    arguments: {}",
                    shorten(&call.arguments.to_string(), 300)
                )?;
                for rep in &call.origin.repairs {
                    writeln!(self.out, "    repaired ({}): {}", rep.kind, rep.message)?;
                }
                // Bounded by the reply's calls, which the parser bounds.
                self.parse_repairs
                    .insert(call.call_id.clone(), call.origin.repairs.len());
            }
            AgentEvent::CallValidated { call, error, .. } => {
                self.call_lines_for(&call.call_id, &call.name)?;
                let seen = self.parse_repairs.get(&call.call_id).copied().unwrap_or(0);
                for rep in call.origin.repairs.iter().skip(seen) {
                    writeln!(self.out, "    repaired ({}): {}", rep.kind, rep.message)?;
                }
                writeln!(
                    self.out,
                    "    validation: {}",
                    validation_line(error.as_ref())
                )?;
                if let AgentEvent::CallValidated { call, .. } = event {
                    self.calls.push(call.clone());
                }
            }
            AgentEvent::CallStarted { call_id, name, .. } => {
                self.call_lines_for(call_id, name)?;
                writeln!(self.out, "    running")?;
            }
            AgentEvent::CallCompleted {
                call_id,
                name,
                result,
                duration_ms,
                job,
                ..
            } => {
                self.call_lines_for(call_id, name)?;
                let what = if *job { "job started" } else { "ok" };
                writeln!(
                    self.out,
                    "    → {what} {} ({duration_ms} ms)",
                    data_line(result)
                )?;
                self.results.extend(event.tool_result());
            }
            AgentEvent::CallFailed {
                call_id,
                name,
                error,
                duration_ms,
                ..
            } => {
                self.call_lines_for(call_id, name)?;
                writeln!(self.out, "    → {} ({duration_ms} ms)", error_line(error))?;
                self.results.extend(event.tool_result());
            }
            AgentEvent::JobDelivered {
                round,
                call_id,
                name,
                result,
                duration_ms,
            } => {
                self.end_text()?;
                self.round_header(*round)?;
                self.current_call = None;
                let outcome = match result.get("error") {
                    Some(e) => match serde_json::from_value::<ToolError>(e.clone()) {
                        Ok(e) => error_line(&e),
                        Err(_) => format!("error {}", shorten(&e.to_string(), 300)),
                    },
                    None => format!("ok {}", data_line(result)),
                };
                writeln!(
                    self.out,
                    "  job result {name} [{call_id}]: {outcome} ({duration_ms} ms)"
                )?;
            }
            AgentEvent::RoundFinished { .. } => {
                self.end_text()?;
                self.round_output()?;
            }
            AgentEvent::TurnFinished { report } => {
                self.end_text()?;
                self.summary(report)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn round_header(&mut self, round: usize) -> io::Result<()> {
        if self.header != Some(round) {
            self.header = Some(round);
            writeln!(self.out, "\n── round {round}")?;
        }
        Ok(())
    }

    /// Names the call the next lines are about, unless the lines just printed were.
    fn call_lines_for(&mut self, call_id: &CallId, name: &str) -> io::Result<()> {
        if self.current_call.as_ref() != Some(call_id) {
            self.current_call = Some(call_id.clone());
            writeln!(self.out, "  call {name} [{call_id}]")?;
        }
        Ok(())
    }

    fn end_text(&mut self) -> io::Result<()> {
        self.held_space.clear();
        if self.in_text {
            self.in_text = false;
            writeln!(self.out)?;
        }
        Ok(())
    }

    /// What the loaded packs add to a round for their applications: client lines exactly
    /// as they are (unindented, for a program to pick up), notes indented with the round.
    fn round_output(&mut self) -> io::Result<()> {
        let Style::Human { hooks, .. } = &self.style else {
            return Ok(());
        };
        let session = self.session.as_deref().unwrap_or("default");
        for hook in hooks {
            let lines = hook.round_output(&self.text, &self.calls, &self.results, session);
            for line in &lines.client {
                writeln!(self.out, "{line}")?;
            }
            for note in &lines.notes {
                writeln!(self.out, "  {note}")?;
            }
        }
        Ok(())
    }

    fn summary(&mut self, report: &TurnReport) -> io::Result<()> {
        // A job's outcome is its delivered result, not the acknowledgement.
        let failed = report
            .rounds
            .iter()
            .flat_map(|r| r.results.iter().chain(&r.job_results))
            .filter(|r| r.outcome.is_err())
            .count();
        let calls: usize = report.rounds.iter().map(|r| r.calls.len()).sum();
        writeln!(
            self.out,
            "\n── turn finished: {} round(s), {calls} call(s), {failed} failed",
            report.rounds.len()
        )?;
        if report
            .final_text
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
        {
            writeln!(self.out, "(the final reply has no text)")?;
        }
        if report.hit_round_limit {
            writeln!(
                self.out,
                "(round limit reached: the final reply was asked for without tools)"
            )?;
        }
        if report.breaker_tripped {
            writeln!(
                self.out,
                "(a call failed identically 3 times: tool calls were stopped)"
            )?;
        }
        Ok(())
    }
}

fn validation_line(error: Option<&ToolError>) -> &'static str {
    match error.map(|e| e.code) {
        None => "valid",
        Some(ErrorCode::UnknownTool) => "rejected: unknown tool, not run",
        Some(ErrorCode::ToolDisabled) => "rejected: tool disabled, not run",
        Some(ErrorCode::InvalidArguments) => "rejected: arguments do not match the schema, not run",
        Some(ErrorCode::Denied) => "rejected: not approved, not run",
        Some(_) => "rejected, not run",
    }
}

/// A result's data on one line, images left out.
fn data_line(result: &Value) -> String {
    let mut data = result.get("data").cloned().unwrap_or(Value::Null);
    let _ = toolcall_run::client::images::take_images(&mut data);
    shorten(&data.to_string(), 300)
}

fn error_line(e: &ToolError) -> String {
    format!("error {}: {}", e.code, shorten(&e.message, 300))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printed(events: &[AgentEvent]) -> String {
        let mut p = Printer::new(
            Vec::new(),
            Style::Human {
                archive: "a.sqlite".into(),
                hooks: Vec::new(),
            },
        );
        for e in events {
            p.event(e).unwrap();
        }
        p.finish().unwrap();
        String::from_utf8(p.out).unwrap()
    }

    fn delta(text: &str) -> AgentEvent {
        AgentEvent::TextDelta {
            round: 1,
            text: text.into(),
        }
    }

    #[test]
    fn reply_text_is_trimmed_at_its_ends_and_indented_inside_the_round() {
        let out = printed(&[
            AgentEvent::RoundStarted {
                round: 1,
                tools: Vec::new(),
                final_request: false,
            },
            delta("\n  Two"),
            delta(" lines\nhere \n"),
            delta("  "),
            AgentEvent::RoundFinished { round: 1 },
        ]);
        assert_eq!(out, "\n── round 1\n  assistant: Two lines\n    here\n");
    }

    #[test]
    fn lines_about_a_call_name_it_when_another_call_came_between() {
        let a = ToolCall::new("echo", json!({"password": "p"}), "hermes");
        let b = ToolCall::new("echo", json!({}), "hermes");
        let out = printed(&[
            AgentEvent::CallParsed {
                round: 1,
                call: a.clone(),
            },
            AgentEvent::CallParsed {
                round: 1,
                call: b.clone(),
            },
            AgentEvent::CallValidated {
                round: 1,
                call: a.clone(),
                error: None,
            },
            AgentEvent::CallFailed {
                round: 1,
                call_id: a.call_id.clone(),
                name: "echo".into(),
                error: ToolError::new(ErrorCode::Timeout, "slow"),
                duration_ms: 7,
            },
        ]);
        let (ida, idb) = (a.call_id, b.call_id);
        assert_eq!(
            out,
            format!(
                "  call echo [{ida}] via hermes\n    arguments: {{\"password\":\"[REDACTED]\"}}\n\
                 \x20 call echo [{idb}] via hermes\n    arguments: {{}}\n\
                 \x20 call echo [{ida}]\n    validation: valid\n    → error timeout: slow (7 ms)\n"
            )
        );
    }
}
