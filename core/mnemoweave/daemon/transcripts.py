"""Following Claude Code transcripts: the files payloads name (only under
`~/.claude/projects/`) are watched with watchdog, complete lines past the last offset are
ingested, offsets survive restarts (`transcripts.json`), and turn keys match the hooks', so
nothing is stored twice. The follower's one worker also runs what answered hooks left to
store, and looks at the spool when there is nothing else to do."""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from pathlib import Path
from typing import Any

from mnemoweave.daemon.routes import Context
from mnemoweave.daemon.spool import replay_spool, spooled
from mnemoweave.hosts import claude_code

log = logging.getLogger("mnemoweave.daemon")
OFFSETS = "transcripts.json"
SPOOL_EVERY = 2.0  # seconds between looks at the spool when nothing else happens


class Transcripts:
    """Follows Claude Code transcripts: one worker ingests new complete lines per file (and
    looks at the spool when there is nothing else to do)."""

    def __init__(self, ctx: Context, user_home: Path | None = None) -> None:
        self.ctx = ctx
        self.user_home = user_home or Path.home()
        self.file = ctx.engine.home / OFFSETS
        self.offsets: dict[str, int] = self._load()
        self.prompts: dict[str, str] = {}  # path -> the id of the last prompt read in it
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.watched: set[str] = set()
        self.observer: Any = None
        self.graphed: tuple[int, int] | None = None  # the store's state the graph was read at
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
            self.read_graph()

    def read_graph(self) -> None:
        """Bring the knowledge graph up to what the store holds, a batch at a time under the
        engine lock, while nothing else waits for the worker; skipped when the store has
        not changed since."""
        from mnemoweave.graph import build
        from mnemoweave.store.db import state

        db = self.ctx.engine.db
        try:
            while self.queue.empty():
                with self.ctx.lock:
                    if state(db) == self.graphed:
                        return
                    if not next(build.steps(db), 0):
                        self.graphed = state(db)
        except Exception:
            log.exception("reading the knowledge graph failed")

    def read(self, path: str) -> int:
        """Ingest the complete lines past the offset; returns how many turns were new."""
        offset = self.offsets.get(path, 0)
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size < offset:
                    offset = 0  # the file was rewritten: keys make re-reading harmless
                if offset and path not in self.prompts:  # the prompt the next reply answers
                    self.prompts[path] = claude_code.last_prompt(handle.read(offset))
                handle.seek(offset)
                chunk = handle.read()
        except OSError:
            return 0
        complete = chunk[: chunk.rfind(b"\n") + 1]
        if not complete:
            return 0
        lines = complete.decode("utf-8", "replace").splitlines()
        prompt = self.prompts.get(path, "") if offset else ""
        turns = claude_code.transcript_turns(lines, prompt)
        self.prompts[path] = claude_code.last_prompt(complete, prompt)
        with self.ctx.lock:
            new = sum(
                1 for turn in turns if (w := self.ctx.engine.handle(turn)) and w.action == "new"
            )
            self.offsets[path] = offset + len(complete)
            self._save()
        return new
