"""The official anthropic package against `toolcall serve` (argv: base URL, tools, fixture files).

For every recorded model output (Hermes, Qwen3-Coder XML, gpt-oss markup, Mistral, Llama, plain
text): `messages.create` gives `tool_use` blocks with ids and `stop_reason == "tool_use"`,
reasoning as a `thinking` block; `messages.stream` and its final message give the same. Then a
conversation carrying `tool_result` blocks goes upstream (the Rust side checks the pairing), a
Claude Code shaped request is accepted, and errors come back as the SDK's errors. Exits
non-zero on the first mismatch.
"""
import json
import sys

import anthropic

base, tools_path = sys.argv[1:3]
fixtures = [f for path in sys.argv[3:] for f in json.load(open(path))]
tools = [
    {"name": t["function"]["name"], "description": t["function"].get("description", ""),
     "input_schema": t["function"]["parameters"]}
    for t in json.load(open(tools_path))
]
client = anthropic.Anthropic(base_url=base, api_key="sk-test", max_retries=0, timeout=30)
messages = [{"role": "user", "content": "What is the weather?"}]


def calls_of(content):
    out = []
    for b in content:
        if b.type == "tool_use":
            assert b.id, b
            out.append({"name": b.name, "arguments": b.input})
    return out


def text_of(content):
    return "".join(b.text for b in content if b.type == "text").strip()


def thinking_of(content):
    return "".join(b.thinking for b in content if b.type == "thinking")


checked = 0
first_calls = None
for f in fixtures:
    about = f["about"]
    whole = client.messages.create(model=f["model"], max_tokens=1024, messages=messages, tools=tools)
    assert whole.type == "message" and whole.role == "assistant", (about, whole)
    assert calls_of(whole.content) == f["calls"], (about, whole.content)
    assert text_of(whole.content) == f["content"], (about, whole.content)
    assert whole.stop_reason == ("tool_use" if f["calls"] else "end_turn"), (about, whole.stop_reason)
    assert bool(thinking_of(whole.content)) == f["reasoning"], (about, whole.content)
    if len(f["calls"]) >= 2 and first_calls is None:
        first_calls = whole

    events = []
    with client.messages.stream(model=f["model"], max_tokens=1024, messages=messages, tools=tools) as stream:
        for event in stream:
            events.append(event.type)
        final = stream.get_final_message()
    assert calls_of(final.content) == calls_of(whole.content), (about, final.content, whole.content)
    assert text_of(final.content) == text_of(whole.content), (about, final.content, whole.content)
    assert thinking_of(final.content) == thinking_of(whole.content), (about, final.content)
    assert final.stop_reason == whole.stop_reason, (about, final.stop_reason)
    assert events[0] == "message_start" and events[-1] == "message_stop", (about, events)
    checked += 1

# The calls' results go back as tool_result blocks (a string, and a content list with
# is_error); the Rust side checks that each reached the upstream paired with its call.
ids = [b.id for b in first_calls.content if b.type == "tool_use"]
results = [{"type": "tool_result", "tool_use_id": ids[0], "content": "sunny, 21 C",
            "cache_control": {"type": "ephemeral"}}]
results += [{"type": "tool_result", "tool_use_id": i, "is_error": True,
             "content": [{"type": "text", "text": "no such city"}]} for i in ids[1:]]
follow = client.messages.create(
    model="followup-check", max_tokens=1024, tools=tools,
    messages=messages + [{"role": "assistant", "content": first_calls.content},
                         {"role": "user", "content": results}])
assert text_of(follow.content) == "echo: followup-check", follow.content
assert follow.stop_reason == "end_turn", follow
print("tool_use ids:", json.dumps(ids))

# A request shaped like Claude Code's: system blocks with cache_control, a system message
# between user turns, thinking, context_management, output_config, metadata, 24 more tools
# with large JSON Schema 2020-12 schemas (~64 KB, as Claude Code declares its own); Bearer auth.
def coding_tool(i):
    return {"name": f"Code{i}", "description": f"Step {i} of the coding workflow, as documented. " * 50,
            "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "additionalProperties": False, "required": ["file_path"],
                "properties": {
                    "file_path": {"type": "string", "description": "An absolute path", "maxLength": 4096},
                    "mode": {"type": "string", "enum": ["read", "write", "append"]},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
                    "options": {"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"},
                                "additionalProperties": {"type": "string"}},
                    "edits": {"type": "array", "items": {
                        "type": "object", "additionalProperties": False, "required": ["old", "new"],
                        "properties": {"old": {"type": "string"}, "new": {"type": "string"}}}}}}}


