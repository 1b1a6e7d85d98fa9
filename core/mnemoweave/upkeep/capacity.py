"""Capacity: `max_memories` (0: no limit) bounds the active memories.

Past the limit, after a write, the memories of least value go to the trash (where `restore`
takes one back), as many as the store is over. Value = importance x feedback weight x decay
factor (retrieve.decay_factor: the memory's age on its scope's clock, slowed by recalls)
x (1 + log2(1 + recalls)); the lowest goes first, the least recently written among equals.
Preferences and rules and pinned memories (importance 5) are never evicted, nor the
memories the write itself stored. Each eviction is audited (action `evict`, actor
`capacity`, with the value and the limit).
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from mnemoweave.capture.writes import Written, announce
from mnemoweave.config import Config
from mnemoweave.recall.retrieve import decay_factor
from mnemoweave.store import audit
from mnemoweave.store import memories as memories_table

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

ACTOR = "capacity"


def value(row: sqlite3.Row | dict[str, Any], config: Config, now: float) -> float:
    """What a memory is worth keeping (see the module docstring)."""
    recalls = 1 + math.log2(1 + row["access_count"])
    return float(row["importance"] * row["weight"] * decay_factor(row, config, now) * recalls)


def evict(db: sqlite3.Connection, config: Config, keep: Collection[str]) -> list[str]:
    """In a write's transaction: trash the least valuable memories the store holds over
    `max_memories` (never those in `keep`, what the write stored); their ids."""
    limit = config.max_memories
    over = memories_table.by_status(db).get("active", 0) - limit
    if limit <= 0 or over <= 0:
        return []
    now = time.time()
    rows = [r for r in memories_table.evictable(db) if f"m_{r['id']}" not in keep]
    worth = {r["id"]: value(r, config, now) for r in rows}
    chosen = sorted(rows, key=lambda r: (worth[r["id"]], r["updated"], r["id"]))[:over]
    for row in chosen:
        memories_table.set_status(db, row["id"], "trashed", now)
        after = {"status": "trashed", "value": round(worth[row["id"]], 4), "limit": limit}
        audit.record(db, "evict", f"m_{row['id']}", {"status": "active"}, after, ACTOR)
    return [f"m_{row['id']}" for row in chosen]


def announce_evicted(engine: Engine, refs: list[str]) -> None:
    """After the commit: what was trashed, told as a forget is (on_memory)."""
    for ref in refs:
        announce(engine.pm, engine.db, Written("trashed", ref, reason="over max_memories"))
