"""A fake OpenAI-compatible Chat Completions API on 127.0.0.1, served from a thread of the
test process (what OpenCode's `@ai-sdk/openai-compatible` provider talks to).

Every request is recorded in memory (``server.requests``: dicts with method, path, headers
without credentials, and the decoded JSON body). ``POST .../chat/completions`` answers with
``server.reply`` as one JSON completion or as a server-sent event stream, whichever the
request asks for; the token usage reported with it is ``server.usage`` (or what it returns
for the request body, when it is callable; a count over the model's context limit makes
OpenCode compact the session). A last user message containing
``server.tool_trigger`` (and no tool result after it) gets one ``bash`` tool call running
``server.tool_command`` when the request offers that tool. ``GET .../models`` lists one
model. After ``max_requests`` requests every further request is refused with a 400 error,
so a runaway client cannot loop.
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
Usage = dict[str, int] | Callable[[dict[str, Any]], dict[str, int]]
USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}

_SECRET_HEADERS = {"authorization", "x-api-key", "cookie"}
MODEL = "fake-model"


def content_text(content: Any) -> str:
    """The text of a chat message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


class FakeOpenAI:
    """Start with ``start()`` (or ``with FakeOpenAI() as server:``), stop with ``stop()``."""

    def __init__(
        self,
        reply: Reply = "OK-FAKE",
        *,
        max_requests: int = 200,
        tool_trigger: str = "USE_TOOL",
        tool_command: str = "echo TOOL-OK",
    ) -> None:
        self.reply = reply
        self.max_requests = max_requests
        self.tool_trigger = tool_trigger
        self.tool_command = tool_command
        self.usage: Usage = dict(USAGE)
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
        """What a provider's `baseURL` should be (the API root, with /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        httpd.daemon_threads = True
        httpd.timeout = 1
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"fake-openai-{httpd.server_address[1]}",
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

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def completions(self) -> list[dict[str, Any]]:
        """The recorded bodies of chat completion requests, in arrival order."""
        with self._lock:
            recorded = list(self.requests)
        return completion_bodies(recorded)

    def _record(self, entry: dict[str, Any]) -> bool:
        with self._lock:
            if len(self.requests) >= self.max_requests:
                self.refused += 1
                return False
            self.requests.append(entry)
            return True

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        return dict(self.usage(body) if callable(self.usage) else self.usage)

    def _reply_text(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply

    def _tool_call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        tools = body.get("tools") or []
        names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)]
        if "bash" not in names:
            return None
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users or any(m.get("role") == "tool" for m in messages[users[-1] :]):
            return None
        if self.tool_trigger not in content_text(messages[users[-1]].get("content")):
            return None
        arguments = {"command": self.tool_command, "description": "Run a test command"}
        return {
            "id": "call_fake_" + uuid.uuid4().hex[:12],
            "name": "bash",
            "arguments": json.dumps(arguments),
        }


def completion_bodies(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in requests
        if r.get("method") == "POST"
        and str(r.get("path", "")).split("?")[0].endswith("/chat/completions")
        and isinstance(r.get("body"), dict)
    ]


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
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
                    "error": {
                        "message": "fake server: request limit reached",
                        "type": "invalid_request_error",
                    }
                },
            )
            return False

        def _send_json(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
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
            if self.path.split("?")[0].endswith("/models"):
                model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}
                self._send_json(200, {"object": "list", "data": [model]})
            else:
                self._send_json(200, {})

        def do_POST(self) -> None:
            body = self._read_body()
            if not self._accept(body):
                return
            if self.path.split("?")[0].endswith("/chat/completions") and isinstance(body, dict):
                self._complete(body)
            else:
                self._send_json(200, {})

        def _complete(self, body: dict[str, Any]) -> None:
            model = body.get("model") or MODEL
            ident = "chatcmpl-fake" + uuid.uuid4().hex[:12]
            created = int(time.time())
            tool = server._tool_call(body)
            usage = server._usage(body)
            if not body.get("stream"):
                if tool:
                    call = {
                        "id": tool["id"],
                        "type": "function",
                        "function": {"name": tool["name"], "arguments": tool["arguments"]},
                    }
                    message = {"role": "assistant", "content": None, "tool_calls": [call]}
                else:
                    message = {"role": "assistant", "content": server._reply_text(body)}
                choice = {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool else "stop",
                }
                self._send_json(
                    200,
                    {
                        "id": ident,
                        "object": "chat.completion",
                        "created": created,
                        "model": model,
                        "choices": [choice],
                        "usage": usage,
                    },
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()

            def chunk(delta: dict[str, Any], finish: str | None = None, last: bool = False) -> None:
                data = {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                if last:
                    data["usage"] = usage
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

            chunk({"role": "assistant", "content": ""})
            if tool:
                head = {
                    "index": 0,
                    "id": tool["id"],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": ""},
                }
                chunk({"tool_calls": [head]})
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": tool["arguments"]}}]})
                chunk({}, "tool_calls", last=True)
            else:
                chunk({"content": server._reply_text(body)})
                chunk({}, "stop", last=True)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler
