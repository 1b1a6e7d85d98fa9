"""A fake Anthropic Messages API on 127.0.0.1 (a ``FakeServer``, see fake_server.py).

``POST /v1/messages`` answers with ``server.reply`` as a JSON message or as a server-sent
event stream, whichever the request asks for. A user message containing
``server.tool_trigger`` (and no tool result yet) gets one ``Bash`` tool call running
``server.tool_command`` when the request offers that tool. ``server.tool_use``, when set,
is asked first: given a request body it returns the tool call to answer with
(``{"name": ..., "input": {...}}``) or None for the default behaviour. Token counting and
model listing get plausible answers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .fake_server import FakeServer, Handler, Reply, posted_bodies

ToolUse = Callable[[dict[str, Any]], dict[str, Any] | None]

ENDPOINT = "/v1/messages"
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


def message_bodies(requests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The bodies of the recorded ``POST /v1/messages`` requests, in arrival order."""
    return posted_bodies(requests, ENDPOINT)


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


class _MessagesHandler(Handler):
    fake: FakeAnthropic

    def extra_headers(self) -> dict[str, str]:
        return {"request-id": "req_fake_" + uuid.uuid4().hex[:12]}

    def other(self, method: str, path: str) -> dict[str, Any]:
        if method == "GET" and path.startswith("/v1/models"):
            return _MODEL_LIST
        if method == "POST" and path.endswith("/count_tokens"):
            return {"input_tokens": 42}
        return {}

    def answer(self, body: dict[str, Any]) -> None:
        model = body.get("model") or "claude-fake"
        tool = self.fake._tool_call(body)
        block = tool if tool else {"type": "text", "text": self.fake._reply_text(body)}
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
            self.send_json(200, message)

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
        self.send_stream(
            f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
        )


class FakeAnthropic(FakeServer):
    """Start with ``start()`` (or ``with FakeAnthropic() as server:``), stop with ``stop()``."""

    name = "fake-anthropic"
    endpoint = ENDPOINT
    handler = _MessagesHandler
    limit_error = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "fake server: request limit reached",
        },
    }

    def __init__(
        self, reply: Reply = "OK-FAKE", *, tool_use: ToolUse | None = None, **options: Any
    ) -> None:
        super().__init__(reply, **options)
        self.tool_use = tool_use

    def messages(self) -> list[dict[str, Any]]:
        """The recorded bodies of ``POST /v1/messages`` requests, in arrival order."""
        return self.bodies()

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
