#!/usr/bin/env python3
"""Draws the scaling table of `bench_table` as a log-log SVG plot.

    python3 bench/plot_scaling.py TABLES.md OUT.svg

Reads the first Markdown table after a `### Scaling` heading (columns: label, bytes, then one
time per contender: `10.4 µs`, `2.53 ms`, `> 10.08 s (stopped ...)` for a run stopped at the
cap, `not run ...`), and plots input size against time, one line per contender. A stopped run
is drawn as an open marker at its cap with an arrow up: the true time is larger. Standard
library only, so the bench script needs nothing installed to draw it.
"""

import math
import re
import sys

UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]
W, H = 760, 500
LEFT, RIGHT, TOP, BOTTOM = 80, 250, 40, 60


def parse_time(cell):
    """(seconds, is_lower_bound) or None."""
    m = re.match(r"\s*(>)?\s*([0-9.]+)\s*(ns|µs|us|ms|s)\b", cell)
    if not m:
        return None
    return float(m.group(2)) * UNITS[m.group(3)], m.group(1) is not None


def read_table(text):
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("### Scaling")), None)
    if start is None:
        sys.exit("no '### Scaling' table in the input")
    block = []
    for l in lines[start + 1 :]:
        if l.startswith("|"):
            block.append(l)
        elif block:
            break
    header = [c.strip() for c in block[0].strip("|").split("|")]
    series = {name: [] for name in header[2:]}
    for row in block[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        size = int(cells[1])
        for name, cell in zip(header[2:], cells[2:]):
            t = parse_time(cell)
            if t:
                series[name].append((size, t[0], t[1]))
    return header[2:], series


def log_axis(lo, hi):
    return math.floor(math.log10(lo)), math.ceil(math.log10(hi))


def label_time(e):
    s = 10.0**e
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= f:
            return f"{s / f:g} {unit}"
    return f"{s:g} s"


def label_size(e):
    b = 10.0**e
    for unit, f in (("MB", 1e6), ("KB", 1e3)):
        if b >= f:
            return f"{b / f:g} {unit}"
    return f"{b:g} B"


def svg(names, series):
    points = [p for n in names for p in series[n]]
    xe = log_axis(min(p[0] for p in points), max(p[0] for p in points))
    ye = log_axis(min(p[1] for p in points), max(p[1] for p in points) * 3)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(v):
        return LEFT + (math.log10(v) - xe[0]) / (xe[1] - xe[0]) * pw

    def y(v):
        return TOP + ph - (math.log10(v) - ye[0]) / (ye[1] - ye[0]) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">Parse time against input size '
        "(one call, log-log; lower is better)</text>",
    ]
    for e in range(ye[0], ye[1] + 1):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y(10**e):.1f}" y2="{y(10**e):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(10**e) + 4:.1f}" text-anchor="end">{label_time(e)}</text>')
    for e in range(xe[0], xe[1] + 1):
        out.append(f'<line x1="{x(10**e):.1f}" x2="{x(10**e):.1f}" y1="{TOP}" y2="{TOP + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x(10**e):.1f}" y="{TOP + ph + 18}" text-anchor="middle">{label_size(e)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 18}" text-anchor="middle">input bytes</text>')
    for i, name in enumerate(names):
        c = COLOURS[i % len(COLOURS)]
        pts = series[name]
        if not pts:
            continue
        path = " ".join(f"{x(s):.1f},{y(t):.1f}" for s, t, _ in pts)
        dash = ' stroke-dasharray="5,3"' if "re-parse" in name or "tool-parser" in name else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for s, t, lower in pts:
            fill = "white" if lower else c
            out.append(f'<circle cx="{x(s):.1f}" cy="{y(t):.1f}" r="4" fill="{fill}" stroke="{c}" stroke-width="2"/>')
            if lower:
                out.append(f'<line x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{y(t) - 5:.1f}" y2="{y(t) - 18:.1f}" stroke="{c}" stroke-width="2"/>')
        ly = TOP + 14 + i * 20
        out.append(f'<line x1="{LEFT + pw + 14}" x2="{LEFT + pw + 38}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/>')
        who = name if name.startswith("tool-parser") else "toolcall " + name
        out.append(f'<text x="{LEFT + pw + 44}" y="{ly + 4}">{who}</text>')
    ly = TOP + 14 + len(names) * 20 + 10
    out.append(f'<text x="{LEFT + pw + 14}" y="{ly}" fill="#555">open marker: stopped at the</text>')
    out.append(f'<text x="{LEFT + pw + 14}" y="{ly + 15}" fill="#555">time cap (true time larger)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        names, series = read_table(f.read())
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(svg(names, series))


if __name__ == "__main__":
    main()
