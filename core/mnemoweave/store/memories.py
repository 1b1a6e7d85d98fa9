"""The `memories` table: durable knowledge, with tombstones instead of deletes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.model import Memory, needle_tags, parse_id
from mnemoweave.store import fts, graph
from mnemoweave.store.db import first, inserted_id, number
from mnemoweave.text import language

RANKED = (  # what ranking and hits read (not `norm`, the second copy of the body)
    "id, kind, title, body, project, importance, weight, access_count, last_access,"
    " created, updated, status, lang, evidence"
)
EMBEDDED = "id, title, body, tags, project"  # what the vector index is built from


def _ref(prefix: str, value: int | None) -> str | None:
    return None if value is None else f"{prefix}_{value}"


def from_row(row: sqlite3.Row) -> Memory:
    return Memory(
        id=f"m_{row['id']}",
        kind=row["kind"],
        title=row["title"],
        body=row["body"],
        project=row["project"],
        importance=row["importance"],
        created=row["created"],
        updated=row["updated"],
        tags=tuple(json.loads(row["tags"])),
        weight=row["weight"],
        access_count=row["access_count"],
        last_access=row["last_access"],
        evidence=tuple(json.loads(row["evidence"])),
        supersedes=_ref("m", row["supersedes"]),
        superseded_by=_ref("m", row["superseded_by"]),
        status=row["status"],
        deleted_at=row["deleted_at"],
        origin=row["origin"],
    )


def index_text(title: str, body: str, tags: Sequence[str]) -> str:
    """What is indexed and embedded of a memory: a title that only repeats the start of the
    body is left out (it would count its words twice)."""
    head = title.rstrip("…").strip()
    parts = [body] if not head or body.startswith(head) else [title, body]
    return "\n".join([*parts, " ".join(tags)]).strip()


def by_ref(db: sqlite3.Connection, ref: str, only: str) -> sqlite3.Row:
    """The memory row `ref` (m_N) names; another kind of id is refused with `only` (what
    the operation takes), an unknown one as not found."""
    table, rowid = parse_id(ref)
    if table != "memory":
        raise InvalidInput(f"{ref} is a {table}; {only}")
    row = get(db, rowid)
    if row is None:
        raise NotFound(f"no memory with id {ref}")
    return row


def get(db: sqlite3.Connection, mid: int) -> sqlite3.Row | None:
    return first(db, "SELECT * FROM memories WHERE id = ?", (mid,))


def find_duplicate(
    db: sqlite3.Connection, norm: str, project: str, kind: str | None = None
) -> sqlite3.Row | None:
    """The active memory of the same scope (and kind, when given) whose normalised body is
    `norm`."""
    return first(
        db,
        "SELECT * FROM memories WHERE norm = ? AND project = ? AND status = 'active'"
        " AND kind = coalesce(?, kind) ORDER BY id LIMIT 1",
        (norm, project, kind),
    )


def insert(
    db: sqlite3.Connection,
    *,
    kind: str,
    title: str,
    body: str,
    norm: str,
    tags: Sequence[str],
    project: str,
    importance: int,
    now: float,
    evidence: Sequence[str] = (),
    origin: str = "user",
    created: float | None = None,
    updated: float | None = None,
) -> int:
    """A new memory; `created` and `updated` (default `now`) are an imported note's own."""
    created = now if created is None else created
    updated = created if updated is None else max(updated, created)
    cur = db.execute(
        "INSERT INTO memories (kind, title, body, norm, tags, project, importance, created,"
        " updated, evidence, lang, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            kind,
            title,
            body,
            norm,
            json.dumps(list(tags), ensure_ascii=False),
            project,
            importance,
            created,
            updated,
            json.dumps(list(evidence)),
            language(body),
            origin,
        ),
    )
    mid = inserted_id(cur)
    fts.index(db, "memories", mid, index_text(title, body, tags))
    return mid


