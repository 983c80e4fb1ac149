//! The agent loop (X-6): model → calls → results → model, at most `max_rounds` tool rounds
//! per turn, then one last request without tools for a final reply.
//!
//! Modes: `native` offers the tools through the provider's tool API; `text` puts the tool
//! instructions in the system prompt and parses the reply with `toolcall_parse`; `auto`
//! offers them natively and, when a reply carries no native calls, parses its text.
//! A repeat-failure breaker stops a call (same name, same arguments) that failed identically
//! three times: it is answered `cancelled` and the loop stops calling tools.
//!
//! The loop tells what it does as [`AgentEvent`]s (see [`crate::events`]): to observers
//! attached with [`Agent::add_observer`], and as a stream with [`Agent::run_turn_stream`].
//!
//! A reply's [`AgentEvent::TextDelta`]s all belong to one attempt of its model request, so
//! a consumer never has to take back text it showed: a streamed request that fails before
//! any text arrived is retried by the client, one that fails after is not, and the cut
//! stream ends the turn as an error (never as a reply; its calls never run). See
//! [`ModelClient::complete_streaming`].

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolcall_core::{
    CallId, Diagnostic, ErrorCode, Registry, StreamEvent, ToolCall, ToolError, ToolKind, ToolResult,
};
use toolcall_parse::{FormatSelection, ParseOptions};

use crate::archive::recorder::{Recorder, StateSaver};
use crate::archive::{Archive, ArchiveError, Delivery};
use crate::client::{
    ClientError, Message, ModelClient, ModelReply, ModelRequest, RequestOptions, TextResult,
};
use crate::events::{AgentEvent, Observer};
use crate::executor::{Executor, SessionContext, Timed};

/// Rounds per turn unless configured.
pub const DEFAULT_MAX_ROUNDS: usize = 5;
/// Identical failures after which a call is not run again.
pub const BREAKER_THRESHOLD: u32 = 3;

/// How tools are offered and calls are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Native,
    Text,
    #[default]
    Auto,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "native" => Ok(Mode::Native),
            "text" => Ok(Mode::Text),
            "auto" => Ok(Mode::Auto),
            other => Err(format!("unknown mode {other:?}; modes: native, text, auto")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub mode: Mode,
    pub max_rounds: usize,
    /// Text format to parse (and to instruct, by the caller's system prompt); `None` = auto.
    pub text_format: Option<String>,
    /// System prompt for a new conversation. In text mode, when `None`, the instructions for
    /// `text_format` (or Hermes `<tool_call>`) from [`text_instructions`] are used.
    pub system_prompt: Option<String>,
    /// How long a turn waits for outstanding jobs when the model has nothing else to do.
    pub job_wait: Duration,
    /// Wait (up to `job_wait`) for outstanding jobs before every model request, so their
    /// results always reach the model in the next round. Replays set it: a recording then
    /// plays the same way however fast the jobs run.
    pub await_jobs_before_request: bool,
    /// Sampling, tool choice and extra body fields sent with every model request.
    pub request_options: RequestOptions,
    /// Calls to tools this process has no implementation for (specs registered on behalf
    /// of a client, e.g. a gateway's request `tools`) end the turn and are returned in
    /// [`TurnReport::client_calls`] for the client to run, after the reply's other calls
    /// ran here. Off: such calls are answered `tool_failed`.
    pub return_client_calls: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            mode: Mode::Auto,
            max_rounds: DEFAULT_MAX_ROUNDS,
            text_format: None,
            system_prompt: None,
            job_wait: Duration::from_secs(30),
            await_jobs_before_request: false,
            request_options: RequestOptions::default(),
            return_client_calls: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
}

/// One model request and what came of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundReport {
    /// The visible assistant text (call markup removed in text mode).
    pub assistant_text: Option<String>,
    pub calls: Vec<ToolCall>,
    /// One per call, in call order; in JSON each is the result the model received plus its
    /// call id and tool: `{"call_id","name","status":"ok","data"}` or `{"call_id","name","error"}`.
    #[serde(with = "results_json")]
    pub results: Vec<ToolResult>,
    /// Job results delivered before this round's request (X-4).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "results_json")]
    pub job_results: Vec<ToolResult>,
    /// Parser findings for text-format replies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    /// Reasoning blocks found in a text reply (R-5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<String>,
}

/// What one turn did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnReport {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub rounds: Vec<RoundReport>,
    pub final_text: Option<String>,
    /// The round bound was reached and the final reply was asked for without tools.
    pub hit_round_limit: bool,
    /// The repeat-failure breaker stopped a call.
    pub breaker_tripped: bool,
    /// Calls the client must run (see [`AgentConfig::return_client_calls`]); the turn
    /// stopped for them, and their results continue it ([`Agent::continue_turn`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_calls: Vec<ToolCall>,
}

/// The user message that asks for the final reply once no more calls may run.
const NO_MORE_CALLS: &str = "[toolcall] No more tool calls are possible in this turn. Reply to \
     the user now, without calling tools.";

/// A conversation with a model that can call tools.
pub struct Agent {
    client: Arc<dyn ModelClient>,
    executor: Arc<Executor>,
    config: AgentConfig,
    conversation: Vec<Message>,
    /// The archive (read when resuming) and the session's recorder, which writes every
    /// archived event on its own thread.
    archive: Option<Arc<Archive>>,
    recorder: Option<Recorder>,
    ctx: SessionContext,
    states: Vec<(String, StateSaver)>,
    failures: HashMap<String, (String, u32)>,
    observers: Vec<Observer>,
    /// The receiving end is the [`TurnStream`] of the turn running now, if any.
    stream: Option<mpsc::UnboundedSender<AgentEvent>>,
}

