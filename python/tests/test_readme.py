"""Runs the README's Python examples, in order, in one namespace.

The streaming example talks to a stand-in OpenAI-compatible server started here on loopback:
it streams a Hermes-format reply in small SSE chunks, split inside the markup, as a model
server does.
"""

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

README = Path(os.environ.get("TOOLCALL_ROOT", Path(__file__).resolve().parents[2])) / "README.md"

REPLY = 'Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def python_blocks(markdown):
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


class StandIn(BaseHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandIn.requests.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = [REPLY[i : i + 7] for i in range(0, len(REPLY), 7)]
        for n, piece in enumerate(pieces + [None]):
            delta = {"content": piece} if piece is not None else {}
            chunk = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": None if piece else "stop"}
                ],
            }
            if n == 0:
                chunk["choices"][0]["delta"]["role"] = "assistant"
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


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


def test_readme_python_examples_run(stand_in):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2, "the README shows the Python examples"
    namespace = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # The streaming example reached the stand-in with the toolset's instructions.
    [(path, body)] = stand_in
    assert path == "/v1/chat/completions" and body["stream"] is True
    assert "get_weather" in body["messages"][0]["content"]
    assert namespace["shown"] == "Let me check. "
    assert namespace["calls"][0]["arguments"] == {"city": "Paris"}
