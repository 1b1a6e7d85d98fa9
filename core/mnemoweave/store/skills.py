"""The `skills` table (procedures saved on purpose) and the `skill_queue` table (tasks a
skill check found no skill for, kept to be learned)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from mnemoweave.store.db import first, number


def save(
    db: sqlite3.Connection,
    name: str,
    *,
    summary: str,
    triggers: Sequence[str],
    steps: Sequence[str],
    source_urls: Sequence[str],
    now: float,
) -> None:
    """Insert the skill `name`, or update it (its creation time stays) when it exists."""
    db.execute(
        "INSERT INTO skills (name, summary, triggers, steps, source_urls, created, updated)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
        " summary = excluded.summary, triggers = excluded.triggers, steps = excluded.steps,"
        " source_urls = excluded.source_urls, updated = excluded.updated",
        (
            name,
            summary,
            json.dumps(list(triggers), ensure_ascii=False),
            json.dumps(list(steps), ensure_ascii=False),
            json.dumps(list(source_urls)),
            now,
            now,
        ),
    )


def get(db: sqlite3.Connection, name: str) -> sqlite3.Row | None:
    """The skill named `name`; None when there is none."""
    return first(db, "SELECT * FROM skills WHERE name = ?", (name,))


def record_use(db: sqlite3.Connection, name: str) -> None:
    """Count one more use of the skill `name`."""
    db.execute("UPDATE skills SET usage_count = usage_count + 1 WHERE name = ?", (name,))


def listing(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every skill, the most used first (then by name)."""
    return db.execute("SELECT * FROM skills ORDER BY usage_count DESC, name").fetchall()


def count(db: sqlite3.Connection) -> int:
    """How many skills there are."""
    return number(db, "SELECT count(*) FROM skills")


def queue_add(db: sqlite3.Connection, task: str, now: float) -> None:
    """Queue `task`; queued before, it counts as asked once more (and is open again)."""
    again = db.execute(
        "UPDATE skill_queue SET asked = asked + 1, last_asked = ?, done = NULL WHERE task = ?",
        (now, task),
    )
    if not again.rowcount:
        db.execute(
            "INSERT INTO skill_queue (task, created, last_asked) VALUES (?, ?, ?)",
            (task, now, now),
        )


def queue_open(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """The open queue entries, the most asked first (then the oldest)."""
    return db.execute(
        "SELECT * FROM skill_queue WHERE done IS NULL ORDER BY asked DESC, id"
    ).fetchall()


def queue_find(db: sqlite3.Connection, which: str) -> sqlite3.Row | None:
    """The open queue entry whose task is `which` or whose number (id) it spells; None
    when there is none."""
    return first(
        db,
        "SELECT * FROM skill_queue WHERE done IS NULL AND (task = ? OR CAST(id AS TEXT) = ?)",
        (which, which),
    )


def queue_close(db: sqlite3.Connection, entry: int, now: float) -> None:
    """Mark the queue entry `entry` (its id) done at `now`."""
    db.execute("UPDATE skill_queue SET done = ? WHERE id = ?", (now, entry))


def most_used(db: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    """Names and summaries of the most used skills (then by name)."""
    return db.execute(
        "SELECT name, summary FROM skills ORDER BY usage_count DESC, name LIMIT ?", (limit,)
    ).fetchall()
