//! The real Codex CLI (npm `@openai/codex`, `codex exec`) through `toolcall serve` in front of
//! a stand-in model server whose model writes Qwen3-Coder XML, all inside a network namespace
//! that has only loopback. Codex is configured exactly as the README's "Codex CLI on your own
//! model" recipe says (checked below): its `exec_command` call runs and creates a file, and its
//! `apply_patch`, declared as a `custom` tool with a Lark grammar, comes back to Codex as a
//! `custom_tool_call` holding the raw patch (Codex streams), which Codex applies. A patch
//! that breaks Codex's own grammar goes through the invalid-call policy first: the model is
//! asked again and Codex never sees it.
//!
//! Codex is installed by `.ci/run` under `target/codex-npm` (never committed). Without it, or
//! without a network namespace, the test prints why and returns, unless
//! `TOOLCALL_REQUIRE_CODEX=1` (set by `.ci/run`), when it fails.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{bin, repo_root};
use serde_json::{Value, json};

/// Set in the copy of this test that runs inside the network namespace.
const INSIDE: &str = "TOOLCALL_CODEX_IN_NETNS";

/// The Codex the README's recipe was checked with (`.ci/run` installs this version).
const CODEX_VERSION: &str = "0.171.0";

/// `~/.codex/config.toml` as the README's recipe writes it (`BASE_URL` replaced by the
/// gateway's address).
const CONFIG_TOML: &str = r#"model = "qwen3-coder"
model_provider = "toolcall"
model_catalog_json = "CODEX_HOME/toolcall-models.json"

[model_providers.toolcall]
name = "toolcall"
base_url = "BASE_URL/v1"
wire_api = "responses"
env_key = "TOOLCALL_KEY"
"#;

/// `~/.codex/toolcall-models.json` as the README's recipe writes it: the model's metadata,
/// which makes Codex declare `exec_command` and the freeform (Lark grammar) `apply_patch`.
const MODEL_CATALOG: &str = r#"{"models": [{
  "slug": "qwen3-coder", "display_name": "qwen3-coder", "priority": 1,
  "visibility": "list", "supported_in_api": true,
  "shell_type": "unified_exec", "apply_patch_tool_type": "freeform",
  "context_window": 131072, "truncation_policy": {"mode": "tokens", "limit": 10000},
  "input_modalities": ["text"], "supported_reasoning_levels": [],
  "support_verbosity": false, "experimental_supported_tools": [],
  "base_instructions": "You are a coding agent. Run shell commands with exec_command and edit files with apply_patch."
}]}
"#;

const SHELL_COMMAND: &str = "printf 'made by exec_command' > shell.txt";
const PATCH: &str =
    "*** Begin Patch\n*** Add File: patched.txt\n+made by apply_patch\n*** End Patch";

/// A patch that Codex's own Lark grammar for `apply_patch` refuses (no such hunk).
const BAD_PATCH: &str = "*** Begin Patch\n*** Remove Everything\n*** End Patch";

/// What the gateway tells the model when a custom tool's input breaks its grammar.
const GRAMMAR_COMPLAINT: &str = "does not match its grammar";

fn patch_call(patch: &str) -> String {
    format!(
        "<tool_call>\n<function=apply_patch>\n<parameter=input>\n{patch}\n</parameter>\n</function>\n</tool_call>"
    )
}

/// The stand-in model's next turn, in Qwen3-Coder's XML, by how many tool results it has
/// seen: run the shell command, then write a patch that breaks Codex's grammar and, told
/// so by the gateway's retry, a good one; then say it is done.
fn model_turn(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let told = messages.last().is_some_and(|m| {
        m["role"] == "user" && m["content"].to_string().contains(GRAMMAR_COMPLAINT)
    });
    match results {
        0 => format!(
            "I will create the file.\n<tool_call>\n<function=exec_command>\n<parameter=cmd>\n{SHELL_COMMAND}\n</parameter>\n</function>\n</tool_call>"
        ),
        1 if told => patch_call(PATCH),
        1 => patch_call(BAD_PATCH),
        _ => "Both files are there.".to_owned(),
    }
}

