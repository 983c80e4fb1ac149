//! Gateway replicas sharing one PostgreSQL archive, in front of one stand-in upstream: a
//! session started on one replica continues on the other with its pack state, concurrent
//! sessions spread over both each keep their own world, and an id no replica archived is a
//! `404` on every one. Each replica has its own archive connection pool, its own packs and
//! its own in-process session locks: all they share is the database.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{Value, json};
use toolcall_inspector::ToolSwitches;
use toolcall_run::{ApproveAll, Archive};
use toolcall_serve::server_side::{SESSION_HEADER, ServerSide};
use toolcall_serve::{AppState, Config};
use toolcall_testkit::postgres::Postgres;
use toolcall_testkit::world::{move_to, open_chest};

/// A replica over the archive at `archive_url`, forwarding to `upstream`; its base URL.
async fn replica(archive_url: &str, upstream: &str) -> String {
    let archive = Arc::new(Archive::connect(archive_url).unwrap());
    let (registry, pack) = world_pack();
    let switches = ToolSwitches::shared(archive.clone()).unwrap();
    let side = ServerSide::new(
        registry,
        vec![pack],
        Some(archive),
        switches,
        5,
        Arc::new(ApproveAll),
    );
    let config = Config {
        upstream: upstream.to_owned(),
        read_timeout_secs: 10,
        retries: 0,
        ..Config::default()
    };
    let state = AppState::new(config).unwrap().with_server_side(side);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        toolcall_serve::serve(listener, state, std::future::pending())
            .await
            .unwrap()
    });
    format!("http://{addr}")
}

