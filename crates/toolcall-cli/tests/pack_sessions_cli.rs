//! Every pack's bundled recorded session, played by the real `toolcall run --replay` binary:
//! the README's promise that each one runs end to end.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

use common::{bin, example, ok as stdout_of, report_of};

/// Plays a session with `--json` into a fresh archive; returns the report and the archive.
fn replay(session: &str, extra: &[&str], dir: &Path) -> (Value, PathBuf) {
    let archive = dir.join("sessions.sqlite");
    let out = bin()
        .arg("run")
        .arg("--replay")
        .arg(example(session))
        .arg("--archive")
        .arg(&archive)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    (report_of(out), archive)
}

/// Every result of every round (inline and job results), in report order.
fn results(report: &Value) -> Vec<&Value> {
    report["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            r["results"]
                .as_array()
                .unwrap()
                .iter()
                .chain(r["job_results"].as_array().into_iter().flatten())
        })
        .collect()
}

fn assert_all_ok(report: &Value) {
    for r in results(report) {
        assert_eq!(r["status"], "ok", "{r}");
    }
    assert_eq!(report["hit_round_limit"], false);
    assert!(report["final_text"].as_str().is_some_and(|t| !t.is_empty()));
}

// covers P-WORLD, X-5, X-6, X-8
#[test]
fn world_session_changes_the_world_and_archives_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let (report, archive) = replay("world/session.json", &[], dir.path());
    assert_all_ok(&report);
    let names: Vec<&str> = results(&report)
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["create_object", "move_object", "set_attribute"]);

    let id = report["session_id"].as_str().unwrap();
    let shown = common::show_session(id, &archive);
    let world = &shown["pack_states"]["world"];
    let key = world["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "Rusty key")
        .expect("the created key is in the saved world");
    assert_eq!(key["holder"], "char_001");
    let chest = world["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "obj_chest")
        .unwrap();
    assert_eq!(chest["attributes"]["condition"], "open");
}

// covers P-APP, F-ACT-1
#[test]
fn apps_session_prints_mcp_lines_and_speech() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .arg("run")
        .arg("--replay")
        .arg(example("apps/session.json"))
        .arg("--archive")
        .arg(dir.path().join("a.sqlite"))
        .output()
        .unwrap();
    let text = stdout_of(out);
    let mcp: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("__MCP__"))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(mcp.len(), 2, "{text}");
    assert_eq!(mcp[0]["command"], "open_app");
    assert_eq!(mcp[1]["command"], "close_app");
    let pid = mcp[0]["result"]["pid"].as_u64().unwrap();
    // close_app really ended the process it started.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists() || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.contains(") Z ")
        }
    );
    assert!(text.contains("  speech: Opening Test App."), "{text}");
}

// covers P-APP: an app the model opened and never closed ends with the run
#[test]
fn apps_left_open_end_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let apps = dir.path().join("applications");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("left-open.desktop"),
        "[Desktop Entry]\nType=Application\nName=Left Open\nExec=sleep 600\n",
    )
    .unwrap();
    let session = serde_json::json!({
        "description": "opens an app and leaves it open",
        "prompt": "Open the app.",
        "mode": "native",
        "setup": {"packs": {"apps": {
            "allow": ["Left Open"], "desktop_dirs": ["applications"], "grace_ms": 2000
        }}},
        "replies": [
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "open_app", "arguments": "{\"app_name\":\"Left Open\"}"}}]},
            {"role": "assistant", "content": "It is open."}
        ]
    });
    let file = dir.path().join("session.json");
    std::fs::write(&file, session.to_string()).unwrap();
    let (report, _) = replay(file.to_str().unwrap(), &[], dir.path());
    let r = results(&report);
    assert_eq!(r[0]["status"], "ok", "{report}");
    let pid = r[0]["data"]["pid"].as_u64().unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the app (pid {pid}) outlived the run: {stat}"
    );
}

// covers P-HL, F-KV-1
#[test]
fn highlight_session_draws_the_box() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("out.png");
    let opt = format!("highlight.output={}", png.display());
    let (report, _) = replay("highlight/session.json", &["--pack-opt", &opt], dir.path());
    assert_all_ok(&report);
    let r = results(&report)[0];
    assert_eq!(r["data"]["label"], "headphones");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
}

// covers P-SLASH, X-4
#[test]
fn slash_session_delivers_jobs_under_their_call_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (report, _) = replay("slash/session.json", &[], dir.path());
    assert_all_ok(&report);
    let jobs: Vec<&Value> = report["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["job_results"].as_array().into_iter().flatten())
        .collect();
    let mut ids: Vec<&str> = jobs
        .iter()
        .map(|j| j["call_id"].as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["call_order_01", "call_summary_01"]);
}

// covers P-CU
#[test]
fn computer_session_drives_xvfb_and_saves_screenshots() {
    let xvfb = match toolcall_packs::computer::xvfb::Xvfb::start(1024, 768) {
        Ok(x) => x,
        Err(e) if std::env::var_os("TOOLCALL_REQUIRE_XVFB").is_none() => {
            eprintln!("skipped: cannot start Xvfb ({e})");
            return;
        }
        Err(e) => panic!("Xvfb is required (TOOLCALL_REQUIRE_XVFB) but did not start: {e}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let shots = dir.path().join("shots");
    let shots_arg = shots.display().to_string();
    let (report, _) = replay(
        "computer/session.json",
        &["--display", xvfb.display(), "--save-images", &shots_arg],
        dir.path(),
    );
    assert_all_ok(&report);
    // The last call is a screenshot: saved under its call id, at the model's 1024x768.
    let last = results(&report).last().unwrap()["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let png = std::fs::read(shots.join(format!("{last}.png"))).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1024, 768));
}

// covers P-CU, R-7
#[test]
fn display_flag_needs_the_computer_pack() {
    let out = bin()
        .args(["run", "--replay"])
        .arg(example("world/session.json"))
        .args(["--display", ":99"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--display is for the computer pack"), "{err}");
}
