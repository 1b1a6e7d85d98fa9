"""Engine: the one facade the CLI, the daemon and tests use."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import transfer
from .config import Config, data_dir, load_config
from .errors import InvalidInput, NotFound
from .model import Hit, Memory, Turn, check_kind, parse_id
from .retrieve import MODES, Retriever
from .store import audit, fts
from .store import memories as memories_table
from .store import turns as turns_table
from .store.db import DB_NAME, checkpoint, connect, transaction
from .writes import (
    Writer,
    Written,
    check_importance,
    draft_memory,
    draft_turn,
    project_name,
)

SOURCES = ("memories", "turns", "all")
log = logging.getLogger("mnemoweave")

__all__ = ["Engine", "Written"]


def _project_filter(project: str | None) -> list[str] | None:
    """None means every project; a name means that project plus global ('')."""
    if project is None:
        return None
    name = project_name(project)
    return [name, ""] if name else [""]


class Engine:
    """Owns one data dir: its store, its vector index, config and caches."""

    def __init__(self, home: Path | None = None, config: Config | None = None) -> None:
        self.home = Path(home) if home else data_dir()
        self.config = config or load_config(self.home)
        self._db: sqlite3.Connection | None = None
        self._embedder: Any = None
        self._embedder_loaded = False
        self._index: Any = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def db_path(self) -> Path:
        return self.home / DB_NAME

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = connect(self.db_path)
        return self._db

    @property
    def embedder(self) -> Any:
        """The configured embedding model, or None (lexical-only) when it is not built."""
        if not self._embedder_loaded:
            self._embedder_loaded = True
            if self.config.embedder != "none":
                from .embed import load_embedder

                self._embedder = load_embedder(self.config.embedder)
                if self._embedder is None:
                    log.warning(
                        "model %s is not built: lexical-only search (run `mnemoweave model build`)",
                        self.config.embedder,
                    )
        return self._embedder

    @property
    def index(self) -> Any:
        """The vector index of the configured embedder (None in lexical-only mode)."""
        if self._index is None and self.embedder is not None:
            from .store.vectors import VectorIndex

            self._index = VectorIndex(self.home / "chroma", self.embedder.name)
        return self._index

    def retrieval_mode(self) -> str:
        if self.embedder is None:
            why = "disabled" if self.config.embedder == "none" else "model not built"
            return f"lexical-only ({why}: {self.config.embedder})"
        return f"hybrid (bm25 + {self.embedder.name})"

    def use_embedder(self, embedder: Any) -> None:
        """Use this embedder instead of the configured one (tests, benchmarks)."""
        self._embedder, self._embedder_loaded, self._index = embedder, True, None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _writer(self) -> Writer:
        return Writer(self.db, self.config, self.embedder, self.index)

    # --- memories -------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        project: str | None = "",
        tags: Sequence[str] = (),
        importance: int | None = None,
        title: str | None = None,
        evidence: Sequence[str] = (),
        actor: str = "user",
    ) -> Written:
        """Store a memory; an exact or near duplicate in the same scope is merged."""
        importance = self.config.default_importance if importance is None else importance
        draft = draft_memory(
            text,
            kind=kind,
            project=project,
            tags=tags,
            importance=importance,
            title=title,
            evidence=evidence,
        )
        return self._writer().memories([draft], actor)[0]

    def get(self, ref: str) -> Memory | Turn:
        table, rowid = parse_id(ref)
        if table == "memory":
            row = memories_table.get(self.db, rowid)
            if row is not None:
                return memories_table.from_row(row)
        elif table == "turn":
            row = turns_table.get(self.db, rowid)
            if row is not None:
                return turns_table.from_row(row)
        raise NotFound(f"no {table} with id {ref}")

    def _memory_row(self, db: sqlite3.Connection, ref: str) -> sqlite3.Row:
        table, rowid = parse_id(ref)
        if table != "memory":
            raise InvalidInput(
                f"{ref} is a {table}; only memories (m_N) can be forgotten or restored"
            )
        row = memories_table.get(db, rowid)
        if row is None:
            raise NotFound(f"no memory with id {ref}")
        return row

    def list(
        self,
        n: int = 20,
        *,
        kind: str | None = None,
        project: str | None = None,
        trashed: bool = False,
    ) -> list[Memory]:
        if n < 1:
            raise InvalidInput(f"-n must be at least 1, got {n}")
        if kind is not None:
            check_kind(kind)
        status = "trashed" if trashed else "active"
        rows = memories_table.listing(self.db, n, kind, _project_filter(project), status)
        return [memories_table.from_row(row) for row in rows]

    def forget(self, ref: str, actor: str = "user") -> Written:
        """Move a memory to the trash (restorable until purged)."""
        with transaction(self.db) as db:
            row = self._memory_row(db, ref)
            if row["status"] == "trashed":
                return Written("unchanged", ref, reason="already in the trash")
            memories_table.set_status(db, row["id"], "trashed", time.time())
            audit.record(db, "forget", ref, {"status": row["status"]}, {"status": "trashed"}, actor)
        return Written("trashed", ref)

    def restore(self, ref: str, actor: str = "user") -> Written:
        """Take a memory out of the trash."""
        with transaction(self.db) as db:
            row = self._memory_row(db, ref)
            if row["status"] != "trashed":
                return Written(
                    "unchanged", ref, reason=f"not in the trash (status {row['status']})"
                )
            status = "superseded" if row["superseded_by"] is not None else "active"
            memories_table.set_status(db, row["id"], status, None)
            audit.record(db, "restore", ref, {"status": "trashed"}, {"status": status}, actor)
        return Written("restored", ref)

    def purge(self, ref: str, actor: str = "user") -> Written:
        """Delete a memory or a turn for good: row, indexes, and its content in the audit log."""
        table, rowid = parse_id(ref)
        tables = {"memory": ("memories", memories_table), "turn": ("turns", turns_table)}
        if table not in tables:
            raise InvalidInput(f"{ref} is a {table}; only memories and turns can be purged")
        name, module = tables[table]
        with transaction(self.db) as db:
            if module.get(db, rowid) is None:
                raise NotFound(f"no {table} with id {ref}")
            module.delete(db, rowid)
            fts.compact(db, name)
            audit.scrub(db, ref)
            audit.record(db, "purge", ref, actor=actor)
        checkpoint(self.db)
        if self.index is not None:
            self.index.delete(name, [ref])
        return Written("purged", ref)

    def purge_expired(self, now: float | None = None) -> list[str]:
        """Purge memories that have been in the trash longer than `trash_days`."""
        cutoff = (now or time.time()) - self.config.trash_days * 86400
        refs = [f"m_{mid}" for mid in memories_table.expired_trash(self.db, cutoff)]
        for ref in refs:
            self.purge(ref, actor="trash")
        return refs

    # --- turns ----------------------------------------------------------------------------

    def ingest(
        self,
        session: str,
        role: str,
        text: str,
        *,
        host: str = "",
        project: str | None = "",
        ts: float | None = None,
        key: str | None = None,
    ) -> Written:
        """Append a raw turn; a turn already stored under the same key is not stored twice."""
        draft = draft_turn(session, role, text, host=host, project=project, ts=ts, key=key)
        return self._writer().turns([draft])[0]

    def ingest_many(self, turns: Iterable[dict[str, Any]]) -> list[Written]:
        """Append many turns in one transaction (bulk import, benchmarks).

        Each dict has the keyword arguments of `ingest`: session, role, text and optionally
        host, project, ts, key. All are checked before anything is written.
        """
        drafts = [
            draft_turn(
                t.get("session", ""),
                t.get("role", ""),
                t.get("text", ""),
                host=t.get("host", ""),
                project=t.get("project"),
                ts=t.get("ts"),
                key=t.get("key"),
            )
            for t in turns
        ]
        return self._writer().turns(drafts)

    # --- search ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        project: str | None = None,
        kind: str | None = None,
        source: str = "memories",
        mode: str = "hybrid",
        touch: bool = True,
    ) -> list[Hit]:
        """Hybrid search (BM25 + dense, fused and weighted), best first.

        `mode` lexical or dense uses one channel; without a built model it is lexical.
        `touch` counts the recall of returned memories (access_count, last_access).
        """
        k = self.config.search_k if k is None else k
        if k < 1:
            raise InvalidInput(f"-k must be at least 1, got {k}")
        if kind is not None:
            check_kind(kind)
        if source not in SOURCES:
            raise InvalidInput(f"unknown source {source!r}; use one of: {', '.join(SOURCES)}")
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; use one of: {', '.join(MODES)}")
        if not query or not query.strip():
            raise InvalidInput("the search query is empty")
        retriever = Retriever(self.db, self.config, self.embedder, self.index)
        scope = _project_filter(project)
        hits: list[Hit] = []
        if source in ("memories", "all"):
            hits += retriever.search("memories", query, k, scope, kind, mode)
        if source in ("turns", "all") and kind is None:
            hits += retriever.search("turns", query, k, scope, None, mode)
        hits.sort(key=lambda hit: -hit.score)
        hits = hits[:k]
        if touch:
            self._touch([hit.id for hit in hits if hit.id.startswith("m_")])
        return hits

    def _touch(self, refs: list[str]) -> None:
        if refs:
            with transaction(self.db) as db:
                memories_table.touch(db, [int(ref[2:]) for ref in refs], time.time())

    # --- files and index ------------------------------------------------------------------

    def import_path(self, path: Path) -> dict[str, int]:
        """Import turns (.jsonl) and memories (.md) from a file or directory, all or nothing."""
        records = transfer.collect(Path(path))
        turns, memories = [], []
        for index, record in enumerate(records):
            if isinstance(record, transfer.TurnRecord):
                key = record.key or (
                    None if record.ts is not None else transfer.line_key(record, index)
                )
                turns.append(
                    draft_turn(
                        record.session,
                        record.role,
                        record.text,
                        host=record.host,
                        project=record.project,
                        ts=record.ts,
                        key=key,
                    )
                )
            else:
                importance = record.importance or self.config.default_importance
                check_importance(importance)
                memories.append(
                    draft_memory(
                        record.body,
                        kind=record.kind,
                        project=record.project,
                        tags=record.tags,
                        importance=importance,
                        title=record.title or None,
                        evidence=record.evidence,
                    )
                )
        counts = {"turns": 0, "memories": 0, "merged": 0, "duplicate": 0, "skipped": 0}
        writer = self._writer()
        for bucket, results in (
            ("turns", writer.turns(turns, actor="import")),
            ("memories", writer.memories(memories, actor="import")),
        ):
            for result in results:
                counts[bucket if result.action == "new" else result.action] += 1
        return counts

    def export(self, directory: Path) -> list[Path]:
        """Write active memories as Markdown (one file per project) and turns as JSONL."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput(f"cannot create {directory}: {exc}") from None
        by_project: dict[str, list[Memory]] = {}
        for row in self.db.execute("SELECT * FROM memories WHERE status = 'active' ORDER BY id"):
            memory = memories_table.from_row(row)
            by_project.setdefault(memory.project, []).append(memory)
        written = []
        for project, memories in sorted(by_project.items()):
            path = directory / transfer.project_filename(project)
            path.write_text(transfer.render_markdown(project, memories), encoding="utf-8")
            written.append(path)
        rows = self.db.execute("SELECT * FROM turns ORDER BY session_id, seq").fetchall()
        if rows:
            path = directory / "turns.jsonl"
            lines = [transfer.turn_line(turns_table.from_row(r)) for r in rows]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(path)
        return written

    def reindex(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, int]:
        """Rebuild the vector index (and the full-text index) from SQLite."""
        from .indexing import reindex

        return reindex(self, progress)

    # --- health ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        from .health import status

        return status(self)

    def doctor(self, repair: bool = False) -> list[Any]:
        from .health import doctor

        return doctor(self, repair=repair)
