"""`mnemoweave team serve`: a team's Chroma server in one command, behind a token check.

The Chroma server the `chromadb` package ships (`chroma run`, Rust, 1.x) has no token
authentication of its own (its auth hook is a no-op), so this runs `chroma run` on a
private loopback port and serves a small gate in front of it: every request must carry the
team token (`Authorization: Bearer TOKEN` or `X-Chroma-Token`, compared in constant time)
and a `Content-Length` of at most MAX_BODY, both checked before any of its body is read;
it is then forwarded (without the token), and gets Chroma's answer. In production the same
role falls to a TLS-terminating proxy (see the README); members only need `team_url`.
"""

from __future__ import annotations

import hmac
import http.client
import json
import logging
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..errors import MnemoweaveError

log = logging.getLogger("mnemoweave.team")
START_WITHIN = 60.0  # seconds `chroma run` may take to answer
STOP_WITHIN = 10.0
FORWARD_TIMEOUT = 60.0
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host"}
SECRET = {"authorization", "x-chroma-token"}
MAX_BODY = 16 << 20  # bytes: a sync sends at most 50 records (about 1 MB) a request


def token_ok(headers: Any, token: str) -> bool:
    given = headers.get("X-Chroma-Token") or ""
    bearer = headers.get("Authorization") or ""
    if bearer.startswith("Bearer "):
        given = bearer[len("Bearer ") :]
    return hmac.compare_digest(given.encode(), token.encode())


class _Gate(BaseHTTPRequestHandler):
    server: _GateServer
    protocol_version = "HTTP/1.1"
    timeout = 30

    def _forward(self) -> None:
        """The token, then the body's declared length, are checked before a byte of the
        body is read; a refused request closes its connection (its body is never read)."""
        if not token_ok(self.headers, self.server.token):
            self._refuse(401, "Unauthorized")
            return
        given = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self._refuse(411, "send the body with a Content-Length")
            return
        if given is not None and not re.fullmatch(r"[0-9]{1,12}", given.strip()):
            self._refuse(400, "Content-Length is not a length")
            return
        size = int(given or 0)
        if size > MAX_BODY:
            self._refuse(413, f"the body is over {MAX_BODY} bytes")
            return
        body = self.rfile.read(size) if size else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP | SECRET}
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.inner, FORWARD_TIMEOUT)
        try:
            upstream.request(self.command, self.path, body, headers)
            answer = upstream.getresponse()
            data = answer.read()
            kept = {k: v for k, v in answer.getheaders() if k.lower() not in HOP}
            kept.pop("Content-Length", None)
            self._answer(answer.status, kept, data)
        except OSError as exc:
            self._answer(502, {"Content-Type": "application/json"}, f'{{"error":"{exc}"}}'.encode())
        finally:
            upstream.close()

    def _refuse(self, status: int, error: str) -> None:
        self.close_connection = True
        data = json.dumps({"error": error}).encode()
        self._answer(status, {"Content-Type": "application/json", "Connection": "close"}, data)

    def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("gate: " + format, *args)


class _GateServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, token: str, inner: int) -> None:
        super().__init__((host, port), _Gate)
        self.token, self.inner = token, inner


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(port: int, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise MnemoweaveError(f"`chroma run` exited with {child.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    raise MnemoweaveError(f"`chroma run` did not answer within {START_WITHIN:g}s")


def chroma_command() -> str:
    """The `chroma` executable installed with the chromadb package (beside this Python)."""
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise MnemoweaveError("no `chroma` command: install the chromadb package")
    return found


def serve(path: Path, host: str, port: int, token: str, echo: Any = print) -> None:
    """Run Chroma on `path` behind the token gate on host:port until SIGTERM or SIGINT."""
    if not token:
        raise MnemoweaveError("the team server needs a token (--token or team_token)")
    inner = _free_port()
    log_file = open(Path(path).with_name(Path(path).name + ".log"), "ab")  # noqa: SIM115
    child = subprocess.Popen(
        [chroma_command(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(inner)],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    stopping = threading.Event()
    previous = {
        s: signal.signal(s, lambda *_: stopping.set()) for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        _wait_up(inner, child)
        gate = _GateServer(host, port, token, inner)
        thread = threading.Thread(target=gate.serve_forever, name="gate", daemon=True)
        thread.start()
        echo(f"team server: http://{host}:{gate.server_address[1]} (data in {path})")
        while not stopping.wait(0.2) and child.poll() is None:
            pass
        gate.shutdown()
        gate.server_close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        child.terminate()
        try:
            child.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(STOP_WITHIN)
        log_file.close()
