//! The session archive: sessions, their conversations, calls, results and pack state
//! snapshots, behind one [`ArchiveBackend`] trait with two implementations:
//! [`sqlite::SqliteArchive`] (a file in WAL mode, the embedded default) and, with the
//! `postgres` feature, [`postgres::PostgresArchive`] (one database shared by several
//! gateway replicas). [`Archive::connect`] picks one from a location: a `postgres://` or
//! `postgresql://` URL, else a file path (`:memory:` for none).
//!
//! Tables: `sessions`, `messages` (the conversation, for inspection and `--resume`), `calls`
//! (call_id, name, arguments, format, repairs), `results` (call_id, outcome JSON, duration,
//! whether it came inline or from a job), and `pack_states` (a snapshot per pack, so a
//! stateful pack such as a game world can be resumed). Every write is its own transaction,
//! committed before the loop moves on, so a killed process loses no finished call.
//! Arguments and results are stored redacted. The agent loop does not call the
//! archive: [`recorder::Recorder`] consumes the loop's events and writes them on its own
//! thread, off the async runtime.
//!
//! [`Archive`] owns what both backends share: redaction, JSON (de)serialisation, session
//! ids, and assembling a [`SessionRecord`]; a backend only stores and reads rows (JSON as
//! text). The trait is synchronous: the archive's writer is the recorder's own thread, and
//! its other callers (`toolcall sessions`, `--resume`, the Python bindings) are synchronous
//! too; SQLite's driver is blocking, and the PostgreSQL backend drives its async client on a
//! small runtime of its own, so it can be called from any thread (inside an async runtime
//! or not) without nesting runtimes.
//!
//! The schema is versioned: opening an archive applies the migrations it lacks, in one
//! transaction, and refuses an archive from a newer build (see [`SCHEMA_VERSION`]). Both
//! backends have the same list of migrations, entry for entry the same in meaning, so a
//! schema version names the same tables on either.

pub mod feed;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod recorder;
pub mod sqlite;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolcall_core::{CallId, ToolCall, ToolResult};

use crate::client::Message;
use crate::events::redact_message;
use crate::redact::redact;

pub use sqlite::{SqliteArchive, schema_version};

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("session archive: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("session archive (PostgreSQL): {0}")]
    Postgres(String),
    #[error("session archive: stored JSON is damaged: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no session {0:?} in the archive")]
    NoSession(String),
    #[error("session archive lock poisoned")]
    Poisoned,
    #[error("session archive writer: {0}")]
    Writer(String),
    #[error("session archive location {0:?}: {1}")]
    Location(String, String),
    #[error(
        "the session archive has schema version {found}, newer than this build knows \
         ({known}); use a newer toolcall"
    )]
    NewerSchema { found: i64, known: usize },
}

/// The schema version this build writes (the same on every backend).
pub const SCHEMA_VERSION: usize = sqlite::MIGRATIONS.len();

/// How many migrations of [`SCHEMA_VERSION`] an archive at version `found` has applied;
/// an archive from a newer build is an error.
pub(crate) fn check_version(found: i64) -> Result<usize, ArchiveError> {
    usize::try_from(found)
        .ok()
        .filter(|v| *v <= SCHEMA_VERSION)
        .ok_or(ArchiveError::NewerSchema {
            found,
            known: SCHEMA_VERSION,
        })
}

/// A call as a backend stores it (arguments and repairs as JSON text, redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    pub round: i64,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    pub format: String,
    pub repairs: String,
    /// The replica that recorded it ([`replica_owner`]; empty in rows from before
    /// schema version 4).
    pub replica: String,
}

/// A call row as another replica's inspector follows it (see [`feed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCall {
    /// The row id: the feed's cursor.
    pub row: i64,
    pub session: String,
    pub call: CallRow,
}

/// A result row as a feed follows it, with the row id of the call it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedResult {
    pub row: i64,
    pub session: String,
    pub call_row: i64,
    pub result: ResultRow,
}

