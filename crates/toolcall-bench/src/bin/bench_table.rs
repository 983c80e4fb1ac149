//! Prints the summary tables of BENCHMARKS.md: toolcall one-shot and streamed against the
//! `serde_json` floor, the re-parse-every-push loop and (with `--features peers`) `tool-parser`,
//! all measured in this one run on the same corpus.
//!
//! `TOOLCALL_BENCH_TABLES` picks tables (comma-separated `main`, `peers`, `scaling`,
//! `adversarial`, `push`, `floods`; default all) and `TOOLCALL_BENCH_CASES` keeps only the main-table cases
//! whose name contains one of its comma-separated words (`kimi_k2,gpt_oss`).
//! `TOOLCALL_BENCH_BUDGET_MS` sets the time per figure (default 300 ms);
//! `TOOLCALL_BENCH_MAX_S` caps any single quadratic run (default 10 s): a run stopped by the
//! cap is reported as a lower bound with the share of pushes it got through.

use std::time::{Duration, Instant};

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

    /// Runs a possibly quadratic measurement: one run against a deadline of `max_run`; if it
    /// finishes, the usual median. `Err` describes the lower bound when it did not finish.
    fn capped(
        &self,
        total_pushes: usize,
        mut f: impl FnMut(Option<Instant>) -> Result<usize, usize>,
    ) -> Result<Sample, String> {
        let start = Instant::now();
        match f(Some(start + self.max_run)) {
            Err(done) => Err(format!(
                "> {} (stopped after {done} of {total_pushes} pushes)",
                fmt_time(start.elapsed())
            )),
            Ok(_) => Ok(measure(self.budget, || f(None).unwrap_or(0))),
        }
    }
}

fn show(r: &Result<Sample, String>) -> String {
    match r {
        Ok(s) => fmt_time(s.median),
        Err(e) => e.clone(),
    }
}

fn main() {
    let ctx = Ctx {
        budget: Duration::from_millis(env_num("TOOLCALL_BENCH_BUDGET_MS", 300)),
        max_run: Duration::from_secs(env_num("TOOLCALL_BENCH_MAX_S", 10)),
    };
    let registry = corpus::registry();
    let tables = std::env::var("TOOLCALL_BENCH_TABLES").unwrap_or_default();
    let wanted = |t: &str| tables.is_empty() || tables.split(',').any(|w| w.trim() == t);
    let filter = std::env::var("TOOLCALL_BENCH_CASES").unwrap_or_default();
    let cases: Vec<Case> = corpus::corpus()
        .into_iter()
        .filter(|c| filter.is_empty() || filter.split(',').any(|w| c.name.contains(w.trim())))
        .collect();

    if wanted("main") {
        main_table(&ctx, &cases, &registry);
    }
    #[cfg(feature = "peers")]
    if wanted("peers") {
        peers_table(&ctx, &cases, &registry);
    }
    if wanted("scaling") {
        scaling_table(&ctx, &registry);
    }
    if wanted("adversarial") {
        adversarial_table(&ctx, &registry);
    }
    if wanted("push") {
        push_table(&ctx, &registry);
    }
    if wanted("floods") {
        floods_table(&ctx, &registry);
    }
}

