"""Every registered model family's fixture cases (crates/toolcall-parse/tests/fixtures/,
format in FAMILIES.md) through `parse` and `StreamParser` from Python: the calls the case
expects, and random chunkings equal to one-shot."""

import json
import os
import random
import re
from pathlib import Path

import pytest

import toolcall

ROOT = Path(os.environ.get("TOOLCALL_ROOT", Path(__file__).resolve().parents[2]))
FIXTURES = ROOT / "crates" / "toolcall-parse" / "tests" / "fixtures"
REGISTERED = {f["id"] for f in toolcall.formats()}


def pending_families():
    """Registered families whose fixtures describe behaviour still to come: the Rust harness's
    `PENDING` list (tests/families.rs), so both suites agree on what is expected to pass."""
    source = (ROOT / "crates" / "toolcall-parse" / "tests" / "families.rs").read_text()
    found = re.search(r"const PENDING: &\[&str\] = &\[(.*?)\];", source, flags=re.S)
    return set(re.findall(r'"([^"]+)"', found.group(1))) if found else set()


PENDING = pending_families()


def read_cases(path):
    """`=== case NAME` / output lines / `=== expect` / one JSON line, per FAMILIES.md."""
    cases, name, lines, expecting = [], None, [], False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("=== case "):
            name, lines, expecting = line[len("=== case ") :].strip(), [], False
        elif line == "=== expect" and name is not None:
            expecting = True
        elif expecting and line.strip():
            cases.append((name, "\n".join(lines), json.loads(line)))
            name, expecting = None, False
        elif name is not None and not expecting:
            lines.append(line)
    return cases


def family_cases():
    out = []
    for cases_file in sorted(FIXTURES.glob("*/cases.txt")):
        family = cases_file.parent.name
        if family not in REGISTERED or family in PENDING:
            continue  # fixtures written ahead of the family's reader
        for name, text, expect in read_cases(cases_file):
            out.append(pytest.param(family, text, expect, id=f"{family}-{name}"))
    return out


CASES = family_cases()


@pytest.fixture(scope="module")
def family_tools():
    return toolcall.Toolset.from_file(FIXTURES / "families_tools.json")


def test_fixture_files_are_read():
    for cases_file in FIXTURES.glob("*/cases.txt"):
        cases = read_cases(cases_file)
        assert cases, cases_file
        assert all(isinstance(expect, dict) for _, _, expect in cases)


def events_calls(events):
    return [e["call"] for e in events if e["event"] == "call_finished"]


@pytest.mark.parametrize("family,text,expect", CASES)
def test_family_case_whole_and_streamed(family, text, expect, family_tools):
    kw = dict(
        tools=family_tools if expect.get("tools", True) else None,
        format=family,
        starts_in_reasoning=expect.get("starts_in_reasoning", False),
        finish_reason=expect.get("end"),
    )
    whole = toolcall.parse(text, **kw)
    got = [{"name": c["name"], "arguments": c["arguments"]} for c in whole["calls"]]
    want = [{"name": c["name"], "arguments": c["arguments"]} for c in expect.get("calls", [])]
    assert got == want
    for call, expected in zip(whole["calls"], expect.get("calls", [])):
        assert call["format"] == family
        if "id" in expected:
            assert call["call_id"] == expected["id"]
    strip = lambda c: {k: v for k, v in c.items() if k != "call_id"}
    data = text.encode()
    rng = random.Random(f"{family}:{text}")
    parser = toolcall.StreamParser(kw.pop("tools"), **kw)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 16)))) if len(data) > 1 else []
        chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]
        parser.reset()
        events = list(parser.stream(chunks))
        assert [strip(c) for c in events_calls(events)] == [strip(c) for c in whole["calls"]]
        assert "".join(e["text"] for e in events if e["event"] == "text") == whole["text"]
