//! Started processes, tracked per session, and how they are ended: SIGTERM to the process
//! group, then SIGKILL after a grace period, then reaped (groups: [`crate::process_group`]).

use std::collections::HashMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::sync::Mutex;

use crate::process_group::{self, Lifetime, signal_group};

/// Most processes one session may have running through this pack.
pub const MAX_PER_SESSION: usize = 32;

/// One started application.
#[derive(Debug)]
pub struct Running {
    /// The desktop file id or the program path it was started from.
    pub key: String,
    /// The name people use (desktop entry `Name`, or the program's file name).
    pub name: String,
    pub pid: u32,
    child: Child,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It had already exited before it was asked to.
    AlreadyExited(ExitStatus),
    /// It ended after SIGTERM.
    Terminated(ExitStatus),
    /// It ignored SIGTERM for the grace period and was killed.
    Killed(ExitStatus),
}

/// Starts `argv` in its own process group, without a shell, stdio detached.
pub fn start(argv: &[String], working_dir: Option<&Path>) -> std::io::Result<(u32, Child)> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own group, so ending it also ends the helpers a launcher script starts; left
    // running if we die (a person may be using it), closed when the session ends.
    process_group::new_group(&mut cmd, Lifetime::Independent);
    if let Some(dir) = working_dir {
        cmd.current_dir(dir);
    }
    let child = cmd.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the process exited before its id was read"))?;
    Ok((pid, child))
}

/// Ends a tracked process: SIGTERM to its group, SIGKILL after `grace`, then reaps it.
pub async fn stop(mut running: Running, grace: Duration) -> std::io::Result<Ending> {
    if let Some(status) = running.child.try_wait()? {
        // The leader is gone; helpers in its group may remain.
        signal_group(running.pid, libc::SIGTERM);
        return Ok(Ending::AlreadyExited(status));
    }
    signal_group(running.pid, libc::SIGTERM);
    match tokio::time::timeout(grace, running.child.wait()).await {
        Ok(status) => {
            let status = status?;
            signal_group(running.pid, libc::SIGKILL);
            Ok(Ending::Terminated(status))
        }
        Err(_) => {
            signal_group(running.pid, libc::SIGKILL);
            let status = running.child.wait().await?;
            Ok(Ending::Killed(status))
        }
    }
}

/// Processes by session id.
#[derive(Debug, Default)]
pub struct Tracker {
    sessions: Mutex<HashMap<String, Vec<Running>>>,
}

impl Tracker {
    /// The pid of a still-running process of `key` in `session`.
    pub async fn running_pid(&self, session: &str, key: &str) -> Option<u32> {
        let mut sessions = self.sessions.lock().await;
        let list = sessions.get_mut(session)?;
        // Forget processes that ended on their own (reaping them).
        list.retain_mut(|r| matches!(r.child.try_wait(), Ok(None)));
        list.iter().find(|r| r.key == key).map(|r| r.pid)
    }

    pub async fn count(&self, session: &str) -> usize {
        self.sessions.lock().await.get(session).map_or(0, Vec::len)
    }

    pub async fn add(&self, session: &str, key: String, name: String, pid: u32, child: Child) {
        self.sessions
            .lock()
            .await
            .entry(session.to_owned())
            .or_default()
            .push(Running {
                key,
                name,
                pid,
                child,
            });
    }

    /// Takes out every process of `session` whose key or name matches `app`
    /// (case-insensitive).
    pub async fn take(&self, session: &str, app: &str) -> Vec<Running> {
        let mut sessions = self.sessions.lock().await;
        let Some(list) = sessions.get_mut(session) else {
            return Vec::new();
        };
        let (taken, kept): (Vec<Running>, Vec<Running>) = list
            .drain(..)
            .partition(|r| r.key.eq_ignore_ascii_case(app) || r.name.eq_ignore_ascii_case(app));
        *list = kept;
        taken
    }

    /// Takes out every process of `session` (to end them when the session ends).
    pub async fn take_all(&self, session: &str) -> Vec<Running> {
        self.sessions
            .lock()
            .await
            .remove(session)
            .unwrap_or_default()
    }

    /// Takes out every process of every session (to end them when the launcher's user ends).
    pub async fn take_every_session(&self) -> Vec<Running> {
        self.sessions
            .lock()
            .await
            .drain()
            .flat_map(|(_, list)| list)
            .collect()
    }

    /// Names of what `session` has running.
    pub async fn names(&self, session: &str) -> Vec<String> {
        self.sessions
            .lock()
            .await
            .get(session)
            .map(|l| l.iter().map(|r| r.name.clone()).collect())
            .unwrap_or_default()
    }
}
