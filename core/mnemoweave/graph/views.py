"""What the faces show of the knowledge graph: the entities of a scope, and one entity with
its names, memories, relations, neighbours and timeline; and a person's merge of two
entities. Each read first reads what the graph lacks (texts an older version stored)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.graph import build
from mnemoweave.graph.extract import key as key_of
from mnemoweave.graph.extract import mentions
from mnemoweave.model import parse_id
from mnemoweave.scope import visible
from mnemoweave.store import graph as graph_table
from mnemoweave.text import clip

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

NEIGHBOURS = 12
TURNS = 10


def entities(
    engine: Engine, project: str | None = None, limit: int = 200, ref: str | None = None
) -> list[dict[str, Any]]:
    """The entities the active memories of a scope name (every scope when `project` is
    None), the most named first: key, name, kind, memories, turns. With `ref` (m_N or
    t_N): the entities that one text names."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, got {limit}")
    build.catch_up(engine.db)
    text = None if ref is None else _text_ref(engine, ref)
    rows = graph_table.listing(engine.db, visible(project), text, limit)
    turns = graph_table.turn_counts(engine.db, [row["id"] for row in rows])
    return [
        {
            "key": row["key"],
            "name": _name(engine, row["id"], row["name"]),
            "kind": row["kind"],
            "memories": row["memories"],
            "turns": turns.get(row["id"], 0),
        }
        for row in rows
    ]


def _text_ref(engine: Engine, ref: str) -> tuple[str, int]:
    what, rid = parse_id(ref)
    if what not in ("memory", "turn"):
        raise InvalidInput(f"{ref} is a {what}: entities are read from memories and turns")
    engine.get(ref)  # NotFound when there is no such text
    return ("memories" if what == "memory" else "turns"), rid


def _name(engine: Engine, eid: int, first: str) -> str:
    """How the texts write it most often (the first name seen, without any)."""
    found = graph_table.written(engine.db, eid)
    return found[0][0] if found else first


def find(engine: Engine, name: str) -> int:
    """The id of the entity `name` writes (by its key, an alias, or the names in it) that
    a turn or a memory out of the trash names."""
    if not name or not name.strip():
        raise InvalidInput("name an entity")
    keys = [key_of(name)] + [m.key for m in mentions(name)]
    found = graph_table.entities_of(engine.db, keys)
    for k in keys:
        if k in found and graph_table.shown(engine.db, found[k][0]):
            return found[k][0]
    close = graph_table.like(engine.db, key_of(name)[:40], 5)
    hint = f"; close: {', '.join(close)}" if close else ""
    raise NotFound(f"no entity named {name!r}{hint}")


def entity(engine: Engine, name: str, project: str | None = None) -> dict[str, Any]:
    """One entity: its names and aliases, the memories naming it (a superseded one marked
    past), its relations, the entities most often named beside it, and a timeline of what
    the memories said of it, newest first."""
    build.catch_up(engine.db)
    eid = find(engine, name)
    db = engine.db
    row = graph_table.entity(db, eid)
    memories = [
        {
            "id": f"m_{r['id']}",
            "title": r["title"],
            "kind": r["kind"],
            "project": r["project"],
            "status": r["status"],
            "past": r["status"] != "active",
            "created": r["created"],
        }
        for r in graph_table.memories_of(db, eid, visible(project))
    ]
    shown = {memory["id"] for memory in memories}
    relations = [
        r for r in _relations(engine, eid) if r["evidence"] in shown or r["evidence"][0] == "t"
    ]
    turns = [
        {
            "id": f"t_{r['id']}",
            "session": r["session_id"],
            "role": r["role"],
            "ts": r["ts"],
            "text": clip(r["text"], 160),
        }
        for r in graph_table.turns_of(db, eid, TURNS)
    ]
    return {
        "key": row["key"],
        "name": _name(engine, eid, row["name"]),
        "kind": row["kind"],
        "names": [{"name": n, "texts": c} for n, c in graph_table.written(db, eid)],
        "aliases": [{"key": k, "origin": o} for k, o in graph_table.aliases_of(db, row["key"])],
        "memories": memories,
        "relations": relations,
        "neighbours": neighbours(engine, eid, project),
        "turns": turns,
        "timeline": _timeline(memories, relations),
    }


def _relations(engine: Engine, eid: int) -> list[dict[str, Any]]:
    """The typed relations with the entity at either end, newest first; a relation stated
    by a memory no longer active is past."""
    return [
        {
            "type": r["type"],
            "source": r["source_name"],
            "target": r["version"] if r["type"] == "pinned_to" else r["target_name"],
            "evidence": f"{r['ref_table'][0]}_{r['ref_id']}",
            "ts": r["ts"],
            "past": r["status"] not in (None, "active"),
        }
        for r in graph_table.relations_of(engine.db, eid)
    ]


def neighbours(engine: Engine, eid: int, project: str | None = None) -> list[dict[str, Any]]:
    """The entities named in the same active memories, weighted by how many they share."""
    found = graph_table.neighbours(engine.db, eid, NEIGHBOURS, visible(project))
    rows = {other: graph_table.entity(engine.db, other) for other, _ in found}
    return [
        {
            "key": rows[other]["key"],
            "name": rows[other]["name"],
            "kind": rows[other]["kind"],
            "shared": shared,
        }
        for other, shared in found
    ]


def _timeline(
    memories: list[dict[str, Any]], relations: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """What each memory said of the entity, newest first: the memory and the relations it
    states."""
    stated: dict[str, list[dict[str, Any]]] = {}
    for relation in relations:
        stated.setdefault(relation["evidence"], []).append(relation)
    return [
        {
            "when": memory["created"],
            "memory": memory["id"],
            "title": memory["title"],
            "past": memory["past"],
            "relations": [
                {k: r[k] for k in ("type", "source", "target")}
                for r in stated.get(memory["id"], [])
            ],
        }
        for memory in memories
    ]


def merge_entities(engine: Engine, name: str, other: str) -> dict[str, Any]:
    """A person's word that `other` is another name of `name`: its memories, relations and
    names join `name`'s entity, and stay joined when the graph is read again."""
    from mnemoweave.store import audit
    from mnemoweave.store.db import transaction

    build.catch_up(engine.db)
    into, gone = find(engine, name), find(engine, other)
    if into == gone:
        raise InvalidInput(f"{name!r} and {other!r} are already one entity")
    with transaction(engine.db) as db:
        keys = graph_table.keys_of(db, (into, gone))
        graph_table.alias(db, keys[gone], keys[into], "user")
        audit.record(db, "merge-entity", keys[into], {"key": keys[gone]}, {"into": keys[into]})
    return entity(engine, name)
