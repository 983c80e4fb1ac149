//! The PostgreSQL archive backend: one database shared by every gateway replica.
//!
//! `tokio-postgres` with a `deadpool-postgres` pool, driven on a small runtime this backend
//! owns (two worker threads): a call from the recorder's thread, from a CLI command or from
//! a task of the gateway's own runtime hands its query to that runtime and waits for the
//! answer, so the synchronous [`ArchiveBackend`] never nests runtimes. Statements are
//! prepared once per pooled connection. Every write is one statement in autocommit (or one
//! transaction), committed before the call returns.
//!
//! The schema version is the one row of `toolcall_schema`; migrations run in one
//! transaction under an advisory lock, so replicas starting together apply them once. The
//! migrations are [`super::sqlite::MIGRATIONS`] entry for entry, in PostgreSQL's dialect.

use std::future::Future;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::{
    ArchiveBackend, ArchiveError, CallRow, Claim, FeedCall, FeedResult, ResultRow, SessionSummary,
    StoredReplyCall, check_version, redact_url,
};

/// Connections per replica: one recorder per running turn writes, and reads are short.
const POOL_SIZE: usize = 16;
/// How long opening a connection, or waiting for a free one, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Held while migrating (any constant: the key of `pg_advisory_xact_lock`).
const MIGRATION_LOCK: i64 = 0x7463_5f61_7263_6876; // "tc_archv"

/// PostgreSQL's spelling of SQLite's `strftime('%Y-%m-%dT%H:%M:%fZ','now')`.
macro_rules! now_text {
    () => {
        r#"to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#
    };
}

/// The migrations, the same versions as SQLite's (see the module doc).
const MIGRATIONS: &[&str] = &[MIGRATION_1, MIGRATION_2, MIGRATION_3, MIGRATION_4];
const _: () = assert!(MIGRATIONS.len() == super::sqlite::MIGRATIONS.len());

const MIGRATION_1: &str = concat!(
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        seq BIGSERIAL NOT NULL UNIQUE,
        created_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    ",
        description TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE messages (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        role TEXT NOT NULL,
        message TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    "
    );
    CREATE INDEX messages_session ON messages(session_id, id);
    CREATE TABLE calls (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        round BIGINT NOT NULL,
        call_id TEXT NOT NULL,
        name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        format TEXT NOT NULL,
        repairs TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    "
    );
    CREATE INDEX calls_session ON calls(session_id, id);
    CREATE TABLE results (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        call_id TEXT NOT NULL,
        call_row BIGINT REFERENCES calls(id),
        name TEXT NOT NULL,
        outcome TEXT NOT NULL,
        duration_ms BIGINT NOT NULL,
        delivery TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    "
    );
    CREATE INDEX results_session ON results(session_id, call_id);
    CREATE TABLE pack_states (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        pack TEXT NOT NULL,
        snapshot TEXT NOT NULL,
        updated_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    ",
        PRIMARY KEY (session_id, pack)
    );"
);

const MIGRATION_2: &str = "ALTER TABLE calls ADD COLUMN message_id BIGINT REFERENCES messages(id);";

const MIGRATION_3: &str = concat!(
    "CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id),
        owner TEXT NOT NULL,
        expires_ms BIGINT NOT NULL
    );
    CREATE TABLE call_claims (
        session_id TEXT NOT NULL REFERENCES sessions(id),
        turn BIGINT NOT NULL,
        call_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        state TEXT NOT NULL,
        claimed_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    ",
        PRIMARY KEY (session_id, turn, call_id)
    );"
);

const MIGRATION_4: &str = concat!(
    "CREATE TABLE tool_switches (
        name TEXT PRIMARY KEY,
        enabled BOOLEAN NOT NULL,
        updated_at TEXT NOT NULL DEFAULT ",
    now_text!(),
    "
    );
    ALTER TABLE calls ADD COLUMN replica TEXT NOT NULL DEFAULT '';"
);

fn pg(e: impl std::fmt::Display) -> ArchiveError {
    ArchiveError::Postgres(e.to_string())
}

/// An archive in a PostgreSQL database.
pub struct PostgresArchive {
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
}

