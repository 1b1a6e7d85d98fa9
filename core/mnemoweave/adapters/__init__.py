"""Host adapters: a host's hook payloads -> canonical events for the Engine, and the
answer the host reads back. Adapters use the Engine API only, never the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..model import SessionEvent
from . import claude_code, dsh, opencode

if TYPE_CHECKING:
    from ..engine import Engine

HOSTS = {claude_code.HOST: claude_code, opencode.HOST: opencode, dsh.HOST: dsh}
OPENING = ("start", "pre_compact")  # session events that change what the host's context holds


def handle(engine: Engine, host: str, event: str, payload: Any) -> dict[str, Any] | None:
    """Run one host hook event; the JSON the host expects back, or None for no output.

    A start or a compaction is recorded before the answer is woven (the weave then knows
    the host's context is new); turns are stored after it, so the answer never quotes the
    prompt back to the model."""
    adapter = HOSTS.get(host)
    if adapter is None:
        raise InvalidInput(f"unknown host {host!r}; use one of: {', '.join(HOSTS)}")
    announced = adapter.events(event, payload)
    early = [isinstance(item, SessionEvent) and item.kind in OPENING for item in announced]
    for item in (item for item, now in zip(announced, early, strict=True) if now):
        engine.handle(item)
    answer = adapter.answer(engine, event, payload, announced)
    for item in (item for item, now in zip(announced, early, strict=True) if not now):
        engine.handle(item)
    return answer