def rewrite(
    db: sqlite3.Connection, mid: int, *, kind: str, title: str, body: str, norm: str, now: float
) -> None:
    """A person's edit of memory `mid`: new text, title and kind, in place (same id); a
    needle tag the new text opens with joins its tags."""
    (stored,) = db.execute("SELECT tags FROM memories WHERE id = ?", (mid,)).fetchone()
    tags = list(dict.fromkeys([*json.loads(stored), *needle_tags(body)]))
    db.execute(
        "UPDATE memories SET kind = ?, title = ?, body = ?, norm = ?, lang = ?, origin = 'user',"
        " updated = ?, tags = ? WHERE id = ?",
        (kind, title, body, norm, language(body), now, json.dumps(tags, ensure_ascii=False), mid),
    )
    fts.unindex(db, "memories", mid)
    graph.forget(db, "memories", mid, prune_now=True)
    fts.index(db, "memories", mid, index_text(title, body, tags))


def merge(
    db: sqlite3.Connection, row: sqlite3.Row, tags: Sequence[str], importance: int, now: float
) -> None:
    """Fold a duplicate into `row`: union of tags, the higher importance, fresh timestamp."""
    merged_tags = list(dict.fromkeys([*json.loads(row["tags"]), *tags]))
    db.execute(
        "UPDATE memories SET tags = ?, importance = max(importance, ?), updated = ? WHERE id = ?",
        (json.dumps(merged_tags, ensure_ascii=False), importance, now, row["id"]),
    )
    fts.unindex(db, "memories", row["id"])
    fts.index(db, "memories", row["id"], index_text(row["title"], row["body"], merged_tags))


def evidence_of(db: sqlite3.Connection, refs: Sequence[str]) -> dict[str, list[str]]:
    """The evidence turn ids of the memories `refs` (m_N) whose text is their cards' as
    proposed (origin "card"), by ref: a memory an agent or a person edited says something
    its evidence turns did not."""
    if not refs:
        return {}
    marks = ",".join("?" * len(refs))
    rows = db.execute(
        f"SELECT id, evidence FROM memories WHERE id IN ({marks}) AND origin = 'card'",
        [int(r[2:]) for r in refs],
    )
    return {f"m_{row['id']}": json.loads(row["evidence"]) for row in rows}


def citing(
    db: sqlite3.Connection, turns: Sequence[str], projects: Sequence[str] | None
) -> dict[str, sqlite3.Row]:
    """The active memory (of `projects`, None: any) that cites each of `turns` (t_N) as
    evidence, by turn: the memory stands in for its evidence."""
    if not turns:
        return {}
    marks = ",".join("?" * len(turns))
    where, params = _scope(projects, None)
    # CROSS JOIN keeps the citations first: SQLite would otherwise read every active
    # memory of the store and look for its citations (1.3 ms at 10,000 memories, not 0.01)
    rows = db.execute(
        f"SELECT e.turn, {', '.join('m.' + c.strip() for c in RANKED.split(','))}"
        " FROM memory_citations e CROSS JOIN memories m ON m.id = e.memory"
        f" WHERE e.turn IN ({marks}) AND m.status = 'active'{where}"
        " ORDER BY m.importance DESC, m.updated DESC",
        [*turns, *params],
    )
    found: dict[str, sqlite3.Row] = {}
    for row in rows:
        found.setdefault(row["turn"], row)
    return found


def touch(db: sqlite3.Connection, ids: Sequence[int], now: float) -> None:
    """Count a recall: bumps access_count (which slows decay) and last_access."""
    db.executemany(
        "UPDATE memories SET access_count = access_count + 1, last_access = ? WHERE id = ?",
        [(now, mid) for mid in ids],
    )


def set_weight(db: sqlite3.Connection, mid: int, weight: float, now: float) -> None:
    db.execute("UPDATE memories SET weight = ?, updated = ? WHERE id = ?", (weight, now, mid))


def corrected(db: sqlite3.Connection, olds: Sequence[int], new: int) -> None:
    """`new` corrects each of `olds` (they clash and it is the newer one)."""
    db.executemany(
        "UPDATE memories SET corrected_by = ? WHERE id = ?", [(new, old) for old in olds]
    )


