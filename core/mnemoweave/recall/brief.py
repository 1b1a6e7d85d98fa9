"""The brief: what a session of a project starts with, before any prompt.

A coding team wants its rules, conventions, decisions and pitfalls in front of the model
from the first prompt on, whether or not a prompt happens to share words with them. The
brief holds the project's accepted memories of those kinds (preferences and conclusions)
plus the global preferences and every pinned memory (importance 5), ranked by importance,
feedback weight and use, newest first among equals; superseded and trashed memories never
appear, nor one a newer active memory corrects (recall/corrections.py). Then the pending
cards of those kinds, marked as proposals not yet reviewed (with their card ids, so the
agent can weigh them and review them), most confident first, at most `brief_proposals`.
Lines are kept in that order while they fit `brief_budget` tokens (see weave.py, which
gives the brief once per session until a compaction).
"""

from __future__ import annotations

import json
import time
from contextlib import closing
from typing import TYPE_CHECKING

from mnemoweave.model import Block, Line
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.text import estimate_tokens

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

KINDS = ("pref", "conclusion")  # rules, preferences, conventions; decisions, pitfalls
# memories are read until their texts would fill the budget this many times over: a line
# too long for what is left is skipped, and shorter ones after it may still fit
READ_AHEAD = 2
BRIEF_PRIORITY = 1.0


def brief_blocks(engine: Engine, project: str | None, budget: int) -> list[Block]:
    """The brief's memories (tier "brief") and proposals (tier "proposed"), best first, as
    many memories as could fit `budget` tokens."""
    now = time.time()
    rows = []
    filled = 0
    with closing(memories_table.briefing(engine.db, project or "", KINDS)) as ranked:
        for row in ranked:
            if filled > READ_AHEAD * budget:
                break
            rows.append(row)
            filled += estimate_tokens(row["body"])
    corrected = memories_table.correctors(engine.db, [row["id"] for row in rows])
    rows = [row for row in rows if row["id"] not in corrected]  # what is in force only
    memories = tuple(
        Line(row["body"], f"m_{row['id']}", now - row["updated"], _rank(i, len(rows)), row["kind"])
        for i, row in enumerate(rows)
    )
    cards = cards_table.proposals(engine.db, project or "", KINDS, engine.config.brief_proposals)
    proposed = tuple(
        Line(
            card.summary,
            card.id,
            now - (card.created or now),
            _rank(i, len(cards)),
            card.suggested_kind,
        )
        for i, card in enumerate(cards)
    )
    blocks = [Block("brief", memories, "mnemoweave", BRIEF_PRIORITY)] if memories else []
    if proposed:
        blocks.append(Block("proposed", proposed, "mnemoweave", BRIEF_PRIORITY))
    return blocks


def _rank(position: int, count: int) -> float:
    """A score that keeps the ranked order through the weave's fill (best first)."""
    return 1.0 - position / max(1, count)


def evidence(engine: Engine, refs: list[str]) -> dict[str, list[str]]:
    """The evidence turns of the cards among `refs` (c_N), by ref."""
    ids = [int(ref[2:]) for ref in refs if ref.startswith("c_")]
    found = {}
    for cid in ids:
        row = cards_table.get(engine.db, cid)
        if row is not None:
            found[f"c_{cid}"] = json.loads(row["evidence"])
    return found
