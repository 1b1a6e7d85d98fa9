"""Something other than a healthy mnemoweave daemon on the data dir's Unix socket, served
from a thread of the test process: it records what the plugin posts and answers as told.

``behaviour``: ``"record"`` answers ``{"output": server.output(event, payload)}``;
``"garbage"`` sends bytes that are not an HTTP answer; ``"malformed"`` a 200 whose body is
not JSON; ``"error"`` a 500; ``"refuse"`` a 400; ``"hang"`` reads the request and never
answers (until ``hang_seconds`` pass or the server stops). ``stale_socket`` leaves what a
daemon killed with SIGKILL leaves: a socket file nobody listens on.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

BEHAVIOURS = ("record", "garbage", "malformed", "error", "refuse", "hang")


def stale_socket(path: Path | str) -> Path:
    """A socket file with nobody listening (connecting to it is refused)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()
    return path


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeDaemon:
    """Start with ``start()`` (or as a context manager); ``requests`` holds (path, body)."""

    def __init__(
        self,
        socket_path: Path | str,
        behaviour: str = "record",
        output: Callable[[str, Any], Any] | None = None,
        hang_seconds: float = 30.0,
    ) -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}")
        self.path = Path(socket_path)
        self.behaviour = behaviour
        self.output = output or (lambda event, payload: None)
        self.hang_seconds = hang_seconds
        self.requests: list[tuple[str, Any]] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeDaemon:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        self._server = _Server(str(self.path), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> FakeDaemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def events(self) -> list[str]:
        """The hook events received, in order (a plugin's look at /v1/daemon is none)."""
        with self._lock:
            return [path.rsplit("/", 1)[-1] for path, _ in self.requests if "/hooks/" in path]

    def payloads(self, event: str) -> list[Any]:
        with self._lock:
            recorded = list(self.requests)
        return [
            body.get("payload") if isinstance(body, dict) else None
            for path, body in recorded
            if path.rsplit("/", 1)[-1] == event
        ]


def _handler_for(fake: FakeDaemon) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30

        def address_string(self) -> str:
            return "unix"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with fake._lock:
                fake.requests.append((self.path, body))
            behaviour = fake.behaviour
            if behaviour == "hang":
                fake.stopping.wait(fake.hang_seconds)
                self.close_connection = True
            elif behaviour == "garbage":
                self.wfile.write(b"\x00\xffnot http at all\r\n\r\n")
                self.close_connection = True
            elif behaviour == "malformed":
                self._send(200, b"{not json")
            elif behaviour == "error":
                self._send(500, b'{"error": "something broke"}')
            elif behaviour == "refuse":
                self._send(400, b'{"error": "bad payload"}')
            else:
                event = self.path.rsplit("/", 1)[-1]
                payload = body.get("payload") if isinstance(body, dict) else None
                answer = {"output": fake.output(event, payload)}
                self._send(200, json.dumps(answer).encode())

    return Handler
