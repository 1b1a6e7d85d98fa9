"""The learning queue: tasks a skill check found no skill for, kept to be learned (taught
as a skill) and then closed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .errors import InvalidInput, NotFound
from .operations import remotable
from .store.db import transaction
from .text import clean

if TYPE_CHECKING:
    from .engine import Engine


def add(engine: Engine, task: str) -> None:
    """Queue a task (cleaned as stored text is); asked again, it counts once more."""
    text, now = " ".join(clean(task).split()), time.time()
    if not text:
        return
    with transaction(engine.db) as db:
        again = db.execute(
            "UPDATE skill_queue SET asked = asked + 1, last_asked = ?, done = NULL WHERE task = ?",
            (now, text),
        )
        if not again.rowcount:
            db.execute(
                "INSERT INTO skill_queue (task, created, last_asked) VALUES (?, ?, ?)",
                (text, now, now),
            )


def _entry(row: Any) -> dict[str, Any]:
    return {
        "number": row["id"],
        "task": row["task"],
        "asked": row["asked"],
        "done": bool(row["done"]),
    }


@remotable
def entries(engine: Engine) -> list[dict[str, Any]]:
    """The open entries, the most asked first."""
    rows = engine.db.execute(
        "SELECT * FROM skill_queue WHERE done IS NULL ORDER BY asked DESC, id"
    ).fetchall()
    return [_entry(row) for row in rows]


@remotable
def close(engine: Engine, which: str) -> dict[str, Any]:
    """Close the open entry `which`: its number as listed, or its task's text."""
    which = " ".join(which.split())
    if not which:
        raise InvalidInput("say which entry: its number or its task")
    with transaction(engine.db) as db:
        row = db.execute(
            "SELECT * FROM skill_queue WHERE done IS NULL AND (task = ? OR CAST(id AS TEXT) = ?)",
            (which, which),
        ).fetchone()
        if row is None:
            raise NotFound(f"no open entry {which!r} in the learning queue (see `skill queue`)")
        db.execute("UPDATE skill_queue SET done = ? WHERE id = ?", (time.time(), row["id"]))
    return _entry(row) | {"done": True}
