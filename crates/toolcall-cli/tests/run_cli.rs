//! `toolcall run` and `toolcall sessions`, run as a real binary with `--replay` sessions and
//! program-backed tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolcall"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_of(out: Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

// covers, O-1, V-5, R-10
#[test]
fn bundled_echo_session_runs_end_to_end_and_is_archived() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.sqlite");
    let out = bin()
        .current_dir(repo_root())
        .args([
            "run",
            "--replay",
            "examples/sessions/echo.json",
            "--json",
            "--archive",
        ])
        .arg(&archive)
        .output()
        .unwrap();
    let report = json_of(out);
    let r0 = &report["rounds"][0];
    assert_eq!(
        r0["calls"][1]["name"], "text.word_count",
        "alias mapped back"
    );
    assert_eq!(r0["results"][1]["outcome"]["Ok"]["data"]["words"], 5);
    assert_eq!(r0["results"][2]["outcome"]["Err"]["code"], "unknown_tool");
    let r1 = &report["rounds"][1];
    assert_eq!(r1["calls"][0]["origin"]["format"], "hermes");
    assert_eq!(
        r1["calls"][0]["origin"]["repairs"][0]["kind"],
        "trailing_comma"
    );
    assert!(report["final_text"].as_str().unwrap().contains("5 words"));
    assert_eq!(report["hit_round_limit"], false);

    // Human output of the same session.
    let text = ok(bin()
        .current_dir(repo_root())
        .args([
            "run",
            "--replay",
            "examples/sessions/echo.json",
            "--archive",
        ])
        .arg(&archive)
        .output()
        .unwrap());
    assert!(
        text.contains("call text.word_count [call_count_1] via openai_chat"),
        "{text}"
    );
    assert!(text.contains("repaired (trailing_comma)"));
    assert!(text.contains("── final reply"));

    let list = json_of(
        bin()
            .args(["sessions", "list", "--json", "--archive"])
            .arg(&archive)
            .output()
            .unwrap(),
    );
    assert_eq!(list.as_array().unwrap().len(), 2);
    let id = list[0]["id"].as_str().unwrap();
    let show = json_of(
        bin()
            .args(["sessions", "show", id, "--json", "--archive"])
            .arg(&archive)
            .output()
            .unwrap(),
    );
    let ids: Vec<&str> = show["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(&ids[..3], ["call_echo_1", "call_count_1", "call_shout_1"]);
    assert_eq!(
        show["calls"][1]["results"][0]["outcome"]["data"]["chars"],
        25
    );
    let human = ok(bin()
        .args(["sessions", "show", id, "--archive"])
        .arg(&archive)
        .output()
        .unwrap());
    assert!(human.contains("call_count_1"));
}

// covers, V-1, X-7
#[test]
fn every_outcome_is_reported_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.sqlite");
    let out = bin()
        .env("TOOLCALL_LOG", "info")
        .args(["run", "--json", "--replay"])
        .arg(fixture("mixed.json"))
        .arg("--archive")
        .arg(&archive)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = json_of(out);
    // events with call ids on stderr, the secret redacted.
    assert!(
        log.contains("tool_call.started") && log.contains("tool_call.failed"),
        "{log}"
    );
    assert!(log.contains("c_timeout") && log.contains("[REDACTED]"));
    assert!(!log.contains("sk-hidden-1"));
    let results = report["rounds"][0]["results"].as_array().unwrap();
    let summary: Vec<(String, String)> = results
        .iter()
        .map(|r| {
            let code = r["outcome"]["Err"]["code"]
                .as_str()
                .unwrap_or("ok")
                .to_owned();
            (r["call_id"].as_str().unwrap().to_owned(), code)
        })
        .collect();
    let expected = [
        ("c_ok", "ok"),
        ("c_unknown", "unknown_tool"),
        ("c_invalid", "invalid_arguments"),
        ("c_denied", "denied"),
        ("c_failed", "tool_failed"),
        ("c_timeout", "timeout"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(summary, expected);
    assert!(
        results[4]["outcome"]["Err"]["message"]
            .as_str()
            .unwrap()
            .contains("disk on fire")
    );
    // The archive never holds the secret argument.
    let bytes = std::fs::read(&archive).unwrap();
    let wal = std::fs::read(dir.path().join("a.sqlite-wal")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&bytes).contains("sk-hidden-1"));
    assert!(!String::from_utf8_lossy(&wal).contains("sk-hidden-1"));

    // --yes approves the guarded tool.
    let report = json_of(
        bin()
            .args(["run", "--yes", "--json", "--replay"])
            .arg(fixture("mixed.json"))
            .arg("--archive")
            .arg(&archive)
            .output()
            .unwrap(),
    );
    assert_eq!(
        report["rounds"][0]["results"][3]["outcome"]["Ok"]["data"]["deleted"],
        "/tmp/x"
    );
}

//
#[test]
fn max_rounds_bound_asks_for_a_final_reply() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["run", "--max-rounds", "2", "--replay"])
        .arg(fixture("endless.json"))
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .output()
        .unwrap();
    let text = ok(out);
    assert!(text.contains("round limit reached"), "{text}");
    assert!(text.contains("Stopped after two rounds."));
}

//
#[test]
fn too_few_recorded_replies_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.json");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("endless.json")).unwrap()).unwrap();
    v["replies"].as_array_mut().unwrap().truncate(1);
    v["setup"]["tools"] = serde_json::json!([fixture("run-tools.json")]);
    std::fs::write(&short, v.to_string()).unwrap();
    let out = bin()
        .args(["run", "--replay"])
        .arg(&short)
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("recorded session has 1 replies"), "{err}");
    let out = bin().args(["run", "hello"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--replay"));
}

// covers P-CU, X-3
#[test]
fn save_images_writes_result_images_by_call_id() {
    let dir = tempfile::tempdir().unwrap();
    let images = dir.path().join("shots");
    let out = bin()
        .args(["run", "--json", "--replay"])
        .arg(fixture("image.json"))
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .arg("--save-images")
        .arg(&images)
        .output()
        .unwrap();
    ok(out);
    let png = std::fs::read(images.join("shot_1.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

//
#[test]
fn archive_defaults_to_the_env_variable_and_sessions_resume() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("env.sqlite");
    ok(bin()
        .env("TOOLCALL_ARCHIVE", &archive)
        .args(["run", "--replay"])
        .arg(fixture("endless.json"))
        .output()
        .unwrap());
    assert!(archive.exists());
    let list = json_of(
        bin()
            .env("TOOLCALL_ARCHIVE", &archive)
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap(),
    );
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let report = json_of(
        bin()
            .env("TOOLCALL_ARCHIVE", &archive)
            .args(["run", "--json", "--resume", &id, "--replay"])
            .arg(fixture("second-turn.json"))
            .output()
            .unwrap(),
    );
    assert_eq!(report["session_id"], id.as_str());
    let show = json_of(
        bin()
            .env("TOOLCALL_ARCHIVE", &archive)
            .args(["sessions", "show", &id, "--json"])
            .output()
            .unwrap(),
    );
    let users: Vec<&str> = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users.first(), Some(&"Loop."));
    assert_eq!(users.last(), Some(&"And again?"));
    let out = bin()
        .env("TOOLCALL_ARCHIVE", &archive)
        .args(["sessions", "show", "ses_nope"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ses_nope"));
}
