//! The apps pack with real processes: test `.desktop` entries in a temp dir start `sleep`
//! and small scripts; the tests check /proc that they really run and really ended.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolcall_core::{
    CallId, ErrorCode, Parsed, ToolCall, ToolContext, ToolError, ToolOutput, ToolResult,
};
use toolcall_packs::apps::{self, Launcher};
use toolcall_packs::{Pack, PackConfig};

struct Setup {
    dir: tempfile::TempDir,
    launcher: Arc<Launcher>,
    pack: Pack,
}

fn write_exec(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn setup(extra: Value) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("applications/sub")).unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::create_dir_all(d.join("outside")).unwrap();
    let marker = d.join("marker.txt");
    write_exec(
        &d.join("bin/mark.sh"),
        "#!/bin/sh\nprintf '%s|' \"$@\" > \"$1\"\nexec sleep 600\n",
    );
    write_exec(
        &d.join("bin/stubborn.sh"),
        "#!/bin/sh\ntrap '' TERM\ntouch \"$0.ready\"\nwhile :; do sleep 1; done\n",
    );
    write_exec(&d.join("outside/evil.sh"), "#!/bin/sh\ntouch \"$0.ran\"\n");
    std::os::unix::fs::symlink(d.join("outside/evil.sh"), d.join("bin/link.sh")).unwrap();
    std::fs::write(d.join("bin/plain.txt"), "not a program").unwrap();
    let apps = d.join("applications");
    std::fs::write(
        apps.join("sleeper.desktop"),
        "[Desktop Entry]\nType=Application\nName=Sleeper\nExec=sleep 600 %U\n",
    )
    .unwrap();
    std::fs::write(
        apps.join("sub/marker.desktop"),
        format!(
            "[Desktop Entry]\nType=Application\nName=Marker App\nExec=\"{}\" \"{}\" \"two words\" 100%% %F\n",
            d.join("bin/mark.sh").display(),
            marker.display()
        ),
    )
    .unwrap();
    std::fs::write(
        apps.join("stubborn.desktop"),
        format!(
            "[Desktop Entry]\nType=Application\nName=Stubborn\nExec={}\n",
            d.join("bin/stubborn.sh").display()
        ),
    )
    .unwrap();
    std::fs::write(
        apps.join("forbidden.desktop"),
        "[Desktop Entry]\nType=Application\nName=Forbidden\nExec=sleep 601\n",
    )
    .unwrap();
    let mut options: Map<String, Value> = json!({
        "allow": ["sleeper", "Marker App", "stubborn"],
        "desktop_dirs": ["applications"],
        "allowed_dirs": ["bin"],
        "grace_ms": 2000
    })
    .as_object()
    .unwrap()
    .clone();
    if let Value::Object(m) = extra {
        options.extend(m);
    }
    let config = PackConfig {
        base_dir: d.to_owned(),
        options,
    };
    let launcher = Arc::new(apps::launcher(&config).unwrap());
    let pack = apps::pack_with(launcher.clone()).unwrap();
    Setup {
        dir,
        launcher,
        pack,
    }
}

async fn call(p: &Pack, session: &str, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext {
        session_id: Some(session.into()),
        ..ToolContext::default()
    };
    common::call_with(p, &ctx, name, args).await
}

