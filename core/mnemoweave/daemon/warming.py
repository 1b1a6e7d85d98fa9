"""What the daemon answers while it warms up.

The daemon listens on its socket as soon as it holds the store's lock, before it loads the
engine (models, vector indexes, jieba, the classifier: one to three seconds), so that a hook
never waits for the warm-up nor pays for spooling in the host's path. Until it is warm, a
process of its own (`Taker`, forked before the warm-up) answers on the socket, since the
warm-up's imports and model loads hold the daemon's interpreter for up to a second at a
time. It answers:
- a hook event is taken at once: a session's start is answered from the store as a hook
  that finds no daemon answers it (cold_start.py), any other event gets no output; the
  payload is spooled as such a hook spools it, and stored once the daemon is warm (it
  replays the spool before it serves), so no turn is lost; a hook of the Claude Code plugin
  that stands aside for a settings install is left alone, as when warm;
- a prompt that may wait (its hook says how long: `wait`, the seconds left of its budget) is
  held instead when the warm-up may end within that time (judged from the last warm-up,
  kept in WARM_UP): once the daemon is warm it is told to send the prompt again (503 with
  `"again": true`), which the warm daemon weaves; a prompt held in vain is taken as above;
  so is any hook that reaches the taker once the daemon is warm;
- every other request is refused with 503, so `client.running` is false until the daemon
  is warm, and callers that need the engine wait for it (`ensure_daemon`) or work without
  the daemon.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socketserver
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from mnemoweave.hook import OPENING, spool
from mnemoweave.hosts.client import encodable
from mnemoweave.hosts.install import aside_for

log = logging.getLogger("mnemoweave.daemon")
HOOK = re.compile(r"/v1/hooks/([^/]+)/([^/]+)")
WARMING = "the daemon is warming up: try again in a moment"
AGAIN = "the daemon is warm now: send the hook again"
WARM_UP = "daemon.warm-up"  # in the data dir: seconds the last warm-up took
FIRST_WARM_UP = 2.0  # seconds a warm-up is taken to need when none was measured yet
SPOOL_TIME = 0.05  # seconds a held hook keeps for its spooling, when the wait is in vain
_warm = threading.Event()  # set in the taker when the daemon is warm (it is told to stop)
_warm_by: float | None = None  # when the daemon is likely warm (time.monotonic())


def answer(home: Path, method: str, target: str, body: bytes) -> tuple[int, Any]:
    """Status and JSON payload for one request that came while the daemon warms up."""
    found = HOOK.fullmatch(urlsplit(target).path) if method == "POST" else None
    if found is None:
        return 503, {"error": WARMING}
    host, event = unquote(found[1]), unquote(found[2])
    try:
        given = json.loads(body or b"null")
    except ValueError:
        return 400, {"error": "the request body is not JSON"}
    if not isinstance(given, dict) or "payload" not in given:
        return 400, {"error": 'a hook is posted as {"payload": ...}'}
    payload, via = encodable(given["payload"]), given.get("via")
    via = via if isinstance(via, str) else None
    if aside_for(host, payload, via) is not None:
        return 200, {"output": None}
    wait = given.get("wait")
    if _warm.is_set() or isinstance(wait, int | float) and wait > 0 and _held(float(wait)):
        return 503, {"error": AGAIN, "again": True}  # taken before the taker stopped
    output = _opening(home, host, event, payload, via) if event in OPENING else ""
    try:
        spool(home, host, event, payload)
    except OSError as exc:  # the hook spools it itself
        log.error("%s %s: could not spool while warming up: %s", host, event, exc)
        return 500, {"error": f"could not spool the payload: {exc}"}
    return 200, {"output": json.loads(output) if output else None}


def _held(wait: float) -> bool:
    """Hold a hook that may wait `wait` seconds while the warm-up may end in them: whether
    the daemon is warm in time."""
    if _warm_by is not None and _warm_by - time.monotonic() > wait:
        return False
    return _warm.wait(max(0.0, wait - SPOOL_TIME))


def expected(home: Path) -> float:
    """Seconds a warm-up of this data dir is likely to take (the last one's)."""
    try:
        return float((home / WARM_UP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return FIRST_WARM_UP


def warmed(home: Path, seconds: float) -> None:
    """Keep how long this warm-up took, for the next one's guess."""
    try:
        (home / WARM_UP).write_text(f"{seconds:.3f}\n", encoding="utf-8")
    except OSError as exc:
        log.warning("could not keep the warm-up's time: %s", exc)


class Taker:
    """The child process that answers on the daemon's socket while the daemon warms up."""

    TICK = 0.05  # how often it looks whether it is told to stop, or the daemon is gone

    def __init__(self, home: Path, server: socketserver.BaseServer, close: tuple[int, ...]):
        """Fork it; `close`: descriptors the child must not keep (the store's lock: a
        child left behind must not hold the store)."""
        warm_by, parent = time.monotonic() + expected(home), os.getpid()
        self.pid: int | None = os.fork()
        if self.pid == 0:
            _take_hooks(server, close, warm_by, parent)

    def stop(self) -> None:
        """Stop it (once): the hooks it is answering are answered first."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        os.kill(pid, signal.SIGTERM)  # not reaped yet: it is there
        os.waitpid(pid, 0)


def _take_hooks(
    server: socketserver.BaseServer, close: tuple[int, ...], warm_by: float, parent: int
) -> None:
    """The child's life: answer until told to stop (the daemon is warm), or until the
    daemon (`parent`, taken before the fork: it may be gone before the child runs) is gone."""
    global _warm_by
    code, _warm_by = 0, warm_by
    try:
        for fd in close:
            os.close(fd)
        signal.signal(signal.SIGTERM, lambda signum, frame: _warm.set())
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when to stop
        server.timeout = Taker.TICK
        while not _warm.is_set() and os.getppid() == parent:
            server.handle_request()
        server.server_close()  # the hooks in flight are answered first
    except BaseException:
        log.exception("taking hooks while warming up failed")
        code = 1
    finally:
        os._exit(code)


def prepare() -> None:
    """Load what taking a hook needs before the socket answers: the secret detection that
    cleans what is spooled (a tenth of a second, which the warm-up's imports would stretch
    for the first hooks)."""
    from mnemoweave.secrets import redact

    redact("warm up")


def _opening(home: Path, host: str, event: str, payload: Any, via: str | None) -> str:
    try:
        from mnemoweave.hosts.cold_start import answer as from_store

        return from_store(str(home), host, event, payload, via)
    except Exception:
        log.exception("%s %s: no answer from the store while warming up", host, event)
        return ""


def warm(engine: Any) -> None:
    """Load now what the first call would: store, models and index, jieba, the classifier,
    the secret detection."""
    from mnemoweave.model import Turn
    from mnemoweave.secrets import redact
    from mnemoweave.text import read_dictionary

    engine.retrieval_mode()  # opens the store, loads the models and their vector indexes
    read_dictionary()
    redact("warm up")
    engine.classify(Turn("warm-up", "user", "warm up 预热"))
    for source in ("memories", "turns"):  # an older data dir's vector index is split here
        engine.search("warm up 预热", k=1, source=source, touch=False)
    engine.weave("warm up 预热")  # the relevance gate's word statistics too
