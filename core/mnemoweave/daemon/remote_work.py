"""The daemon's remote work, done without the engine lock.

A host's hook needs the engine lock for its answer, so a remote model is never asked while
the lock is held on a hook's behalf: the weave leaves remote channels out, and what hooks
leave for after their answers (embedding their turns, distilling a session that paused)
skips the remote model (Engine.settling). This worker does that part: it reads under the
lock what a remote model has still to see, asks the model with the lock released, and
stores the answer under the lock again.

- The `openai` embedder: the rows its vector index lacks, a batch at a time. While it lacks
  more than CATCH_UP_SHARE of the store (the embedder was just switched), search leaves it
  out, lexical meanwhile, and status shows the progress (engine.catching_up).
- The `llm` distiller: each session postponed while hooks waited (engine.postponed).

A remote failure is logged once and tried again after a pause; nothing is lost.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mnemoweave.daemon.routes import Context
from mnemoweave.remote import RemoteError, fell_back

log = logging.getLogger("mnemoweave.daemon")
EVERY = 2.0  # seconds between looks when there was nothing to do
AFTER_FAILURE = 30.0  # seconds before a remote model that failed is asked again
BATCH = 64  # rows embedded per request
CATCH_UP_SHARE = 0.1  # share of rows a model may lack and still serve search


class RemoteWork:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.queue: list[tuple[Any, str, list[str]]] = []  # (channel, table, refs) to embed

    def run(self, stopped: threading.Event) -> None:
        """Work until `stopped` is set: a step whenever there is one, else a pause."""
        while not stopped.is_set():
            try:
                pause = 0.0 if self.step() else EVERY
            except RemoteError as exc:
                fell_back("the daemon's remote work", exc)
                pause = AFTER_FAILURE
            except Exception:
                log.exception("the daemon's remote work failed")
                pause = AFTER_FAILURE
            stopped.wait(pause)

    def step(self) -> bool:
        """One batch embedded or one session distilled; False when there was nothing."""
        return self._embed() or self._distill()

    def _embed(self) -> bool:
        from mnemoweave.upkeep.indexing import TABLES, text_of

        engine = self.ctx.engine
        with self.ctx.lock:
            if not any(c.remote for c in engine.channels):
                return False
            if not self.queue:
                self._plan()
            if not self.queue:
                return False
            channel, table, refs = self.queue.pop(0)
            rows = list(TABLES[table].to_embed(engine.db, [int(ref[2:]) for ref in refs]))
            texts = [text_of(table, row) for row in rows]
        vectors = channel.embedder.embed(texts) if rows else None  # the lock is free
        with self.ctx.lock:
            if vectors is not None:
                channel.index.add(table, [f"{table[0]}_{r['id']}" for r in rows], vectors,
                                  [row["project"] for row in rows])  # fmt: skip
            if not self.queue:
                self._plan()  # the progress, or that it is done
        return True

    def _plan(self) -> None:
        """What the remote channels lack, in batches (under the lock); the progress."""
        from mnemoweave.upkeep.indexing import TABLES, gaps

        engine = self.ctx.engine
        lacking: dict[str, int] = {}
        rows: dict[str, int] = {}
        for channel, table, missing, extra in gaps(engine):
            if not channel.remote:
                continue
            channel.index.delete(table, sorted(extra))
            refs = sorted(missing, key=lambda ref: int(ref[2:]))
            self.queue += [
                (channel, table, refs[i : i + BATCH]) for i in range(0, len(refs), BATCH)
            ]
            lacking[channel.name] = lacking.get(channel.name, 0) + len(refs)
            rows[channel.name] = rows.get(channel.name, 0) + TABLES[table].count(engine.db)
        for name, total in rows.items():
            if lacking[name] > CATCH_UP_SHARE * total:
                engine.catching_up[name] = {"done": total - lacking[name], "total": total}
            else:
                engine.catching_up.pop(name, None)

    def _distill(self) -> bool:
        from mnemoweave.default_plugins.remote_models import ask
        from mnemoweave.learn.distill import extractive, settle, walks

        engine = self.ctx.engine
        with self.ctx.lock:
            if not engine.postponed:
                return False
            session = engine.postponed.pop()
            found = walks(engine, session=session)
            config = engine.config
        for walked in found:
            try:  # the lock is free while the model reads
                cards = ask(walked, config.llm_url, config.llm_model, config.llm_api_key)
            except RemoteError as exc:
                fell_back("distilling with the llm distiller", exc)
                with self.ctx.lock:
                    cards = extractive(walked, engine)
            with self.ctx.lock:
                settle(engine, walked, cards)
        return True


def start(ctx: Context) -> tuple[threading.Thread, threading.Event]:
    """The worker's thread, started; set the event to stop it."""
    stopped = threading.Event()
    thread = threading.Thread(target=RemoteWork(ctx).run, args=(stopped,), name="remote")
    thread.start()
    return thread, stopped
