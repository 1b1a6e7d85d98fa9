"""A correction ranks above what it corrects.

When a memory is stored that clashes with an active one on the same subject (remember's
conflict check, learn/conflicts.py), the older one is marked `corrected_by` the newer until
one supersedes the other. Search then lists the newer first, and each earlier memory says
so (`extra["earlier"]`: the newer's id and the earlier one's date), so neither the agent
nor a person takes an old value for the current one.
"""

from __future__ import annotations

import sqlite3

from mnemoweave.model import Hit, iso
from mnemoweave.store import memories as memories_table


def newest_first(db: sqlite3.Connection, hits: list[Hit]) -> list[Hit]:
    """The hits in their order, but each memory a newer active one corrects marked as
    earlier, and placed right after the newer one when that is among them."""
    ids = [int(hit.id[2:]) for hit in hits if hit.id.startswith("m_")]
    newer = memories_table.correctors(db, ids)
    if not newer:
        return hits
    earlier: dict[str, str] = {}
    for hit in hits:
        if hit.id.startswith("m_") and int(hit.id[2:]) in newer:
            by = f"m_{newer[int(hit.id[2:])]}"
            hit.extra["earlier"] = {"by": by, "date": (iso(hit.created) or "")[:10]}
            earlier[hit.id] = by
    present = {hit.id for hit in hits}
    out = [hit for hit in hits if earlier.get(hit.id) not in present]
    moved = [hit for hit in hits if earlier.get(hit.id) in present]
    while moved:  # a chain (m_1 corrected by m_2, m_2 by m_3) is placed newest first
        placed = {hit.id: n for n, hit in enumerate(out)}
        ready = [hit for hit in moved if earlier[hit.id] in placed]
        if not ready:  # a loop of corrections: left in their order
            return out + moved
        for hit in ready:
            at = next(n for n, h in enumerate(out) if h.id == earlier[hit.id])
            while at + 1 < len(out) and earlier.get(out[at + 1].id) == earlier[hit.id]:
                at += 1  # after the other memories the same one corrects
            out.insert(at + 1, hit)
        moved = [hit for hit in moved if hit not in ready]
    return out


def label(hit: Hit) -> str:
    """How a line names a hit's kind: `fact`, or `fact · earlier · 2026-12-05` for a
    memory a newer one corrects."""
    earlier = hit.extra.get("earlier")
    return f"{hit.kind} · earlier · {earlier['date']}" if earlier else hit.kind
