//! The recorded session `examples/computer/session.json` and the tools file beside it: the
//! session has the replay format, and its calls, run against Xvfb with the dialog that
//! `demo.sh` opens, really press the dialog's Yes button.
#![cfg(feature = "computer")]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolcall_core::ToolContext;
use toolcall_packs::computer::xvfb::Fonts;
use toolcall_packs::{PackConfig, load_pack};

const SESSION: &str = include_str!("../../../examples/computer/session.json");
const TOOLS: &str = include_str!("../../../examples/computer/tools.json");

/// The calls of one reply: native `tool_calls`, or a computer-use app ```json {"tools":[...]}``` block.
fn calls_of(reply: &Value) -> Vec<Value> {
    if let Some(calls) = reply["tool_calls"].as_array() {
        return calls
            .iter()
            .map(|c| {
                assert_eq!(c["function"]["name"], "computer_use");
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap()
            })
            .collect();
    }
    let content = reply["content"].as_str().unwrap_or_default();
    let Some(start) = content.find("```json") else {
        return Vec::new();
    };
    let body = &content[start + 7..];
    let end = body.find("```").unwrap();
    let envelope: Value = serde_json::from_str(body[..end].trim()).unwrap();
    envelope["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["name"], "computer_use");
            t["arguments"].clone()
        })
        .collect()
}

// covers P-CU, F-JSON-1
#[test]
fn session_has_the_replay_format() {
    let s: Value = serde_json::from_str(SESSION).unwrap();
    for key in ["description", "prompt"] {
        assert!(s[key].as_str().is_some_and(|v| !v.is_empty()), "{key}");
    }
    assert!(["native", "text", "auto"].contains(&s["mode"].as_str().unwrap()));
    assert!(s["setup"]["packs"]["computer"].is_object());
    let replies = s["replies"].as_array().unwrap();
    assert!(replies.iter().all(|r| r["role"] == "assistant"));
    let last = replies.last().unwrap();
    assert!(last["content"].as_str().is_some() && last.get("tool_calls").is_none());
    // One reply calls through the computer-use app's text format, the others natively.
    let text_mode = replies
        .iter()
        .filter(|r| r.get("tool_calls").is_none() && !calls_of(r).is_empty())
        .count();
    assert_eq!(text_mode, 1);
    // Call ids are unique.
    let mut ids: Vec<&str> = replies
        .iter()
        .filter_map(|r| r["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n);
}

// covers P-CU, V-1, O-1
#[test]
fn tools_file_matches_the_pack() {
    let pack = load_pack("computer", &PackConfig::default()).unwrap();
    let spec = pack.registry.spec("computer_use").unwrap();
    let expected = json!([{
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        }
    }]);
    let file: Value = serde_json::from_str(TOOLS).unwrap();
    assert_eq!(
        file,
        expected,
        "examples/computer/tools.json is stale; expected:\n{}",
        serde_json::to_string_pretty(&expected).unwrap()
    );
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The dialog `demo.sh` opens, with the same fixed arguments (no model text). `-fn fixed`
/// pins its font: `fixed` is built into every X server and the font packages alias it to a
/// font of the same size, so the buttons sit at the recorded coordinates whatever fonts are
/// installed (the toolkit's default font is picked from the installed ones and is wider). The C
/// locale keeps the toolkit's font-set choice independent of the machine's locale.
fn open_dialog(display: &str) -> std::process::Child {
    Command::new("xmessage")
        .args([
            "-fn",
            "fixed",
            "-center",
            "-buttons",
            "Yes:0,No:1",
            "-print",
        ])
        .arg("toolcall computer-use demo: please click Yes")
        .env("DISPLAY", display)
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Replays the session's calls on a display offering `fonts`, with the dialog open when
/// `xmessage` is installed, and checks the recorded click pressed Yes.
async fn calls_answer_the_dialog(fonts: Fonts) {
    let Some(xvfb) = common::start_xvfb_with_fonts(1024, 768, fonts) else {
        return;
    };
    let session: Value = serde_json::from_str(SESSION).unwrap();
    let mut options = session["setup"]["packs"]["computer"].clone();
    options["display"] = json!(xvfb.display());
    options["screenshot_delay_ms"] = json!(0);
    let tool = common::computer_tool(&options);
    let ctx = ToolContext::default();

    let mut dialog = if which("xmessage") {
        let child = open_dialog(xvfb.display());
        // Wait until the dialog is drawn: a spot inside it, beside the buttons, turns from
        // the empty screen's black to the dialog's white.
        let started = Instant::now();
        loop {
            let shot = tool
                .call(&ctx, json!({"action": "screenshot"}))
                .await
                .unwrap()
                .data;
            let bytes = base64_decode(shot["data"].as_str().unwrap());
            let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
            if img.get_pixel(600, 400).0 == [255, 255, 255] {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60), // a hang guard
                "dialog never appeared"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(child)
    } else if std::env::var("TOOLCALL_REQUIRE_XVFB").as_deref() == Ok("1") {
        panic!("TOOLCALL_REQUIRE_XVFB=1 but xmessage is not installed (apt-get install x11-utils)");
    } else {
        eprintln!("xmessage not installed: replaying the calls without the dialog");
        None
    };

    let mut ran = 0;
    for reply in session["replies"].as_array().unwrap() {
        for args in calls_of(reply) {
            let out = tool.call(&ctx, args.clone()).await;
            let data = match out {
                Ok(o) => o.data,
                Err(e) => panic!("{args} failed: {e}"),
            };
            if args["action"] != "screenshot" {
                assert_eq!(data["screenshot"]["type"], "image", "{args}");
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 5);

    if let Some(child) = dialog.as_mut() {
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(60), // a hang guard
                "the click did not close the dialog"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut said = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(said.trim(), "Yes");
    }
}

// covers P-CU, X-1
#[tokio::test]
async fn session_calls_answer_the_dialog() {
    calls_answer_the_dialog(Fonts::Installed).await;
}

// covers P-CU, X-1: the same on a server offering only its built-in fonts, as on a machine
// without any X font package, so the recorded clicks hold with and without fonts.
#[tokio::test]
async fn session_calls_answer_the_dialog_with_only_built_in_fonts() {
    calls_answer_the_dialog(Fonts::BuiltInOnly).await;
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}
