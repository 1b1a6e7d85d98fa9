"""Forgetting: a memory goes to the trash (restorable), and is purged for good by hand or
once it has been there `trash_days`; a purged turn takes its copies (the cards citing it,
its capsule line) with it. Every step is audited; a purge scrubs the audited content."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from mnemoweave.capture import capsule
from mnemoweave.capture.writes import Written, announce
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.model import Memory, parse_id
from mnemoweave.store import audit, fts
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store import sessions as sessions_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import checkpoint, transaction

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

ONLY = "only memories (m_N) can be forgotten or restored"


def forget(engine: Engine, ref: str, actor: str = "user") -> Written:
    """Move a memory to the trash (restorable until purged)."""
    with transaction(engine.db) as db:
        row = memories_table.by_ref(db, ref, ONLY)
        if row["status"] == "trashed":
            return Written("unchanged", ref, reason="already in the trash")
        memories_table.set_status(db, row["id"], "trashed", time.time())
        audit.record(db, "forget", ref, {"status": row["status"]}, {"status": "trashed"}, actor)
    return announce(engine.pm, engine.db, Written("trashed", ref))


def restore(engine: Engine, ref: str, actor: str = "user") -> Written:
    """Take a memory out of the trash."""
    with transaction(engine.db) as db:
        row = memories_table.by_ref(db, ref, ONLY)
        if row["status"] != "trashed":
            return Written("unchanged", ref, reason=f"not in the trash (status {row['status']})")
        status = "superseded" if row["superseded_by"] is not None else "active"
        memories_table.set_status(db, row["id"], status, None)
        audit.record(db, "restore", ref, {"status": "trashed"}, {"status": status}, actor)
    return announce(engine.pm, engine.db, Written("restored", ref))


def _forget_turn_copies(db: sqlite3.Connection, ref: str, session: str) -> None:
    """A purged turn's text also lives in the cards it is evidence of and in the capsule."""
    for card in cards_table.delete_citing(db, ref):
        audit.scrub(db, f"c_{card}")
    recap = capsule.load(sessions_table.capsule(db, session))
    sessions_table.set_capsule(db, session, capsule.dump(capsule.without(recap, ref)))


def purge(engine: Engine, ref: str, actor: str = "user") -> Written:
    """Delete a memory or a turn for good: row, indexes, and its content in the audit log."""
    table, rowid = parse_id(ref)
    tables = {"memory": ("memories", memories_table), "turn": ("turns", turns_table)}
    if table not in tables:
        raise InvalidInput(f"{ref} is a {table}; only memories and turns can be purged")
    name, module = tables[table]
    found = engine.get(ref) if table == "memory" else None
    gone = found if isinstance(found, Memory) else None  # what on_memory is told
    with transaction(engine.db) as db:
        if module.get(db, rowid) is None:
            raise NotFound(f"no {table} with id {ref}")
        if table == "turn":
            _forget_turn_copies(db, ref, module.get(db, rowid)["session_id"])
        module.delete(db, rowid)
        fts.compact(db, name)
        audit.scrub(db, ref)
        audit.record(db, "purge", ref, actor=actor)
    checkpoint(engine.db)
    for channel in engine.channels:
        channel.index.delete(name, [ref])
    return announce(engine.pm, engine.db, Written("purged", ref), gone)


def purge_expired(engine: Engine, now: float | None = None) -> list[str]:
    """Purge memories that have been in the trash longer than `trash_days`."""
    cutoff = (now or time.time()) - engine.config.trash_days * 86400
    refs = [f"m_{mid}" for mid in memories_table.expired_trash(engine.db, cutoff)]
    for ref in refs:
        purge(engine, ref, actor="trash")
    return refs
