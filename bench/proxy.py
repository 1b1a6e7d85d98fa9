"""Proxy: time to first byte and to completion of streamed chat completions, through the
memory proxy against direct to the same fake upstream, with N memories stored.

The fake upstream (this file run as a script: `python bench/proxy.py upstream PORTFILE`)
is an OpenAI-compatible server in a process of its own, answering every streamed chat
completion at once with a few chunks; it says in a response header whether the request it
got held a woven memory block. A daemon is started on a data dir already holding N
memories (corpus.py, loaded in-process first, as bench/hooks.py does), and `mnemoweave
proxy --project-from-header` (its default 150 ms weave budget) in front of the upstream.
Each timed call is one new conversation (a corpus prompt, its project in the
X-Mnemoweave-Project header), so each one is woven at the size measured, and calls
alternate between direct and proxied so that both see the same machine. Times are taken
from this process with httpx: first byte = the first body bytes of the response. After
the calls, WEAVES weave requests are sent to the daemon from this process: the daemon's
share of the added time (`daemon_weave_ms`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from corpus import Prompt, prompts, rotate
from harness import progress
from hooks import (
    PAUSE,
    configure,
    daemon,
    load,
    machine,
    make_projects,
    resolve_models,
    short_root,
    subprocess_env,
)
from metrics import percentiles

FENCE = b'<memory source=\\"mnemoweave\\"'  # as it reads in the JSON body
TARGETS = {"added_ttfb_p95_ms": 30.0}
START_TIMEOUT = 60.0
CALL_TIMEOUT = 60.0
CHUNKS = 8  # chunks of each streamed reply
WEAVES = 50  # weave requests timed alone, after the calls


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10000", help="memory counts, comma-separated")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per size and path")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first, per path")
    parser.add_argument(
        "--pause",
        type=float,
        default=PAUSE,
        help=f"seconds between conversations (default {PAUSE}; 0: back to back)",
    )


# --- the fake upstream (its own process) -----------------------------------------------------


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do: no 40 ms wait for a delayed ACK

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("X-Woven", "1" if FENCE in body else "0")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number in range(CHUNKS):
            delta = {"content": f"word{number} "}
            data = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            self._chunk(f"data: {json.dumps(data)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def serve_upstream(port_file: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


def _port(path: Path, process: subprocess.Popen[bytes], what: str) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    while not (path.exists() and path.read_text().strip()):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"proxy: the {what} did not start")
        time.sleep(0.05)
    return int(path.read_text())


def _stop(process: subprocess.Popen[bytes]) -> None:
    with suppress(OSError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


@contextmanager
def upstream(root: Path) -> Iterator[str]:
    """The fake upstream in a process of its own; yields its API root."""
    port_file = root / "upstream.port"
    process = subprocess.Popen(
        [sys.executable, __file__, "upstream", str(port_file)], start_new_session=True
    )
    try:
        yield f"http://127.0.0.1:{_port(port_file, process, 'fake upstream')}/v1"
    finally:
        _stop(process)


@contextmanager
def proxy(env: dict[str, str], url: str) -> Iterator[str]:
    """`mnemoweave proxy` in front of `url` (a free port); yields its address."""
    command = [sys.executable, "-m", "mnemoweave", "proxy", "--upstream", url, "--port", "0"]
    process = subprocess.Popen(
        [*command, "--project-from-header"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()  # its first line names its address
        if not line.startswith("mnemoweave proxy on "):
            raise SystemExit(f"proxy: the proxy did not start: {line!r}")
        yield line.split()[3]
    finally:
        _stop(process)


# --- one call ------------------------------------------------------------------------------


def call(http: Any, base: str, prompt: Prompt) -> tuple[float, float, bool]:
    """One streamed completion in a new conversation: (ms to the first body byte, ms to
    the end, whether the upstream saw a woven block)."""
    body = {
        "model": "fake-model",
        "stream": True,
        "messages": [{"role": "user", "content": f"{prompt.text} ({uuid.uuid4().hex[:8]})"}],
    }
    headers = {"Authorization": "Bearer sk-bench", "X-Mnemoweave-Project": prompt.cwd}
    started = time.perf_counter()
    first = None
    with http.stream("POST", f"{base}/v1/chat/completions", json=body, headers=headers) as answer:
        for _ in answer.iter_raw():
            first = first or time.perf_counter()
        woven = answer.headers.get("x-woven") == "1"
    end = time.perf_counter()
    return ((first or end) - started) * 1000, (end - started) * 1000, woven


def weave(home: Path, prompt: Prompt) -> float:
    """The proxy's weave request alone, from this process (new session): the daemon's share
    of the added time."""
    from mnemoweave.hosts import client

    body = {
        "query": prompt.text,
        "session": f"bench-{uuid.uuid4().hex}",
        "record": True,
        "project": prompt.cwd,
    }
    started = time.perf_counter()
    client.request(home, "POST", "/v1/weave", body, timeout=CALL_TIMEOUT)
    return (time.perf_counter() - started) * 1000


def measure(
    sizes: list[int], calls: int, warmup: int, pause: float, embedder: str, models: Path
) -> dict[str, Any]:
    """The whole benchmark in a temporary root, removed afterwards."""
    import httpx

    root = short_root()
    try:
        (root / "home").mkdir()
        projects = make_projects(root)
        names, mode = resolve_models(embedder, models, root)
        progress(f"proxy: {mode}; data under {root}")
        report: dict[str, Any] = {"mode": mode, "sizes": {}}
        for size in sizes:
            home = root / f"h{size}"
            chosen = configure(home, names)
            env = subprocess_env(root, home, chosen)
            progress(f"proxy: storing {size} memories")
            loaded = load(home, root / "models", size, projects, chosen)
            asked = prompts(projects, loaded["ids"])
            times: dict[str, dict[str, list[float]]] = {
                path: {"ttfb": [], "total": []} for path in ("direct", "proxy")
            }
            woven = 0
            with daemon(home, env), upstream(root) as url, proxy(env, url) as through:
                bases = {"direct": url.removesuffix("/v1"), "proxy": through}
                with httpx.Client(timeout=CALL_TIMEOUT, trust_env=False) as http:
                    for number, prompt in enumerate(rotate(asked, warmup + calls)):
                        for path, base in bases.items():
                            time.sleep(pause)
                            ttfb, total, seen = call(http, base, prompt)
                            if number < warmup:
                                continue
                            times[path]["ttfb"].append(ttfb)
                            times[path]["total"].append(total)
                            woven += seen and path == "proxy"
                        if (number + 1) % 50 == 0:
                            progress(f"proxy: {number + 1}/{warmup + calls} calls")
                weave_ms = []
                for prompt in rotate(asked, WEAVES, warmup):
                    time.sleep(pause)
                    weave_ms.append(weave(home, prompt))
                log = home / "logs" / "proxy.log"
                skipped = log.read_text().count("weave skipped") if log.exists() else 0
            summary = {path: {k: percentiles(v) for k, v in t.items()} for path, t in times.items()}
            added: dict[str, float] = {}
            for kind in ("ttfb", "total"):
                for p in ("p50", "p95"):
                    proxied, direct = summary["proxy"][kind][p], summary["direct"][kind][p]
                    assert proxied is not None and direct is not None, "no timed calls"
                    added[f"{kind}_{p}"] = round(proxied - direct, 2)
            report["sizes"][str(size)] = summary | {
                "added": added,
                "memories": loaded["memories"],
                "retrieval": loaded["retrieval"],
                "woven_rate": round(woven / calls, 3) if calls else None,
                "daemon_weave_ms": percentiles(weave_ms),
                "weave_skipped": skipped,
            }
        largest = report["sizes"][str(max(sizes))]["added"]["ttfb_p95"]
        return report | {
            "calls": {"timed": calls, "warmup": warmup, "pause_seconds": pause},
            "machine": machine(),
            "targets": TARGETS,
            "meets": {"added_ttfb_p95": largest <= TARGETS["added_ttfb_p95_ms"]},
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode != "default":
        raise SystemExit("proxy: --mode does not apply (the proxy uses the daemon's retrieval)")
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    calls = args.limit or args.calls
    return measure(sizes, calls, args.warmup, args.pause, args.embedder, args.models)


if __name__ == "__main__":
    if sys.argv[1:2] == ["upstream"]:
        serve_upstream(Path(sys.argv[2]))
