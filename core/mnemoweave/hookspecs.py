"""Every pluggy hookspec of mnemoweave, with its contract.

Plugins implement these with `@mnemoweave.hookimpl` and are found through the `mnemoweave`
entry-point group. A `register_*` hook registers items by name, and a name registered twice
is settled the same way in each: the built-in item is kept, else the first-registered
plugin's, and the clash is reported with the plugin that caused it (`status`). Hooks are
called with keyword arguments, take frozen dataclasses and return plain data; an
implementation may accept only the arguments it needs. So are the classifiers and
distillers the registries register. An implementation that raises is logged, counted in
`status` and skipped: it never breaks a turn. docs/plugin-hooks.md has an example plugin
for each hook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from mnemoweave.embed.base import EmbedderSpec
    from mnemoweave.engine import Engine
    from mnemoweave.model import Block, Card, Classification, Hit, Memory, SessionEvent, Turn

PROJECT = "mnemoweave"  # the markers' project, and the plugins' entry-point group
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --- registries: asked when what they register is first needed ------------------------------


@hookspec
def register_embedders(register: Callable[[EmbedderSpec], None]) -> None:
    """Register embedding models: call `register(EmbedderSpec(...))` once per model.

    The spec names the model and its dimension, and says how to build its files into a
    directory and how to load them. The `embedder` setting picks which one is used.
    """


@hookspec
def register_classifiers(register: Callable[[str, Callable[[Turn], Classification]], None]) -> None:
    """Register turn classifiers: call `register(name, classify)` once per classifier.

    `classify` is called with the keyword `turn` (`classify(turn=turn)`) and returns a
    `Classification(kind, confidence)`. The `classifier` setting picks the one used when no
    `classify_turn` implementation answers.
    """


@hookspec
def register_distillers(register: Callable[[str, Callable[..., list[Card]]], None]) -> None:
    """Register distillers: call `register(name, distill)` once per distiller.

    A distiller turns fragments (stored turns) into candidate cards with evidence. It is
    called with keywords, `distill(turns=turns, engine=engine)` (one session's undistilled
    turns, oldest first), so `lambda turns, **kw: []` is a distiller; it returns `Card`s whose
    evidence are turn ids of `turns`. The `distiller` setting picks the one used. The
    built-in one is extractive and local; a distiller that needs a network must be off by
    default.
    """


@hookspec
def register_hosts(register: Callable[[str, Any], None]) -> None:
    """Register host adapters: call `register(name, adapter)` once per host.

    `adapter` is any object (a module will do) with `events(event, payload)`, the canonical
    `Turn`s and `SessionEvent`s one hook event of the host announces (InvalidInput for a
    payload it refuses), and `answer(engine, event, payload, announced)`, the JSON the host
    expects back (None for no output). `adapters.handle(engine, name, event, payload)` and
    the daemon's `/v1/hooks/{name}/{event}` route dispatch to it; `adapters.hosts(pm)` asks
    once per plugin manager.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add commands to the `mnemoweave` command line: `@cli.command()` on the click group.

    Called once per CLI, the first time it looks for a command it does not have or lists
    its commands (`--help`), so built-in commands (and the hosts' hooks) never wait for it.
    """


# --- events announced by host adapters ------------------------------------------------------


@hookspec
def on_session_start(event: SessionEvent, engine: Engine) -> None:
    """A session started (or resumed, or was cleared or compacted: see `event.source`)."""


@hookspec
def on_turn(turn: Turn, engine: Engine) -> None:
    """A turn was stored: `turn` carries its id, seq and classification."""


@hookspec
def on_session_idle(event: SessionEvent, engine: Engine) -> None:
    """The agent finished answering and waits for the user."""


@hookspec
def on_pre_compact(event: SessionEvent, engine: Engine) -> None:
    """The host is about to compact the session's context."""


@hookspec
def on_session_end(event: SessionEvent, engine: Engine) -> None:
    """The session ended."""


# --- decisions and contributions -----------------------------------------------------------


@hookspec(firstresult=True)
def classify_turn(turn: Turn) -> Classification | None:
    """Classify a turn as pref, pers, skill, mission, conclusion or chat.

    firstresult: the first non-None answer wins (plugins registered later are asked
    first); return None to let the next classifier decide.
    """


@hookspec
def weave_blocks(
    engine: Engine, query: str, session: str | None, project: str | None, budget: int
) -> list[Block] | None:
    """Contribute blocks to the weave shown before a model turn.

    Each `Block` names its tier (scene, knowledge or nudge) and carries lines with ids,
    ages and scores. The weave orders blocks by tier and score and keeps what fits in
    `budget` tokens; return None or [] to add nothing.
    """


@hookspec
def search_hits(
    engine: Engine,
    source: str,
    query: str,
    k: int,
    scope: Sequence[str] | None,
    kind: str | None,
    mode: str,
) -> list[Hit] | None:
    """Contribute hits from a source a plugin holds (team memory holds "team").

    Called by every search whose `source` is neither "memories" nor "turns" ("all" too);
    `scope` is the projects the search may read (None: every one). Hits are ranked with the
    store's own; return None or [] to add nothing.
    """


# --- notifications -------------------------------------------------------------------------


@hookspec
def on_card(card: Card) -> None:
    """A candidate card was proposed (stored by distill, `card.status` "pending") or decided
    (accepted or rejected through `Engine.review`: `card.status` says which, and an accepted
    card's `memory_id` names its memory). Called after the commit, with the card as stored."""


@hookspec
def on_memory(memory: Memory, action: str) -> None:
    """A memory changed: `action` is new, merged, edited, trashed, restored, superseded or
    purged.

    Called after the commit, with the memory as stored then (merged: the memory the
    duplicate merged into; purged: as it was just before it was deleted).
    """
