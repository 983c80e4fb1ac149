//! The session archive: SQLite in WAL mode.
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
//! The schema is versioned: opening an archive applies the migrations it lacks, in one
//! transaction, and refuses an archive from a newer build (see [`SCHEMA_VERSION`]).

pub mod recorder;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolcall_core::{CallId, ToolCall, ToolResult};

use crate::client::Message;
use crate::events::redact_message;
use crate::redact::redact;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("session archive: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("session archive: stored JSON is damaged: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no session {0:?} in the archive")]
    NoSession(String),
    #[error("session archive lock poisoned")]
    Poisoned,
    #[error("session archive writer: {0}")]
    Writer(String),
    #[error(
        "the session archive has schema version {found}, newer than this build knows \
         ({known}); use a newer toolcall"
    )]
    NewerSchema { found: i64, known: usize },
}

/// The schema, one migration per version, applied in order. `PRAGMA user_version` records
/// how many have been applied; a migration is never edited once released, a change is a
/// new entry. Version 1 is the schema archives had before versions were recorded (they have
/// `user_version` 0 and all its tables, so its `IF NOT EXISTS` makes it a no-op there).
///
/// Hand-written rather than `rusqlite_migration`: its latest release (2.6) requires
/// rusqlite 0.40, and two rusqlite versions cannot link SQLite into one binary.
const MIGRATIONS: &[&str] = &[MIGRATION_1, MIGRATION_2];

const MIGRATION_1: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    round INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    format TEXT NOT NULL,
    repairs TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX IF NOT EXISTS calls_session ON calls(session_id, id);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    call_id TEXT NOT NULL,
    -- The calls row answered: the latest call with this call_id in the session (models
    -- may reuse ids across turns).
    call_row INTEGER REFERENCES calls(id),
    name TEXT NOT NULL,
    outcome TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    delivery TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX IF NOT EXISTS results_session ON results(session_id, call_id);
CREATE TABLE IF NOT EXISTS pack_states (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    pack TEXT NOT NULL,
    snapshot TEXT NOT NULL,
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
    PRIMARY KEY (session_id, pack)
);
";

/// Version 2: each call row names the assistant message whose reply made it, so a resumed
/// text-format session knows which calls its last reply wrote (their ids are not in the
/// message, which keeps the model's own text).
const MIGRATION_2: &str = "
ALTER TABLE calls ADD COLUMN message_id INTEGER REFERENCES messages(id);
";

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

/// A session archive file.
pub struct Archive {
    conn: Mutex<Connection>,
}

