//! One inspector page for the whole deployment: with a shared archive, a replica's hub also
//! shows the calls the other replicas run, read from the archive as they commit.
//!
//! [`follow`] polls a [`Feed`] every [`POLL`]: each call another replica recorded appears
//! as running, marked with its replica ([`LiveCall::replica`]), and changes to ok, failed or
//! cancelled when its result is archived. This replica's own calls are not read back: its
//! live events already show them, with more detail (diagnostics, the raw reply). A call
//! from another replica shows up within about one [`POLL`] of its commit.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use toolcall_run::Archive;
use toolcall_run::archive::feed::{Feed, FeedBatch};
use toolcall_run::archive::{FeedCall, FeedResult};

use crate::hub::{CallStatus, Hub, LiveCall, MAX_CALLS};

/// How often the archive is read.
pub const POLL: Duration = Duration::from_millis(500);

/// Starts following `archive` for `hub` on the current tokio runtime, as replica
/// `replica` (its own calls are left out); it stops once the hub is gone.
pub fn follow(hub: &Arc<Hub>, archive: Arc<Archive>, replica: &str) -> tokio::task::JoinHandle<()> {
    let hub: Weak<Hub> = Arc::downgrade(hub);
    let replica = replica.to_owned();
    tokio::spawn(async move {
        let mut feed: Option<Feed> = None;
        loop {
            if hub.strong_count() == 0 {
                return;
            }
            let (a, r) = (archive.clone(), replica.clone());
            let taken = feed.take();
            // The feed comes back with the batch, or with the error: its cursor is kept.
            let polled = tokio::task::spawn_blocking(move || {
                let mut feed = match taken {
                    Some(feed) => feed,
                    None => match Feed::start(&a, &r, MAX_CALLS as i64) {
                        Ok(feed) => feed,
                        Err(e) => return (None, Err(e)),
                    },
                };
                let batch = feed.poll(&a);
                (Some(feed), batch)
            })
            .await;
            match polled {
                Ok((next, batch)) => {
                    feed = next;
                    match batch {
                        Ok(batch) => {
                            let Some(hub) = hub.upgrade() else { return };
                            show(&hub, batch);
                        }
                        Err(e) => tracing::warn!(
                            target: "toolcall",
                            error = %e,
                            "inspector: reading other replicas' calls failed"
                        ),
                    }
                }
                Err(e) => tracing::warn!(
                    target: "toolcall",
                    error = %e,
                    "inspector: the archive reader stopped"
                ),
            }
            tokio::time::sleep(POLL).await;
        }
    })
}

/// Puts a batch of other replicas' rows into the hub.
pub fn show(hub: &Hub, batch: FeedBatch) {
    for call in batch.calls {
        hub.add_remote(live_call(call));
    }
    for result in batch.results {
        settle(hub, result);
    }
}

fn live_call(row: FeedCall) -> LiveCall {
    let call = row.call;
    LiveCall {
        session_id: Some(row.session),
        round: usize::try_from(call.round).unwrap_or(0),
        call_id: call.call_id,
        tool: call.name,
        surface: call.format,
        job: false,
        // Archived when validated, just before it runs.
        status: CallStatus::Running,
        duration_ms: None,
        arguments: serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments)),
        result: None,
        repairs: serde_json::from_str(&call.repairs).unwrap_or_default(),
        diagnostics: Vec::new(),
        excerpt: None,
        replica: Some(call.replica),
    }
}

fn settle(hub: &Hub, row: FeedResult) {
    let r = row.result;
    let outcome: Value = serde_json::from_str(&r.outcome).unwrap_or(Value::String(r.outcome));
    let job = r.delivery == "job";
    let status = match outcome.get("error") {
        Some(e) if e.get("code").and_then(Value::as_str) == Some("cancelled") => {
            CallStatus::Cancelled
        }
        Some(_) => CallStatus::Failed,
        // A job's first answer says it is running; its result comes later.
        None if outcome.get("status").and_then(Value::as_str) == Some("running") => {
            CallStatus::Running
        }
        None => CallStatus::Ok,
    };
    hub.settle_remote(&row.session, &r.call_id, |c| {
        c.job |= job || status == CallStatus::Running;
        c.status = status;
        c.duration_ms = u64::try_from(r.duration_ms).ok();
        c.result = Some(outcome);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolcall_run::archive::{CallRow, ResultRow};

    #[test]
    fn other_replicas_calls_appear_marked_and_settle_with_their_results() {
        let hub = Hub::new();
        let call = FeedCall {
            row: 7,
            session: "ses_1".into(),
            call: CallRow {
                round: 2,
                call_id: "call_a".into(),
                name: "login".into(),
                arguments: r#"{"user":"ann"}"#.into(),
                format: "openai_chat".into(),
                repairs: "[]".into(),
                replica: "replica_b".into(),
            },
        };
        show(
            &hub,
            FeedBatch {
                calls: vec![call],
                results: Vec::new(),
            },
        );
        let shown = &hub.calls()[0];
        assert_eq!(shown.status, CallStatus::Running);
        assert_eq!(shown.replica.as_deref(), Some("replica_b"));
        assert_eq!(shown.arguments["user"], "ann");
        assert!(crate::html::live_call(shown).contains("from another replica"));
        let result = |outcome: &str| FeedResult {
            row: 9,
            session: "ses_1".into(),
            call_row: 7,
            result: ResultRow {
                call_id: "call_a".into(),
                name: "login".into(),
                outcome: outcome.into(),
                duration_ms: 12,
                delivery: "inline".into(),
            },
        };
        show(
            &hub,
            FeedBatch {
                calls: Vec::new(),
                results: vec![result(
                    r#"{"error":{"code":"cancelled","message":"outcome unknown"}}"#,
                )],
            },
        );
        let shown = &hub.calls()[0];
        assert_eq!(
            (shown.status, shown.duration_ms),
            (CallStatus::Cancelled, Some(12))
        );
        // A result for a call this hub does not show (this replica's own) changes nothing.
        let mut other = result(r#"{"status":"ok","data":1}"#);
        other.result.call_id = "call_mine".into();
        show(
            &hub,
            FeedBatch {
                calls: Vec::new(),
                results: vec![other],
            },
        );
        assert_eq!(hub.calls().len(), 1);
    }
}
