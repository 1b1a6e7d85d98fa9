"""Threads left open: what the user said in a session that no assistant turn has answered
yet (the user turns after the session's last assistant turn)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .errors import InvalidInput
from .model import Turn
from .operations import remotable
from .store import turns as turns_table

if TYPE_CHECKING:
    from .engine import Engine

MAX_THREADS = 200  # user turns returned at most, the newest

_UNANSWERED = """
SELECT * FROM (
    SELECT * FROM turns AS asked
    WHERE role = 'user' AND ts >= ? AND NOT EXISTS (
        SELECT 1 FROM turns AS answer
        WHERE answer.session_id = asked.session_id AND answer.role = 'assistant'
          AND answer.seq > asked.seq
    )
    ORDER BY ts DESC, id DESC LIMIT ?
) ORDER BY session_id, seq
"""


@remotable
def unanswered(engine: Engine, within: float | None = None) -> list[Turn]:
    """The user turns no assistant turn followed in their session, by session and in
    order; `within` minutes: only those said that recently."""
    if within is not None and not within > 0:
        raise InvalidInput(f"--within takes minutes above 0, got {within}")
    since = 0.0 if within is None else time.time() - within * 60
    rows = engine.db.execute(_UNANSWERED, (since, MAX_THREADS)).fetchall()
    return [turns_table.from_row(row) for row in rows]
