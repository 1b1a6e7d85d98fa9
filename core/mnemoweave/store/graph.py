"""The knowledge graph's tables (migration m017): entities, aliases, mentions, relations and
which texts they were read from (`graphed`). Derived from memories and turns by graph/build."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

TEXTS = ("memories", "turns")


def canonical(db: sqlite3.Connection, key: str) -> str:
    """The key an entity is kept under: `key`, or the one an alias points it to."""
    row = db.execute("SELECT into_key FROM aliases WHERE key = ?", (key,)).fetchone()
    return row[0] if row else key


def entities_of(db: sqlite3.Connection, keys: Iterable[str]) -> dict[str, tuple[int, str]]:
    """The entity (id, kind) each of `keys` names, through its aliases too, for those that
    name one."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    rows = db.execute(
        "SELECT k.value, e.id, e.kind FROM json_each(?) k"
        " LEFT JOIN aliases a ON a.key = k.value"
        " JOIN entities e ON e.key = coalesce(a.into_key, k.value)",
        (json.dumps(wanted, ensure_ascii=False),),
    )
    return {key: (eid, kind) for key, eid, kind in rows}


def _entity(db: sqlite3.Connection, key: str, name: str, kind: str) -> int:
    key = canonical(db, key)
    row = db.execute("SELECT id, kind FROM entities WHERE key = ?", (key,)).fetchone()
    if row is None:
        cur = db.execute(
            "INSERT INTO entities (key, name, kind) VALUES (?, ?, ?)", (key, name, kind)
        )
        return int(cur.lastrowid or 0)
    if row["kind"] in ("name", "component") and kind not in ("name", "component"):
        db.execute("UPDATE entities SET kind = ? WHERE id = ?", (kind, row["id"]))
    return int(row["id"])


def alias(db: sqlite3.Connection, key: str, into: str, origin: str) -> None:
    """Write `key` as another name of `into`'s entity: its mentions and relations move
    there, and every alias of `key` follows. A user's alias is not replaced by a text's."""
    into = canonical(db, into)
    key = canonical(db, key)
    if key == into:
        return
    held = db.execute("SELECT origin FROM aliases WHERE key = ?", (key,)).fetchone()
    if held and held[0] == "user" and origin == "text":
        return
    db.execute(
        "INSERT INTO aliases (key, into_key, origin) VALUES (?, ?, ?) ON CONFLICT (key)"
        " DO UPDATE SET into_key = excluded.into_key, origin = excluded.origin",
        (key, into, origin),
    )
    db.execute("UPDATE aliases SET into_key = ? WHERE into_key = ?", (into, key))
    old = db.execute("SELECT id, name, kind FROM entities WHERE key = ?", (key,)).fetchone()
    if old is None:
        return
    new = _entity(db, into, old["name"], old["kind"])
    db.execute("UPDATE OR IGNORE mentions SET entity = ? WHERE entity = ?", (new, old["id"]))
    db.execute("UPDATE relations SET source = ? WHERE source = ?", (new, old["id"]))
    db.execute("UPDATE relations SET target = ? WHERE target = ?", (new, old["id"]))
    db.execute("DELETE FROM entities WHERE id = ?", (old["id"],))  # leftover mentions go


def forget(db: sqlite3.Connection, table: str, rid: int, prune_now: bool = False) -> None:
    """Drop what the graph read from one text (`prune_now`: and the entities only it named,
    for a text deleted for good)."""
    for name in ("mentions", "relations"):
        db.execute(f"DELETE FROM {name} WHERE ref_table = ? AND ref_id = ?", (table, rid))
    db.execute("DELETE FROM graphed WHERE ref_table = ? AND ref_id = ?", (table, rid))
    if prune_now:
        prune(db)


