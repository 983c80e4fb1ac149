//! `log_lines::JsonLines` writes the line `tracing_subscriber`'s JSON formatter writes, byte
//! for byte but the time: the same events, under each formatter in turn.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use toolcall_serve::log_lines::JsonLines;

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
#[allow(dead_code)] // read through `Debug`
struct Odd {
    name: &'static str,
    list: Vec<u8>,
}

/// Every kind of field value, text needing escapes, levels, targets, and events in spans.
fn events() {
    let error = std::io::Error::other("disk \"full\"\n");
    let err: &(dyn std::error::Error + 'static) = &error;
    tracing::info!(model = %"qwen3-8b", stream = false, tools = 1usize,
        upstream = %"http://127.0.0.1:9121", emulate_tools = true, "request");
    tracing::info!(call_id = %"call_1", tool = %"get_weather", format = %"hermes",
        repairs = %"", arguments = %r#"{"city":"Paris","password":"[redacted]"}"#, "call");
    tracing::warn!(call_id = %"call_2", error = %"missing \"user\"\tat /", policy = ?Some(3),
        "invalid call: dropped");
    tracing::debug!(text = "control \u{0}\u{1f}\u{7f} and é 中 😀\r\n", n = -5i64, big = 7u64,
        wide = 1i128 << 100, ratio = 0.1f64, nan = f64::NAN, inf = f64::INFINITY, whole = 2.0f64,
        odd = ?Odd { name: "a\"b", list: vec![1, 2] }, err, "debug {} {:?}", 1, "two");
    tracing::error!(target: "elsewhere::module", "no fields but the message");
    tracing::trace!(empty = "", "");
    tracing::info!(
        log.target = "a log record's field",
        "not from log, but named like it"
    );
    let span = tracing::info_span!("turn", model = "m", n = 3);
    span.in_scope(|| tracing::info!(inside = true, "in a span"));
    tracing::info!(parent: &span, "explicit parent");
    tracing::info!(parent: None, "explicit root");
}

fn lines_of(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
    buf: &Buf,
) -> Vec<String> {
    tracing::subscriber::with_default(subscriber, events);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|line| {
            // The time differs between runs; everything else must not.
            let start = line.find("\"timestamp\":\"").unwrap() + "\"timestamp\":\"".len();
            let end = start + line[start..].find('"').unwrap();
            let time = &line[start..end];
            assert_eq!(time.len(), "2026-11-28T12:03:48.123456Z".len(), "{line}");
            assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{line}");
            format!("{}TIME{}", &line[..start], &line[end..])
        })
        .collect()
}

#[test]
fn each_line_is_tracing_subscribers_json_line() {
    let theirs = Buf::default();
    let w = theirs.clone();
    let reference = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || w.clone())
        .finish();
    let ours = Buf::default();
    let w = ours.clone();
    let fast = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || w.clone())
        .event_format(JsonLines::default())
        .finish();
    let expected = lines_of(reference, &theirs);
    let got = lines_of(fast, &ours);
    assert_eq!(expected.len(), 10, "{expected:#?}");
    assert!(
        expected.iter().any(|l| l.contains("\"span\":")),
        "{expected:#?}"
    );
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(g, e);
        serde_json::from_str::<serde_json::Value>(g).unwrap();
    }
    assert_eq!(got.len(), expected.len());
}
