//! Criterion benches of toolcall's parser over the corpus: one-shot throughput, streaming
//! with 1/4/64-byte pushes, the re-parse-every-push loop (small cases) and the `serde_json`
//! floor on the same JSON bytes. `bench_table` prints the side-by-side summary.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use toolcall_bench::corpus::{self, Shape};
use toolcall_bench::ours;

fn parse_benches(c: &mut Criterion) {
    let registry = corpus::registry();
    for case in corpus::corpus() {
        let opts = case.options(&registry);
        let text = case.text.as_str();
        let mut g = c.benchmark_group(case.name.as_str());
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function("one_shot", |b| {
            b.iter(|| ours::one_shot(black_box(text), &opts))
        });
        for n in [1usize, 4, 64] {
            let pushes = corpus::chunks(text, n);
            g.bench_function(format!("stream_{n}B"), |b| {
                b.iter(|| ours::stream(black_box(&pushes), &opts))
            });
        }
        if matches!(case.shape, Shape::Small | Shape::Many) {
            let pushes = corpus::chunks(text, 64);
            g.bench_function("reparse_every_64B", |b| {
                b.iter(|| ours::reparse_every_push(black_box(&pushes), &opts))
            });
        }
        if !case.json.is_empty() {
            let bytes: usize = case.json.iter().map(String::len).sum();
            g.throughput(Throughput::Bytes(bytes as u64));
            g.bench_function("serde_json_floor", |b| {
                b.iter(|| {
                    case.json
                        .iter()
                        .filter(|d| serde_json::from_str::<Value>(black_box(d)).is_ok())
                        .count()
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, parse_benches);
criterion_main!(benches);
