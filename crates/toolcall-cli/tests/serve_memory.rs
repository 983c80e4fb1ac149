//! `toolcall serve`'s memory under hostile requests (issue 20, fault 2): a real gateway
//! process fed requests within the body limit, several at once, keeps its peak resident set
//! (`VmHWM`) under a stated bound, and gives the memory back once the spike is over
//! (`VmRSS`). Two loads: hostile tool declarations (distinct declarations of hundreds of
//! tools with costly schemas, and bodies of tens of thousands of trivial tools), and bodies
//! near the limit in every shape that decodes to far more than its bytes (a long message,
//! many short messages, `[0,0,…]`, `[{"a":0},…]`, deep nesting) held in flight by a slow
//! upstream. Outcomes only, no timings: the gateway's answers are not looked at beyond
//! their status line, and the drop is waited for with a generous guard. A watchdog kills
//! the gateway once it passes the bound, so a failing run does not take the machine's
//! memory with it.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Gateway, bin};
use serde_json::{Value, json};

/// The peak resident set the gateway may reach under this load.
const PEAK_BOUND_KB: u64 = 256 * 1024;
/// What it must come back under once idle.
const IDLE_BOUND_KB: u64 = 128 * 1024;

/// A gateway forwarding to `upstream`, without retries.
fn start(dir: &std::path::Path, upstream: &str) -> Gateway {
    let config = dir.join("gateway.toml");
    std::fs::write(&config, format!("upstream = \"{upstream}\"\nretries = 0\n")).unwrap();
    let mut serve = bin();
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("TOOLCALL_LOG", "error");
    Gateway::start(&mut serve)
}

/// A `/proc/PID/status` field, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// POSTs `body`; the status line (or what failed, if the gateway went away).
fn post(addr: &str, body: &[u8]) -> String {
    let send = || -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(addr)?;
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )?;
        // A gateway that refuses a body early may close before it is all sent.
        let sent = s.write_all(body);
        let mut reply = Vec::new();
        let read = s.read_to_end(&mut reply);
        let reply = String::from_utf8_lossy(&reply);
        match reply.lines().next() {
            Some(status) if !status.is_empty() => Ok(status.to_owned()),
            _ => Err(sent
                .and(read)
                .err()
                .unwrap_or_else(|| std::io::Error::other("no status line"))),
        }
    };
    send().unwrap_or_else(|e| format!("no answer: {e}"))
}

/// [`post`] as a well-behaved client does: a `503` is tried again after its `Retry-After`
/// (a second), a few times.
fn post_retrying(addr: &str, body: &[u8]) -> String {
    let mut status = post(addr, body);
    for _ in 0..10 {
        if !status.contains(" 503 ") {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        status = post(addr, body);
    }
    status
}

/// Kills the gateway (by its id) once its resident set passes the bound, until `done`.
fn watchdog(pid: u32, done: &std::sync::atomic::AtomicBool) {
    use std::sync::atomic::Ordering;
    while !done.load(Ordering::Relaxed) {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            });
        if rss.is_some_and(|kb| kb > PEAK_BOUND_KB) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Declaration `n`: `tools` tools whose schemas cost many times their text (properties with
/// `anyOf`, enums, nested objects), distinct from every other `n`.
fn costly_request(n: usize, tools: usize) -> Vec<u8> {
    let tools: Vec<Value> = (0..tools)
        .map(|i| {
            let mut properties = serde_json::Map::new();
            for k in 0..6 {
                properties.insert(
                    format!("p{k}"),
                    json!({"anyOf": [{"type": "string", "enum": ["a", "b", "c"]},
                        {"type": "object", "properties": {"x": {"type": "integer", "minimum": n},
                        "y": {"type": "array", "items": {"type": "number"}}}, "required": ["x"]}]}),
                );
            }
            json!({"type": "function", "function": {"name": format!("t{n}_{i}"),
                "parameters": {"type": "object", "properties": properties}}})
        })
        .collect();
    serde_json::to_vec(
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": tools}),
    )
    .unwrap()
}

/// A body just under the 8 MiB limit of trivial tools, far over `max_tools`.
fn flood_request(n: usize) -> Vec<u8> {
    let tools: Vec<Value> = (0..45_000)
        .map(|i| json!({"type": "function", "function": {"name": format!("f{n}_{i}")}}))
        .collect();
    serde_json::to_vec(
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "tools": tools}),
    )
    .unwrap()
}

