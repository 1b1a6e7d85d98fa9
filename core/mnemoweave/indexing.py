"""Keeping the derived indexes in step with SQLite: drift checks, repair, full rebuild."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .store import memories as memories_table
from .store import turns as turns_table
from .store.db import transaction

if TYPE_CHECKING:
    from .engine import Engine

BATCH = 64
_SQL = {
    "memories": "SELECT id, title, body, tags, project FROM memories",
    "turns": "SELECT id, text, project FROM turns",
}


def _text(table: str, row) -> str:
    if table == "memories":
        return memories_table.index_text(row["title"], row["body"], json.loads(row["tags"]))
    return row["text"]


def _batches(engine: Engine, table: str, only: set[str] | None) -> Iterator[list]:
    batch = []
    for row in engine.db.execute(_SQL[table]):
        ref = f"{table[0]}_{row['id']}"
        if only is None or ref in only:
            batch.append((ref, _text(table, row), row["project"]))
            if len(batch) >= BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def _embed_into(
    engine: Engine,
    table: str,
    only: set[str] | None,
    progress: Callable[[str, int, int], None] | None,
    total: int,
) -> int:
    done = 0
    for batch in _batches(engine, table, only):
        vectors = engine.embedder.embed([text for _, text, _ in batch])
        engine.index.add(table, [r for r, _, _ in batch], vectors, [p for _, _, p in batch])
        done += len(batch)
        if progress:
            progress(table, done, total)
    return done


def sqlite_refs(engine: Engine, table: str) -> set[str]:
    return {f"{table[0]}_{row[0]}" for row in engine.db.execute(f"SELECT id FROM {table}")}


def drift(engine: Engine) -> dict[str, tuple[int, int]]:
    """Per table: rows missing from the vector index, and index entries with no row."""
    out = {}
    for table in ("memories", "turns"):
        rows, vectors = sqlite_refs(engine, table), engine.index.ids(table)
        out[table] = (len(rows - vectors), len(vectors - rows))
    return out


def repair(engine: Engine) -> dict[str, int]:
    """Embed the rows the index lacks and drop the entries whose rows are gone."""
    fixed = {}
    for table in ("memories", "turns"):
        rows, vectors = sqlite_refs(engine, table), engine.index.ids(table)
        engine.index.delete(table, sorted(vectors - rows))
        missing = rows - vectors
        fixed[table] = _embed_into(engine, table, missing, None, len(missing)) + len(vectors - rows)
    return fixed


def reindex(engine: Engine, progress: Callable[[str, int, int], None] | None) -> dict[str, int]:
    """Rebuild the full-text indexes, and the vector index when a model is available."""
    with transaction(engine.db) as db:
        memories_table.reindex(db)
        turns_table.reindex(db)
    counts = {}
    for table in ("memories", "turns"):
        total = engine.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        counts[table] = total
        if engine.index is not None:
            engine.index.clear(table)
            _embed_into(engine, table, None, progress, total)
    return counts
