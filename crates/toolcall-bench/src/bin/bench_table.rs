//! Prints the summary tables of BENCHMARKS.md: toolcall one-shot and streamed against the
//! `serde_json` floor, the re-parse-every-push loop and (with `--features peers`) `tool-parser`,
//! all measured in this one run on the same corpus.
//!
//! `TOOLCALL_BENCH_BUDGET_MS` sets the time per figure (default 300 ms);
//! `TOOLCALL_BENCH_MAX_S` caps any single quadratic run (default 20 s): a run estimated to
//! exceed it is reported as an estimate instead of being run.

use std::time::Duration;

use serde_json::Value;
use toolcall_bench::corpus::{self, Case, Shape};
use toolcall_bench::ours;
use toolcall_bench::timing::{Sample, measure};

const PUSHES: [usize; 3] = [1, 4, 64];

fn env_num(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fmt_time(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}

fn serde_floor(case: &Case) -> usize {
    case.json
        .iter()
        .filter(|d| serde_json::from_str::<Value>(d).is_ok())
        .count()
}

struct Ctx {
    budget: Duration,
    max_run: Duration,
}

impl Ctx {
    fn time(&self, f: impl FnMut() -> usize) -> Sample {
        measure(self.budget, f)
    }

    /// Runs a possibly quadratic measurement unless `estimate` says it would exceed the cap.
    fn capped(
        &self,
        estimate: Option<Duration>,
        f: impl FnMut() -> usize,
    ) -> Result<Sample, Duration> {
        match estimate {
            Some(e) if e > self.max_run => Err(e),
            _ => Ok(measure(self.budget, f)),
        }
    }
}

fn show(r: &Result<Sample, Duration>) -> String {
    match r {
        Ok(s) => fmt_time(s.median),
        Err(e) => format!("> {} (est., not run)", fmt_time(*e)),
    }
}

fn main() {
    let ctx = Ctx {
        budget: Duration::from_millis(env_num("TOOLCALL_BENCH_BUDGET_MS", 300)),
        max_run: Duration::from_secs(env_num("TOOLCALL_BENCH_MAX_S", 20)),
    };
    let registry = corpus::registry();
    let cases = corpus::corpus();

    println!("### toolcall: one-shot, streamed, re-parse loop, serde_json floor\n");
    println!(
        "Stream and re-parse columns are total time ÷ one-shot time on the same text (target: \
         stream ≤ 2×). `calls` = expected / one-shot / 1-byte stream.\n"
    );
    println!(
        "| case | bytes | calls | one-shot | one-shot MB/s | stream 1 B | stream 4 B | stream 64 B | re-parse every 64 B | serde_json MB/s | one-shot ÷ serde_json |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for case in &cases {
        let opts = case.options(&registry);
        let text = case.text.as_str();
        let one = ctx.time(|| ours::one_shot(text, &opts));
        let mut streams = Vec::new();
        let mut stream1_calls = 0;
        for n in PUSHES {
            let pushes = corpus::chunks(text, n);
            let s = ctx.time(|| ours::stream(&pushes, &opts));
            if n == 1 {
                stream1_calls = s.result;
            }
            streams.push(format!("{:.2}×", ratio(s.median, one.median)));
        }
        // The 1 MB texts re-parsed every 64 B take minutes; the scaling table covers them.
        let reparse = if matches!(case.shape, Shape::Small | Shape::Many) {
            let pushes = corpus::chunks(text, 64);
            let s = ctx.time(|| ours::reparse_every_push(&pushes, &opts));
            format!("{:.1}×", ratio(s.median, one.median))
        } else {
            "see scaling".into()
        };
        let (floor, vs) = if case.json.is_empty() {
            ("–".to_owned(), "–".to_owned())
        } else {
            let bytes: usize = case.json.iter().map(String::len).sum();
            let s = ctx.time(|| serde_floor(case));
            (
                format!("{:.0}", s.mb_per_s(bytes)),
                format!("{:.2}×", ratio(one.median, s.median)),
            )
        };
        println!(
            "| {} | {} | {} / {} / {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
            case.name,
            text.len(),
            case.expected_calls,
            one.result,
            stream1_calls,
            fmt_time(one.median),
            one.mb_per_s(text.len()),
            streams[0],
            streams[1],
            streams[2],
            reparse,
            floor,
            vs
        );
    }

    #[cfg(feature = "peers")]
    peers_table(&ctx, &cases, &registry);

    scaling_table(&ctx, &registry);
}

#[cfg(feature = "peers")]
fn peers_table(ctx: &Ctx, cases: &[Case], registry: &std::sync::Arc<toolcall_core::Registry>) {
    use toolcall_bench::peers;
    let tools = peers::tools();
    println!("\n### toolcall vs tool-parser 1.10 (SGLang gateway) on the shared formats\n");
    println!(
        "Times are medians; `×` = tool-parser time ÷ toolcall time (above 1: toolcall is \
         faster). `calls` = toolcall / tool-parser (one-shot, then 4-byte stream); ⚠ marks a \
         stream in which tool-parser reported fewer calls than the reply holds.\n"
    );
    println!(
        "| case | calls | one-shot toolcall | one-shot tool-parser | × | stream 1 B toolcall / tool-parser | × | stream 4 B | × | stream 64 B | × |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for case in cases {
        let Some(name) = case.peer() else { continue };
        let Some(parser) = peers::make(name) else {
            continue;
        };
        let opts = case.options(registry);
        let text = case.text.as_str();
        let ours_one = ctx.time(|| ours::one_shot(text, &opts));
        let peer_one = ctx.time(|| peers::one_shot(parser.as_ref(), text));
        let mut cells = Vec::new();
        let mut peer_stream_calls = None;
        // Largest push first: its time bounds the estimate for the smaller (more) pushes.
        let mut prev: Option<(usize, Duration)> = None;
        let mut by_size = Vec::new();
        for n in [64usize, 4, 1] {
            let pushes = corpus::chunks(text, n);
            let ours_s = ctx.time(|| ours::stream(&pushes, &opts));
            // A re-parsing streamer costs at least (pushes ratio) × the previous time.
            let est = prev.map(|(pn, d)| d.mul_f64(pn as f64 / n as f64));
            let peer_s = ctx.capped(est, || peers::stream(name, &pushes, &tools));
            if let Ok(s) = &peer_s {
                prev = Some((n, s.median));
                if n == 4 {
                    peer_stream_calls = Some(s.result);
                }
            }
            by_size.push((n, ours_s, peer_s));
        }
        by_size.reverse();
        for (_, o, p) in &by_size {
            let lost = match p {
                Ok(p) if p.result != case.expected_calls => {
                    format!(" ⚠ {}/{} calls", p.result, case.expected_calls)
                }
                _ => String::new(),
            };
            cells.push(format!("{} / {}{lost}", fmt_time(o.median), show(p)));
            cells.push(match p {
                Ok(p) => format!("{:.1}×", ratio(p.median, o.median)),
                Err(e) => format!("> {:.0}×", ratio(*e, o.median)),
            });
        }
        println!(
            "| {} | {} / {} / {} | {} | {} | {:.1}× | {} |",
            case.name,
            ours_one.result,
            peer_one.result,
            peer_stream_calls.map_or("–".into(), |c| c.to_string()),
            fmt_time(ours_one.median),
            fmt_time(peer_one.median),
            ratio(peer_one.median, ours_one.median),
            cells.join(" | ")
        );
    }
}

/// The large case at growing argument sizes: linear streaming against the quadratic loops.
fn scaling_table(ctx: &Ctx, registry: &std::sync::Arc<toolcall_core::Registry>) {
    println!("\n### Scaling with argument size (hermes, one call)\n");
    println!(
        "Linear parsers grow 4× per row; re-parsing the whole text on every push grows ~16×.\n"
    );
    #[cfg(feature = "peers")]
    let tools = toolcall_bench::peers::tools();
    print!("| args | bytes | one-shot | stream 4 B | stream 64 B | re-parse every 64 B |");
    #[cfg(feature = "peers")]
    print!(" tool-parser stream 64 B | tool-parser stream 4 B |");
    println!();
    print!("|---|--:|--:|--:|--:|--:|");
    #[cfg(feature = "peers")]
    print!("--:|--:|");
    println!();
    let mut prev_reparse: Option<Duration> = None;
    #[cfg(feature = "peers")]
    let mut prev_peer: Option<Duration> = None;
    for kb in [16usize, 64, 256, 1024] {
        let case = corpus::case("hermes", Shape::Large(kb << 10));
        let opts = case.options(registry);
        let text = case.text.as_str();
        let one = ctx.time(|| ours::one_shot(text, &opts));
        let p4 = corpus::chunks(text, 4);
        let p64 = corpus::chunks(text, 64);
        let s4 = ctx.time(|| ours::stream(&p4, &opts));
        let s64 = ctx.time(|| ours::stream(&p64, &opts));
        let reparse = ctx.capped(prev_reparse.map(|d| d * 16), || {
            ours::reparse_every_push(&p64, &opts)
        });
        prev_reparse = reparse
            .as_ref()
            .map(|s| s.median)
            .ok()
            .or(prev_reparse.map(|d| d * 16));
        print!(
            "| {} | {} | {} | {} | {} | {} |",
            case.shape.label(),
            text.len(),
            fmt_time(one.median),
            fmt_time(s4.median),
            fmt_time(s64.median),
            show(&reparse)
        );
        #[cfg(feature = "peers")]
        {
            let name = "qwen";
            let peer64 = ctx.capped(prev_peer.map(|d| d * 16), || {
                toolcall_bench::peers::stream(name, &p64, &tools)
            });
            prev_peer = peer64
                .as_ref()
                .map(|s| s.median)
                .ok()
                .or(prev_peer.map(|d| d * 16));
            let est4 = prev_peer.map(|d| d * 16);
            let peer4 = ctx.capped(est4, || toolcall_bench::peers::stream(name, &p4, &tools));
            print!(" {} | {} |", show(&peer64), show(&peer4));
        }
        println!();
    }
}
