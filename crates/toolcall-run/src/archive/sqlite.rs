//! The SQLite archive backend: one file in WAL mode (the embedded default).
//!
//! Every write is its own transaction, committed before the call returns, so a killed
//! process loses no finished call. `PRAGMA user_version` records the schema version.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::{
    ArchiveBackend, ArchiveError, CallRow, Claim, FeedCall, FeedResult, ResultRow, SessionSummary,
    StoredReplyCall, check_version,
};

/// The schema, one migration per version, applied in order. `PRAGMA user_version` records
/// how many have been applied; a migration is never edited once released, a change is a
/// new entry. Version 1 is the schema archives had before versions were recorded (they have
/// `user_version` 0 and all its tables, so its `IF NOT EXISTS` makes it a no-op there).
///
/// Hand-written rather than `rusqlite_migration`: its latest release (2.6) requires
/// rusqlite 0.40, and two rusqlite versions cannot link SQLite into one binary.
pub(super) const MIGRATIONS: &[&str] = &[MIGRATION_1, MIGRATION_2, MIGRATION_3, MIGRATION_4];

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

/// Version 3: claims, for replicas sharing one archive. A session's lease names the turn
/// (owner) running it until `expires_ms` (Unix milliseconds, renewed while it runs); a call
/// is claimed under a key unique in its session (the position of the assistant message
/// that made it, and its call id) before it runs, and its claim is settled `done` once its
/// result is archived, or `interrupted` when a later turn finds it still `running` under a
/// lease that was lost.
const MIGRATION_3: &str = "
CREATE TABLE session_leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE call_claims (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    state TEXT NOT NULL,
    claimed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
    PRIMARY KEY (session_id, turn, call_id)
);
";

/// Version 4: tool switches, for replicas sharing one archive (one row per tool a person
/// switched; a flip writes only its row), and the replica that recorded each call, so one
/// replica's inspector can show the others' calls.
const MIGRATION_4: &str = "
CREATE TABLE tool_switches (
    name TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL,
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
ALTER TABLE calls ADD COLUMN replica TEXT NOT NULL DEFAULT '';
";

/// A session archive file.
pub struct SqliteArchive {
    conn: Mutex<Connection>,
}

impl SqliteArchive {
    /// Opens (creating if needed) an archive file.
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        Self::init(Connection::open(path)?)
    }

    /// An archive in memory.
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
        Ok(SqliteArchive {
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
}

/// Brings the schema to the newest version in one transaction (concurrent openers wait for
/// each other); an archive from a newer build is refused rather than written to.
fn migrate(conn: &mut Connection) -> Result<(), ArchiveError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let applied = check_version(found)?;
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

/// A [`CallRow`] from `round, call_id, name, arguments, format, repairs, replica`
/// starting at column `at`.
fn call_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<CallRow> {
    Ok(CallRow {
        round: r.get(at)?,
        call_id: r.get(at + 1)?,
        name: r.get(at + 2)?,
        arguments: r.get(at + 3)?,
        format: r.get(at + 4)?,
        repairs: r.get(at + 5)?,
        replica: r.get(at + 6)?,
    })
}

const SUMMARY: &str = "SELECT s.id, s.created_at, s.description,
    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
    (SELECT COUNT(*) FROM calls k WHERE k.session_id = s.id)
 FROM sessions s";

fn summary_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        id: r.get(0)?,
        created_at: r.get(1)?,
        description: r.get(2)?,
        messages: r.get::<_, i64>(3)?.max(0) as u64,
        calls: r.get::<_, i64>(4)?.max(0) as u64,
    })
}

