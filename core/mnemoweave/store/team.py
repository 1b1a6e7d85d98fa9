"""The team tables (migration m014_team): what is shared, what was published, the mirror.

- `team_shared`: memories accepted with `--share` (a project's memories listed in
  `team_projects` are shared without a mark);
- `team_published`: per memory, the content id and the `updated` time this member last
  sent to the team's server: the outbox is the difference between it and what should be
  there (team/outbox.py), so nothing is lost while the server is away;
- `team_mirror` (+ `team_mirror_fts`): the team's memories pulled from the server, which
  search and the weave read without touching the network;
- `team_state`: the sync's cursors and last outcome, as text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mnemoweave.store import fts
from mnemoweave.store.db import number


@dataclass(frozen=True)
class TeamRecord:
    """One memory as the team's server holds it (and the mirror keeps it)."""

    cid: str
    project: str
    kind: str
    text: str
    authors: tuple[str, ...]
    created: float
    updated: float


# --- shared marks and the published record ------------------------------------------------


def mark_shared(db: sqlite3.Connection, memory_ids: Iterable[int], now: float) -> None:
    db.executemany(
        "INSERT OR IGNORE INTO team_shared (memory_id, since) VALUES (?, ?)",
        [(i, now) for i in memory_ids],
    )


def is_shared(db: sqlite3.Connection, memory_id: int) -> bool:
    found = db.execute("SELECT 1 FROM team_shared WHERE memory_id = ?", (memory_id,))
    return found.fetchone() is not None


def shareable(db: sqlite3.Connection, projects: Sequence[str]) -> list[sqlite3.Row]:
    """Active project memories that are marked shared or belong to one of `projects`
    (global memories never are), oldest first."""
    marks = ",".join("?" * len(projects))
    listed = f" OR m.project IN ({marks})" if projects else ""
    return db.execute(
        "SELECT m.id, m.kind, m.body, m.project, m.created, m.updated FROM memories m"
        " WHERE m.status = 'active' AND m.project != ''"
        f" AND (m.id IN (SELECT memory_id FROM team_shared){listed}) ORDER BY m.id",
        list(projects),
    ).fetchall()


def published(db: sqlite3.Connection) -> dict[int, tuple[str, float]]:
    """memory id -> (content id, updated) as last sent to the server."""
    rows = db.execute("SELECT memory_id, cid, updated FROM team_published")
    return {row[0]: (row[1], row[2]) for row in rows}


def record_published(db: sqlite3.Connection, rows: Iterable[tuple[int, str, float]]) -> None:
    db.executemany(
        "INSERT OR REPLACE INTO team_published (memory_id, cid, updated) VALUES (?, ?, ?)",
        list(rows),
    )


def unpublish(db: sqlite3.Connection, memory_ids: Iterable[int]) -> None:
    db.executemany("DELETE FROM team_published WHERE memory_id = ?", [(i,) for i in memory_ids])


def forget_team(db: sqlite3.Connection) -> None:
    """Another team (or server): what was published and mirrored belongs to the old one."""
    for table in ("team_published", "team_mirror", "team_state"):
        db.execute(f"DELETE FROM {table}")
    db.execute("DELETE FROM team_mirror_fts")


# --- state ------------------------------------------------------------------------------


def state(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT key, value FROM team_state").fetchall())


def set_state(db: sqlite3.Connection, values: dict[str, str]) -> None:
    db.executemany(
        "INSERT OR REPLACE INTO team_state (key, value) VALUES (?, ?)", list(values.items())
    )


# --- the mirror -------------------------------------------------------------------------


def upsert_mirror(db: sqlite3.Connection, records: Sequence[TeamRecord]) -> None:
    """Insert or update mirrored records by content id (the full-text index follows)."""
    for r in records:
        authors = json.dumps(list(r.authors))
        old = db.execute("SELECT id FROM team_mirror WHERE cid = ?", (r.cid,)).fetchone()
        if old is None:
            cur = db.execute(
                "INSERT INTO team_mirror (cid, project, kind, text, authors, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (r.cid, r.project, r.kind, r.text, authors, r.created, r.updated),
            )
            rowid = cur.lastrowid
        else:
            rowid = old[0]
            db.execute(
                "UPDATE team_mirror SET project = ?, kind = ?, text = ?, authors = ?,"
                " created = ?, updated = ? WHERE id = ?",
                (r.project, r.kind, r.text, authors, r.created, r.updated, rowid),
            )
            fts.unindex(db, "team_mirror", rowid)
        fts.index(db, "team_mirror", int(rowid or 0), r.text)


def remove_mirror(db: sqlite3.Connection, cids: Iterable[str]) -> None:
    for cid in cids:
        row = db.execute("DELETE FROM team_mirror WHERE cid = ? RETURNING id", (cid,)).fetchone()
        if row is not None:
            fts.unindex(db, "team_mirror", row[0])


def mirror_rows(db: sqlite3.Connection, cids: Sequence[str]) -> dict[str, sqlite3.Row]:
    """Mirrored rows by content id (those still there)."""
    found: dict[str, sqlite3.Row] = {}
    for start in range(0, len(cids), 500):
        part = cids[start : start + 500]
        rows = db.execute(
            f"SELECT * FROM team_mirror WHERE cid IN ({','.join('?' * len(part))})", part
        )
        found.update((row["cid"], row) for row in rows)
    return found


def mirror_by_rowid(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, sqlite3.Row]:
    if not ids:
        return {}
    rows = db.execute(f"SELECT * FROM team_mirror WHERE id IN ({','.join('?' * len(ids))})", ids)
    return {row["id"]: row for row in rows}


def mirror_count(db: sqlite3.Connection) -> int:
    return number(db, "SELECT count(*) FROM team_mirror")
