"""The `cards` table: candidate memories awaiting the agent's review."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from mnemoweave.errors import InvalidInput
from mnemoweave.model import Card
from mnemoweave.store.db import first, inserted_id, number
from mnemoweave.text import normalise


def from_row(row: sqlite3.Row) -> Card:
    return Card(
        id=f"c_{row['id']}",
        summary=row["summary"],
        suggested_kind=row["suggested_kind"],
        evidence=tuple(json.loads(row["evidence"])),
        confidence=row["confidence"],
        project=row["project"],
        topic=row["topic"],
        status=row["status"],
        created=row["created"],
        decided=row["decided"],
        memory_id=None if row["memory_id"] is None else f"m_{row['memory_id']}",
        conflicts=tuple(json.loads(row["conflicts"])),
        proposal=row["proposal"],
    )


def insert(
    db: sqlite3.Connection,
    *,
    summary: str,
    suggested_kind: str,
    evidence: Sequence[str],
    confidence: float,
    project: str,
    now: float,
    topic: str = "",
) -> int:
    """A pending card; refused when an evidence turn does not exist."""
    ids = [int(ref[2:]) for ref in evidence if ref.startswith("t_")]
    if not evidence or len(ids) != len(evidence):
        raise InvalidInput(f"card evidence must be turn ids (t_N), got {list(evidence)}")
    found = db.execute(
        f"SELECT count(*) FROM turns WHERE id IN ({','.join('?' * len(ids))})", ids
    ).fetchone()[0]
    if found != len(set(ids)):
        raise InvalidInput(f"card evidence names turns that do not exist: {list(evidence)}")
    cur = db.execute(
        "INSERT INTO cards (topic, summary, suggested_kind, evidence, confidence, project,"
        " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (topic, summary, suggested_kind, json.dumps(list(evidence)), confidence, project, now),
    )
    return inserted_id(cur)


def insert_proposal(
    db: sqlite3.Connection, *, summary: str, kind: str, project: str, now: float, proposal: str
) -> int | None:
    """A pending card that asks to apply one consolidation item (`proposal`: "r_N ITEM"),
    unless a card (pending or decided) already asked it for the same memories (`summary`)."""
    asked = db.execute(
        "SELECT 1 FROM cards WHERE proposal != '' AND summary = ? AND project = ?",
        (summary, project),
    ).fetchone()
    if asked:
        return None
    cur = db.execute(
        "INSERT INTO cards (topic, summary, suggested_kind, evidence, confidence, project,"
        " created, proposal) VALUES ('', ?, ?, '[]', 1.0, ?, ?, ?)",
        (summary, kind, project, now, proposal),
    )
    return inserted_id(cur)


def count(db: sqlite3.Connection) -> int:
    """How many cards there are, in any status."""
    return number(db, "SELECT count(*) FROM cards")


def pending_count(db: sqlite3.Connection, projects: Sequence[str] | None) -> int:
    if projects is None:
        return number(db, "SELECT count(*) FROM cards WHERE status = 'pending'")
    marks = ",".join("?" * len(projects))
    return number(
        db,
        f"SELECT count(*) FROM cards WHERE status = 'pending' AND project IN ({marks})",
        list(projects),
    )


def delete_citing(db: sqlite3.Connection, ref: str) -> list[int]:
    """Delete the cards whose evidence cites `ref` (a purged turn): no copy of it survives."""
    ids = [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT card FROM card_citations WHERE turn = ?",
            (ref,),
        )
    ]
    db.executemany("DELETE FROM cards WHERE id = ?", [(i,) for i in ids])
    return ids


def get(db: sqlite3.Connection, cid: int) -> sqlite3.Row | None:
    return first(db, "SELECT * FROM cards WHERE id = ?", (cid,))


def pending(db: sqlite3.Connection, projects: Sequence[str] | None, limit: int) -> list[Card]:
    where, params = "", []
    if projects is not None:
        where = f" AND project IN ({','.join('?' * len(projects))})"
        params = list(projects)
    rows = db.execute(
        f"SELECT * FROM cards WHERE status = 'pending'{where} ORDER BY id LIMIT ?",
        [*params, limit],
    )
    return [from_row(row) for row in rows]


def set_conflicts(db: sqlite3.Connection, cid: int, refs: Sequence[str]) -> None:
    """The active memories the card's memory would clash with (its acceptance was held)."""
    db.execute("UPDATE cards SET conflicts = ? WHERE id = ?", (json.dumps(list(refs)), cid))


