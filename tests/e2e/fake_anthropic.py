"""A fake Anthropic Messages API on 127.0.0.1, served from a thread of the test process.

Every request is recorded in memory (``server.requests``: dicts with method, path, headers
without credentials, and the decoded JSON body). ``POST /v1/messages`` answers with
``server.reply`` as a JSON message or as a server-sent event stream, whichever the request
asks for. A user message containing ``server.tool_trigger`` (and no tool result yet) gets
one ``Bash`` tool call running ``server.tool_command`` when the request offers that tool.
``server.tool_use``, when set, is asked first: given a request body it returns the tool call
to answer with (``{"name": ..., "input": {...}}``) or None for the default behaviour.
Token counting and model listing get plausible answers. After ``max_requests`` requests
every further request is refused with a 400 error, so a runaway client cannot loop.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | Callable[[dict[str, Any]], str]
ToolUse = Callable[[dict[str, Any]], dict[str, Any] | None]

_SECRET_HEADERS = {"x-api-key", "authorization", "cookie"}
_MODEL_LIST = {
    "data": [
        {
            "type": "model",
            "id": "claude-sonnet-4-5",
            "display_name": "Fake Sonnet",
            "created_at": "2025-01-01T00:00:00Z",
        }
    ],
    "has_more": False,
    "first_id": "claude-sonnet-4-5",
    "last_id": "claude-sonnet-4-5",
}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


class FakeAnthropic:
    """Start with ``start()`` (or ``with FakeAnthropic() as server:``), stop with ``stop()``."""

    def __init__(
        self,
        reply: Reply = "OK-FAKE",
        *,
        max_requests: int = 200,
        tool_trigger: str = "USE_TOOL",
        tool_command: str = "echo TOOL-OK",
        tool_use: ToolUse | None = None,
    ) -> None:
        self.reply = reply
        self.tool_use = tool_use
        self.max_requests = max_requests
        self.tool_trigger = tool_trigger
        self.tool_command = tool_command
        self.requests: list[dict[str, Any]] = []
        self.refused = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not running")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeAnthropic:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        httpd.daemon_threads = True
        httpd.timeout = 1
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"fake-anthropic-{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def messages(self) -> list[dict[str, Any]]:
        """The recorded bodies of ``POST /v1/messages`` requests, in arrival order."""
        with self._lock:
            recorded = list(self.requests)
        return [
            r["body"]
            for r in recorded
            if r["method"] == "POST"
            and r["path"].split("?")[0].endswith("/v1/messages")
            and isinstance(r["body"], dict)
        ]

    def _record(self, entry: dict[str, Any]) -> bool:
        with self._lock:
            if len(self.requests) >= self.max_requests:
                self.refused += 1
                return False
            self.requests.append(entry)
            return True

    def _reply_text(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def _tool_call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        chosen = self.tool_use(body) if self.tool_use is not None else None
        if chosen is not None:
            return {
                "type": "tool_use",
                "id": "toolu_fake_" + uuid.uuid4().hex[:16],
                "name": chosen["name"],
                "input": chosen.get("input") or {},
            }
        tools = body.get("tools") or []
        if not any(isinstance(t, dict) and t.get("name") == "Bash" for t in tools):
            return None
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        if not users:
            return None
        blocks = _blocks(users[-1].get("content"))
        if any(b.get("type") == "tool_result" for b in blocks):
            return None
        if not any(self.tool_trigger in (b.get("text") or "") for b in blocks):
            return None
        return {
            "type": "tool_use",
            "id": "toolu_fake_" + uuid.uuid4().hex[:16],
            "name": "Bash",
            "input": {"command": self.tool_command, "description": "Run a test command"},
        }


def _handler_for(server: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _read_body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _accept(self, body: Any) -> bool:
            entry = {
                "time": time.time(),
                "method": self.command,
                "path": self.path,
                "headers": {
                    k.lower(): v
                    for k, v in self.headers.items()
                    if k.lower() not in _SECRET_HEADERS
                },
                "body": body,
            }
            if server._record(entry):
                return True
            self._send_json(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "fake server: request limit reached",
                    },
                },
            )
            return False

        def _send_json(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            if self._accept(None):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def do_GET(self) -> None:
            if not self._accept(None):
                return
            if self.path.split("?")[0].startswith("/v1/models"):
                self._send_json(200, _MODEL_LIST)
            else:
                self._send_json(200, {})

        def do_POST(self) -> None:
            body = self._read_body()
            if not self._accept(body):
                return
            path = self.path.split("?")[0]
            if path.endswith("/count_tokens"):
                self._send_json(200, {"input_tokens": 42})
            elif path.endswith("/v1/messages") and isinstance(body, dict):
                self._answer_message(body)
            else:
                self._send_json(200, {})

        def _answer_message(self, body: dict[str, Any]) -> None:
            model = body.get("model") or "claude-fake"
            tool = server._tool_call(body)
            block = tool if tool else {"type": "text", "text": server._reply_text(body)}
            stop_reason = "tool_use" if tool else "end_turn"
            message = {
                "id": "msg_fake_" + uuid.uuid4().hex[:16],
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 5,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            }
            if body.get("stream"):
                self._stream(message)
            else:
                self._send_json(200, message)

        def _stream(self, message: dict[str, Any]) -> None:
            block = message["content"][0]
            if block["type"] == "tool_use":
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            head = {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": {**message["usage"], "output_tokens": 1},
            }
            events = [
                ("message_start", {"type": "message_start", "message": head}),
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": start},
                ),
                ("ping", {"type": "ping"}),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                        "usage": {"output_tokens": message["usage"]["output_tokens"]},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
            self.end_headers()
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler
