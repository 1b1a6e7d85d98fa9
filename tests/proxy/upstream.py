"""A fake model server on 127.0.0.1 speaking both APIs, served from a thread of the test:
`POST .../chat/completions` (OpenAI) and `POST .../messages` (Anthropic), JSON or SSE as
the body asks, and `GET .../models`. Every request is recorded whole: method, path with
its query, headers (credentials included: the test checks they arrive unchanged) and the
raw body bytes.

Settings a test changes: `reply` (the text), `tool` (answer with one shell tool call
running `command`), `status` (answer every model request with this status and an error
body), `pause` (seconds between stream chunks) and `pieces` (how many chunks the reply
text is cut into). `cut` is set when a client went away mid-stream.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ERROR = {"error": {"message": "slow down", "type": "rate_limit_error"}}


class Upstream:
    def __init__(self) -> None:
        self.reset()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        """Every setting back to its default, and no request recorded."""
        self.reply = "OK-FAKE"
        self.tool = False
        self.command = "make test"
        self.status = 200
        self.pause = 0.0
        self.pieces = 3
        self.requests: list[dict[str, Any]] = []
        self.cut = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the model requests, in order."""
        return [json.loads(r["body"]) for r in self.requests if r["method"] == "POST"]

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def pieces_of(self) -> list[str]:
        size = max(1, -(-len(self.reply) // self.pieces))
        return [self.reply[i : i + size] for i in range(0, len(self.reply), size)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: Upstream

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, body: bytes) -> None:
        self.fake.requests.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )

    def _json(self, status: int, payload: Any, **headers: str) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._record(b"")
        self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record(raw)
        if self.fake.status != 200:
            self._json(self.fake.status, ERROR, retry_after="7", x_request_id="req-fake-1")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, {"error": {"message": "not JSON", "type": "invalid_request_error"}})
            return
        anthropic = self.path.split("?")[0].endswith("/messages")
        if not body.get("stream"):
            self._json(200, (_message if anthropic else _completion)(self.fake))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        events = _message_events if anthropic else _completion_events
        try:
            for chunk in events(self.fake):
                self.wfile.write(chunk)
                self.wfile.flush()
                time.sleep(self.fake.pause)
        except (BrokenPipeError, ConnectionResetError):
            self.fake.cut.set()
        self.close_connection = True


def _arguments(fake: Upstream) -> dict[str, str]:
    return {"command": fake.command}


def _completion(fake: Upstream) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": fake.reply}
    if fake.tool:
        call = {"name": "bash", "arguments": json.dumps(_arguments(fake))}
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": call}]
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [choice],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _completion_events(fake: Upstream) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data)}\n\n".encode()

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in fake.pieces_of()]
    if fake.tool:
        arguments = json.dumps(_arguments(fake))
        head = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": arguments[:5]},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        rest = {"index": 0, "function": {"arguments": arguments[5:]}}
        chunks.append(chunk({"tool_calls": [rest]}))
    return [*chunks, chunk({}, "tool_calls" if fake.tool else "stop"), b"data: [DONE]\n\n"]


def _message(fake: Upstream) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": fake.reply}]
    if fake.tool:
        content.append(
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": _arguments(fake)}
        )
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": "tool_use" if fake.tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _message_events(fake: Upstream) -> list[bytes]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data | {'type': name})}\n\n".encode()

    head = _message(fake) | {"content": [], "stop_reason": None}
    events = [event("message_start", {"message": head})]
    events.append(
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    )
    for piece in fake.pieces_of():
        events.append(
            event(
                "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}}
            )
        )
    events.append(event("content_block_stop", {"index": 0}))
    if fake.tool:
        block = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}
        events.append(event("content_block_start", {"index": 1, "content_block": block}))
        arguments = json.dumps(_arguments(fake))
        for part in (arguments[:4], arguments[4:]):
            delta = {"type": "input_json_delta", "partial_json": part}
            events.append(event("content_block_delta", {"index": 1, "delta": delta}))
        events.append(event("content_block_stop", {"index": 1}))
    stop = {"stop_reason": "tool_use" if fake.tool else "end_turn", "stop_sequence": None}
    events.append(event("message_delta", {"delta": stop, "usage": {"output_tokens": 1}}))
    return [*events, event("message_stop", {})]
