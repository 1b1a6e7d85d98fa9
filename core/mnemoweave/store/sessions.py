"""The `sessions` table: one row per host session (its capsule is kept by store.turns)."""

from __future__ import annotations

import sqlite3


def touch(
    db: sqlite3.Connection, session: str, host: str, project: str, now: float, ended: bool
) -> None:
    """Create the session if new; mark it ended (or reopened by a later start)."""
    db.execute(
        "INSERT INTO sessions (id, host, project, started) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO NOTHING",
        (session, host, project, now),
    )
    db.execute("UPDATE sessions SET ended = ? WHERE id = ?", (now if ended else None, session))
