//! The inspector in a real browser: Debian's headless Chromium, driven over the DevTools
//! protocol, watches a world-pack turn live, switches a tool off, and the next turn neither
//! offers it nor runs it. Screenshots are left in the test's target folder to look at.
//!
//! Needs `/usr/bin/chromium` (`apt-get install chromium`); skips without it unless
//! `TOOLCALL_REQUIRE_CHROMIUM=1`.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_core::Registry;
use toolcall_inspector::{BASE, Hub, Inspector, ToolSwitches};
use toolcall_packs::{PackConfig, load_pack};
use toolcall_run::{Agent, AgentConfig, Archive, Executor, Mode, ReplayClient};

const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the page may take to show what the server pushed.
const PAGE_WAIT: Duration = Duration::from_secs(30);

fn chromium() -> Result<PathBuf, String> {
    let path = std::env::var_os("TOOLCALL_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM));
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found (apt-get install chromium)",
            path.display()
        ))
    }
}

fn artefact(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

async fn launch(chromium: PathBuf, profile: &std::path::Path) -> Browser {
    // The flags this machine's closed network needs (no background connections).
    let config = BrowserConfig::builder()
        .chrome_executable(chromium)
        .no_sandbox()
        .user_data_dir(profile)
        .window_size(1200, 1400)
        .args([
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .launch_timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let (browser, mut handler) = Browser::launch(config).await.unwrap();
    tokio::spawn(async move { while handler.next().await.is_some() {} });
    browser
}

/// Waits until `selector` matches on the page; the page changes only by what the server
/// pushes (no reloads here).
async fn wait_for(page: &chromiumoxide::Page, selector: &str) {
    let deadline = tokio::time::Instant::now() + PAGE_WAIT;
    loop {
        if page.find_element(selector).await.is_ok() {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            let html = page.content().await.unwrap_or_default();
            panic!("{selector} never appeared; the page is:\n{html}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn native_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function",
           "function": {"name": name, "arguments": args.to_string()}})
}

struct World {
    registry: Registry,
    state: Arc<dyn toolcall_packs::PackState>,
}

fn world() -> World {
    let root = toolcall_testkit::workspace_root();
    let mut options = serde_json::Map::new();
    options.insert("world".into(), json!("examples/world/world.json"));
    let pack = load_pack(
        "world",
        &PackConfig {
            base_dir: root,
            options,
        },
    )
    .unwrap();
    World {
        registry: pack.registry,
        state: pack.state.unwrap(),
    }
}

async fn run_turn(
    registry: Registry,
    world: &World,
    archive: &Arc<Archive>,
    hub: &Arc<Hub>,
    replies: Vec<Value>,
    input: &str,
) -> (Arc<ReplayClient>, toolcall_run::TurnReport) {
    let client = Arc::new(ReplayClient::from_replies(replies));
    let executor = Arc::new(Executor::new(Arc::new(registry)));
    let mut agent = Agent::new(
        client.clone(),
        executor,
        AgentConfig {
            mode: Mode::Native,
            ..AgentConfig::default()
        },
    );
    agent.archive_new(archive.clone(), input).unwrap();
    let state = world.state.clone();
    agent.add_state_saver("world", Arc::new(move || state.snapshot()));
    agent.add_observer(hub.observer());
    let report = agent.run_turn(input).await.unwrap();
    (client, report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_watches_calls_live_and_switches_a_tool_off() {
    let Some(chromium) = toolcall_testkit::require("chromium", chromium()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let world = world();
    let tools = Arc::new(world.registry.clone());
    let switches = Arc::new(ToolSwitches::open(dir.path().join("switches.json")).unwrap());
    let archive = Arc::new(Archive::open(&dir.path().join("sessions.sqlite")).unwrap());
    let hub = Hub::new();
    let inspector = Inspector::new(
        hub.clone(),
        switches.clone(),
        tools.clone(),
        Some(archive.clone()),
    );
    let app = axum::Router::new().nest(BASE, inspector.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}{BASE}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let browser = launch(chromium, &dir.path().join("profile")).await;
    let page = browser.new_page(base.as_str()).await.unwrap();
    wait_for(&page, "#calls").await;
    assert!(page.find_element("article.call").await.is_err());

    // A turn in which the model calls two server-side tools.
    let (_, report) = run_turn(
        switches.apply(&tools),
        &world,
        &archive,
        &hub,
        vec![
            json!({"role": "assistant", "content": null, "tool_calls": [
                native_call("call_move", "move_player",
                            json!({"playerId": "char_001", "targetLocationId": "loc_beach"})),
                native_call("call_open", "set_attribute",
                            json!({"entityType": "object", "entityId": "obj_chest",
                                   "attributeName": "condition", "value": "open"})),
            ]}),
            json!({"role": "assistant", "content": "Jack opens the chest and walks out to the beach."}),
        ],
        "Open the chest, then go to the beach",
    )
    .await;
    let session = report.session_id.clone().unwrap();
    assert!(report.rounds[0].results.iter().all(|r| r.is_ok()));

    wait_for(
        &page,
        "article[data-call-id=\"call_move\"][data-status=\"ok\"]",
    )
    .await;
    wait_for(
        &page,
        "article[data-call-id=\"call_open\"][data-status=\"ok\"]",
    )
    .await;
    let shown = page
        .find_element("article[data-call-id=\"call_move\"] .result")
        .await
        .unwrap()
        .inner_text()
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(shown.contains("\"status\": \"ok\""), "{shown}");
    wait_for(&page, "#turn").await;
    let live_png = artefact("live.png");
    page.save_screenshot(
        ScreenshotParams::builder().full_page(true).build(),
        &live_png,
    )
    .await
    .unwrap();
    eprintln!("screenshot: {}", live_png.display());

    // Switch move_player off on the tools page, as a person would.
    page.goto(format!("{base}/tools")).await.unwrap();
    wait_for(
        &page,
        "section[data-tool=\"move_player\"][data-enabled=\"true\"]",
    )
    .await;
    page.find_element("button[data-toggle=\"move_player\"]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(
        &page,
        "section[data-tool=\"move_player\"][data-enabled=\"false\"]",
    )
    .await;
    page.save_screenshot(
        ScreenshotParams::builder().full_page(true).build(),
        artefact("tools.png"),
    )
    .await
    .unwrap();
    assert_eq!(switches.get("move_player"), Some(false));
    let file = std::fs::read_to_string(dir.path().join("switches.json")).unwrap();
    assert!(file.contains("\"move_player\": false"), "{file}");

    // The next turn does not offer the tool, and a forced call to it is refused.
    page.goto(base.as_str()).await.unwrap();
    wait_for(&page, "#calls").await;
    let (client, report) = run_turn(
        switches.apply(&tools),
        &world,
        &archive,
        &hub,
        vec![
            json!({"role": "assistant", "content": null, "tool_calls": [
                native_call("call_forced", "move_player",
                            json!({"playerId": "char_001", "targetLocationId": "loc_cave"})),
            ]}),
            json!({"role": "assistant", "content": "Jack cannot move right now."}),
        ],
        "Go back to the cave",
    )
    .await;
    let offered: Vec<String> = client.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(!offered.contains(&"move_player".to_owned()), "{offered:?}");
    assert!(offered.contains(&"set_attribute".to_owned()));
    let refused = &report.rounds[0].results[0];
    assert_eq!(
        refused.outcome.as_ref().unwrap_err().code,
        toolcall_core::ErrorCode::ToolDisabled
    );
    wait_for(
        &page,
        "article[data-call-id=\"call_forced\"][data-status=\"failed\"]",
    )
    .await;
    let text = page
        .find_element("article[data-call-id=\"call_forced\"]")
        .await
        .unwrap()
        .inner_text()
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(text.contains("tool_disabled"), "{text}");

    // The first session's page: its calls and the world as a tree, Jack on the beach.
    page.goto(format!("{base}/sessions/{session}"))
        .await
        .unwrap();
    wait_for(&page, "pre.world-tree").await;
    let tree = page
        .find_element("pre.world-tree")
        .await
        .unwrap()
        .inner_text()
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(tree.contains("location Beach (loc_beach)"), "{tree}");
    let beach = &tree[tree.find("location Beach").unwrap()..];
    let beach = &beach[..beach.find("\nlocation").unwrap_or(beach.len())];
    assert!(beach.contains("player Jack (char_001)"), "{tree}");
    assert!(
        tree.contains("object Chest (obj_chest) [condition: open]"),
        "{tree}"
    );
    page.save_screenshot(
        ScreenshotParams::builder().full_page(true).build(),
        artefact("session.png"),
    )
    .await
    .unwrap();
}
