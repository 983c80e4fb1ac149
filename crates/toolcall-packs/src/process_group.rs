//! Child processes started as the leader of their own process group, signalled as a group,
//! and (for tools whose side effects must not outlive the caller) tied to this process's
//! life. The one place the packs start, signal and kill process groups: the program backend
//! ([`crate::backend`]) and the app launcher ([`crate::apps`]) both use it.
//!
//! A group lets one signal reach the helpers a program starts (`sh -c "sleep 60; …"` leaves
//! `sleep`). [`Lifetime::TiedToUs`] also sets Linux's `PR_SET_PDEATHSIG` to `SIGKILL` in the
//! child before it runs the program, so a `kill -9` of this process (which runs no
//! destructor) still kills the program instead of leaving it, re-parented to PID 1, to finish
//! a side effect the caller will never hear of. The kernel sends that signal when the
//! *thread* that started the child ends; the packs start children from the async runtime's
//! worker threads, which live as long as the runtime, and a call dropped with its runtime
//! kills its group anyway ([`GroupChild`]). The signal reaches the group's leader only: a
//! helper the program started in the background outlives it, but the program's own next
//! steps do not run. On other systems there is no such signal; the group is then killed
//! only when the call is dropped or the session ends.
//!
//! Launched applications ([`Lifetime::Independent`]) are desktop programs a person may keep
//! using; the apps pack closes them itself when the session ends.

use std::io;

use tokio::process::{Child, Command};

/// Whether a started process dies when this process dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Killed (SIGKILL) as soon as this process ends, however it ends (Linux).
    TiedToUs,
    /// Left running if this process ends without stopping it.
    Independent,
}

/// Makes `cmd` start as the leader of a new process group, tied to this process's life or
/// not.
pub fn new_group(cmd: &mut Command, lifetime: Lifetime) {
    cmd.process_group(0);
    if lifetime == Lifetime::TiedToUs {
        tie_to_us(cmd);
    }
}

#[cfg(target_os = "linux")]
fn tie_to_us(cmd: &mut Command) {
    // SAFETY: getpid(2) is always safe to call.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2) and
    // getppid(2), which are async-signal-safe; it allocates nothing (`from_raw_os_error`
    // does not allocate).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // We died between fork and prctl: the signal will never come, so do not start.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn tie_to_us(_cmd: &mut Command) {}

/// Sends `signal` to the process group led by `pid` (our own child). Does nothing for a pid
/// that cannot name a group of ours (0, 1, out of range).
pub fn signal_group(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) has no memory effects. The group id is our own child's pid, which
    // cannot be reused while its `Child` is unreaped.
    unsafe {
        libc::kill(-pid, signal);
    }
}

/// A running group leader: dropping it before the leader has been waited for kills the
/// whole group (SIGKILL), so a call that ends early (timeout, output over its limit, the
/// caller gone) leaves nothing behind.
#[derive(Debug)]
pub struct GroupChild(pub Child);

impl Drop for GroupChild {
    fn drop(&mut self) {
        // `id` is `None` once the leader has been reaped; until then its pid cannot be
        // reused, so the group id still names our group.
        if let Some(pid) = self.0.id() {
            signal_group(pid, libc::SIGKILL);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::time::{Duration, Instant};

    /// Whether `pid` still runs (a zombie has ended).
    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
            .unwrap_or(false)
    }

    /// Starts `sleep 30` from a thread of its own and lets the thread end without
    /// touching the child; the child's pid.
    fn start_from_a_thread_that_ends(lifetime: Lifetime) -> u32 {
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut cmd = Command::new("sleep");
                cmd.arg("30");
                new_group(&mut cmd, lifetime);
                let child = cmd.spawn().unwrap();
                let pid = child.id().unwrap();
                std::mem::forget(child);
                pid
            })
        })
        .join()
        .unwrap()
    }

    #[test]
    fn a_tied_child_is_killed_when_the_thread_that_started_it_ends() {
        // The kernel's parent-death signal fires when the starting thread ends, the same
        // signal a `kill -9` of the whole process triggers.
        let pid = start_from_a_thread_that_ends(Lifetime::TiedToUs);
        let deadline = Instant::now() + Duration::from_secs(20);
        while running(pid) {
            assert!(Instant::now() < deadline, "the tied child {pid} still runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn an_independent_child_outlives_the_thread_that_started_it() {
        let pid = start_from_a_thread_that_ends(Lifetime::Independent);
        assert!(running(pid));
        signal_group(pid, libc::SIGKILL);
    }
}
