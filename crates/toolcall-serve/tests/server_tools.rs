//! Server-side tools in the gateway: a world-pack turn whose calls run in the gateway, the
//! client's own tools offered beside them, sessions by header, progress events, the
//! inspector's switches, and the official `openai` Python client on top.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use futures::StreamExt;
use serde_json::{Value, json};
use toolcall_inspector::ToolSwitches;
use toolcall_run::{ApproveAll, Archive};
use toolcall_serve::server_side::{PROGRESS_EVENT, PROGRESS_HEADER, SESSION_HEADER, ServerSide};
use toolcall_serve::{AppState, Config, InvalidCallPolicy, ModelRoute};
use toolcall_testkit::world::tool_call as call;

const MOVE_AND_OPEN: &str = "I'll do both.\n<tool_call>{\"name\": \"move_player\", \"arguments\": \
    {\"playerId\": \"char_001\", \"targetLocationId\": \"loc_beach\"}}</tool_call>\n<tool_call>\
    {\"name\": \"set_attribute\", \"arguments\": {\"entityType\": \"object\", \"entityId\": \
    \"obj_chest\", \"attributeName\": \"condition\", \"value\": \"open\"}}</tool_call>";
const NARRATIVE: &str = "Jack pries the chest open and walks out onto the windy beach.";

struct Gateway {
    url: String,
    stand_in: StandIn,
    archive: Arc<Archive>,
    _dir: tempfile::TempDir,
}

async fn gateway(replies: &[(&str, &str)]) -> Gateway {
    gateway_with(replies, |_| {}).await
}

