"""Runs python/README.md's examples, in order, in one namespace.

The agent loop talks to a stand-in OpenAI-compatible server started here on loopback: its
first reply calls get_weather natively (`tool_calls`), its second writes the call in the text
(Hermes markup, with a trailing comma to repair), its third answers.
"""

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

README = (
    Path(os.environ.get("TOOLCALL_ROOT", Path(__file__).resolve().parents[2])) / "python" / "README.md"
)

REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "assistant", "content":
        'And in Oslo: <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "fahrenheit",}}</tool_call>'},
    {"role": "assistant", "content": "Paris 21 °C, Oslo 70 °F."},
]


class StandIn(BaseHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandIn.requests.append(body)
        message = REPLIES[min(len(StandIn.requests), len(REPLIES)) - 1]
        reply = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def stand_in(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    StandIn.requests = []
    yield StandIn.requests
    server.shutdown()
    server.server_close()


def test_python_readme_examples_run(stand_in, monkeypatch):
    # The archive example reads the SQLite archive pytest_suite.rs wrote by a real run.
    archives = json.loads(os.environ.get("TOOLCALL_TEST_ARCHIVES") or "[]")
    sqlite = [a for a in archives if a["backend"] == "sqlite"]
    if not sqlite:
        pytest.skip("needs the archive pytest_suite.rs writes (run it with cargo test)")
    monkeypatch.setenv("TOOLCALL_ARCHIVE", sqlite[0]["location"])
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 2, "the Python README shows its examples"
    namespace = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["record"]["session"]["id"] == sqlite[0]["session"]
    assert namespace["record"]["calls"]
    assert len(stand_in) == 3
    first, second, third = stand_in
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["tools"][0]["function"]["parameters"]["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    # The native call's result went back under its id, in toolcall's result shape.
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert json.loads(tool_message["content"]) == {
        "status": "ok", "data": {"city": "Paris", "temperature": 21, "unit": "celsius"}}
    # The call written in the text was parsed, repaired, run and answered.
    results = json.loads(third["messages"][-1]["content"])
    assert results == [{"status": "ok", "data": {"city": "Oslo", "temperature": 70, "unit": "fahrenheit"}}]
    assert namespace["answer"] == "Paris 21 °C, Oslo 70 °F."
