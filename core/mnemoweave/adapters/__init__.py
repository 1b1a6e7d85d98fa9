"""Host adapters: a host's hook payloads -> canonical events for the Engine, and the
answer the host reads back. Adapters use the Engine API only, never the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from . import claude_code, dsh, opencode

if TYPE_CHECKING:
    from ..engine import Engine

HOSTS = {claude_code.HOST: claude_code, opencode.HOST: opencode, dsh.HOST: dsh}


def handle(engine: Engine, host: str, event: str, payload: Any) -> dict[str, Any] | None:
    """Run one host hook event; the JSON the host expects back, or None for no output.

    The answer is woven before the announced turns are stored, so the scene never quotes
    the prompt back to the model."""
    adapter = HOSTS.get(host)
    if adapter is None:
        raise InvalidInput(f"unknown host {host!r}; use one of: {', '.join(HOSTS)}")
    announced = adapter.events(event, payload)
    answer = adapter.answer(engine, event, payload, announced)
    for item in announced:
        engine.handle(item)
    return answer
