#!/usr/bin/env python3
"""toolcall from Python beside the Python peers on toolcall's benchmark corpus: json_repair,
partial-json-parser and json.loads.

Reads the corpus written by `cargo run --release -p toolcall-bench --bin make_corpus`
(the same seeded bytes the Rust benches use; generated here when missing), installs the
pinned peers from bench/requirements.txt into target/bench-venv on first use, builds the
`toolcall` package from python/ (release wheel, maturin) and installs it there on every run,
and prints a Markdown table. Both peers work on JSON documents, so they get the bare JSON of
each case (the bytes serde_json gets in the Rust floor); `json.loads` (C) is their floor.
`toolcall.parse` gets the whole reply with the case's format and the corpus tools, as the
Rust benches do; `toolcall.StreamParser` gets the reply in 4-byte `feed` calls.

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


def install_toolcall():
    """Builds the release wheel of python/ and installs it into the bench venv."""
    # A bench venv made before maturin joined the requirements gets it here.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "-r", str(ROOT / "bench" / "requirements.txt")],
        check=True,
    )
    wheels = ROOT / "target" / "bench-wheels"
    for old in wheels.glob("*.whl"):
        old.unlink()
    subprocess.run(
        [sys.executable, "-m", "maturin", "build", "--release", "--quiet",
         "--interpreter", sys.executable, "--manifest-path", str(ROOT / "python" / "Cargo.toml"),
         "--out", str(wheels)],
        check=True,
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps",
         *map(str, wheels.glob("*.whl"))],
        check=True,
    )


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
    install_toolcall()
    import json_repair
    import partial_json_parser

    import toolcall

    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "bench-corpus"
    if not (corpus / "manifest.json").exists():
        subprocess.run(
            ["cargo", "run", "--release", "-q", "-p", "toolcall-bench", "--bin", "make_corpus", "--", str(corpus)],
            check=True,
            cwd=ROOT,
        )
    manifest = json.loads((corpus / "manifest.json").read_text())
    tools = toolcall.Toolset.from_file(corpus / "tools.json")

    print("### toolcall from Python, beside the Python peers\n")
    print(
        f"toolcall {toolcall.__version__} (release wheel), json_repair 0.64.5 and "
        f"partial-json-parser 0.2.1.1.post7 on CPython {sys.version.split()[0]}. "
        "`toolcall.parse` reads the whole reply (MB/s over the reply's bytes) and returns "
        "dicts; `StreamParser` is fed the reply 4 bytes at a time (total time, and its ratio "
        "to one-shot). The peers read the case's bare JSON (MB/s over those bytes; — where "
        "the format is not JSON). `calls ok` = toolcall found the expected calls one-shot "
        "and streamed, and both peers returned `json.loads`'s value.\n"
    )
    print(
        "| case | reply bytes | toolcall.parse MB/s | StreamParser 4 B pushes | JSON bytes "
        "| json.loads MB/s | json_repair MB/s | partial-json-parser MB/s "
        "| partial-json-parser re-parse every 64 B | calls ok |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|")
    for case in manifest:
        text = (corpus / case["text"]).read_text()
        reply_size = len(text.encode())
        fmt = case["format"]
        data = text.encode()
        pieces = [data[i : i + 4] for i in range(0, len(data), 4)]

        def one_shot():
            return toolcall.parse(text, tools=tools, format=fmt)

        def streamed():
            parser = toolcall.StreamParser(tools, format=fmt)
            calls = 0
            for piece in pieces:
                for event in parser.feed(piece):
                    calls += event["event"] == "call_finished"
            for event in parser.finish():
                calls += event["event"] == "call_finished"
            return calls

        ok = len(one_shot()["calls"]) == case["expected_calls"] == streamed()
        ours = measure(one_shot)
        ours_stream = measure(streamed)
        ours_cells = (
            f"{reply_size / ours / 1e6:.1f} | {fmt_time(ours_stream)} ({ours_stream / ours:.1f}×)"
        )
        if not case["json"]:
            print(
                f"| {case['name']} | {reply_size} | {ours_cells} | — | — | — | — | — "
                f"| {'yes' if ok else 'NO'} |"
            )
            continue
        docs = [(corpus / f).read_text() for f in case["json"]]
        size = sum(len(d.encode()) for d in docs)
        want = [json.loads(d) for d in docs]
        ok = ok and all(json_repair.loads(d) == w for d, w in zip(docs, want)) and all(
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
            f"| {case['name']} | {reply_size} | {ours_cells} | {size} | {mbs(floor)} "
            f"| {mbs(repair)} | {mbs(partial)} | {stream} | {'yes' if ok else 'NO'} |"
        )


if __name__ == "__main__":
    main()