/// The world as `session` is archived: (Jack's location, the chest's condition).
fn world_of(archive: &Archive, session: &str) -> (String, String) {
    let rec = archive.show_session(session).unwrap();
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

/// Sends a chat request (continuing `session` if given); the status, the session header
/// and the body.
async fn chat(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut request = http.post(format!("{url}/v1/chat/completions")).json(&body);
    if let Some(id) = session {
        request = request.header(SESSION_HEADER, id);
    }
    let resp = request.send().await.unwrap();
    let status = resp.status().as_u16();
    let header = resp
        .headers()
        .get(SESSION_HEADER)
        .map(|v| v.to_str().unwrap().to_owned());
    (status, header, resp.json().await.unwrap())
}

fn postgres() -> Option<Postgres> {
    toolcall_testkit::require("postgres", Postgres::start())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_started_on_one_replica_continues_on_the_other_with_its_world() {
    let Some(server) = postgres() else { return };
    let url = server.create_database("continue").unwrap();
    let upstream_state = StandIn::default();
    for (model, text) in [
        ("world", move_to("loc_beach").as_str()),
        ("world", "Jack is on the beach."),
        // From the cave there is no way to the cliff: only from the beach.
        ("world", move_to("loc_cliff").as_str()),
        ("world", "Jack climbs the cliff."),
    ] {
        upstream_state.reply(model, text);
    }
    let upstream = stand_in(upstream_state.clone()).await;
    let a = replica(&url, &upstream).await;
    let b = replica(&url, &upstream).await;
    let http = reqwest::Client::new();

    let first = json!({"model": "world", "messages": [
        {"role": "user", "content": "Go to the beach"}]});
    let (status, session, body) = chat(&http, &a, None, first).await;
    assert_eq!(status, 200, "{body}");
    let session = session.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Jack is on the beach."
    );

    let next = json!({"model": "world", "messages": [
        {"role": "user", "content": "Go to the beach"},
        {"role": "assistant", "content": "Jack is on the beach."},
        {"role": "user", "content": "Now the cliff"}]});
    let (status, continued, body) = chat(&http, &b, Some(&session), next).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(continued.as_deref(), Some(session.as_str()));
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Jack climbs the cliff."
    );
    // B ran the move from A's beach: it restored the world A archived.
    let last = upstream_state.requests().pop().unwrap();
    let told = last["messages"].to_string().replace(['\\', '"'], "");
    assert!(
        told.contains("moved from location Beach to location Cliff"),
        "{told}"
    );
    let archive = Archive::connect(&url).unwrap();
    assert_eq!(
        world_of(&archive, &session),
        ("loc_cliff".into(), "locked".into())
    );
    // One session, its whole conversation in order, whichever replica wrote it.
    assert_eq!(archive.list_sessions().unwrap().len(), 1);
    let rec = archive.show_session(&session).unwrap();
    assert_eq!(rec.calls.len(), 2);
    assert!(rec.calls.iter().all(|c| c.results.len() == 1));

    // An id no replica archived is a 404 on both, never a new session.
    for replica in [&a, &b] {
        let (status, _, body) = chat(
            &http,
            replica,
            Some("ses_nowhere"),
            json!({"model": "world", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], "session_not_found", "{body}");
    }
    assert_eq!(archive.list_sessions().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_sessions_alternating_between_replicas_each_keep_their_own_world() {
    let Some(server) = postgres() else { return };
    let url = server.create_database("twenty").unwrap();
    let upstream_state = StandIn::default();
    const SESSIONS: usize = 20;
    for i in 0..SESSIONS {
        let model = format!("world-{i}");
        // Even sessions go to the beach then open the chest; odd ones the other way round.
        let (one, two) = if i % 2 == 0 {
            (move_to("loc_beach"), open_chest())
        } else {
            (open_chest(), move_to("loc_beach"))
        };
        upstream_state.reply(&model, &one);
        upstream_state.reply(&model, &format!("first of {i}"));
        if i % 4 < 2 {
            upstream_state.reply(&model, &two);
        }
        upstream_state.reply(&model, &format!("second of {i}"));
    }
    let upstream = stand_in(upstream_state.clone()).await;
    let replicas = [
        replica(&url, &upstream).await,
        replica(&url, &upstream).await,
    ];
    let http = reqwest::Client::new();

    let runs = (0..SESSIONS).map(|i| {
        let (http, replicas) = (http.clone(), replicas.clone());
        async move {
            let model = format!("world-{i}");
            let first = json!({"model": model, "messages": [
                {"role": "user", "content": "first"}]});
            let (status, session, body) = chat(&http, &replicas[i % 2], None, first).await;
            assert_eq!(status, 200, "{body}");
            let session = session.unwrap();
            let said = format!("first of {i}");
            assert_eq!(body["choices"][0]["message"]["content"], said);
            let next = json!({"model": model, "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": said},
                {"role": "user", "content": "second"}]});
            let other = &replicas[(i + 1) % 2];
            let (status, continued, body) = chat(&http, other, Some(&session), next).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(continued.as_deref(), Some(session.as_str()));
            assert_eq!(
                body["choices"][0]["message"]["content"],
                format!("second of {i}")
            );
            (i, session)
        }
    });
    let sessions = futures::future::join_all(runs).await;

    let archive = Archive::connect(&url).unwrap();
    assert_eq!(archive.list_sessions().unwrap().len(), SESSIONS);
    for (i, session) in sessions {
        // Sessions that made both changes have both; the others only their first.
        let want = match (i % 2 == 0, i % 4 < 2) {
            (_, true) => ("loc_beach", "open"),
            (true, false) => ("loc_beach", "locked"),
            (false, false) => ("loc_cave", "open"),
        };
        assert_eq!(
            world_of(&archive, &session),
            (want.0.to_owned(), want.1.to_owned()),
            "session {i}"
        );
        let rec = archive.show_session(&session).unwrap();
        for c in &rec.calls {
            assert_eq!(c.results.len(), 1, "session {i}: {c:?}");
        }
    }
}

/// Switches are read from the shared archive at the start of every turn: when that read
/// fails, the client gets a `503` naming the archive, never a `502` blaming the upstream,
/// and the upstream is not asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_archive_that_cannot_be_read_is_a_503_not_an_upstream_error() {
    let Some(server) = postgres() else { return };
    let url = server.create_database("unreadable").unwrap();
    let upstream_state = StandIn::default();
    let upstream = stand_in(upstream_state.clone()).await;
    let a = replica(&url, &upstream).await;
    let http = reqwest::Client::new();
    let ask = json!({"model": "world", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, body) = chat(&http, &a, None, ask.clone()).await;
    assert_eq!(status, 200, "{body}");
    let asked = upstream_state.requests().len();

    server
        .psql("unreadable", "DROP TABLE tool_switches")
        .unwrap();
    let (status, _, body) = chat(&http, &a, None, ask).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "archive_unavailable", "{body}");
    assert_eq!(body["error"]["type"], "server_error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool switches"),
        "{body}"
    );
    assert_eq!(upstream_state.requests().len(), asked);
}
