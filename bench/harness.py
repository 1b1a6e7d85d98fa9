"""What every benchmark shares: throw-away engine stores, the BM25 store, timing, progress.

Both kinds of store take the same documents and answer `search` with dataset keys, so a
benchmark's evaluation loop runs unchanged over the engine and over the baseline.
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, Protocol

import numpy as np

from bm25 import BM25Ranker
from datasets import Doc, Store
from metrics import percentiles, unique
from mnemoweave import Engine
from mnemoweave.text import tokens

CHUNK = 1000  # memories written per transaction


def progress(message: str) -> None:
    """One progress line on stderr (stdout carries only the report)."""
    print(message, file=sys.stderr, flush=True)


@dataclass
class Clock:
    """Ingest seconds and per-search latencies of one system over one benchmark run.

    `retrieval` is what the engine says about its retrieval (e.g. lexical-only because no
    model is built), so that a silent fallback shows in the report.
    """

    ingest_seconds: float = 0.0
    search_ms: list[float] = field(default_factory=list)
    retrieval: str | None = None

    def report(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "latency_ms": percentiles(self.search_ms),
            "seconds": {
                "ingest": round(self.ingest_seconds, 2),
                "search": round(sum(self.search_ms) / 1000, 2),
            },
        }
        if self.retrieval is not None:
            report["retrieval"] = self.retrieval
        return report


class SearchStore(Protocol):
    """A store of documents that answers queries with dataset keys, best first."""

    def search(self, query: str, k: int, project: str | None = None) -> list[str]: ...

    def knowledge_empty(self, query: str, project: str | None) -> bool | None: ...

    def close(self) -> None: ...


Opener = Callable[[Sequence[Doc], Clock], SearchStore]


def search_options(mode: str) -> dict[str, Any]:
    """Keyword arguments for every `Engine.search` call of a run.

    `mode` "default" leaves the engine's own default; any other mode needs an engine whose
    `search` takes a `mode` parameter. Where `search` can count recalls (`touch`), it is
    told not to, so that one query never changes the ranking of the next.
    """
    parameters = inspect.signature(Engine.search).parameters
    options: dict[str, Any] = {"touch": False} if "touch" in parameters else {}
    if mode == "default":
        return options
    if "mode" not in parameters:
        raise SystemExit(f"--mode {mode}: this Engine.search takes no mode parameter")
    return options | {"mode": mode}


def warm_up() -> None:
    """Load jieba's dictionary now, so that no timed ingest or search pays for it."""
    tokens("预热")


class EngineStore:
    """A temporary engine data dir holding the documents as turns or as memories."""

    def __init__(
        self,
        docs: Sequence[Doc],
        clock: Clock,
        source: str,
        options: dict[str, Any],
        embedders: Sequence[Any],
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="store-", dir=os.environ["MNEMOWEAVE_HOME"])
        self.engine = Engine(home=Path(self._dir.name))
        self.engine.use_embedder(*embedders)
        clock.retrieval = self.engine.retrieval_mode()
        self.source = source
        self.options = options
        self.clock = clock
        started = perf_counter()
        written = self._write(docs)
        clock.ingest_seconds += perf_counter() - started
        # Engine id -> dataset keys: merged duplicates make one id stand for several keys.
        self.keys: dict[str, list[str]] = {}
        for doc, result in zip(docs, written, strict=True):
            if result.id is not None and doc.key not in self.keys.setdefault(result.id, []):
                self.keys[result.id].append(doc.key)

    def _write(self, docs: Sequence[Doc]) -> list[Any]:
        if self.source == "turns":
            return self.engine.ingest_many(
                {
                    "session": doc.session,
                    "role": "user",
                    "text": doc.text,
                    "ts": doc.ts,
                    "host": "bench",
                    "project": doc.project,
                    "key": f"bench:{position}",
                }
                for position, doc in enumerate(docs)
            )
        rows = [
            {"text": doc.text, "kind": doc.kind, "project": doc.project, "tags": doc.tags}
            for doc in docs
        ]
        written = []  # in chunks: within one batch, duplicates are checked against the batch
        for start in range(0, len(rows), CHUNK):
            written += self.engine.remember_many(rows[start : start + CHUNK])
        return written

    def search(self, query: str, k: int, project: str | None = None) -> list[str]:
        """The dataset keys of the engine's top k hits; only the engine call is timed."""
        started = perf_counter()
        hits = self.engine.search(query, k=k, project=project, source=self.source, **self.options)
        self.clock.search_ms.append((perf_counter() - started) * 1000)
        return unique(key for hit in hits for key in self.keys.get(hit.id, ()))

    def knowledge_empty(self, query: str, project: str | None) -> bool | None:
        """Whether the weave's knowledge tier for this query is empty; None without a weave.

        Assumes `Engine.weave(query, project=...)` returning tiers with a `knowledge` entry
        (attribute or key); check this when the weave lands.
        """
        weave = getattr(self.engine, "weave", None)
        if weave is None:
            return None
        woven = weave(query, project=project)
        tier = woven["knowledge"] if isinstance(woven, dict) else woven.knowledge
        return not tier

    def close(self) -> None:
        self.engine.close()
        self._dir.cleanup()


def load_embedders(names: str, models: Path) -> list[Any]:
    """The models every store of the run shares, loaded once ("none": lexical only).

    `names` is comma-separated: the main model, then the optional second one.
    """
    if names == "none":
        return []
    from mnemoweave.embed import registered

    specs = registered()
    loaded = []
    for name in names.split(","):
        if not specs[name].is_built(models / name):
            raise SystemExit(
                f"model {name} is not built in {models}: run `mnemoweave model build "
                f"{name}` (or pass --models DIR / --embedder none)"
            )
        loaded.append(specs[name].load(models / name))
    return loaded


def engine_opener(source: str, args: Any) -> Opener:
    """Opens engine stores holding documents as `source` ("turns" or "memories")."""
    options = search_options(args.mode)
    embedders = load_embedders(args.embedder, args.models)
    return lambda docs, clock: EngineStore(docs, clock, source, options, embedders)


class BaselineStore:
    """Plain BM25 over the same documents; `project` keeps that project plus global ('')."""

    def __init__(self, docs: Sequence[Doc], clock: Clock) -> None:
        started = perf_counter()
        self.docs = list(docs)
        self.ranker = BM25Ranker([doc.text for doc in self.docs])
        self.projects = np.array([doc.project for doc in self.docs], dtype=object)
        clock.ingest_seconds += perf_counter() - started
        self.clock = clock

    def search(self, query: str, k: int, project: str | None = None) -> list[str]:
        started = perf_counter()
        allowed = None if project is None else np.isin(self.projects, [project, ""])
        ranked = self.ranker.rank(query, allowed)
        self.clock.search_ms.append((perf_counter() - started) * 1000)
        return unique(self.docs[index].key for index in ranked)[:k]

    def knowledge_empty(self, query: str, project: str | None) -> bool | None:
        return None

    def close(self) -> None:
        """Nothing to release."""


def run_stores(
    stores: Sequence[Store],
    opener: Opener,
    label: str,
    ask: Callable[[SearchStore, Store], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], Clock]:
    """Open each dataset store in turn, let `ask` query it, and collect its result rows."""
    clock = Clock()
    rows: list[dict[str, Any]] = []
    for number, store in enumerate(stores, 1):
        progress(f"{label} {number}/{len(stores)} {store.name}: {len(store.docs)} docs")
        opened = opener(store.docs, clock)
        try:
            rows.extend(ask(opened, store))
        finally:
            opened.close()
    return rows, clock