/// A Chat Completions stand-in on loopback: answers each POST with [`model_turn`] (whole, or
/// as one SSE chunk when asked to stream), 404 to anything else; records every body.
fn stand_in() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if request_line.is_empty() {
                    request_line = line.clone();
                }
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            if !request_line.starts_with("POST /v1/chat/completions") {
                let _ = write!(
                    stream,
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                continue;
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let text = model_turn(&request);
            let streamed = request["stream"] == true;
            seen2.lock().unwrap().push(request);
            let (kind, answer) = if streamed {
                let chunk = |delta: Value, finish: Value| {
                    let c = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                        "model": "qwen3-coder",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                    format!("data: {c}\n\n")
                };
                let body = chunk(json!({"role": "assistant", "content": text}), Value::Null)
                    + &chunk(json!({}), json!("stop"))
                    + "data: [DONE]\n\n";
                ("text/event-stream", body)
            } else {
                let body = json!({"id": "c", "object": "chat.completion", "created": 1,
                    "model": "qwen3-coder", "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text}}]});
                ("application/json", body.to_string())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, seen)
}

/// The Codex that `.ci/run` installs.
fn codex_bin() -> Result<PathBuf, String> {
    let path = repo_root().join("target/codex-npm/node_modules/.bin/codex");
    let out = Command::new(&path).arg("--version").output().map_err(|e| {
        format!(
            "{}: {e}; install it with `npm install --prefix target/codex-npm @openai/codex@{CODEX_VERSION}`",
            path.display()
        )
    })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if version != format!("codex-cli {CODEX_VERSION}") {
        return Err(format!(
            "{} says {version:?}; the recipe was checked with {CODEX_VERSION}",
            path.display()
        ));
    }
    Ok(path)
}

/// Brings up `lo` in this (new) network namespace.
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a plain socket and two interface ioctls on a zeroed `ifreq` that names `lo`.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo") {
            *d = *s as libc::c_char;
        }
        let mut result = Ok(());
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) < 0 {
            result = Err(std::io::Error::last_os_error());
        } else {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) < 0 {
                result = Err(std::io::Error::last_os_error());
            }
        }
        libc::close(fd);
        result
    }
}

/// Runs this test again inside a new network namespace (`unshare -n`, as root; `unshare -rn`
/// maps an unprivileged user to root in a user namespace); its exit status and output.
fn rerun_in_netns() -> Result<std::process::Output, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut last = String::new();
    for flags in ["-n", "-rn"] {
        let probe = Command::new("unshare").args([flags, "true"]).output();
        match probe {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                last = format!(
                    "`unshare {flags} true`: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                continue;
            }
            Err(e) => {
                last = format!("unshare: {e}");
                continue;
            }
        }
        return Command::new("unshare")
            .arg(flags)
            .arg(&exe)
            .args([
                "--exact",
                "codex_exec_runs_its_shell_tool_and_applies_a_freeform_patch",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INSIDE, "1")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string());
    }
    Err(format!("no network namespace: {last}"))
}

#[test]
fn codex_exec_runs_its_shell_tool_and_applies_a_freeform_patch() {
    if std::env::var(INSIDE).as_deref() == Ok("1") {
        inside_the_netns();
        return;
    }
    let Some(_) = toolcall_testkit::require("codex", codex_bin()) else {
        return;
    };
    let Some(out) = toolcall_testkit::require("codex", rerun_in_netns()) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inside the network namespace: {}\n{stdout}\n{stderr}",
        out.status
    );
    // The copy inside really ran this test (and not zero tests).
    assert!(stdout.contains("1 passed"), "{stdout}\n{stderr}");
}

