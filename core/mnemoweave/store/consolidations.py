"""The `consolidations` table: one row per `consolidate propose` (its report as JSON), then
the items applied and the run's state. Only this module writes it."""

from __future__ import annotations

import json
import sqlite3
from typing import Any


def create(db: sqlite3.Connection, created: float, scope: str, report: dict[str, Any]) -> int:
    cur = db.execute(
        "INSERT INTO consolidations (created, scope, report) VALUES (?, ?, ?)",
        (created, scope, json.dumps(report, ensure_ascii=False)),
    )
    return int(cur.lastrowid or 0)


def get(db: sqlite3.Connection, run: int) -> dict[str, Any] | None:
    row = db.execute("SELECT * FROM consolidations WHERE id = ?", (run,)).fetchone()
    if row is None:
        return None
    return dict(row) | {"report": json.loads(row["report"]), "applied": json.loads(row["applied"])}


def mark(db: sqlite3.Connection, run: int, state: str, applied: list[str]) -> None:
    db.execute(
        "UPDATE consolidations SET state = ?, applied = ? WHERE id = ?",
        (state, json.dumps(applied), run),
    )


def latest(db: sqlite3.Connection) -> float | None:
    """When the newest run was proposed (None: never)."""
    newest = db.execute("SELECT max(created) FROM consolidations").fetchone()[0]
    return None if newest is None else float(newest)
