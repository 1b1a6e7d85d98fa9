"""Host adapters: a host's hook payloads -> canonical events for the Engine, and the
answer the host reads back. Adapters use the Engine API only, never the store.

Hosts are plugins (register_hosts): this module registers the built-in ones, and `hosts(pm)`
gives every registered adapter by name; a plugin adds a host without an edit here."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.hookspecs import hookimpl
from mnemoweave.hosts import claude_code, codex, dsh, gemini, opencode, proxy
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.plugins import Plugins, registry

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

BUILTIN = {
    claude_code.HOST: claude_code,
    opencode.HOST: opencode,
    codex.HOST: codex,
    gemini.HOST: gemini,
    dsh.HOST: dsh,
}
BUILTIN[proxy.HOST] = proxy  # the memory proxy (proxy/), a host of the daemon's hooks route
OPENING = ("start", "pre_compact")  # session events that change what the host's context holds


@hookimpl
def register_hosts(register: Any) -> None:
    """The built-in hosts: Claude Code, OpenCode, Codex, Gemini, dsh and the memory proxy."""
    for name, adapter in BUILTIN.items():
        register(name, adapter)


def hosts(pm: Plugins) -> dict[str, Any]:
    """Every registered host adapter by name (register_hosts), asked once per manager. The
    built-in hosts join a manager here, the first time it is asked: the core's plugin
    manager knows no outer layer."""
    if pm.get_plugin(__name__) is None:
        pm.register(sys.modules[__name__], name=__name__)
    return registry(pm, "register_hosts")


@dataclass(frozen=True)
class Handled:
    """What one hook event gave: the host's answer, and what is stored after it."""

    answer: dict[str, Any] | None
    later: tuple[Turn | SessionEvent, ...]  # turns and events the answer does not wait for


def respond(engine: Engine, host: str, event: str, payload: Any, *, answer: bool = True) -> Handled:
    """Run the part of one host hook event the answer needs, and give the answer (the JSON
    the host expects back, or None for no output; with `answer` False, none is woven).

    A start or a compaction is recorded before the answer is woven (the weave then knows
    the host's context is new); turns and the other events come back in `later`, to be
    stored after the answer (see `store`), so the answer never quotes the prompt back to
    the model and the host does not wait for the store."""
    known = hosts(engine.pm)
    adapter = known.get(host)
    if adapter is None:
        raise InvalidInput(f"unknown host {host!r}; use one of: {', '.join(known)}")
    announced = adapter.events(event, payload)
    opening = [isinstance(item, SessionEvent) and item.kind in OPENING for item in announced]
    for item, now in zip(announced, opening, strict=True):
        if now:
            engine.handle(item)
    woven = adapter.answer(engine, event, payload, announced) if answer else None
    later = tuple(item for item, now in zip(announced, opening, strict=True) if not now)
    return Handled(woven, later)


def store(engine: Engine, handled: Handled) -> None:
    """Store what an answered event left for later, in order."""
    for item in handled.later:
        engine.handle(item)


def handle(engine: Engine, host: str, event: str, payload: Any) -> dict[str, Any] | None:
    """Run one host hook event whole: the answer, then the store."""
    handled = respond(engine, host, event, payload)
    store(engine, handled)
    return handled.answer