/// A result as a backend stores it (the outcome as JSON text, redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRow {
    pub call_id: String,
    pub name: String,
    pub outcome: String,
    pub duration_ms: i64,
    /// `inline` or `job`.
    pub delivery: String,
}

/// A call of the session's last assistant message, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReplyCall {
    pub call_id: String,
    pub name: String,
    pub format: String,
    /// The result last delivered inline for it (JSON text), if any.
    pub outcome: Option<String>,
}

/// Who holds a call's claim, and how far it got (`running`, `done`, `interrupted`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub owner: String,
    pub state: String,
}

/// Where an archive's rows live. Every write is committed before the method returns.
/// Implementations are called from any thread, inside an async runtime or not (see the
/// module doc); JSON arrives and leaves as text, already redacted.
pub trait ArchiveBackend: Send + Sync {
    /// The schema version the store has now.
    fn schema_version(&self) -> Result<i64, ArchiveError>;
    fn create_session(&self, id: &str, description: &str) -> Result<(), ArchiveError>;
    fn has_session(&self, id: &str) -> Result<bool, ArchiveError>;
    fn add_message(&self, session: &str, role: &str, message: &str) -> Result<(), ArchiveError>;
    /// Records a call, tied to the session's last assistant message.
    fn record_call(&self, session: &str, call: &CallRow) -> Result<(), ArchiveError>;
    /// Records a result, tied to the latest call with its call id in the session.
    fn record_outcome(&self, session: &str, result: &ResultRow) -> Result<(), ArchiveError>;
    /// The calls tied to the session's last assistant message, in the order recorded.
    fn calls_of_last_reply(&self, session: &str) -> Result<Vec<StoredReplyCall>, ArchiveError>;
    /// The outcome last delivered inline for `call_id`.
    fn inline_result(&self, session: &str, call_id: &str) -> Result<Option<String>, ArchiveError>;
    /// Saves (replaces) a pack's state snapshot.
    fn save_state(&self, session: &str, pack: &str, snapshot: &str) -> Result<(), ArchiveError>;
    fn load_state(&self, session: &str, pack: &str) -> Result<Option<String>, ArchiveError>;
    /// Every pack's snapshot, by pack name.
    fn pack_states(&self, session: &str) -> Result<Vec<(String, String)>, ArchiveError>;
    /// The session's messages (JSON text), in order.
    fn load_messages(&self, session: &str) -> Result<Vec<String>, ArchiveError>;
    /// All sessions, newest first.
    fn list_sessions(&self) -> Result<Vec<SessionSummary>, ArchiveError>;
    fn session_summary(&self, id: &str) -> Result<Option<SessionSummary>, ArchiveError>;
    /// The session's calls in order, each with its row id.
    fn calls(&self, session: &str) -> Result<Vec<(i64, CallRow)>, ArchiveError>;
    /// The session's results in order, each with the row id of the call it answers.
    fn results(&self, session: &str) -> Result<Vec<(Option<i64>, ResultRow)>, ArchiveError>;
    /// Takes (or renews) the session's lease for `owner` until `expires_ms`, if no other
    /// owner holds one that is still valid at `now_ms`; whether it was taken.
    fn acquire_lease(
        &self,
        session: &str,
        owner: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<bool, ArchiveError>;
    fn release_lease(&self, session: &str, owner: &str) -> Result<(), ArchiveError>;
    /// Claims a call (`running`) in one statement; `None` when this claim made it, else
    /// the claim that was there first.
    fn claim_call(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        owner: &str,
    ) -> Result<Option<Claim>, ArchiveError>;
    fn settle_claim(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        state: &str,
    ) -> Result<(), ArchiveError>;
    /// Marks every claim of the session still `running` as `interrupted` (call this holding
    /// the session's lease: such a claim's turn is gone); the (turn, call id) of each.
    fn recover_claims(&self, session: &str) -> Result<Vec<(i64, String)>, ArchiveError>;
    /// Every tool switch a person set: (tool name, on).
    fn tool_switches(&self) -> Result<Vec<(String, bool)>, ArchiveError>;
    /// Sets one tool's switch, writing only its row.
    fn set_tool_switch(&self, name: &str, enabled: bool) -> Result<(), ArchiveError>;
    /// The newest row ids of `calls` and `results` (0 when empty).
    fn last_rows(&self) -> Result<(i64, i64), ArchiveError>;
    /// Calls of every session with a row id above `after` that `replica` did not record, in
    /// row order, at most `limit`.
    fn calls_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedCall>, ArchiveError>;
    /// Results with a row id above `after` answering calls that `replica` did not record,
    /// in row order, at most `limit`.
    fn results_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedResult>, ArchiveError>;
    /// Whether several processes may share this store (replicas): then tool switches live
    /// in it, and an inspector follows other replicas' calls in it.
    fn shared(&self) -> bool {
        false
    }
}

/// How a result reached the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    Inline,
    Job,
}

