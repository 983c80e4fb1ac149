//! The bodies' budget's estimate of what a request body costs the gateway (what bounds its
//! memory for bodies in flight) against the heap the gateway really takes for it, measured
//! with a counting allocator as the peak of live heap while one request goes through the
//! gateway's router whole (read, decoded, sent upstream, its reply checked and answered),
//! for bodies of every shape that costs differently: long text, many short messages,
//! `[0,0,…]`, `[{"a":0},…]`, strings, nested arrays, a schema's `default`, and depth. The
//! estimate must never be below the measurement. (One test in this binary: the allocator
//! counts the whole process.)
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // The old and the new block are both alive while the contents move.
        grew(n as isize);
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;

use axum::body::{Body, Bytes};
use axum::http::Request;
use toolcall_serve::body::estimate;
use toolcall_serve::{AppState, Config};
use tower::ServiceExt;

/// A stand-in upstream that reads each request into one small buffer (allocating nothing
/// per byte) and answers a short chat reply.
fn upstream() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let reply = r#"{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}"#;
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            // Head and body: the head's end, then content-length bytes after it.
            let mut seen = Vec::new();
            let (head_end, len) = loop {
                let n = stream.read(&mut buf).unwrap();
                seen.extend_from_slice(&buf[..n]);
                if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&seen[..i]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    break (i + 4, len);
                }
            };
            let mut left = len.saturating_sub(seen.len() - head_end);
            drop(seen);
            while left > 0 {
                let n = stream.read(&mut buf[..left.min(64 * 1024)]).unwrap();
                assert!(n > 0);
                left -= n;
            }
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{reply}",
                reply.len()
            )
            .unwrap();
        }
    });
    url
}

/// Sends `body` through the gateway's router (in 64 KiB chunks, as a socket gives it);
/// the peak live heap it took, the bytes themselves included, and the estimate.
async fn measure(state: &AppState, name: &str, body: String) -> (i64, u64) {
    let len = body.len();
    let bytes = Bytes::from(body);
    let chunks: Vec<Result<Bytes, std::io::Error>> = (0..len)
        .step_by(64 * 1024)
        .map(|i| Ok(bytes.slice(i..(i + 64 * 1024).min(len))))
        .collect();
    let request = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .header("content-length", len)
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap();
    let router = toolcall_serve::router(state.clone());
    let before = LIVE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let response = router.oneshot(request).await.unwrap();
    let status = response.status();
    let answer = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    // The bytes read are part of what a body costs: here they were allocated before.
    let heap = (PEAK.load(Ordering::SeqCst) - before) as i64 + len as i64;
    let estimated = estimate(&bytes);
    println!(
        "{name}: {len} B, {status}, peak heap {heap} B ({:.1}x the bytes), estimate {estimated} B ({:.1}x)",
        heap as f64 / len as f64,
        estimated as f64 / heap as f64,
    );
    assert!(
        status.is_success() || status == 400,
        "{name}: {status} {}",
        String::from_utf8_lossy(&answer)
    );
    (heap, estimated)
}

/// `{"model":"m","messages":[hi],"x":[item,item,…]}` of about `size` bytes.
fn extra(item: &str, size: usize) -> String {
    let n = size / (item.len() + 1);
    format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"x":[{}]}}"#,
        vec![item; n].join(",")
    )
}

#[tokio::test(flavor = "current_thread")]
async fn the_estimate_is_never_below_the_measured_peak_heap() {
    let config = Config {
        upstream: upstream(),
        retries: 0,
        bodies_memory_mib: 1 << 20,
        ..Config::default()
    };
    let state = AppState::new(config).unwrap();
    let size = 1024 * 1024;
    let hi = r#"{"role":"user","content":"hi"}"#;
    let mut rows = Vec::new();
    let tiny = format!(r#"{{"model":"m","messages":[{hi}]}}"#);
    // The process's first request builds state kept for its life (lazily built tables, the
    // per-thread buffers and memo of the gateway's fast path: 230 KB once, 9 KB after): not
    // a body's cost, so one request goes first, unmeasured.
    measure(&state, "warm-up", tiny.clone()).await;
    rows.push(measure(&state, "one short message", tiny).await);
    let long = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "All work and no play. ".repeat(size / 22)
    );
    rows.push(measure(&state, "long message", long).await);
    let many = format!(
        r#"{{"model":"m","messages":[{}]}}"#,
        vec![hi; size / (hi.len() + 1)].join(",")
    );
    rows.push(measure(&state, "many short messages", many).await);
    let parts = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":[{}]}}]}}"#,
        vec![r#"{"type":"text","text":"hi"}"#; size / 29].join(",")
    );
    rows.push(measure(&state, "many content parts", parts).await);
    rows.push(measure(&state, "zeros", extra("0", size)).await);
    rows.push(measure(&state, "small objects", extra(r#"{"a":0}"#, size)).await);
    rows.push(measure(&state, "empty arrays", extra("[]", size)).await);
    rows.push(measure(&state, "short strings", extra(r#""ab""#, size)).await);
    rows.push(measure(&state, "keys", extra(r#"{"a":0,"b":1,"c":2,"d":3}"#, size)).await);
    let default = format!(
        r#"{{"model":"m","messages":[{hi}],"tools":[{{"type":"function","function":{{"name":"f","parameters":{{"type":"object","default":[{}]}}}}}}]}}"#,
        vec!["0"; size / 2].join(",")
    );
    rows.push(measure(&state, "zeros as a schema default", default).await);
    let deep = format!(
        r#"{{"model":"m","messages":[{hi}],"x":{}{}}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    rows.push(measure(&state, "nested 100 deep", deep).await);
    let deeper = format!(
        r#"{{"model":"m","messages":[{hi}],"x":{}{}}}"#,
        "[".repeat(size / 2),
        "]".repeat(size / 2)
    );
    rows.push(measure(&state, "nested a million deep", deeper).await);
    for (heap, estimated) in rows {
        assert!(heap > 0);
        assert!(
            estimated as i64 >= heap,
            "estimate {estimated} below the measured {heap}"
        );
    }
}
