"""The official google-genai package against `toolcall serve` (argv: base URL, tools, fixture files).

For every recorded model output: `generate_content` gives `function_calls` with ids, the text,
reasoning as `thought` parts; `generate_content_stream` gives the same calls and text. Then
function responses go back paired with their calls (the Rust side checks the upstream got
them), and errors come back as the SDK's errors. Exits non-zero on the first mismatch.
"""
import json
import sys

from google import genai
from google.genai import errors, types

base, tools_path = sys.argv[1:3]
fixtures = [f for path in sys.argv[3:] for f in json.load(open(path))]
declarations = [
    types.FunctionDeclaration(name=t["function"]["name"], description=t["function"].get("description", ""),
                              parameters_json_schema=t["function"]["parameters"])
    for t in json.load(open(tools_path))
]


def client_with(key):
    return genai.Client(api_key=key, http_options=types.HttpOptions(
        base_url=base, timeout=30_000, retry_options=types.HttpRetryOptions(attempts=1)))


client = client_with("sk-test")
config = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=declarations)],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    thinking_config=types.ThinkingConfig(include_thoughts=True),
)
ask = "What is the weather?"


def calls_of(function_calls):
    out = []
    for c in function_calls or []:
        assert c.id, c
        out.append({"name": c.name, "arguments": c.args})
    return out


def parts(response):
    return [p for c in response.candidates or [] for p in (c.content.parts if c.content else None) or []]


def text_of(ps):
    return "".join(p.text for p in ps if p.text and not p.thought).strip()


def thought_of(ps):
    return "".join(p.text for p in ps if p.text and p.thought)


checked = 0
first = None
for f in fixtures:
    about = f["about"]
    whole = client.models.generate_content(model=f["model"], contents=ask, config=config)
    assert calls_of(whole.function_calls) == f["calls"], (about, whole)
    assert text_of(parts(whole)) == f["content"], (about, parts(whole))
    assert bool(thought_of(parts(whole))) == f["reasoning"], (about, parts(whole))
    assert whole.candidates[0].finish_reason == types.FinishReason.STOP, (about, whole)
    if len(f["calls"]) >= 2 and first is None:
        first = whole

    streamed_parts, streamed_calls, finish = [], [], None
    for chunk in client.models.generate_content_stream(model=f["model"], contents=ask, config=config):
        streamed_parts += parts(chunk)
        streamed_calls += chunk.function_calls or []
        if chunk.candidates and chunk.candidates[0].finish_reason:
            finish = chunk.candidates[0].finish_reason
    assert calls_of(streamed_calls) == calls_of(whole.function_calls), (about, streamed_calls)
    assert text_of(streamed_parts) == text_of(parts(whole)), (about, streamed_parts)
    assert thought_of(streamed_parts) == thought_of(parts(whole)), (about, streamed_parts)
    assert finish == types.FinishReason.STOP, (about, finish)
    checked += 1

# The calls go back with their results as function responses, by id.
calls = first.function_calls
responses = [types.Part(function_response=types.FunctionResponse(
    id=c.id, name=c.name, response={"output": f"result {i}"})) for i, c in enumerate(calls)]
follow = client.models.generate_content(model="followup-check", config=config, contents=[
    types.Content(role="user", parts=[types.Part(text=ask)]),
    first.candidates[0].content,
    types.Content(role="user", parts=responses)])
assert follow.text == "echo: followup-check", follow
print("function call ids:", json.dumps([c.id for c in calls]))

# A model name holding "/" reaches the upstream whole.
slash = client.models.generate_content(model="org/plain-model", contents=ask)
assert slash.text == "echo: org/plain-model", slash

# functionCallingConfig as the SDK sends it: ANY with one allowed name makes that call
# required (a call of another tool is asked again), ANY with several offers only those, NONE
# lets no call through (the call written anyway is asked again; the prose comes back).
def with_mode(mode, names=None):
    return types.GenerateContentConfig(
        tools=config.tools, automatic_function_calling=config.automatic_function_calling,
        tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
            mode=mode, allowed_function_names=names)))


weather = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
for model, mode, names in [("choice-tool", "ANY", ["get_weather"]),
                           ("choice-any", "ANY", ["get_weather", "get_forecast"])]:
    chosen = client.models.generate_content(model=model, contents=ask, config=with_mode(mode, names))
    assert calls_of(chosen.function_calls) == weather, (model, chosen)
    streamed = [c for chunk in client.models.generate_content_stream(
        model=model, contents=ask, config=with_mode(mode, names)) for c in chunk.function_calls or []]
    assert calls_of(streamed) == weather, (model, streamed)
none = client.models.generate_content(model="choice-none", contents=ask, config=with_mode("NONE"))
assert not none.function_calls and none.text == "It is sunny in Paris.", none

# Errors in Google's shape, as the SDK's own exceptions.
wrong = client_with("wrong")
try:
    wrong.models.generate_content(model="qwen3-8b", contents=ask)
    raise AssertionError("a wrong key was let in")
except errors.ClientError as e:
    assert e.code == 401 and e.status == "UNAUTHENTICATED", (e.code, e.status)
try:
    client.models.generate_content(model="fault-500", contents=ask, config=config)
    raise AssertionError("fault-500 gave a reply")
except errors.ServerError as e:
    assert e.code == 502, e
try:
    client.models.count_tokens(model="qwen3-8b", contents=ask)
    raise AssertionError("countTokens made up a count")
except errors.ClientError as e:
    assert e.code == 404 and "countTokens" in e.message, e

print(f"ok {checked} fixtures")
