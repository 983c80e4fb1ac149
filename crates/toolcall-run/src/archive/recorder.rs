//! The archive as a consumer of a turn's [`AgentEvent`]s, writing on its own thread.
//!
//! A [`Recorder`] owns one session of an [`Archive`]. The agent hands it every event, as
//! it hands them to its other observers; a writer thread turns them into archive writes in
//! the order they happened: [`AgentEvent::MessageAdded`] appends to `messages`,
//! [`AgentEvent::CallValidated`] records a call, [`AgentEvent::CallCompleted`] /
//! [`AgentEvent::CallFailed`] / [`AgentEvent::JobDelivered`] record results, and
//! [`AgentEvent::RoundFinished`] snapshots the pack states (the snapshots run on the writer
//! thread too). Everything is stored redacted.
//!
//! SQLite writes block (a commit waits for the disk, a locked file waits up to the busy
//! timeout), so none of them runs on the async runtime's threads: a slow write stalls only
//! the writer. [`Recorder::flush`] waits, without blocking the runtime, until every event
//! handed over so far is committed and returns the first write error since the last
//! flush; the agent flushes before each model request, after each call's result and at
//! the end of a turn, so a killed process still loses no finished call.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use serde_json::Value;
use tokio::sync::oneshot;
use toolcall_core::ToolResult;

use super::{Archive, ArchiveError, Delivery};
use crate::events::AgentEvent;

/// A pack's state, as a function taking its snapshot.
pub type StateSaver = Arc<dyn Fn() -> Value + Send + Sync>;

enum Command {
    Event(Box<AgentEvent>),
    AddState(String, StateSaver),
    Flush(oneshot::Sender<Result<(), ArchiveError>>),
}

/// One archived session fed by events; see the module doc.
pub struct Recorder {
    session: String,
    tx: Option<Sender<Command>>,
    writer: Option<JoinHandle<()>>,
}

impl Recorder {
    /// Records into `session`, which must exist in `archive`.
    pub fn new(archive: Arc<Archive>, session: impl Into<String>) -> Result<Self, ArchiveError> {
        let session = session.into();
        let (tx, rx) = channel();
        let writer_session = session.clone();
        let writer = std::thread::Builder::new()
            .name("toolcall-archive".into())
            .spawn(move || write_loop(&archive, &writer_session, rx))
            .map_err(|e| ArchiveError::Writer(format!("cannot start the writer thread: {e}")))?;
        Ok(Recorder {
            session,
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// The session written to.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Hands an event to the writer; never blocks.
    pub fn record(&self, event: &AgentEvent) {
        if archived(event) {
            self.send(Command::Event(Box::new(event.clone())));
        }
    }

    /// Saves `snapshot()` under `name` at the end of every round.
    pub fn add_state_saver(&self, name: impl Into<String>, snapshot: StateSaver) {
        self.send(Command::AddState(name.into(), snapshot));
    }

    /// Waits until everything handed over so far is committed; the first write error
    /// since the last flush.
    pub async fn flush(&self) -> Result<(), ArchiveError> {
        let (done, wait) = oneshot::channel();
        let Some(tx) = &self.tx else {
            return Err(gone());
        };
        tx.send(Command::Flush(done)).map_err(|_| gone())?;
        wait.await.map_err(|_| gone())?
    }

    fn send(&self, command: Command) {
        if let Some(tx) = &self.tx {
            // A writer that is gone reports it at the next flush.
            let _ = tx.send(command);
        }
    }
}

impl Drop for Recorder {
    /// Lets the writer finish what it was handed, so whoever reads the archive after the
    /// agent is gone finds everything (after a flush this is at most a few writes).
    fn drop(&mut self) {
        self.tx = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

fn gone() -> ArchiveError {
    ArchiveError::Writer("the writer thread stopped".into())
}

/// The events that change the archive (the others are not sent to the writer).
fn archived(event: &AgentEvent) -> bool {
    matches!(
        event,
        AgentEvent::MessageAdded { .. }
            | AgentEvent::CallValidated { .. }
            | AgentEvent::CallCompleted { .. }
            | AgentEvent::CallFailed { .. }
            | AgentEvent::JobDelivered { .. }
            | AgentEvent::RoundFinished { .. }
    )
}

fn write_loop(archive: &Archive, session: &str, rx: Receiver<Command>) {
    let mut states: Vec<(String, StateSaver)> = Vec::new();
    let mut error: Option<ArchiveError> = None;
    // Ends when every sender (the recorder and its observers) is gone.
    while let Ok(command) = rx.recv() {
        let outcome = match command {
            Command::Event(event) => write(archive, session, &states, &event),
            Command::AddState(name, saver) => {
                states.push((name, saver));
                Ok(())
            }
            Command::Flush(done) => {
                let _ = done.send(error.take().map_or(Ok(()), Err));
                Ok(())
            }
        };
        if let Err(e) = outcome {
            tracing::warn!(target: "toolcall", error = %e, "session archive write failed");
            error.get_or_insert(e);
        }
    }
}

fn write(
    archive: &Archive,
    session: &str,
    states: &[(String, StateSaver)],
    event: &AgentEvent,
) -> Result<(), ArchiveError> {
    match event.redacted() {
        AgentEvent::MessageAdded { message, .. } => archive.add_message(session, &message),
        AgentEvent::CallValidated { round, call, .. } => archive.record_call(session, round, &call),
        AgentEvent::CallCompleted {
            call_id,
            name,
            result,
            duration_ms,
            ..
        }
        | AgentEvent::JobDelivered {
            call_id,
            name,
            result,
            duration_ms,
            ..
        } => archive.record_outcome(
            session,
            call_id.as_str(),
            &name,
            &result,
            duration_ms,
            match event {
                AgentEvent::JobDelivered { .. } => Delivery::Job,
                _ => Delivery::Inline,
            },
        ),
        AgentEvent::CallFailed {
            call_id,
            name,
            error,
            duration_ms,
            ..
        } => {
            let outcome = ToolResult::err(call_id.clone(), name.clone(), error).to_json();
            archive.record_outcome(
                session,
                call_id.as_str(),
                &name,
                &outcome,
                duration_ms,
                Delivery::Inline,
            )
        }
        AgentEvent::RoundFinished { .. } => {
            for (name, snapshot) in states {
                archive.save_state(session, name, &snapshot())?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
