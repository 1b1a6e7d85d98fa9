"""Anthropic Messages (`POST /v1/messages`): where the weave goes, what the conversation
is, and the reply assembled from a JSON message or its SSE events.

The weave is one more `system` text block after the client's own (a string system prompt
becomes a list holding it as a text block, then the weave)."""

from __future__ import annotations

import json
from typing import Any

from mnemoweave.proxy.turns import Conversation, Reply, text_of

PATHS = ("/messages",)


def conversation(body: dict[str, Any]) -> Conversation | None:
    """The conversation a request continues; None when it holds no user message."""
    given = body.get("messages")
    messages = [m for m in given if isinstance(m, dict)] if isinstance(given, list) else []
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return None
    last = messages[-1]
    prompt = text_of(last.get("content")) if last.get("role") == "user" else ""
    first = text_of(users[0].get("content"))
    return Conversation(text_of(body.get("system")), first, prompt, len(messages) - 1)


def with_context(body: dict[str, Any], context: str) -> dict[str, Any]:
    """The body with the woven context as a system block after the client's own."""
    system = body.get("system")
    if isinstance(system, str):
        blocks: list[Any] = [{"type": "text", "text": system}] if system else []
    else:
        blocks = list(system) if isinstance(system, list) else []
    return body | {"system": [*blocks, {"type": "text", "text": context}]}


def _calls(blocks: Any) -> list[tuple[str, Any]]:
    return [
        (b["name"], b.get("input"))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("name"), str)
    ]


def reply_of(answer: Any) -> Reply:
    """The reply of a JSON message."""
    content = answer.get("content") if isinstance(answer, dict) else None
    return Reply(text_of(content), _calls(content))


class Stream:
    """A streamed message's reply, from its content block events."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self.done = False  # the reply is whole (a client may leave before the stream ends)

    def add(self, event: str, data: str) -> None:
        try:
            given = json.loads(data)
        except ValueError:
            return
        if isinstance(given, dict) and given.get("type") == "message_stop":
            self.done = True
        if not isinstance(given, dict) or not isinstance(given.get("index"), int):
            return
        index, kind = given["index"], given.get("type")
        if kind == "content_block_start" and isinstance(given.get("content_block"), dict):
            self._blocks[index] = dict(given["content_block"]) | {"partial": ""}
        elif kind == "content_block_delta" and isinstance(given.get("delta"), dict):
            block, delta = self._blocks.setdefault(index, {"partial": ""}), given["delta"]
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                block["text"] = (block.get("text") or "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                block["partial"] += delta.get("partial_json") or ""

    def reply(self) -> Reply:
        blocks = [self._blocks[index] for index in sorted(self._blocks)]
        for block in blocks:
            if block.get("type") == "tool_use" and block["partial"]:
                block["input"] = block["partial"]
        return Reply(text_of(blocks), _calls(blocks))
