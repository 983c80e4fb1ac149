//! Two real `toolcall serve` replicas on one test PostgreSQL, in front of one stand-in
//! upstream: sessions continue across them with their own worlds, a tool switch flipped on
//! one replica's inspector is honoured by the other's next request, the inspector shows
//! the other replica's calls, and a replica killed with `kill -9` while its call runs
//! leaves that call answered once, as "outcome unknown", by the other replica, never run
//! again, and every call paired with exactly one result.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Gateway, bin, json_of, repo_root};
use serde_json::{Value, json};
use toolcall_testkit::postgres::Postgres;
use toolcall_testkit::world::{move_to, open_chest, tool_call as call};

/// A stand-in upstream that answers each model from its own script (in order; the last
/// text once the script is spent) and records every request body.
#[derive(Clone, Default)]
struct Upstream {
    scripts: Arc<Mutex<HashMap<String, Vec<String>>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Upstream {
    fn script(&self, model: &str, replies: &[&str]) {
        self.scripts.lock().unwrap().insert(
            model.to_owned(),
            replies.iter().map(|r| (*r).to_owned()).collect(),
        );
    }

    /// The requests made for `model`, in order.
    fn requests(&self, model: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r["model"] == model)
            .cloned()
            .collect()
    }

    fn answer(&self, body: &Value) -> Value {
        self.seen.lock().unwrap().push(body.clone());
        let model = body["model"].as_str().unwrap_or_default();
        let content = {
            let mut scripts = self.scripts.lock().unwrap();
            match scripts.get_mut(model) {
                Some(s) if s.len() > 1 => s.remove(0),
                Some(s) => s.first().cloned().unwrap_or_default(),
                None => format!("no script for {model}"),
            }
        };
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": model,
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content}}]})
    }

    /// Serves on a loopback port; its base URL.
    fn start(&self) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let me = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let me = me.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    while let Some((_, body)) = read_request(&mut reader) {
                        let Ok(body) = serde_json::from_slice::<Value>(&body) else {
                            return;
                        };
                        let answer = me.answer(&body).to_string();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\n\r\n",
                            answer.len()
                        );
                        if stream
                            .write_all(head.as_bytes())
                            .and_then(|()| stream.write_all(answer.as_bytes()))
                            .is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        url
    }
}

/// One HTTP/1.1 request or response head and body (content-length framed); `None` at EOF.
fn read_request(reader: &mut impl BufRead) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// The value of header `name` in a response head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// Sends one request (`connection: close`); the status, the head and the body.
fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    s.write_all(request.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&reply[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, reply[split + 4..].to_vec())
}

/// A Chat Completions turn on `addr` continuing `session` if given: the status, the
/// session header and the body.
fn chat(addr: &str, session: Option<&str>, body: &Value) -> (u16, Option<String>, Value) {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(s) = session {
        headers.push(("x-toolcall-session", s));
    }
    let (status, head, body) = send(
        addr,
        "POST",
        "/v1/chat/completions",
        &headers,
        body.to_string().as_bytes(),
    );
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, header(&head, "x-toolcall-session"), body)
}

