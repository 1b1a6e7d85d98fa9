"""What the fake model servers share: an HTTP server on 127.0.0.1, served from a thread of
the test process, that records every request and answers the model endpoint.

Every request is recorded in memory (``server.requests``: dicts with time, method, path,
headers without credentials, and the decoded JSON body). After ``max_requests`` requests
every further request is refused with a 400 error, so a runaway client cannot loop. A
``POST`` to a path ending in ``endpoint`` with a JSON object body goes to the handler's
``answer``; any other request gets the JSON of its ``other`` (``{}`` unless it says more).
A subclass names its ``endpoint``, ``handler``, ``limit_error`` and thread ``name``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

Reply = str | Callable[[dict[str, Any]], str]

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "cookie"})


def posted_bodies(requests: Iterable[Mapping[str, Any]], endpoint: str) -> list[dict[str, Any]]:
    """The JSON object bodies of the recorded ``POST`` requests to a path ending in
    ``endpoint``, in arrival order."""
    return [
        r["body"]
        for r in requests
        if r.get("method") == "POST"
        and str(r.get("path", "")).split("?")[0].endswith(endpoint)
        and isinstance(r.get("body"), dict)
    ]


class Handler(BaseHTTPRequestHandler):
    """One request to ``fake``: recorded (or refused past the limit), then answered."""

    protocol_version = "HTTP/1.1"
    timeout = 30
    fake: FakeServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, body: dict[str, Any]) -> None:
        """Answer a ``POST`` to the model endpoint."""
        raise NotImplementedError

    def other(self, method: str, path: str) -> dict[str, Any]:
        """The JSON answer to any other ``GET`` or ``POST`` (``path`` without its query)."""
        return {}

    def extra_headers(self) -> dict[str, str]:
        """Headers sent with every JSON answer and event stream."""
        return {}

    def read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def accept(self, body: Any) -> bool:
        """Record the request; past the limit, answer it with a 400 and return False."""
        entry = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": {
                k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS
            },
            "body": body,
        }
        if self.fake._record(entry):
            return True
        self.send_json(400, self.fake.limit_error)
        return False

    def send_json(self, code: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in self.extra_headers().items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, chunks: Iterable[bytes]) -> None:
        """A 200 server-sent event stream of ``chunks``, then the connection is closed."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in self.extra_headers().items():
            self.send_header(name, value)
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
        self.wfile.flush()
        self.close_connection = True

    def do_HEAD(self) -> None:
        if self.accept(None):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_GET(self) -> None:
        if self.accept(None):
            self.send_json(200, self.other("GET", self.path.split("?")[0]))

    def do_POST(self) -> None:
        body = self.read_body()
        if not self.accept(body):
            return
        path = self.path.split("?")[0]
        if path.endswith(self.fake.endpoint) and isinstance(body, dict):
            self.answer(body)
        else:
            self.send_json(200, self.other("POST", path))


class FakeServer:
    """Start with ``start()`` (or ``with Server() as server:``), stop with ``stop()``.

    ``reply`` is the model's answer (or a function of the request body giving it); a user
    message containing ``tool_trigger`` gets a shell tool call running ``tool_command``
    where the subclass says so.
    """

    name: ClassVar[str]
    endpoint: ClassVar[str]
    handler: ClassVar[type[Handler]]
    limit_error: ClassVar[dict[str, Any]]

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

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        handler = type("Handler", (self.handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.timeout = 1
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"{self.name}-{httpd.server_address[1]}",
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bodies(self) -> list[dict[str, Any]]:
        """The recorded bodies of requests to the model endpoint, in arrival order."""
        with self._lock:
            recorded = list(self.requests)
        return posted_bodies(recorded, self.endpoint)

    def _record(self, entry: dict[str, Any]) -> bool:
        with self._lock:
            if len(self.requests) >= self.max_requests:
                self.refused += 1
                return False
            self.requests.append(entry)
            return True

    def _reply_text(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply
