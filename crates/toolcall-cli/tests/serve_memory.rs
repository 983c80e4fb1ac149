//! `toolcall serve`'s memory under hostile tool declarations (issue 20, fault 2): a real
//! gateway process fed requests within the body limit (distinct declarations of hundreds of
//! tools with costly schemas, and bodies of tens of thousands of trivial tools), several at
//! once, keeps its peak resident set (`VmHWM`) under a stated bound, and gives the memory
//! back once the spike is over (`VmRSS`). Outcomes only, no timings: the gateway's answers
//! are not looked at beyond their status line, and the drop is waited for with a generous
//! guard.
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

fn start(dir: &std::path::Path) -> Gateway {
    // Nothing listens on the upstream: every request ends in a quick 502 once its tools
    // are compiled (or refused), which is all this test needs from it.
    let config = dir.join("gateway.toml");
    std::fs::write(&config, "upstream = \"http://127.0.0.1:1\"\nretries = 0\n").unwrap();
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

/// POSTs `body`; the status line.
fn post(addr: &str, body: &[u8]) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply.lines().next().unwrap_or_default().to_owned()
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
    let gateway = start(dir.path());
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
    // for too many tools (400) or for want of memory now (503).
    assert!(
        statuses
            .iter()
            .all(|s| s.contains(" 502 ") || s.contains(" 400 ") || s.contains(" 503 ")),
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
