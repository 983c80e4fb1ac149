//! The inspector over real HTTP on loopback: pages, the event stream, switches that persist.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_core::{Registry, ToolCall, ToolSpec};
use toolcall_inspector::{BASE, Hub, Inspector, ToolSwitches};
use toolcall_run::AgentEvent;
use toolcall_run::Archive;
use toolcall_run::archive::Delivery;

fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.add_spec(ToolSpec::new(
        "move_player",
        "Moves a player along a link.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}}),
    ))
    .unwrap();
    r.add_spec(ToolSpec::new(
        "set_attribute",
        "Sets an <attribute>.",
        json!({"type": "object"}),
    ))
    .unwrap();
    Arc::new(r)
}

async fn serve(inspector: &Inspector) -> String {
    let app = axum::Router::new().nest(BASE, inspector.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}{BASE}")
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    let mut c = ToolCall::new(name, args, "openai_chat");
    c.call_id = id.into();
    c
}

#[tokio::test]
async fn live_page_and_stream_show_calls_with_secrets_redacted() {
    let hub = Hub::new();
    let inspector = Inspector::new(
        hub.clone(),
        Arc::new(ToolSwitches::in_memory()),
        registry(),
        None,
    );
    let base = serve(&inspector).await;
    let observe = hub.observer();
    observe(&AgentEvent::TurnStarted {
        session_id: Some("ses_x".into()),
        input: "go".into(),
    });
    observe(&AgentEvent::CallParsed {
        round: 1,
        call: call(
            "call_1",
            "move_player",
            json!({"to": "hall", "token": "s3cret"}),
        ),
    });

    let client = reqwest::Client::new();
    let page = client.get(&base).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("data-call-id=\"call_1\""));
    assert!(page.contains("move_player"));
    assert!(!page.contains("s3cret"));
    assert!(page.contains("inspector.js"));

    let js = client
        .get(format!("{base}/inspector.js"))
        .send()
        .await
        .unwrap();
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );

    // The stream first replays the current state, then pushes each change.
    let resp = client.get(format!("{base}/events")).send().await.unwrap();
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    let mut pushed = false;
    // A hang guard, never a speed claim.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !seen.contains("\\\"status\\\":\\\"ok\\\"") && !seen.contains("\"status\":\"ok\"") {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("the stream pushed the completed call")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if !pushed && seen.contains("event: call") {
            pushed = true;
            observe(&AgentEvent::CallCompleted {
                round: 1,
                call_id: "call_1".into(),
                name: "move_player".into(),
                result: json!({"status": "ok", "data": {"password": "pw", "at": "hall"}}),
                duration_ms: 4,
                job: false,
            });
        }
    }
    assert!(seen.contains("\"call_id\":\"call_1\""));
    assert!(!seen.contains("s3cret") && !seen.contains("\"pw\""));

    let calls: Value = client
        .get(format!("{base}/api/calls"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(calls[0]["status"], "ok");
    assert_eq!(calls[0]["duration_ms"], 4);
    assert_eq!(calls[0]["result"]["data"]["password"], "[REDACTED]");
}

#[tokio::test]
async fn switches_are_set_by_form_posts_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tool-switches.json");
    let tools = registry();
    let make = || {
        Inspector::new(
            Hub::new(),
            Arc::new(ToolSwitches::open(&path).unwrap()),
            tools.clone(),
            None,
        )
    };
    let inspector = make();
    let base = serve(&inspector).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    let page = client
        .get(format!("{base}/tools"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-tool=\"move_player\" data-enabled=\"true\""));
    assert!(page.contains("Sets an &lt;attribute&gt;."));

    let off = client
        .post(format!("{base}/tools/move_player"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=false")
        .send()
        .await
        .unwrap();
    assert_eq!(off.status(), 303);
    assert_eq!(off.headers()["location"], "/inspector/tools");
    let cross = client
        .post(format!("{base}/tools/set_attribute"))
        .header("origin", "http://elsewhere.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=false")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let unknown = client
        .post(format!("{base}/tools/nope"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=false")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let bad = client
        .post(format!("{base}/tools/move_player"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=maybe")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    // A new process on the same file keeps the choice, and the registry it hands a turn
    // does not offer the tool.
    let restarted = make();
    let offered: Vec<String> = restarted
        .switches()
        .apply(&tools)
        .enabled_specs()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(offered, ["set_attribute"]);
    let base = serve(&restarted).await;
    let listed: Value = client
        .get(format!("{base}/api/tools"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["tools"][0]["name"], "move_player");
    assert_eq!(listed["tools"][0]["enabled"], false);
    assert_eq!(listed["tools"][0]["switched"], true);
    assert_eq!(listed["tools"][1]["enabled"], true);
}

#[tokio::test]
async fn sessions_show_calls_results_and_the_world_as_a_tree() {
    let archive = Arc::new(Archive::in_memory().unwrap());
    let s = archive.create_session("Jack and the chest").unwrap();
    let c = call("call_mv", "move_player", json!({"player_id": "char_001"}));
    archive.record_call(&s, 1, &c).unwrap();
    archive
        .record_result(
            &s,
            &toolcall_core::ToolResult::ok("call_mv".into(), "move_player", json!("moved")),
            Duration::from_millis(3),
            Delivery::Inline,
        )
        .unwrap();
    let world = json!({
        "players": [{"id": "char_001", "name": "Jack", "location": "loc_cave", "attributes": {}}],
        "locations": [{"id": "loc_cave", "name": "Cave", "links": [], "attributes": {}}],
        "objects": [{"id": "obj_chest", "name": "Chest", "holder": "loc_cave",
                     "attributes": {"condition": "locked"}}]
    });
    archive.save_state(&s, "world", &world).unwrap();
    let inspector = Inspector::new(
        Hub::new(),
        Arc::new(ToolSwitches::in_memory()),
        registry(),
        Some(archive),
    );
    let base = serve(&inspector).await;
    let client = reqwest::Client::new();
    let list = client
        .get(format!("{base}/sessions"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(list.contains(&s));
    assert!(list.contains("Jack and the chest"));
    let one = client
        .get(format!("{base}/sessions/{s}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(one.contains("data-call-id=\"call_mv\""));
    assert!(one.contains("class=\"world-tree\""));
    assert!(one.contains("location Cave (loc_cave)"));
    assert!(one.contains("object Chest (obj_chest) [condition: locked]"));
    let missing = client
        .get(format!("{base}/sessions/ses_missing"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}