coding_tools = [coding_tool(i) for i in range(24)]
assert len(json.dumps(coding_tools)) > 60_000
bearer = anthropic.Anthropic(base_url=base, auth_token="sk-test", api_key=None, max_retries=0, timeout=30)
cc = bearer.messages.create(
    model="qwen3-coder-30b-a3b-instruct", max_tokens=32000,
    system=[{"type": "text", "text": "You are a coding agent."},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    tools=[dict(t, cache_control={"type": "ephemeral"}) for t in tools] + coding_tools,
    thinking={"type": "enabled", "budget_tokens": 2048},
    metadata={"user_id": json.dumps({"session": "s"})},
    messages=[{"role": "user", "content": "weather?"},
              {"role": "system", "content": "The user prefers celsius."},
              {"role": "user", "content": [{"type": "text", "text": "Paris", "cache_control": {"type": "ephemeral"}}]}],
    extra_body={"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
                "output_config": {"effort": "high"}},
    extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14,context-management-2025-06-27"},
)
assert [c["name"] for c in calls_of(cc.content)] == ["get_weather"], cc.content

# tool_choice as the SDK sends it: `any` and `tool` make a call required (a reply in prose or
# a call of another tool is asked again, with the reason), `none` lets no call through (the
# call written anyway is asked again, and the prose answer comes back).
weather = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
for model, choice in [("choice-any", {"type": "any"}),
                      ("choice-tool", {"type": "tool", "name": "get_weather"})]:
    chosen = client.messages.create(model=model, max_tokens=256, messages=messages, tools=tools,
                                    tool_choice=choice)
    assert calls_of(chosen.content) == weather, (model, chosen.content)
    assert chosen.stop_reason == "tool_use", (model, chosen)
    with client.messages.stream(model=model, max_tokens=256, messages=messages, tools=tools,
                                tool_choice=choice) as stream:
        for _ in stream:
            pass
        final = stream.get_final_message()
    assert calls_of(final.content) == weather, (model, final.content)
none = client.messages.create(model="choice-none", max_tokens=256, messages=messages, tools=tools,
                              tool_choice={"type": "none"})
assert calls_of(none.content) == [] and none.stop_reason == "end_turn", none
assert text_of(none.content) == "It is sunny in Paris.", none.content

# Errors in Anthropic's shape, as the SDK's own exceptions.
try:
    anthropic.Anthropic(base_url=base, api_key="wrong", max_retries=0).messages.create(
        model="qwen3-8b", max_tokens=10, messages=messages)
    raise AssertionError("a wrong key was let in")
except anthropic.AuthenticationError as e:
    assert e.body["type"] == "error" and e.body["error"]["type"] == "authentication_error", e.body
try:
    client.messages.create(model="fault-500", max_tokens=10, messages=messages, tools=tools)
    raise AssertionError("fault-500 gave a reply")
except anthropic.APIStatusError as e:
    assert e.status_code == 502, e
    assert e.body["error"]["type"] == "api_error", e.body
try:
    with client.messages.stream(model="fault-cut", max_tokens=10, messages=messages, tools=tools) as s:
        for _ in s:
            pass
    raise AssertionError("a cut stream ended like a reply")
except anthropic.APIError as e:
    assert "cut" in str(e), e
try:
    client.messages.count_tokens(model="qwen3-8b", messages=messages)
    raise AssertionError("count_tokens made up a count")
except anthropic.NotFoundError as e:
    assert "count_tokens" in e.body["error"]["message"], e.body

# Anthropic's built-in client tools, declared by type and name alone (Claude knows their
# input; the gateway offers the model behind it their schemas), through the beta API as
# computer-use apps call it: the calls come back as tool_use blocks under the declared
# names with valid inputs, whole and streamed, and a screenshot tool_result goes back.
builtins = [{"type": "computer_20250124", "name": "computer", "display_width_px": 1024,
             "display_height_px": 768, "display_number": 1},
            {"type": "bash_20250124", "name": "bash"},
            {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}]
betas = ["computer-use-2025-01-24"]
desk_messages = [{"role": "user", "content": "Open the menu, list /tmp and show a.txt."}]
want = [{"name": "computer", "arguments": {"action": "left_click", "coordinate": [100, 200]}},
        {"name": "bash", "arguments": {"command": "ls /tmp"}},
        {"name": "str_replace_based_edit_tool", "arguments": {"command": "view", "path": "/tmp/a.txt"}}]
desk = client.beta.messages.create(model="desktop-builtins", max_tokens=1024, tools=builtins,
                                   messages=desk_messages, betas=betas)
assert calls_of(desk.content) == want, desk.content
assert desk.stop_reason == "tool_use", desk
with client.beta.messages.stream(model="desktop-builtins", max_tokens=1024, tools=builtins,
                                 messages=desk_messages, betas=betas) as stream:
    for _ in stream:
        pass
    streamed = stream.get_final_message()
assert calls_of(streamed.content) == want, streamed.content
assert streamed.stop_reason == "tool_use", streamed
desk_ids = [b.id for b in desk.content if b.type == "tool_use"]
png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
shot = client.beta.messages.create(
    model="desktop-shot", max_tokens=1024, tools=builtins, betas=betas,
    messages=desk_messages + [
        {"role": "assistant", "content": desk.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": desk_ids[0], "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]},
            {"type": "tool_result", "tool_use_id": desk_ids[1], "content": "a.txt"},
            {"type": "tool_result", "tool_use_id": desk_ids[2], "content": "1\thello"}]}])
assert text_of(shot.content) == "echo: desktop-shot", shot.content
print("built-in ids:", json.dumps(desk_ids))

print(f"ok {checked} fixtures")