def record(
    db: sqlite3.Connection,
    table: str,
    rid: int,
    stamp: str,
    found: tuple[
        Sequence[tuple[str, str, str]], Sequence[tuple[str, str, str]], Sequence[tuple[str, str]]
    ],
    ts: float,
) -> None:
    """Replace what the graph holds of one text by what was found in it: its mentions
    (key, name as written, kind), typed relations (type, source key or "", target key or
    a version for pinned_to) and aliases (key, key)."""
    mentions, relations, aliases = found
    forget(db, table, rid)
    for a, b in aliases:
        alias(db, b, a, "text")
    ids: dict[str, int] = {}
    for key, name, kind in mentions:
        if key not in ids:
            ids[key] = _entity(db, key, name, kind)
            db.execute(
                "INSERT OR IGNORE INTO mentions (entity, ref_table, ref_id, name)"
                " VALUES (?, ?, ?, ?)",
                (ids[key], table, rid, name),
            )
    for kind, source_key, target_key in relations:
        source = ids.get(source_key) if source_key else None
        pinned = kind == "pinned_to"
        target = None if pinned else ids.get(target_key)
        if (source_key and source is None) or (not pinned and target is None):
            continue
        db.execute(
            "INSERT INTO relations (type, source, target, version, ref_table, ref_id, ts)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kind, source, target, target_key if pinned else None, table, rid, ts),
        )
    db.execute(
        "INSERT INTO graphed (ref_table, ref_id, stamp) VALUES (?, ?, ?)", (table, rid, stamp)
    )  # `forget` above removed the text's old row


def stale(db: sqlite3.Connection, table: str, stamp: str, limit: int) -> list[sqlite3.Row]:
    """Up to `limit` texts the graph has not read with the rules `stamp` names: (id, text,
    ts). A trashed memory is read too (a restore brings it back as it was); tool output
    never is."""
    if table == "memories":
        return db.execute(
            "SELECT m.id, m.title || char(10) || m.body AS text, m.updated AS ts FROM memories m"
            " LEFT JOIN graphed g ON g.ref_table = 'memories' AND g.ref_id = m.id"
            " WHERE g.stamp IS NULL OR g.stamp != ? ORDER BY m.id LIMIT ?",
            (stamp, limit),
        ).fetchall()
    return db.execute(
        "SELECT t.id, t.text, t.ts FROM turns t LEFT JOIN graphed g"
        " ON g.ref_table = 'turns' AND g.ref_id = t.id"
        " WHERE t.role != 'tool' AND (g.stamp IS NULL OR g.stamp != ?) ORDER BY t.id LIMIT ?",
        (stamp, limit),
    ).fetchall()


def gone(db: sqlite3.Connection) -> list[tuple[str, int]]:
    """Texts the graph holds that are gone (deleted by an older version)."""
    return db.execute(
        "SELECT g.ref_table, g.ref_id FROM graphed g"
        " LEFT JOIN memories m ON g.ref_table = 'memories' AND m.id = g.ref_id"
        " LEFT JOIN turns t ON g.ref_table = 'turns' AND t.id = g.ref_id"
        " WHERE (g.ref_table = 'memories' AND m.id IS NULL)"
        " OR (g.ref_table = 'turns' AND t.id IS NULL)"
    ).fetchall()


def prune(db: sqlite3.Connection) -> int:
    """Drop the entities no text mentions any more; how many."""
    return db.execute("DELETE FROM entities WHERE id NOT IN (SELECT entity FROM mentions)").rowcount


def clear(db: sqlite3.Connection) -> None:
    """Empty the graph; a user's merges stay."""
    for name in ("relations", "mentions", "graphed", "entities"):
        db.execute(f"DELETE FROM {name}")
    db.execute("DELETE FROM aliases WHERE origin = 'text'")


def shown(db: sqlite3.Connection, eid: int) -> bool:
    """Whether a turn or a memory out of the trash names the entity."""
    return (
        db.execute(
            "SELECT 1 FROM mentions x LEFT JOIN memories m ON x.ref_table = 'memories'"
            " AND m.id = x.ref_id WHERE x.entity = ?"
            " AND (x.ref_table = 'turns' OR m.status != 'trashed') LIMIT 1",
            (eid,),
        ).fetchone()
        is not None
    )


def texts_read(db: sqlite3.Connection) -> int:
    """How many texts the graph has read (what an entity's rarity is measured against)."""
    return int(db.execute("SELECT count(*) FROM graphed").fetchone()[0])


def text_counts(db: sqlite3.Connection, ids: list[int]) -> dict[int, int]:
    """How many texts name each of the entities `ids`."""
    rows = db.execute(
        "SELECT entity, count(*) FROM mentions"
        " WHERE entity IN (SELECT value FROM json_each(?)) GROUP BY entity",
        (json.dumps(ids),),
    )
    return dict(rows.fetchall())


