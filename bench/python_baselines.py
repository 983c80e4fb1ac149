#!/usr/bin/env python3
"""Python peers on toolcall's benchmark corpus: json_repair and partial-json-parser.

Reads the corpus written by `cargo run --release -p toolcall-bench --bin make_corpus`
(the same seeded bytes the Rust benches use; generated here when missing), installs the
pinned peers from bench/requirements.txt into target/bench-venv on first use, and prints a
Markdown table. Both peers work on JSON documents, so they get the bare JSON of each case
(the bytes serde_json gets in the Rust floor); `json.loads` (C) is their floor.

Streaming for partial-json-parser is how servers use it: parse the whole accumulated
buffer again on every 64-byte push. Runs estimated above TOOLCALL_BENCH_MAX_S (default 20 s)
are reported as estimates, not run.
"""
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "bench-venv"
BUDGET = float(os.environ.get("TOOLCALL_BENCH_BUDGET_MS", "300")) / 1000
MAX_RUN = float(os.environ.get("TOOLCALL_BENCH_MAX_S", "20"))


def ensure_venv():
    """Re-executes inside target/bench-venv, creating it and installing the peers if needed."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "-r", str(ROOT / "bench" / "requirements.txt")],
            check=True,
        )
    os.execv(str(py), [str(py), __file__, *sys.argv[1:]])


def measure(fn):
    """Median seconds of fn() over as many runs as fit in BUDGET (at least 3)."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    if first >= BUDGET:
        return first
    reps = max(3, min(101, int(BUDGET / max(first, 1e-9))))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def main():
    ensure_venv()
    import json_repair
    import partial_json_parser

    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "bench-corpus"
    if not (corpus / "manifest.json").exists():
        subprocess.run(
            ["cargo", "run", "--release", "-q", "-p", "toolcall-bench", "--bin", "make_corpus", "--", str(corpus)],
            check=True,
            cwd=ROOT,
        )
    manifest = json.loads((corpus / "manifest.json").read_text())

    print("### Python peers on the bare JSON of each case\n")
    print(
        "json_repair 0.64.5 and partial-json-parser 0.2.1.1.post7 on CPython "
        f"{sys.version.split()[0]}; MB/s over the case's bare JSON bytes. "
        "`calls ok` = both peers returned the same value as `json.loads`.\n"
    )
    print(
        "| case | JSON bytes | json.loads MB/s | json_repair MB/s | partial-json-parser MB/s "
        "| partial-json-parser re-parse every 64 B | calls ok |"
    )
    print("|---|--:|--:|--:|--:|--:|:-:|")
    for case in manifest:
        if not case["json"]:
            continue
        docs = [(corpus / f).read_text() for f in case["json"]]
        size = sum(len(d.encode()) for d in docs)
        want = [json.loads(d) for d in docs]
        ok = all(json_repair.loads(d) == w for d, w in zip(docs, want)) and all(
            partial_json_parser.loads(d) == w for d, w in zip(docs, want)
        )
        floor = measure(lambda: [json.loads(d) for d in docs])
        repair = measure(lambda: [json_repair.loads(d) for d in docs])
        partial = measure(lambda: [partial_json_parser.loads(d) for d in docs])
        # Streaming: every document re-parsed from its start at each 64-byte push.
        pushes = sum(len(d) // 64 + 1 for d in docs)
        estimate = pushes * partial / 2
        if estimate > MAX_RUN:
            stream = f"> {fmt_time(estimate)} (est., not run)"
        else:
            def run_stream():
                for d in docs:
                    for end in range(64, len(d) + 64, 64):
                        try:
                            partial_json_parser.loads(d[:end])
                        except Exception:  # a prefix it cannot read yet: keep streaming
                            pass

            s = measure(run_stream)
            stream = f"{fmt_time(s)} ({s / partial:.0f}×)"
        mbs = lambda t: f"{size / t / 1e6:.1f}"
        print(
            f"| {case['name']} | {size} | {mbs(floor)} | {mbs(repair)} | {mbs(partial)} "
            f"| {stream} | {'yes' if ok else 'NO'} |"
        )


if __name__ == "__main__":
    main()