impl ArchiveBackend for SqliteArchive {
    fn acquire_lease(
        &self,
        session: &str,
        owner: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<bool, ArchiveError> {
        self.with(|c| {
            Ok(c.execute(
                "INSERT INTO session_leases (session_id, owner, expires_ms) VALUES (?1, ?2, ?4)
                 ON CONFLICT(session_id) DO UPDATE SET owner = excluded.owner,
                    expires_ms = excluded.expires_ms
                 WHERE session_leases.owner = excluded.owner OR session_leases.expires_ms < ?3",
                params![session, owner, now_ms, expires_ms],
            )? == 1)
        })
    }

    fn release_lease(&self, session: &str, owner: &str) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "DELETE FROM session_leases WHERE session_id = ?1 AND owner = ?2",
                params![session, owner],
            )?;
            Ok(())
        })
    }

    fn claim_call(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        owner: &str,
    ) -> Result<Option<Claim>, ArchiveError> {
        self.with(|c| {
            let inserted = c.execute(
                "INSERT INTO call_claims (session_id, turn, call_id, owner, state)
                 VALUES (?1, ?2, ?3, ?4, 'running') ON CONFLICT DO NOTHING",
                params![session, turn, call_id, owner],
            )?;
            if inserted == 1 {
                return Ok(None);
            }
            Ok(Some(c.query_row(
                "SELECT owner, state FROM call_claims
                 WHERE session_id = ?1 AND turn = ?2 AND call_id = ?3",
                params![session, turn, call_id],
                |r| {
                    Ok(Claim {
                        owner: r.get(0)?,
                        state: r.get(1)?,
                    })
                },
            )?))
        })
    }

    fn settle_claim(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        state: &str,
    ) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "UPDATE call_claims SET state = ?4
                 WHERE session_id = ?1 AND turn = ?2 AND call_id = ?3",
                params![session, turn, call_id, state],
            )?;
            Ok(())
        })
    }

    fn recover_claims(&self, session: &str) -> Result<Vec<(i64, String)>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "UPDATE call_claims SET state = 'interrupted'
                 WHERE session_id = ?1 AND state = 'running' RETURNING turn, call_id",
            )?;
            let rows = st
                .query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn schema_version(&self) -> Result<i64, ArchiveError> {
        self.with(|c| Ok(c.query_row("PRAGMA user_version", [], |r| r.get(0))?))
    }

    fn create_session(&self, id: &str, description: &str) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO sessions (id, description) VALUES (?1, ?2)",
                params![id, description],
            )?;
            Ok(())
        })
    }

    fn has_session(&self, id: &str) -> Result<bool, ArchiveError> {
        self.with(|c| {
            Ok(
                c.query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
                    .optional()?
                    .is_some(),
            )
        })
    }

    fn add_message(&self, session: &str, role: &str, message: &str) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO messages (session_id, role, message) VALUES (?1, ?2, ?3)",
                params![session, role, message],
            )?;
            Ok(())
        })
    }

    fn record_call(&self, session: &str, call: &CallRow) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO calls (session_id, round, call_id, name, arguments, format, repairs,
                    message_id, replica)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, (SELECT id FROM messages
                    WHERE session_id = ?1 AND role = 'assistant' ORDER BY id DESC LIMIT 1), ?8)",
                params![
                    session,
                    call.round,
                    call.call_id,
                    call.name,
                    call.arguments,
                    call.format,
                    call.repairs,
                    call.replica
                ],
            )?;
            Ok(())
        })
    }

    fn record_outcome(&self, session: &str, result: &ResultRow) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO results (session_id, call_id, call_row, name, outcome, duration_ms,
                    delivery)
                 VALUES (?1, ?2, (SELECT id FROM calls WHERE session_id = ?1 AND call_id = ?2
                    ORDER BY id DESC LIMIT 1), ?3, ?4, ?5, ?6)",
                params![
                    session,
                    result.call_id,
                    result.name,
                    result.outcome,
                    result.duration_ms,
                    result.delivery
                ],
            )?;
            Ok(())
        })
    }

    fn calls_of_last_reply(&self, session: &str) -> Result<Vec<StoredReplyCall>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT k.call_id, k.name, k.format, (SELECT r.outcome FROM results r
                    WHERE r.call_row = k.id AND r.delivery = 'inline' ORDER BY r.id DESC LIMIT 1)
                 FROM calls k WHERE k.session_id = ?1 AND k.message_id = (SELECT id FROM messages
                    WHERE session_id = ?1 AND role = 'assistant' ORDER BY id DESC LIMIT 1)
                 ORDER BY k.id",
            )?;
            let rows = st
                .query_map([session], |r| {
                    Ok(StoredReplyCall {
                        call_id: r.get(0)?,
                        name: r.get(1)?,
                        format: r.get(2)?,
                        outcome: r.get(3)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn inline_result(&self, session: &str, call_id: &str) -> Result<Option<String>, ArchiveError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT outcome FROM results WHERE session_id = ?1 AND call_id = ?2
                    AND delivery = 'inline' ORDER BY id DESC LIMIT 1",
                params![session, call_id],
                |r| r.get(0),
            )
            .optional()?)
        })
    }

    fn save_state(&self, session: &str, pack: &str, snapshot: &str) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO pack_states (session_id, pack, snapshot) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id, pack) DO UPDATE SET snapshot = excluded.snapshot,
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')",
                params![session, pack, snapshot],
            )?;
            Ok(())
        })
    }

    fn load_state(&self, session: &str, pack: &str) -> Result<Option<String>, ArchiveError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT snapshot FROM pack_states WHERE session_id = ?1 AND pack = ?2",
                params![session, pack],
                |r| r.get(0),
            )
            .optional()?)
        })
    }

    fn pack_states(&self, session: &str) -> Result<Vec<(String, String)>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT pack, snapshot FROM pack_states WHERE session_id = ?1 ORDER BY pack",
            )?;
            let rows = st
                .query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    fn load_messages(&self, session: &str) -> Result<Vec<String>, ArchiveError> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT message FROM messages WHERE session_id = ?1 ORDER BY id")?;
            let rows = st
                .query_map([session], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "{SUMMARY} ORDER BY s.created_at DESC, s.rowid DESC"
            ))?;
            let rows = st
                .query_map([], summary_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn session_summary(&self, id: &str) -> Result<Option<SessionSummary>, ArchiveError> {
        self.with(|c| {
            Ok(
                c.query_row(&format!("{SUMMARY} WHERE s.id = ?1"), [id], summary_row)
                    .optional()?,
            )
        })
    }

    fn calls(&self, session: &str) -> Result<Vec<(i64, CallRow)>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, round, call_id, name, arguments, format, repairs, replica FROM calls
                 WHERE session_id = ?1 ORDER BY id",
            )?;
            let rows = st
                .query_map([session], |r| Ok((r.get(0)?, call_row(r, 1)?)))?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    fn tool_switches(&self) -> Result<Vec<(String, bool)>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare("SELECT name, enabled FROM tool_switches ORDER BY name")?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0)))?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    fn set_tool_switch(&self, name: &str, enabled: bool) -> Result<(), ArchiveError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO tool_switches (name, enabled) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET enabled = excluded.enabled,
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')",
                params![name, i64::from(enabled)],
            )?;
            Ok(())
        })
    }

    fn last_rows(&self) -> Result<(i64, i64), ArchiveError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT (SELECT COALESCE(MAX(id), 0) FROM calls),
                        (SELECT COALESCE(MAX(id), 0) FROM results)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
    }

    fn calls_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedCall>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, session_id, round, call_id, name, arguments, format, repairs, replica
                 FROM calls WHERE id > ?1 AND replica <> ?2 ORDER BY id LIMIT ?3",
            )?;
            let rows = st
                .query_map(params![after, replica, limit], |r| {
                    Ok(FeedCall {
                        row: r.get(0)?,
                        session: r.get(1)?,
                        call: call_row(r, 2)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    fn results_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedResult>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT r.id, r.session_id, r.call_row, r.call_id, r.name, r.outcome,
                    r.duration_ms, r.delivery
                 FROM results r JOIN calls k ON k.id = r.call_row
                 WHERE r.id > ?1 AND k.replica <> ?2 ORDER BY r.id LIMIT ?3",
            )?;
            let rows = st
                .query_map(params![after, replica, limit], |r| {
                    Ok(FeedResult {
                        row: r.get(0)?,
                        session: r.get(1)?,
                        call_row: r.get(2)?,
                        result: ResultRow {
                            call_id: r.get(3)?,
                            name: r.get(4)?,
                            outcome: r.get(5)?,
                            duration_ms: r.get(6)?,
                            delivery: r.get(7)?,
                        },
                    })
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }

    fn results(&self, session: &str) -> Result<Vec<(Option<i64>, ResultRow)>, ArchiveError> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT call_row, call_id, name, outcome, duration_ms, delivery FROM results
                 WHERE session_id = ?1 ORDER BY id",
            )?;
            let rows = st
                .query_map([session], |r| {
                    Ok((
                        r.get(0)?,
                        ResultRow {
                            call_id: r.get(1)?,
                            name: r.get(2)?,
                            outcome: r.get(3)?,
                            duration_ms: r.get(4)?,
                            delivery: r.get(5)?,
                        },
                    ))
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        })
    }
}
