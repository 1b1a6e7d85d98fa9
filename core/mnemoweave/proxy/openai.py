"""OpenAI Chat Completions (`POST /v1/chat/completions`): where the weave goes, what the
conversation is, and the reply assembled from a JSON completion or its SSE chunks.

The weave is one system message placed after the client's own leading system (or
developer) messages. Only the first choice of a reply is read."""

from __future__ import annotations

import json
from typing import Any

from mnemoweave.proxy.turns import Conversation, Reply, text_of

PATHS = ("/chat/completions",)
SYSTEM_ROLES = ("system", "developer")


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    given = body.get("messages")
    return [m for m in given if isinstance(m, dict)] if isinstance(given, list) else []


def _leading_system(messages: list[dict[str, Any]]) -> int:
    count = 0
    while count < len(messages) and messages[count].get("role") in SYSTEM_ROLES:
        count += 1
    return count


def conversation(body: dict[str, Any]) -> Conversation | None:
    """The conversation a request continues; None when it holds no user message."""
    messages = _messages(body)
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return None
    system = "\n".join(text_of(m.get("content")) for m in messages[: _leading_system(messages)])
    last = messages[-1]
    prompt = text_of(last.get("content")) if last.get("role") == "user" else ""
    return Conversation(system, text_of(users[0].get("content")), prompt, len(messages) - 1)


def with_context(body: dict[str, Any], context: str) -> dict[str, Any]:
    """The body with the woven context as a system message after the client's own."""
    messages = list(body["messages"])
    at = _leading_system(messages)
    return body | {
        "messages": [*messages[:at], {"role": "system", "content": context}, *messages[at:]]
    }


def reply_of(answer: Any) -> Reply:
    """The reply of a JSON completion."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    if not isinstance(message, dict):
        return Reply()
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            calls.append((function["name"], function.get("arguments")))
    return Reply(text_of(message.get("content")), calls)


class Stream:
    """A streamed completion's reply, from its `data:` chunks."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, list[str]] = {}  # index -> [name, arguments so far]
        self.done = False  # the reply is whole (a client may leave before the stream ends)

    def add(self, event: str, data: str) -> None:
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if choice.get("index", 0) != 0 or not isinstance(delta, dict):
                continue
            self.done = self.done or bool(choice.get("finish_reason"))
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                self._add_call(call)

    def _add_call(self, call: Any) -> None:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            return
        index = call.get("index", 0)
        name, arguments = self._calls.setdefault(index if isinstance(index, int) else 0, ["", ""])
        self._calls[index] = [
            name + (function.get("name") or ""),
            arguments + (function.get("arguments") or ""),
        ]

    def reply(self) -> Reply:
        calls = [(name, arguments) for _, (name, arguments) in sorted(self._calls.items())]
        return Reply("".join(self._text), calls)
