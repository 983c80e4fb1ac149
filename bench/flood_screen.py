#!/usr/bin/env python3
"""Flood screen: what a reply made of one short unit repeated costs, against prose.

Each row is the instructions (callgrind, noise-free on a shared machine) of toolcall's parse
of 128 KB of a unit repeated, divided by the same parse of 128 KB of prose, both by the same
`bench_profile` binary (`flood:UNIT` / `flood:@prose`; issue 23's goal is every such ratio
<= 20). Units use Rust-style escapes (`\\n`, `\\t`, `\\u{..}`); inside a unit `{#}` is a
numbered copy suffix (0, 1, 2, ...) and `{w}` a worded one, expanded by bench_profile.

    cargo build --profile profiling -p toolcall-bench --bins --features peers
    python3 bench/flood_screen.py 'foo({#});\\n' '{}'            # the units given
    python3 bench/flood_screen.py --file bench/floods/hot.txt     # one unit a line
    python3 bench/flood_screen.py --random 300 --seed 48          # random units (below)
    python3 bench/flood_screen.py                                 # every bench unit

Each unit is screened with each of SUFFIXES appended ('|'-separated, Rust escapes; the
default '' screens the unit alone). Random units join a bench opener, a junk piece, sometimes
a second opener or junk piece, a copy suffix and sometimes a last junk piece: the shapes the
hand-written lists missed (session 48 found `{}` 555x and `{}<TOOLCALL>1,` 92x this way).

Output: `prose N`, then `RATIO COUNT CALLS 'unit'` per row in input order, CALLS being the
calls the parse found: a flood whose copies are real calls (`get_weather(){#}`) builds a call
each and is not an adversarial row. Needs valgrind.
Environment: B (binary, default target/profiling/bench_profile), MODE (one | stream64 ...,
default one), BYTES (131072), J (parallel runs, default 2).
"""
import argparse
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

B = os.environ.get("B", "target/profiling/bench_profile")
MODE = os.environ.get("MODE", "one")
BYTES = os.environ.get("BYTES", "131072")
J = int(os.environ.get("J", "2"))
JUNK = ["x", " ", "1,", '{"', "\\n", '"', ":", "}", "]", ")", '{"a":', '["', "\\t", 'x{"',
        '1,{"', '\\n{"', '{"\\n', "<", ">"]
COPY = ["{#}", "{w}", ""]


def unescape(s):
    """Rust-style escapes to the characters they name."""
    if "\\" not in s:
        return s
    s = re.sub(r"\\u\{([0-9a-fA-F]+)\}", lambda m: "\\U%08x" % int(m.group(1), 16), s)
    return s.encode("ascii", "backslashreplace").decode("unicode_escape")


def count(unit):
    """Instructions of toolcall's parse of the unit's flood (-1 when the run failed) and the
    calls it found (-1 when not reported)."""
    env = dict(os.environ, TOOLCALL_BENCH_FLOOD_BYTES=BYTES)
    run = subprocess.run(
        ["nice", "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         "--toggle-collect=toolcall_bench::ours::*", B, "flood:" + unit, MODE, "1"],
        env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", run.stderr)
    calls = re.search(r": (\d+) calls", run.stderr)
    return (int(m.group(1)) if m else -1), (int(calls.group(1)) if calls else -1)


def bench_units():
    out = subprocess.run([B, "floods"], capture_output=True, text=True, check=True).stdout
    return [line.split("\t", 1)[1] for line in out.splitlines() if "\t" in line]


def random_units(n, seed):
    """`n` distinct random units (escaped) built from the bench's openers and junk pieces."""
    rng = random.Random(seed)
    openers = bench_units()[:108]  # the single openers (the rest are their variants)
    seen, rows = set(), []
    while len(rows) < n:
        u = rng.choice(openers) + rng.choice(JUNK)
        if rng.random() < 0.35:
            u += rng.choice(openers + JUNK)
        u += rng.choice(COPY)
        if rng.random() < 0.3:
            u += rng.choice(JUNK)
        if u not in seen:
            seen.add(u)
            rows.append(u)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("units", nargs="*", help="units (Rust escapes)")
    ap.add_argument("--file", help="a file of units, one a line (Rust escapes)")
    ap.add_argument("--random", type=int, metavar="N", help="screen N random units")
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--list", action="store_true", help="print the units, run nothing")
    args = ap.parse_args()
    units = list(args.units)
    if args.file:
        with open(args.file, encoding="utf-8") as f:
            units += [line.rstrip("\n") for line in f if line.strip()]
    if args.random:
        units += random_units(args.random, args.seed)
    if not units:
        units = bench_units()
    sfx = os.environ.get("SUFFIXES", "")
    suffixes = sfx.split("|") if sfx else [""]
    rows = [u + s for u in units for s in suffixes]
    if args.list:
        print("\n".join(rows))
        return
    prose = count("@prose")[0]
    if prose <= 0:
        sys.exit(f"could not run {B} (build it with the command in this file's doc)")
    print(f"prose {prose}", flush=True)
    with ThreadPoolExecutor(J) as ex:
        for u, (c, calls) in zip(rows, ex.map(lambda r: count(unescape(r)), rows)):
            print(f"{c / prose:7.2f} {c:>11} {calls:>6} {unescape(u)!r}", flush=True)


if __name__ == "__main__":
    main()
