"""The `turns` table: the append-only raw transcript (each turn's session row is kept by
store.sessions)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from mnemoweave.model import Turn
from mnemoweave.store import fts, graph, sessions
from mnemoweave.store.db import first, inserted_id, number
from mnemoweave.text import language

RANKED = "id, session_id, role, text, ts, seq, project, lang"  # what ranking and hits read
EMBEDDED = "id, text, project"  # what the vector index is built from
_UNANSWERED = """
SELECT * FROM (
    SELECT * FROM turns AS asked
    WHERE role = 'user' AND ts >= ? AND NOT EXISTS (
        SELECT 1 FROM turns AS answer
        WHERE answer.session_id = asked.session_id AND answer.role = 'assistant'
          AND answer.seq > asked.seq
    )
    ORDER BY ts DESC, id DESC LIMIT ?
) ORDER BY session_id, seq
"""


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
    return first(db, "SELECT * FROM turns WHERE id = ?", (tid,))


def by_key(db: sqlite3.Connection, key: str) -> sqlite3.Row | None:
    return first(db, "SELECT * FROM turns WHERE key = ?", (key,))


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
    sessions.ensure(db, session, host, project, ts)
    seq = db.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?", (session,)
    ).fetchone()[0]
    cur = db.execute(
        "INSERT INTO turns (session_id, host, project, role, text, ts, seq, key, kind,"
        " kind_conf, lang) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session, host, project, role, text, ts, seq, key, kind, kind_conf, language(text)),
    )
    tid = inserted_id(cur)
    if role == "user":
        sessions.said(db, session, tid)
    fts.index(db, "turns", tid, text)
    return tid, seq


def delete(db: sqlite3.Connection, tid: int) -> None:
    fts.unindex(db, "turns", tid)
    graph.forget(db, "turns", tid, prune_now=True)
    sessions.unsaid(db, tid)
    db.execute("DELETE FROM turns WHERE id = ?", (tid,))


def reindex(db: sqlite3.Connection) -> None:
    rows = db.execute("SELECT id, text FROM turns").fetchall()
    fts.replace_all(db, "turns", ((r["id"], r["text"]) for r in rows))


def undistilled(
    db: sqlite3.Connection,
    *,
    session: str | None = None,
    since: float | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Turn]:
    """Turns distill has not walked yet, oldest first: a window over the whole history."""
    where, params = _where(["distilled IS NULL"], session=session, start=since)
    rows = db.execute(
        f"SELECT * FROM turns WHERE {where} ORDER BY id LIMIT ? OFFSET ?",
        [*params, -1 if limit is None else limit, offset],
    )
    return [from_row(row) for row in rows]


def _where(
    clauses: list[str],
    *,
    session: str | None = None,
    start: float | None = None,
    end: float | None = None,
    ids: Sequence[int] | None = None,
) -> tuple[str, list[str | float]]:
    """A WHERE clause (and its parameters): `clauses`, and each condition given."""
    params: list[str | float] = []
    for given, clause in ((session, "session_id = ?"), (start, "ts >= ?"), (end, "ts <= ?")):
        if given is not None and given != "":
            clauses.append(clause)
            params.append(given)
    if ids is not None:
        chosen = list(ids) or [0]
        clauses.append(f"id IN ({','.join('?' * len(chosen))})")
        params.extend(chosen)
    return " AND ".join(clauses), params


def mark_distilled(db: sqlite3.Connection, refs: list[str], now: float) -> None:
    db.executemany(
        "UPDATE turns SET distilled = ? WHERE id = ?", [(now, int(ref[2:])) for ref in refs]
    )


def unanswered(db: sqlite3.Connection, since: float, limit: int) -> list[Turn]:
    """The user turns said since `since` that no assistant turn followed in their session:
    the newest `limit` of them, returned by session and in order."""
    return [from_row(row) for row in db.execute(_UNANSWERED, (since, limit)).fetchall()]


def transcript(db: sqlite3.Connection) -> list[Turn]:
    """Every turn, by session and in order."""
    rows = db.execute("SELECT * FROM turns ORDER BY session_id, seq").fetchall()
    return [from_row(row) for row in rows]


def count(db: sqlite3.Connection) -> int:
    """How many turns there are."""
    return number(db, "SELECT count(*) FROM turns")


def by_host(db: sqlite3.Connection) -> dict[str, int]:
    """How many turns each host reported, the most first ("" for a turn of none)."""
    rows = db.execute("SELECT coalesce(host, ''), count(*) FROM turns GROUP BY 1").fetchall()
    return dict(sorted(((str(host), n) for host, n in rows), key=lambda pair: (-pair[1], pair[0])))


def projects(db: sqlite3.Connection) -> dict[int, str]:
    """The project of every turn, by id."""
    return dict(db.execute("SELECT id, project FROM turns").fetchall())


def ranked(db: sqlite3.Connection, ids: Sequence[int]) -> list[sqlite3.Row]:
    """The RANKED columns of the turns with these ids that exist (empty `ids`: none)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return db.execute(f"SELECT {RANKED} FROM turns WHERE id IN ({marks})", ids).fetchall()


def ranked_at(db: sqlite3.Connection, positions: Sequence[tuple[str, int]]) -> list[sqlite3.Row]:
    """The RANKED columns of the turns at these (session, seq) positions that exist."""
    values = ",".join("(?, ?)" for _ in positions)
    return db.execute(
        f"SELECT {RANKED} FROM turns WHERE (session_id, seq) IN (VALUES {values})",
        [part for position in positions for part in position],
    ).fetchall()


def around(db: sqlite3.Connection, session: str, seq: int, reach: int) -> list[sqlite3.Row]:
    """The RANKED columns and kind of the user and assistant turns of `session` within
    `reach` places of `seq`, in order: what an exchange is cut from."""
    return db.execute(
        f"SELECT {RANKED}, kind FROM turns WHERE session_id = ? AND seq BETWEEN ? AND ?"
        " AND role IN ('user', 'assistant') ORDER BY seq",
        (session, seq - reach, seq + reach),
    ).fetchall()


def to_embed(db: sqlite3.Connection, ids: Sequence[int] | None = None) -> Iterator[sqlite3.Row]:
    """The EMBEDDED columns of every turn, or of those with these ids that exist; rows are
    read as they are iterated."""
    if ids is None:
        return db.execute(f"SELECT {EMBEDDED} FROM turns")
    marks = ",".join("?" * len(ids))
    return db.execute(f"SELECT {EMBEDDED} FROM turns WHERE id IN ({marks})", list(ids))


def window(
    db: sqlite3.Connection,
    *,
    session: str | None,
    start: float | None,
    end: float | None,
    ids: Sequence[int] | None,
    limit: int,
) -> list[sqlite3.Row]:
    """Turns of `session` (None: any) from `start` to `end` (None: open), among `ids` when
    given, oldest first, at most `limit`."""
    where, params = _where(["1"], session=session, start=start, end=end, ids=ids)
    return db.execute(
        f"SELECT * FROM turns WHERE {where} ORDER BY ts, seq LIMIT ?",
        [*params, limit],
    ).fetchall()