def correctors(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, int]:
    """Of the memories `ids`, those a newer active memory corrects: id -> the newer's id."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = db.execute(
        "SELECT m.id, m.corrected_by FROM memories m JOIN memories n ON n.id = m.corrected_by"
        f" WHERE m.id IN ({marks}) AND n.status = 'active'",
        list(ids),
    )
    return {row[0]: row[1] for row in rows}


def supersede(db: sqlite3.Connection, old: int, new: int, now: float) -> None:
    db.execute(
        "UPDATE memories SET status = 'superseded', superseded_by = ?, updated = ? WHERE id = ?",
        (new, now, old),
    )
    db.execute("UPDATE memories SET supersedes = ? WHERE id = ?", (old, new))


KEPT_STATE = ("status", "superseded_by", "supersedes", "deleted_at", "updated")


def state_of(db: sqlite3.Connection, mid: int) -> dict[str, Any] | None:
    """What consolidation may change of memory `mid` (KEPT_STATE), as stored."""
    row = db.execute(f"SELECT {', '.join(KEPT_STATE)} FROM memories WHERE id = ?", (mid,))
    found = row.fetchone()
    return None if found is None else dict(found)


def put_state(db: sqlite3.Connection, mid: int, state: dict[str, Any]) -> None:
    """Write back what `state_of` read (a rollback)."""
    names = [name for name in KEPT_STATE if name in state]
    db.execute(
        f"UPDATE memories SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
        [*(state[n] for n in names), mid],
    )


def set_status(db: sqlite3.Connection, mid: int, status: str, deleted_at: float | None) -> None:
    db.execute(
        "UPDATE memories SET status = ?, deleted_at = ? WHERE id = ?", (status, deleted_at, mid)
    )


def delete(db: sqlite3.Connection, mid: int) -> None:
    fts.unindex(db, "memories", mid)
    graph.forget(db, "memories", mid, prune_now=True)
    db.execute("DELETE FROM memories WHERE id = ?", (mid,))


def reindex(db: sqlite3.Connection) -> None:
    rows = db.execute("SELECT id, title, body, tags FROM memories").fetchall()
    fts.replace_all(
        db,
        "memories",
        ((r["id"], index_text(r["title"], r["body"], json.loads(r["tags"]))) for r in rows),
    )


def expired_trash(db: sqlite3.Connection, before: float) -> list[int]:
    rows = db.execute(
        "SELECT id FROM memories WHERE status = 'trashed' AND deleted_at < ?", (before,)
    )
    return [row[0] for row in rows]


def _scope(projects: Sequence[str] | None, kind: str | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if projects is not None:
        clauses.append(f"m.project IN ({','.join('?' * len(projects))})")
        params.extend(projects)
    if kind is not None:
        clauses.append("m.kind = ?")
        params.append(kind)
    return "".join(f" AND {c}" for c in clauses), params


def listing(
    db: sqlite3.Connection,
    n: int,
    kind: str | None,
    projects: Sequence[str] | None,
    status: str,
    offset: int = 0,
) -> list[sqlite3.Row]:
    where, params = _scope(projects, kind)
    return db.execute(
        f"SELECT m.* FROM memories m WHERE m.status = ?{where} ORDER BY m.updated DESC, m.id DESC"
        " LIMIT ? OFFSET ?",
        [status, *params, n, offset],
    ).fetchall()


COUNTED_BY = {  # what the active memories can be counted by: the SQL that groups them
    "kind": "SELECT kind, count(*) FROM memories WHERE status = 'active' GROUP BY kind",
    "tag": "SELECT tag.value, count(*) FROM memories, json_each(memories.tags) AS tag"
    " WHERE status = 'active' GROUP BY tag.value",
}


def counts_by(db: sqlite3.Connection, what: str) -> dict[str, int]:
    """Active memories per kind or per tag ("kind", "tag"), the most common first."""
    rows = db.execute(COUNTED_BY[what]).fetchall()
    return dict(sorted(((str(name), n) for name, n in rows), key=lambda pair: (-pair[1], pair[0])))


def by_status(db: sqlite3.Connection) -> dict[str, int]:
    """How many memories there are in each status."""
    return dict(db.execute("SELECT status, count(*) FROM memories GROUP BY status").fetchall())


def active(db: sqlite3.Connection) -> list[Memory]:
    """Every active memory, oldest first (by id)."""
    rows = db.execute("SELECT * FROM memories WHERE status = 'active' ORDER BY id")
    return [from_row(row) for row in rows]


def active_bodies(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """The id, kind, project and body of every active memory."""
    return db.execute(
        "SELECT id, kind, project, body FROM memories WHERE status = 'active'"
    ).fetchall()


def active_in(db: sqlite3.Connection, projects: Sequence[str] | None) -> list[sqlite3.Row]:
    """The active memories of `projects` (None: all), with what consolidation weighs."""
    where, params = _scope(projects, None)
    return db.execute(
        "SELECT m.id, m.kind, m.project, m.body, m.importance, m.weight, m.access_count,"
        f" m.last_access, m.created, m.updated FROM memories m WHERE m.status = 'active'{where}",
        params,
    ).fetchall()


def supersessions(db: sqlite3.Connection, projects: Sequence[str] | None) -> list[tuple[int, int]]:
    """(old, new) for every memory of `projects` (None: all) that another superseded."""
    where, params = _scope(projects, None)
    rows = db.execute(
        f"SELECT m.id, m.superseded_by FROM memories m WHERE m.superseded_by IS NOT NULL{where}",
        params,
    )
    return [(old, new) for old, new in rows]


def low_importance(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """The active memories of importance 2 or less, oldest first (by id)."""
    return db.execute(
        "SELECT * FROM memories WHERE status = 'active' AND importance <= 2 ORDER BY id"
    ).fetchall()


def evictable(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """The active memories capacity may trash: not preferences, not importance 5."""
    return db.execute(
        "SELECT * FROM memories WHERE status = 'active' AND kind != 'pref' AND importance < 5"
    ).fetchall()


def count(db: sqlite3.Connection) -> int:
    """How many memories there are, in any status."""
    return number(db, "SELECT count(*) FROM memories")


def projects(db: sqlite3.Connection) -> dict[int, str]:
    """The project of every memory, in any status, by id."""
    return dict(db.execute("SELECT id, project FROM memories").fetchall())


def ranked(db: sqlite3.Connection, ids: Sequence[int]) -> list[sqlite3.Row]:
    """The RANKED columns of the memories with these ids that exist (empty `ids`: none)."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return db.execute(f"SELECT {RANKED} FROM memories WHERE id IN ({marks})", ids).fetchall()


