//! `toolcall parse` / `toolcall formats` run as the built binary: the exact JSON contract,
//! exit codes, streaming.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use common::bin;

fn fixture(name: &str) -> PathBuf {
    common::fixture_path("parse").join(name)
}

fn toolcall(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        // The process may exit (usage error) before reading its input.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn json_out(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(s.lines().count(), 1, "exactly one JSON object: {s}");
    serde_json::from_str(&s).unwrap()
}

fn check_contract(v: &Value) {
    assert!(v["text"].is_string());
    for c in v["calls"].as_array().unwrap() {
        assert!(c["call_id"].is_string());
        assert!(c["name"].is_string());
        assert!(
            c["arguments"].is_object(),
            "R-3: arguments always an object"
        );
        assert!(c["format"].is_string());
    }
    for d in v["diagnostics"].as_array().unwrap() {
        assert!(d["level"].is_string());
        assert!(d["message"].is_string());
        let span = d["span"].as_array().unwrap();
        assert_eq!(span.len(), 2);
        assert!(span[0].as_u64().unwrap() <= span[1].as_u64().unwrap());
    }
}

// covers F-JSON-1, F-AUTO-1, F-DIAG-1
#[test]
fn parse_file_prints_the_contract() {
    let f = fixture("seed000_fenced.txt");
    let v = json_out(&toolcall(&["parse", f.to_str().unwrap()], None));
    check_contract(&v);
    assert_eq!(
        v["text"],
        "Sure, let me look at the screen first.\n\nThen I will click."
    );
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["name"], "computer_use");
    assert_eq!(calls[0]["arguments"], json!({"action":"screenshot"}));
    assert_eq!(calls[0]["format"], "tools_envelope");
    let id = calls[0]["call_id"].as_str().unwrap();
    assert!(id.starts_with("call_") && id.len() == 29);
}

// covers F-JSON-3
#[test]
fn parse_whole_seed_document_from_stdin() {
    let doc = std::fs::read(fixture("seed000.txt")).unwrap();
    let v = json_out(&toolcall(&["parse", "-"], Some(&doc)));
    check_contract(&v);
    assert_eq!(v["calls"].as_array().unwrap().len(), 15);
}

// covers F-PY-1, F-KV-1
#[test]
fn tools_file_in_every_shape_enables_registry_formats() {
    {
        let t = fixture("tools.json");
        let o = toolcall(
            &["parse", "--tools", t.to_str().unwrap()],
            Some(b"Clicking computer_use(\"left_click\", 100, 200) now"),
        );
        let v = json_out(&o);
        check_contract(&v);
        assert_eq!(
            v["calls"][0]["arguments"],
            json!({"action":"left_click","coordinate":[100,200]})
        );
        assert_eq!(v["calls"][0]["format"], "call_syntax");
        assert_eq!(v["text"], "Clicking  now");
    }
    for tools in ["tools_chat.json", "tools_responses.json"] {
        let t = fixture(tools);
        let v = json_out(&toolcall(
            &["parse", "--tools", t.to_str().unwrap()],
            Some(br#"{"name":"get_weather","arguments":{"city":"Paris"}} {"name":"nope","arguments":{}}"#),
        ));
        assert_eq!(v["calls"].as_array().unwrap().len(), 1, "{tools}");
        assert_eq!(v["calls"][0]["name"], "get_weather");
    }
    let kv = fixture("seed004_kv_with_text.txt");
    let t = fixture("tools.json");
    let v = json_out(&toolcall(
        &[
            "parse",
            "--tools",
            t.to_str().unwrap(),
            kv.to_str().unwrap(),
        ],
        None,
    ));
    assert_eq!(v["calls"][0]["arguments"], json!({"object":"headphones"}));
    assert_eq!(v["text"], "I've highlighted them for you!");
}

// covers R-4
#[test]
fn zero_calls_is_success() {
    let v = json_out(&toolcall(
        &["parse"],
        Some(b"Just prose, {\"a\": 1} and [1, 2]."),
    ));
    assert_eq!(v["calls"], json!([]));
    assert_eq!(v["text"], "Just prose, {\"a\": 1} and [1, 2].");
}

// covers R-5
#[test]
fn reasoning_is_reported_apart() {
    let f = fixture("qwen_hermes.txt");
    let v = json_out(&toolcall(&["parse", f.to_str().unwrap()], None));
    assert_eq!(v["calls"].as_array().unwrap().len(), 2);
    // A list of blocks, as the Python package gives it.
    let blocks = v["reasoning"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b.as_str().unwrap().contains("weather in Paris")),
        "{blocks:?}"
    );
    assert!(!v["text"].as_str().unwrap().contains("weather in Paris"));
}