use common::proc_dir;

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u64) -> bool {
    match std::fs::read_to_string(proc_dir(pid).join("stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn cmdline(pid: u64) -> Vec<String> {
    std::fs::read(proc_dir(pid).join("cmdline"))
        .unwrap()
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

async fn wait_for(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..300 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    false
}

// covers P-APP
#[tokio::test]
async fn open_and_close_a_real_process_by_name() {
    let s = setup(json!({}));
    let out = call(&s.pack, "s1", "open_app", json!({"app_name": "sleeper"}))
        .await
        .unwrap();
    let pid = out.data["pid"].as_u64().unwrap();
    assert!(alive(pid));
    // Field code %U stripped, no shell. /proc may briefly show the pre-exec command line.
    assert!(
        wait_for(|| cmdline(pid) == ["sleep", "600"]).await,
        "command line {:?}",
        cmdline(pid)
    );
    assert_eq!(out.data["message"], format!("Started Sleeper (pid {pid})."));
    // A second open reports the running instance instead of starting another.
    let again = call(&s.pack, "s1", "open_app", json!({"app_name": "SLEEPER"}))
        .await
        .unwrap();
    assert_eq!(again.data["pid"].as_u64(), Some(pid));
    assert_eq!(again.data["already_running"], true);
    // Another session cannot close it.
    let err = call(&s.pack, "s2", "close_app", json!({"app_name": "Sleeper"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("was not opened in this session"),
        "{}",
        err.message
    );
    assert!(alive(pid));

    let out = call(&s.pack, "s1", "close_app", json!({"app_name": "Sleeper"}))
        .await
        .unwrap();
    assert_eq!(out.data["closed"][0]["ending"], "closed");
    assert!(
        !proc_dir(pid).exists(),
        "process {pid} still exists (not reaped)"
    );
    let err = call(&s.pack, "s1", "close_app", json!({"app_name": "Sleeper"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ToolFailed);
}

// covers P-APP
#[tokio::test]
async fn exec_quoting_reaches_the_program_intact() {
    let s = setup(json!({}));
    let marker = s.dir.path().join("marker.txt");
    // Matched by Name (case-insensitive), found in a subdirectory (id `sub-marker`).
    let out = call(&s.pack, "s", "open_app", json!({"app_name": "marker app"}))
        .await
        .unwrap();
    let pid = out.data["pid"].as_u64().unwrap();
    assert!(wait_for(|| std::fs::read_to_string(&marker).is_ok_and(|t| t.ends_with('|'))).await);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        format!("{}|two words|100%|", marker.display())
    );
    assert!(alive(pid));
    call(&s.pack, "s", "close_app", json!({"app_name": "sub-marker"}))
        .await
        .unwrap();
    assert!(!proc_dir(pid).exists());
}

// covers P-APP
#[tokio::test]
async fn a_process_ignoring_sigterm_is_killed_after_the_grace_period() {
    let s = setup(json!({"grace_ms": 300}));
    let out = call(&s.pack, "s", "open_app", json!({"app_name": "Stubborn"}))
        .await
        .unwrap();
    let pid = out.data["pid"].as_u64().unwrap();
    // Wait until the shell has installed its trap.
    let ready = s.dir.path().join("bin/stubborn.sh.ready");
    assert!(
        wait_for(|| ready.exists()).await,
        "script never became ready"
    );
    let started = std::time::Instant::now();
    let out = call(&s.pack, "s", "close_app", json!({"app_name": "stubborn"}))
        .await
        .unwrap();
    assert_eq!(
        out.data["closed"][0]["ending"],
        "did not quit in time and was killed"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(!proc_dir(pid).exists());
}

// covers P-APP
#[tokio::test]
async fn unknown_and_not_allowed_apps_get_clear_errors() {
    let s = setup(json!({}));
    let err = call(&s.pack, "s", "open_app", json!({"app_name": "Safari"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ToolFailed);
    assert!(
        err.message.starts_with("unknown app \"Safari\""),
        "{}",
        err.message
    );
    assert!(err.message.contains("Sleeper"), "{}", err.message);
    let err = call(&s.pack, "s", "open_app", json!({"app_name": "Forbidden"}))
        .await
        .unwrap_err();
    assert!(
        err.message.contains("not on the allow-list"),
        "{}",
        err.message
    );
    for bad in [json!({}), json!({"app_name": ""}), json!({"app_name": 5})] {
        assert_eq!(
            call(&s.pack, "s", "open_app", bad).await.unwrap_err().code,
            ErrorCode::ToolFailed
        );
    }
    assert!(call(&s.pack, "s", "close_app", json!({})).await.is_err());
    // Nothing was started by any of these.
    assert_eq!(s.launcher.close_all("s").await, 0);
}

// covers P-APP
#[tokio::test]
async fn app_path_only_inside_allowed_dirs() {
    let s = setup(json!({"grace_ms": 200}));
    let d = s.dir.path();
    let evil = d.join("outside/evil.sh");
    for (path, needle) in [
        (
            evil.display().to_string(),
            "not inside an allowed directory",
        ),
        (
            format!("{}/bin/../outside/evil.sh", d.display()),
            "not inside an allowed directory",
        ),
        (
            d.join("bin/link.sh").display().to_string(),
            "not inside an allowed directory",
        ),
        ("bin/mark.sh".to_owned(), "absolute"),
        (
            d.join("bin/plain.txt").display().to_string(),
            "not an executable",
        ),
        (d.join("bin/missing").display().to_string(), "No such file"),
    ] {
        let err = call(&s.pack, "s", "open_app", json!({"app_path": path}))
            .await
            .unwrap_err();
        assert!(err.message.contains(needle), "{path}: {}", err.message);
    }
    assert!(!d.join("outside/evil.sh.ran").exists());

    // Inside an allowed directory the program runs until it is closed.
    let out = call(
        &s.pack,
        "s",
        "open_app",
        json!({"app_path": d.join("bin/stubborn.sh")}),
    )
    .await;
    let out = out.unwrap();
    let pid = out.data["pid"].as_u64().unwrap();
    assert!(alive(pid));
    assert_eq!(s.launcher.close_all("s").await, 1);
    assert!(!proc_dir(pid).exists());
}

fn call_of(name: &str, id: &str, args: Value) -> ToolCall {
    ToolCall {
        call_id: CallId::from(id),
        name: name.into(),
        arguments: args,
        origin: Default::default(),
    }
}

// covers P-APP, F-ACT-1
#[tokio::test]
async fn action_response_goes_to_mcp_line_and_speech() {
    let s = setup(json!({}));
    let open = call_of("open_app", "call_1", json!({"app_name": "Sleeper"}));
    let parsed = Parsed {
        text: "Opening Sleeper.".into(),
        calls: vec![open.clone()],
        ..Parsed::default()
    };
    let data = call(
        &s.pack,
        "session_1764210832.530743",
        "open_app",
        open.arguments.clone(),
    )
    .await
    .unwrap();
    let pid = data.data["pid"].as_u64().unwrap();
    let results = vec![ToolResult::ok(open.call_id.clone(), "open_app", data)];
    let out = apps::respond(&parsed, &results, "session_1764210832.530743");
    assert_eq!(out.speech, "Opening Sleeper.");
    assert_eq!(out.mcp_lines.len(), 1);
    let line = &out.mcp_lines[0];
    assert!(line.starts_with("__MCP__{"), "{line}");
    assert!(
        !line.contains('\n') && !line.contains(": "),
        "payload must be compact: {line}"
    );
    let payload = apps::respond::parse_mcp_line(line).unwrap();
    assert_eq!(payload["session_id"], "session_1764210832.530743");
    assert_eq!(payload["command"], "open_app");
    assert_eq!(payload["args"], json!({"app_name": "Sleeper"}));
    assert_eq!(payload["call_id"], "call_1");
    assert_eq!(payload["result"]["pid"].as_u64(), Some(pid));
    assert_eq!(s.launcher.close_all("session_1764210832.530743").await, 1);

    // A failed command: no line, and speech says so.
    let bad = call_of("open_app", "call_2", json!({"app_name": "Forbidden"}));
    let err = call(&s.pack, "x", "open_app", bad.arguments.clone())
        .await
        .unwrap_err();
    let parsed = Parsed {
        text: "Opening Forbidden.".into(),
        calls: vec![bad.clone()],
        ..Parsed::default()
    };
    let out = apps::respond(
        &parsed,
        &[ToolResult::err(bad.call_id, "open_app", err)],
        "x",
    );
    assert!(out.mcp_lines.is_empty());
    assert!(
        out.speech.starts_with(
            "Opening Forbidden. Sorry, open app: app \"Forbidden\" is not on the allow-list"
        ),
        "{}",
        out.speech
    );

    // F-ACT-2: text only.
    let parsed = Parsed {
        text: "Hello! How can I help?".into(),
        ..Parsed::default()
    };
    let out = apps::respond(&parsed, &[], "x");
    assert_eq!(
        out,
        apps::ClientOutput {
            mcp_lines: vec![],
            speech: "Hello! How can I help?".into()
        }
    );
}

// covers P-APP (the shipped example's options and entry start and stop a real process)
#[tokio::test]
async fn shipped_example_opens_and_closes_the_test_app() {
    let example = common::example("apps");
    let session = common::read_session(&example);
    let p = common::load(
        "apps",
        &example,
        common::options_of(&session["setup"]["packs"]["apps"]),
    );
    let mut pid = 0;
    for reply in session["replies"].as_array().unwrap() {
        let action: Value = serde_json::from_str(reply["content"].as_str().unwrap()).unwrap();
        let Some(command) = action["command"].as_str() else {
            continue;
        };
        let out = call(
            &p,
            action["session_id"].as_str().unwrap(),
            command,
            action["args"].clone(),
        )
        .await
        .unwrap();
        if command == "open_app" {
            pid = out.data["pid"].as_u64().unwrap();
            assert!(alive(pid));
        } else {
            assert_eq!(out.data["closed"][0]["pid"].as_u64(), Some(pid));
            assert!(!proc_dir(pid).exists());
        }
    }
    assert_ne!(pid, 0);
}

// covers V-1 (the shipped tools file is exactly what the pack registers)
#[test]
fn shipped_tools_file_matches_the_pack() {
    common::assert_shipped_tools_file_matches("apps");
}

// covers P-APP: what the pack opened ends when the run using it ends, in every session
#[tokio::test]
async fn the_packs_end_closes_every_app_it_opened() {
    let s = setup(json!({}));
    let mut pids = Vec::new();
    for session in ["s1", "s2"] {
        let out = call(&s.pack, session, "open_app", json!({"app_name": "Sleeper"}))
            .await
            .unwrap();
        pids.push(out.data["pid"].as_u64().unwrap());
    }
    assert!(pids.iter().all(|p| alive(*p)));
    s.pack
        .on_end
        .as_ref()
        .expect("the apps pack has an end")
        .end()
        .await;
    for pid in pids {
        assert!(!alive(pid), "app {pid} outlived the pack's end");
    }
    assert_eq!(s.launcher.close_everything().await, 0);
}

// covers P-APP
#[tokio::test(flavor = "current_thread")]
async fn the_desktop_entry_scan_does_not_block_the_runtime() {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicBool, Ordering};

    let s = setup(json!({}));
    // A `.desktop` FIFO: reading it waits until someone opens it for writing.
    let fifo = s.dir.path().join("applications/slow.desktop");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let runtime = tokio::runtime::Handle::current();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let writer = std::thread::spawn(move || {
        // Wait until the scan is stuck reading the FIFO (a non-blocking open for writing
        // succeeds only once a reader has it open).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let file = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
            {
                Ok(f) => break f,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("the scan never read the FIFO: {e}"),
            }
        };
        // Now a task on the runtime must be able to run while the scan waits.
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            flag.store(true, Ordering::SeqCst);
            let _ = tx.send(());
        });
        // A hang guard, not a speed claim: loose enough for any loaded machine.
        let in_time = rx.recv_timeout(Duration::from_secs(30)).is_ok();
        drop(file); // end of file: the scan goes on
        in_time
    });
    let opened = call(&s.pack, "s", "open_app", json!({"app_name": "Sleeper"}))
        .await
        .unwrap();
    assert!(
        writer.join().unwrap(),
        "a task on the runtime could not run during the scan"
    );
    assert!(ran.load(Ordering::SeqCst));
    assert!(opened.data["pid"].as_u64().is_some(), "{:?}", opened.data);
    assert_eq!(s.launcher.close_all("s").await, 1);
}
