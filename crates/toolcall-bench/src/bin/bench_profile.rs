//! Runs one corpus case in one mode in a loop, for a profiler:
//! `perf record -g target/release/bench_profile "prose/1 MB" one 200`
//! Modes: `one` (one-shot), `stream<N>` (N-byte pushes, `push`), `into<N>` (N-byte pushes,
//! `push_into` with one reused event buffer), `events<N>` (N-byte pushes, `push_events`,
//! each event borrowed and looked at), `reparse<N>`, and `serde` (`serde_json` into a
//! `Value` on the case's bare JSON, the `tools_envelope` floor); built with `--features peers`
//! also `peer` (`tool-parser`'s one-shot on the same text) and `peerstream<N>` (its
//! `parse_incremental` in N-byte pushes, as `bench_table`'s peers table drives it), so
//! instruction counts of both parsers come from one binary.
//! A case `flood:UNIT` is UNIT repeated to `TOOLCALL_BENCH_FLOOD_BYTES` (default 2 MB) in
//! auto mode with the corpus registry, as `bench_table floods` builds it:
//! `valgrind --tool=callgrind target/profiling/bench_profile "flood:get_weather(" one 1`;
//! `flood#N` is the N-th of `corpus::flood_units` (`bench_profile floods` lists them) and
//! `flood:@prose` the prose baseline the floods table compares them with. A unit holding
//! `{#}` is numbered: each copy has its own number there (`"flood:get_weather({\"{#}"`), so
//! the copies differ; one holding `{w}` gets a word drawn for each copy (`corpus::FLOOD_WORDS`),
//! so they differ in letters and length too.

use std::hint::black_box;

use toolcall_bench::corpus;
use toolcall_bench::ours;

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next();
    if first.as_deref() == Some("floods") {
        for (i, u) in corpus::flood_units().iter().enumerate() {
            println!("{i}\t{}", u.escape_debug());
        }
        return;
    }
    let (Some(name), Some(mode)) = (first, args.next()) else {
        eprintln!(
            "usage: bench_profile <case name> <one|streamN|intoN|eventsN|reparseN|serde|peer|peerstreamN> [iterations]"
        );
        std::process::exit(2);
    };
    let iters: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100);
    let registry = corpus::registry();
    let unit = match name.strip_prefix("flood#") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .and_then(|n| corpus::flood_units().get(n).cloned()),
        None => name.strip_prefix("flood:").map(str::to_owned),
    };
    let flood = unit.map(|unit| {
        let bytes = std::env::var("TOOLCALL_BENCH_FLOOD_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2 << 20);
        let text = if unit == "@prose" {
            corpus::flood_prose(bytes)
        } else {
            corpus::adversarial(&unit, bytes)
        };
        corpus::Case {
            name: name.clone(),
            text,
            ..corpus::case("auto", corpus::Shape::Prose)
        }
    });
    let Some(case) = flood.or_else(|| corpus::case_by_name(&name)) else {
        eprintln!("no case {name:?}; cases:");
        for c in corpus::corpus() {
            eprintln!("  {}", c.name);
        }
        std::process::exit(2);
    };
    let opts = case.options(&registry);
    // A parse of the text's first 4 KB outside the measured functions builds what the first
    // parse builds once (the registry's validators, the opener table), so that
    // `valgrind --tool=callgrind --toggle-collect='toolcall_bench::ours::*'` counts only
    // the measured parses.
    let mut cut = case.text.len().min(4096);
    while !case.text.is_char_boundary(cut) {
        cut -= 1;
    }
    black_box(toolcall_parse::parse(&case.text[..cut], &opts));
    let size = |m: &str, prefix: &str| m.strip_prefix(prefix).and_then(|n| n.parse().ok());
    let mut calls = 0;
    if let Some(n) = size(&mode, "into") {
        let pushes = corpus::chunks(&case.text, n);
        for _ in 0..iters {
            calls = black_box(ours::stream_into(&pushes, &opts));
        }
    } else if let Some(n) = size(&mode, "events") {
        let pushes = corpus::chunks(&case.text, n);
        for _ in 0..iters {
            calls = black_box(ours::stream_events(&pushes, &opts));
        }
    } else if let Some(n) = size(&mode, "stream") {
        let pushes = corpus::chunks(&case.text, n);
        for _ in 0..iters {
            calls = black_box(ours::stream(&pushes, &opts));
        }
    } else if let Some(n) = size(&mode, "reparse") {
        let pushes = corpus::chunks(&case.text, n);
        for _ in 0..iters {
            calls = black_box(ours::reparse_every_push(&pushes, &opts));
        }
    } else if mode == "serde" {
        for _ in 0..iters {
            calls = black_box(
                case.json
                    .iter()
                    .filter(|d| serde_json::from_str::<serde_json::Value>(d).is_ok())
                    .count(),
            );
        }
    } else if mode == "peer" {
        calls = peer_one_shot(&case, iters);
    } else if let Some(n) = size(&mode, "peerstream") {
        calls = peer_stream(&case, n, iters);
    } else {
        for _ in 0..iters {
            calls = black_box(ours::one_shot(&case.text, &opts));
        }
    }
    eprintln!("{name} {mode} ×{iters}: {calls} calls");
}

#[cfg(feature = "peers")]
fn peer_one_shot(case: &corpus::Case, iters: usize) -> usize {
    let Some(parser) = case.peer().and_then(toolcall_bench::peers::make) else {
        eprintln!("{}: tool-parser does not read this case", case.name);
        std::process::exit(2);
    };
    let mut calls = 0;
    for _ in 0..iters {
        calls = black_box(toolcall_bench::peers::one_shot(parser.as_ref(), &case.text));
    }
    calls
}

#[cfg(feature = "peers")]
fn peer_stream(case: &corpus::Case, n: usize, iters: usize) -> usize {
    let Some(name) = case.peer() else {
        eprintln!("{}: tool-parser does not read this case", case.name);
        std::process::exit(2);
    };
    let pushes = corpus::chunks(&case.text, n);
    let tools = toolcall_bench::peers::tools();
    let mut calls = 0;
    for _ in 0..iters {
        calls = black_box(toolcall_bench::peers::stream(name, &pushes, &tools));
    }
    calls
}

#[cfg(not(feature = "peers"))]
fn peer_stream(_case: &corpus::Case, _n: usize, _iters: usize) -> usize {
    eprintln!("mode peerstream needs --features peers");
    std::process::exit(2);
}

#[cfg(not(feature = "peers"))]
fn peer_one_shot(_case: &corpus::Case, _iters: usize) -> usize {
    eprintln!("mode peer needs --features peers");
    std::process::exit(2);
}
