"""Threads left open: what the user said in a session that no assistant turn has answered
yet (the user turns after the session's last assistant turn)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mnemoweave.errors import InvalidInput
from mnemoweave.model import Turn
from mnemoweave.store import turns as turns_table

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

MAX_THREADS = 200  # user turns returned at most, the newest


def unanswered(engine: Engine, within: float | None = None) -> list[Turn]:
    """The user turns no assistant turn followed in their session, by session and in
    order; `within` minutes: only those said that recently."""
    if within is not None and not within > 0:
        raise InvalidInput(f"--within takes minutes above 0, got {within}")
    since = 0.0 if within is None else time.time() - within * 60
    return turns_table.unanswered(engine.db, since, MAX_THREADS)
