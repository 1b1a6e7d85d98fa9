"""Engine: the one facade the CLI, the daemon and tests use."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import transfer
from .config import Config, data_dir, load_config
from .errors import InvalidInput, NotFound
from .model import Hit, Memory, Turn, check_kind, check_role, parse_id
from .store import audit, fts
from .store import memories as memories_table
from .store import turns as turns_table
from .store.db import DB_NAME, checkpoint, connect, transaction
from .text import clean, fingerprint, normalise

SOURCES = ("memories", "turns", "all")


@dataclass(frozen=True)
class Written:
    """The outcome of a write: `action` is new, merged, duplicate or skipped."""

    action: str
    id: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "id": self.id}
        if self.reason:
            out["reason"] = self.reason
        return out


def _title_from(body: str, limit: int = 60) -> str:
    first = body.strip().splitlines()[0].strip() if body.strip() else ""
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in (clean(tag) for tag in tags) if t))


def _check_importance(value: int) -> int:
    if not 1 <= value <= 5:
        raise InvalidInput(f"importance must be between 1 and 5, got {value}")
    return value


def _project(value: str | None) -> str:
    return " ".join((value or "").split())


class Engine:
    """Owns one data dir: its store, config and caches."""

    def __init__(self, home: Path | None = None, config: Config | None = None) -> None:
        self.home = Path(home) if home else data_dir()
        self.config = config or load_config(self.home)
        self._db: sqlite3.Connection | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def db_path(self) -> Path:
        return self.home / DB_NAME

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = connect(self.db_path)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        """Store a memory; an exact duplicate (normalised) in the same scope is merged."""
        check_kind(kind)
        importance = _check_importance(
            self.config.default_importance if importance is None else importance
        )
        if not text or not text.strip():
            raise InvalidInput("nothing to remember: the text is empty")
        with transaction(self.db) as db:
            return self._remember(
                db, text, kind, _project(project), tags, importance, title, evidence, actor
            )

    def _remember(
        self,
        db: sqlite3.Connection,
        text: str,
        kind: str,
        project: str,
        tags: Sequence[str],
        importance: int,
        title: str | None,
        evidence: Sequence[str],
        actor: str,
    ) -> Written:
        body = clean(text)
        if not body:
            return Written("skipped", reason="only private content")
        tags = _clean_tags(tags)
        now = time.time()
        norm = normalise(body)
        existing = memories_table.find_duplicate(db, norm, project)
        if existing is not None:
            memories_table.merge(db, existing, tags, importance, now)
            ref = f"m_{existing['id']}"
            audit.record(
                db, "merge", ref, after={"tags": list(tags), "importance": importance}, actor=actor
            )
            return Written("merged", ref)
        mid = memories_table.insert(
            db,
            kind=kind,
            title=clean(title) if title else _title_from(body),
            body=body,
            norm=norm,
            tags=tags,
            project=project,
            importance=importance,
            now=now,
            evidence=evidence,
        )
        ref = f"m_{mid}"
        audit.record(
            db, "remember", ref, after={"kind": kind, "project": project, "body": body}, actor=actor
        )
        return Written("new", ref)

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
        """Delete a memory or a turn for good, and scrub its content from the audit log."""
        table, rowid = parse_id(ref)
        with transaction(self.db) as db:
            if table == "memory" and memories_table.get(db, rowid) is not None:
                memories_table.delete(db, rowid)
                fts.compact(db, "memories")
            elif table == "turn" and turns_table.get(db, rowid) is not None:
                turns_table.delete(db, rowid)
                fts.compact(db, "turns")
            else:
                raise NotFound(f"no {table} with id {ref}")
            audit.scrub(db, ref)
            audit.record(db, "purge", ref, actor=actor)
        checkpoint(self.db)
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
        self._check_turn(session, role, text)
        with transaction(self.db) as db:
            return self._ingest(db, session, role, text, host, _project(project), ts, key)

    @staticmethod
    def _check_turn(session: str, role: str, text: str) -> None:
        check_role(role)
        if not session or not session.strip():
            raise InvalidInput("a turn needs a session id")
        if not text or not text.strip():
            raise InvalidInput("nothing to ingest: the text is empty")

    def _ingest(
        self,
        db: sqlite3.Connection,
        session: str,
        role: str,
        text: str,
        host: str,
        project: str,
        ts: float | None,
        key: str | None,
    ) -> Written:
        body = clean(text)
        if not body:
            return Written("skipped", reason="only private content")
        ts = time.time() if ts is None else ts
        key = key or fingerprint(session, role, ts, body)
        existing = turns_table.by_key(db, key)
        if existing is not None:
            return Written("duplicate", f"t_{existing['id']}")
        tid = turns_table.insert(
            db,
            session=session.strip(),
            role=role,
            text=body,
            ts=ts,
            host=host.strip(),
            project=project,
            key=key,
        )
        ref = f"t_{tid}"
        audit.record(
            db, "ingest", ref, after={"session": session, "role": role}, actor=host or "user"
        )
        return Written("new", ref)

    # --- search ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        project: str | None = None,
        kind: str | None = None,
        source: str = "memories",
    ) -> list[Hit]:
        """Lexical search (BM25 over jieba tokens), best first."""
        k = self.config.search_k if k is None else k
        if k < 1:
            raise InvalidInput(f"-k must be at least 1, got {k}")
        if kind is not None:
            check_kind(kind)
        if source not in SOURCES:
            raise InvalidInput(f"unknown source {source!r}; use one of: {', '.join(SOURCES)}")
        if not query or not query.strip():
            raise InvalidInput("the search query is empty")
        expression = fts.match_expression(query)
        if expression is None:
            return []
        scope = _project_filter(project)
        hits: list[Hit] = []
        if source in ("memories", "all"):
            for row, score in memories_table.search(self.db, expression, k, scope, kind):
                hits.append(
                    Hit(
                        f"m_{row['id']}",
                        row["kind"],
                        row["body"],
                        score,
                        row["project"],
                        row["created"],
                        {"title": row["title"]},
                    )
                )
        if source in ("turns", "all") and kind is None:
            for row, score in turns_table.search(self.db, expression, k, scope):
                hits.append(
                    Hit(
                        f"t_{row['id']}",
                        "turn",
                        row["text"],
                        score,
                        row["project"],
                        row["ts"],
                        {"session": row["session_id"], "role": row["role"]},
                    )
                )
        hits.sort(key=lambda hit: -hit.score)
        return hits[:k]

    # --- files ----------------------------------------------------------------------------

    def import_path(self, path: Path) -> dict[str, int]:
        """Import turns (.jsonl) and memories (.md) from a file or directory, all or nothing."""
        records = transfer.collect(Path(path))
        counts = {"turns": 0, "memories": 0, "merged": 0, "duplicate": 0, "skipped": 0}
        for record in records:
            if isinstance(record, transfer.TurnRecord):
                self._check_turn(record.session, record.role, record.text)
            elif record.importance is not None:
                _check_importance(record.importance)
        with transaction(self.db) as db:
            for index, record in enumerate(records):
                if isinstance(record, transfer.TurnRecord):
                    key = record.key or (
                        None
                        if record.ts is not None
                        else fingerprint(record.session, record.role, index, record.text)
                    )
                    result = self._ingest(
                        db,
                        record.session,
                        record.role,
                        record.text,
                        record.host,
                        _project(record.project),
                        record.ts,
                        key,
                    )
                    bucket = "turns"
                else:
                    importance = record.importance or self.config.default_importance
                    result = self._remember(
                        db,
                        record.body,
                        record.kind,
                        _project(record.project),
                        record.tags,
                        importance,
                        record.title or None,
                        record.evidence,
                        "import",
                    )
                    bucket = "memories"
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
            lines = [transfer.turn_line(turns_table.from_row(r), r["key"]) for r in rows]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(path)
        return written

    # --- health ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        from .health import status

        return status(self)

    def doctor(self, repair: bool = False) -> list[Any]:
        from .health import doctor

        return doctor(self, repair=repair)


def _project_filter(project: str | None) -> str | None:
    """None means every project; a name means that project plus global ('')."""
    return None if project is None else _project(project)
