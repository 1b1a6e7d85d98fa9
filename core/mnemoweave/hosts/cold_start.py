"""A session that starts while no daemon answers: its start read from the store.

A hook never waits for a daemon to warm up (models, the vector index and jieba take one to
three seconds): the host would wait with it. When a session opens and no daemon answers,
the hook wakes one and answers the start itself, since what a session starts with needs
no model and no vector index: its brief, scene and nudge are rows of SQLite (an empty
query weaves no knowledge). What it gives the session is recorded as the daemon records
it, so the session's later prompts do not repeat it; the start event is spooled, and the
daemon stores it when it is up.

A start after a compaction or a clear (the daemon resets what the session was given
first), a store not made yet, or a store whose schema is older than this code gets no
answer here, and the hook fails open as always.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from mnemoweave.engine import RESETS, Engine
from mnemoweave.hosts.adapters import hosts
from mnemoweave.hosts.install import aside_for
from mnemoweave.model import SessionEvent
from mnemoweave.store.db import DB_NAME
from mnemoweave.store.migrations import MIGRATIONS, applied


def answer(home: str, host: str, event: str, payload: Any, via: str | None = None) -> str:
    """The host's output for a session's start, read from the store ("" for any other
    event, for a hook of the Claude Code plugin standing aside for a settings install, or
    when the store cannot give it: see the module doc)."""
    if aside_for(host, payload, via) is not None or not _current(Path(home) / DB_NAME):
        return ""
    engine = Engine(Path(home))
    try:
        adapter = hosts(engine.pm).get(host)
        if adapter is None:
            return ""
        announced = adapter.events(event, payload)
        starts = [item for item in announced if isinstance(item, SessionEvent)]
        if not announced or len(starts) != len(announced):
            return ""
        if any(item.kind != "start" or item.source in RESETS for item in starts):
            return ""
        found = adapter.answer(engine, event, payload, announced)
        return json.dumps(found, ensure_ascii=False) if found else ""
    finally:
        engine.close()


def _current(path: Path) -> bool:
    """The store is there and its schema is this code's (opening it changes nothing)."""
    if not path.is_file():
        return False
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            done = set(applied(db))
    except sqlite3.Error:
        return False
    return all(migration.__name__ in done for migration in MIGRATIONS)