#[test]
fn hostile_tool_declarations_stay_under_the_memory_bound_and_it_is_given_back() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on the upstream: every request ends in a quick 502 once its tools
    // are compiled (or refused), which is all this test needs from it.
    let gateway = start(dir.path(), "http://127.0.0.1:1");
    let pid = gateway.child.id();
    let addr = gateway.addr.clone();
    let started_kb = status_kb(pid, "VmRSS:");

    // Four clients at once, each sending distinct costly declarations and floods.
    let statuses: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let addr = addr.clone();
                scope.spawn(move || {
                    let mut statuses = Vec::new();
                    for round in 0..4 {
                        let n = w * 100 + round;
                        statuses.push(post(&addr, &costly_request(n, 500)));
                        if round % 2 == 0 {
                            statuses.push(post(&addr, &flood_request(n)));
                        }
                    }
                    statuses
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let peak_kb = status_kb(pid, "VmHWM:");
    eprintln!("started at {started_kb} kB, peak {peak_kb} kB; answers {statuses:?}");
    // Every request was answered: compiled and forwarded (502: nothing upstream), refused
    // for too many tools (400), as a body too large for the bodies' budget (413: the
    // floods' tens of thousands of small objects), or for want of memory now (503).
    assert!(
        statuses.iter().all(|s| [" 502 ", " 400 ", " 413 ", " 503 "]
            .iter()
            .any(|code| s.contains(code))),
        "{statuses:?}"
    );
    assert!(statuses.iter().any(|s| s.contains(" 502 ")), "{statuses:?}");
    assert!(
        peak_kb < PEAK_BOUND_KB,
        "peak resident set {peak_kb} kB, bound {PEAK_BOUND_KB} kB"
    );

    // Idle now: the memory goes back to the system.
    let guard = Instant::now() + Duration::from_secs(90);
    let mut now_kb = status_kb(pid, "VmRSS:");
    while now_kb >= IDLE_BOUND_KB && Instant::now() < guard {
        std::thread::sleep(Duration::from_millis(250));
        now_kb = status_kb(pid, "VmRSS:");
    }
    eprintln!("idle: {now_kb} kB");
    assert!(
        now_kb < IDLE_BOUND_KB,
        "resident set {now_kb} kB once idle, bound {IDLE_BOUND_KB} kB (peak {peak_kb} kB)"
    );
}

/// A stand-in upstream that reads each request whole, holds it a while (so that the
/// gateway holds its clients' bodies in flight at once), then answers a short chat reply.
fn slow_upstream() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || answer_slowly(stream));
        }
    });
    url
}

fn answer_slowly(stream: std::net::TcpStream) -> std::io::Result<()> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(stream.try_clone()?);
    let mut len = 0u64;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    std::io::copy(&mut reader.take(len), &mut std::io::sink())?;
    std::thread::sleep(Duration::from_millis(300));
    let reply = json!({"id": "x", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "ok"}}]})
    .to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{reply}",
        reply.len()
    )
}

/// Bytes of JSON each near-limit body is made to (the limit is 8 MiB).
const NEAR_LIMIT: usize = 8 * 1024 * 1024 - 64 * 1024;

