"""The knowledge graph as files: `graph.json` (entities, aliases, relations, and which memory
names what) and `graph/NAME.md`, one note per entity whose [[wiki links]] lead to the
entities named with it and to its memories' project files, as Obsidian-like tools read
them. The graph is read from the memories: `import` leaves these files aside."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from mnemoweave.capture.file_formats import project_filename
from mnemoweave.graph import build
from mnemoweave.store import graph as graph_table
from mnemoweave.text import fingerprint

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

FOLDER = "graph"
_UNSAFE = re.compile(r"[\\/:*?\"<>|#^\[\]\x00-\x1f]+")


def note_name(name: str, key: str, taken: set[str]) -> str:
    """A file name (without .md) for an entity's note, unique among `taken`: its name with
    the characters file systems and wiki links refuse replaced."""
    base = _UNSAFE.sub("-", name).strip(" .-")[:60] or "entity"
    if base.lower() in taken:
        base = f"{base}-{fingerprint(key)[:6]}"
    taken.add(base.lower())
    return base


def files(engine: Engine) -> dict[str, str]:
    """File name -> content of the graph of the active memories (none when it is empty)."""
    build.catch_up(engine.db)
    rows = graph_table.active_entities(engine.db)
    if not rows:
        return {}
    taken: set[str] = set()
    notes = {row["id"]: note_name(row["name"], row["key"], taken) for row in rows}
    named: dict[int, list[dict[str, Any]]] = {}
    for r in graph_table.active_mentions(engine.db):
        named.setdefault(r["entity"], []).append(dict(r))
    relations = [dict(r) for r in graph_table.active_relations(engine.db)]
    aliases: dict[str, list[str]] = {}
    for key, into in graph_table.all_aliases(engine.db):
        aliases.setdefault(into, []).append(key)
    names = {row["id"]: row["name"] for row in rows}
    graph = {
        "entities": [
            {
                "key": row["key"],
                "name": row["name"],
                "kind": row["kind"],
                "aliases": aliases.get(row["key"], []),
                "memories": [f"m_{m['id']}" for m in named.get(row["id"], [])],
            }
            for row in rows
        ],
        "relations": [
            {
                "type": r["type"],
                "source": names.get(r["source"]),
                "target": r["version"] if r["type"] == "pinned_to" else names.get(r["target"]),
                "evidence": f"m_{r['memory']}",
            }
            for r in relations
            if r["source"] in names or r["target"] in names
        ],
    }
    out = {"graph.json": json.dumps(graph, ensure_ascii=False, indent=2) + "\n"}
    for row in rows:
        out[f"{FOLDER}/{notes[row['id']]}.md"] = _note(row, notes, named, relations, aliases)
    return out


def _note(
    row: Any,
    notes: dict[int, str],
    named: dict[int, list[dict[str, Any]]],
    relations: list[dict[str, Any]],
    aliases: dict[str, list[str]],
) -> str:
    def link(eid: int | None) -> str:
        return f"[[{notes[eid]}]]" if eid in notes else "?"

    eid = row["id"]
    lines = [f"# {row['name']}", "", f"kind: {row['kind']}"]
    if aliases.get(row["key"]):
        lines.append("also: " + ", ".join(aliases[row["key"]]))
    mine = [r for r in relations if eid in (r["source"], r["target"])]
    if mine:
        lines += ["", "## Relations", ""]
        for r in mine:
            source = link(r["source"]) if r["source"] else "rule"
            target = r["version"] if r["type"] == "pinned_to" else link(r["target"])
            lines.append(f"- {source} {r['type'].replace('_', ' ')} {target} (m_{r['memory']})")
    memories = named.get(eid, [])
    shared: dict[int, int] = {}
    mine_ids = {m["id"] for m in memories}
    for other, texts in named.items():
        if other != eid:
            count = sum(1 for m in texts if m["id"] in mine_ids)
            if count:
                shared[other] = count
    if shared:
        lines += ["", "## Named with", ""]
        for other, count in sorted(shared.items(), key=lambda pair: (-pair[1], notes[pair[0]])):
            lines.append(f"- {link(other)} ({count})")
    lines += ["", "## Memories", ""]
    for m in memories:
        where = project_filename(m["project"]).removesuffix(".md")
        body = " ".join(m["body"].split())
        lines.append(f"- m_{m['id']} in [[{where}]]: {body}")
    return "\n".join(lines) + "\n"
