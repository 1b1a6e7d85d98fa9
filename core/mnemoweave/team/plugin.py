"""The built-in team plugin: team lines in the weave, and a sync woken at a session start.

Team lines come from the mirror (team/search.py), pass the same relevance gate as own
memories (relevance.py), are labelled with their authors, and sit in a knowledge block
just below the own memories' (TEAM_PRIORITY): for equal relevance an own memory is kept
first, and a team line above snippets of past sessions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemoweave.hookspecs import hookimpl
from mnemoweave.model import Block, Hit, Line, SessionEvent
from mnemoweave.recall.knowledge import KNOWLEDGE_K, MEMORY_FIRST
from mnemoweave.recall.relevance import Gate

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

TEAM_PRIORITY = MEMORY_FIRST - 0.01


@hookimpl
def search_hits(
    engine: Engine,
    source: str,
    query: str,
    k: int,
    scope: Sequence[str] | None,
    kind: str | None,
    mode: str,
) -> list[Hit]:
    """The team mirror's hits, for a search of "team" or "all" while a team is set."""
    if source not in ("team", "all") or not engine.config.team_url:
        return []
    from mnemoweave.team.search import hits  # only once a team is set

    return hits(engine, query, k, scope, kind, mode)


@hookimpl
def weave_blocks(engine: Engine, query: str, project: str | None) -> list[Block]:
    if not engine.config.team_url or not query.strip():
        return []
    found = engine.search(query, k=KNOWLEDGE_K, project=project, source="team", touch=False)
    if not found:
        return []
    gate = Gate(engine, query)
    scored = [(hit, gate.score(gate.signals(hit.text, hit.extra["explain"]))) for hit in found]
    threshold = engine.config.memory_gate  # reviewed memories, as own ones are
    now = time.time()
    lines = [
        Line(
            hit.text,
            hit.id,
            now - hit.created,
            score,
            f"{hit.kind} · team · {', '.join(hit.extra['authors'])}",
        )
        for hit, score in scored
        if score >= threshold
    ]
    return [Block("knowledge", tuple(lines), "mnemoweave:team", TEAM_PRIORITY)] if lines else []


@hookimpl
def on_session_start(event: SessionEvent, engine: Engine) -> None:
    """A new session pulls the team's latest (the daemon's sync thread, never this call)."""
    if engine.config.team_url:
        from mnemoweave.team.sync import waker

        waker(engine.home).set()
