"""A fake OpenAI-compatible Chat Completions API on 127.0.0.1 (a ``FakeServer``, see
fake_server.py): what OpenCode's `@ai-sdk/openai-compatible` provider talks to.

``POST .../chat/completions`` answers with ``server.reply`` as one JSON completion or as a
server-sent event stream, whichever the request asks for; the token usage reported with it
is ``server.usage`` (or what it returns for the request body, when it is callable; a count
over the model's context limit makes OpenCode compact the session). A last user message
containing ``server.tool_trigger`` (and no tool result after it) gets one ``bash`` tool call
running ``server.tool_command`` when the request offers that tool. ``GET .../models`` lists
one model.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .fake_server import FakeServer, Handler, Reply, posted_bodies

Usage = dict[str, int] | Callable[[dict[str, Any]], dict[str, int]]
USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}

ENDPOINT = "/chat/completions"
MODEL = "fake-model"


def content_text(content: Any) -> str:
    """The text of a chat message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def completion_bodies(requests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The bodies of the recorded chat completion requests, in arrival order."""
    return posted_bodies(requests, ENDPOINT)


class _CompletionsHandler(Handler):
    fake: FakeOpenAI

    def other(self, method: str, path: str) -> dict[str, Any]:
        if method == "GET" and path.endswith("/models"):
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}
            return {"object": "list", "data": [model]}
        return {}

    def answer(self, body: dict[str, Any]) -> None:
        model = body.get("model") or MODEL
        ident = "chatcmpl-fake" + uuid.uuid4().hex[:12]
        created = int(time.time())
        tool = self.fake._tool_call(body)
        usage = self.fake._usage(body)
        if not body.get("stream"):
            if tool:
                call = {
                    "id": tool["id"],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": tool["arguments"]},
                }
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
            else:
                message = {"role": "assistant", "content": self.fake._reply_text(body)}
            choice = {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool else "stop",
            }
            self.send_json(
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                },
            )
            return

        def chunk(delta: dict[str, Any], finish: str | None = None, last: bool = False) -> bytes:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if last:
                data["usage"] = usage
            return f"data: {json.dumps(data)}\n\n".encode()

        def chunks() -> Iterator[bytes]:
            yield chunk({"role": "assistant", "content": ""})
            if tool:
                head = {
                    "index": 0,
                    "id": tool["id"],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": ""},
                }
                rest = {"index": 0, "function": {"arguments": tool["arguments"]}}
                yield chunk({"tool_calls": [head]})
                yield chunk({"tool_calls": [rest]})
                yield chunk({}, "tool_calls", last=True)
            else:
                yield chunk({"content": self.fake._reply_text(body)})
                yield chunk({}, "stop", last=True)
            yield b"data: [DONE]\n\n"

        self.send_stream(chunks())


class FakeOpenAI(FakeServer):
    """Start with ``start()`` (or ``with FakeOpenAI() as server:``), stop with ``stop()``."""

    name = "fake-openai"
    endpoint = ENDPOINT
    handler = _CompletionsHandler
    limit_error = {
        "error": {
            "message": "fake server: request limit reached",
            "type": "invalid_request_error",
        }
    }

    def __init__(self, reply: Reply = "OK-FAKE", **options: Any) -> None:
        super().__init__(reply, **options)
        self.usage: Usage = dict(USAGE)

    @property
    def base_url(self) -> str:
        """What a provider's `baseURL` should be (the API root, with /v1)."""
        return super().base_url + "/v1"

    def completions(self) -> list[dict[str, Any]]:
        """The recorded bodies of chat completion requests, in arrival order."""
        return self.bodies()

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        return dict(self.usage(body) if callable(self.usage) else self.usage)

    def _tool_call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        tools = body.get("tools") or []
        names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)]
        if "bash" not in names:
            return None
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users or any(m.get("role") == "tool" for m in messages[users[-1] :]):
            return None
        if self.tool_trigger not in content_text(messages[users[-1]].get("content")):
            return None
        arguments = {"command": self.tool_command, "description": "Run a test command"}
        return {
            "id": "call_fake_" + uuid.uuid4().hex[:12],
            "name": "bash",
            "arguments": json.dumps(arguments),
        }
