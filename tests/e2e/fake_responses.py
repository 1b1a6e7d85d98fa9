"""A fake OpenAI Responses API on 127.0.0.1 (a ``FakeServer``, see fake_server.py): what
the Codex CLI talks to (it speaks no other API).

``POST .../responses`` answers with ``server.reply`` as one assistant message, streamed as
the Responses API's server-sent events (``response.created`` ... ``response.completed``),
or as one JSON response when the request says ``"stream": false``. ``GET .../models``
lists one model.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from .fake_openai import _CompletionsHandler
from .fake_server import FakeServer, Reply

ENDPOINT = "/responses"
MODEL = "fake-model"
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 13,
}


def input_texts(body: dict[str, Any], role: str | None = None) -> list[str]:
    """The text of each message item of a request's ``input`` (of one role, if given)."""
    texts = []
    for item in body.get("input") or []:
        if not isinstance(item, dict) or (role and item.get("role") != role):
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.append("\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict)))
    return texts


class _ResponsesHandler(_CompletionsHandler):  # the same model list
    fake: FakeResponses  # type: ignore[assignment]

    def answer(self, body: dict[str, Any]) -> None:
        text = self.fake._reply_text(body)
        mid = "msg_" + uuid.uuid4().hex[:12]
        item = {
            "type": "message",
            "id": mid,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        response: dict[str, Any] = {
            "id": "resp_fake_" + uuid.uuid4().hex[:12],
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model") or MODEL,
            "status": "in_progress",
            "output": [],
        }
        done = dict(response, status="completed", output=[item], usage=USAGE)
        if body.get("stream") is False:
            self.send_json(200, done)
            return
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": response},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": []},
            },
            {
                "type": "response.output_text.delta",
                "item_id": mid,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]

        def chunks() -> Iterator[bytes]:
            for event in events:
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

        self.send_stream(chunks())


class FakeResponses(FakeServer):
    """Start with ``start()`` (or ``with FakeResponses() as server:``), stop with ``stop()``."""

    name = "fake-responses"
    endpoint = ENDPOINT
    handler = _ResponsesHandler
    limit_error = {
        "error": {"message": "fake server: request limit reached", "type": "invalid_request_error"}
    }

    def __init__(self, reply: Reply = "OK-FAKE", **options: Any) -> None:
        super().__init__(reply, **options)

    @property
    def base_url(self) -> str:
        """What Codex's provider `base_url` should be (the API root, with /v1)."""
        return super().base_url + "/v1"
