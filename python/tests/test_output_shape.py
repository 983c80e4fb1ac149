"""One output shape, the CLI's (`toolcall parse`, documented in the README): flat calls,
reasoning as a list of blocks, the same call whole and streamed."""

import json

import toolcall

CALL_KEYS = ["call_id", "name", "arguments", "format", "span", "repairs"]
REPLY = '<think>first</think>Hi <tool_call>{"name": "a", "arguments": {"x": 1,}}</tool_call><think>second</think>'


def test_whole_and_streamed_calls_have_the_cli_shape():
    parsed = toolcall.parse(REPLY)
    assert sorted(parsed) == ["calls", "diagnostics", "reasoning", "text"]
    assert parsed["reasoning"] == ["first", "second"]
    [call] = parsed["calls"]
    assert sorted(call) == sorted(CALL_KEYS)
    events = list(toolcall.StreamParser().stream([REPLY[:20], REPLY[20:]]))
    [finished] = [e for e in events if e["event"] == "call_finished"]
    streamed = dict(finished["call"], call_id=call["call_id"])
    assert streamed == call


def test_call_keys_keep_their_order():
    [call] = toolcall.parse(REPLY)["calls"]
    assert list(call) == ["call_id", "name", "arguments", "format", "repairs", "span"]


def test_values_built_for_one_result_are_the_json_values_and_independent():
    # Keys and values alike in length and end bytes (one slot of the binding's `str` reuse)
    # but different, repeated across calls, and nested.
    args = [
        {"axb": "ayb", "azb": ["axb", "ayb"], "ayb": {"axb": "azb"}, "n": 8099},
        {"ayb": "axb", "azb": "azb", "axb": [{"ayb": 1}, {"axb": 2}], "n": 8099},
        {"x" * 32: "y" * 32, "x" * 64: "y" * 64, "x" * 65: "y" * 65, "": ""},
    ]
    reply = json.dumps([{"name": f"f{i}", "arguments": a} for i, a in enumerate(args)])
    parsed = toolcall.parse(reply, format="json")
    assert [c["arguments"] for c in parsed["calls"]] == args
    assert [list(c["arguments"]) for c in parsed["calls"]] == [list(a) for a in args]
    first, second, _ = parsed["calls"]
    # Mutable values are never shared between calls or diagnostics.
    assert first["span"] == second["span"] and first["span"] is not second["span"]
    first["span"].append(0)
    first["arguments"]["azb"].append("new")
    assert second["span"] == [0, len(reply)]
    assert first["repairs"] is not second["repairs"]
    spans = [d["span"] for d in parsed["diagnostics"]] + [c["span"] for c in parsed["calls"]]
    assert len({id(s) for s in spans}) == len(spans)
    # Each call dict is its own (the binding copies one template per call).
    first["name"] = "changed"
    assert toolcall.parse(reply, format="json")["calls"][0]["name"] == "f0"
    assert second["name"] == "f1"


def test_strings_reused_across_results_are_the_right_ones():
    # The binding keeps short `str`s from result to result (1024 of them, by a hash of the
    # text): more distinct keys and values than it keeps, ASCII and not, of equal lengths,
    # and each reply parsed twice, must come back as the JSON's own text every time.
    keys = [f"k{i:04}" for i in range(3000)] + [f"ключ{i}" for i in range(300)]
    for _ in range(2):
        for start in range(0, len(keys), 500):
            args = {k: k[::-1] for k in keys[start : start + 500]}
            reply = json.dumps([{"name": "f", "arguments": args}], ensure_ascii=False)
            [call] = toolcall.parse(reply, format="json")["calls"]
            assert call["arguments"] == args
            assert list(call["arguments"]) == list(args)


def test_call_and_diagnostic_dicts_are_new_for_every_result_and_format():
    # Call dicts are copied from a template holding the format, diagnostics from one per
    # level: calls of two formats in one reply, then changes to one result, must not show
    # in the calls and diagnostics of the next.
    reply = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call> and <function=b>{"x": 1}</function>'
        ' <tool_call>{"name": "c", "arguments": {}}</tool_call>'
    )
    first = toolcall.parse(reply)
    assert [(c["name"], c["format"]) for c in first["calls"]] == [
        ("a", "hermes"),
        ("b", "functionary_v3_1"),
        ("c", "hermes"),
    ]
    for c in first["calls"]:
        c["format"] = "changed"
        c["repairs"].append("changed")
    for d in first["diagnostics"]:
        d["level"] = "changed"
        d["extra"] = 1
    again = toolcall.parse(reply)
    assert [c["format"] for c in again["calls"]] == ["hermes", "functionary_v3_1", "hermes"]
    assert all(c["repairs"] == [] for c in again["calls"])
    assert {d["level"] for d in again["diagnostics"]} == {"info"}
    assert all(sorted(d) == ["level", "message", "span"] for d in again["diagnostics"])
    assert [list(c) for c in again["calls"]] == [CALL_KEYS_IN_ORDER] * 3
    cut = '<tool_call>{"name": "a", "arguments": {"x": 1</tool_call>'
    [error] = toolcall.parse(cut, format="hermes")["diagnostics"]
    assert error["level"] == "error"
    error["level"] = "info"
    assert [d["level"] for d in toolcall.parse(cut, format="hermes")["diagnostics"]] == ["error"]
    assert {d["level"] for d in toolcall.parse(reply)["diagnostics"]} == {"info"}


CALL_KEYS_IN_ORDER = ["call_id", "name", "arguments", "format", "repairs", "span"]
