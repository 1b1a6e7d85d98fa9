"""The write path: validate and clean, embed, write to SQLite, then to the vector index.

Everything is checked and embedded before the write transaction opens, so bad input
changes nothing and the write lock is held only for SQLite work. The vector index is
derived: it is updated after the commit, and `doctor --repair` / `reindex` mend any gap.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import Config
from .errors import InvalidInput
from .model import check_kind, check_role
from .store import audit
from .store import memories as memories_table
from .store import turns as turns_table
from .store.db import transaction
from .text import clean, fingerprint, normalise

if TYPE_CHECKING:
    import numpy as np

    from .embed.base import Embedder
    from .store.vectors import VectorIndex


@dataclass(frozen=True)
class Written:
    """The outcome of a write: new, merged, duplicate or skipped (with a reason)."""

    action: str
    id: str | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "id": self.id}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class MemoryDraft:
    kind: str
    title: str
    body: str
    tags: tuple[str, ...]
    project: str
    importance: int
    evidence: tuple[str, ...] = ()

    @property
    def index_text(self) -> str:
        return memories_table.index_text(self.title, self.body, self.tags)


@dataclass(frozen=True)
class TurnDraft:
    session: str
    role: str
    text: str
    ts: float
    host: str
    project: str
    key: str


def project_name(value: str | None) -> str:
    return " ".join((value or "").split())


def check_importance(value: int) -> int:
    if not 1 <= value <= 5:
        raise InvalidInput(f"importance must be between 1 and 5, got {value}")
    return value


def _title_from(body: str, limit: int = 60) -> str:
    first = body.strip().splitlines()[0].strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def draft_memory(
    text: str,
    *,
    kind: str,
    project: str | None,
    tags: Iterable[str],
    importance: int,
    title: str | None = None,
    evidence: Sequence[str] = (),
) -> MemoryDraft | None:
    """A checked, cleaned memory; None when only private content remains."""
    check_kind(kind)
    check_importance(importance)
    if not text or not text.strip():
        raise InvalidInput("nothing to remember: the text is empty")
    body = clean(text)
    if not body:
        return None
    return MemoryDraft(
        kind=kind,
        title=clean(title) if title else _title_from(body),
        body=body,
        tags=tuple(dict.fromkeys(t for t in (clean(tag) for tag in tags) if t)),
        project=project_name(project),
        importance=importance,
        evidence=tuple(evidence),
    )


def draft_turn(
    session: str,
    role: str,
    text: str,
    *,
    host: str = "",
    project: str | None = "",
    ts: float | None = None,
    key: str | None = None,
) -> TurnDraft | None:
    """A checked, cleaned turn; None when only private content remains."""
    check_role(role)
    if not session or not session.strip():
        raise InvalidInput("a turn needs a session id")
    if not text or not text.strip():
        raise InvalidInput("nothing to ingest: the text is empty")
    body = clean(text)
    if not body:
        return None
    ts = time.time() if ts is None else ts
    return TurnDraft(
        session.strip(),
        role,
        body,
        ts,
        (host or "").strip(),
        project_name(project),
        key or fingerprint(session.strip(), role, ts, body),
    )


class Writer:
    """Writes drafts into one store and its vector index."""

    def __init__(
        self,
        db: sqlite3.Connection,
        config: Config,
        embedder: Embedder | None,
        index: VectorIndex | None,
    ) -> None:
        self.db, self.config, self.embedder, self.index = db, config, embedder, index

    def _embed(self, texts: list[str]) -> np.ndarray | None:
        if self.embedder is None or self.index is None or not texts:
            return None
        return self.embedder.embed(texts)

    # --- memories ------------------------------------------------------------------------

    def memories(self, drafts: Sequence[MemoryDraft | None], actor: str) -> list[Written]:
        """Write memory drafts in one transaction; exact and near duplicates merge."""
        real = [d for d in drafts if d is not None]
        vectors = self._embed([d.index_text for d in real])
        results: list[Written] = []
        fresh: list[tuple[str, int]] = []  # (ref, row in `vectors`) of new memories
        with transaction(self.db) as db:
            position = 0
            for draft in drafts:
                if draft is None:
                    results.append(Written("skipped", reason="only private content"))
                    continue
                vector = None if vectors is None else vectors[position]
                written = self._memory(db, draft, vector, fresh, vectors, actor)
                if written.action == "new":
                    fresh.append((written.id, position))
                results.append(written)
                position += 1
        if vectors is not None and fresh:
            self.index.add(
                "memories",
                [ref for ref, _ in fresh],
                vectors[[pos for _, pos in fresh]],
                [real[pos].project for _, pos in fresh],
            )
        return results

    def _memory(
        self,
        db: sqlite3.Connection,
        draft: MemoryDraft,
        vector: np.ndarray | None,
        fresh: list[tuple[str, int]],
        vectors: np.ndarray | None,
        actor: str,
    ) -> Written:
        now = time.time()
        norm = normalise(draft.body)
        existing = memories_table.find_duplicate(db, norm, draft.project)
        how = "exact"
        if existing is None and vector is not None:
            existing = self._near_duplicate(db, draft, vector, fresh, vectors)
            how = "near"
        if existing is not None:
            ref = f"m_{existing['id']}"
            if how == "near" and self.config.dedup_action == "skip":
                return Written("duplicate", ref, reason="near-duplicate of an existing memory")
            memories_table.merge(db, existing, draft.tags, draft.importance, now)
            audit.record(
                db,
                "merge",
                ref,
                after={"tags": list(draft.tags), "how": how, "importance": draft.importance},
                actor=actor,
            )
            return Written("merged", ref, reason="" if how == "exact" else "near-duplicate")
        mid = memories_table.insert(
            db,
            kind=draft.kind,
            title=draft.title,
            body=draft.body,
            norm=norm,
            tags=draft.tags,
            project=draft.project,
            importance=draft.importance,
            now=now,
            evidence=draft.evidence,
        )
        ref = f"m_{mid}"
        audit.record(
            db,
            "remember",
            ref,
            actor=actor,
            after={"kind": draft.kind, "project": draft.project, "body": draft.body},
        )
        return Written("new", ref)

    def _near_duplicate(
        self,
        db: sqlite3.Connection,
        draft: MemoryDraft,
        vector: np.ndarray,
        fresh: list[tuple[str, int]],
        vectors: np.ndarray,
    ) -> sqlite3.Row | None:
        """The active memory of the same project and kind at or above the dedup cosine."""
        threshold = self.config.dedup_threshold
        candidates = [(ref, float(vectors[pos] @ vector)) for ref, pos in fresh]
        candidates += self.index.query("memories", vector, 5, [draft.project])
        for ref, cosine in sorted(candidates, key=lambda c: -c[1]):
            if cosine < threshold:
                break
            row = memories_table.get(db, int(ref[2:]))
            if (
                row is not None
                and row["status"] == "active"
                and row["project"] == draft.project
                and row["kind"] == draft.kind
            ):
                return row
        return None

    # --- turns ---------------------------------------------------------------------------

    def turns(self, drafts: Sequence[TurnDraft | None], actor: str = "") -> list[Written]:
        """Append turns in one transaction; a turn whose key is already stored is skipped."""
        results: list[Written] = []
        fresh: list[tuple[str, TurnDraft]] = []
        with transaction(self.db) as db:
            for draft in drafts:
                if draft is None:
                    results.append(Written("skipped", reason="only private content"))
                    continue
                existing = turns_table.by_key(db, draft.key)
                if existing is not None:
                    results.append(Written("duplicate", f"t_{existing['id']}"))
                    continue
                tid = turns_table.insert(
                    db,
                    session=draft.session,
                    role=draft.role,
                    text=draft.text,
                    ts=draft.ts,
                    host=draft.host,
                    project=draft.project,
                    key=draft.key,
                )
                ref = f"t_{tid}"
                audit.record(
                    db,
                    "ingest",
                    ref,
                    actor=actor or draft.host or "user",
                    after={"session": draft.session, "role": draft.role},
                )
                fresh.append((ref, draft))
                results.append(Written("new", ref))
        vectors = self._embed([draft.text for _, draft in fresh])
        if vectors is not None:
            self.index.add(
                "turns", [ref for ref, _ in fresh], vectors, [draft.project for _, draft in fresh]
            )
        return results
