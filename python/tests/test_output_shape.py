"""One output shape, the CLI's (`toolcall parse`, documented in the README): flat calls,
reasoning as a list of blocks, the same call whole and streamed."""

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
