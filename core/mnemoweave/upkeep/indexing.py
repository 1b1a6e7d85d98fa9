"""Keeping the derived indexes in step with SQLite: drift checks, repair, full rebuild."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from mnemoweave.store import memories as memories_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import transaction

if TYPE_CHECKING:
    from mnemoweave.engine import Engine
    from mnemoweave.recall.retrieve import DenseChannel

BATCH = 64
TABLES = {"memories": memories_table, "turns": turns_table}  # the store modules indexed


def text_of(table: str, row: sqlite3.Row) -> str:
    """The text a row is embedded from."""
    if table == "memories":
        return memories_table.index_text(row["title"], row["body"], json.loads(row["tags"]))
    text: str = row["text"]
    return text


def _batches(engine: Engine, table: str) -> Iterator[list[sqlite3.Row]]:
    batch = []
    for row in TABLES[table].to_embed(engine.db):
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _embed_rows(engine: Engine, channel: DenseChannel, table: str, rows: list[sqlite3.Row]) -> None:
    vectors = channel.embedder.embed([text_of(table, row) for row in rows])
    refs = [f"{table[0]}_{row['id']}" for row in rows]
    channel.index.add(table, refs, vectors, [row["project"] for row in rows])


def _rows(engine: Engine, table: str, refs: list[str]) -> list[sqlite3.Row]:
    """The rows of these refs that still exist."""
    return list(TABLES[table].to_embed(engine.db, [int(ref[2:]) for ref in refs]))


def gaps(engine: Engine) -> Iterator[tuple[DenseChannel, str, set[str], set[str]]]:
    """Per model and table: the rows missing from its vector index, and the entries with
    no row. A vector in another project's collection than its row's (a project renamed
    by an older version) is both: it is dropped, then embedded again where it belongs."""
    for channel in engine.channels:
        for table in ("memories", "turns"):
            rows = {f"{table[0]}_{i}": p for i, p in TABLES[table].projects(engine.db).items()}
            vectors = channel.index.ids(table)
            misplaced = {ref for ref, where in vectors.items() if rows.get(ref, where) != where}
            missing = rows.keys() - vectors.keys() | misplaced
            yield channel, table, missing, vectors.keys() - rows.keys() | misplaced


def drift(engine: Engine) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (model, table): rows missing from the vector index, and entries with no row."""
    return {
        (channel.name, table): (len(missing), len(extra))
        for channel, table, missing, extra in gaps(engine)
    }


def repair_steps(
    engine: Engine,
    size: int = BATCH,
    progress: Callable[[str, int, int], None] | None = None,
    remote: bool = True,
) -> Iterator[str]:
    """Embed the rows each vector index lacks and drop the entries whose rows are gone, one
    batch of `size` rows per step, so a caller that shares the engine (the daemon) holds
    its lock a step at a time. A step yields "", or with an index's last batch, what was
    done to it. `progress(model, done, total)` hears of each model's rows embedded so far,
    out of all it lacked, first with none done (a model that lacks nothing: not at all).
    Without `remote`, a remote model's index is left to the daemon's remote work."""
    found = [g for g in gaps(engine) if remote or not g[0].remote]
    lacking: dict[str, int] = {}
    for channel, _, missing, _ in found:
        lacking[channel.name] = lacking.get(channel.name, 0) + len(missing)
    done = dict.fromkeys(lacking, 0)
    for name, total in lacking.items():
        if total and progress:
            progress(name, 0, total)
    for channel, table, missing, extra in found:
        channel.index.delete(table, sorted(extra))
        refs, embedded = sorted(missing, key=lambda ref: int(ref[2:])), 0
        batches = [refs[start : start + size] for start in range(0, len(refs), size)] or [[]]
        for number, batch in enumerate(batches, 1):
            rows = _rows(engine, table, batch) if batch else []
            if rows:  # none when they were purged meanwhile
                _embed_rows(engine, channel, table, rows)
                embedded += len(rows)
            done[channel.name] += len(batch)
            if batch and progress:
                progress(channel.name, done[channel.name], lacking[channel.name])
            last = number == len(batches) and (missing or extra)
            where = f"vector index ({channel.name}, {table})"
            yield f"{where}: embedded {embedded}, dropped {len(extra)}" if last else ""


def repair(engine: Engine) -> list[str]:
    """All of `repair_steps` at once; what was done, one line per index."""
    return [line for line in repair_steps(engine) if line]


def reindex(
    engine: Engine, progress: Callable[[str, int, int], None] | None = None
) -> dict[str, int]:
    """Rebuild the full-text indexes and the knowledge graph, and the vector index when a
    model is available."""
    from mnemoweave.graph import build

    with transaction(engine.db) as db:
        memories_table.reindex(db)
        turns_table.reindex(db)
    counts = {"graphed": build.rebuild(engine.db)}
    for table in ("memories", "turns"):
        total = TABLES[table].count(engine.db)
        counts[table] = total
        for channel in engine.channels:
            channel.index.clear(table)
            done = 0
            for rows in _batches(engine, table):
                _embed_rows(engine, channel, table, rows)
                done += len(rows)
                if progress:
                    progress(table, done, total)
    return counts