impl Agent {
    pub fn new(client: Arc<dyn ModelClient>, executor: Arc<Executor>, config: AgentConfig) -> Self {
        Agent {
            client,
            executor,
            config,
            conversation: Vec::new(),
            archive: None,
            recorder: None,
            ctx: SessionContext::default(),
            states: Vec::new(),
            failures: HashMap::new(),
            observers: Vec::new(),
            stream: None,
        }
    }

    /// Hands every event of every later turn to `observer`, in order, as it happens.
    pub fn add_observer(&mut self, observer: Observer) {
        self.observers.push(observer);
    }

    /// Starts from an existing conversation (a client's history, say) instead of an empty
    /// one; the next turn continues it.
    pub fn set_conversation(&mut self, messages: Vec<Message>) {
        self.conversation = messages;
    }

    /// Appends a message to the conversation (and the archive) without running a turn:
    /// e.g. the results of [`TurnReport::client_calls`] as [`Message::Tool`]s.
    pub fn append(&mut self, message: Message) -> Result<(), AgentError> {
        self.push(message)
    }

    /// Appends the client's answers (id, tool name, result JSON) to calls of the last reply,
    /// in the shape that reply asked for: when the model wrote its calls as text, the model
    /// never saw native calls and a native tool message would answer an id it does not
    /// know, so the answers become one [`Message::TextResults`] in the calls' family's
    /// result syntax (consecutive text results reach the model as one message); otherwise
    /// each is a [`Message::Tool`].
    pub fn append_client_results(
        &mut self,
        results: Vec<(CallId, String, Value)>,
    ) -> Result<(), AgentError> {
        if results.is_empty() {
            return Ok(());
        }
        let text_calls = match self
            .conversation
            .iter()
            .rev()
            .find(|m| matches!(m, Message::Assistant { .. }))
        {
            Some(Message::Assistant {
                text: Some(text),
                calls,
            }) if calls.is_empty() && !matches!(self.config.mode, Mode::Native) => {
                toolcall_parse::parse(text, &self.parse_options()).calls
            }
            _ => Vec::new(),
        };
        if text_calls.is_empty() {
            for (call_id, name, content) in results {
                self.push(Message::Tool {
                    call_id,
                    name,
                    content,
                })?;
            }
            return Ok(());
        }
        let results = results
            .into_iter()
            .map(|(call_id, name, content)| TextResult {
                format: text_calls
                    .iter()
                    .find(|c| c.name == name)
                    .or(text_calls.first())
                    .map(|c| c.origin.format.to_string())
                    .unwrap_or_default(),
                call_id,
                name,
                content,
            })
            .collect();
        self.push(Message::TextResults { results })
    }

    fn emit(&self, event: AgentEvent) {
        emit_to(&self.recorder, &self.observers, &self.stream, event);
    }

    /// Waits until the archive has committed every event so far (off the runtime's
    /// threads); reports a failed write.
    async fn flush(&self) -> Result<(), AgentError> {
        if let Some(r) = &self.recorder {
            r.flush().await?;
        }
        Ok(())
    }

    /// Archives this conversation as a new session; returns its id.
    pub fn archive_new(
        &mut self,
        archive: Arc<Archive>,
        description: &str,
    ) -> Result<String, AgentError> {
        let id = archive.create_session(description)?;
        self.attach(archive, &id)?;
        if let Some(r) = &self.recorder {
            for m in &self.conversation {
                r.record(&AgentEvent::MessageAdded {
                    message: m.clone(),
                    text_calls: Vec::new(),
                });
            }
        }
        Ok(id)
    }

    /// Records this agent's events into `session` from now on.
    fn attach(&mut self, archive: Arc<Archive>, session: &str) -> Result<(), AgentError> {
        let recorder = Recorder::new(archive.clone(), session)?;
        for (name, snapshot) in &self.states {
            recorder.add_state_saver(name.clone(), snapshot.clone());
        }
        self.recorder = Some(recorder);
        self.archive = Some(archive);
        self.ctx.session_id = Some(session.to_owned());
        Ok(())
    }

    /// Continues an archived session: its conversation is loaded and new messages appended.
    pub fn archive_resume(
        &mut self,
        archive: Arc<Archive>,
        session_id: &str,
    ) -> Result<(), AgentError> {
        self.archive_continue(archive, session_id)?;
        self.answer_interrupted_calls()
    }

    /// Continues an archived session whose last calls a client is about to answer (see
    /// [`AgentConfig::return_client_calls`]): unlike [`Self::archive_resume`], unanswered
    /// calls are left for the results the caller appends.
    pub fn archive_continue(
        &mut self,
        archive: Arc<Archive>,
        session_id: &str,
    ) -> Result<(), AgentError> {
        if !archive.has_session(session_id)? {
            return Err(ArchiveError::NoSession(session_id.to_owned()).into());
        }
        self.conversation = archive.load_messages(session_id)?;
        self.attach(archive, session_id)
    }

