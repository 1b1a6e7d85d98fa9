"""The learning queue: tasks a skill check found no skill for, kept to be learned (taught
as a skill) and then closed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.store import skills as skills_table
from mnemoweave.store.db import transaction
from mnemoweave.text import clean

if TYPE_CHECKING:
    from mnemoweave.engine import Engine


def add(engine: Engine, task: str) -> None:
    """Queue a task (cleaned as stored text is); asked again, it counts once more."""
    text, now = " ".join(clean(task).split()), time.time()
    if not text:
        return
    with transaction(engine.db) as db:
        skills_table.queue_add(db, text, now)


def _entry(row: Any) -> dict[str, Any]:
    return {
        "number": row["id"],
        "task": row["task"],
        "asked": row["asked"],
        "done": bool(row["done"]),
    }


def entries(engine: Engine) -> list[dict[str, Any]]:
    """The open entries, the most asked first."""
    return [_entry(row) for row in skills_table.queue_open(engine.db)]


def close(engine: Engine, which: str) -> dict[str, Any]:
    """Close the open entry `which`: its number as listed, or its task's text."""
    which = " ".join(which.split())
    if not which:
        raise InvalidInput("say which entry: its number or its task")
    with transaction(engine.db) as db:
        row = skills_table.queue_find(db, which)
        if row is None:
            raise NotFound(f"no open entry {which!r} in the learning queue (see `skill queue`)")
        skills_table.queue_close(db, row["id"], time.time())
    return _entry(row) | {"done": True}