/// Openers repeated to 2 MB ([`corpus::flood_units`]: every literal opener of the registry
/// and a few other shapes): each parse's time against 2 MB of prose in the same run (goal:
/// every flood ≤ 20× prose). Auto mode with the corpus registry, so `computer_use(` and
/// `get_weather(` are registered call-syntax names.
fn floods_table(ctx: &Ctx, registry: &std::sync::Arc<toolcall_core::Registry>) {
    const BYTES: usize = 2 << 20;
    println!("\n### Opener floods: 2 MB of one opener, against 2 MB of prose\n");
    println!(
        "Auto mode, the corpus registry; `× prose` = time ÷ the prose row's time (goal ≤ 20×).\n"
    );
    println!("| input | bytes | one-shot | × prose | stream 64 B | × prose |");
    println!("|---|--:|--:|--:|--:|--:|");
    let opts = toolcall_parse::ParseOptions {
        tools: Some(std::sync::Arc::clone(registry)),
        ..toolcall_parse::ParseOptions::default()
    };
    let prose = corpus::flood_prose(BYTES);
    let row = |text: &str| {
        let one = ctx.time(|| ours::one_shot(text, &opts));
        let p64 = corpus::chunks(text, 64);
        let s64 = ctx.time(|| ours::stream(&p64, &opts));
        (text.len(), one.median, s64.median)
    };
    let (prose_len, prose_one, prose_s64) = row(&prose);
    println!(
        "| prose | {prose_len} | {} | 1.0× | {} | 1.0× |",
        fmt_time(prose_one),
        fmt_time(prose_s64)
    );
    for unit in corpus::flood_units() {
        let text = corpus::adversarial(&unit, BYTES);
        let (len, one, s64) = row(&text);
        println!(
            "| `` {} `` | {len} | {} | {:.1}× | {} | {:.1}× |",
            unit.escape_debug(),
            fmt_time(one),
            ratio(one, prose_one),
            fmt_time(s64),
            ratio(s64, prose_s64)
        );
    }
}

/// The fixed cost of a push: 1-byte pushes through `push` (a `Vec` returned per push) and
/// `push_into` (one reused buffer), per push and against the one-shot time of the same text.
fn push_table(ctx: &Ctx, registry: &std::sync::Arc<toolcall_core::Registry>) {
    println!("\n### Per push: 1-byte pushes, `push` and `push_into`\n");
    println!(
        "`ns/push` = total time ÷ pushes; `× one-shot` = total ÷ one-shot time of the same text. \
         `with events` = pushes that completed at least one event (the rest complete none).\n"
    );
    println!(
        "| case | pushes | with events | one-shot | `push` | ns/push | × one-shot | `push_into` | ns/push | × one-shot | `push_events` | ns/push | × one-shot |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for name in ["prose/1 MB", "json/1 MB args", "hermes/1 MB args"] {
        let Some(case) = corpus::case_by_name(name) else {
            continue;
        };
        let opts = case.options(registry);
        let text = case.text.as_str();
        let pushes = corpus::chunks(text, 1);
        let with_events = ours::pushes_with_events(&pushes, &opts);
        let one = ctx.time(|| ours::one_shot(text, &opts));
        let vec = ctx.time(|| ours::stream(&pushes, &opts));
        let into = ctx.time(|| ours::stream_into(&pushes, &opts));
        let events = ctx.time(|| ours::stream_events(&pushes, &opts));
        let per = |s: &Sample| s.median.as_secs_f64() * 1e9 / pushes.len() as f64;
        println!(
            "| {name} | {} | {with_events} | {} | {} | {:.1} | {:.1}× | {} | {:.1} | {:.1}× | {} | {:.1} | {:.1}× |",
            pushes.len(),
            fmt_time(one.median),
            fmt_time(vec.median),
            per(&vec),
            ratio(vec.median, one.median),
            fmt_time(into.median),
            per(&into),
            ratio(into.median, one.median),
            fmt_time(events.median),
            per(&events),
            ratio(events.median, one.median),
        );
    }
}

