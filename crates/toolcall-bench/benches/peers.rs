//! Criterion benches of `tool-parser` 1.10 (the SGLang gateway's parser) on the formats it
//! shares with toolcall, over the same corpus cases as `benches/parse.rs` (whose group names
//! they reuse, so criterion reports sit side by side). Needs `--features peers`.
//!
//! Streaming is benched for the small and 100-call cases only: on the 1 MB case the peer
//! re-scans its buffer on every push and one iteration takes seconds (`bench_table` measures
//! it once, with a time cap).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolcall_bench::corpus::{self, Shape};
use toolcall_bench::peers;

fn peer_benches(c: &mut Criterion) {
    let tools = peers::tools();
    for case in corpus::corpus() {
        let Some(name) = case.peer() else { continue };
        let Some(parser) = peers::make(name) else {
            continue;
        };
        let text = case.text.as_str();
        let mut g = c.benchmark_group(case.name.as_str());
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function("tool_parser_one_shot", |b| {
            b.iter(|| peers::one_shot(parser.as_ref(), black_box(text)))
        });
        if matches!(case.shape, Shape::Small | Shape::Many) {
            for n in [1usize, 4, 64] {
                let pushes = corpus::chunks(text, n);
                g.bench_function(format!("tool_parser_stream_{n}B"), |b| {
                    b.iter(|| peers::stream(name, black_box(&pushes), &tools))
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, peer_benches);
criterion_main!(benches);
