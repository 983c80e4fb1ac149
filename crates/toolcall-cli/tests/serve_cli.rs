//! `toolcall serve --pack world`: the binary gives each server-side session its own world,
//! archived with it (sessions read back with `toolcall sessions show`).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};

use common::{Gateway, bin, repo_root, scripted_server, show_session};
use serde_json::{Value, json};

fn start(upstream: &str, dir: &std::path::Path) -> Gateway {
    let world = repo_root().join("examples/world/world.json");
    let mut serve = bin();
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(["--pack", "world", "--pack-opt"])
        .arg(format!("world.world={}", world.display()))
        .arg("--archive")
        .arg(dir.join("sessions.sqlite"))
        .arg("--tool-switches")
        .arg(dir.join("switches.json"));
    Gateway::start(&mut serve)
}

/// POSTs a Chat Completions request; the `x-toolcall-session` header and the body.
fn chat(addr: &str, text: &str) -> (String, Value) {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": text}]}).to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{reply}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("x-toolcall-session: "))
        .unwrap()
        .trim()
        .to_owned();
    (session, serde_json::from_str(body).unwrap())
}

fn reply(content: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content}}]})
}

fn call(name: &str, arguments: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// (Jack's location, the chest's condition) as `session` archived its world.
fn world_of(session: &str, archive: &std::path::Path) -> (String, String) {
    let rec = show_session(session, archive);
    let world = &rec["pack_states"]["world"];
    let chest = world["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "obj_chest")
        .unwrap()["attributes"]["condition"]
        .clone();
    (
        world["players"][0]["location"].as_str().unwrap().to_owned(),
        chest.as_str().unwrap().to_owned(),
    )
}

#[test]
fn each_session_of_the_gateway_has_its_own_world() {
    let (upstream, _seen) = scripted_server(vec![
        reply(&call(
            "move_player",
            json!({"playerId": "char_001", "targetLocationId": "loc_beach"}),
        )),
        reply("Jack is on the beach."),
        reply(&call(
            "set_attribute",
            json!({"entityType": "object", "entityId": "obj_chest",
                   "attributeName": "condition", "value": "open"}),
        )),
        reply("The chest is open."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let gateway = start(&upstream, dir.path());
    let (a, body) = chat(&gateway.addr, "Go to the beach");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Jack is on the beach."
    );
    let (b, body) = chat(&gateway.addr, "Open the chest");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "The chest is open."
    );
    assert_ne!(a, b);
    drop(gateway);
    let archive = dir.path().join("sessions.sqlite");
    // B started from the pack's world, not from the world A left.
    assert_eq!(
        world_of(&a, &archive),
        ("loc_beach".into(), "locked".into())
    );
    assert_eq!(world_of(&b, &archive), ("loc_cave".into(), "open".into()));
}
