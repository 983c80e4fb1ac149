//! `toolcall run --stream` prints the turn as it happens: the real binary against a stand-in
//! model on loopback that streams its first reply and sends the rest of it only once the
//! binary has printed the first piece (a gate, not a timer), then the calls, rounds and
//! summary in the order the agent's events tell them. Both the human output and `--json`
//! (one event per line). A stream cut after its first text is the run's error, not retried.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{bin, repo_root};
use serde_json::{Value, json};

/// A hang guard, never a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(60);
const SECRET: &str = "sk-live-4242";

fn chunk(delta: Value, finish: Value) -> String {
    let c = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

/// Reads one HTTP request (head and body) from `reader`.
fn read_request(reader: &mut BufReader<std::net::TcpStream>) -> Value {
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// The stand-in: the first request's stream sends "Hello ", waits for `gate`, then the rest
/// of the reply (" world." and a call to `echo` carrying a secret); the second request's
/// stream is the final reply. Each answer closes its connection. Returns the base URL and
/// whether the gate opened before the rest was sent.
fn gated_model(gate: mpsc::Receiver<()>) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let opened = Arc::new(AtomicBool::new(false));
    let opened2 = opened.clone();
    std::thread::spawn(move || {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let request = read_request(&mut reader);
            assert_eq!(request["stream"], true);
            let mut out = stream;
            out.write_all(head.as_bytes()).unwrap();
            if i == 0 {
                out.write_all(
                    chunk(
                        json!({"role": "assistant", "content": "Hello "}),
                        Value::Null,
                    )
                    .as_bytes(),
                )
                .unwrap();
                out.flush().unwrap();
                opened2.store(gate.recv_timeout(HANG_GUARD).is_ok(), Ordering::SeqCst);
                let args = json!({"text": "hi", "api_key": SECRET}).to_string();
                let rest = [
                    chunk(json!({"content": "world."}), Value::Null),
                    chunk(
                        json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                            "function": {"name": "echo", "arguments": args}}]}),
                        Value::Null,
                    ),
                    chunk(json!({}), json!("tool_calls")),
                    "data: [DONE]\n\n".to_owned(),
                ];
                out.write_all(rest.concat().as_bytes()).unwrap();
            } else {
                let rest = [
                    chunk(
                        json!({"role": "assistant", "content": "All done."}),
                        Value::Null,
                    ),
                    chunk(json!({}), json!("stop")),
                    "data: [DONE]\n\n".to_owned(),
                ];
                out.write_all(rest.concat().as_bytes()).unwrap();
            }
            out.flush().unwrap();
        }
    });
    (url, opened)
}

/// Runs `toolcall run --stream` against a gated stand-in; `first_piece_shown` says, from
/// the output so far, that the first text piece was printed. Returns the whole stdout and
/// whether the first piece was printed before the stand-in sent the rest.
fn run_gated(json: bool, first_piece_shown: fn(&str) -> bool) -> (String, bool) {
    let (gate_tx, gate_rx) = mpsc::channel();
    let (url, opened) = gated_model(gate_rx);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.current_dir(repo_root())
        .args(["run", "--stream", "--mode", "native", "--model", &url])
        .args([
            "--model-name",
            "m",
            "--tools",
            "examples/tools/echo-tools.json",
        ])
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    if json {
        cmd.arg("--json");
    }
    let mut child: Child = cmd.arg("Say hello").spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let seen2 = seen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut bytes = Vec::new();
        let mut gate = Some(gate_tx);
        loop {
            let n = stdout.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if first_piece_shown(&text)
                && let Some(tx) = gate.take()
            {
                tx.send(()).unwrap();
            }
            *seen2.lock().unwrap() = text;
        }
    });
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let out = seen.lock().unwrap().clone();
    assert!(status.success(), "{status:?}\n{out}");
    (out, opened.load(Ordering::SeqCst))
}

/// Asserts that `parts` occur in `text` in this order.
fn in_order(text: &str, parts: &[&str]) {
    let mut from = 0;
    for part in parts {
        let Some(at) = text[from..].find(part) else {
            panic!("{part:?} missing after byte {from} of:\n{text}");
        };
        from += at + part.len();
    }
}

//
#[test]
fn the_human_output_prints_each_event_as_it_happens() {
    let (out, opened) = run_gated(false, |t| t.contains("assistant: Hello"));
    assert!(
        opened,
        "the first text piece was not printed before the rest of the reply was sent:\n{out}"
    );
    in_order(
        &out,
        &[
            "session ses_",
            "── round 1",
            "  assistant: Hello world.\n",
            "  call echo [c1] via openai_chat",
            "    arguments: {",
            "    validation: valid",
            "    running",
            "    → ok {\"echo\":{",
            " ms)\n",
            "── round 2",
            "  assistant: All done.\n",
            "── turn finished: 2 round(s), 1 call(s), 0 failed",
        ],
    );
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("[REDACTED]"), "{out}");
}

//
#[test]
fn json_output_is_one_event_per_line_as_it_happens() {
    let (out, opened) = run_gated(true, |t| {
        t.lines()
            .any(|l| l.contains("\"text_delta\"") && l.contains("Hello "))
    });
    assert!(
        opened,
        "no text_delta line before the rest was sent:\n{out}"
    );
    assert!(!out.contains(SECRET), "{out}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .filter(|k| *k != "message_added")
        .collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "round_started",
            "text_delta",
            "text_delta",
            "reply_parsed",
            "call_parsed",
            "call_validated",
            "call_started",
            "call_completed",
            "round_finished",
            "round_started",
            "text_delta",
            "reply_parsed",
            "turn_finished",
        ]
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hello ", "world.", "All done."]);
    let done = events
        .iter()
        .find(|e| e["event"] == "call_completed")
        .unwrap();
    assert_eq!(done["call_id"], "c1");
    assert_eq!(done["result"]["data"]["echo"]["api_key"], "[REDACTED]");
    let report = &events.last().unwrap()["report"];
    assert_eq!(report["final_text"], "All done.");
    assert_eq!(
        report["rounds"][0]["calls"][0]["arguments"]["api_key"],
        "[REDACTED]"
    );
}

// covers R-18: what was printed of a cut reply is never followed by a retry's text
#[test]
fn a_stream_cut_mid_reply_is_the_runs_error_and_is_not_retried() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicU32::new(0));
    let counted = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            read_request(&mut reader);
            let mut out = stream;
            // The connection closes after the first piece: no finish, no [DONE].
            let body = chunk(
                json!({"role": "assistant", "content": "Once upon "}),
                Value::Null,
            );
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .current_dir(repo_root())
        .args(["run", "--stream", "--mode", "native", "--model", &url])
        .args([
            "--model-name",
            "m",
            "--tools",
            "examples/tools/echo-tools.json",
        ])
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .arg("Tell a story")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("  assistant: Once upon\n"), "{stdout}");
    assert!(!stdout.contains("turn finished"), "{stdout}");
    assert!(stderr.contains("cut"), "{stderr}");
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the cut stream was retried"
    );
}
