//! Server-side tools for a gateway: a client's OpenAI Chat Completions request answered by
//! an agent turn whose tools run here.
//!
//! The model is offered the server's tools next to the client's own (`tools` of the
//! request; a name on both sides is refused). Calls to server tools are run by the executor
//! (validation, call ids, timeouts, jobs, approval) and their results go back to the model
//! under the same `call_id`, up to `max_rounds`; a reply that calls a client tool ends the
//! turn and the client receives those calls as native `tool_calls`, as from any OpenAI
//! server. Every turn is archived as a session: the caller passes the session id it got
//! (the `x-toolcall-session` header) to continue one, and then only the client's messages
//! after the last assistant message are new; without one, a session is started from the
//! client's whole history.
//!
//! Each session owns the state of the server's stateful packs ([`SessionPack`]): a new
//! session gets a new instance of the pack at its initial state, the instance's state is
//! archived with the session after every round, and a continued session gets a new instance
//! restored from its own archived state. Two conversations never see each other's world,
//! and a session continues the same wherever its state was archived.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use toolcall_core::{CallId, Registry, ToolCall, ToolSpec};
use toolcall_wire::chat::{ChatMessage, ChatRequest, ChatTool, ImagePart};
use toolcall_wire::dialect::{Dialect, ReplyMeta};
use toolcall_wire::{Reply, WireCall};

use crate::agent::{Agent, AgentConfig, AgentError, DEFAULT_MAX_ROUNDS, Mode, TurnReport};

use crate::archive::recorder::StateSaver;
use crate::archive::{Archive, ArchiveError};
use crate::client::images::Image;
use crate::client::{Message, ModelClient};
use crate::events::Observer;
use crate::executor::{Approver, DenyAll, Executor};

/// Messages accepted in one request.
pub const MAX_MESSAGES: usize = 10_000;