/// A chat request whose `messages` and extra field `x` are `messages` and `x`, padded to
/// [`NEAR_LIMIT`] bytes by `pad` repeated inside the array `x` holds (or inside the
/// messages when `x` is `None`).
fn near_limit_bodies() -> Vec<(&'static str, Vec<u8>)> {
    let head = r#"{"model":"m","messages":["#;
    let fill = |open: &str, item: &str, sep: &str, close: &str| -> Vec<u8> {
        let mut body = String::with_capacity(NEAR_LIMIT);
        body.push_str(open);
        body.push_str(item);
        while body.len() + sep.len() + item.len() + close.len() < NEAR_LIMIT {
            body.push_str(sep);
            body.push_str(item);
        }
        body.push_str(close);
        body.into_bytes()
    };
    let hi = r#"{"role":"user","content":"hi"}"#;
    let long = {
        let mut body = format!(r#"{head}{{"role":"user","content":""#);
        let text = "All work and no play makes Jack a dull boy. ";
        while body.len() + text.len() + 8 < NEAR_LIMIT {
            body.push_str(text);
        }
        body.push_str(r#""}]}"#);
        body.into_bytes()
    };
    let deep = {
        let depth = (NEAR_LIMIT - 64) / 2;
        let mut body = format!(r#"{head}{hi}],"x":"#);
        body.push_str(&"[".repeat(depth));
        body.push_str(&"]".repeat(depth));
        body.push('}');
        body.into_bytes()
    };
    vec![
        ("long message", long),
        ("many short messages", fill(head, hi, ",", "]}")),
        (
            "zeros",
            fill(&format!(r#"{head}{hi}],"x":["#), "0", ",", "]}"),
        ),
        (
            "small objects",
            fill(&format!(r#"{head}{hi}],"x":["#), r#"{"a":0}"#, ",", "]}"),
        ),
        ("deep nesting", deep),
    ]
}

#[test]
fn near_limit_bodies_in_flight_stay_under_the_memory_bound_and_it_is_given_back() {
    let bodies = near_limit_bodies();
    for (name, body) in &bodies {
        assert!(body.len() <= NEAR_LIMIT, "{name}: {}", body.len());
        assert!(body.len() > NEAR_LIMIT - 1024, "{name}: {}", body.len());
    }
    let dir = tempfile::tempdir().unwrap();
    let gateway = start(dir.path(), &slow_upstream());
    let pid = gateway.child.id();
    let addr = gateway.addr.clone();
    let started_kb = status_kb(pid, "VmRSS:");
    let done = std::sync::atomic::AtomicBool::new(false);

    // Six clients at once, each sending every shape, each starting at another one.
    let statuses: Vec<(&str, String)> = std::thread::scope(|scope| {
        scope.spawn(|| watchdog(pid, &done));
        let workers: Vec<_> = (0..6)
            .map(|w| {
                let (addr, bodies) = (&addr, &bodies);
                scope.spawn(move || {
                    (0..bodies.len())
                        .map(|i| {
                            let (name, body) = &bodies[(w + i) % bodies.len()];
                            (*name, post_retrying(addr, body))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let statuses = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        statuses
    });
    // A killed gateway is a zombie until reaped: no memory lines.
    let peak = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .filter(|s| s.contains("VmHWM:"));
    let alive = peak.is_some();
    let peak_kb = if alive {
        status_kb(pid, "VmHWM:")
    } else {
        PEAK_BOUND_KB
    };
    eprintln!("started at {started_kb} kB, peak {peak_kb} kB; answers {statuses:#?}");
    assert!(
        alive,
        "the resident set passed the bound, {PEAK_BOUND_KB} kB: killed there"
    );
    assert!(
        peak_kb < PEAK_BOUND_KB,
        "peak resident set {peak_kb} kB, bound {PEAK_BOUND_KB} kB"
    );
    // Every request was answered: forwarded (200), refused as invalid (400), as too large
    // for the bodies' budget (413), or for want of memory now (503); and bodies that fit
    // went through.
    for (name, status) in &statuses {
        assert!(
            [" 200 ", " 400 ", " 413 ", " 503 "]
                .iter()
                .any(|s| status.contains(s)),
            "{name}: {status}"
        );
    }
    assert!(
        statuses
            .iter()
            .any(|(name, s)| *name == "long message" && s.contains(" 200 ")),
        "{statuses:?}"
    );

    // Idle now: the memory goes back to the system.
    let guard = Instant::now() + Duration::from_secs(90);
    let mut now_kb = status_kb(pid, "VmRSS:");
    while now_kb >= IDLE_BOUND_KB && Instant::now() < guard {
        std::thread::sleep(Duration::from_millis(250));
        now_kb = status_kb(pid, "VmRSS:");
    }
    eprintln!("idle: {now_kb} kB");
    assert!(
        now_kb < IDLE_BOUND_KB,
        "resident set {now_kb} kB once idle, bound {IDLE_BOUND_KB} kB (peak {peak_kb} kB)"
    );
}
