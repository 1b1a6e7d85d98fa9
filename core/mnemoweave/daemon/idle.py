"""What the daemon does while nobody asks anything of it: once, after a few quiet seconds,
set up the knowledge graph's readers (jieba's part-of-speech tagger takes about a second
of the interpreter, which a prompt answered meanwhile would share); and once a day, after a
quiet spell, a consolidation proposal whose clusters and clashes become review cards
(consolidate.idle_cards). Nothing is applied: a person or the agent decides each card.
Consolidation is off with `consolidate_idle = false`."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from mnemoweave.daemon.routes import Context

log = logging.getLogger("mnemoweave.daemon")
QUIET_SECONDS = 120.0  # how long without a request before the daemon looks
EVERY_SECONDS = 86400.0  # at most one proposal a day (the store remembers the last one)
LOOK_EVERY = 60.0  # how often a quiet daemon checks whether one is due
PREPARE_AFTER = 5.0  # quiet seconds before the graph's readers are set up


class IdleWork:
    def __init__(self, ctx: Context, enabled: bool) -> None:
        self.ctx, self.enabled = ctx, enabled
        self._looked = 0.0
        self._busy = threading.Lock()
        self.thread: threading.Thread | None = None
        self.prepared = False

    def tick(self, idle_seconds: float, now: float | None = None) -> None:
        """Called by the daemon's main loop: start a look when quiet long enough."""
        now = time.monotonic() if now is None else now
        if not self.prepared and idle_seconds >= PREPARE_AFTER:
            from mnemoweave.graph.extract import prepare

            self.prepared = True
            threading.Thread(target=prepare, name="prepare", daemon=True).start()
        if not self.enabled or idle_seconds < QUIET_SECONDS or now - self._looked < LOOK_EVERY:
            return
        self._looked = now
        if self._busy.locked():
            return
        self.thread = threading.Thread(target=self.run, name="idle", daemon=True)
        self.thread.start()

    def run(self) -> list[str]:
        """Propose and make cards when due; the ids of the cards made (logged)."""
        from mnemoweave.upkeep.consolidate import idle_cards, idle_due

        with self._busy:
            try:
                with self.ctx.lock:
                    engine: Any = self.ctx.engine
                    if not idle_due(engine, time.time(), EVERY_SECONDS):
                        return []
                    made = idle_cards(engine)
            except Exception:
                log.exception("the idle consolidation failed")
                return []
        log.info("idle consolidation: %d card(s) to review", len(made))
        return made
