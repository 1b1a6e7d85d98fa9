"""The daemon's side of team memory: the background sync and the team routes.

`TeamSync` is a thread that syncs (team/sync.py) every `team_sync_seconds`, at once when
a session start wakes it, and after a failure only once its backoff has passed; the store
parts run under the engine lock, the network outside it, so hooks never wait on the team's
server. `GET /v1/team` (status) and `POST /v1/team/sync` run without holding the lock
across a request to the server either.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from mnemoweave.daemon.routes import Context, Route, add
from mnemoweave.daemon.schema import BOOL, OBJECT

log = logging.getLogger("mnemoweave.daemon")
STOP_WITHIN = 40.0  # seconds a sync in flight may take to finish at shutdown


class TeamSync:
    def __init__(self, ctx: Context, every: float) -> None:
        from mnemoweave.team.sync import waker

        self.ctx, self.every = ctx, every
        self.wake = waker(ctx.engine.home)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="team-sync", daemon=True)

    def start(self) -> TeamSync:
        self.wake.set()  # a first sync right away
        self.thread.start()
        return self

    def run(self) -> None:
        from mnemoweave.team.sync import due, sync

        while not self.stopping.is_set():
            self.wake.wait(self.every)
            self.wake.clear()
            if self.stopping.is_set():
                return
            try:
                with self.ctx.lock:
                    ready = due(self.ctx.engine, time.time())
                if ready:
                    done = sync(self.ctx.engine)
                    log.info("team sync: %s", done)
            except Exception:
                log.exception("the team sync failed")

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        self.thread.join(STOP_WITHIN)


def start(ctx: Context, config: Any) -> TeamSync | None:
    """The background sync, when a team is configured."""
    from mnemoweave.team.sync import use_lock

    use_lock(ctx.engine.home, ctx.lock)
    return TeamSync(ctx, config.team_sync_seconds).start() if config.team_url else None


def _status(ctx: Context, probe: bool = True) -> dict[str, Any]:
    from mnemoweave.team.sync import status

    return status(ctx.engine, probe=probe)  # the store parts under the lock (use_lock)


def _sync(ctx: Context, allow_insecure: bool = False) -> dict[str, Any]:
    from mnemoweave.team.sync import sync

    return sync(ctx.engine, allow_insecure=allow_insecure)


add(
    Route(
        "GET",
        "/v1/team",
        _status,
        "Team memory: the server and its state, the last sync, what is queued, errors.",
        {"probe": BOOL},
        returns=OBJECT,
        op="team_status",
        engine=False,
    ),
    Route(
        "POST",
        "/v1/team/sync",
        _sync,
        "Push what is queued for the team's server and pull its changes into the mirror.",
        {"allow_insecure": BOOL},
        returns=OBJECT,
        op="team_sync",
        engine=False,
    ),
)
