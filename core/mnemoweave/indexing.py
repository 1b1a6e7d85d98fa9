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
    from .retrieve import DenseChannel

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
    channel: DenseChannel,
    table: str,
    only: set[str] | None,
    progress: Callable[[str, int, int], None] | None,
    total: int,
) -> int:
    done = 0
    for batch in _batches(engine, table, only):
        vectors = channel.embedder.embed([text for _, text, _ in batch])
        channel.index.add(table, [r for r, _, _ in batch], vectors, [p for _, _, p in batch])
        done += len(batch)
        if progress:
            progress(table, done, total)
    return done


def sqlite_refs(engine: Engine, table: str) -> set[str]:
    return {f"{table[0]}_{row[0]}" for row in engine.db.execute(f"SELECT id FROM {table}")}


def gaps(engine: Engine) -> Iterator[tuple[DenseChannel, str, set[str], set[str]]]:
    """Per model and table: the rows missing from its vector index, and the entries with
    no row."""
    for channel in engine.channels:
        for table in ("memories", "turns"):
            rows, vectors = sqlite_refs(engine, table), channel.index.ids(table)
            yield channel, table, rows - vectors, vectors - rows


def drift(engine: Engine) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (model, table): rows missing from the vector index, and entries with no row."""
    return {
        (channel.name, table): (len(missing), len(extra))
        for channel, table, missing, extra in gaps(engine)
    }


def repair(engine: Engine, limit: int | None = None) -> list[str]:
    """Embed the rows each index lacks and drop the entries whose rows are gone.

    With `limit`, an index lacking more rows than that is left as it is (a model switch
    wants `reindex`, not a repair on the hot path). Returns what was done, one line each.
    """
    done = []
    for channel, table, missing, extra in gaps(engine):
        where = f"vector index ({channel.name}, {table})"
        if limit is not None and len(missing) > limit:
            done.append(f"{where}: {len(missing)} rows not embedded, over {limit}: left")
            continue
        channel.index.delete(table, sorted(extra))
        _embed_into(engine, channel, table, missing, None, len(missing))
        if missing or extra:
            done.append(f"{where}: embedded {len(missing)}, dropped {len(extra)}")
    return done


def reindex(engine: Engine, progress: Callable[[str, int, int], None] | None) -> dict[str, int]:
    """Rebuild the full-text indexes, and the vector index when a model is available."""
    with transaction(engine.db) as db:
        memories_table.reindex(db)
        turns_table.reindex(db)
    counts = {}
    for table in ("memories", "turns"):
        total = engine.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        counts[table] = total
        for channel in engine.channels:
            channel.index.clear(table)
            _embed_into(engine, channel, table, None, progress, total)
    return counts
