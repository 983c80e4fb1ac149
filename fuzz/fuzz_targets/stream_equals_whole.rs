//! Arbitrary bytes through the one-shot parser and through the streaming parser split at
//! fuzzer-chosen points: calls (name and arguments), visible text and the number of errors
//! must be equal, and nothing may panic.
//!
//! Input layout: byte 0 picks the options (registry or not, starting in reasoning, a small
//! `max_failed_calls`), byte 1 the number of split
//! points `n` (mod 16), the next `n` bytes the split points (as fractions of the text), the
//! rest is the model output (lossily decoded as UTF-8).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use toolcall_core::{Level, Parsed, Registry, StreamEvent, ToolSpec};
use toolcall_parse::{ParseOptions, StreamParser, parse};

fn registry() -> Arc<Registry> {
    static R: OnceLock<Arc<Registry>> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Registry::new();
        for (name, props) in [
            ("echo", json!({"text": {"type": "string"}})),
            ("get_time", json!({})),
            ("get_weather", json!({"city": {"type": "string"}, "days": {"type": "integer"}})),
        ] {
            let _ = r.add_spec(ToolSpec::new(
                name,
                "",
                json!({"type": "object", "properties": props}),
            ));
        }
        Arc::new(r)
    })
    .clone()
}

fn summary(p: &Parsed) -> (Vec<(String, serde_json::Value)>, String, usize) {
    (
        p.calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect(),
        p.text.clone(),
        p.diagnostics
            .iter()
            .filter(|d| d.level == Level::Error)
            .count(),
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&opts, rest)) = data.split_first() else {
        return;
    };
    let Some((&n, rest)) = rest.split_first() else {
        return;
    };
    let n = usize::from(n % 16).min(rest.len());
    let (cuts, body) = rest.split_at(n);
    let text = String::from_utf8_lossy(body);
    let mut options = ParseOptions {
        tools: (opts & 1 == 1).then(registry),
        starts_in_reasoning: opts & 2 == 2,
        ..ParseOptions::default()
    };
    // Bits 2-3: a small bound on failed call attempts (0-2; 3 keeps the default), so that
    // the reply's stop past it is reached by short inputs and checked at any chunking.
    if (opts >> 2) & 3 != 3 {
        options.limits.max_failed_calls = usize::from((opts >> 2) & 3);
    }
    let whole = parse(&text, &options);

    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut at = text.len() * usize::from(*c) / 255;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    points.sort_unstable();
    let mut stream = StreamParser::new(options);
    let mut events = Vec::new();
    let mut from = 0;
    for at in points.into_iter().chain([text.len()]) {
        events.extend(stream.push(&text[from..at]));
        from = at;
    }
    events.extend(stream.finish());
    let mut split = Parsed::default();
    for e in events {
        match e {
            StreamEvent::Text { text } => split.text.push_str(&text),
            StreamEvent::CallFinished { call, .. } => split.calls.push(call),
            StreamEvent::Diagnostic { diagnostic } => split.diagnostics.push(diagnostic),
            _ => {}
        }
    }
    assert_eq!(summary(&whole), summary(&split));
});