impl PostgresArchive {
    /// Connects to `url` (`postgres://user:password@host:port/database`) and brings the
    /// schema to this build's version.
    pub fn connect(url: &str) -> Result<Self, ArchiveError> {
        let location = |m: String| ArchiveError::Location(redact_url(url), m);
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| location(format!("{e}")))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("toolcall");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolcall-archive-pg")
            .enable_all()
            .build()
            .map_err(|e| location(format!("cannot start its runtime: {e}")))?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| location(format!("{e}")))?;
        let archive = PostgresArchive {
            runtime: Some(runtime),
            pool,
        };
        archive
            .run(|pool| async move { migrate(&pool).await })
            .map_err(|e| match e {
                ArchiveError::Postgres(m) => location(m),
                other => other,
            })?;
        Ok(archive)
    }

    /// Runs `job` on this backend's runtime and waits for it (from any thread).
    fn run<T, Fut>(&self, job: impl FnOnce(Pool) -> Fut) -> Result<T, ArchiveError>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T, ArchiveError>> + Send + 'static,
    {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| pg("the archive is closed"))?;
        // The answer comes back over a blocking channel, not by polling the task's
        // `JoinHandle`: polled from inside another tokio runtime (a gateway's handler), a
        // `JoinHandle` obeys that task's cooperative budget, and once the budget is spent
        // it stays pending for good, since a thread blocked here never yields to reset it.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let job = job(self.pool.clone());
        runtime.spawn(async move {
            let _ = tx.send(job.await);
        });
        rx.recv()
            .map_err(|_| pg("the archive's query task stopped"))?
    }

    /// Runs one statement; the number of rows it changed.
    fn execute(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn ToSql + Send + Sync>>,
    ) -> Result<u64, ArchiveError> {
        self.run(move |pool| async move {
            let client = pool.get().await.map_err(pg)?;
            let statement = client.prepare_cached(sql).await.map_err(pg)?;
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            client.execute(&statement, &refs).await.map_err(pg)
        })
    }

    /// Runs one query; its rows, each read by `read`.
    fn query<T: Send + 'static>(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn ToSql + Send + Sync>>,
        read: fn(&tokio_postgres::Row) -> Result<T, tokio_postgres::Error>,
    ) -> Result<Vec<T>, ArchiveError> {
        self.run(move |pool| async move {
            let client = pool.get().await.map_err(pg)?;
            let statement = client.prepare_cached(sql).await.map_err(pg)?;
            let refs: Vec<&(dyn ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                .collect();
            let rows = client.query(&statement, &refs).await.map_err(pg)?;
            rows.iter().map(|r| read(r).map_err(pg)).collect()
        })
    }
}

impl Drop for PostgresArchive {
    /// Stops the runtime without waiting (dropping it inside another runtime would panic).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Brings the schema to the newest version (see the module doc).
async fn migrate(pool: &Pool) -> Result<(), ArchiveError> {
    let mut client = pool.get().await.map_err(pg)?;
    let tx = client.transaction().await.map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS toolcall_schema (version BIGINT NOT NULL)")
        .await
        .map_err(pg)?;
    let found: i64 = match tx
        .query_opt("SELECT version FROM toolcall_schema", &[])
        .await
        .map_err(pg)?
    {
        Some(row) => row.try_get(0).map_err(pg)?,
        None => {
            tx.execute("INSERT INTO toolcall_schema (version) VALUES (0)", &[])
                .await
                .map_err(pg)?;
            0
        }
    };
    let applied = check_version(found)?;
    for migration in MIGRATIONS.iter().skip(applied) {
        tx.batch_execute(migration).await.map_err(pg)?;
    }
    let now = MIGRATIONS.len() as i64;
    tx.execute("UPDATE toolcall_schema SET version = $1", &[&now])
        .await
        .map_err(pg)?;
    tx.commit().await.map_err(pg)
}

fn text(s: &str) -> Box<dyn ToSql + Send + Sync> {
    Box::new(s.to_owned())
}

fn int(i: i64) -> Box<dyn ToSql + Send + Sync> {
    Box::new(i)
}

fn summary_row(r: &tokio_postgres::Row) -> Result<SessionSummary, tokio_postgres::Error> {
    Ok(SessionSummary {
        id: r.try_get(0)?,
        created_at: r.try_get(1)?,
        description: r.try_get(2)?,
        messages: r.try_get::<_, i64>(3)?.max(0) as u64,
        calls: r.try_get::<_, i64>(4)?.max(0) as u64,
    })
}

/// A [`CallRow`] from `round, call_id, name, arguments, format, repairs, replica`
/// starting at column `at`.
fn call_row(r: &tokio_postgres::Row, at: usize) -> Result<CallRow, tokio_postgres::Error> {
    Ok(CallRow {
        round: r.try_get(at)?,
        call_id: r.try_get(at + 1)?,
        name: r.try_get(at + 2)?,
        arguments: r.try_get(at + 3)?,
        format: r.try_get(at + 4)?,
        repairs: r.try_get(at + 5)?,
        replica: r.try_get(at + 6)?,
    })
}

fn first<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
}

