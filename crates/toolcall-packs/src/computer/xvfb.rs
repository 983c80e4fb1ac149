//! A private Xvfb server for tests and headless runs: started on a free display number,
//! ready when it accepts connections, killed when the guard drops.
//!
//! The command line is fixed (`Xvfb :N -screen 0 WxHx24 -nolisten tcp -noreset`, plus
//! `-fp built-ins` for [`Fonts::BuiltInOnly`]); nothing from a model reaches it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum XvfbError {
    #[error("cannot start Xvfb (is it installed? `apt-get install xvfb`): {0}")]
    Spawn(std::io::Error),
    #[error("Xvfb did not start on any of {0} display numbers tried")]
    NoFreeDisplay(u32),
    #[error("Xvfb on {display} did not accept connections within {secs} s")]
    NotReady { display: String, secs: u64 },
}

/// Which fonts the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fonts {
    /// The server's default font path: whatever font packages are installed.
    #[default]
    Installed,
    /// Only the fonts compiled into the server (`fixed` and `cursor`), as on a machine
    /// without any X font package: lets a test check that its windows do not depend on
    /// which fonts are installed.
    BuiltInOnly,
}

/// A running Xvfb; dropping it stops the server.
#[derive(Debug)]
pub struct Xvfb {
    child: Child,
    display: String,
    number: u32,
}

/// Display numbers handed out by this process, so parallel tests do not race for one.
static NEXT: AtomicU32 = AtomicU32::new(0);
const FIRST: u32 = 90;
const SPAN: u32 = 400;
const ATTEMPTS: u32 = 40;
const READY_TIMEOUT: Duration = Duration::from_secs(15);

impl Xvfb {
    /// Starts `Xvfb` with one `width`×`height`×24 screen on a free display number.
    pub fn start(width: u32, height: u32) -> Result<Xvfb, XvfbError> {
        Self::start_with_fonts(width, height, Fonts::Installed)
    }

    /// [`Xvfb::start`] with a choice of the fonts the server offers.
    pub fn start_with_fonts(width: u32, height: u32, fonts: Fonts) -> Result<Xvfb, XvfbError> {
        // Spread processes apart by pid; within a process, count up.
        let base = std::process::id() % SPAN;
        for _ in 0..ATTEMPTS {
            let n = FIRST + (base + NEXT.fetch_add(1, Ordering::Relaxed) * 7) % SPAN;
            if Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                || Path::new(&format!("/tmp/.X{n}-lock")).exists()
            {
                continue;
            }
            let display = format!(":{n}");
            let mut command = Command::new("Xvfb");
            command.arg(&display);
            if fonts == Fonts::BuiltInOnly {
                command.args(["-fp", "built-ins"]);
            }
            let mut child = command
                .args(["-screen", "0", &format!("{width}x{height}x24")])
                .args(["-nolisten", "tcp"])
                // Without it the server resets when the readiness probe disconnects, and
                // drops whoever connects during the reset.
                .arg("-noreset")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(XvfbError::Spawn)?;
            let started = Instant::now();
            loop {
                // Exited: another server took this number first; try the next one.
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if x11rb::connect(Some(&display)).is_ok() {
                    return Ok(Xvfb {
                        child,
                        display,
                        number: n,
                    });
                }
                if started.elapsed() > READY_TIMEOUT {
                    stop(&mut child, n);
                    return Err(XvfbError::NotReady {
                        display,
                        secs: READY_TIMEOUT.as_secs(),
                    });
                }
                sleep(Duration::from_millis(25));
            }
        }
        Err(XvfbError::NoFreeDisplay(ATTEMPTS))
    }

    /// The display name, e.g. `:93`.
    pub fn display(&self) -> &str {
        &self.display
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        stop(&mut self.child, self.number);
    }
}

/// Kills our server and removes the lock file and socket it leaves behind (a killed Xvfb
/// cannot clean up), but only when the lock names our process: another server may own
/// that display number.
fn stop(child: &mut Child, n: u32) {
    let _ = child.kill();
    let _ = child.wait();
    let lock = format!("/tmp/.X{n}-lock");
    let ours = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        == Some(child.id());
    if ours {
        let _ = std::fs::remove_file(format!("/tmp/.X11-unix/X{n}"));
        let _ = std::fs::remove_file(lock);
    }
}
