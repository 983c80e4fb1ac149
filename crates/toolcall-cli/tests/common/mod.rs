//! Helpers shared by the CLI tests: the built binary, where the examples and fixtures are,
//! and reading a finished process's output.
// Each test file uses only some of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// The built `toolcall` binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolcall"))
}

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `examples/<path>` of the repository.
pub fn example(path: &str) -> PathBuf {
    repo_root().join("examples").join(path)
}

/// `tests/fixtures/<path>` of this crate.
pub fn fixture_path(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// `toolcall run --replay examples/sessions/echo.json <args>` from the repository root.
pub fn run_echo_session(args: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.current_dir(repo_root())
        .args(["run", "--replay", "examples/sessions/echo.json"])
        .args(args);
    cmd
}

/// Stdout of a process that must have succeeded (else both streams are shown).
pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Stdout of a process that must have succeeded, as JSON.
pub fn json_of(out: Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// The turn report of a `toolcall run --json` that must have succeeded: its stdout is one
/// JSON event per line, the last one `turn_finished` with the report.
pub fn report_of(out: Output) -> Value {
    let text = ok(out);
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let last = events.last().expect("no events");
    assert_eq!(last["event"], "turn_finished", "{text}");
    last["report"].clone()
}

/// `toolcall sessions show <id> --json` over `archive`.
pub fn show_session(id: &str, archive: &Path) -> Value {
    json_of(
        bin()
            .args(["sessions", "show", id, "--json", "--archive"])
            .arg(archive)
            .output()
            .unwrap(),
    )
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A loopback stand-in for an OpenAI-compatible server: answers each POST with the next
/// scripted body and records (headers, body) of every request. Handles keep-alive.
pub type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>;

pub fn scripted_server(answers: Vec<Value>) -> (String, Seen) {
    scripted_raw_server(
        answers
            .into_iter()
            .map(|a| ("application/json", a.to_string()))
            .collect(),
    )
}

/// [`scripted_server`] answering each POST with the next `(content type, body)`: a JSON
/// reply, or a whole SSE stream (`text/event-stream`); `null` once the script is spent.
#[allow(dead_code)]
pub fn scripted_raw_server(answers: Vec<(&'static str, String)>) -> (String, Seen) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(answers));
    let (seen2, answers2) = (seen.clone(), answers.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (seen, answers) = (seen2.clone(), answers2.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut head = String::new();
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                        head.push_str(&line);
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    seen.lock()
                        .unwrap()
                        .push((head, serde_json::from_slice(&body).unwrap()));
                    let (kind, answer) = {
                        let mut a = answers.lock().unwrap();
                        if a.is_empty() {
                            ("application/json", "null".to_owned())
                        } else {
                            a.remove(0)
                        }
                    };
                    write!(
                        stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{}",
                        answer.len(),
                        answer
                    )
                    .unwrap();
                }
            });
        }
    });
    (url, seen)
}

/// A `toolcall serve` child, killed on drop; `addr` is the `host:port` it says it listens on.
pub struct Gateway {
    pub child: Child,
    pub addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    /// Starts `serve` (`bin()` with `serve` and its arguments, `--listen 127.0.0.1:0` among
    /// them) and reads its address from the first line it prints.
    pub fn start(serve: &mut Command) -> Gateway {
        let mut child = serve
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_owned();
        Gateway { child, addr }
    }
}