    /// A session killed mid-round ends with an assistant turn whose calls are not all
    /// answered (the answers are added after the round's last call), and providers reject
    /// such a conversation. Each unanswered call gets its archived result, or, if it never
    /// finished, a `cancelled` error, under its call id; the answers are archived too.
    /// Native calls are answered by tool messages; calls written in a text-format reply by
    /// one text-results message, as a finished round has them.
    fn answer_interrupted_calls(&mut self) -> Result<(), AgentError> {
        let Some(last) = self
            .conversation
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
        else {
            return Ok(());
        };
        let (Some(archive), Some(session)) = (self.archive.clone(), self.ctx.session_id.clone())
        else {
            return Ok(());
        };
        match &self.conversation[last] {
            Message::Assistant { calls, .. } if !calls.is_empty() => {
                let after = &self.conversation[last + 1..];
                if !after.iter().all(|m| matches!(m, Message::Tool { .. })) {
                    return Ok(());
                }
                let answered: std::collections::HashSet<&str> = after
                    .iter()
                    .filter_map(|m| match m {
                        Message::Tool { call_id, .. } => Some(call_id.as_str()),
                        _ => None,
                    })
                    .collect();
                let missing: Vec<(toolcall_core::CallId, String)> = calls
                    .iter()
                    .filter(|c| !answered.contains(c.call_id.as_str()))
                    .map(|c| (c.call_id.clone(), c.name.clone()))
                    .collect();
                for (call_id, name) in missing {
                    let content = match archive.inline_result(&session, call_id.as_str())? {
                        Some(outcome) => outcome,
                        None => archive_interrupted(&archive, &session, &call_id, &name)?,
                    };
                    self.push(Message::Tool {
                        call_id,
                        name,
                        content,
                    })?;
                }
                Ok(())
            }
            Message::Assistant {
                text: Some(text), ..
            } if last + 1 == self.conversation.len() => {
                // The calls that ran (or started) are archived with their ids, in order;
                // the text names the ones that never started.
                let archived = archive.calls_of_last_reply(&session)?;
                let asked_final = last > 0
                    && matches!(&self.conversation[last - 1],
                        Message::User { content } if content == NO_MORE_CALLS);
                if archived.is_empty() && asked_final {
                    return Ok(()); // calls in a final reply are not run, nor answered
                }
                let written = match self.config.mode {
                    Mode::Native => Vec::new(),
                    Mode::Text | Mode::Auto => {
                        toolcall_parse::parse(text, &self.parse_options()).calls
                    }
                };
                let mut results = Vec::with_capacity(archived.len().max(written.len()));
                for i in 0..archived.len().max(written.len()) {
                    results.push(match (archived.get(i), written.get(i)) {
                        (Some(c), _) => TextResult {
                            call_id: c.call_id.clone(),
                            name: c.name.clone(),
                            content: match &c.outcome {
                                Some(outcome) => outcome.clone(),
                                None => {
                                    archive_interrupted(&archive, &session, &c.call_id, &c.name)?
                                }
                            },
                            format: c.format.clone(),
                        },
                        // Never started, so never archived as a call: nothing to pair.
                        (None, Some(c)) => TextResult {
                            call_id: c.call_id.clone(),
                            name: c.name.clone(),
                            content: interrupted(&c.call_id, &c.name),
                            format: c.origin.format.to_string(),
                        },
                        (None, None) => break,
                    });
                }
                if !results.is_empty() {
                    self.push(Message::TextResults { results })?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Answers the calls of the last reply that a lost run of this session left without an
    /// answer in the conversation: a call whose result was archived gets it, a call in
    /// `interrupted` (recovered claims, see [`Archive::recover_claims`]) gets the
    /// "outcome unknown" error; neither runs again. Other unanswered calls (the client's)
    /// are left for the client's results.
    pub fn answer_lost_calls(&mut self, lost: &[String]) -> Result<(), AgentError> {
        let (Some(archive), Some(session)) = (self.archive.clone(), self.ctx.session_id.clone())
        else {
            return Ok(());
        };
        let Some(last) = self
            .conversation
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
        else {
            return Ok(());
        };
        let answered: std::collections::HashSet<String> = self.conversation[last + 1..]
            .iter()
            .flat_map(|m| match m {
                Message::Tool { call_id, .. } => vec![call_id.as_str().to_owned()],
                Message::TextResults { results } => results
                    .iter()
                    .map(|r| r.call_id.as_str().to_owned())
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let mut answers = Vec::new();
        for c in archive.calls_of_last_reply(&session)? {
            if answered.contains(c.call_id.as_str()) {
                continue;
            }
            let content = match c.outcome {
                Some(outcome) => outcome,
                None if lost.iter().any(|i| i == c.call_id.as_str()) => {
                    archive_interrupted(&archive, &session, &c.call_id, &c.name)?
                }
                None => continue,
            };
            answers.push((c.call_id, c.name, content));
        }
        self.append_client_results(answers)
    }

    /// Saves `snapshot()` under `name` in the archive after every round (pack states); the
    /// snapshot is taken on the archive's writer thread.
    pub fn add_state_saver(&mut self, name: impl Into<String>, snapshot: StateSaver) {
        let name = name.into();
        if let Some(r) = &self.recorder {
            r.add_state_saver(name.clone(), snapshot.clone());
        }
        self.states.push((name, snapshot));
    }

    pub fn session_id(&self) -> Option<&str> {
        self.ctx.session_id.as_deref()
    }

    pub fn conversation(&self) -> &[Message] {
        &self.conversation
    }

    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    fn registry(&self) -> &Arc<Registry> {
        self.executor.registry()
    }

    /// Adds a message to the conversation and tells the consumers (the archive among them).
    fn push(&mut self, message: Message) -> Result<(), AgentError> {
        self.push_with_calls(message, Vec::new())
    }

    /// [`Self::push`] for a text-format reply and the calls written in it.
    fn push_with_calls(
        &mut self,
        message: Message,
        text_calls: Vec<ToolCall>,
    ) -> Result<(), AgentError> {
        self.emit(AgentEvent::MessageAdded {
            message: message.clone(),
            text_calls,
        });
        self.conversation.push(message);
        Ok(())
    }

    fn request(&self, with_tools: bool) -> ModelRequest {
        let native = matches!(self.config.mode, Mode::Native | Mode::Auto);
        ModelRequest {
            messages: self.conversation.clone(),
            tools: if with_tools && native {
                self.registry().enabled_specs().cloned().collect()
            } else {
                Vec::new()
            },
            known_names: self.registry().names().map(str::to_owned).collect(),
            options: self.config.request_options.clone(),
        }
    }

    fn parse_options(&self) -> ParseOptions {
        ParseOptions {
            format: match &self.config.text_format {
                // An unknown name stays in the selection: the parser reports it.
                Some(f) => FormatSelection::from_name(f)
                    .unwrap_or_else(|_| FormatSelection::Only(f.clone())),
                None => FormatSelection::Auto,
            },
            tools: Some(self.registry().clone()),
            ..ParseOptions::default()
        }
    }

    /// Visible text, calls, whether they came from text, diagnostics and reasoning.
    fn interpret(&self, reply: ModelReply) -> Interpreted {
        let use_native = match self.config.mode {
            Mode::Native => true,
            Mode::Text => false,
            Mode::Auto => !reply.calls.is_empty(),
        };
        // Reasoning the server sent apart comes first, then any the text held.
        let apart: Vec<String> = reply
            .reasoning
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
        if use_native {
            return Interpreted {
                raw: reply.text.clone(),
                text: reply.text,
                calls: reply.calls,
                from_text: false,
                diagnostics: Vec::new(),
                reasoning: apart,
            };
        }
        let raw = reply.text.unwrap_or_default();
        let options = ParseOptions {
            reply_end: reply_end(&reply.finish_reason),
            ..self.parse_options()
        };
        let parsed = toolcall_parse::parse(&raw, &options);
        Interpreted {
            text: Some(parsed.text),
            raw: Some(raw),
            calls: parsed.calls,
            from_text: true,
            diagnostics: parsed.diagnostics,
            reasoning: apart.into_iter().chain(parsed.reasoning).collect(),
        }
    }

    async fn deliver_jobs(
        &mut self,
        round: usize,
        jobs: Vec<Timed>,
        report: &mut Vec<ToolResult>,
    ) -> Result<(), AgentError> {
        for t in jobs {
            self.emit(AgentEvent::JobDelivered {
                round,
                call_id: t.result.call_id.clone(),
                name: t.result.name.clone(),
                result: t.result.to_json(),
                duration_ms: millis(t.duration),
            });
            self.push(Message::JobResult {
                call_id: t.result.call_id.clone(),
                name: t.result.name.clone(),
                content: t.result.to_json(),
            })?;
            report.push(t.result);
        }
        self.flush().await
    }

    /// Runs one user turn; the conversation is kept, so the next call continues it.
    /// Observers see the turn's events as it runs.
    pub async fn run_turn(&mut self, user_input: &str) -> Result<TurnReport, AgentError> {
        self.stream = None;
        self.turn(Some(user_input)).await
    }

    /// Runs one user turn as a stream of its events, ending with
    /// [`AgentEvent::TurnFinished`] (which carries the [`TurnReport`]), or with the error
    /// that stopped the turn. The turn advances only while the stream is polled; dropping
    /// the stream abandons the turn between two steps.
    ///
    /// ```no_run
    /// # async fn demo(agent: &mut toolcall_run::Agent) -> Result<(), toolcall_run::AgentError> {
    /// use futures::StreamExt;
    /// use toolcall_run::AgentEvent;
    /// let mut events = agent.run_turn_stream("Open the chest");
    /// while let Some(event) = events.next().await {
    ///     match event? {
    ///         AgentEvent::TextDelta { text, .. } => print!("{text}"),
    ///         AgentEvent::CallCompleted { name, duration_ms, .. } => {
    ///             eprintln!("{name} took {duration_ms} ms")
    ///         }
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn run_turn_stream(&mut self, user_input: impl Into<String>) -> TurnStream<'_> {
        let (tx, rx) = mpsc::unbounded_channel();
        let input = user_input.into();
        let turn = Box::pin(async move {
            self.stream = Some(tx);
            let result = self.turn(Some(&input)).await;
            self.stream = None;
            result
        });
        TurnStream {
            events: rx,
            turn: Some(turn),
            error: None,
        }
    }

    /// Continues the conversation without a new user message: after the client answered
    /// [`TurnReport::client_calls`] (appended with [`Agent::append`]).
    pub async fn continue_turn(&mut self) -> Result<TurnReport, AgentError> {
        self.stream = None;
        self.turn(None).await
    }

    async fn turn(&mut self, user_input: Option<&str>) -> Result<TurnReport, AgentError> {
        let report = match self.turn_inner(user_input).await {
            Ok(report) => report,
            Err(e) => {
                // What was archived before the failure is kept; the failure is the error.
                let _ = self.flush().await;
                return Err(e);
            }
        };
        self.flush().await?;
        self.emit(AgentEvent::TurnFinished {
            report: Box::new(report.clone()),
        });
        Ok(report)
    }

    async fn turn_inner(&mut self, user_input: Option<&str>) -> Result<TurnReport, AgentError> {
        self.failures.clear();
        self.emit(AgentEvent::TurnStarted {
            session_id: self.ctx.session_id.clone(),
            input: user_input.unwrap_or_default().to_owned(),
        });
        if self.conversation.is_empty() {
            let prompt = match (&self.config.system_prompt, self.config.mode) {
                (Some(p), _) => Some(p.clone()),
                (None, Mode::Text) => Some(text_instructions(
                    self.registry(),
                    self.config.text_format.as_deref(),
                )),
                (None, _) => None,
            };
            if let Some(p) = prompt {
                self.push(Message::system(p))?;
            }
        }
        if let Some(input) = user_input {
            self.push(Message::user(input))?;
        }
        let mut report = TurnReport {
            session_id: self.ctx.session_id.clone(),
            ..TurnReport::default()
        };
        let mut round = 0;
        let mut carried_jobs = Vec::new();
        loop {
            if round >= self.config.max_rounds {
                report.hit_round_limit = true;
                break;
            }
            round += 1;
            let mut rr = RoundReport {
                job_results: std::mem::take(&mut carried_jobs),
                ..RoundReport::default()
            };
            let finished = if self.config.await_jobs_before_request {
                self.executor.wait_jobs(self.config.job_wait).await
            } else {
                self.executor.finished_jobs().await
            };
            self.deliver_jobs(round, finished, &mut rr.job_results)
                .await?;
            self.flush().await?;
            let request = self.request(true);
            self.emit(AgentEvent::RoundStarted {
                round,
                tools: request.tools.iter().map(|t| t.name.clone()).collect(),
                final_request: false,
            });
            let (reply, streamed) = self.ask(round, &request).await?;
            let mut it = self.interpret(reply);
            unique_call_ids(&mut it.calls, &mut it.diagnostics);
            self.emit_reply(round, &it, streamed);
            rr.assistant_text = it.text.clone();
            rr.diagnostics = it.diagnostics;
            rr.reasoning = it.reasoning;
            tracing::info!(target: "toolcall", round, calls = it.calls.len(), "model replied");
            if it.from_text {
                // The calls are in the text: the archive stores it with their secrets
                // redacted, as the calls table has them.
                let message = Message::Assistant {
                    text: it.raw.clone(),
                    calls: Vec::new(),
                };
                self.push_with_calls(message, it.calls.clone())?;
            } else {
                self.push(Message::Assistant {
                    text: it.text.clone(),
                    calls: it.calls.clone(),
                })?;
            }
            if it.calls.is_empty() {
                // Nothing to run; if jobs are still out, wait for them and let the model see
                // their results in another round.
                if self.executor.pending_jobs().await > 0 {
                    let done = self.executor.wait_jobs(self.config.job_wait).await;
                    if !done.is_empty() {
                        report.rounds.push(rr);
                        self.deliver_jobs(round, done, &mut carried_jobs).await?;
                        continue;
                    }
                }
                report.final_text = it.text;
                report.rounds.push(rr);
                return Ok(report);
            }
            let (client_calls, server_calls): (Vec<ToolCall>, Vec<ToolCall>) = it
                .calls
                .iter()
                .cloned()
                .partition(|c| self.config.return_client_calls && self.is_client_tool(&c.name));
            let (checked, results, tripped) = self.run_calls(round, &server_calls).await?;
            report.breaker_tripped |= tripped;
            if it.from_text && !results.is_empty() {
                self.push(Message::TextResults {
                    results: results
                        .iter()
                        .map(|r| TextResult {
                            call_id: r.call_id.clone(),
                            name: r.name.clone(),
                            content: r.to_json(),
                            format: server_calls
                                .iter()
                                .find(|c| c.call_id == r.call_id)
                                .map(|c| c.origin.format.to_string())
                                .unwrap_or_default(),
                        })
                        .collect(),
                })?;
            } else {
                for r in &results {
                    self.push(Message::Tool {
                        call_id: r.call_id.clone(),
                        name: r.name.clone(),
                        content: r.to_json(),
                    })?;
                }
            }
            self.emit(AgentEvent::RoundFinished { round });
            self.flush().await?;
            rr.calls = checked;
            rr.results = results;
            report.rounds.push(rr);
            if !client_calls.is_empty() {
                // The client runs these and continues the conversation with their results.
                report.client_calls = client_calls;
                return Ok(report);
            }
            if tripped {
                break;
            }
        }
        // Bound reached or breaker tripped: one more request, without tools.
        let mut jobs = std::mem::take(&mut carried_jobs);
        let finished = self.executor.finished_jobs().await;
        self.deliver_jobs(round, finished, &mut jobs).await?;
        if let Some(last) = report.rounds.last_mut() {
            last.job_results.extend(jobs);
        }
        self.push(Message::user(NO_MORE_CALLS))?;
        self.flush().await?;
        let request = self.request(false);
        self.emit(AgentEvent::RoundStarted {
            round: round + 1,
            tools: Vec::new(),
            final_request: true,
        });
        let (reply, streamed) = self.ask(round + 1, &request).await?;
        let text = match self.config.mode {
            Mode::Native => reply.text,
            // Calls written in the text are not run; keep the visible text only.
            Mode::Text | Mode::Auto => {
                let raw = reply.text.unwrap_or_default();
                Some(toolcall_parse::parse(&raw, &self.parse_options()).text)
            }
        };
        if let Some(t) = text.as_ref().filter(|t| !t.is_empty() && !streamed) {
            self.emit(AgentEvent::TextDelta {
                round: round + 1,
                text: t.clone(),
            });
        }
        self.push(Message::Assistant {
            text: text.clone(),
            calls: Vec::new(),
        })?;
        report.final_text = text;
        Ok(report)
    }

    /// Runs a reply's calls in order through the breaker; archives each call (as validated)
    /// and its result before the next one runs. Returns the calls as they ran.
    async fn run_calls(
        &mut self,
        round: usize,
        calls: &[ToolCall],
    ) -> Result<(Vec<ToolCall>, Vec<ToolResult>, bool), AgentError> {
        let mut results = Vec::with_capacity(calls.len());
        let mut checked = Vec::with_capacity(calls.len());
        let mut tripped = false;
        // Calls are claimed in the archive before they run, keyed by the reply's position
        // in the conversation; the reply is committed first, so a continuation elsewhere
        // sees the calls whose claims it finds.
        let claims = match (&self.archive, &self.ctx.session_id) {
            (Some(archive), Some(session)) => {
                self.flush().await?;
                let turn = self
                    .conversation
                    .iter()
                    .rposition(|m| matches!(m, Message::Assistant { .. }))
                    .unwrap_or(0);
                Some((archive.clone(), session.clone(), turn))
            }
            _ => None,
        };
        for call in calls {
            let key = breaker_key(call);
            let taken = match &claims {
                Some((archive, session, turn)) => archive.claim_call(
                    session,
                    *turn,
                    call.call_id.as_str(),
                    crate::archive::replica_owner(),
                )?,
                None => None,
            };
            let timed = match self.failures.get(&key) {
                _ if taken.is_some() => {
                    let state = taken.as_ref().map_or("", |c| c.state.as_str());
                    self.emit(AgentEvent::CallValidated {
                        round,
                        call: call.clone(),
                        error: None,
                    });
                    Timed {
                        call: call.clone(),
                        result: ToolResult::err(
                            call.call_id.clone(),
                            call.name.clone(),
                            ToolError::new(
                                ErrorCode::Cancelled,
                                format!(
                                    "not run here: another run of this session already claimed \
                                     this call ({state})"
                                ),
                            ),
                        ),
                        duration: Duration::ZERO,
                    }
                }
                Some((_, n)) if *n >= BREAKER_THRESHOLD => {
                    tripped = true;
                    self.emit(AgentEvent::CallValidated {
                        round,
                        call: call.clone(),
                        error: None,
                    });
                    Timed {
                        call: call.clone(),
                        result: ToolResult::err(
                            call.call_id.clone(),
                            call.name.clone(),
                            ToolError::new(
                                ErrorCode::Cancelled,
                                format!(
                                    "not run: this exact call already failed {n} times with the \
                                     same error; tool calls are stopped for this turn"
                                ),
                            ),
                        ),
                        duration: Duration::ZERO,
                    }
                }
                _ => {
                    let (recorder, observers, stream) =
                        (&self.recorder, &self.observers, &self.stream);
                    self.executor
                        .execute_one_observed(call.clone(), &self.ctx, &mut |checked, error| {
                            emit_to(
                                recorder,
                                observers,
                                stream,
                                AgentEvent::CallValidated {
                                    round,
                                    call: checked.clone(),
                                    error: error.cloned(),
                                },
                            );
                            if error.is_none() {
                                emit_to(
                                    recorder,
                                    observers,
                                    stream,
                                    AgentEvent::CallStarted {
                                        round,
                                        call_id: checked.call_id.clone(),
                                        name: checked.name.clone(),
                                    },
                                );
                            }
                        })
                        .await
                }
            };
            if let Err(e) = &timed.result.outcome
                && e.code != ErrorCode::Cancelled
            {
                let sig = format!("{}: {}", e.code, e.message);
                let entry = self.failures.entry(key).or_insert_with(|| (sig.clone(), 0));
                if entry.0 == sig {
                    entry.1 += 1;
                } else {
                    *entry = (sig, 1);
                }
            }
            self.emit_result(round, &timed);
            // The call and its result are committed before the next call runs.
            self.flush().await?;
            if let Some((archive, session, turn)) = &claims
                && taken.is_none()
            {
                archive.finish_claim(session, *turn, call.call_id.as_str())?;
            }
            checked.push(timed.call);
            results.push(timed.result);
        }
        Ok((checked, results, tripped))
    }

    /// Sends a model request. While the reply streams, its visible text is told as
    /// [`AgentEvent::TextDelta`]s: the text itself in native mode, the streaming parser's
    /// text in text and auto mode (call markup and reasoning are not reply text). Returns
    /// the reply and whether any text was told.
    async fn ask(
        &self,
        round: usize,
        request: &ModelRequest,
    ) -> Result<(ModelReply, bool), AgentError> {
        let mut parser = match self.config.mode {
            Mode::Native => None,
            Mode::Text | Mode::Auto => {
                Some(toolcall_parse::StreamParser::new(self.parse_options()))
            }
        };
        let (recorder, observers, stream) = (&self.recorder, &self.observers, &self.stream);
        let mut told = false;
        let mut tell = |events: Vec<StreamEvent>| {
            for event in events {
                if let StreamEvent::Text { text } = event
                    && !text.is_empty()
                {
                    told = true;
                    emit_to(
                        recorder,
                        observers,
                        stream,
                        AgentEvent::TextDelta { round, text },
                    );
                }
            }
        };
        let mut streamed_any = false;
        let reply = {
            let mut on_text = |piece: &str| {
                streamed_any = true;
                match parser.as_mut() {
                    Some(p) => tell(p.push(piece)),
                    None => tell(vec![StreamEvent::Text {
                        text: piece.to_owned(),
                    }]),
                }
            };
            self.client
                .complete_streaming(request, &mut on_text)
                .await?
        };
        if let Some(p) = parser.filter(|_| streamed_any) {
            tell(p.finish_as(reply_end(&reply.finish_reason)));
        }
        Ok((reply, told))
    }

    /// The reply's events: its visible text (unless it was told as it streamed), what was
    /// found in it, and each call.
    fn emit_reply(&self, round: usize, it: &Interpreted, streamed: bool) {
        if let Some(t) = it.text.as_ref().filter(|t| !t.is_empty() && !streamed) {
            self.emit(AgentEvent::TextDelta {
                round,
                text: t.clone(),
            });
        }
        self.emit(AgentEvent::ReplyParsed {
            round,
            // Masked, not replaced: the calls' spans must still point at their markup.
            raw: if it.from_text {
                it.raw
                    .as_deref()
                    .map(|r| crate::redact::mask_call_text(r, &it.calls))
            } else {
                None
            },
            calls: it.calls.len(),
            diagnostics: it.diagnostics.clone(),
            reasoning: it.reasoning.clone(),
        });
        for call in &it.calls {
            self.emit(AgentEvent::CallParsed {
                round,
                call: call.clone(),
            });
        }
    }

    fn emit_result(&self, round: usize, timed: &Timed) {
        let r = &timed.result;
        let duration_ms = millis(timed.duration);
        self.emit(match &r.outcome {
            Ok(_) => AgentEvent::CallCompleted {
                round,
                call_id: r.call_id.clone(),
                name: r.name.clone(),
                result: r.to_json(),
                duration_ms,
                job: self
                    .registry()
                    .spec(&r.name)
                    .is_some_and(|s| s.kind == ToolKind::Job),
            },
            Err(e) => AgentEvent::CallFailed {
                round,
                call_id: r.call_id.clone(),
                name: r.name.clone(),
                error: e.clone(),
                duration_ms,
            },
        });
    }

    /// A tool registered without an implementation here: the client's.
    fn is_client_tool(&self, name: &str) -> bool {
        self.registry()
            .get(name)
            .is_some_and(|e| e.handler.is_none())
    }
}

/// Hands `event` to the archive's recorder, the observers and the turn's stream, in that
/// order.
fn emit_to(
    recorder: &Option<Recorder>,
    observers: &[Observer],
    stream: &Option<mpsc::UnboundedSender<AgentEvent>>,
    event: AgentEvent,
) {
    if let Some(r) = recorder {
        r.record(&event);
    }
    for o in observers {
        o(&event);
    }
    if let Some(tx) = stream {
        // The stream's reader is gone: the turn goes on without it.
        let _ = tx.send(event);
    }
}

/// How the model's reply ended, for the text parser (a stripped end token after `stop`).
fn reply_end(finish_reason: &Option<String>) -> toolcall_parse::ReplyEnd {
    finish_reason.as_deref().map_or(
        toolcall_parse::ReplyEnd::Unknown,
        toolcall_parse::ReplyEnd::from_finish_reason,
    )
}

/// The answer to a call a killed process left without a result. Whether it ran is not
/// known: the call may have started (its start is archived asynchronously, so even a call
/// missing from the archive may have), and its effect may have happened before the process
/// died. Saying "not run" would invite the model to repeat an action that already happened.
fn interrupted(call_id: &toolcall_core::CallId, name: &str) -> Value {
    ToolResult::err(
        call_id.clone(),
        name.to_owned(),
        ToolError::new(
            ErrorCode::Cancelled,
            "outcome unknown: the session was interrupted while this call was pending; \
             it may have run, fully or in part, so check its effect before repeating it",
        )
        .with_details(serde_json::json!({"outcome": "unknown"})),
    )
    .to_json()
}

/// [`interrupted`], archived as the call's result first, so the archive pairs the call
/// with the one answer the model is given (as for a call that finished).
fn archive_interrupted(
    archive: &Archive,
    session: &str,
    call_id: &toolcall_core::CallId,
    name: &str,
) -> Result<Value, ArchiveError> {
    let answer = interrupted(call_id, name);
    archive.record_outcome(
        session,
        call_id.as_str(),
        name,
        &answer,
        0,
        Delivery::Inline,
    )?;
    Ok(answer)
}

fn millis(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

type TurnFuture<'a> = Pin<Box<dyn Future<Output = Result<TurnReport, AgentError>> + Send + 'a>>;

/// A turn as a stream of events; see [`Agent::run_turn_stream`].
pub struct TurnStream<'a> {
    events: mpsc::UnboundedReceiver<AgentEvent>,
    turn: Option<TurnFuture<'a>>,
    error: Option<AgentError>,
}

impl Stream for TurnStream<'_> {
    type Item = Result<AgentEvent, AgentError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // Events already told come first; the turn only advances when none are waiting, so
        // the channel never holds more than one step's events.
        if let Ok(event) = this.events.try_recv() {
            return Poll::Ready(Some(Ok(event)));
        }
        if let Some(turn) = this.turn.as_mut() {
            match turn.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.turn = None;
                    this.error = result.err();
                }
                Poll::Pending => {
                    return match this.events.try_recv() {
                        Ok(event) => Poll::Ready(Some(Ok(event))),
                        Err(_) => Poll::Pending,
                    };
                }
            }
        }
        if let Ok(event) = this.events.try_recv() {
            return Poll::Ready(Some(Ok(event)));
        }
        Poll::Ready(this.error.take().map(Err))
    }
}

struct Interpreted {
    text: Option<String>,
    raw: Option<String>,
    calls: Vec<ToolCall>,
    from_text: bool,
    diagnostics: Vec<Diagnostic>,
    reasoning: Vec<String>,
}

/// A reply that repeats a call id would make results ambiguous (R-8): later duplicates get
/// a fresh id, and the change is reported.
fn unique_call_ids(calls: &mut [ToolCall], diagnostics: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::HashSet::new();
    for call in calls.iter_mut() {
        if !seen.insert(call.call_id.clone()) {
            let fresh = toolcall_core::CallId::generate();
            diagnostics.push(Diagnostic::warning(
                format!(
                    "call id {:?} was used twice in one reply; the second call is {}",
                    call.call_id.as_str(),
                    fresh
                ),
                call.origin.span.clone(),
            ));
            call.call_id = fresh.clone();
            seen.insert(fresh);
        }
    }
}

fn breaker_key(call: &ToolCall) -> String {
    format!("{}\u{0}{}", call.name, call.arguments)
}

/// The text format a model writes, from its name, by the one model-name table that the
/// gateway, `toolcall parse` and Python use ([`FormatSelection::for_model`]): its family
/// alone, or a priority list (`a,b`) with the families its models also write; `None` when
/// the name is unknown (every format is tried then).
pub fn text_format_for_model(model: &str) -> Option<String> {
    match FormatSelection::for_model(model) {
        FormatSelection::Auto => None,
        FormatSelection::Only(one) => Some(one),
        FormatSelection::Priority(names) => Some(names.join(",")),
    }
}

/// The system prompt for text mode: the parser's instructions (O-2) for `format` when it
/// names one text format, else for the Hermes `<tool_call>` format, which auto-detection reads.
pub fn text_instructions(registry: &Registry, format: Option<&str>) -> String {
    // A priority list (`a,b`) teaches its first format.
    let chosen = format
        .and_then(|f| f.split(',').next())
        .map(str::trim)
        .and_then(toolcall_parse::FormatId::from_name)
        .and_then(|f| toolcall_parse::render_prompt(registry, f).ok());
    match chosen {
        Some(p) => p,
        None => toolcall_parse::FormatId::from_name("hermes")
            .and_then(|f| toolcall_parse::render_prompt(registry, f).ok())
            .unwrap_or_default(),
    }
}

/// Results in a report's JSON as the model saw them, tagged with call id and tool name.
pub(crate) mod results_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value};
    use toolcall_core::{CallId, ToolError, ToolOutput, ToolResult};

    #[derive(Serialize, Deserialize)]
    struct Flat {
        call_id: CallId,
        name: String,
        #[serde(flatten)]
        body: Map<String, Value>,
    }

    pub fn serialize<S: Serializer>(results: &[ToolResult], s: S) -> Result<S::Ok, S::Error> {
        let flat: Vec<Flat> = results
            .iter()
            .map(|r| Flat {
                call_id: r.call_id.clone(),
                name: r.name.clone(),
                body: match r.to_json() {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
            })
            .collect();
        flat.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolResult>, D::Error> {
        use serde::de::Error;
        Vec::<Flat>::deserialize(d)?
            .into_iter()
            .map(|f| from_json(f.call_id, f.name, &f.body).map_err(D::Error::custom))
            .collect()
    }

    /// A result from what the model received (`{"status":"ok","data",..}` or
    /// `{"error":..}`), given its call id and tool.
    pub(crate) fn from_json(
        call_id: CallId,
        name: String,
        body: &Map<String, Value>,
    ) -> Result<ToolResult, serde_json::Error> {
        let outcome = if let Some(e) = body.get("error") {
            Err(ToolError::deserialize(e)?)
        } else {
            let metadata = match body.get("metadata") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            Ok(ToolOutput {
                data: body.get("data").cloned().unwrap_or(Value::Null),
                metadata,
            })
        };
        Ok(ToolResult {
            call_id,
            name,
            outcome,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolcall_core::ErrorCode;

    // covers X-3
    #[test]
    fn report_results_serialise_as_the_model_saw_them_and_back() {
        let mut ok = ToolResult::ok("c1".into(), "t", json!({"x": 1}));
        if let Ok(out) = &mut ok.outcome {
            out.metadata
                .insert("context_id".into(), json!("slash:summary:1"));
        }
        let err = ToolResult::err(
            "c2".into(),
            "u",
            ToolError::new(ErrorCode::UnknownTool, "nope"),
        );
        let round = RoundReport {
            results: vec![ok, err],
            ..RoundReport::default()
        };
        let v = serde_json::to_value(&round).unwrap();
        assert_eq!(
            v["results"],
            json!([
                {"call_id":"c1","name":"t","status":"ok","data":{"x":1},"metadata":{"context_id":"slash:summary:1"}},
                {"call_id":"c2","name":"u","error":{"code":"unknown_tool","message":"nope"}}
            ])
        );
        let back: RoundReport = serde_json::from_value(v).unwrap();
        assert_eq!(back.results, round.results);
    }
}