impl Delivery {
    fn as_str(self) -> &'static str {
        match self {
            Delivery::Inline => "inline",
            Delivery::Job => "job",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    pub created_at: String,
    pub description: String,
    pub messages: u64,
    pub calls: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// `{"status":"ok","data":..}` or `{"error":{..}}`.
    pub outcome: Value,
    pub duration_ms: u64,
    pub delivery: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub round: u64,
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    pub format: String,
    pub repairs: Value,
    /// Every result delivered for this call (a job has its `running` answer and its result).
    pub results: Vec<ResultRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session: SessionSummary,
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub pack_states: serde_json::Map<String, Value>,
}

/// A call archived from an assistant reply, with its inline result if one was archived.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyCall {
    pub call_id: CallId,
    pub name: String,
    /// The format the call was read in.
    pub format: String,
    pub outcome: Option<Value>,
}

/// A session archive: the shared part over one backend (see the module doc).
pub struct Archive {
    backend: Box<dyn ArchiveBackend>,
}

impl Archive {
    /// Opens (creating if needed) an SQLite archive file.
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        Ok(Self::with_backend(Box::new(SqliteArchive::open(path)?)))
    }

    /// An archive in memory (tests, `--archive :memory:`).
    pub fn in_memory() -> Result<Self, ArchiveError> {
        Ok(Self::with_backend(Box::new(SqliteArchive::in_memory()?)))
    }

    /// Opens the archive at `location`: a `postgres://` / `postgresql://` URL (with the
    /// `postgres` feature), `:memory:`, else an SQLite file path.
    pub fn connect(location: &str) -> Result<Self, ArchiveError> {
        if is_postgres_url(location) {
            return Self::connect_postgres(location);
        }
        if location == ":memory:" {
            return Self::in_memory();
        }
        Self::open(Path::new(location))
    }

    #[cfg(feature = "postgres")]
    fn connect_postgres(url: &str) -> Result<Self, ArchiveError> {
        Ok(Self::with_backend(Box::new(
            postgres::PostgresArchive::connect(url)?,
        )))
    }

    #[cfg(not(feature = "postgres"))]
    fn connect_postgres(url: &str) -> Result<Self, ArchiveError> {
        Err(ArchiveError::Location(
            redact_url(url),
            "this build has no PostgreSQL support (the `postgres` feature of toolcall-run)".into(),
        ))
    }

    /// An archive over any backend.
    pub fn with_backend(backend: Box<dyn ArchiveBackend>) -> Self {
        Archive { backend }
    }

    /// The backend's schema version now.
    pub fn schema_version(&self) -> Result<i64, ArchiveError> {
        self.backend.schema_version()
    }

    /// Starts a new session and returns its id.
    pub fn create_session(&self, description: &str) -> Result<String, ArchiveError> {
        let id = format!("ses_{}", &CallId::generate().as_str()["call_".len()..]);
        self.backend.create_session(&id, description)?;
        Ok(id)
    }

    pub fn has_session(&self, id: &str) -> Result<bool, ArchiveError> {
        self.backend.has_session(id)
    }

    /// Appends a message; assistant call arguments and tool results are stored redacted
    /// (a text-mode assistant text is redacted by the agent, which knows its calls).
    pub fn add_message(&self, session: &str, message: &Message) -> Result<(), ArchiveError> {
        let stored = redact_message(message, &[]);
        let role = match &stored {
            Message::System { .. } => "system",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
            Message::JobResult { .. } => "job_result",
            Message::TextResults { .. } => "text_results",
        };
        let json = serde_json::to_string(&stored)?;
        self.backend.add_message(session, role, &json)
    }

    /// Records a call (arguments redacted).
    pub fn record_call(
        &self,
        session: &str,
        round: usize,
        call: &ToolCall,
    ) -> Result<(), ArchiveError> {
        let row = CallRow {
            round: i64::try_from(round).unwrap_or(i64::MAX),
            call_id: call.call_id.as_str().to_owned(),
            name: call.name.clone(),
            arguments: serde_json::to_string(&redact(&call.arguments))?,
            format: call.origin.format.to_string(),
            repairs: serde_json::to_string(&call.origin.repairs)?,
            replica: replica_owner().to_owned(),
        };
        self.backend.record_call(session, &row)
    }

    /// Records a result (redacted), committed before this returns.
    pub fn record_result(
        &self,
        session: &str,
        result: &ToolResult,
        duration: Duration,
        delivery: Delivery,
    ) -> Result<(), ArchiveError> {
        self.record_outcome(
            session,
            result.call_id.as_str(),
            &result.name,
            &result.to_json(),
            duration.as_millis().min(u64::MAX as u128) as u64,
            delivery,
        )
    }

    /// Records a result given as the JSON the model receives (`{"status":"ok","data":..}`
    /// or `{"error":{..}}`), redacted, committed before this returns.
    pub fn record_outcome(
        &self,
        session: &str,
        call_id: &str,
        name: &str,
        outcome: &Value,
        duration_ms: u64,
        delivery: Delivery,
    ) -> Result<(), ArchiveError> {
        let row = ResultRow {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            outcome: redact(outcome).to_string(),
            duration_ms: duration_ms.min(i64::MAX as u64) as i64,
            delivery: delivery.as_str().to_owned(),
        };
        self.backend.record_outcome(session, &row)
    }

    /// The calls archived from the session's last assistant message, in the order they
    /// ran, each with the result last delivered inline for it (redacted), if any.
    pub fn calls_of_last_reply(&self, session: &str) -> Result<Vec<ReplyCall>, ArchiveError> {
        self.backend
            .calls_of_last_reply(session)?
            .into_iter()
            .map(|row| {
                Ok(ReplyCall {
                    call_id: CallId::from(row.call_id.as_str()),
                    name: row.name,
                    format: row.format,
                    outcome: row.outcome.map(|t| serde_json::from_str(&t)).transpose()?,
                })
            })
            .collect()
    }

    /// The result (redacted outcome JSON) last delivered inline for `call_id` in a session,
    /// if one was archived: what the model was, or was about to be, told about the call.
    pub fn inline_result(
        &self,
        session: &str,
        call_id: &str,
    ) -> Result<Option<Value>, ArchiveError> {
        let text = self.backend.inline_result(session, call_id)?;
        Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
    }

    /// Saves (replaces) a pack's state snapshot.
    pub fn save_state(
        &self,
        session: &str,
        pack: &str,
        snapshot: &Value,
    ) -> Result<(), ArchiveError> {
        let json = serde_json::to_string(snapshot)?;
        self.backend.save_state(session, pack, &json)
    }

    /// A pack's last saved state.
    pub fn load_state(&self, session: &str, pack: &str) -> Result<Option<Value>, ArchiveError> {
        let text = self.backend.load_state(session, pack)?;
        Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
    }

    /// The conversation of a session, in order (for `--resume`).
    pub fn load_messages(&self, session: &str) -> Result<Vec<Message>, ArchiveError> {
        self.backend
            .load_messages(session)?
            .iter()
            .map(|t| serde_json::from_str(t).map_err(ArchiveError::from))
            .collect()
    }

    /// All sessions, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>, ArchiveError> {
        self.backend.list_sessions()
    }

    /// Takes (or renews) `session`'s lease for `owner`, valid for `lease` from now, unless
    /// another owner holds a valid one; whether it was taken. Expiry is measured on each
    /// replica's clock, so replicas' clocks must agree to well within `lease`.
    pub fn acquire_lease(
        &self,
        session: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, ArchiveError> {
        let now = unix_ms();
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        self.backend.acquire_lease(session, owner, now, until)
    }

    /// Gives `session`'s lease up if `owner` holds it.
    pub fn release_lease(&self, session: &str, owner: &str) -> Result<(), ArchiveError> {
        self.backend.release_lease(session, owner)
    }

    /// Claims call `call_id` of the assistant message at position `turn` of the session's
    /// conversation for `owner`, committed before this returns; `None` when claimed now,
    /// else the claim another run made first (the call must not run again).
    pub fn claim_call(
        &self,
        session: &str,
        turn: usize,
        call_id: &str,
        owner: &str,
    ) -> Result<Option<Claim>, ArchiveError> {
        let turn = i64::try_from(turn).unwrap_or(i64::MAX);
        self.backend.claim_call(session, turn, call_id, owner)
    }

    /// Marks a claimed call `done` (its result is archived).
    pub fn finish_claim(
        &self,
        session: &str,
        turn: usize,
        call_id: &str,
    ) -> Result<(), ArchiveError> {
        let turn = i64::try_from(turn).unwrap_or(i64::MAX);
        self.backend.settle_claim(session, turn, call_id, "done")
    }

    /// Marks the session's calls still `running` as `interrupted` and returns their call
    /// ids: call it holding the session's lease (the run that claimed them is gone).
    pub fn recover_claims(&self, session: &str) -> Result<Vec<String>, ArchiveError> {
        Ok(self
            .backend
            .recover_claims(session)?
            .into_iter()
            .map(|(_, call_id)| call_id)
            .collect())
    }

    /// Whether this archive is one several replicas share (PostgreSQL): tool switches are
    /// kept in it, and inspectors follow each other's calls through it.
    pub fn is_shared(&self) -> bool {
        self.backend.shared()
    }

    /// Every tool switch set in the archive, by tool name.
    pub fn tool_switches(&self) -> Result<std::collections::BTreeMap<String, bool>, ArchiveError> {
        Ok(self.backend.tool_switches()?.into_iter().collect())
    }

    /// Switches tool `name` on or off for every replica, committed before this returns;
    /// the other switches are not written.
    pub fn set_tool_switch(&self, name: &str, enabled: bool) -> Result<(), ArchiveError> {
        self.backend.set_tool_switch(name, enabled)
    }

    /// The backend under this archive (the feed reads rows through it).
    pub fn backend(&self) -> &dyn ArchiveBackend {
        self.backend.as_ref()
    }

    /// Everything archived for one session.
    pub fn show_session(&self, id: &str) -> Result<SessionRecord, ArchiveError> {
        let session = self
            .backend
            .session_summary(id)?
            .ok_or_else(|| ArchiveError::NoSession(id.to_owned()))?;
        let messages = self.load_messages(id)?;
        let result_rows = self.backend.results(id)?;
        let mut calls = Vec::new();
        for (row_id, row) in self.backend.calls(id)? {
            let results = result_rows
                .iter()
                .filter(|(answers, _)| *answers == Some(row_id))
                .map(|(_, r)| {
                    Ok(ResultRecord {
                        outcome: serde_json::from_str(&r.outcome)?,
                        duration_ms: r.duration_ms.max(0) as u64,
                        delivery: r.delivery.clone(),
                    })
                })
                .collect::<Result<Vec<_>, ArchiveError>>()?;
            calls.push(CallRecord {
                round: row.round.max(0) as u64,
                call_id: row.call_id,
                name: row.name,
                arguments: serde_json::from_str(&row.arguments)?,
                format: row.format,
                repairs: serde_json::from_str(&row.repairs)?,
                results,
            });
        }
        let mut pack_states = serde_json::Map::new();
        for (pack, snap) in self.backend.pack_states(id)? {
            pack_states.insert(pack, serde_json::from_str(&snap)?);
        }
        Ok(SessionRecord {
            session,
            messages,
            calls,
            pack_states,
        })
    }
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// This process's name as a claim and lease owner: unique per process start.
pub fn replica_owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| {
        format!(
            "replica_{}_{}",
            std::process::id(),
            &CallId::generate().as_str()["call_".len()..]
        )
    })
}

