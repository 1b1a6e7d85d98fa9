"""What the daemon does for the hosts, beyond the API: the hooks route, the spool of
payloads hooks could not deliver, and following Claude Code transcripts.

Hooks post `{"payload": ...}` to `/v1/hooks/{host}/{event}` and print the `output` they
get back. A hook that could not reach the daemon in time leaves its payload in `spool/`;
the daemon replays the spool (storing, not weaving) when it starts, right after a hook it
serves finds the spool non-empty (off the hook's own path: the follower's worker does it),
and every few seconds while it is quiet. A hook is answered as soon as its weave is ready:
its turns are stored after the answer is sent, by the same worker (or by the next request,
which first runs what is left), and what fails to store is spooled. Transcripts named by
payloads (only under `~/.claude/projects/`) are followed with watchdog: complete lines past
the last offset are ingested, offsets survive restarts (`transcripts.json`), and turn keys
match the hooks', so nothing is stored twice.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from pathlib import Path
from typing import Any

from .. import adapters
from ..adapters import claude_code
from ..errors import MnemoweaveError
from ..hook import spool
from ..store.damage import StoreDamaged
from .routes import Context, Route, add
from .schema import ANY, OBJECT, STR

log = logging.getLogger("mnemoweave.daemon")
SPOOL = "spool"
OFFSETS = "transcripts.json"
REJECTED = "rejected"  # spooled payloads the adapter refused, kept for a look
SPOOL_EVERY = 2.0  # seconds between looks at the spool when nothing else happens


# --- the spool --------------------------------------------------------------------------


def spooled(home: Path) -> bool:
    try:
        return any(n.endswith(".json") and n[0] != "." for n in os.listdir(home / SPOOL))
    except FileNotFoundError:
        return False


def replay_spool(engine: Any) -> int:
    """Store what hooks spooled, oldest first; returns how many payloads were replayed."""
    folder = engine.home / SPOOL
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and n[0] != ".")
    except FileNotFoundError:
        return 0
    for done, name in enumerate(names):
        path = folder / name
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            handled = adapters.respond(
                engine, record["host"], record["event"], record["payload"], answer=False
            )
            adapters.store(engine, handled)  # stored, not woven: nobody waits for an answer
        except StoreDamaged as exc:  # kept for when the store is mended
            log.error("the spool is kept: %s", exc)
            return done
        except (ValueError, KeyError, TypeError, MnemoweaveError) as exc:
            log.warning("spooled %s refused: %s", name, exc)
            (folder / REJECTED).mkdir(exist_ok=True)
            os.replace(path, folder / REJECTED / name)
            continue
        path.unlink()
    return len(names)


# --- following transcripts -----------------------------------------------------------------


class Transcripts:
    """Follows Claude Code transcripts: one worker ingests new complete lines per file (and
    looks at the spool when there is nothing else to do)."""

    def __init__(self, ctx: Context, user_home: Path | None = None) -> None:
        self.ctx = ctx
        self.user_home = user_home or Path.home()
        self.file = ctx.engine.home / OFFSETS
        self.offsets: dict[str, int] = self._load()
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.watched: set[str] = set()
        self.observer: Any = None
        self.worker = threading.Thread(target=self._work, name="transcripts", daemon=True)

    def _load(self) -> dict[str, int]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
        )

    def _save(self) -> None:
        temporary = self.file.with_name(f".{self.file.name}.tmp")
        temporary.write_text(json.dumps(self.offsets), encoding="utf-8")
        os.replace(temporary, self.file)

    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        follower = self

        class Changed(FileSystemEventHandler):
            def on_modified(self, event: Any) -> None:
                path = os.fsdecode(event.src_path)
                if path in follower.offsets:
                    follower.queue.put(path)

        self.handler = Changed()
        self.observer = Observer()
        self.observer.daemon = True
        self.observer.start()
        self.worker.start()
        for path in list(self.offsets):  # catch up with what was written while we were down
            self.follow(path)

    def stop(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.queue.put(None)
            self.worker.join(timeout=5)
            self.observer.join(timeout=5)

    def follow(self, path: str) -> None:
        """Follow a transcript a payload named (refused unless it is the user's own)."""
        if not claude_code.is_transcript(Path(path), self.user_home):
            return
        path = str(Path(path).resolve())
        self.offsets.setdefault(path, 0)
        folder = str(Path(path).parent)
        if self.observer is not None and folder not in self.watched:
            self.observer.schedule(self.handler, folder, recursive=False)
            self.watched.add(folder)
        self.queue.put(path)

    def _work(self) -> None:
        while True:
            try:
                path = self.queue.get(timeout=SPOOL_EVERY)
            except queue.Empty:
                path = ""  # quiet: a chance to store what hooks spooled meanwhile
            # "" means: look at the spool (queued by a hook, or after a quiet spell)
            if path is None:
                return
            try:
                if self.ctx.later:  # what answered hooks left to store
                    with self.ctx.lock:
                        self.ctx.settle()
                if path:
                    self.read(path)
                elif spooled(self.ctx.engine.home):
                    with self.ctx.lock:
                        replay_spool(self.ctx.engine)
            except Exception:  # a bad file must not stop the follower
                log.exception("following %s failed", path or "the spool")

    def read(self, path: str) -> int:
        """Ingest the complete lines past the offset; returns how many turns were new."""
        offset = self.offsets.get(path, 0)
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size < offset:
                    offset = 0  # the file was rewritten: keys make re-reading harmless
                handle.seek(offset)
                chunk = handle.read()
        except OSError:
            return 0
        complete = chunk[: chunk.rfind(b"\n") + 1]
        if not complete:
            return 0
        lines = complete.decode("utf-8", "replace").splitlines()
        turns = claude_code.transcript_turns(lines)
        with self.ctx.lock:
            new = sum(
                1 for turn in turns if (w := self.ctx.engine.handle(turn)) and w.action == "new"
            )
            self.offsets[path] = offset + len(complete)
            self._save()
        return new


# --- the hooks route ---------------------------------------------------------------------


class Hosts:
    """The daemon's host side: set up once per daemon, before it serves."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.transcripts = Transcripts(ctx)

    def start(self) -> None:
        with self.ctx.lock:
            replay_spool(self.ctx.engine)
        self.ctx.wake = lambda: self.transcripts.queue.put("")
        self.transcripts.start()

    def stop(self) -> None:
        self.transcripts.stop()
        with self.ctx.lock:  # nothing an answered hook left is lost
            self.ctx.settle()

    def hook(self, ctx: Context, host: str, event: str, payload: Any) -> dict[str, Any]:
        """Answer first; the event's turns are stored by the worker once the answer is out
        (or by the next request, whichever comes first)."""
        handled = adapters.respond(ctx.engine, host, event, payload)
        if handled.later:
            ctx.defer(lambda: self._store(host, event, payload, handled))
        where = payload.get("transcript_path") if isinstance(payload, dict) else None
        if host == claude_code.HOST and isinstance(where, str):
            self.transcripts.follow(where)
        if spooled(ctx.engine.home):
            self.transcripts.queue.put("")  # the worker stores it, after this answer is sent
        return {"output": handled.answer}

    def _store(self, host: str, event: str, payload: Any, handled: adapters.Handled) -> None:
        """Store what an answered hook left; what fails is spooled (cleaned, as a hook that
        could not reach the daemon spools it) and stored again later: keys keep it once."""
        try:
            adapters.store(self.ctx.engine, handled)
        except Exception as exc:
            log.error("%s %s: storing after the answer failed (%s); spooled", host, event, exc)
            spool(self.ctx.engine.home, host, event, payload)


HOSTS: Hosts | None = None
# the engine's registered hosts (adapters.hosts) are checked when the hook runs
HOST = STR | {"description": "A registered host: claude-code, opencode, dsh or a plugin's."}


def _hook(ctx: Context, host: str, event: str, payload: Any) -> dict[str, Any]:
    if HOSTS is None:
        raise MnemoweaveError("the daemon's host side is not started")
    return HOSTS.hook(ctx, host, event, payload)


add(
    Route(
        "POST",
        "/v1/hooks/{host}/{event}",
        _hook,
        "Run one host hook event on its payload; answers with the output the host reads.",
        {"host": HOST, "event": STR, "payload": ANY},
        ("host", "event", "payload"),
        returns=OBJECT,
        raw=True,
    )
)


def start(ctx: Context) -> Hosts:
    global HOSTS
    HOSTS = Hosts(ctx)
    HOSTS.start()
    return HOSTS
