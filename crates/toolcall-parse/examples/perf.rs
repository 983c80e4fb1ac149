//! Quick release-mode timing of the parser on a few representative replies, one-shot and
//! streamed (`cargo run --release -p toolcall-parse --example perf -- [case] [push]`).
//! The full, reproducible tables are the `toolcall-bench` crate's `bench_table` binary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolcall_core::{Registry, ToolSpec};
use toolcall_parse::{FormatSelection, ParseOptions, StreamParser, parse};

fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    for (name, schema) in [
        (
            "get_weather",
            json!({"type":"object","properties":{"city":{"type":"string"}}}),
        ),
        (
            "computer_use",
            json!({"type":"object","properties":{"action":{"type":"string"}}}),
        ),
        (
            "highlight_object",
            json!({"type":"object","properties":{"object":{"type":"string"}}}),
        ),
    ] {
        if let Err(e) = r.add_spec(ToolSpec::new(name, "t", schema)) {
            panic!("{e}");
        }
    }
    Arc::new(r)
}

fn case(name: &str) -> (String, &'static str) {
    let calls = r#"{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 3}}, {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [10, 20]}}, {"name": "highlight_object", "arguments": {"object": "cup"}}"#;
    let prose = "The model answer of the window, before the screen (see above) button and check. "
        .repeat(13_000);
    match name {
        "prose" => (prose, "auto"),
        "envelope" => (
            format!(
                "Let me take care of that for you. \n```json\n{{\"tools\": [{calls}]}}\n```\n\nI will report back."
            ),
            "tools_envelope",
        ),
        "hermes" => (
            format!(
                "Let me. \n<tool_call>\n{}\n</tool_call>\n",
                calls.replace("}, {\"name\"", "}\n</tool_call>\n<tool_call>\n{\"name\"")
            ),
            "hermes",
        ),
        "hermes_big" => (
            format!(
                "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": {}}}}}\n</tool_call>\n",
                serde_json::Value::String(prose.replace('\n', " "))
            ),
            "hermes",
        ),
        "json" => (format!("[{calls}]"), "json"),
        "pythonic_big" => (
            format!(
                "[get_weather(city={})]",
                serde_json::Value::String(prose.replace('\n', " "))
            ),
            "pythonic",
        ),
        "llama100" => {
            let one: Vec<String> = (0..100)
                .map(|i| {
                    format!(r#"{{"name": "get_weather", "parameters": {{"city": "Paris", "days": {i}}}}}"#)
                })
                .collect();
            (format!("<|python_tag|>{}", one.join(";")), "llama")
        }
        "mistral100" => {
            let one: Vec<String> = (0..100)
                .map(|i| {
                    format!(r#"{{"name": "get_weather", "arguments": {{"city": "Paris", "days": {i}}}}}"#)
                })
                .collect();
            (format!("[TOOL_CALLS] [{}]", one.join(", ")), "mistral")
        }
        _ => panic!("unknown case {name}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("prose", String::as_str);
    let push: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (text, format) = case(name);
    let opts = ParseOptions {
        format: FormatSelection::from_name(format).unwrap_or_default(),
        tools: Some(registry()),
        ..ParseOptions::default()
    };
    let chunks: Vec<&str> = if push == 0 {
        vec![text.as_str()]
    } else {
        let mut v = Vec::new();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let mut n = push.min(rest.len());
            while !rest.is_char_boundary(n) {
                n += 1;
            }
            let (a, b) = rest.split_at(n);
            v.push(a);
            rest = b;
        }
        v
    };
    let start = Instant::now();
    let mut runs = 0u32;
    let mut calls = 0;
    // PERF_RUNS fixes the run count (for instruction counts under callgrind).
    let fixed: Option<u32> = std::env::var("PERF_RUNS").ok().and_then(|v| v.parse().ok());
    while match fixed {
        Some(n) => runs < n,
        None => start.elapsed() < Duration::from_millis(1000) || runs < 3,
    } {
        calls = if push == 0 {
            parse(&text, &opts).calls.len()
        } else {
            let mut p = StreamParser::new(opts.clone());
            let mut n = 0;
            for c in &chunks {
                n += p.push(c).len();
            }
            n + p.finish().len()
        };
        runs += 1;
    }
    let per = start.elapsed() / runs;
    let mbs = text.len() as f64 / per.as_secs_f64() / 1e6;
    println!(
        "{name} push={push} bytes={} calls/events={calls} {per:?} {mbs:.0} MB/s",
        text.len()
    );
}