def naming(db: sqlite3.Connection, table: str, entities: list[int]) -> list[tuple[int, int]]:
    """(text id, entity) for each text of `table` naming one of `entities`."""
    return db.execute(
        "SELECT ref_id, entity FROM mentions WHERE ref_table = ?"
        " AND entity IN (SELECT value FROM json_each(?))",
        (table, json.dumps(entities)),
    ).fetchall()


def _scoped(projects: Iterable[str] | None) -> tuple[str, list[object]]:
    if projects is None:
        return "", []
    return " AND m.project IN (SELECT value FROM json_each(?))", [json.dumps(list(projects))]


def named_by(db: sqlite3.Connection, memories: Iterable[int]) -> list[int]:
    """The entities the memories `memories` name."""
    return [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT entity FROM mentions WHERE ref_table = 'memories'"
            " AND ref_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(memories)),),
        )
    ]


def neighbours(
    db: sqlite3.Connection, eid: int, limit: int, projects: Iterable[str] | None
) -> list[tuple[int, int]]:
    """(entity, memories shared) of the entities named most often in the same active
    memories as `eid`."""
    where, args = _scoped(projects)
    return db.execute(
        "SELECT b.entity, count(*) AS shared FROM mentions a"
        f" JOIN memories m ON m.id = a.ref_id AND m.status = 'active'{where}"
        " JOIN mentions b ON b.ref_table = 'memories' AND b.ref_id = a.ref_id"
        " AND b.entity != a.entity WHERE a.entity = ? AND a.ref_table = 'memories'"
        " GROUP BY b.entity ORDER BY shared DESC, b.entity LIMIT ?",
        (*args, eid, limit),
    ).fetchall()


def memories_naming(db: sqlite3.Connection, eid: int, projects: Iterable[str] | None) -> list[int]:
    """The active memories naming the entity, newest first."""
    where, args = _scoped(projects)
    return [
        row[0]
        for row in db.execute(
            "SELECT m.id FROM mentions x"
            f" JOIN memories m ON m.id = x.ref_id AND m.status = 'active'{where}"
            " WHERE x.entity = ? AND x.ref_table = 'memories' ORDER BY m.created DESC",
            (*args, eid),
        )
    ]


