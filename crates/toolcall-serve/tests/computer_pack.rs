//! An app written for Anthropic's computer use, declaring `computer_20250124`, in front of a
//! gateway that serves the computer-use pack (`--pack computer`): the pack's `computer_use`
//! runs the model's call against a real Xvfb display, its screenshot reaches the model as an
//! image, and the app's declared display size, other than the pack's screen, is warned about.
//!
//! The only test in its binary: it installs a global log subscriber before any thread runs
//! (see `logs.rs`). Without Xvfb it skips, unless `TOOLCALL_REQUIRE_XVFB=1`.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use toolcall_inspector::ToolSwitches;
use toolcall_packs::computer::xvfb::Xvfb;
use toolcall_packs::{PackConfig, load_pack};
use toolcall_run::ApproveAll;
use toolcall_serve::server_side::ServerSide;
use toolcall_serve::{AppState, Config};

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const SCREENSHOT_CALL: &str = "<tool_call>\n<function=computer_use>\n<parameter=action>\nscreenshot\n</parameter>\n</function>\n</tool_call>";
const ANSWER: &str = "The screen is empty.";

// Before: the server-side turn refused the app's `computer_20250124` tool with a 400
// ("tool type … cannot be called through toolcall").
#[test]
fn an_anthropic_computer_tool_is_run_by_the_computer_pack_on_a_real_display() {
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let xvfb = match Xvfb::start(1024, 768) {
        Ok(x) => x,
        Err(e) if std::env::var("TOOLCALL_REQUIRE_XVFB").as_deref() == Ok("1") => {
            panic!("TOOLCALL_REQUIRE_XVFB=1 but Xvfb did not start: {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let stand_in_state = StandIn::default();
        stand_in_state.reply("desk", SCREENSHOT_CALL);
        stand_in_state.reply("desk", ANSWER);
        let upstream = stand_in(stand_in_state.clone()).await;
        let options = json!({"display": xvfb.display(), "width": 1024, "height": 768,
            "screenshot_delay_ms": 0});
        let pack = load_pack(
            "computer",
            &PackConfig {
                base_dir: std::env::temp_dir(),
                options: options.as_object().unwrap().clone(),
            },
        )
        .unwrap();
        let side = ServerSide::new(
            pack.registry,
            Vec::new(),
            None,
            ToolSwitches::in_memory(),
            4,
            Arc::new(ApproveAll),
        );
        let config = Config {
            upstream,
            read_timeout_secs: 20,
            retries: 0,
            format: Some("qwen3_coder".into()),
            ..Config::default()
        };
        let state = AppState::new(config).unwrap().with_server_side(side);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            toolcall_serve::serve(listener, state, std::future::pending())
                .await
                .unwrap()
        });

        let body = json!({"model": "desk", "max_tokens": 300,
            "tools": [{"type": "computer_20250124", "name": "computer",
                "display_width_px": 1280, "display_height_px": 800, "display_number": 1}],
            "messages": [{"role": "user", "content": "What is on the screen?"}]});
        let r = reqwest::Client::new()
            .post(format!("{url}/v1/messages"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["content"][0]["text"], ANSWER, "{v}");
        assert_eq!(v["stop_reason"], "end_turn");

        let requests = stand_in_state.requests();
        assert_eq!(requests.len(), 2, "{requests:?}");
        let names: Vec<&str> = requests[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["computer_use"], "the pack's tool, not the app's");
        // The screenshot of the real display reaches the model as an image (the result
        // names it; the image part follows, for Chat servers that take images only there).
        let messages = requests[1]["messages"].as_array().unwrap();
        let at = messages
            .iter()
            .position(|m| m["role"] == "tool")
            .unwrap_or_else(|| panic!("{}", requests[1]));
        assert!(
            messages[at]["content"]
                .as_str()
                .unwrap()
                .contains("image/png")
        );
        let image = messages[at..]
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .find(|p| p["type"] == "image_url")
            .unwrap_or_else(|| panic!("no image after the result"));
        let url = image["image_url"]["url"].as_str().unwrap();
        assert!(
            url.starts_with("data:image/png;base64,iVBOR"),
            "{}",
            &url[..40.min(url.len())]
        );
    });
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let warned = logs
        .lines()
        .find(|l| l.contains("another display size"))
        .unwrap_or_else(|| panic!("no size warning in:\n{logs}"));
    assert!(
        warned.contains("1280x800") && warned.contains("1024x768"),
        "{warned}"
    );
}
