//! Slow and idle clients against the real listener, over raw TCP: a half-sent head is
//! closed after the header timeout, a dribbled body is answered 408 within the body timeout,
//! an idle kept-alive connection is closed after the keep-alive timeout (not the header
//! timeout), and with every connection slot held by half-sent heads a real client waits and
//! is served once they time out. Outcomes only: the timeouts are small and every wait has a
//! generous guard, so a loaded machine makes the tests slower, never wrong.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far longer than any timeout these tests set.
const GUARD: Duration = Duration::from_secs(60);

fn addr_of(url: &str) -> String {
    url.trim_start_matches("http://").to_owned()
}

/// Everything the server sends until it closes the connection (a reset counts as closed).
async fn read_to_close(tcp: &mut (impl AsyncRead + Unpin)) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GUARD, tcp.read(&mut buf)).await {
            Err(_) => panic!(
                "the server kept the connection open; it sent {:?}",
                String::from_utf8_lossy(&out)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => return String::from_utf8_lossy(&out).into_owned(),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_after_the_header_timeout() {
    let (url, _) = gateway(|c| {
        c.header_read_timeout_secs = 1;
        c.keep_alive_timeout_secs = 0;
    })
    .await;
    let mut tcp = TcpStream::connect(addr_of(&url)).await.unwrap();
    tcp.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .await
        .unwrap();
    // Closed without an answer to a request it never got.
    let sent = read_to_close(&mut tcp).await;
    assert!(!sent.contains("200 OK"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dribbled_body_is_answered_408_within_the_body_timeout() {
    let (url, _) = gateway(|c| c.body_read_timeout_secs = 1).await;
    let mut tcp = TcpStream::connect(addr_of(&url)).await.unwrap();
    tcp.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
          Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
    )
    .await
    .unwrap();
    let (mut reader, mut writer) = tcp.into_split();
    // One byte every 200 ms: each arrives well within any idle limit, the whole never.
    let dribble = tokio::spawn(async move {
        for _ in 0..300 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if writer.write_all(b" ").await.is_err() {
                return;
            }
        }
    });
    let answer = read_to_close(&mut reader).await;
    dribble.abort();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout() {
    // A header timeout far past the guard: only the keep-alive timeout can close it.
    let (url, _) = gateway(|c| {
        c.header_read_timeout_secs = 3600;
        c.keep_alive_timeout_secs = 1;
    })
    .await;
    let mut tcp = TcpStream::connect(addr_of(&url)).await.unwrap();
    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let sent = read_to_close(&mut tcp).await;
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
    assert!(sent.ends_with("ok"), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_slot_held_by_half_sent_heads_a_client_waits_and_is_then_served() {
    const SLOTS: usize = 4;
    let (url, _) = gateway(|c| {
        c.max_connections = SLOTS;
        // The held heads free their slots only after this; the check below that the client
        // still waits runs half a second after they were sent, so a loaded machine would
        // have to stall the test for over 9 s to see the slots freed early.
        c.header_read_timeout_secs = 10;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..SLOTS {
        let mut tcp = TcpStream::connect(addr_of(&url)).await.unwrap();
        tcp.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        held.push(tcp);
    }
    let client = tokio::spawn({
        let url = url.clone();
        async move {
            let r = post(&url, request("qwen3-8b", false)).await;
            (r.status(), r.json::<Value>().await.unwrap())
        }
    });
    // Every slot is held for seconds yet: the client is not let in meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !client.is_finished(),
        "a connection past the cap was served"
    );
    for tcp in &mut held {
        read_to_close(tcp).await;
    }
    let (status, reply) = tokio::time::timeout(GUARD, client)
        .await
        .expect("the waiting client was never served")
        .unwrap();
    assert_eq!(status, 200, "{reply}");
    assert!(reply["choices"][0]["message"].is_object(), "{reply}");
}
