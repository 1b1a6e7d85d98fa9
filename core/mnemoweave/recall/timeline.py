"""Sessions as people browse them: the sessions of a project, newest first, and what the
weave put before each prompt of one (its line ids, so "why did the model see that?" has
an answer). The turns themselves come from `rehydrate`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.scope import visible
from mnemoweave.store import sessions as sessions_table

if TYPE_CHECKING:
    from mnemoweave.engine import Engine


def sessions(
    engine: Engine, *, project: str | None = None, n: int = 50, offset: int = 0
) -> list[dict[str, Any]]:
    """Sessions newest first (the project's and global ones; None: every project), each
    with its host, project, start and end, and how many turns and woven prompts it holds."""
    if n < 1 or offset < 0:
        raise InvalidInput(f"bad page: n {n} (>= 1), offset {offset} (>= 0)")
    return sessions_table.listing(engine.db, visible(project), n, offset)


def injections(engine: Engine, session: str) -> list[dict[str, Any]]:
    """What the weave put before each prompt of `session`, oldest first: {ts, refs, tokens}."""
    if not session.strip():
        raise InvalidInput("name a session")
    return sessions_table.injections(engine.db, session)
