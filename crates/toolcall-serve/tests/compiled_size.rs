//! The tools cache's estimate of a compiled declaration's heap (what bounds the gateway's
//! memory) against the heap it really takes, measured with a counting allocator, for
//! declarations of every shape that costs differently: trivial tools, described properties,
//! `anyOf`/`enum` trees, deep nesting, long text, big enums, patterns and formats, and
//! patterns that would compile to megabytes. The estimate must never be below the
//! measurement. (One test in this binary: the allocator counts the whole process.)
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;

use serde_json::{Value, json};
use toolcall_serve::tools_cache::{CompiledTools, estimate};
use toolcall_wire::chat::ChatTool;

/// Compiles `tools`; the measured heap and the estimate, in bytes.
fn measure(name: &str, tools: Value) -> (i64, u64) {
    let tools: Vec<ChatTool> = serde_json::from_value(tools).unwrap();
    let text = serde_json::to_string(&tools).unwrap().len();
    let before = LIVE.load(Ordering::SeqCst);
    let compiled = CompiledTools::compile(&tools);
    let heap = (LIVE.load(Ordering::SeqCst) - before) as i64;
    drop(compiled);
    let estimated = estimate(&tools, text);
    println!(
        "{name}: {} tools, text {text} B, compiled heap {heap} B ({:.1}x the text), estimate {estimated} B",
        tools.len(),
        heap as f64 / text as f64
    );
    (heap, estimated)
}

#[test]
fn the_estimate_is_never_below_the_measured_compiled_heap() {
    let mut rows = Vec::new();
    let trivial: Vec<Value> = (0..500).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object"}}})).collect();
    rows.push(measure("trivial", json!(trivial)));
    let noparams: Vec<Value> = (0..500)
        .map(|i| json!({"type":"function","function":{"name":format!("t{i}")}}))
        .collect();
    rows.push(measure("noparams", json!(noparams)));
    let props: Vec<Value> = (0..500).map(|i| {
        let mut p = serde_json::Map::new();
        for k in 0..5 { p.insert(format!("p{k}"), json!({"type":"string","description":"some words that say what this is"})); }
        json!({"type":"function","function":{"name":format!("t{i}"),"description":"A tool that does a thing.","parameters":{"type":"object","properties":p,"required":["p0"]}}})
    }).collect();
    rows.push(measure("props5", json!(props)));
    let rich: Vec<Value> = (0..50).map(|i| {
        let mut p = serde_json::Map::new();
        for k in 0..40 { p.insert(format!("p{k}"), json!({"anyOf":[{"type":"string","enum":["a","b","c","d"]},{"type":"array","items":{"type":"object","properties":{"x":{"type":"integer","minimum":0},"y":{"type":"number"}},"required":["x"]}}]})); }
        json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object","properties":p,"additionalProperties":false}}})
    }).collect();
    rows.push(measure("rich", json!(rich)));
    let deep: Vec<Value> = (0..20)
        .map(|i| {
            let mut s = json!({"type":"string"});
            for _ in 0..60 {
                s = json!({"type":"object","properties":{"a":s,"b":{"type":"integer"}}});
            }
            json!({"type":"function","function":{"name":format!("t{i}"),"parameters":s}})
        })
        .collect();
    rows.push(measure("deep", json!(deep)));
    let text: Vec<Value> = (0..10).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"description":"x".repeat(100_000),"parameters":{"type":"object"}}})).collect();
    let many_described: Vec<Value> = (0..300).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"description":"Does a thing with the given inputs and says what it did. ".repeat(40),"parameters":{"type":"object","properties":{"a":{"type":"string","description":"what a is"}}}}})).collect();
    rows.push(measure("many_described", json!(many_described)));
    rows.push(measure("text", json!(text)));
    let enums: Vec<Value> = (0..20).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object","properties":{"e":{"enum":(0..2000).map(|k| format!("v{k}")).collect::<Vec<_>>()}}}}})).collect();
    rows.push(measure("enums", json!(enums)));
    let patterns: Vec<Value> = (0..200).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object","properties":{"e":{"type":"string","pattern":"^[a-z]{3,9}(-[0-9]+)*$"}, "f":{"type":"string","format":"date-time"}}}}})).collect();
    rows.push(measure("patterns", json!(patterns)));
    let bomb: Vec<Value> = (0..5).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object","properties":{"e":{"type":"string","pattern":"(\\w{100}){100}"}}}}})).collect();
    rows.push(measure("bomb", json!(bomb)));
    let bomb2: Vec<Value> = (0..5).map(|i| json!({"type":"function","function":{"name":format!("t{i}"),"parameters":{"type":"object","properties":{"e":{"type":"string","pattern":"[a-z]{1000}"}}}}})).collect();
    rows.push(measure("bomb2", json!(bomb2)));
    for (heap, estimated) in rows {
        assert!(heap > 0);
        assert!(
            estimated as i64 >= heap,
            "estimate {estimated} below the measured {heap}"
        );
    }
}
