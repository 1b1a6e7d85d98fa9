"""HTTP stacks: the daemon's (http.server's threads on a Unix socket) against Starlette on
uvicorn (the proxy's), each serving one small JSON route, asked by the hooks' own client.

Each server runs in its own process, started here: `start_ms` is spawn to first answer
(imports included: a stopped daemon is started by the first hook that needs it), then
`--requests` POSTs of a small JSON body one after another, as hooks send them, each on a
new connection (p50 / p95 / mean milliseconds, round trip).

    .venv/bin/python bench/run.py stacks --requests 2000 --json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from metrics import mean, percentiles
from mnemoweave.hosts import client

BODY = b'{"payload": {"session": "s1", "prompt": "what is the staging database called?"}}'
ANSWER = '{"output": {"context": "' + "x" * 600 + '"}}'  # about a woven block's size

SERVERS = {
    "http.server": f"""
import socketserver, sys
from http.server import BaseHTTPRequestHandler
ANSWER = {ANSWER!r}.encode()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(ANSWER)
    def log_message(self, *args):
        pass

class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

Server(sys.argv[1], Handler).serve_forever()
""",
    "starlette+uvicorn": f"""
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
ANSWER = {ANSWER!r}.encode()

async def hook(request):
    await request.body()
    return Response(ANSWER, media_type="application/json")

app = Starlette(routes=[Route("/v1/hooks/{{host}}/{{event}}", hook, methods=["POST"])])
uvicorn.run(app, uds=sys.argv[1], log_level="warning", access_log=False)
""",
}


def measure(name: str, requests: int) -> dict[str, Any]:
    """Start the stack `name`, time its first answer, then `requests` round trips."""
    with tempfile.TemporaryDirectory() as where:
        home = Path(where)  # the client asks the socket of a data dir
        socket = home / "daemon.sock"
        started = time.perf_counter()
        server = subprocess.Popen([sys.executable, "-c", SERVERS[name], str(socket)])
        try:
            deadline = started + 30
            while True:
                try:
                    client.send(home, "POST", "/v1/hooks/h/e", BODY, 5.0)
                    break
                except client.DaemonError:
                    if time.perf_counter() > deadline or server.poll() is not None:
                        raise
                    time.sleep(0.002)
            start_ms = (time.perf_counter() - started) * 1000
            times = []
            for _ in range(requests):
                begun = time.perf_counter()
                status, _ = client.send(home, "POST", "/v1/hooks/h/e", BODY, 5.0)
                times.append((time.perf_counter() - begun) * 1000)
                assert status == 200, status
        finally:
            server.terminate()
            server.wait(timeout=10)
    spread = percentiles(times)
    return {
        "start_ms": round(start_ms, 1),
        "p50_ms": spread["p50"],
        "p95_ms": spread["p95"],
        "mean_ms": mean(times),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=2000, help="round trips per stack")


def run(args: argparse.Namespace) -> dict[str, Any]:
    return {name: measure(name, args.requests) for name in SERVERS}
