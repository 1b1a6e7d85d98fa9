"""Projects as the store knows them: the keys its rows are scoped by, and renaming one."""

from __future__ import annotations

import sqlite3

TABLES = ("memories", "cards", "turns", "sessions")  # the tables with a `project` column


def counts(db: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Every project key (global '' included) with its rows per table."""
    found: dict[str, dict[str, int]] = {}
    for table in TABLES:
        rows = db.execute(f"SELECT project, count(*) FROM {table} GROUP BY project")
        for project, n in rows:
            found.setdefault(project, dict.fromkeys(TABLES, 0))[table] = n
    return dict(sorted(found.items()))


def rename(db: sqlite3.Connection, old: str, new: str) -> int:
    """Move every row of project `old` to `new` (merging when `new` exists); rows moved."""
    moved = 0
    for table in TABLES:
        moved += db.execute(
            f"UPDATE {table} SET project = ? WHERE project = ?", (new, old)
        ).rowcount
    return moved