def to_embed(db: sqlite3.Connection, ids: Sequence[int] | None = None) -> Iterator[sqlite3.Row]:
    """The EMBEDDED columns of every memory, or of those with these ids that exist; rows
    are read as they are iterated."""
    if ids is None:
        return db.execute(f"SELECT {EMBEDDED} FROM memories")
    marks = ",".join("?" * len(ids))
    return db.execute(f"SELECT {EMBEDDED} FROM memories WHERE id IN ({marks})", list(ids))


def standing(db: sqlite3.Connection, projects: Sequence[str], limit: int) -> list[sqlite3.Row]:
    """The active preferences and pinned (importance 5) memories of `projects`, most
    important and then newest first: what the nudge always shows."""
    marks = ",".join("?" * len(projects))
    # the literal WHERE matches the partial index memories_nudge (m003), read in its order
    return db.execute(
        "SELECT id, kind, body, updated, importance FROM memories INDEXED BY memories_nudge"
        " WHERE status = 'active' AND (kind = 'pref' OR importance >= 5)"
        f" AND project IN ({marks}) ORDER BY importance DESC, updated DESC LIMIT ?",
        [*projects, limit],
    ).fetchall()


def briefing(db: sqlite3.Connection, project: str, kinds: Sequence[str]) -> sqlite3.Cursor:
    """The active memories a session of `project` starts with: the project's of `kinds`,
    pinned ones (importance 5), and global preferences; ranked by importance, feedback
    weight and use, newest first among equals. Rows are read as the cursor is iterated (the
    caller stops when its budget is full); each part is read in order through memories_brief
    (m016), so only the rows read are ever visited."""
    marks = ",".join("?" * len(kinds))
    columns = "id, kind, body, updated, importance, evidence, origin, weight, access_count"
    return db.execute(
        f"SELECT {columns} FROM memories INDEXED BY memories_brief"
        f" WHERE project = ? AND status = 'active' AND (kind IN ({marks}) OR importance >= 5)"
        f" UNION ALL SELECT {columns} FROM memories INDEXED BY memories_brief"
        " WHERE project = '' AND ? != ''"
        " AND status = 'active' AND (kind = 'pref' OR importance >= 5)"
        " ORDER BY importance DESC, weight DESC, access_count DESC, updated DESC, id DESC",
        [project, *kinds, project],
    )
