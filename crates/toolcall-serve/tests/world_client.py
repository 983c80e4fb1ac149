"""The official openai package against `toolcall serve --pack world` (argv: base URL, the
expected narrative). The gateway runs the world tools itself: whole and streamed, the client
sees only the final narrative, no tool calls, and a session id to continue with.
"""
import sys

import openai

base, narrative = sys.argv[1:3]
client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0, timeout=30)
messages = [{"role": "user", "content": "Open the chest, then go to the beach"}]

raw = client.chat.completions.with_raw_response.create(model="world", messages=messages)
session = raw.headers.get("x-toolcall-session")
assert session and session.startswith("ses_"), raw.headers
whole = raw.parse()
choice = whole.choices[0]
assert choice.message.content == narrative, choice
assert not choice.message.tool_calls, choice
assert choice.finish_reason == "stop", choice

with client.chat.completions.stream(model="world", messages=messages) as stream:
    for _ in stream:
        pass
    final = stream.get_final_completion()
streamed = final.choices[0]
assert streamed.message.content == narrative, streamed
assert not streamed.message.tool_calls, streamed
assert streamed.finish_reason == "stop", streamed
print("ok world turn")