def decide(
    db: sqlite3.Connection,
    cid: int,
    status: str,
    now: float,
    memory_id: int | None = None,
    why: str | None = None,
) -> None:
    db.execute(
        "UPDATE cards SET status = ?, decided = ?, memory_id = ?, why = ? WHERE id = ?",
        (status, now, memory_id, why, cid),
    )


def cited(db: sqlite3.Connection, refs: Sequence[str], kind: str) -> set[str]:
    """Which of these turn ids some card of this kind (pending or decided) already cites."""
    if not refs:
        return set()
    marks = ",".join("?" * len(refs))
    rows = db.execute(
        "SELECT DISTINCT e.turn FROM card_citations e CROSS JOIN cards c ON c.id = e.card"
        f" WHERE c.suggested_kind = ? AND e.turn IN ({marks})",
        [kind, *refs],
    )
    return {row[0] for row in rows}


def same_summary(
    db: sqlite3.Connection, norm: str, kind: str, project: str, statuses: Sequence[str]
) -> list[sqlite3.Row]:
    """The cards of this kind and project, in these statuses, whose summary normalises to
    `norm` (oldest first)."""
    marks = ",".join("?" * len(statuses))
    rows = db.execute(
        f"SELECT * FROM cards WHERE suggested_kind = ? AND project = ? AND status IN ({marks})"
        " ORDER BY id",
        [kind, project, *statuses],
    )
    return [row for row in rows if normalise(row["summary"]) == norm]


def add_evidence(
    db: sqlite3.Connection, row: sqlite3.Row, evidence: Sequence[str], confidence: float
) -> tuple[str, ...]:
    """Fold more evidence (turn ids) into a card, in turn order; the higher confidence stays.
    Returns the card's evidence after the merge."""
    merged = sorted({*json.loads(row["evidence"]), *evidence}, key=lambda ref: int(ref[2:]))
    db.execute(
        "UPDATE cards SET evidence = ?, confidence = max(confidence, ?) WHERE id = ?",
        (json.dumps(merged), confidence, row["id"]),
    )
    return tuple(merged)


def citing(
    db: sqlite3.Connection, turns: Sequence[str], projects: Sequence[str] | None
) -> list[Card]:
    """The pending cards (of `projects`, None: any; no consolidation proposals) that cite
    any of `turns` (t_N) as evidence, most confident first."""
    if not turns:
        return []
    where, params = "", list(turns)
    if projects is not None:
        where = f" AND c.project IN ({','.join('?' * len(projects))})"
        params += list(projects)
    rows = db.execute(  # the citations first, as memories.citing reads them
        "SELECT DISTINCT c.* FROM card_citations e CROSS JOIN cards c ON c.id = e.card"
        f" WHERE e.turn IN ({','.join('?' * len(turns))}) AND c.status = 'pending'"
        f" AND c.proposal = ''{where}"
        " ORDER BY c.confidence DESC, c.id DESC",
        params,
    )
    return [from_row(row) for row in rows]


def proposals(db: sqlite3.Connection, project: str, kinds: Sequence[str], limit: int) -> list[Card]:
    """The pending cards a session of `project` is shown as proposals: the project's of
    `kinds` and global preferences (no consolidation proposals), most confident first."""
    marks = ",".join("?" * len(kinds))
    rows = db.execute(
        "SELECT * FROM cards WHERE status = 'pending' AND proposal = ''"
        f" AND ((project = ? AND suggested_kind IN ({marks}))"
        " OR (project = '' AND suggested_kind = 'pref'))"
        " ORDER BY confidence DESC, id DESC LIMIT ?",
        [project, *kinds, limit],
    )
    return [from_row(row) for row in rows]
