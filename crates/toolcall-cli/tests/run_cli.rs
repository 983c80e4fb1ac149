//! `toolcall run` and `toolcall sessions`, run as a real binary with `--replay` sessions and
//! program-backed tools.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::Value;

use common::{
    bin, fixture_path as fixture, json_of, ok, repo_root, report_of, run_echo_session,
    scripted_server, show_session,
};

// covers, O-1, V-5, R-10
#[test]
fn bundled_echo_session_runs_end_to_end_and_is_archived() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.sqlite");
    let out = run_echo_session(&["--json", "--archive"])
        .arg(&archive)
        .output()
        .unwrap();
    let report = report_of(out);
    let r0 = &report["rounds"][0];
    assert_eq!(
        r0["calls"][1]["name"], "text.word_count",
        "alias mapped back"
    );
    assert_eq!(r0["results"][1]["data"]["words"], 5);
    assert_eq!(r0["results"][2]["error"]["code"], "unknown_tool");
    let r1 = &report["rounds"][1];
    assert_eq!(r1["calls"][0]["origin"]["format"], "hermes");
    assert_eq!(
        r1["calls"][0]["origin"]["repairs"][0]["kind"],
        "trailing_comma"
    );
    assert!(report["final_text"].as_str().unwrap().contains("5 words"));
    assert_eq!(report["hit_round_limit"], false);

    // Human output of the same session.
    let text = ok(run_echo_session(&["--archive"])
        .arg(&archive)
        .output()
        .unwrap());
    assert!(
        text.contains("call text.word_count [call_count_1] via openai_chat"),
        "{text}"
    );
    assert!(text.contains("repaired (trailing_comma)"));
    assert!(
        text.contains("── turn finished: 3 round(s), 4 call(s), 1 failed"),
        "{text}"
    );

    let list = json_of(
        bin()
            .args(["sessions", "list", "--json", "--archive"])
            .arg(&archive)
            .output()
            .unwrap(),
    );
    assert_eq!(list.as_array().unwrap().len(), 2);
    let id = list[0]["id"].as_str().unwrap();
    let show = show_session(id, &archive);
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
    let report = report_of(out);
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
            let code = r["error"]["code"].as_str().unwrap_or("ok").to_owned();
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
        results[4]["error"]["message"]
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
    let report = report_of(
        bin()
            .args(["run", "--yes", "--json", "--replay"])
            .arg(fixture("mixed.json"))
            .arg("--archive")
            .arg(&archive)
            .output()
            .unwrap(),
    );
    assert_eq!(
        report["rounds"][0]["results"][3]["data"]["deleted"],
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
    let report = report_of(
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

// covers V-3, V-4
#[test]
fn disabled_tools_are_not_offered_and_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let report = report_of(
        run_echo_session(&["--disable", "text.*", "--json", "--archive"])
            .arg(dir.path().join("a.sqlite"))
            .output()
            .unwrap(),
    );
    let r0 = &report["rounds"][0]["results"];
    assert!(r0[0]["data"].is_object());
    assert_eq!(r0[1]["call_id"], "call_count_1");
    assert_eq!(r0[1]["error"]["code"], "tool_disabled");
    let out = run_echo_session(&["--pack-opt", "world.x=1"])
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pack world"));
}

// covers, O-1
#[test]
fn run_against_a_model_server_on_loopback() {
    let chat = |message: Value| serde_json::json!({"choices":[{"index":0,"message":message,"finish_reason":"stop"}]});
    let (url, seen) = scripted_server(vec![
        chat(
            serde_json::json!({"role":"assistant","content":null,"tool_calls":[
                {"id":"m1","type":"function","function":{"name":"text_word_count","arguments":"{\"text\":\"a b c\"}"}},
                {"id":"m2","type":"function","function":{"name":"nope","arguments":"{}"}}
            ]}),
        ),
        chat(serde_json::json!({"role":"assistant","content":"Three words."})),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .current_dir(repo_root())
        .env("MY_TEST_KEY", "sk-test-789")
        .args([
            "run",
            "--tools",
            "examples/tools/echo-tools.json",
            "--model",
            &url,
        ])
        .args([
            "--model-name",
            "test-model",
            "--api-key-env",
            "MY_TEST_KEY",
            "--mode",
            "native",
        ])
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .arg("How many words in 'a b c'?")
        .output()
        .unwrap();
    let text = ok(out);
    assert!(text.contains("Three words."), "{text}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[0]
            .0
            .to_ascii_lowercase()
            .contains("authorization: bearer sk-test-789")
    );
    assert!(seen[0].0.starts_with("POST /v1/chat/completions"));
    assert_eq!(seen[0].1["model"], "test-model");
    let offered: Vec<&str> = seen[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["echo", "text_word_count"]);
    let msgs = seen[1].1["messages"].as_array().unwrap();
    let tools: Vec<(&str, Value)> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                serde_json::from_str(m["content"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].0, "m1");
    assert_eq!(tools[0].1["data"]["words"], 3);
    assert_eq!(tools[1].0, "m2");
    assert_eq!(tools[1].1["error"]["code"], "unknown_tool");
}

//
#[test]
fn job_results_arrive_under_their_call_id() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.sqlite");
    let report = report_of(
        bin()
            .args(["run", "--json", "--replay"])
            .arg(fixture("job.json"))
            .arg("--archive")
            .arg(&archive)
            .output()
            .unwrap(),
    );
    assert_eq!(
        report["rounds"][0]["results"][0]["data"]["state"],
        "running"
    );
    let delivered: Vec<&Value> = report["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["job_results"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["call_id"], "job_call_1");
    assert_eq!(delivered[0]["data"]["rendered"], 24);
    assert_eq!(report["final_text"], "All 24 frames are rendered.");
    let id = report["session_id"].as_str().unwrap();
    let show = show_session(id, &archive);
    let results = show["calls"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1]["delivery"], "job");
    assert_eq!(results[1]["outcome"]["data"]["rendered"], 24);
}

// covers X-8: `toolcall run --archive postgres://…` archives there, and `toolcall sessions`
// reads it back from the same URL.
#[test]
fn run_and_sessions_use_a_postgres_archive() {
    use toolcall_testkit::postgres::Postgres;
    let Some(server) = toolcall_testkit::require("postgres", Postgres::start()) else {
        return;
    };
    let url = server.create_database("cli").unwrap();
    let report = report_of(
        run_echo_session(&["--json", "--archive", &url])
            .output()
            .unwrap(),
    );
    assert!(report["final_text"].as_str().unwrap().contains("5 words"));
    let list = json_of(
        bin()
            .args(["sessions", "list", "--json", "--archive", &url])
            .output()
            .unwrap(),
    );
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let id = list[0]["id"].as_str().unwrap();
    let show = json_of(
        bin()
            .args(["sessions", "show", id, "--json", "--archive", &url])
            .output()
            .unwrap(),
    );
    assert_eq!(show["calls"][0]["call_id"], "call_echo_1");
    assert_eq!(
        show["calls"][1]["results"][0]["outcome"]["data"]["chars"],
        25
    );
}