impl Archive {
    /// Opens (creating if needed) an archive file.
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        let conn = Connection::open(path)?;
        Self::init(conn)
    }

    /// An archive in memory (tests, `--archive :memory:`).
    pub fn in_memory() -> Result<Self, ArchiveError> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Self, ArchiveError> {
        conn.busy_timeout(Duration::from_secs(5))?;
        // WAL: readers (`toolcall sessions`) never block the running loop; a commit is in the
        // log file before `execute` returns, so a killed process keeps it.
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA foreign_keys=ON;")?;
        migrate(&mut conn)?;
        Ok(Archive {
            conn: Mutex::new(conn),
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, ArchiveError>,
    ) -> Result<T, ArchiveError> {
        let conn = self.conn.lock().map_err(|_| ArchiveError::Poisoned)?;
        f(&conn)
    }

    /// Starts a new session and returns its id.
    pub fn create_session(&self, description: &str) -> Result<String, ArchiveError> {
        let id = format!("ses_{}", &CallId::generate().0["call_".len()..]);
        self.with(|c| {
            c.execute(
                "INSERT INTO sessions (id, description) VALUES (?1, ?2)",
                params![id, description],
            )?;
            Ok(())
        })?;
        Ok(id)
    }

    pub fn has_session(&self, id: &str) -> Result<bool, ArchiveError> {
        self.with(|c| {
            Ok(
                c.query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
                    .optional()?
                    .is_some(),
            )
        })
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
        self.with(|c| {
            c.execute(
                "INSERT INTO messages (session_id, role, message) VALUES (?1, ?2, ?3)",
                params![session, role, json],
            )?;
            Ok(())
        })
    }

    /// Records a call (arguments redacted).
    pub fn record_call(
        &self,
        session: &str,
        round: usize,
        call: &ToolCall,
    ) -> Result<(), ArchiveError> {
        let args = serde_json::to_string(&redact(&call.arguments))?;
        let repairs = serde_json::to_string(&call.origin.repairs)?;
        self.with(|c| {
            c.execute(
                "INSERT INTO calls (session_id, round, call_id, name, arguments, format, repairs,
                    message_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, (SELECT id FROM messages
                    WHERE session_id = ?1 AND role = 'assistant' ORDER BY id DESC LIMIT 1))",
                params![
                    session,
                    round as i64,
                    call.call_id.as_str(),
                    call.name,
                    args,
                    call.origin.format,
                    repairs
                ],
            )?;
            Ok(())
        })
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
        let outcome = redact(outcome).to_string();
        self.with(|c| {
            c.execute(
                "INSERT INTO results (session_id, call_id, call_row, name, outcome, duration_ms,
                    delivery)
                 VALUES (?1, ?2, (SELECT id FROM calls WHERE session_id = ?1 AND call_id = ?2
                    ORDER BY id DESC LIMIT 1), ?3, ?4, ?5, ?6)",
                params![
                    session,
                    call_id,
                    name,
                    outcome,
                    duration_ms.min(i64::MAX as u64) as i64,
                    delivery.as_str()
                ],
            )?;
            Ok(())
        })
    }

    /// The calls archived from the session's last assistant message, in the order they
    /// ran, each with the result last delivered inline for it (redacted), if any.
    pub fn calls_of_last_reply(&self, session: &str) -> Result<Vec<ReplyCall>, ArchiveError> {
        let rows: Vec<(String, String, String, Option<String>)> = self.with(|c| {
            let mut st = c.prepare(
                "SELECT k.call_id, k.name, k.format, (SELECT r.outcome FROM results r
                    WHERE r.call_row = k.id AND r.delivery = 'inline' ORDER BY r.id DESC LIMIT 1)
                 FROM calls k WHERE k.session_id = ?1 AND k.message_id = (SELECT id FROM messages
                    WHERE session_id = ?1 AND role = 'assistant' ORDER BY id DESC LIMIT 1)
                 ORDER BY k.id",
            )?;
            let rows = st
                .query_map([session], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        rows.into_iter()
            .map(|(call_id, name, format, outcome)| {
                Ok(ReplyCall {
                    call_id: CallId::from(call_id.as_str()),
                    name,
                    format,
                    outcome: outcome.map(|t| serde_json::from_str(&t)).transpose()?,
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
        let text: Option<String> = self.with(|c| {
            Ok(c.query_row(
                "SELECT outcome FROM results WHERE session_id = ?1 AND call_id = ?2
                    AND delivery = 'inline' ORDER BY id DESC LIMIT 1",
                params![session, call_id],
                |r| r.get(0),
            )
            .optional()?)
        })?;
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
        self.with(|c| {
            c.execute(
                "INSERT INTO pack_states (session_id, pack, snapshot) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id, pack) DO UPDATE SET snapshot = excluded.snapshot,
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')",
                params![session, pack, json],
            )?;
            Ok(())
        })
    }

    /// A pack's last saved state.
    pub fn load_state(&self, session: &str, pack: &str) -> Result<Option<Value>, ArchiveError> {
        let text: Option<String> = self.with(|c| {
            Ok(c.query_row(
                "SELECT snapshot FROM pack_states WHERE session_id = ?1 AND pack = ?2",
                params![session, pack],
                |r| r.get(0),
            )
            .optional()?)
        })?;
        Ok(text.map(|t| serde_json::from_str(&t)).transpose()?)
    }

    /// The conversation of a session, in order (for `--resume`).
    pub fn load_messages(&self, session: &str) -> Result<Vec<Message>, ArchiveError> {
        let rows: Vec<String> = self.with(|c| {
            let mut st =
                c.prepare("SELECT message FROM messages WHERE session_id = ?1 ORDER BY id")?;
            let rows = st
                .query_map([session], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        rows.iter()
            .map(|t| serde_json::from_str(t).map_err(ArchiveError::from))
            .collect()
    }

    /// All sessions, newest first.
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT s.id, s.created_at, s.description,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                    (SELECT COUNT(*) FROM calls k WHERE k.session_id = s.id)
                 FROM sessions s ORDER BY s.created_at DESC, s.rowid DESC",
            )?;
            let rows = st
                .query_map([], summary_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// Everything archived for one session.
    pub fn show_session(&self, id: &str) -> Result<SessionRecord, ArchiveError> {
        let session = self
            .with(|c| {
                Ok(c.query_row(
                    "SELECT s.id, s.created_at, s.description,
                        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                        (SELECT COUNT(*) FROM calls k WHERE k.session_id = s.id)
                     FROM sessions s WHERE s.id = ?1",
                    [id],
                    summary_row,
                )
                .optional()?)
            })?
            .ok_or_else(|| ArchiveError::NoSession(id.to_owned()))?;
        let messages = self.load_messages(id)?;
        type CallRow = (i64, i64, String, String, String, String, String);
        type ResultRow = (Option<i64>, String, i64, String);
        let (call_rows, result_rows, state_rows) = self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, round, call_id, name, arguments, format, repairs FROM calls
                 WHERE session_id = ?1 ORDER BY id",
            )?;
            let calls: Vec<CallRow> = st
                .query_map([id], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })?
                .collect::<Result<_, _>>()?;
            let mut st = c.prepare(
                "SELECT call_row, outcome, duration_ms, delivery FROM results
                 WHERE session_id = ?1 ORDER BY id",
            )?;
            let results: Vec<ResultRow> = st
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?;
            let mut st = c.prepare(
                "SELECT pack, snapshot FROM pack_states WHERE session_id = ?1 ORDER BY pack",
            )?;
            let states: Vec<(String, String)> = st
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            Ok((calls, results, states))
        })?;
        let mut calls = Vec::with_capacity(call_rows.len());
        for (row, round, call_id, name, arguments, format, repairs) in call_rows {
            let results = result_rows
                .iter()
                .filter(|r| r.0 == Some(row))
                .map(|r| {
                    Ok(ResultRecord {
                        outcome: serde_json::from_str(&r.1)?,
                        duration_ms: r.2.max(0) as u64,
                        delivery: r.3.clone(),
                    })
                })
                .collect::<Result<Vec<_>, ArchiveError>>()?;
            calls.push(CallRecord {
                round: round.max(0) as u64,
                call_id,
                name,
                arguments: serde_json::from_str(&arguments)?,
                format,
                repairs: serde_json::from_str(&repairs)?,
                results,
            });
        }
        let mut pack_states = serde_json::Map::new();
        for (pack, snap) in state_rows {
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

/// Brings the schema to the newest version in one transaction (concurrent openers wait for
/// each other); an archive from a newer build is refused rather than written to.
fn migrate(conn: &mut Connection) -> Result<(), ArchiveError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let applied = usize::try_from(found)
        .ok()
        .filter(|v| *v <= MIGRATIONS.len())
        .ok_or(ArchiveError::NewerSchema {
            found,
            known: MIGRATIONS.len(),
        })?;
    for migration in MIGRATIONS.iter().skip(applied) {
        tx.execute_batch(migration)?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    tx.commit()?;
    Ok(())
}

/// The schema version an archive file has (`PRAGMA user_version`).
pub fn schema_version(path: &Path) -> Result<i64, ArchiveError> {
    let conn = Connection::open(path)?;
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        id: r.get(0)?,
        created_at: r.get(1)?,
        description: r.get(2)?,
        messages: r.get::<_, i64>(3)?.max(0) as u64,
        calls: r.get::<_, i64>(4)?.max(0) as u64,
    })
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

    //
    #[test]
    fn reused_call_ids_keep_their_own_results() {
        let a = Archive::in_memory().unwrap();
        let s = a.create_session("reuse").unwrap();
        for (round, n) in [(1, 1), (2, 2)] {
            let call = ToolCall::new("t", json!({"n": n}), "openai_chat");
            let call = ToolCall {
                call_id: "call_0".into(),
                ..call
            };
            a.record_call(&s, round, &call).unwrap();
            let r = ToolResult::ok("call_0".into(), "t", json!(n));
            a.record_result(&s, &r, Duration::ZERO, Delivery::Inline)
                .unwrap();
        }
        let rec = a.show_session(&s).unwrap();
        assert_eq!(rec.calls.len(), 2);
        assert_eq!(rec.calls[0].results.len(), 1);
        assert_eq!(rec.calls[0].results[0].outcome["data"], 1);
        assert_eq!(rec.calls[1].results[0].outcome["data"], 2);
    }
}
