//! A throwaway PostgreSQL server for tests: Debian's server binaries (`initdb`, `pg_ctl`)
//! run a cluster in a temporary directory on a free loopback port, as the `postgres` user
//! when the tests run as root (the server refuses root), and [`Postgres`]'s drop stops it
//! and removes the directory. The binaries are found in `$TOOLCALL_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin`, else on `PATH`.
//!
//! The server outlives no test binary, however it ends: a reaper (a small `sh` in a process
//! group of its own, so a Ctrl-C to the tests does not stop it first) reads a pipe whose
//! only writer is the test process. When that process exits, killed with `SIGKILL`
//! included, the kernel closes the pipe, and the reaper stops the server and removes its
//! directory. Dropping a [`Postgres`] closes the pipe too: one way to stop, either way.
//!
//! Use it through [`crate::require`]: `require("postgres", Postgres::start())` skips the
//! test (with a message) when PostgreSQL is not installed, unless
//! `TOOLCALL_REQUIRE_POSTGRES=1`.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Why a test server could not be had.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    #[error("no PostgreSQL server binaries (initdb, pg_ctl) found; install `postgresql`")]
    NotInstalled,
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("`{command}` failed ({status}): {output}")]
    Command {
        command: String,
        status: String,
        output: String,
    },
}

/// A running test cluster; stopped when dropped.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// Whether the server's commands run as the `postgres` user (the tests run as root).
    as_postgres: bool,
    /// Stops the server once its stdin closes (see the module doc); set once it runs.
    reaper: Option<Child>,
}

fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLCALL_PG_BIN").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("pg_ctl").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    // `id -u`: one number, not worth a libc dependency here.
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

fn free_port() -> Result<u16, PostgresError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| PostgresError::Io("cannot find a free loopback port".into(), e))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| PostgresError::Io("cannot find a free loopback port".into(), e))
}

impl Postgres {
    /// Creates and starts a cluster (a few seconds).
    pub fn start() -> Result<Self, PostgresError> {
        let bin = bin_dir().ok_or(PostgresError::NotInstalled)?;
        if !bin.join("initdb").exists() {
            return Err(PostgresError::NotInstalled);
        }
        let as_postgres = is_root();
        let dir = tempfile::Builder::new()
            .prefix("toolcall-pg-")
            .tempdir()
            .map_err(|e| PostgresError::Io("cannot make a temp dir".into(), e))?;
        let io = |what: &str, e| PostgresError::Io(format!("{what} {}", dir.path().display()), e);
        // The server's user must reach its directory.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io("cannot open up", e))?;
        let mut pg = Postgres {
            bin,
            port: 0,
            as_postgres,
            reaper: None,
            dir,
        };
        if as_postgres {
            pg.run_plain(
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(pg.dir.path()),
            )?;
        }
        let data = pg.data_dir();
        pg.run_server_cmd(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
            ],
        )?;
        // The port is free now; another process may take it before the server binds it, so
        // a failed start tries another.
        let mut last = None;
        for _ in 0..3 {
            pg.port = free_port()?;
            match pg.pg_ctl_start() {
                Ok(()) => {
                    match pg.spawn_reaper() {
                        Ok(reaper) => pg.reaper = Some(reaper),
                        Err(e) => {
                            pg.stop_now();
                            return Err(e);
                        }
                    }
                    return Ok(pg);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(PostgresError::NotInstalled))
    }

    /// `pg_ctl stop -m immediate` for this cluster (a test cluster keeps nothing).
    fn stop_command(&self) -> Command {
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            c
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        cmd.arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w", "stop"]);
        cmd
    }

    /// The reaper: waits for the end of its stdin, then stops the server and removes the
    /// cluster's directory (see the module doc).
    fn spawn_reaper(&self) -> Result<Child, PostgresError> {
        let stop = self.stop_command();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf -- "$TOOLCALL_PG_DIR""#)
            .arg("toolcall-pg-reaper")
            .arg(stop.get_program())
            .args(stop.get_args())
            .env("TOOLCALL_PG_DIR", self.dir.path())
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        cmd.spawn()
            .map_err(|e| PostgresError::Io("cannot start the cluster's reaper".into(), e))
    }

    /// Stops the server here and now (a start whose reaper could not be had).
    fn stop_now(&self) {
        if let Err(e) = self.run_plain(&mut self.stop_command()) {
            eprintln!("could not stop the test PostgreSQL server: {e}");
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn pg_ctl_start(&self) -> Result<(), PostgresError> {
        let options = format!(
            "-k {} -h 127.0.0.1 -p {} -F -c max_connections=200",
            self.dir.path().display(),
            self.port
        );
        let data = self.data_dir();
        let log = self.dir.path().join("server.log");
        self.run_server_cmd(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "-o".as_ref(),
                options.as_ref(),
                "start".as_ref(),
            ],
        )
        .map(drop)
        .map_err(|e| match e {
            PostgresError::Command {
                command,
                status,
                output,
            } => PostgresError::Command {
                command,
                status,
                output: format!(
                    "{output}\nserver log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ),
            },
            other => other,
        })
    }

    /// The server's loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `name` (see [`Self::create_database`]).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates an empty database; its URL.
    pub fn create_database(&self, name: &str) -> Result<String, PostgresError> {
        let port = self.port.to_string();
        self.run_server_cmd(
            "createdb",
            &[
                "-h".as_ref(),
                "127.0.0.1".as_ref(),
                "-p".as_ref(),
                port.as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
                name.as_ref(),
            ],
        )?;
        Ok(self.url(name))
    }

    /// Runs SQL in database `name` with `psql` (setup a test cannot do through its client).
    pub fn psql(&self, name: &str, sql: &str) -> Result<String, PostgresError> {
        let port = self.port.to_string();
        let out = self.run_server_cmd(
            "psql",
            &[
                "-X".as_ref(),
                "-q".as_ref(),
                "-A".as_ref(),
                "-t".as_ref(),
                "-v".as_ref(),
                "ON_ERROR_STOP=1".as_ref(),
                "-h".as_ref(),
                "127.0.0.1".as_ref(),
                "-p".as_ref(),
                port.as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-d".as_ref(),
                name.as_ref(),
                "-c".as_ref(),
                sql.as_ref(),
            ],
        )?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn run_server_cmd(
        &self,
        program: &str,
        args: &[&std::ffi::OsStr],
    ) -> Result<Output, PostgresError> {
        let path = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        cmd.args(args).current_dir(self.dir.path());
        self.run_plain(&mut cmd)
    }

    fn run_plain(&self, cmd: &mut Command) -> Result<Output, PostgresError> {
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| PostgresError::Io(format!("cannot run {:?}", cmd.get_program()), e))?;
        if out.status.success() {
            return Ok(out);
        }
        Err(PostgresError::Command {
            command: format!("{cmd:?}"),
            status: out.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        })
    }

    /// The cluster's directory (its `server.log` is there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    /// Closes the reaper's pipe and waits while it stops the server at once and removes the
    /// directory: the same stop as when the test process dies.
    fn drop(&mut self) {
        let Some(mut reaper) = self.reaper.take() else {
            return;
        };
        drop(reaper.stdin.take());
        if let Err(e) = reaper.wait() {
            eprintln!("could not wait for the test PostgreSQL server to stop: {e}");
        }
    }
}