// `--reasoning-calls`: a call written only inside reasoning is a draft unless asked for.
#[test]
fn reasoning_calls_flag_takes_the_only_call_from_reasoning() {
    let reply = br#"<think>Paris. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></think>"#;
    let calls = |extra: &[&str]| {
        let mut args = vec!["parse"];
        args.extend_from_slice(extra);
        json_out(&toolcall(&args, Some(reply)))["calls"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(calls(&[]), 0);
    assert_eq!(calls(&["--reasoning-calls", "take_if_none_after"]), 1);
    assert_eq!(calls(&["--reasoning-calls", "ignore"]), 0);
    let bad = toolcall(&["parse", "--reasoning-calls", "sometimes"], Some(reply));
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

// covers F-NAT-1
#[test]
fn native_json_with_an_explicit_format_keeps_ids() {
    let f = fixture("openai_chat.json");
    let v = json_out(&toolcall(
        &["parse", "--format", "openai_chat", f.to_str().unwrap()],
        None,
    ));
    assert_eq!(v["calls"][0]["call_id"], "call_abc123");
    assert_eq!(v["calls"][1]["arguments"], json!({}));
    assert_eq!(v["calls"][0]["format"], "openai_chat");
}

// covers F-FB-1
#[test]
fn fallbacks_flag_enables_rules() {
    let t = fixture("tools.json");
    let fb = fixture("fallbacks.json");
    let v = json_out(&toolcall(
        &[
            "parse",
            "--tools",
            t.to_str().unwrap(),
            "--fallbacks",
            fb.to_str().unwrap(),
        ],
        Some(b"I'll highlight the cup for you"),
    ));
    assert_eq!(v["calls"][0]["arguments"], json!({"object":"cup"}));
    assert_eq!(v["calls"][0]["format"], "fallback");
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["message"].as_str().unwrap().contains("intent"))
    );
    let v = json_out(&toolcall(
        &["parse", "--tools", t.to_str().unwrap()],
        Some(b"I'll highlight the cup for you"),
    ));
    assert_eq!(v["calls"], json!([]));
}

// covers R-1, R-2
#[test]
fn stream_prints_event_lines_matching_the_one_shot_result() {
    let input = br#"Hi <tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":"b","arguments":{"x":1}}</tool_call> bye"#;
    let o = toolcall(&["parse", "--stream"], Some(input));
    assert!(o.status.success());
    let lines: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = lines
        .iter()
        .filter(|e| e["event"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hi  bye");
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|e| e["event"] == "call_finished")
        .collect();
    assert_eq!(finished.len(), 2);
    assert_eq!(finished[1]["call"]["arguments"], json!({"x":1}));
    // The streamed call is the whole-reply output's call, key for key.
    let whole = json_out(&toolcall(&["parse"], Some(input)));
    for (streamed, call) in finished.iter().zip(whole["calls"].as_array().unwrap()) {
        let mut streamed = streamed["call"].clone();
        streamed["call_id"] = call["call_id"].clone(); // made afresh by each run
        assert_eq!(&streamed, call);
    }
    let keys: Vec<&str> = whole["calls"][1]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["call_id", "name", "arguments", "format", "span", "repairs"]
    );
    assert!(
        lines
            .iter()
            .any(|e| e["event"] == "call_started" && e["index"] == 0)
    );
}

// covers R-7
#[test]
fn bad_input_and_usage_errors_have_the_documented_exit_codes() {
    let o = toolcall(&["parse"], Some(&[b'o', b'k', 0xff, 0xfe]));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("UTF-8") && err.lines().count() == 1, "{err}");
    let o = toolcall(&["parse", "/nonexistent/reply.txt"], None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8(o.stderr).unwrap().lines().count(), 1);
    let o = toolcall(&["parse", "--format", "klingon"], Some(b"x"));
    assert_eq!(o.status.code(), Some(2));
    let o = toolcall(&["parse", "--bogus"], Some(b"x"));
    assert_eq!(o.status.code(), Some(2));
}

// covers F-AUTO-1
#[test]
fn formats_lists_every_format_with_an_example() {
    let o = toolcall(&["formats"], None);
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    for id in [
        "tools_envelope",
        "call_syntax",
        "action_response",
        "key_value",
        "fallback",
        "hermes",
        "mistral",
        "llama",
        "pythonic",
        "json",
        "openai_chat",
        "responses",
        "gemini",
        "anthropic",
    ] {
        assert!(s.lines().any(|l| l.starts_with(id)), "{id} missing");
    }
    assert_eq!(
        s.lines()
            .filter(|l| l.trim_start().starts_with("e.g."))
            .count(),
        toolcall_parse::formats().len()
    );
}

// covers R-2
#[test]
fn stream_emits_calls_before_the_input_ends() {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;
    let mut child = bin()
        .args(["parse", "--stream"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    stdin
        .write_all(br#"Hi <tool_call>{"name":"a","arguments":{"x":1}}</tool_call> and"#)
        .unwrap();
    stdin.flush().unwrap();
    // The call arrives while standard input is still open.
    let mut got_call = false;
    while let Ok(event) = rx.recv_timeout(Duration::from_secs(20)) {
        if event["event"] == "call_finished" {
            assert_eq!(event["call"]["arguments"], json!({"x":1}));
            got_call = true;
            break;
        }
    }
    assert!(got_call, "no call_finished before end of input");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let rest: Vec<Value> = rx.iter().collect();
    assert!(
        rest.iter()
            .any(|e| e["event"] == "text" && e["text"].as_str().unwrap().contains("and"))
    );
    reader.join().unwrap();
}

// covers the input limit: past it the rest of stdin is not read (bounded memory)
#[test]
fn oversized_input_is_not_read_past_the_limit() {
    let mut child = bin()
        .args(["parse"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // 64 MiB offered, 16 MiB is the limit: the writer is cut off once the parser stops.
    let writer = std::thread::spawn(move || {
        let block = vec![b'a'; 1 << 20];
        let mut written = 0usize;
        for _ in 0..64 {
            if input.write_all(&block).is_err() {
                break;
            }
            written += block.len();
        }
        written
    });
    let out = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_out(&out);
    let text = v["text"].as_str().unwrap();
    assert!(text.len() < 17 << 20, "{} bytes of text", text.len());
    assert!(written < 64 << 20, "all 64 MiB were read");
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["message"].as_str().unwrap_or("").contains("exceeds")),
        "{:?}",
        v["diagnostics"]
    );
}
