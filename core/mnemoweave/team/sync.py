"""One team sync (push the outbox, pull the mirror), its state, and `team status`.

The sync runs in the daemon's background thread every `team_sync_seconds` and when a
session starts (hooks only wake it: they never wait on the network), or on `team sync`.
Each part that touches the store runs under `lock` (the daemon's engine lock); the network
requests run outside it. A failed sync records its one-line reason and backs off (5 s,
doubling, at most BACKOFF_MAX) before the daemon tries again; `team sync` always tries.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from mnemoweave.errors import InvalidInput
from mnemoweave.store import team as team_table
from mnemoweave.store.db import transaction
from mnemoweave.team import mirror, outbox
from mnemoweave.team.outbox import Lock
from mnemoweave.team.server import TeamError, TeamServer, why

BACKOFF_FIRST, BACKOFF_MAX = 5.0, 300.0
_WAKE: dict[str, threading.Event] = {}  # data dir -> the event its daemon's sync waits on
_LOCKS: dict[str, threading.Lock] = {}  # data dir -> its daemon's engine lock


def waker(home: Path) -> threading.Event:
    """The event that wakes the sync of the data dir `home` (its daemon waits on it)."""
    return _WAKE.setdefault(str(home), threading.Event())


def use_lock(home: Path, lock: threading.Lock) -> None:
    """The daemon of `home` serialises engine calls with `lock`: the sync takes it around
    each part that touches the store (a command run in-process needs none)."""
    _LOCKS[str(home)] = lock


def _lock_of(engine: Any) -> Lock:
    lock = _LOCKS.get(str(engine.home))
    return (lambda: lock) if lock is not None else contextlib.nullcontext


def connect(engine: Any, allow_insecure: bool = False) -> TeamServer:
    config = engine.config
    if not config.team_url or not config.team_token:
        raise InvalidInput(
            "no team: set team_url and team_token (config.toml or MNEMOWEAVE_TEAM_*)"
        )
    if engine.embedder is None:
        raise TeamError("team memory needs the embedding model: run `mnemoweave model build`")
    return TeamServer(
        config.team_url,
        config.team_token,
        config.team_name,
        engine.embedder.name,
        engine.embedder.dim,
        allow_insecure or config.team_allow_insecure,
    )


def _save(engine: Any, lock: Lock, values: dict[str, str]) -> None:
    with lock(), transaction(engine.db) as db:
        team_table.set_state(db, values)


def due(engine: Any, now: float) -> bool:
    """Whether the backoff after a failure has passed (the caller holds the engine)."""
    return float(team_table.state(engine.db).get("next_try", "0")) <= now


def sync(engine: Any, allow_insecure: bool = False) -> dict[str, Any]:
    """Push then pull once; the counts, or the error (recorded for `team status`)."""
    server = connect(engine, allow_insecure)
    lock = _lock_of(engine)
    with lock():
        state = team_table.state(engine.db)
    try:
        server.ready()
        identity = f"{server.url} {server.team}"
        if state.get("team", identity) != identity:  # another team: start afresh
            with lock():
                with transaction(engine.db) as db:
                    team_table.forget_team(db)
                if engine.index is not None:
                    engine.index.clear(mirror.TABLE)
            state = {}
        _save(engine, lock, {"team": identity})
        done = outbox.push(engine, server, lock) | mirror.pull(engine, server, lock)
    except Exception as exc:
        failures = int(state.get("failures", "0")) + 1
        wait = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))
        error = why(exc)
        _save(
            engine,
            lock,
            {
                "last_error": error,
                "failures": str(failures),
                "next_try": repr(time.time() + wait),
            },
        )
        return {"error": error, "retry_in": wait}
    _save(
        engine,
        lock,
        {"last_sync": repr(time.time()), "last_error": "", "failures": "0", "next_try": "0"},
    )
    return done


def status(engine: Any, probe: bool = True) -> dict[str, Any]:
    """The team, its server (asked when `probe`), the last sync, what is queued, errors."""
    config = engine.config
    lock = _lock_of(engine)
    if not config.team_url:
        return {"team": "", "server": "", "state": "off (no team_url)"}
    with lock():
        state = team_table.state(engine.db)
        queued = len(outbox.plan(engine, vectors=False))
        mirrored = team_table.mirror_count(engine.db)
    found: dict[str, Any] = {
        "team": config.team_name or state.get("team", "").rpartition(" ")[2],
        "server": config.team_url,
        "member": None,
        "last_sync": float(state["last_sync"]) if state.get("last_sync") else None,
        "queued": queued,
        "mirrored": mirrored,
        "last_error": state.get("last_error") or None,
    }
    if probe:
        try:
            info = connect(engine).info()
            found |= {"team": info["team"], "member": info["member"]}
            found["records"] = info["records"]
            found["state"] = "ok"
        except Exception as exc:
            found["state"] = "error"
            found["error"] = why(exc)
    return found