/// A child process, killed when it outlives `limit` (a hung Codex must not hang the suite).
fn wait_output(mut child: std::process::Child, limit: Duration) -> (bool, String, String) {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn inside_the_netns() {
    loopback_up().unwrap();
    // Nothing but loopback can be reached from here.
    // (`/proc/self/net/dev` is this namespace's; `/sys/class/net` would still show the host's.)
    let interfaces: Vec<String> = std::fs::read_to_string("/proc/self/net/dev")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_owned())
        .collect();
    assert_eq!(interfaces, ["lo"], "not an isolated network namespace");

    let codex = codex_bin().unwrap();
    let (upstream, seen) = stand_in();
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::create_dir_all(&work).unwrap();

    // The README's recipe: `toolcall serve --upstream … --format qwen3_coder`.
    let log = dir.path().join("serve.log");
    let mut serve = bin()
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream", &upstream])
        .args(["--format", "qwen3_coder"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();

    let config = CONFIG_TOML
        .replace("BASE_URL", &addr)
        .replace("CODEX_HOME", &codex_home.display().to_string());
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    std::fs::write(codex_home.join("toolcall-models.json"), MODEL_CATALOG).unwrap();

    let child = Command::new(&codex)
        .args(["exec", "--json", "--skip-git-repo-check"])
        .args(["--sandbox", "workspace-write"])
        .arg("create shell.txt with a shell command, then patched.txt with apply_patch")
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CODEX_HOME", &codex_home)
        .env("TOOLCALL_KEY", "local")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ok, stdout, stderr) = wait_output(child, Duration::from_secs(180));
    let _ = serve.kill();
    let _ = serve.wait();
    let serve_log = std::fs::read_to_string(&log).unwrap_or_default();
    let context = format!("codex stdout:\n{stdout}\ncodex stderr:\n{stderr}\nserve:\n{serve_log}");
    assert!(ok, "codex exec failed\n{context}");

    // exec_command ran and made its file; apply_patch was applied by Codex.
    assert_eq!(
        std::fs::read_to_string(work.join("shell.txt"))
            .ok()
            .as_deref(),
        Some("made by exec_command"),
        "{context}"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("patched.txt"))
            .ok()
            .as_deref(),
        Some("made by apply_patch\n"),
        "{context}"
    );

    // What the model server was offered: Codex's shell tool, namespace and custom apply_patch
    // as functions, the last with one string `input`; never Codex's hosted web_search.
    let seen = seen.lock().unwrap().clone();
    // The shell call, the bad patch, its retry (the good patch), the closing words.
    assert_eq!(seen.len(), 4, "{context}");
    let offered: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"exec_command"), "{offered:?}");
    // Codex's multi_agent_v1 namespace, under qualified names.
    assert!(
        offered.contains(&"multi_agent_v1__spawn_agent"),
        "{offered:?}"
    );
    assert!(!offered.contains(&"web_search"), "{offered:?}");
    let apply_patch = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "apply_patch")
        .unwrap_or_else(|| panic!("no apply_patch in {offered:?}"));
    assert_eq!(
        apply_patch["function"]["parameters"]["required"],
        json!(["input"])
    );
    // Codex's own Lark grammar for apply_patch, which the gateway put in its description,
    // is one the constraint can hold (on a `constrain` route it goes upstream).
    let about = apply_patch["function"]["parameters"]["properties"]["input"]["description"]
        .as_str()
        .unwrap();
    let (_, grammar) = about
        .split_once("Lark grammar:\n")
        .unwrap_or_else(|| panic!("no Lark grammar in {about:?}"));
    assert!(grammar.contains("*** Begin Patch"), "{grammar}");
    let read = toolcall_constrain::InputGrammar {
        syntax: toolcall_constrain::InputSyntax::Lark,
        definition: grammar.to_owned(),
    }
    .read();
    assert!(read.is_ok(), "{:?}\n{grammar}", read.err());
    for key in ["prompt_cache_key", "client_metadata", "store", "include"] {
        assert!(seen[0].get(key).is_none(), "{key} reached the model server");
    }
    assert!(serve_log.contains("web_search"), "{serve_log}");

    // Codex got a custom_tool_call holding the raw patch: its session log says so, and it
    // sent the call back paired with its output by call_id.
    let rollout = rollout_items(&codex_home);
    let call = rollout
        .iter()
        .find(|i| i["type"] == "custom_tool_call")
        .unwrap_or_else(|| panic!("no custom_tool_call in Codex's session\n{context}"));
    assert_eq!(call["name"], "apply_patch");
    assert_eq!(call["input"], PATCH);
    // The patch breaking Codex's own Lark grammar went through the invalid-call policy
    // (`retry`, the default): the model was told, and Codex never saw it.
    assert!(
        seen[2]["messages"].to_string().contains(GRAMMAR_COMPLAINT),
        "no retry after the bad patch: {}",
        seen[2]
    );
    let custom_calls = rollout
        .iter()
        .filter(|i| i["type"] == "custom_tool_call")
        .count();
    assert_eq!(custom_calls, 1, "{context}");
    assert!(!stdout.contains("Remove Everything"), "{context}");
    for item in &rollout {
        assert!(
            !item.to_string().contains("Remove Everything"),
            "the bad patch reached Codex: {item}"
        );
    }
    let call_id = call["call_id"].as_str().unwrap();
    assert!(
        rollout
            .iter()
            .any(|i| i["type"] == "custom_tool_call_output" && i["call_id"] == call_id),
        "no output for {call_id}"
    );
    let shell_call = rollout
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap();
    assert_eq!(shell_call["name"], "exec_command");

    // The README's recipe is this test's configuration.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let recipe_config = CONFIG_TOML
        .replace("BASE_URL", "http://127.0.0.1:8090")
        .replace("CODEX_HOME", "$HOME/.codex");
    for (what, text) in [
        ("config.toml", recipe_config.as_str()),
        ("catalog", MODEL_CATALOG),
    ] {
        assert!(
            readme.contains(text),
            "the README's Codex recipe lacks this test's {what}:\n{text}"
        );
    }
    assert!(readme.contains(&format!("@openai/codex@{CODEX_VERSION}")));
    assert!(readme.contains("codex exec --skip-git-repo-check --sandbox workspace-write"));
}

/// The response items of Codex's session logs (`CODEX_HOME/sessions/**/rollout-*.jsonl`).
fn rollout_items(codex_home: &Path) -> Vec<Value> {
    fn walk(dir: &Path, out: &mut Vec<Value>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for line in text.lines() {
                    let Ok(v) = serde_json::from_str::<Value>(line) else {
                        continue;
                    };
                    if v["type"] == "response_item" {
                        out.push(v["payload"].clone());
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&codex_home.join("sessions"), &mut out);
    out
}
