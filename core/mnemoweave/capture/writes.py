"""The write path: validate and clean, embed, write to SQLite, then to the vector index.

Everything is checked before the write transaction opens, so bad input changes nothing;
memories are embedded before it too (their duplicates are judged by their vectors), turns
after it, so the write lock is held for SQLite work only. The vector index is derived: it
is updated after the commit, and the daemon, `doctor --repair` and `reindex` mend any gap.
"""

from __future__ import annotations

import inspect
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemoweave.capture import capsule
from mnemoweave.config import Config
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.graph import build as graph
from mnemoweave.model import (
    Classification,
    Memory,
    Turn,
    check_identifier,
    check_importance,
    check_kind,
    check_role,
    check_time,
    needle_tags,
)
from mnemoweave.scope import project_name
from mnemoweave.store import audit
from mnemoweave.store import memories as memories_table
from mnemoweave.store import sessions as sessions_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import transaction
from mnemoweave.text import bounded, clean, fingerprint, is_near_duplicate, normalise

if TYPE_CHECKING:
    import numpy as np

    from mnemoweave.recall.retrieve import DenseChannel

log = logging.getLogger("mnemoweave")


@dataclass(frozen=True)
class Written:
    """The outcome of a write: new, merged, duplicate or skipped (with a reason)."""

    action: str
    id: str | None = None
    reason: str = ""

    @property
    def ref(self) -> str:
        """The id written (every outcome but skipped has one)."""
        if self.id is None:
            raise ValueError(f"a {self.action} write has no id")
        return self.id

    def line(self) -> str:
        """One line: what was done to which id, and why (a clash and its command)."""
        return f"{self.action} {self.id}" + (f" ({self.reason})" if self.reason else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "id": self.id}
        if self.reason:
            out["reason"] = self.reason
        return out


PRIVATE = Written("skipped", reason="only private content")  # a draft with nothing left


@dataclass(frozen=True)
class MemoryDraft:
    kind: str
    title: str
    body: str
    tags: tuple[str, ...]
    project: str
    importance: int
    evidence: tuple[str, ...] = ()
    origin: str = "user"
    created: float | None = None  # an imported note's own times (None: now)
    updated: float | None = None

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

    def as_turn(self, **stored: Any) -> Turn:
        """The turn this draft announces; `stored` adds what storing gave it (id, seq, kind)."""
        return Turn(
            self.session, self.role, self.text, self.ts, self.host, self.project, self.key, **stored
        )