/// A request the server-side tool path cannot take; the gateway answers it `400`.
#[derive(Debug, thiserror::Error)]
pub enum ServerTurnError {
    #[error("the request is not understood: {0}")]
    BadRequest(String),
    #[error("the request's tool {0:?} has the name of a tool this server runs")]
    NameClash(String),
    /// `x-toolcall-session` names no archived session (never taken for a new one).
    #[error("no session {0:?} in the archive")]
    UnknownSession(String),
    /// Another replica's turn holds the session for longer than a request waits.
    #[error("session {0:?} is busy with another turn; try again")]
    SessionBusy(String),
    /// A stateful pack could not be made for the session.
    #[error("pack {name}: {message}")]
    Pack { name: String, message: String },
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// One session's instance of a stateful pack.
pub struct PackInstance {
    /// The pack's tools, bound to this instance's state.
    pub tools: Registry,
    /// The instance's state now, as archived with the session.
    pub snapshot: StateSaver,
    /// Replaces the instance's state with an archived snapshot.
    pub restore: Box<dyn FnOnce(Value) -> Result<(), String> + Send>,
}

/// A stateful pack of the server: `make` gives a new instance at the pack's initial state,
/// one per session (see the module doc).
#[derive(Clone)]
pub struct SessionPack {
    pub name: String,
    pub make: Arc<dyn Fn() -> Result<PackInstance, String> + Send + Sync>,
}

/// What the gateway's server-side tools share across requests.
#[derive(Clone)]
pub struct ServerTools {
    /// Tool rounds per turn.
    pub max_rounds: usize,
    /// How calls are found in replies: `Native` when the model client hands calls already
    /// read (the gateway's own turn does), `Auto` to also read the text.
    pub mode: Mode,
    pub archive: Option<Arc<Archive>>,
    /// Told every event of every turn (the inspector's hub, progress events).
    pub observers: Vec<Observer>,
    /// Stateful packs whose tools are in the registry a turn gets: each session runs them
    /// on its own instance.
    pub packs: Vec<SessionPack>,
    pub approver: Arc<dyn Approver>,
}

impl Default for ServerTools {
    fn default() -> Self {
        ServerTools {
            max_rounds: DEFAULT_MAX_ROUNDS,
            mode: Mode::Auto,
            archive: None,
            observers: Vec::new(),
            packs: Vec::new(),
            approver: Arc::new(DenyAll),
        }
    }
}

/// The answer to one request.
pub struct ServerTurn {
    /// A `chat.completion` object (written by the Chat wire module).
    pub completion: Value,
    /// The archived session, to continue with `x-toolcall-session`.
    pub session_id: Option<String>,
    pub report: TurnReport,
}

impl ServerTools {
    /// Answers `request` (a Chat Completions request, as the wire module decoded it) with
    /// `client` as the model and `tools` (the server's tools, switches applied) run here.
    pub async fn chat(
        &self,
        request: &ChatRequest,
        client: Arc<dyn ModelClient>,
        tools: &Registry,
        session: Option<&str>,
    ) -> Result<ServerTurn, ServerTurnError> {
        let bad = |m: &str| ServerTurnError::BadRequest(m.to_owned());
        let messages = &request.messages;
        if messages.len() > MAX_MESSAGES {
            return Err(bad("too many messages"));
        }
        let mut registry = tools.clone();
        if let Some(client_tools) = &request.tools {
            for spec in client_tools.iter().map(client_spec) {
                let spec = spec?;
                if registry.contains(&spec.name) {
                    return Err(ServerTurnError::NameClash(spec.name));
                }
                registry
                    .add_spec(spec)
                    .map_err(|e| ServerTurnError::BadRequest(e.to_string()))?;
            }
        }
        let history = from_chat_messages(messages)?;
        // The session this request continues, if any: an id the archive does not know is
        // refused, never taken for a new conversation.
        let continued = match (&self.archive, session) {
            (Some(archive), Some(id)) => {
                if !archive.has_session(id).map_err(AgentError::from)? {
                    return Err(ServerTurnError::UnknownSession(id.to_owned()));
                }
                Some((archive.clone(), id))
            }
            _ => None,
        };
        // The turn holds the session's lease in the archive (replicas share it): another
        // replica's turn on this session runs before or after this one, never beside it.
        let _lease = match &continued {
            Some((archive, id)) => Some(SessionLease::take(archive.clone(), id).await?),
            None => None,
        };
        let mut savers = Vec::with_capacity(self.packs.len());
        for pack in &self.packs {
            let failed = |message: String| ServerTurnError::Pack {
                name: pack.name.clone(),
                message,
            };
            let instance = (pack.make)().map_err(failed)?;
            if let Some((archive, id)) = &continued
                && let Some(state) = archive
                    .load_state(id, &pack.name)
                    .map_err(AgentError::from)?
            {
                (instance.restore)(state).map_err(failed)?;
            }
            for name in instance.tools.names() {
                if let Some(handler) = instance.tools.get(name).and_then(|e| e.handler.clone()) {
                    // A tool of the pack that the registry lacks was switched off for good.
                    let _ = registry.set_handler(name, handler);
                }
            }
            savers.push((pack.name.clone(), instance.snapshot));
        }
        let executor =
            Arc::new(Executor::new(Arc::new(registry)).with_approver(self.approver.clone()));
        let mut agent = Agent::new(
            client,
            executor,
            AgentConfig {
                mode: self.mode,
                max_rounds: self.max_rounds,
                return_client_calls: true,
                ..AgentConfig::default()
            },
        );
        for o in &self.observers {
            agent.add_observer(o.clone());
        }
        // The new messages: everything after the last assistant message.
        let new_from = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .map_or(0, |i| i + 1);
        let (earlier, new) = history.split_at(new_from);
        let mut resumed = false;
        if let Some(archive) = &self.archive {
            match continued {
                Some((_, id)) => {
                    agent.archive_continue(archive.clone(), id)?;
                    // Calls a lost turn left claimed but unanswered are answered (never
                    // run again) before anything new.
                    let lost = archive.recover_claims(id).map_err(AgentError::from)?;
                    agent.answer_lost_calls(&lost)?;
                    // A session made for this request before it ran (a streamed answer
                    // names it up front) starts from the client's history.
                    resumed = !agent.conversation().is_empty();
                }
                None => {
                    let description = new
                        .iter()
                        .rev()
                        .find_map(|m| match m {
                            Message::User { content } => Some(content.as_str()),
                            _ => None,
                        })
                        .unwrap_or("gateway turn");
                    agent.archive_new(archive.clone(), &cut(description, 200))?;
                }
            }
        }
        for (name, snapshot) in savers {
            agent.add_state_saver(name, snapshot);
        }
        if !resumed {
            for m in earlier {
                agent.append(m.clone())?;
            }
        }
        // The last user message is the turn's input; anything else new (tool results of
        // client calls, or a user message followed by more) is appended first.
        let report = match new.split_last() {
            Some((Message::User { content }, before)) => {
                append_new(&mut agent, before)?;
                agent.run_turn(content).await?
            }
            Some(_) => {
                append_new(&mut agent, new)?;
                agent.continue_turn().await?
            }
            None => return Err(bad("the request has no new message to answer")),
        };
        Ok(ServerTurn {
            completion: completion(&request.model, &report),
            session_id: agent.session_id().map(str::to_owned),
            report,
        })
    }
}

/// How long a session's lease lasts without renewal: a replica that dies mid-turn blocks
/// its sessions at most this long.
pub const SESSION_LEASE: Duration = Duration::from_secs(10);
/// How long a request waits for a session another turn holds.
const LEASE_WAIT: Duration = Duration::from_secs(30);

/// A session's lease, renewed while held and released when dropped.
struct SessionLease {
    archive: Arc<Archive>,
    session: String,
    renewer: tokio::task::JoinHandle<()>,
}

impl SessionLease {
    async fn take(archive: Arc<Archive>, session: &str) -> Result<Self, ServerTurnError> {
        let owner = crate::archive::replica_owner();
        let started = tokio::time::Instant::now();
        loop {
            let (a, id) = (archive.clone(), session.to_owned());
            let taken =
                tokio::task::spawn_blocking(move || a.acquire_lease(&id, owner, SESSION_LEASE))
                    .await
                    .map_err(|e| AgentError::from(ArchiveError::Writer(e.to_string())))?
                    .map_err(AgentError::from)?;
            if taken {
                break;
            }
            if started.elapsed() > LEASE_WAIT {
                return Err(ServerTurnError::SessionBusy(session.to_owned()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (a, id) = (archive.clone(), session.to_owned());
        let renewer = tokio::spawn(async move {
            loop {
                tokio::time::sleep(SESSION_LEASE / 3).await;
                let (a, id) = (a.clone(), id.clone());
                let renewed =
                    tokio::task::spawn_blocking(move || a.acquire_lease(&id, owner, SESSION_LEASE))
                        .await;
                if !matches!(renewed, Ok(Ok(true))) {
                    tracing::warn!(target: "toolcall", "could not renew a session lease");
                }
            }
        });
        Ok(SessionLease {
            archive,
            session: session.to_owned(),
            renewer,
        })
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        self.renewer.abort();
        let (archive, session) = (self.archive.clone(), std::mem::take(&mut self.session));
        let release = move || {
            let _ = archive.release_lease(&session, crate::archive::replica_owner());
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

/// Appends the client's new messages; each run of tool results goes in as answers to the
/// last reply's calls, in the shape that reply used (text-format calls get text results).
fn append_new(agent: &mut Agent, messages: &[Message]) -> Result<(), AgentError> {
    let mut answers = Vec::new();
    for m in messages {
        match m {
            Message::Tool {
                call_id,
                name,
                content,
            } => answers.push((call_id.clone(), name.clone(), content.clone())),
            other => {
                agent.append_client_results(std::mem::take(&mut answers))?;
                agent.append(other.clone())?;
            }
        }
    }
    agent.append_client_results(answers)
}

fn cut(s: &str, max_chars: usize) -> String {
    s.chars().take(max_chars).collect()
}

/// A client's tool as a spec: its name, description and schema (nothing else a client
/// writes reaches the registry). The client runs it, so only its name matters here: a tool
/// of another kind than `function` (a gateway offers custom, namespace and built-in tools
/// as functions first, `toolcall_serve::tool_kinds`) or without parameters is taken with
/// an open object schema.
fn client_spec(tool: &ChatTool) -> Result<ToolSpec, ServerTurnError> {
    let f = &tool.function;
    if f.name.is_empty() {
        return Err(ServerTurnError::BadRequest(format!(
            "a tool of type {:?} without a name",
            tool.kind
        )));
    }
    let parameters = match &f.parameters {
        Some(p) if p.is_object() => p.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    };
    Ok(ToolSpec::new(
        f.name.clone(),
        f.description.clone().unwrap_or_default(),
        parameters,
    ))
}

/// The turn's answer as a `chat.completion`: the client's calls, or the final text.
fn completion(model: &str, report: &TurnReport) -> Value {
    let calls: Vec<WireCall> = report
        .client_calls
        .iter()
        .map(|c| WireCall {
            id: Some(c.call_id.as_str().to_owned()),
            name: c.name.clone(),
            arguments: match &c.arguments {
                Value::Object(m) => Ok(m.clone()),
                other => toolcall_wire::decode_arguments(Some(other)),
            },
        })
        .collect();
    let reply = Reply {
        text: if calls.is_empty() {
            Some(report.final_text.clone().unwrap_or_default())
        } else {
            None
        },
        calls,
        ..Reply::default()
    };
    let meta = ReplyMeta {
        id: format!("chatcmpl-{}", &CallId::generate().as_str()["call_".len()..]),
        model: model.to_owned(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        ..ReplyMeta::default()
    };
    toolcall_wire::chat::Chat.encode_reply(&reply, &meta)
}

/// A client's Chat Completions `messages` as the provider-neutral conversation. Content
/// given as parts keeps its text parts; a tool message's content is its JSON when it
/// parses, else the text.
pub fn from_chat_messages(messages: &[ChatMessage]) -> Result<Vec<Message>, ServerTurnError> {
    let bad = |i: usize, m: &str| ServerTurnError::BadRequest(format!("messages[{i}]: {m}"));
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let text = m.content_text();
        out.push(match m.role.as_str() {
            "system" | "developer" => Message::system(text.unwrap_or_default()),
            "user" => Message::user(text.unwrap_or_default()),
            "assistant" => {
                let mut calls = Vec::new();
                for c in m.tool_calls.iter().flatten() {
                    let name = c.function.name.as_str();
                    if name.is_empty() {
                        return Err(bad(i, "a tool call without function.name"));
                    }
                    // The one arguments policy: undecodable arguments stay a string, which
                    // validation answers, never `{}`.
                    let arguments =
                        WireCall::new(None, name, Some(&c.function.arguments)).arguments_value();
                    let mut call = ToolCall::new(name, arguments, "openai_chat");
                    if !c.id.is_empty() {
                        call.call_id = c.id.as_str().into();
                    }
                    calls.push(call);
                }
                Message::Assistant { text, calls }
            }
            "tool" => {
                let call_id = m
                    .tool_call_id
                    .as_deref()
                    .ok_or_else(|| bad(i, "a tool message without tool_call_id"))?;
                let content = text.unwrap_or_default();
                // OpenAI tool messages seldom name the tool: the call they answer does.
                let name = m
                    .name
                    .clone()
                    .unwrap_or_else(|| name_of_call(&out, call_id));
                let mut content = serde_json::from_str(&content).unwrap_or(Value::String(content));
                // A result's images (a screenshot the client took) go on with it, after its
                // text, as tool results carry images.
                let images = m.images();
                if !images.is_empty() {
                    let mut parts = Vec::with_capacity(1 + images.len());
                    parts.push(content);
                    parts.extend(images.into_iter().map(|i| {
                        match i {
                            ImagePart::Data { media_type, data } => Image {
                                media_type: media_type.to_owned(),
                                data: data.to_owned(),
                            }
                            .to_value(),
                            ImagePart::Url(url) => Value::String(url.to_owned()),
                        }
                    }));
                    content = Value::Array(parts);
                }
                Message::Tool {
                    call_id: call_id.into(),
                    name,
                    content,
                }
            }
            other => return Err(bad(i, &format!("unknown role {other:?}"))),
        });
    }
    Ok(out)
}

/// The tool name of the latest assistant call with this id (empty when none).
fn name_of_call(messages: &[Message], call_id: &str) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { calls, .. } => calls
                .iter()
                .find(|c| c.call_id.as_str() == call_id)
                .map(|c| c.name.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn arguments_of(arguments: Option<Value>) -> Value {
        let mut call = json!({"id": "c1", "function": {"name": "f"}});
        if let Some(a) = arguments {
            call["function"]["arguments"] = a;
        }
        let messages: Vec<ChatMessage> =
            serde_json::from_value(json!([{"role": "assistant", "tool_calls": [call]}])).unwrap();
        match &from_chat_messages(&messages).unwrap()[0] {
            Message::Assistant { calls, .. } => calls[0].arguments.clone(),
            other => panic!("{other:?}"),
        }
    }

    // The client's history follows the wire's one arguments policy: blank or absent is no
    // arguments, JSON that is no object stays the raw text (validation answers it).
    #[test]
    fn history_arguments_follow_the_one_policy() {
        assert_eq!(arguments_of(None), json!({}));
        assert_eq!(arguments_of(Some(json!("  "))), json!({}));
        assert_eq!(arguments_of(Some(json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(arguments_of(Some(json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(arguments_of(Some(json!("[1,2]"))), json!("[1,2]"));
        assert_eq!(arguments_of(Some(json!("{oops"))), json!("{oops"));
        assert_eq!(arguments_of(Some(json!(7))), json!("7"));
    }
}
