"""The team server's gate: the token and the body's length are checked before the body is
read. The gate runs for real on loopback, in front of a stand-in for `chroma run`."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mnemoweave.team.gate import MAX_BODY, _GateServer

TOKEN = "team-secret-2718"
WITHIN = 5.0  # seconds any answer may take


class _Inner(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, body))
        data = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def _serving(server) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def gate() -> Iterator[int]:
    _Inner.seen = []
    inner = ThreadingHTTPServer(("127.0.0.1", 0), _Inner)
    front = _GateServer("127.0.0.1", 0, TOKEN, inner.server_address[1])
    for server in (inner, front):
        _serving(server)
    try:
        yield front.server_address[1]
    finally:
        for server in (front, inner):
            server.shutdown()
            server.server_close()


def _send(port: int, head: str, body: bytes = b"") -> tuple[int, dict]:
    """One raw request (headers as written, then `body`); the status and JSON answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}")


def _head(length: str, token: str = TOKEN) -> str:
    return (
        "POST /api/v2/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {length}\r\n"
    )


def test_a_request_with_the_token_and_a_length_is_forwarded(gate):
    assert _send(gate, _head("4"), b"data") == (200, {"ok": True})
    assert _Inner.seen == [("/api/v2/x", b"data")]


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (_head(str(96 << 20), token="wrong"), 401),  # 96 MB announced, never read
        (_head("-1"), 400),
        (_head("12abc"), 400),
        (_head(str(MAX_BODY + 1)), 413),
        (_head("4") + "Transfer-Encoding: chunked\r\n", 411),
    ],
)
def test_a_bad_token_or_length_is_refused_before_the_body_is_read(gate, head, status):
    got, answer = _send(gate, head)  # no body follows: reading one would wait for it
    assert got == status and answer["error"]
    assert _Inner.seen == []