def names(db: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    return dict(
        db.execute(
            "SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(set(ids))),),
        ).fetchall()
    )


# --- what the faces read (graph/views.py, graph/export.py) -----------------------------------


def listing(
    db: sqlite3.Connection,
    projects: Iterable[str] | None,
    text: tuple[str, int] | None,
    limit: int,
) -> list[sqlite3.Row]:
    """(id, key, name, kind, memories): the entities the active memories of `projects`
    name (None: any), or those one text names (`text`: table and id), the most named
    first; `memories` counts the active memories naming each."""
    if text is None:
        where, args = _scoped(projects)
        chosen = f"m.id IS NOT NULL{where}"
    else:
        chosen = "x.entity IN (SELECT entity FROM mentions WHERE ref_table = ? AND ref_id = ?)"
        args = list(text)
    return db.execute(
        "SELECT e.id, e.key, e.name, e.kind, count(m.id) AS memories FROM entities e"
        " JOIN mentions x ON x.entity = e.id"
        " LEFT JOIN memories m ON x.ref_table = 'memories' AND m.id = x.ref_id"
        f" AND m.status = 'active' WHERE {chosen}"
        " GROUP BY e.id ORDER BY memories DESC, e.key LIMIT ?",
        (*args, limit),
    ).fetchall()


def turn_counts(db: sqlite3.Connection, ids: list[int]) -> dict[int, int]:
    """How many turns name each of the entities `ids`."""
    rows = db.execute(
        "SELECT entity, count(*) FROM mentions WHERE ref_table = 'turns'"
        " AND entity IN (SELECT value FROM json_each(?)) GROUP BY entity",
        (json.dumps(ids),),
    )
    return dict(rows.fetchall())


def written(db: sqlite3.Connection, eid: int) -> list[tuple[str, int]]:
    """(name, texts): how the texts write the entity, the most often first."""
    return db.execute(
        "SELECT name, count(*) FROM mentions WHERE entity = ? GROUP BY name"
        " ORDER BY count(*) DESC, ref_table, min(ref_id), name",
        (eid,),
    ).fetchall()


def like(db: sqlite3.Connection, fragment: str, limit: int) -> list[str]:
    """The names of the entities whose key holds `fragment`, the shortest first."""
    rows = db.execute(
        "SELECT name FROM entities WHERE instr(key, ?) > 0 ORDER BY length(key) LIMIT ?",
        (fragment, limit),
    )
    return [row[0] for row in rows]


def entity(db: sqlite3.Connection, eid: int) -> sqlite3.Row:
    row: sqlite3.Row = db.execute(
        "SELECT id, key, name, kind FROM entities WHERE id = ?", (eid,)
    ).fetchone()
    return row


def aliases_of(db: sqlite3.Connection, key: str) -> list[tuple[str, str]]:
    """(key, origin) of every other key of the entity kept under `key`."""
    return db.execute(
        "SELECT key, origin FROM aliases WHERE into_key = ? ORDER BY key", (key,)
    ).fetchall()


def memories_of(
    db: sqlite3.Connection, eid: int, projects: Iterable[str] | None
) -> list[sqlite3.Row]:
    """The active and superseded memories naming the entity, newest first."""
    where, args = _scoped(projects)
    return db.execute(
        "SELECT m.id, m.title, m.kind, m.project, m.status, m.created FROM mentions x"
        f" JOIN memories m ON m.id = x.ref_id AND m.status IN ('active', 'superseded'){where}"
        " WHERE x.entity = ? AND x.ref_table = 'memories' ORDER BY m.created DESC, m.id DESC",
        (*args, eid),
    ).fetchall()


def turns_of(db: sqlite3.Connection, eid: int, limit: int) -> list[sqlite3.Row]:
    """The latest turns naming the entity."""
    return db.execute(
        "SELECT t.id, t.session_id, t.role, t.ts, t.text FROM mentions x"
        " JOIN turns t ON t.id = x.ref_id WHERE x.entity = ? AND x.ref_table = 'turns'"
        " ORDER BY t.ts DESC, t.id DESC LIMIT ?",
        (eid, limit),
    ).fetchall()


def relations_of(db: sqlite3.Connection, eid: int) -> list[sqlite3.Row]:
    """The typed relations with the entity at either end, newest first, with the names of
    both ends and the status of the memory stating each (None for a turn); a trashed
    memory's are left out."""
    return db.execute(
        "SELECT r.type, r.version, r.ref_table, r.ref_id, r.ts,"
        " s.name AS source_name, t.name AS target_name, m.status"
        " FROM relations r LEFT JOIN entities s ON s.id = r.source"
        " LEFT JOIN entities t ON t.id = r.target"
        " LEFT JOIN memories m ON r.ref_table = 'memories' AND m.id = r.ref_id"
        " WHERE (r.source = ? OR r.target = ?) AND coalesce(m.status, '') != 'trashed'"
        " ORDER BY r.ts DESC, r.id DESC",
        (eid, eid),
    ).fetchall()


def keys_of(db: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    rows = db.execute(
        "SELECT id, key FROM entities WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    )
    return dict(rows.fetchall())


def active_entities(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """(id, key, name, kind) of every entity an active memory names, by key."""
    return db.execute(
        "SELECT DISTINCT e.id, e.key, e.name, e.kind FROM entities e"
        " JOIN mentions x ON x.entity = e.id AND x.ref_table = 'memories'"
        " JOIN memories m ON m.id = x.ref_id AND m.status = 'active' ORDER BY e.key"
    ).fetchall()


def active_mentions(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """(entity, id, title, body, project, updated) of every active memory's mentions,
    newest first."""
    return db.execute(
        "SELECT x.entity, m.id, m.title, m.body, m.project, m.updated FROM mentions x"
        " JOIN memories m ON m.id = x.ref_id AND m.status = 'active'"
        " WHERE x.ref_table = 'memories' ORDER BY m.updated DESC, m.id DESC"
    ).fetchall()


def active_relations(db: sqlite3.Connection) -> list[sqlite3.Row]:
    """(type, source, target, version, memory) of the relations active memories state,
    newest first."""
    return db.execute(
        "SELECT r.type, r.source, r.target, r.version, r.ref_id AS memory FROM relations r"
        " JOIN memories m ON r.ref_table = 'memories' AND m.id = r.ref_id"
        " AND m.status = 'active' ORDER BY r.ts DESC, r.id DESC"
    ).fetchall()


def all_aliases(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(key, into_key) of every alias."""
    return db.execute("SELECT key, into_key FROM aliases ORDER BY key").fetchall()
