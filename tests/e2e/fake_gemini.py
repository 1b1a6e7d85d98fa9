"""A fake Gemini API (generativelanguage v1beta) on 127.0.0.1 (a ``FakeServer``, see
fake_server.py): what the Gemini CLI talks to.

``POST .../models/M:generateContent`` and ``:streamGenerateContent`` (server-sent events
with ``?alt=sse``) answer with ``server.reply``; a request that asks for JSON output (the
CLI's model router, its next-speaker check) gets a small object built from its schema
(first enum value, "fake" strings, numbers at their minimum or 1). ``:countTokens`` and
``GET .../models`` answer too.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .fake_server import FakeServer, Handler, Reply

ENDPOINT = "Content"  # :generateContent and :streamGenerateContent


def from_schema(schema: Any, depth: int = 0) -> Any:
    """A small value a JSON schema accepts."""
    if not isinstance(schema, dict) or depth > 6:
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = str((kind[0] if isinstance(kind, list) and kind else kind) or "").lower()
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {
            k: from_schema(properties.get(k, {}), depth + 1)
            for k in schema.get("required") or properties
        }
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "fake"


def contents_text(body: dict[str, Any]) -> str:
    """Every text part of a request's contents."""
    return "\n".join(
        str(part.get("text", ""))
        for content in body.get("contents") or []
        if isinstance(content, dict)
        for part in content.get("parts") or []
        if isinstance(part, dict) and "text" in part
    )


class _GeminiHandler(Handler):
    fake: FakeGemini

    def other(self, method: str, path: str) -> dict[str, Any]:
        if path.endswith(":countTokens"):
            return {"totalTokens": 42}
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return {"models": [{"name": "models/gemini-2.5-pro", "displayName": "fake"}]}
        return {}

    def answer(self, body: dict[str, Any]) -> None:
        path = self.path.split("?")[0]
        model = path.rsplit("/", 1)[-1].split(":")[0]
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            text = json.dumps(from_schema(schema) or {})
        else:
            text = self.fake._reply_text(body)
        answer = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 3,
                "totalTokenCount": 13,
            },
            "modelVersion": model,
            "responseId": f"fake-{int(time.time() * 1000)}",
        }
        if not path.endswith(":streamGenerateContent"):
            self.send_json(200, answer)
        elif "alt=sse" in self.path:
            self.send_stream([f"data: {json.dumps(answer)}\r\n\r\n".encode()])
        else:
            data = json.dumps([answer]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


class FakeGemini(FakeServer):
    """Start with ``start()`` (or ``with FakeGemini() as server:``), stop with ``stop()``."""

    name = "fake-gemini"
    endpoint = ENDPOINT
    handler = _GeminiHandler
    limit_error = {"error": {"code": 400, "message": "fake server: request limit reached"}}

    def __init__(self, reply: Reply = "OK-FAKE", **options: Any) -> None:
        super().__init__(reply, **options)

    def turns(self) -> list[dict[str, Any]]:
        """The bodies of the main turns (streamed), not the router's classification calls."""
        return [
            r["body"]
            for r in list(self.requests)
            if str(r.get("path", "")).split("?")[0].endswith(":streamGenerateContent")
            and isinstance(r.get("body"), dict)
        ]