/// [`gateway`] with its configuration changed by `edit` (`listen` only names the address the
/// operator asked for: the test listener is always on loopback).
async fn gateway_with(replies: &[(&str, &str)], edit: impl FnOnce(&mut Config)) -> Gateway {
    let stand_in_state = StandIn::default();
    for (model, text) in replies {
        stand_in_state.reply(model, text);
    }
    let upstream = stand_in(stand_in_state.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let (registry, pack) = world_pack();
    let archive = Arc::new(Archive::open(&dir.path().join("sessions.sqlite")).unwrap());
    let side = ServerSide::new(
        registry,
        vec![pack],
        Some(archive.clone()),
        ToolSwitches::open(dir.path().join("switches.json")).unwrap(),
        5,
        Arc::new(ApproveAll),
    );
    let mut config = Config {
        upstream,
        read_timeout_secs: 5,
        retries: 0,
        ..Config::default()
    };
    edit(&mut config);
    let state = AppState::new(config).unwrap().with_server_side(side);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    Gateway {
        url: format!("http://{addr}"),
        stand_in: stand_in_state,
        archive,
        _dir: dir,
    }
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tools_run_in_the_gateway_and_the_client_gets_the_narrative() {
    let g = gateway(&[("world", MOVE_AND_OPEN), ("world", NARRATIVE)]).await;
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/v1/chat/completions", g.url))
        .json(
            &json!({"model": "world", "tools": weather_tool(), "messages": [
            {"role": "user", "content": "Open the chest, then go to the beach"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], NARRATIVE);
    assert!(body["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    let requests = g.stand_in.requests();
    assert_eq!(requests.len(), 2);
    let tools = offered(&requests[0]);
    assert!(tools.contains(&"move_player".to_owned()), "{tools:?}");
    assert!(tools.contains(&"get_weather".to_owned()), "{tools:?}");
    // The second request carried both results, tagged with the calls' ids.
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("moved from location"), "{second}");
    assert!(second.contains("condition changed"), "{second}");

    let rec = g.archive.show_session(&session).unwrap();
    assert_eq!(rec.calls.len(), 2);
    let tree = serde_json::to_string(&rec.pack_states["world"]).unwrap();
    assert!(tree.contains("\"location\":\"loc_beach\""), "{tree}");

    let live: Value = http
        .get(format!("{}/inspector/api/calls", g.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let statuses: Vec<(&str, &str)> = live
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [("move_player", "ok"), ("set_attribute", "ok")],
        "{live}"
    );
    assert_eq!(live[0]["surface"], "hermes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switched_off_tool_is_not_offered_and_a_forced_call_is_refused() {
    let forced = "<tool_call>{\"name\": \"move_player\", \"arguments\": {\"playerId\": \
                  \"char_001\", \"targetLocationId\": \"loc_beach\"}}</tool_call>";
    let g = gateway(&[("world", forced), ("world", "Jack stays put.")]).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let off = http
        .post(format!("{}/inspector/tools/move_player", g.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=false")
        .send()
        .await
        .unwrap();
    assert_eq!(off.status(), 303);
    let body: Value = http
        .post(format!("{}/v1/chat/completions", g.url))
        .json(&json!({"model": "world", "messages": [{"role": "user", "content": "Go"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Jack stays put.");
    let requests = g.stand_in.requests();
    assert!(!offered(&requests[0]).contains(&"move_player".to_owned()));
    assert!(offered(&requests[0]).contains(&"set_attribute".to_owned()));
    // The call is not a tool of this request: the invalid-call policy (`retry`) asks the
    // model again, telling it so, and nothing ran.
    assert!(
        requests[1]["messages"]
            .to_string()
            .contains(r#"no tool named \"move_player\""#),
        "{}",
        requests[1]["messages"]
    );
    assert!(
        g.archive
            .list_sessions()
            .unwrap()
            .iter()
            .all(|s| s.calls == 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_carries_progress_events_only_when_asked() {
    let g = gateway(&[
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
    ])
    .await;
    let http = reqwest::Client::new();
    for progress in [true, false] {
        let mut req = http
            .post(format!("{}/v1/chat/completions", g.url))
            .json(&json!({"model": "world", "stream": true, "messages": [
                {"role": "user", "content": "Open the chest, then go to the beach"}]}));
        if progress {
            req = req.header(PROGRESS_HEADER, "1");
        }
        let resp = req.send().await.unwrap();
        assert!(resp.headers().contains_key(SESSION_HEADER));
        let mut body = String::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            body.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        let named = format!("event: {PROGRESS_EVENT}");
        assert_eq!(body.contains(&named), progress, "{body}");
        if progress {
            assert!(body.contains("\"event\":\"call_completed\""), "{body}");
            assert!(body.find(&named) < body.find("chat.completion.chunk"));
        }
        assert!(body.contains(NARRATIVE.split(' ').next().unwrap()));
        assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_client_sees_only_the_final_narrative() {
    let Some(python) = toolcall_testkit::require("python", toolcall_testkit::python()) else {
        return;
    };
    let g = gateway(&[
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
    ])
    .await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/world_client.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(&g.url)
        .arg(NARRATIVE)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok world turn"), "{stdout}");
    // Two turns, two rounds each, all run in the gateway.
    assert_eq!(g.stand_in.requests().len(), 4);
    let sessions = g.archive.list_sessions().unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(sessions.iter().all(|s| s.calls == 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_header_continues_a_conversation_after_a_client_call() {
    // One text-format reply calls a server tool and a client tool; the client answers its
    // call in a second request carrying the session header, and the model sees both answers.
    let both = "<tool_call>{\"name\": \"move_player\", \"arguments\": {\"playerId\": \
                \"char_001\", \"targetLocationId\": \"loc_beach\"}}</tool_call>\n<tool_call>\
                {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Beach\"}}</tool_call>";
    let g = gateway(&[("world", both), ("world", NARRATIVE)]).await;
    let http = reqwest::Client::new();
    let user = json!({"role": "user", "content": "Go to the beach and check the weather"});
    let resp = http
        .post(format!("{}/v1/chat/completions", g.url))
        .json(&json!({"model": "world", "tools": weather_tool(), "messages": [user]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    let message = body["choices"][0]["message"].clone();
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls", "{body}");
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "only the client's call comes back: {body}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let client_call_id = calls[0]["id"].as_str().unwrap().to_owned();

    let resp = http
        .post(format!("{}/v1/chat/completions", g.url))
        .header(SESSION_HEADER, &session)
        .json(
            &json!({"model": "world", "tools": weather_tool(), "messages": [
            user, message,
            {"role": "tool", "tool_call_id": client_call_id, "content": "{\"sky\":\"windy\"}"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[SESSION_HEADER].to_str().unwrap(), session);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], NARRATIVE);

    // The continued request carries the reply as the gateway hands any client a text-format
    // reply: its calls as native `tool_calls` (the upstream's chat template writes them in
    // the model's markup), each answered once under its id, the server's archived result
    // first, then the client's.
    let requests = g.stand_in.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 4, "{second:?}");
    let ids: Vec<&str> = second[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{second:?}");
    assert_eq!(ids[1], client_call_id);
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["tool_call_id"], ids[0]);
    assert!(
        second[2]["content"]
            .as_str()
            .unwrap()
            .contains("moved from location")
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], client_call_id);
    assert!(second[3]["content"].as_str().unwrap().contains("windy"));
    // One conversation, one archived session.
    assert_eq!(g.archive.list_sessions().unwrap().len(), 1);

    // A header that is no session id is refused, not guessed at.
    let resp = http
        .post(format!("{}/v1/chat/completions", g.url))
        .header(SESSION_HEADER, "x".repeat(500))
        .json(&json!({"model": "world", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_is_open_on_loopback_and_needs_a_client_key_elsewhere() {
    let http = reqwest::Client::new();
    let status = |g: &Gateway, key: Option<&str>| {
        let mut req = http.get(format!("{}/inspector/api/calls", g.url));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };
    let local = gateway(&[]).await;
    assert_eq!(status(&local, None).await, 200);

    // Listening on every interface with no client key: not served at all.
    let public = gateway_with(&[], |c| c.listen = "0.0.0.0:8090".into()).await;
    assert_eq!(status(&public, None).await, 403);
    assert_eq!(status(&public, Some("anything")).await, 403);

    // With client keys: only with one of them, the same check as the API's.
    let keyed = gateway_with(&[], |c| {
        c.listen = "[::]:8090".into();
        c.api_keys = vec!["sk-inspect".into()];
    })
    .await;
    assert_eq!(status(&keyed, None).await, 401);
    assert_eq!(status(&keyed, Some("sk-wrong")).await, 401);
    assert_eq!(status(&keyed, Some("sk-inspect")).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_on_a_loopback_listener_is_refused() {
    // A page whose name was re-pointed at 127.0.0.1 (DNS rebinding) names its own host.
    let g = gateway(&[("world", "Nothing to do.")]).await;
    let port = g.url.rsplit(':').next().unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let evil = format!("rebind.evil.example:{port}");
    let switch = http
        .post(format!("{}/inspector/tools/move_player", g.url))
        .header("host", &evil)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("enabled=false")
        .send()
        .await
        .unwrap();
    assert_eq!(switch.status(), 403);
    let sessions = http
        .get(format!("{}/inspector/api/calls", g.url))
        .header("host", &evil)
        .send()
        .await
        .unwrap();
    assert_eq!(sessions.status(), 403);
    let chat = http
        .post(format!("{}/v1/chat/completions", g.url))
        .header("host", &evil)
        .json(&json!({"model": "world", "messages": [{"role": "user", "content": "Go"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 403);
    assert!(g.stand_in.requests().is_empty(), "no turn ran");
    // The loopback names and the address listened on are answered.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let ok = http
            .get(format!("{}/inspector/api/calls", g.url))
            .header("host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200, "{host}");
    }
    // The switch was never flipped: move_player is still offered.
    let body: Value = http
        .post(format!("{}/v1/chat/completions", g.url))
        .json(&json!({"model": "world", "messages": [{"role": "user", "content": "Go"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Nothing to do.");
    assert!(offered(&g.stand_in.requests()[0]).contains(&"move_player".to_owned()));
}

/// The world as `session` archived it: (Jack's location, the chest's condition).
fn world_of(g: &Gateway, session: &str) -> (String, String) {
    let rec = g.archive.show_session(session).unwrap();
    let world = &rec.pack_states["world"];
    let jack = world["players"][0]["location"].as_str().unwrap().to_owned();
    let chest = world["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "obj_chest")
        .unwrap()["attributes"]["condition"]
        .as_str()
        .unwrap()
        .to_owned();
    (jack, chest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_owns_its_world_and_a_continued_session_gets_its_own_back() {
    let to = |place: &str| {
        call(
            "move_player",
            json!({"playerId": "char_001", "targetLocationId": place}),
        )
    };
    let open = call(
        "set_attribute",
        json!({"entityType": "object", "entityId": "obj_chest",
               "attributeName": "condition", "value": "open"}),
    );
    let g = gateway(&[
        ("world-a", &to("loc_beach")),
        ("world-a", "Jack is on the beach."),
        // From the cave there is no way to the cliff: only the beach leads there.
        ("world-a", &to("loc_cliff")),
        ("world-a", "Jack climbs the cliff."),
        ("world-b", &open),
        ("world-b", "The chest is open."),
    ])
    .await;
    let http = reqwest::Client::new();
    let start = |model: &str, text: &str| {
        http.post(format!("{}/v1/chat/completions", g.url))
            .json(&json!({"model": model, "messages": [{"role": "user", "content": text}]}))
            .send()
    };
    let (a, b) = tokio::join!(
        start("world-a", "Go to the beach"),
        start("world-b", "Open the chest")
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    let a_session = a.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let b_session = b.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    assert_ne!(a_session, b_session);
    // Each sees only its own change, whatever order the calls ran in.
    assert_eq!(
        world_of(&g, &a_session),
        ("loc_beach".into(), "locked".into())
    );
    assert_eq!(world_of(&g, &b_session), ("loc_cave".into(), "open".into()));

    // A continues from its own beach, not from the pack's cave nor from B's world.
    let resp = http
        .post(format!("{}/v1/chat/completions", g.url))
        .header(SESSION_HEADER, &a_session)
        .json(&json!({"model": "world-a", "messages": [
            {"role": "user", "content": "Go to the beach"},
            {"role": "assistant", "content": "Jack is on the beach."},
            {"role": "user", "content": "Now the cliff"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Jack climbs the cliff."
    );
    let last = g
        .stand_in
        .requests()
        .into_iter()
        .rfind(|r| r["model"] == "world-a")
        .unwrap();
    let results = last["messages"].to_string().replace(['\\', '"'], "");
    assert!(
        results.contains("moved from location Beach to location Cliff"),
        "{results}"
    );
    assert_eq!(
        world_of(&g, &a_session),
        ("loc_cliff".into(), "locked".into())
    );
    assert_eq!(world_of(&g, &b_session), ("loc_cave".into(), "open".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_is_a_404_whole_and_streamed() {
    let g = gateway(&[]).await;
    let http = reqwest::Client::new();
    for stream in [false, true] {
        let resp = http
            .post(format!("{}/v1/chat/completions", g.url))
            .header(SESSION_HEADER, "no-such-session")
            .json(&json!({"model": "world", "stream": stream,
                          "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "stream {stream}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "session_not_found", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no-such-session")
        );
    }
    assert!(g.stand_in.requests().is_empty());
    assert!(g.archive.list_sessions().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_request_runs_the_server_tools_whole_and_streamed() {
    let g = gateway(&[("world", MOVE_AND_OPEN), ("world", NARRATIVE)]).await;
    let http = reqwest::Client::new();
    let ask = |stream: bool| {
        http.post(format!("{}/v1/responses", g.url))
            .json(&json!({"model": "world", "stream": stream,
                          "input": "Open the chest, then go to the beach"}))
            .send()
    };
    let resp = ask(false).await.unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "response", "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{body}");
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["content"][0]["text"], NARRATIVE);
    // The model was offered the pack's tools, and both calls ran here.
    let requests = g.stand_in.requests();
    assert!(offered(&requests[0]).contains(&"move_player".to_owned()));
    assert_eq!(g.archive.show_session(&session).unwrap().calls.len(), 2);
    assert_eq!(world_of(&g, &session), ("loc_beach".into(), "open".into()));

    // Streamed: the same answer as Responses events, the session named up front.
    let resp = ask(true).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key(SESSION_HEADER));
    let events = sse_events(resp).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"response.created"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"response.completed"), "{kinds:?}");
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, NARRATIVE);
    let sequence: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(
        sequence.windows(2).all(|w| w[1] == w[0] + 1),
        "{sequence:?}"
    );
}

/// A Qwen3-Coder call of the world pack (values as the family writes them).
fn qwen3_coder_call(name: &str, parameters: &[(&str, &str)]) -> String {
    let mut out = format!("<tool_call>\n<function={name}>\n");
    for (k, v) in parameters {
        out.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
    }
    out.push_str("</function>\n</tool_call>");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_route_format_and_the_retry_policy_apply_to_server_tools() {
    // The first reply forgets a required argument; the retry's call is whole.
    let incomplete = qwen3_coder_call("move_player", &[("playerId", "char_001")]);
    let whole = qwen3_coder_call(
        "move_player",
        &[("playerId", "char_001"), ("targetLocationId", "loc_beach")],
    );
    // Hermes JSON markup is no call in the route's format: it stays text.
    let hermes = "<tool_call>{\"name\": \"move_player\", \"arguments\": {\"playerId\": \
                  \"char_001\", \"targetLocationId\": \"loc_cliff\"}}</tool_call>";
    let g = gateway_with(
        &[
            ("coder-1", &incomplete),
            ("coder-1", &whole),
            ("coder-1", hermes),
        ],
        |c| {
            c.invalid_calls = InvalidCallPolicy::Retry;
            c.models = vec![ModelRoute {
                pattern: "coder-*".into(),
                upstream: None,
                format: Some("qwen3_coder".into()),
                upstream_api_key_env: None,
                emulate_tools: None,
                upstream_api: None,
                reasoning_calls: None,
                constrain: None,
                hosted_tools: None,
            }];
        },
    )
    .await;
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", g.url))
        .json(&json!({"model": "coder-1", "messages": [{"role": "user", "content": "Beach!"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    // The stand-in's record: the first request, the retry telling what was wrong, then the
    // request carrying the call's result.
    let requests = g.stand_in.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let retry = requests[1]["messages"].to_string();
    assert!(retry.contains("not valid"), "{retry}");
    assert!(retry.contains("targetLocationId"), "{retry}");
    let results = requests[2]["messages"].to_string();
    assert!(results.contains("moved from location"), "{results}");
    // One call ran, the whole one; the Hermes markup came back as the final text.
    let rec = g.archive.show_session(&session).unwrap();
    assert_eq!(rec.calls.len(), 1);
    assert_eq!(world_of(&g, &session).0, "loc_beach");
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.contains("loc_cliff"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_requests_reuse_the_routes_pooled_connection() {
    let g = gateway(&[("world", MOVE_AND_OPEN), ("world", NARRATIVE)]).await;
    let http = reqwest::Client::new();
    for _ in 0..50 {
        let resp = http
            .post(format!("{}/v1/chat/completions", g.url))
            .json(&json!({"model": "world", "messages": [{"role": "user", "content": "Go"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    // 51 upstream requests (the first turn has two rounds), one after another: the route's
    // pool keeps one connection open for all of them (two allow for the pool's race with a
    // connection the server is closing). A client per request would open 51.
    assert_eq!(g.stand_in.requests().len(), 51);
    let opened = g
        .stand_in
        .connections
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=2).contains(&opened), "{opened} connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_request_runs_the_server_tools_and_errors_keep_its_shape() {
    let g = gateway(&[("world", MOVE_AND_OPEN), ("world", NARRATIVE)]).await;
    let http = reqwest::Client::new();
    let ask = |session: Option<&str>| {
        let mut req = http
            .post(format!("{}/v1/messages", g.url))
            .json(&json!({"model": "world", "max_tokens": 256, "messages": [
                {"role": "user", "content": "Open the chest, then go to the beach"}]}));
        if let Some(s) = session {
            req = req.header(SESSION_HEADER, s);
        }
        req.send()
    };
    let resp = ask(None).await.unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "message", "{body}");
    assert_eq!(body["stop_reason"], "end_turn", "{body}");
    assert_eq!(body["content"][0]["type"], "text", "{body}");
    assert_eq!(body["content"][0]["text"], NARRATIVE, "{body}");
    assert!(offered(&g.stand_in.requests()[0]).contains(&"move_player".to_owned()));
    assert_eq!(world_of(&g, &session), ("loc_beach".into(), "open".into()));

    // An unknown session: a 404 in Anthropic's error shape.
    let resp = ask(Some("no-such-session")).await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-session"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_answers_with_a_trailing_slash_too() {
    let g = gateway(&[]).await;
    // reqwest follows the redirect to the page itself.
    let page = reqwest::get(format!("{}/inspector/", g.url)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.url().path() == "/inspector", "{}", page.url());
    assert!(page.text().await.unwrap().contains("<html"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_continuing_one_session_at_once_keep_both_changes() {
    let mark = |name: &str| {
        call(
            "set_attribute",
            json!({"entityType": "object", "entityId": "obj_chest",
                   "attributeName": name, "value": "yes"}),
        )
    };
    let g = gateway(&[
        ("world-x", &mark("marked_x")),
        ("world-x", "Marked x."),
        ("world-y", &mark("marked_y")),
        ("world-y", "Marked y."),
    ])
    .await;
    let http = reqwest::Client::new();
    let start = http
        .post(format!("{}/v1/chat/completions", g.url))
        .json(&json!({"model": "world", "messages": [{"role": "user", "content": "Hello"}]}))
        .send()
        .await
        .unwrap();
    let session = start.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let go = |model: &str| {
        http.post(format!("{}/v1/chat/completions", g.url))
            .header(SESSION_HEADER, &session)
            .json(&json!({"model": model, "messages": [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "echo: world"},
                {"role": "user", "content": format!("Mark the chest ({model})")}]}))
            .send()
    };
    let (x, y) = tokio::join!(go("world-x"), go("world-y"));
    assert_eq!(
        (x.unwrap().status().as_u16(), y.unwrap().status().as_u16()),
        (200, 200)
    );
    // One after the other: the second turn started from the state the first archived.
    let rec = g.archive.show_session(&session).unwrap();
    let chest = rec.pack_states["world"]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "obj_chest")
        .unwrap()["attributes"]
        .clone();
    assert_eq!(chest["marked_x"], "yes", "{chest}");
    assert_eq!(chest["marked_y"], "yes", "{chest}");
    assert_eq!(rec.calls.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_messages_turn_returns_the_clients_call_as_tool_use() {
    let weather = call("get_weather", json!({"city": "Paris"}));
    let g = gateway(&[("world", &weather)]).await;
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/messages", g.url))
        .json(&json!({"model": "world", "max_tokens": 256, "stream": true,
            "tools": [{"name": "get_weather", "description": "Weather",
                       "input_schema": {"type": "object",
                                        "properties": {"city": {"type": "string"}}}}],
            "messages": [{"role": "user", "content": "Weather in Paris?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key(SESSION_HEADER));
    let events = sse_events(resp).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"message_start"), "{events:?}");
    assert_eq!(kinds.last(), Some(&"message_stop"), "{events:?}");
    let block = events
        .iter()
        .find(|e| e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(block["content_block"]["name"], "get_weather");
    let input: String = events
        .iter()
        .filter(|e| e["delta"]["type"] == "input_json_delta")
        .map(|e| e["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"city": "Paris"})
    );
    let stop = events
        .iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(stop["delta"]["stop_reason"], "tool_use", "{events:?}");
    // The model was offered the server's tools and the client's.
    let offered = offered(&g.stand_in.requests()[0]);
    assert!(offered.contains(&"get_weather".to_owned()), "{offered:?}");
    assert!(offered.contains(&"move_player".to_owned()), "{offered:?}");
}

// A Gemini client's turn on the world pack: the pack's tools are offered beside the
// client's own function declarations and run in the gateway, the reply carries the
// narrative, whole and streamed, and each session's world is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_request_runs_the_server_tools_whole_and_streamed() {
    let g = gateway(&[
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
        ("world", MOVE_AND_OPEN),
        ("world", NARRATIVE),
    ])
    .await;
    let http = reqwest::Client::new();
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "Open the chest, then go to the beach"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]
    });
    let resp = http
        .post(format!("{}/v1beta/models/world:generateContent", g.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
    let session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    let reply: Value = resp.json().await.unwrap();
    let candidate = &reply["candidates"][0];
    assert_eq!(candidate["content"]["role"], "model", "{reply}");
    assert_eq!(
        candidate["content"]["parts"][0]["text"], NARRATIVE,
        "{reply}"
    );
    assert_eq!(candidate["finishReason"], "STOP", "{reply}");
    let requests = g.stand_in.requests();
    let tools = offered(&requests[0]);
    assert!(tools.contains(&"move_player".to_owned()), "{tools:?}");
    assert!(tools.contains(&"get_weather".to_owned()), "{tools:?}");
    // The pack's results went back to the model, and the session's world changed.
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("moved from location"), "{second}");
    assert_eq!(world_of(&g, &session), ("loc_beach".into(), "open".into()));

    // Streamed: the same turn, in a new session of its own.
    let resp = http
        .post(format!(
            "{}/v1beta/models/world:streamGenerateContent?alt=sse",
            g.url
        ))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let streamed_session = resp.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
    assert_ne!(streamed_session, session);
    let chunks = sse_events(resp).await;
    let text: String = chunks
        .iter()
        .flat_map(|c| c["candidates"][0]["content"]["parts"].as_array().cloned())
        .flatten()
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, NARRATIVE, "{chunks:?}");
    assert!(
        chunks
            .iter()
            .any(|c| c["candidates"][0]["finishReason"] == "STOP"),
        "{chunks:?}"
    );
    assert_eq!(
        world_of(&g, &streamed_session),
        ("loc_beach".into(), "open".into())
    );
}

/// A request to `front` (`responses` or `messages`) for the world pack's `model`, holding
/// `turns` (user, assistant, user, …), continuing `session` when given.
fn world_request(
    http: &reqwest::Client,
    url: &str,
    front: &str,
    model: &str,
    turns: &[&str],
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": t}))
        .collect();
    let body = match front {
        "responses" => json!({"model": model, "input": messages}),
        _ => json!({"model": model, "max_tokens": 256, "messages": messages}),
    };
    let mut req = http.post(format!("{url}/v1/{front}")).json(&body);
    if let Some(s) = session {
        req = req.header(SESSION_HEADER, s);
    }
    req
}

/// The text of a whole Responses or Messages reply.
fn reply_text(front: &str, body: &Value) -> String {
    let text = match front {
        "responses" => &body["output"][0]["content"][0]["text"],
        _ => &body["content"][0]["text"],
    };
    text.as_str()
        .unwrap_or_else(|| panic!("{front}: {body}"))
        .to_owned()
}

// Issue 19: server-side turns through the Responses and Messages front ends, two sessions at
// once on the world pack: each sees only its own change, and a continued session runs on its
// own world as archived, not on the pack's initial world nor on the other session's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_responses_and_messages_sessions_each_keep_and_continue_their_own_world() {
    for front in ["responses", "messages"] {
        let g = gateway(&[
            ("world-a", &toolcall_testkit::world::move_to("loc_beach")),
            ("world-a", "Jack is on the beach."),
            // From the cave there is no way to the cliff: only the beach leads there.
            ("world-a", &toolcall_testkit::world::move_to("loc_cliff")),
            ("world-a", "Jack climbs the cliff."),
            ("world-b", &toolcall_testkit::world::open_chest()),
            ("world-b", "The chest is open."),
            ("world-b", &toolcall_testkit::world::move_to("loc_beach")),
            ("world-b", "Jack carries the treasure to the beach."),
        ])
        .await;
        let http = reqwest::Client::new();
        let (a, b) = tokio::join!(
            world_request(&http, &g.url, front, "world-a", &["Go to the beach"], None).send(),
            world_request(&http, &g.url, front, "world-b", &["Open the chest"], None).send(),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            (a.status().as_u16(), b.status().as_u16()),
            (200, 200),
            "{front}"
        );
        let a_session = a.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
        let b_session = b.headers()[SESSION_HEADER].to_str().unwrap().to_owned();
        assert_ne!(a_session, b_session, "{front}");
        let (a, b): (Value, Value) = (a.json().await.unwrap(), b.json().await.unwrap());
        assert_eq!(reply_text(front, &a), "Jack is on the beach.");
        assert_eq!(reply_text(front, &b), "The chest is open.");
        assert_eq!(
            world_of(&g, &a_session),
            ("loc_beach".into(), "locked".into()),
            "{front}"
        );
        assert_eq!(
            world_of(&g, &b_session),
            ("loc_cave".into(), "open".into()),
            "{front}"
        );

        // Both continue at once, each from its own world: A can reach the cliff only from
        // its beach, and B still finds its chest open after walking to the beach.
        let a_turns = ["Go to the beach", "Jack is on the beach.", "Now the cliff"];
        let b_turns = ["Open the chest", "The chest is open.", "Now the beach"];
        let (a, b) = tokio::join!(
            world_request(&http, &g.url, front, "world-a", &a_turns, Some(&a_session)).send(),
            world_request(&http, &g.url, front, "world-b", &b_turns, Some(&b_session)).send(),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            (a.status().as_u16(), b.status().as_u16()),
            (200, 200),
            "{front}"
        );
        assert_eq!(a.headers()[SESSION_HEADER].to_str().unwrap(), a_session);
        let (a, b): (Value, Value) = (a.json().await.unwrap(), b.json().await.unwrap());
        assert_eq!(reply_text(front, &a), "Jack climbs the cliff.");
        assert_eq!(
            reply_text(front, &b),
            "Jack carries the treasure to the beach."
        );
        let results = |model: &str| {
            g.stand_in
                .requests()
                .into_iter()
                .filter(|r| r["model"] == model)
                .map(|r| r["messages"].to_string().replace(['\\', '"'], ""))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let a_seen = results("world-a");
        assert!(
            a_seen.contains("moved from location Beach to location Cliff"),
            "{front}: {a_seen}"
        );
        let b_seen = results("world-b");
        assert!(
            b_seen.contains("moved from location Cave to location Beach"),
            "{front}: {b_seen}"
        );
        assert_eq!(
            world_of(&g, &a_session),
            ("loc_cliff".into(), "locked".into()),
            "{front}"
        );
        assert_eq!(
            world_of(&g, &b_session),
            ("loc_beach".into(), "open".into()),
            "{front}"
        );
        assert_eq!(g.archive.list_sessions().unwrap().len(), 2, "{front}");
    }
}