/// Whether `location` names a PostgreSQL database rather than a file.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// `location` with any password in a URL's user part hidden (for error messages and logs).
pub fn redact_url(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else {
        return location.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => location.to_owned(),
        },
        None => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    //
    #[test]
    fn calls_results_and_states_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sqlite");
        let a = Archive::open(&path).unwrap();
        let s = a.create_session("demo").unwrap();
        let call = ToolCall {
            call_id: "c1".into(),
            name: "login".into(),
            arguments: json!({"user": "ann", "password": "hunter2"}),
            origin: toolcall_core::Origin {
                format: "hermes".into(),
                span: 0..0,
                repairs: vec![toolcall_core::Repair::new("trailing_comma", "removed")],
            },
        };
        a.add_message(&s, &Message::user("hi")).unwrap();
        a.add_message(
            &s,
            &Message::Assistant {
                text: None,
                calls: vec![call.clone()],
            },
        )
        .unwrap();
        a.record_call(&s, 1, &call).unwrap();
        let r = ToolResult::ok("c1".into(), "login", json!({"ok": true}));
        a.record_result(&s, &r, Duration::from_millis(7), Delivery::Inline)
            .unwrap();
        a.save_state(&s, "world", &json!({"v": 1})).unwrap();
        a.save_state(&s, "world", &json!({"v": 2})).unwrap();
        drop(a);

        let a = Archive::open(&path).unwrap();
        assert_eq!(a.list_sessions().unwrap()[0].id, s);
        let rec = a.show_session(&s).unwrap();
        assert_eq!(rec.calls.len(), 1);
        assert_eq!(rec.calls[0].arguments["password"], json!("[REDACTED]"));
        assert_eq!(rec.calls[0].format, "hermes");
        assert_eq!(rec.calls[0].repairs[0]["kind"], json!("trailing_comma"));
        assert_eq!(rec.calls[0].results[0].outcome, r.to_json());
        assert_eq!(rec.calls[0].results[0].duration_ms, 7);
        assert_eq!(rec.pack_states["world"], json!({"v": 2}));
        assert_eq!(a.load_state(&s, "world").unwrap(), Some(json!({"v": 2})));
        let msgs = a.load_messages(&s).unwrap();
        assert_eq!(msgs.len(), 2);
        let Message::Assistant { calls, .. } = &msgs[1] else {
            panic!("not assistant")
        };
        assert_eq!(calls[0].arguments["password"], json!("[REDACTED]"));
        assert!(matches!(
            a.show_session("nope"),
            Err(ArchiveError::NoSession(_))
        ));
    }

    #[test]
    fn a_url_password_is_hidden() {
        assert_eq!(
            redact_url("postgres://ann:secret@db:5432/x"),
            "postgres://ann:***@db:5432/x"
        );
        assert_eq!(redact_url("postgres://db/x"), "postgres://db/x");
        assert_eq!(redact_url("a/b.sqlite"), "a/b.sqlite");
        assert!(is_postgres_url("postgresql://db/x"));
        assert!(!is_postgres_url("postgres.sqlite"));
    }
}