impl ArchiveBackend for PostgresArchive {
    fn acquire_lease(
        &self,
        session: &str,
        owner: &str,
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<bool, ArchiveError> {
        let changed = self.execute(
            "INSERT INTO session_leases (session_id, owner, expires_ms) VALUES ($1, $2, $4)
             ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,
                expires_ms = excluded.expires_ms
             WHERE session_leases.owner = excluded.owner OR session_leases.expires_ms < $3",
            vec![text(session), text(owner), int(now_ms), int(expires_ms)],
        )?;
        Ok(changed == 1)
    }

    fn release_lease(&self, session: &str, owner: &str) -> Result<(), ArchiveError> {
        self.execute(
            "DELETE FROM session_leases WHERE session_id = $1 AND owner = $2",
            vec![text(session), text(owner)],
        )?;
        Ok(())
    }

    fn claim_call(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        owner: &str,
    ) -> Result<Option<Claim>, ArchiveError> {
        let inserted = self.execute(
            "INSERT INTO call_claims (session_id, turn, call_id, owner, state)
             VALUES ($1, $2, $3, $4, 'running') ON CONFLICT DO NOTHING",
            vec![text(session), int(turn), text(call_id), text(owner)],
        )?;
        if inserted == 1 {
            return Ok(None);
        }
        let rows = self.query(
            "SELECT owner, state FROM call_claims
             WHERE session_id = $1 AND turn = $2 AND call_id = $3",
            vec![text(session), int(turn), text(call_id)],
            |r| {
                Ok(Claim {
                    owner: r.try_get(0)?,
                    state: r.try_get(1)?,
                })
            },
        )?;
        Ok(first(rows))
    }

    fn settle_claim(
        &self,
        session: &str,
        turn: i64,
        call_id: &str,
        state: &str,
    ) -> Result<(), ArchiveError> {
        self.execute(
            "UPDATE call_claims SET state = $4 WHERE session_id = $1 AND turn = $2 AND call_id = $3",
            vec![text(session), int(turn), text(call_id), text(state)],
        )?;
        Ok(())
    }

    fn recover_claims(&self, session: &str) -> Result<Vec<(i64, String)>, ArchiveError> {
        self.query(
            "UPDATE call_claims SET state = 'interrupted'
             WHERE session_id = $1 AND state = 'running' RETURNING turn, call_id",
            vec![text(session)],
            |r| Ok((r.try_get(0)?, r.try_get(1)?)),
        )
    }

    fn schema_version(&self) -> Result<i64, ArchiveError> {
        let rows = self.query("SELECT version FROM toolcall_schema", vec![], |r| {
            r.try_get(0)
        })?;
        Ok(first(rows).unwrap_or(0))
    }

    fn create_session(&self, id: &str, description: &str) -> Result<(), ArchiveError> {
        self.execute(
            "INSERT INTO sessions (id, description) VALUES ($1, $2)",
            vec![text(id), text(description)],
        )?;
        Ok(())
    }

    fn has_session(&self, id: &str) -> Result<bool, ArchiveError> {
        let rows = self.query(
            "SELECT 1 FROM sessions WHERE id = $1",
            vec![text(id)],
            |_| Ok(()),
        )?;
        Ok(!rows.is_empty())
    }

    fn add_message(&self, session: &str, role: &str, message: &str) -> Result<(), ArchiveError> {
        self.execute(
            "INSERT INTO messages (session_id, role, message) VALUES ($1, $2, $3)",
            vec![text(session), text(role), text(message)],
        )?;
        Ok(())
    }

    fn record_call(&self, session: &str, call: &CallRow) -> Result<(), ArchiveError> {
        self.execute(
            "INSERT INTO calls (session_id, round, call_id, name, arguments, format, repairs,
                message_id, replica)
             VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT id FROM messages
                WHERE session_id = $1 AND role = 'assistant' ORDER BY id DESC LIMIT 1), $8)",
            vec![
                text(session),
                int(call.round),
                text(&call.call_id),
                text(&call.name),
                text(&call.arguments),
                text(&call.format),
                text(&call.repairs),
                text(&call.replica),
            ],
        )?;
        Ok(())
    }

    fn record_outcome(&self, session: &str, result: &ResultRow) -> Result<(), ArchiveError> {
        self.execute(
            "INSERT INTO results (session_id, call_id, call_row, name, outcome, duration_ms,
                delivery)
             VALUES ($1, $2, (SELECT id FROM calls WHERE session_id = $1 AND call_id = $2
                ORDER BY id DESC LIMIT 1), $3, $4, $5, $6)",
            vec![
                text(session),
                text(&result.call_id),
                text(&result.name),
                text(&result.outcome),
                int(result.duration_ms),
                text(&result.delivery),
            ],
        )?;
        Ok(())
    }

    fn calls_of_last_reply(&self, session: &str) -> Result<Vec<StoredReplyCall>, ArchiveError> {
        self.query(
            "SELECT k.call_id, k.name, k.format, (SELECT r.outcome FROM results r
                WHERE r.call_row = k.id AND r.delivery = 'inline' ORDER BY r.id DESC LIMIT 1)
             FROM calls k WHERE k.session_id = $1 AND k.message_id = (SELECT id FROM messages
                WHERE session_id = $1 AND role = 'assistant' ORDER BY id DESC LIMIT 1)
             ORDER BY k.id",
            vec![text(session)],
            |r| {
                Ok(StoredReplyCall {
                    call_id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    format: r.try_get(2)?,
                    outcome: r.try_get(3)?,
                })
            },
        )
    }

    fn inline_result(&self, session: &str, call_id: &str) -> Result<Option<String>, ArchiveError> {
        let rows = self.query(
            "SELECT outcome FROM results WHERE session_id = $1 AND call_id = $2
                AND delivery = 'inline' ORDER BY id DESC LIMIT 1",
            vec![text(session), text(call_id)],
            |r| r.try_get(0),
        )?;
        Ok(first(rows))
    }

    fn save_state(&self, session: &str, pack: &str, snapshot: &str) -> Result<(), ArchiveError> {
        self.execute(
            concat!(
                "INSERT INTO pack_states (session_id, pack, snapshot) VALUES ($1, $2, $3)
                 ON CONFLICT (session_id, pack) DO UPDATE SET snapshot = excluded.snapshot,
                 updated_at = ",
                now_text!()
            ),
            vec![text(session), text(pack), text(snapshot)],
        )?;
        Ok(())
    }

    fn load_state(&self, session: &str, pack: &str) -> Result<Option<String>, ArchiveError> {
        let rows = self.query(
            "SELECT snapshot FROM pack_states WHERE session_id = $1 AND pack = $2",
            vec![text(session), text(pack)],
            |r| r.try_get(0),
        )?;
        Ok(first(rows))
    }

    fn pack_states(&self, session: &str) -> Result<Vec<(String, String)>, ArchiveError> {
        self.query(
            "SELECT pack, snapshot FROM pack_states WHERE session_id = $1 ORDER BY pack",
            vec![text(session)],
            |r| Ok((r.try_get(0)?, r.try_get(1)?)),
        )
    }

    fn load_messages(&self, session: &str) -> Result<Vec<String>, ArchiveError> {
        self.query(
            "SELECT message FROM messages WHERE session_id = $1 ORDER BY id",
            vec![text(session)],
            |r| r.try_get(0),
        )
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, ArchiveError> {
        self.query(
            "SELECT s.id, s.created_at, s.description,
                (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                (SELECT COUNT(*) FROM calls k WHERE k.session_id = s.id)
             FROM sessions s ORDER BY s.created_at DESC, s.seq DESC",
            vec![],
            summary_row,
        )
    }

    fn session_summary(&self, id: &str) -> Result<Option<SessionSummary>, ArchiveError> {
        let rows = self.query(
            "SELECT s.id, s.created_at, s.description,
                (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id),
                (SELECT COUNT(*) FROM calls k WHERE k.session_id = s.id)
             FROM sessions s WHERE s.id = $1",
            vec![text(id)],
            summary_row,
        )?;
        Ok(first(rows))
    }

    fn calls(&self, session: &str) -> Result<Vec<(i64, CallRow)>, ArchiveError> {
        self.query(
            "SELECT id, round, call_id, name, arguments, format, repairs, replica FROM calls
             WHERE session_id = $1 ORDER BY id",
            vec![text(session)],
            |r| Ok((r.try_get(0)?, call_row(r, 1)?)),
        )
    }

    fn tool_switches(&self) -> Result<Vec<(String, bool)>, ArchiveError> {
        self.query(
            "SELECT name, enabled FROM tool_switches ORDER BY name",
            vec![],
            |r| Ok((r.try_get(0)?, r.try_get(1)?)),
        )
    }

    fn set_tool_switch(&self, name: &str, enabled: bool) -> Result<(), ArchiveError> {
        self.execute(
            concat!(
                "INSERT INTO tool_switches (name, enabled) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = ",
                now_text!()
            ),
            vec![text(name), Box::new(enabled)],
        )?;
        Ok(())
    }

    fn last_rows(&self) -> Result<(i64, i64), ArchiveError> {
        let rows = self.query(
            "SELECT (SELECT COALESCE(MAX(id), 0) FROM calls),
                    (SELECT COALESCE(MAX(id), 0) FROM results)",
            vec![],
            |r| Ok((r.try_get(0)?, r.try_get(1)?)),
        )?;
        Ok(first(rows).unwrap_or((0, 0)))
    }

    fn calls_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedCall>, ArchiveError> {
        self.query(
            "SELECT id, session_id, round, call_id, name, arguments, format, repairs, replica
             FROM calls WHERE id > $1 AND replica <> $2 ORDER BY id LIMIT $3",
            vec![int(after), text(replica), int(limit)],
            |r| {
                Ok(FeedCall {
                    row: r.try_get(0)?,
                    session: r.try_get(1)?,
                    call: call_row(r, 2)?,
                })
            },
        )
    }

    fn results_after(
        &self,
        after: i64,
        replica: &str,
        limit: i64,
    ) -> Result<Vec<FeedResult>, ArchiveError> {
        self.query(
            "SELECT r.id, r.session_id, r.call_row, r.call_id, r.name, r.outcome,
                r.duration_ms, r.delivery
             FROM results r JOIN calls k ON k.id = r.call_row
             WHERE r.id > $1 AND k.replica <> $2 ORDER BY r.id LIMIT $3",
            vec![int(after), text(replica), int(limit)],
            |r| {
                Ok(FeedResult {
                    row: r.try_get(0)?,
                    session: r.try_get(1)?,
                    call_row: r.try_get(2)?,
                    result: ResultRow {
                        call_id: r.try_get(3)?,
                        name: r.try_get(4)?,
                        outcome: r.try_get(5)?,
                        duration_ms: r.try_get(6)?,
                        delivery: r.try_get(7)?,
                    },
                })
            },
        )
    }

    fn shared(&self) -> bool {
        true
    }

    fn results(&self, session: &str) -> Result<Vec<(Option<i64>, ResultRow)>, ArchiveError> {
        self.query(
            "SELECT call_row, call_id, name, outcome, duration_ms, delivery FROM results
             WHERE session_id = $1 ORDER BY id",
            vec![text(session)],
            |r| {
                Ok((
                    r.try_get(0)?,
                    ResultRow {
                        call_id: r.try_get(1)?,
                        name: r.try_get(2)?,
                        outcome: r.try_get(3)?,
                        duration_ms: r.try_get(4)?,
                        delivery: r.try_get(5)?,
                    },
                ))
            },
        )
    }
}