def _title_from(body: str, limit: int = 60) -> str:
    first = body.strip().splitlines()[0].strip()
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def draft_memory(
    text: str,
    *,
    importance: int,
    kind: str = "fact",
    project: str | None = "",
    tags: Iterable[str] = (),
    title: str | None = None,
    evidence: Sequence[str] = (),
    origin: str = "user",
    created: float | None = None,
    updated: float | None = None,
) -> MemoryDraft | None:
    """A checked, cleaned memory; None when only private content remains."""
    check_kind(kind)
    check_importance(importance)
    if not text or not text.strip():
        raise InvalidInput("nothing to remember: the text is empty")
    body = bounded(text)
    if not body:
        return None
    return MemoryDraft(
        kind=kind,
        title=bounded(title) if title else _title_from(body),
        body=body,
        tags=tuple(dict.fromkeys(t for t in (*(clean(t) for t in tags), *needle_tags(body)) if t)),
        project=check_identifier(project_name(project), "project"),
        importance=importance,
        evidence=tuple(evidence),
        origin=origin,
        created=created,
        updated=updated,
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
    ts = time.time() if ts is None else check_time(ts)
    if not session or not session.strip():
        raise InvalidInput("a turn needs a session id")
    if not text or not text.strip():
        raise InvalidInput("nothing to ingest: the text is empty")
    body = bounded(text)
    if not body:
        return None
    session = check_identifier(session.strip(), "session id")
    return TurnDraft(
        session,
        role,
        body,
        ts,
        check_identifier((host or "").strip(), "host"),
        check_identifier(project_name(project), "project"),
        check_identifier(key, "turn key", ":") if key else fingerprint(session, role, ts, body),
    )


def from_fields(make: Callable[..., Any], fields: Any, number: int) -> Any:
    """`make(**fields)` for one row of a bulk write, refusing a bad row by its number."""
    if not isinstance(fields, dict):
        raise InvalidInput(f"row {number}: expected an object of fields")
    try:
        return make(**fields)
    except TypeError as exc:  # an unknown or a missing field
        known = inspect.signature(make).parameters
        unknown = [name for name in fields if name not in known]
        if unknown:  # named with repr: a field name may hold any character, newlines too
            raise InvalidInput(f"row {number}: unknown field {unknown[0]!r}") from None
        message = str(exc).split("() ", 1)[-1]
        raise InvalidInput(f"row {number}: {message}") from None


def draft_of(turn: Turn, key: str | None = None) -> TurnDraft | None:
    """The draft of an announced or imported turn (`key` replaces the turn's own)."""
    return draft_turn(
        turn.session,
        turn.role,
        turn.text,
        host=turn.host,
        project=turn.project,
        ts=turn.ts,
        key=key or turn.key,
    )


MEMORY_ACTIONS = ("new", "merged", "edited", "trashed", "restored", "superseded", "purged")


def announce(
    pm: Any, db: sqlite3.Connection, written: Written, gone: Memory | None = None
) -> Written:
    """Tell the plugins (on_memory) what a committed write did to a memory, as it is stored
    now (`gone`: what a purge deleted); returns `written`. Other outcomes are not told."""
    ref = written.id or ""
    if pm is None or written.action not in MEMORY_ACTIONS or not ref.startswith("m_"):
        return written
    if pm.hook.on_memory.get_hookimpls():  # a bulk write fetches nothing nobody reads
        row = None if gone else memories_table.get(db, int(ref[2:]))
        memory = gone or (memories_table.from_row(row) if row is not None else None)
        if memory is not None:
            pm.hook.on_memory(memory=memory, action=written.action)
    return written


class Writer:
    """Writes drafts into one store and the vector index of each dense channel."""

    def __init__(
        self,
        db: sqlite3.Connection,
        config: Config,
        channels: Sequence[DenseChannel],
        queried: Mapping[tuple[Any, ...], np.ndarray] | None = None,
        pm: Any = None,
    ) -> None:
        self.db, self.config, self.channels = db, config, list(channels)
        self.queried = queried or {}  # (model, query) -> the vector a search computed
        self.pm = pm  # told of new and merged memories (on_memory), after the commit

    def _embed(self, texts: list[str]) -> list[np.ndarray | None]:
        """One array of vectors per channel (none without channels or texts). A text just
        searched for (a prompt, stored after its weave) is not embedded again by a model
        that embeds queries and passages alike. A remote model that fails gives None: the
        rows are stored without its vectors (logged), and the daemon embeds them later."""
        from mnemoweave.remote import RemoteError, fell_back

        if not texts:
            return []
        out: list[np.ndarray | None] = []
        for channel in self.channels:
            try:
                out.append(self._vectors(channel, texts))
            except RemoteError as exc:
                fell_back(f"embedding {len(texts)} texts with {channel.name}", exc)
                out.append(None)
        return out

    def _vectors(self, channel: DenseChannel, texts: list[str]) -> np.ndarray:
        known = self.queried if getattr(channel.embedder, "symmetric", False) else {}
        if not any((channel.name, text) in known for text in texts):
            return channel.embedder.embed(texts)
        import numpy as np

        missing = [text for text in texts if (channel.name, text) not in known]
        fresh = dict(zip(missing, channel.embedder.embed(missing), strict=True)) if missing else {}
        return np.stack([fresh[t] if t in fresh else known[(channel.name, t)] for t in texts])

    def _index(
        self,
        table: str,
        refs: list[str],
        projects: list[str],
        per_channel: Callable[[], list[np.ndarray | None]],
    ) -> None:
        """Add committed rows to each channel's vector index. They are stored whatever
        happens here, and reported so: a failure is logged, and the daemon (or `doctor
        --repair`) embeds them later."""
        try:
            for channel, vectors in zip(self.channels, per_channel(), strict=True):
                if vectors is not None:
                    channel.index.add(table, refs, vectors, projects)
        except Exception:
            log.exception("%d %s stored but not yet in the vector index", len(refs), table)

    # --- memories ------------------------------------------------------------------------

    def memories(
        self,
        drafts: Sequence[MemoryDraft | None],
        actor: str,
        then: Callable[[sqlite3.Connection, list[Written]], None] | None = None,
    ) -> list[Written]:
        """Write memory drafts in one transaction; exact and near duplicates merge. `then`
        runs inside that transaction with the outcomes (what must commit with them)."""
        real = [d for d in drafts if d is not None]
        per_channel = self._embed([d.index_text for d in real])
        vectors = per_channel[0] if per_channel else None  # the main model judges duplicates
        results: list[Written] = []
        fresh: list[tuple[str, int]] = []  # (ref, row in `vectors`) of new memories
        with transaction(self.db) as db:
            position = 0
            for draft in drafts:
                if draft is None:
                    results.append(PRIVATE)
                    continue
                vector = None if vectors is None else vectors[position]
                written = self._memory(db, draft, vector, fresh, vectors, actor)
                if written.action == "new":
                    fresh.append((written.ref, position))
                results.append(written)
                position += 1
            if then is not None:
                then(db, results)
        if per_channel and fresh:
            positions = [pos for _, pos in fresh]
            self._index(
                "memories",
                [ref for ref, _ in fresh],
                [real[pos].project for pos in positions],
                lambda: [None if v is None else v[positions] for v in per_channel],
            )
        for written in results:
            announce(self.pm, self.db, written)
        return results

    def rewrite(self, ref: str, draft: MemoryDraft, actor: str) -> Written:
        """Replace an active memory's text, title and kind in place (a person's edit): the
        same id, its full-text and vector entries renewed, the old text kept in the audit."""
        mid = int(ref[2:])
        per_channel = self._embed([draft.index_text])
        with transaction(self.db) as db:
            row = memories_table.get(db, mid)
            if row is None:
                raise NotFound(f"no memory with id {ref}")
            if row["status"] != "active":
                raise InvalidInput(f"{ref} is {row['status']}: restore it before editing")
            before = {name: row[name] for name in ("kind", "title", "body")}
            after = {"kind": draft.kind, "title": draft.title, "body": draft.body}
            if before == after:
                return Written("unchanged", ref)
            now = time.time()
            memories_table.rewrite(db, mid, norm=normalise(draft.body), now=now, **after)
            graph.read(db, "memories", mid, f"{draft.title}\n{draft.body}", now)
            sessions_table.edited(db, ref)
            audit.record(db, "edit", ref, before, after, actor)
        if per_channel:
            self._index("memories", [ref], [row["project"]], lambda: per_channel)
        return announce(self.pm, self.db, Written("edited", ref))

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
        if existing is None and vector is not None and vectors is not None:
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
            origin=draft.origin,
            created=draft.created,
            updated=draft.updated,
        )
        graph.read(db, "memories", mid, f"{draft.title}\n{draft.body}", now)
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
        candidates = []
        if fresh:  # memories written earlier in this batch are not in the index yet
            cosines = vectors[[pos for _, pos in fresh]] @ vector
            candidates = [
                (fresh[i][0], float(cosines[i])) for i in (cosines >= threshold).nonzero()[0]
            ]
        candidates += self.channels[0].index.query("memories", vector, 10, [draft.project])
        for ref, cosine in sorted(candidates, key=lambda c: -c[1]):
            if cosine < threshold:
                break
            row = memories_table.get(db, int(ref[2:]))
            if (
                row is not None
                and row["status"] == "active"
                and row["project"] == draft.project
                and row["kind"] == draft.kind
                and is_near_duplicate(row["body"], draft.body, cosine, threshold)
            ):
                return row
        return None

    # --- turns ---------------------------------------------------------------------------

    def turns(
        self,
        drafts: Sequence[TurnDraft | None],
        actor: str = "",
        classify: Callable[[TurnDraft], Classification] | None = None,
    ) -> tuple[list[Written], list[Turn]]:
        """Append turns in one transaction; a turn whose key is already stored is skipped.

        With `classify`, each new turn gets its kind and the session capsule rolls forward
        (cards come later, from distill).
        Returns the outcomes and the turns stored.
        """
        results: list[Written] = []
        stored: list[Turn] = []
        keys = {d.key for d in drafts if d is not None}
        known = {k: row for k in keys if (row := turns_table.by_key(self.db, k)) is not None}
        if len(known) == len(keys):  # nothing new: no write transaction
            return [
                Written("duplicate", f"t_{known[d.key]['id']}") if d else PRIVATE for d in drafts
            ], []
        with transaction(self.db) as db:
            for draft in drafts:
                if draft is None:
                    results.append(PRIVATE)
                    continue
                existing = turns_table.by_key(db, draft.key)
                if existing is not None:
                    results.append(Written("duplicate", f"t_{existing['id']}"))
                    continue
                kind = classify(draft) if classify else None
                turn = self._turn(db, draft, kind, actor)
                stored.append(turn)
                results.append(Written("new", turn.id))
        if self.channels and stored:
            self._index(
                "turns",
                [turn.ref for turn in stored],
                [turn.project for turn in stored],
                lambda: self._embed([turn.text for turn in stored]),
            )
        return results, stored

    def _turn(
        self, db: sqlite3.Connection, draft: TurnDraft, kind: Classification | None, actor: str
    ) -> Turn:
        tid, seq = turns_table.insert(
            db,
            session=draft.session,
            role=draft.role,
            text=draft.text,
            ts=draft.ts,
            host=draft.host,
            project=draft.project,
            key=draft.key,
            kind=kind.kind if kind else None,
            kind_conf=kind.confidence if kind else None,
        )
        if draft.role != "tool":  # what a tool printed is evidence, not what we talk about
            graph.read(db, "turns", tid, draft.text, draft.ts)
        turn = draft.as_turn(
            id=f"t_{tid}",
            seq=seq,
            kind=kind.kind if kind else None,
            kind_conf=kind.confidence if kind else None,
        )
        audit.record(
            db,
            "ingest",
            f"t_{tid}",
            actor=actor or draft.host or "user",
            after={"session": draft.session, "role": draft.role},
        )
        if kind is None:
            return turn
        recap = capsule.update(capsule.load(sessions_table.capsule(db, draft.session)), turn)
        sessions_table.set_capsule(db, draft.session, capsule.dump(recap))
        return turn
