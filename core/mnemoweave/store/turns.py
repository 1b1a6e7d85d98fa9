"""The `turns` and `sessions` tables: the append-only raw transcript."""

from __future__ import annotations

import sqlite3

from ..model import Turn
from ..text import language
from . import fts


def from_row(row: sqlite3.Row) -> Turn:
    return Turn(
        session=row["session_id"],
        role=row["role"],
        text=row["text"],
        ts=row["ts"],
        host=row["host"],
        project=row["project"],
        key=row["key"],
        id=f"t_{row['id']}",
        seq=row["seq"],
        kind=row["kind"],
        kind_conf=row["kind_conf"],
    )


def get(db: sqlite3.Connection, tid: int) -> sqlite3.Row | None:
    return db.execute("SELECT * FROM turns WHERE id = ?", (tid,)).fetchone()


def by_key(db: sqlite3.Connection, key: str) -> sqlite3.Row | None:
    return db.execute("SELECT * FROM turns WHERE key = ?", (key,)).fetchone()


def insert(
    db: sqlite3.Connection,
    *,
    session: str,
    role: str,
    text: str,
    ts: float,
    host: str,
    project: str,
    key: str,
    kind: str | None = None,
    kind_conf: float | None = None,
) -> tuple[int, int]:
    """Append a turn at the end of its session (creating the session row if needed).

    Returns the turn's row id and its position (seq) in the session."""
    db.execute(
        "INSERT INTO sessions (id, host, project, started) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO NOTHING",
        (session, host, project, ts),
    )
    seq = db.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?", (session,)
    ).fetchone()[0]
    cur = db.execute(
        "INSERT INTO turns (session_id, host, project, role, text, ts, seq, key, kind,"
        " kind_conf, lang) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session, host, project, role, text, ts, seq, key, kind, kind_conf, language(text)),
    )
    tid = int(cur.lastrowid)
    if role == "user":
        db.execute("UPDATE sessions SET last_user_turn = ? WHERE id = ?", (tid, session))
    fts.index(db, "turns", tid, text)
    return tid, seq


def delete(db: sqlite3.Connection, tid: int) -> None:
    fts.unindex(db, "turns", tid)
    db.execute("UPDATE sessions SET last_user_turn = NULL WHERE last_user_turn = ?", (tid,))
    db.execute("DELETE FROM turns WHERE id = ?", (tid,))


def reindex(db: sqlite3.Connection) -> None:
    rows = db.execute("SELECT id, text FROM turns").fetchall()
    fts.replace_all(db, "turns", ((r["id"], r["text"]) for r in rows))


def capsule(db: sqlite3.Connection, session: str) -> str:
    row = db.execute("SELECT capsule FROM sessions WHERE id = ?", (session,)).fetchone()
    return row[0] if row else ""


def set_capsule(db: sqlite3.Connection, session: str, capsule: str) -> None:
    db.execute("UPDATE sessions SET capsule = ? WHERE id = ?", (capsule, session))


def undistilled(
    db: sqlite3.Connection,
    *,
    session: str | None = None,
    since: float | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Turn]:
    """Turns distill has not walked yet, oldest first: a window over the whole history."""
    where, params = ["distilled IS NULL"], []
    if session is not None:
        where.append("session_id = ?")
        params.append(session)
    if since is not None:
        where.append("ts >= ?")
        params.append(since)
    rows = db.execute(
        f"SELECT * FROM turns WHERE {' AND '.join(where)} ORDER BY id LIMIT ? OFFSET ?",
        [*params, -1 if limit is None else limit, offset],
    )
    return [from_row(row) for row in rows]


def mark_distilled(db: sqlite3.Connection, refs: list[str], now: float) -> None:
    db.executemany(
        "UPDATE turns SET distilled = ? WHERE id = ?", [(now, int(ref[2:])) for ref in refs]
    )
