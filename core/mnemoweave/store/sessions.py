"""The `sessions` table (one row per host session: its capsule, its last user turn, when
it ended or was compacted), `woven` (the lines each session received, until a compaction)
and `injections` (the line ids woven before each prompt, kept). Only this module writes
them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from mnemoweave.model import check_identifier
from mnemoweave.store.db import first


def ensure(db: sqlite3.Connection, session: str, host: str, project: str, now: float) -> None:
    """Create the session if it is new; ids holding a secret are refused (model.py)."""
    check_identifier(session, "session id")
    check_identifier(host, "host")
    check_identifier(project, "project")
    db.execute(
        "INSERT INTO sessions (id, host, project, started) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO NOTHING",
        (session, host, project, now),
    )


def touch(
    db: sqlite3.Connection, session: str, host: str, project: str, now: float, ended: bool
) -> None:
    """Create the session if new; mark it ended (or reopened by a later start)."""
    ensure(db, session, host, project, now)
    db.execute("UPDATE sessions SET ended = ? WHERE id = ?", (now if ended else None, session))


def said(db: sqlite3.Connection, session: str, turn: int) -> None:
    """The user's latest turn in the session is row `turn`."""
    db.execute("UPDATE sessions SET last_user_turn = ? WHERE id = ?", (turn, session))


def unsaid(db: sqlite3.Connection, turn: int) -> None:
    """Row `turn` is being deleted: no session points at it as its last user turn."""
    db.execute("UPDATE sessions SET last_user_turn = NULL WHERE last_user_turn = ?", (turn,))


def capsule(db: sqlite3.Connection, session: str) -> str:
    row = db.execute("SELECT capsule FROM sessions WHERE id = ?", (session,)).fetchone()
    return row[0] if row else ""


def set_capsule(db: sqlite3.Connection, session: str, capsule: str) -> None:
    db.execute("UPDATE sessions SET capsule = ? WHERE id = ?", (capsule, session))


def compacted(db: sqlite3.Connection, session: str, now: float) -> None:
    """The host compacted (or cleared) the session: its context no longer holds what was
    woven into it, so every line may go in again."""
    db.execute("UPDATE sessions SET compacted = ? WHERE id = ?", (now, session))
    db.execute("DELETE FROM woven WHERE session_id = ?", (session,))


def get(db: sqlite3.Connection, session: str) -> sqlite3.Row | None:
    return first(db, "SELECT * FROM sessions WHERE id = ?", (session,))


def previous(db: sqlite3.Connection, project: str, session: str) -> sqlite3.Row | None:
    """The project's latest other session that holds turns (what a new session picks up)."""
    return first(
        db,
        "SELECT * FROM sessions INDEXED BY sessions_project"
        " WHERE project = ? AND id != ? AND capsule != '' ORDER BY started DESC LIMIT 1",
        (project, session),
    )


def woven(db: sqlite3.Connection, session: str) -> set[str]:
    """The refs of the lines already put before this session since its last compaction."""
    rows = db.execute("SELECT ref FROM woven WHERE session_id = ?", (session,))
    return {row[0] for row in rows}


def record_woven(db: sqlite3.Connection, session: str, refs: list[str], now: float) -> None:
    db.executemany(
        "INSERT INTO woven (session_id, ref, ts) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        [(session, ref, now) for ref in refs],
    )


EDITED = "edited:"  # before a memory's id: the memory was edited after the session had it


def edited(db: sqlite3.Connection, ref: str) -> None:
    """Memory `ref` was edited: each session that was given it is owed its new text (its
    record of the memory becomes EDITED + ref until the new text goes in)."""
    db.execute(
        "INSERT OR IGNORE INTO woven (session_id, ref, ts)"
        " SELECT session_id, ? || ref, ts FROM woven WHERE ref = ?",
        (EDITED, ref),
    )
    db.execute("DELETE FROM woven WHERE ref = ?", (ref,))


def record_injection(
    db: sqlite3.Connection, session: str, refs: list[str], tokens: int, now: float
) -> None:
    db.execute(
        "INSERT INTO injections (session_id, ts, refs, tokens) VALUES (?, ?, ?, ?)",
        (session, now, json.dumps(refs), tokens),
    )


def injections(db: sqlite3.Connection, session: str) -> list[dict[str, Any]]:
    """What was woven before each prompt of the session, oldest first."""
    rows = db.execute(
        "SELECT ts, refs, tokens FROM injections WHERE session_id = ? ORDER BY ts, id",
        (session,),
    )
    return [{"ts": ts, "refs": json.loads(refs), "tokens": tokens} for ts, refs, tokens in rows]


def listing(
    db: sqlite3.Connection, projects: Sequence[str] | None, n: int, offset: int
) -> list[dict[str, Any]]:
    """Sessions newest first (of `projects`, None: all), with their turn and prompt counts."""
    where, params = "", []
    if projects is not None:
        where = f" WHERE s.project IN ({','.join('?' * len(projects))})"
        params = list(projects)
    rows = db.execute(
        "SELECT s.id, s.host, s.project, s.started, s.ended,"
        " (SELECT count(*) FROM turns t WHERE t.session_id = s.id) AS turns,"
        " (SELECT count(*) FROM injections i WHERE i.session_id = s.id) AS prompts"
        f" FROM sessions s{where} ORDER BY s.started DESC, s.id LIMIT ? OFFSET ?",
        [*params, n, offset],
    )
    return [dict(row) for row in rows]
