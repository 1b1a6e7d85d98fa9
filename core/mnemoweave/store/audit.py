"""The audit log: one row per mutation, so changes can be reviewed and rolled back."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from mnemoweave.model import check_identifier


def record(
    db: sqlite3.Connection,
    action: str,
    target: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    actor: str = "user",
) -> None:
    """One row; an actor holding what looks like a secret is refused (the caller's
    transaction, and so its change, is rolled back)."""
    check_identifier(actor, "actor")
    db.execute(
        "INSERT INTO audit (ts, actor, action, target, before, after) VALUES (?, ?, ?, ?, ?, ?)",
        (
            time.time(),
            actor,
            action,
            target,
            None if before is None else json.dumps(before, ensure_ascii=False),
            None if after is None else json.dumps(after, ensure_ascii=False),
        ),
    )


def scrub(db: sqlite3.Connection, target: str) -> None:
    """Forget the content recorded for a purged target, keeping the fact that it existed."""
    db.execute("UPDATE audit SET before = NULL, after = NULL WHERE target = ?", (target,))


def by_actor(db: sqlite3.Connection, actor: str) -> list[sqlite3.Row]:
    """The rows one actor wrote, oldest first."""
    return db.execute("SELECT * FROM audit WHERE actor = ? ORDER BY id", (actor,)).fetchall()