fn get_json(addr: &str, path: &str) -> Value {
    let (status, _, body) = send(addr, "GET", path, &[], b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

fn text_of(body: &Value) -> &str {
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
}

/// `toolcall sessions show ID --json` on the shared archive.
fn show(url: &str, session: &str) -> Value {
    json_of(
        bin()
            .args(["sessions", "show", session, "--json", "--archive", url])
            .output()
            .unwrap(),
    )
}

/// (Jack's location, the chest's condition) as `session` archived its world.
fn world_of(url: &str, session: &str) -> (String, String) {
    let rec = show(url, session);
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

/// A replica: the world pack and the slow `send_payment` program tool, on `archive`.
fn replica(upstream: &str, archive: &str, dir: &Path) -> Gateway {
    let world = repo_root().join("examples/world/world.json");
    let mut serve = bin();
    serve
        .current_dir(dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(["--pack", "world", "--pack-opt"])
        .arg(format!("world.world={}", world.display()))
        .arg("--tools")
        .arg(dir.join("tools.json"))
        .args(["--archive", archive]);
    Gateway::start(&mut serve)
}

/// The slow tool: it records each run (a line in `runs`) and its pid, then waits.
fn write_tools(dir: &Path) {
    let script = format!(
        "echo run >> '{}'; echo $$ > '{}.tmp' && mv '{1}.tmp' '{1}'; sleep 30",
        dir.join("runs").display(),
        dir.join("program.pid").display(),
    );
    let tools = json!({"tools": [{
        "name": "send_payment",
        "description": "Sends a payment (slowly).",
        "parameters": {"type": "object", "properties": {}},
        "timeout_ms": 120_000,
        "backend": {"type": "program", "argv": ["sh", "-c", script]}
    }]});
    std::fs::write(dir.join("tools.json"), tools.to_string()).unwrap();
}

/// Polls `check` until it holds, for at most a minute.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn two_serve_processes_share_sessions_switches_and_the_inspector() {
    let Some(server) = toolcall_testkit::require("postgres", Postgres::start()) else {
        return;
    };
    let url = server.create_database("replicas").unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_tools(dir.path());
    let upstream = Upstream::default();
    let upstream_url = upstream.start();
    let a = replica(&upstream_url, &url, dir.path());
    let b = replica(&upstream_url, &url, dir.path());

    // A session started on A continues on B with its world.
    upstream.script(
        "travel",
        &[
            &move_to("loc_beach"),
            "Jack is on the beach.",
            // From the cave there is no way to the cliff: only from the beach.
            &move_to("loc_cliff"),
            "Jack climbs the cliff.",
        ],
    );
    let first = json!({"model": "travel", "messages": [
        {"role": "user", "content": "Go to the beach"}]});
    let (status, session, body) = chat(&a.addr, None, &first);
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body), "Jack is on the beach.");
    let session = session.unwrap();
    let next = json!({"model": "travel", "messages": [
        {"role": "user", "content": "Go to the beach"},
        {"role": "assistant", "content": "Jack is on the beach."},
        {"role": "user", "content": "Now the cliff"}]});
    let (status, continued, body) = chat(&b.addr, Some(&session), &next);
    assert_eq!(status, 200, "{body}");
    assert_eq!(continued.as_deref(), Some(session.as_str()));
    assert_eq!(text_of(&body), "Jack climbs the cliff.");
    assert_eq!(
        world_of(&url, &session),
        ("loc_cliff".into(), "locked".into())
    );

    // Each replica's inspector shows the call the other ran, marked as from another
    // replica, beside its own, unmarked.
    let went_to = |c: &Value, place: &str| {
        c["session_id"] == session.as_str()
            && c["tool"] == "move_player"
            && c["arguments"]["targetLocationId"] == place
    };
    for (replica, own, other) in [
        (&b, "loc_cliff", "loc_beach"),
        (&a, "loc_beach", "loc_cliff"),
    ] {
        eventually("an inspector shows the other replica's call", || {
            get_json(&replica.addr, "/inspector/api/calls")
                .as_array()
                .unwrap()
                .iter()
                .any(|c| went_to(c, other) && c["status"] == "ok" && c["replica"].is_string())
        });
        let calls = get_json(&replica.addr, "/inspector/api/calls");
        let mine: Vec<&Value> = calls
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| went_to(c, own))
            .collect();
        assert_eq!(mine.len(), 1, "{calls:#}");
        assert!(mine[0].get("replica").is_none(), "{calls:#}");
    }

    // A switch flipped on A's inspector is honoured by B's next request.
    upstream.script("flip", &["fine"]);
    let ask = json!({"model": "flip", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, _) = chat(&b.addr, None, &ask);
    assert_eq!(status, 200);
    assert!(offered(&upstream.requests("flip")[0]).contains(&"move_player".to_owned()));
    let (status, _, body) = send(
        &a.addr,
        "POST",
        "/inspector/tools/move_player",
        &[("content-type", "application/x-www-form-urlencoded")],
        b"enabled=false",
    );
    assert_eq!(status, 303, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) = chat(&b.addr, None, &ask);
    assert_eq!(status, 200);
    let tools = offered(&upstream.requests("flip")[1]);
    assert!(!tools.contains(&"move_player".to_owned()), "{tools:?}");
    assert!(tools.contains(&"send_payment".to_owned()), "{tools:?}");
    let switched = get_json(&b.addr, "/inspector/api/tools");
    let move_player = switched["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "move_player")
        .unwrap();
    assert_eq!(
        (&move_player["enabled"], &move_player["switched"]),
        (&json!(false), &json!(true))
    );
    // And back on, from B this time, for A.
    let (status, _, _) = send(
        &b.addr,
        "POST",
        "/inspector/tools/move_player",
        &[("content-type", "application/x-www-form-urlencoded")],
        b"enabled=true",
    );
    assert_eq!(status, 303);
    let (status, _, _) = chat(&a.addr, None, &ask);
    assert_eq!(status, 200);
    assert!(offered(&upstream.requests("flip")[2]).contains(&"move_player".to_owned()));

    // 20 concurrent sessions, alternating between the replicas, each keep their own world.
    const SESSIONS: usize = 20;
    for i in 0..SESSIONS {
        // Even sessions go to the beach then open the chest; odd ones the other way round.
        let (one, two) = if i % 2 == 0 {
            (move_to("loc_beach"), open_chest())
        } else {
            (open_chest(), move_to("loc_beach"))
        };
        let (said_one, said_two) = (format!("first of {i}"), format!("second of {i}"));
        let mut script = vec![one.as_str(), said_one.as_str()];
        if i % 4 < 2 {
            script.push(two.as_str());
        }
        script.push(said_two.as_str());
        upstream.script(&format!("world-{i}"), &script);
    }
    let replicas = [a.addr.clone(), b.addr.clone()];
    let runs: Vec<_> = (0..SESSIONS)
        .map(|i| {
            let replicas = replicas.clone();
            std::thread::spawn(move || {
                let model = format!("world-{i}");
                let first = json!({"model": model, "messages": [
                    {"role": "user", "content": "first"}]});
                let (status, session, body) = chat(&replicas[i % 2], None, &first);
                assert_eq!(status, 200, "{body}");
                let said = format!("first of {i}");
                assert_eq!(text_of(&body), said);
                let session = session.unwrap();
                let next = json!({"model": model, "messages": [
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": said},
                    {"role": "user", "content": "second"}]});
                let (status, continued, body) = chat(&replicas[(i + 1) % 2], Some(&session), &next);
                assert_eq!(status, 200, "{body}");
                assert_eq!(continued.as_deref(), Some(session.as_str()));
                assert_eq!(text_of(&body), format!("second of {i}"));
                (i, session)
            })
        })
        .collect();
    for run in runs {
        let (i, session) = run.join().unwrap();
        // Sessions that made both changes have both; the others only their first.
        let want = match (i % 2 == 0, i % 4 < 2) {
            (_, true) => ("loc_beach", "open"),
            (true, false) => ("loc_beach", "locked"),
            (false, false) => ("loc_cave", "open"),
        };
        assert_eq!(
            world_of(&url, &session),
            (want.0.to_owned(), want.1.to_owned()),
            "session {i}"
        );
    }

    // kill -9 of A while its call runs the slow tool.
    let pay = call("send_payment", json!({}));
    upstream.script(
        "pay",
        &[
            &pay,
            "I cannot tell whether it went through.",
            "Still unsure.",
        ],
    );
    let ask_pay = json!({"model": "pay", "stream": true, "messages": [
        {"role": "user", "content": "Pay the bill"}]});
    // Streamed: the session is named in the headers before the turn runs.
    let mut stream = TcpStream::connect(&a.addr).unwrap();
    let body = ask_pay.to_string();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        a.addr,
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "{head}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let paying = header(&head, "x-toolcall-session").unwrap();
    let pid_file = dir.path().join("program.pid");
    eventually("the slow tool starts on A", || pid_file.exists());
    let mut a = a;
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    drop(reader);

    // The client retries on B: the call is answered "outcome unknown", not run again.
    let retry = json!({"model": "pay", "messages": [
        {"role": "user", "content": "Pay the bill"}]});
    let (status, continued, body) = chat(&b.addr, Some(&paying), &retry);
    assert_eq!(status, 200, "{body}");
    assert_eq!(continued.as_deref(), Some(paying.as_str()));
    assert_eq!(text_of(&body), "I cannot tell whether it went through.");
    let again = json!({"model": "pay", "messages": [
        {"role": "user", "content": "Pay the bill"},
        {"role": "assistant", "content": "I cannot tell whether it went through."},
        {"role": "user", "content": "And now?"}]});
    let (status, _, body) = chat(&b.addr, Some(&paying), &again);
    assert_eq!(status, 200, "{body}");
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
    assert_eq!(runs.lines().count(), 1, "the lost call ran again");

    // The upstream's record: A's request, then B's two. In B's, the call has one answer,
    // "outcome unknown", reported once.
    let asked = upstream.requests("pay");
    assert_eq!(asked.len(), 3, "{asked:#?}");
    for request in &asked[1..] {
        let messages = request["messages"].as_array().unwrap();
        let calls: Vec<&str> = messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(calls.len(), 1, "{request}");
        let answers: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        assert_eq!(answers.len(), 1, "{request}");
        assert_eq!(answers[0]["tool_call_id"], calls[0]);
        let content = match &answers[0]["content"] {
            Value::String(text) => serde_json::from_str(text).unwrap(),
            other => other.clone(),
        };
        assert_eq!(
            content["error"]["details"]["outcome"], "unknown",
            "{content}"
        );
    }
    // Every call of every session in the archive is paired with exactly one result.
    let list = json_of(
        bin()
            .args(["sessions", "list", "--json", "--archive", &url])
            .output()
            .unwrap(),
    );
    let sessions = list.as_array().unwrap();
    // travel, three for the switch, the twenty, pay.
    assert_eq!(sessions.len(), 1 + 3 + SESSIONS + 1, "{list:#}");
    for s in sessions {
        let rec = show(&url, s["id"].as_str().unwrap());
        for c in rec["calls"].as_array().unwrap() {
            assert_eq!(c["results"].as_array().unwrap().len(), 1, "{c}");
        }
    }
    let paid = show(&url, &paying);
    assert_eq!(
        paid["calls"][0]["results"][0]["outcome"]["error"]["details"]["outcome"],
        "unknown"
    );
}
