"""A fake OpenAI-compatible API on 127.0.0.1 for the optional remote models: /embeddings
and /chat/completions, answering as a model would (`mode` "ok"), or broken: "garbage"
(200 with text that is not the JSON asked for), "error" (HTTP 500), "hang" (no answer
for `hang_seconds`). Every request is recorded with its Authorization header and body."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 32


def vector(text: str) -> list[float]:
    """Words hashed onto DIM dimensions: texts sharing words are close."""
    out = np.zeros(DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        out[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % DIM] += 1
    return [float(x) for x in out] if out.any() else [1.0] + [0.0] * (DIM - 1)


def cards_for(prompt: str) -> dict[str, Any]:
    """A card per user turn that says "decided": its text quoted, its id as evidence."""
    cards = []
    for turn_id, text in re.findall(r"^(t_\d+) user: (.+)$", prompt, flags=re.MULTILINE):
        if "decided" in text:
            cards.append(
                {
                    "kind": "conclusion",
                    "title": "decision",
                    "statement": text,
                    "topics": ["http client"],
                    "evidence": [turn_id],
                }  # fmt: skip
            )
    return {"cards": cards}


class FakeRemote:
    def __init__(self) -> None:
        self.mode = "ok"
        self.hang_seconds = 3.0
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size) or b"{}")
                fake.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if fake.mode == "hang":
                    time.sleep(fake.hang_seconds)
                if fake.mode == "error":
                    return self._send(500, b'{"error": "overloaded"}')
                if fake.mode == "garbage":
                    return self._send(200, b"<html>not json</html>")
                if self.path.endswith("/embeddings"):
                    data = [
                        {"index": i, "embedding": vector(text)}
                        for i, text in enumerate(body["input"])
                    ]
                    return self._send(200, json.dumps({"data": data}).encode())
                prompt = body["messages"][-1]["content"]
                content = "```json\n" + json.dumps(cards_for(prompt)) + "\n```"
                answer = {"choices": [{"message": {"role": "assistant", "content": content}}]}
                return self._send(200, json.dumps(answer).encode())

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up waiting

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def sent(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith(path)]


@contextmanager
def fake_remote() -> Iterator[FakeRemote]:
    fake = FakeRemote()
    thread = threading.Thread(target=fake.server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        thread.join(timeout=10)