/// toolcall one-shot, streamed at 1, 4 and 64-byte pushes, the re-parse loop, the
/// `serde_json` floor.
fn main_table(ctx: &Ctx, cases: &[Case], registry: &std::sync::Arc<toolcall_core::Registry>) {
    println!("### toolcall: one-shot, streamed, re-parse loop, serde_json floor\n");
    println!(
        "Stream and re-parse columns are total time ÷ one-shot time on the same text (target: \
         stream ≤ 2×). `calls` = expected / one-shot / 1-byte stream.\n"
    );
    println!(
        "| case | bytes | calls | one-shot | one-shot MB/s | stream 1 B | stream 4 B | stream 64 B | re-parse every 64 B | serde_json MB/s | one-shot ÷ serde_json |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for case in cases {
        let opts = case.options(registry);
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
        // Largest push first: once a size hits the cap, smaller pushes (more of them, each
        // re-scanning as much) cannot finish either.
        let mut capped_at: Option<usize> = None;
        let mut by_size = Vec::new();
        for n in [64usize, 4, 1] {
            let pushes = corpus::chunks(text, n);
            let ours_s = ctx.time(|| ours::stream(&pushes, &opts));
            let peer_s = match capped_at {
                Some(m) => Err(format!("not run ({m} B pushes hit the cap)")),
                None => ctx.capped(pushes.len(), |d| {
                    peers::stream_until(name, &pushes, &tools, d)
                }),
            };
            match &peer_s {
                Ok(s) if n == 4 => peer_stream_calls = Some(s.result),
                Err(_) if capped_at.is_none() => capped_at = Some(n),
                _ => {}
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
                Err(_) => format!("> {:.0}×", ratio(ctx.max_run, o.median)),
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
    for kb in [16usize, 64, 256, 1024] {
        let case = corpus::case("hermes", Shape::Large(kb << 10));
        let opts = case.options(registry);
        let text = case.text.as_str();
        let one = ctx.time(|| ours::one_shot(text, &opts));
        let p4 = corpus::chunks(text, 4);
        let p64 = corpus::chunks(text, 64);
        let s4 = ctx.time(|| ours::stream(&p4, &opts));
        let s64 = ctx.time(|| ours::stream(&p64, &opts));
        let reparse = ctx.capped(p64.len(), |d| ours::reparse_until(&p64, &opts, d));
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
            let peer64 = ctx.capped(p64.len(), |d| {
                toolcall_bench::peers::stream_until(name, &p64, &tools, d)
            });
            let peer4 = if peer64.is_ok() {
                ctx.capped(p4.len(), |d| {
                    toolcall_bench::peers::stream_until(name, &p4, &tools, d)
                })
            } else {
                Err("not run (64 B hit the cap)".to_owned())
            };
            print!(" {} | {} |", show(&peer64), show(&peer4));
        }
        println!();
    }
}

/// Adversarial inputs at growing sizes, auto mode with the corpus registry: the growth per
/// row shows whether the parser is linear on them (4× per row) or not (16×). A row after one
/// that took longer than a sixteenth of the cap is skipped: it would run past the cap, and a
/// one-shot parse cannot be stopped midway.
fn adversarial_table(ctx: &Ctx, registry: &std::sync::Arc<toolcall_core::Registry>) {
    println!("\n### Adversarial inputs (auto mode)\n");
    println!(
        "Each input repeats a unit that opens a region and never closes it. Linear parsers \
         grow 4× per row (`growth` = this row ÷ the row above).\n"
    );
    println!("| input | bytes | one-shot | growth | stream 64 B | growth |");
    println!("|---|--:|--:|--:|--:|--:|");
    let opts = toolcall_parse::ParseOptions {
        tools: Some(std::sync::Arc::clone(registry)),
        ..toolcall_parse::ParseOptions::default()
    };
    for (label, unit) in corpus::ADVERSARIAL {
        let mut previous: Option<(Duration, Duration)> = None;
        for kb in [16usize, 64, 256, 1024] {
            let text = corpus::adversarial(unit, kb << 10);
            if previous.is_some_and(|(o, s)| o.max(s) * 16 > ctx.max_run) {
                println!(
                    "| {label} | {} | not run (the row above exceeded 1/16 of the cap) | | | |",
                    text.len()
                );
                continue;
            }
            let one = ctx.time(|| ours::one_shot(&text, &opts));
            let p64 = corpus::chunks(&text, 64);
            let s64 = ctx.time(|| ours::stream(&p64, &opts));
            let growth = |now: Duration, before: Option<Duration>| {
                before.map_or("–".to_owned(), |b| format!("{:.1}×", ratio(now, b)))
            };
            println!(
                "| {label} | {} | {} | {} | {} | {} |",
                text.len(),
                fmt_time(one.median),
                growth(one.median, previous.map(|p| p.0)),
                fmt_time(s64.median),
                growth(s64.median, previous.map(|p| p.1)),
            );
            previous = Some((one.median, s64.median));
        }
    }
}
