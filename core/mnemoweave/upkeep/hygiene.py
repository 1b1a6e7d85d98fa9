"""The hygiene report: what could be tidied, found without changing anything.

Near-duplicate pairs (active memories of one project and kind whose main-model cosine is
at least `dedup_threshold`), stale memories (importance 2 or less whose decay strength has
fallen under `STALE_STRENGTH`), and index entries that no longer match SQLite.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mnemoweave.recall.retrieve import strength
from mnemoweave.store import fts
from mnemoweave.store import memories as memories_table
from mnemoweave.text import is_near_duplicate
from mnemoweave.upkeep import indexing

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

STALE_STRENGTH = 0.1  # decay strength (0..1) under which a low-importance memory is stale
NEIGHBOURS = 5


def neighbour_pairs(engine: Engine, rows: dict[str, Any]) -> dict[tuple[str, str], float]:
    """Pairs of `rows` (ref -> memory row) of one project and kind that are among each
    other's NEIGHBOURS nearest by the main model, with their cosine (none when lexical-only)."""
    if not engine.channels or not rows:
        return {}
    import numpy as np

    index = engine.channels[0].index
    by_project: dict[str, list[str]] = {}
    for ref, row in rows.items():
        by_project.setdefault(row["project"], []).append(ref)
    pairs = {}
    for project, group in by_project.items():
        stored = index.vectors("memories", group, [project])
        refs = list(stored)
        if not refs:
            continue
        vectors = np.asarray([stored[r] for r in refs])
        found = index.neighbours("memories", vectors, NEIGHBOURS + 1, [project])
        for ref, near in zip(refs, found, strict=True):
            kind = rows[ref]["kind"]
            for other, cosine in near:
                peer = rows.get(other)
                if other != ref and peer is not None and peer["kind"] == kind:
                    pairs[(min(ref, other), max(ref, other))] = round(float(cosine), 4)
    return pairs


def _near_duplicates(engine: Engine) -> list[dict[str, Any]]:
    threshold = engine.config.dedup_threshold
    rows = {f"m_{r['id']}": r for r in memories_table.active_bodies(engine.db)}
    pairs = {
        pair: cosine
        for pair, cosine in neighbour_pairs(engine, rows).items()
        if is_near_duplicate(rows[pair[0]]["body"], rows[pair[1]]["body"], cosine, threshold)
    }
    return [{"a": a, "b": b, "cosine": c} for (a, b), c in sorted(pairs.items())]


def stale(engine: Engine, now: float) -> list[dict[str, Any]]:
    """Low-importance memories whose strength (the decay curve search weighs them by,
    retrieve.strength) fell under STALE_STRENGTH."""
    out = []
    for row in memories_table.low_importance(engine.db):
        left = strength(row, engine.config, now)
        if left < STALE_STRENGTH:
            out.append(
                {
                    "id": f"m_{row['id']}",
                    "importance": row["importance"],
                    "strength": round(left, 3),
                    "text": row["body"][:120],
                }
            )
    return out


def report(engine: Engine, now: float | None = None) -> dict[str, Any]:
    """Everything hygiene would suggest; read-only."""
    orphans: dict[str, Any] = {}
    for table in ("memories", "turns"):
        missing, extra = fts.missing_and_extra(engine.db, table)
        orphans[f"fts.{table}"] = {"not_indexed": missing, "stale_entries": extra}
    if engine.channels:
        for (model, table), (missing, extra) in indexing.drift(engine).items():
            orphans[f"{model}.{table}"] = {"not_indexed": missing, "stale_entries": extra}
    return {
        "near_duplicates": _near_duplicates(engine),
        "stale": stale(engine, now or time.time()),
        "index": orphans,
    }
