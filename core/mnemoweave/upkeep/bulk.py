"""Memories chosen in bulk, by a tag or by words in them: what `forget --tag|--match`
shows, then moves to the trash."""

from __future__ import annotations

from typing import Any

from mnemoweave.errors import InvalidInput
from mnemoweave.model import Memory, same_tag

BULK_LIMIT = 10_000  # active memories looked through at once, newest first


def chosen(engine: Any, tag: str = "", match: str = "") -> list[Memory]:
    """Active memories of every scope that carry `tag` (a needle tag with or without its
    brackets) and hold `match` (its case ignored; either may be left out), newest first."""
    wanted = match.strip().casefold()
    if not tag.strip() and not wanted:
        raise InvalidInput("say which memories: a tag or a text to match")
    return [
        memory
        for memory in engine.list_memories(BULK_LIMIT)
        if (not tag.strip() or any(same_tag(t, tag) for t in memory.tags))
        and wanted in f"{memory.title}\n{memory.body}".casefold()
    ]
