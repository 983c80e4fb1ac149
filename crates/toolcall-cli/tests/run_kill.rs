//! `kill -9` of `toolcall run` in the middle of a program tool's call: the program dies with
//! it (its side effect never happens), and `--resume` tells the model the call's outcome is
//! unknown, never that it did not run.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use common::{bin, json_of, report_of};

/// Whether `pid` still runs (a zombie, waiting for a reaper that may never come in a
/// container, has ended).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

//
#[test]
#[cfg(target_os = "linux")]
fn a_killed_run_takes_its_program_tool_with_it_and_resume_says_may_have_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("program.pid");
    let marker = dir.path().join("side-effect.done");
    let archive = dir.path().join("a.sqlite");
    // The program records its pid, waits (long enough for the kill to land first), then
    // does its side effect.
    let script = format!(
        "echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'; sleep 20; touch '{}'",
        pid_file.display(),
        marker.display()
    );
    write_json(
        &dir.path().join("tools.json"),
        &json!({"tools": [{
            "name": "send_payment",
            "description": "Sends a payment (slowly).",
            "parameters": {"type": "object", "properties": {}},
            "backend": {"type": "program", "argv": ["sh", "-c", script]}
        }]}),
    );
    write_json(
        &dir.path().join("session.json"),
        &json!({
            "description": "One slow call with a side effect",
            "prompt": "Pay.",
            "mode": "native",
            "setup": {"tools": ["tools.json"]},
            "replies": [
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_pay",
                    "type": "function", "function": {"name": "send_payment", "arguments": "{}"}}]},
                {"role": "assistant", "content": "Paid."}
            ]
        }),
    );
    write_json(
        &dir.path().join("resume.json"),
        &json!({"prompt": "Did it go through?",
            "replies": [{"role": "assistant", "content": "Checking."}]}),
    );

    let mut run = bin()
        .args(["run", "--json", "--replay"])
        .arg(dir.path().join("session.json"))
        .arg("--archive")
        .arg(&archive)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let program = loop {
        assert!(Instant::now() < deadline, "the program never started");
        assert!(
            run.try_wait().unwrap().is_none(),
            "toolcall run exited early"
        );
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            break text.trim().parse::<u32>().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();

    // The program ends with its parent, long before its 20 s wait is over; before the fix
    // it ran on, re-parented, and did its side effect.
    let deadline = Instant::now() + Duration::from_secs(40);
    while running(program) {
        assert!(
            Instant::now() < deadline,
            "the program {program} still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !marker.exists(),
        "the orphaned program completed its side effect"
    );

    let list = json_of(
        bin()
            .args(["sessions", "list", "--json", "--archive"])
            .arg(&archive)
            .output()
            .unwrap(),
    );
    let id = list[0]["id"].as_str().unwrap().to_owned();
    report_of(
        bin()
            .args(["run", "--json", "--resume", &id, "--replay"])
            .arg(dir.path().join("resume.json"))
            .arg("--archive")
            .arg(&archive)
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    );
    let show = json_of(
        bin()
            .args(["sessions", "show", &id, "--json", "--archive"])
            .arg(&archive)
            .output()
            .unwrap(),
    );
    let answer = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("the interrupted call is not answered: {show}"));
    let content = answer["content"].to_string();
    assert!(content.contains("may have run"), "{content}");
    assert!(!content.contains("not run"), "{content}");
}
