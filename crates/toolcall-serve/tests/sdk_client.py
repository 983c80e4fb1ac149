"""The official openai package against `toolcall serve` (argv: base URL, fixtures, tools).

For every recorded model output: the whole reply has native tool calls with ids; the SDK's
own stream accumulation gives the same calls and text; the Responses API likewise. Then
upstream faults surface as the SDK's errors. Exits non-zero on the first mismatch.
"""
import json
import sys

import openai

base, fixtures_path, tools_path = sys.argv[1:4]
fixtures = json.load(open(fixtures_path))
tools = json.load(open(tools_path))
client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0, timeout=30)
messages = [{"role": "user", "content": "What is the weather?"}]


def calls_of(tool_calls):
    out = []
    for c in tool_calls or []:
        assert c.id, c
        assert c.type == "function", c
        out.append({"name": c.function.name, "arguments": json.loads(c.function.arguments)})
    return out


checked = 0
for f in fixtures:
    about = f["about"]
    whole = client.chat.completions.create(model=f["model"], messages=messages, tools=tools)
    w = whole.choices[0]
    assert calls_of(w.message.tool_calls) == f["calls"], (about, w)
    assert (w.message.content or "").strip() == f["content"], (about, w.message.content)
    assert w.finish_reason == ("tool_calls" if f["calls"] else "stop"), (about, w.finish_reason)

    with client.chat.completions.stream(model=f["model"], messages=messages, tools=tools) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    s = final.choices[0]
    assert calls_of(s.message.tool_calls) == calls_of(w.message.tool_calls), (about, s, w)
    assert (s.message.content or "").strip() == (w.message.content or "").strip(), (about, s, w)
    assert s.finish_reason == w.finish_reason, (about, s.finish_reason, w.finish_reason)

    flat = [{"type": "function", **t["function"]} for t in tools]
    r = client.responses.create(model=f["model"], input="What is the weather?", tools=flat)
    r_calls = [{"name": o.name, "arguments": json.loads(o.arguments)} for o in r.output if o.type == "function_call"]
    assert r_calls == f["calls"], (about, r.output)
    assert all(o.call_id for o in r.output if o.type == "function_call"), r.output
    assert r.output_text.strip() == f["content"], (about, r.output_text)
    with client.responses.stream(model=f["model"], input="What is the weather?", tools=flat) as rs:
        for _ in rs:
            pass
        rf = rs.get_final_response()
    rs_calls = [{"name": o.name, "arguments": json.loads(o.arguments)} for o in rf.output if o.type == "function_call"]
    assert rs_calls == r_calls, (about, rf.output)
    assert all(o.call_id for o in rf.output if o.type == "function_call"), rf.output
    assert rf.output_text.strip() == r.output_text.strip(), (about, rf.output_text, r.output_text)
    kinds = lambda out: [o.type for o in out if o.type != "message"]
    assert kinds(rf.output) == kinds(r.output), (about, rf.output, r.output)
    # create(stream=True): the raw events, in order, end with the completed response.
    seen = [e.type for e in client.responses.create(model=f["model"], input="What is the weather?", tools=flat, stream=True)]
    assert seen[0] == "response.created" and seen[-1] == "response.completed", (about, seen)
    checked += 1

# A call whose arguments fail the schema after its name went out: the SDK still reads a
# well-formed stream, the call has parseable arguments, and the text says what failed.
with client.chat.completions.stream(model="qwen3-late", messages=messages, tools=tools) as stream:
    for _ in stream:
        pass
    late = stream.get_final_completion().choices[0]
assert [c["name"] for c in calls_of(late.message.tool_calls)] == ["get_weather"], late
assert "does not pass its check" in late.message.content, late.message.content
assert late.finish_reason == "tool_calls", late

# Upstream faults: an error status the SDK raises, and a cut stream the SDK reports.
try:
    client.chat.completions.create(model="fault-500", messages=messages, tools=tools)
    raise AssertionError("fault-500 gave a reply")
except openai.APIStatusError as e:
    assert e.status_code == 502, e
    assert "500" in str(e), e
try:
    for _ in client.chat.completions.create(model="fault-cut", messages=messages, tools=tools, stream=True):
        pass
    raise AssertionError("a cut stream ended like a reply")
except openai.APIError as e:
    assert "cut" in str(e), e

print(f"ok {checked} fixtures")
