//! Time to build a constraint for 1, 10 and 100 tools, per family and dialect, against
//! compiling the same tools' JSON Schemas into a validating registry (what the gateway's
//! tools cache pays once per declaration) in the same run. Prints each constraint's size.
//!
//! `cargo bench -p toolcall-constrain --bench build`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use toolcall_constrain::{Dialect, Options, ToolChoice, build};
use toolcall_core::{Registry, ToolSpec};

/// `n` tools cycling through the parser fixtures' eight schemas, each with its own name.
fn tools(n: usize) -> Vec<ToolSpec> {
    let text = include_str!("../../toolcall-parse/tests/fixtures/families_tools.json");
    let base: Vec<ToolSpec> = serde_json::from_str(text).unwrap();
    (0..n)
        .map(|i| {
            let mut t = base[i % base.len()].clone();
            t.name = format!("{}_{i}", t.name);
            t
        })
        .collect()
}

/// Every family that declares a constraint shape, in registry order.
fn families() -> Vec<&'static str> {
    toolcall_parse::FormatId::all()
        .map(|f| f.as_str())
        .filter(|f| toolcall_constrain::shape(f).is_some())
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("constraint");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    let options = Options {
        choice: ToolChoice::Required,
        ..Options::default()
    };
    for n in [1usize, 10, 100] {
        let specs = tools(n);
        group.bench_with_input(
            BenchmarkId::new("baseline_registry", n),
            &specs,
            |b, specs| {
                b.iter(|| {
                    let mut r = Registry::new();
                    for s in specs {
                        r.add_spec(s.clone()).unwrap();
                    }
                    black_box(r)
                })
            },
        );
        for family in families() {
            for dialect in [Dialect::Gbnf, Dialect::StructuralTag] {
                let size = build(family, &specs, dialect, &options).unwrap().len();
                eprintln!("size {family}/{dialect}/{n}: {size} bytes");
                let id = BenchmarkId::new(format!("{family}/{dialect}"), n);
                group.bench_with_input(id, &specs, |b, specs| {
                    b.iter(|| black_box(build(family, specs, dialect, &options).unwrap()))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
