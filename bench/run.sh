#!/usr/bin/env bash
# Regenerates every table of BENCHMARKS.md in one run, printed as Markdown on stdout:
#   bench/run.sh > target/bench-tables.md
# Machine facts first, then the Rust tables (toolcall, serde_json floor, re-parse loop,
# tool-parser), peak memory, then the Python peers on the same seeded corpus. The scaling
# table is also drawn as bench/scaling.svg (log-log).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "### Machine"
echo
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "- $(rustc --version)"
echo "- load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo

cargo build --release -q -p toolcall-bench --features peers --bins
target/release/bench_table | tee target/bench-table.md
# The scaling table as a log-log plot, embedded in BENCHMARKS.md.
python3 bench/plot_scaling.py target/bench-table.md bench/scaling.svg
echo
target/release/bench_memory
echo
target/release/make_corpus target/bench-corpus 2>/dev/null
python3 bench/python_baselines.py target/bench-corpus
echo
echo "- load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
