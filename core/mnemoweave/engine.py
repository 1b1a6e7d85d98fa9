"""Engine: the one facade the CLI, the daemon and tests use."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemoweave.capture.writes import (
    MemoryDraft,
    TurnDraft,
    Writer,
    Written,
    draft_memory,
    draft_of,
    draft_turn,
    from_fields,
)
from mnemoweave.config import Config, data_dir, load_config
from mnemoweave.delegation import Delegated, later
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.model import (
    DECISIONS,
    MEMORY_STATUSES,
    MODES,
    SOURCES,
    Card,
    Classification,
    Hit,
    Memory,
    SessionEvent,
    Turn,
    check_kind,
    parse_id,
)
from mnemoweave.recall.corrections import newest_first
from mnemoweave.recall.retrieve import (
    DenseChannel,
    Retriever,
    best_of,
    channels_for,
    configured_channels,
    describe,
    query_vector,
)
from mnemoweave.scope import project_name, visible
from mnemoweave.store import cards as cards_table
from mnemoweave.store import damage
from mnemoweave.store import memories as memories_table
from mnemoweave.store import sessions as sessions_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import DB_NAME, connect, transaction
from mnemoweave.text import query_part

if TYPE_CHECKING:
    from mnemoweave.capture import import_export as _import_export
    from mnemoweave.graph import views as _graph
    from mnemoweave.learn import review as _review
    from mnemoweave.learn import skill_queue as _skill_queue
    from mnemoweave.learn import skills as _skills
    from mnemoweave.plugins import Plugins
    from mnemoweave.recall import threads as _threads
    from mnemoweave.recall import timeline as _timeline
    from mnemoweave.recall.weave import Weave
    from mnemoweave.upkeep import consolidate as _consolidate
    from mnemoweave.upkeep import health as _health
    from mnemoweave.upkeep import hygiene as _hygiene
    from mnemoweave.upkeep import indexing as _indexing
    from mnemoweave.upkeep import projects as _projects
    from mnemoweave.upkeep import trash as _trash
else:  # the modules of the delegated operations, imported on first use
    (
        _import_export,
        _graph,
        _review,
        _skill_queue,
        _skills,
        _threads,
        _timeline,
        _consolidate,
        _health,
        _hygiene,
        _indexing,
        _projects,
        _trash,
    ) = later(
        "mnemoweave.capture.import_export",
        "mnemoweave.graph.views",
        "mnemoweave.learn.review",
        "mnemoweave.learn.skill_queue",
        "mnemoweave.learn.skills",
        "mnemoweave.recall.threads",
        "mnemoweave.recall.timeline",
        "mnemoweave.upkeep.consolidate",
        "mnemoweave.upkeep.health",
        "mnemoweave.upkeep.hygiene",
        "mnemoweave.upkeep.indexing",
        "mnemoweave.upkeep.projects",
        "mnemoweave.upkeep.trash",
    )

RESETS = ("compact", "clear")  # session start sources after which the host's context is new
MAX_K = 1000  # hits one search returns at most (each channel looks at a multiple of it)
log = logging.getLogger("mnemoweave")

__all__ = ["Engine", "Written"]


class Engine:
    """Owns one data dir: its store, its vector index, config and caches."""

    def __init__(self, home: Path | None = None, config: Config | None = None) -> None:
        self.home = Path(home) if home else data_dir()
        self.config = config or load_config(self.home)
        self._db: sqlite3.Connection | None = None
        self._channels: list[DenseChannel] | None = None
        self._pm: Plugins | None = None
        self._classifier: Callable[..., Classification] | None = None
        self._vectors: dict[tuple[Any, ...], Any] = {}  # the last query's embeddings, neighbours
        # where writes a hook's answer does not wait for go (deferring()); None: done at once
        self.defer: Callable[[Callable[[], None]], None] | None = None
        # models whose vector index is being filled (the daemon's mend): model -> progress
        self.catching_up: dict[str, dict[str, int]] = {}
        # True while the daemon runs what hooks left for after their answers: no remote
        # model is asked then (daemon/remote_work.py does it, without the lock)
        self.settling = False
        self.postponed: set[str] = set()  # sessions a remote distiller is still to read

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
    def channels(self) -> list[DenseChannel]:
        """The dense retrieval channels: the configured models that are built (maybe none)."""
        if self._channels is None:
            self._channels = configured_channels(self.home, self.config, self.pm)
        return self._channels

    @property
    def embedder(self) -> Any:
        """The main embedding model, or None (lexical-only) when it is not built."""
        return self.channels[0].embedder if self.channels else None

    @property
    def index(self) -> Any:
        """The main model's vector index (None in lexical-only mode)."""
        return self.channels[0].index if self.channels else None

    def use_embedder(self, *embedders: Any) -> None:
        """Use these embedders (None entries are skipped) instead of the configured ones."""
        self._close_indexes()
        self._channels = channels_for(self.home, self.pm, embedders)

    def searching(self, query: str) -> list[DenseChannel]:
        """The dense channels a search for `query` uses now: not a model whose index is
        still being filled, nor a remote one while a host's hook waits for the answer
        (deferring) or when it fails to embed the query (logged; lexical for this call)."""
        from mnemoweave.remote import RemoteError, fell_back

        usable = []
        for channel in self.channels:
            if channel.name in self.catching_up or (channel.remote and self.defer is not None):
                continue
            if channel.remote:
                try:
                    self.query_vector(channel, query)
                except RemoteError as exc:
                    fell_back(f"embedding the query with {channel.name}", exc)
                    continue
            usable.append(channel)
        return usable

    def retrieval_mode(self) -> str:
        return describe([channel.name for channel in self.channels], self.config)

    def close(self) -> None:
        """Close the store and let go of the vector index (the models stay loaded)."""
        if self._db is not None:
            self._db.close()
            self._db = None
        self._close_indexes()

    def _close_indexes(self) -> None:
        for channel in self._channels or []:
            channel.index.close()

    @contextmanager
    def deferring(self, sink: Callable[[Callable[[], None]], None]) -> Iterator[None]:
        """Within the block, the writes an answer need not wait for (what a recorded weave
        notes) go to `sink`, for the caller to run once it answered."""
        self.defer = sink
        try:
            yield
        finally:
            self.defer = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write_memories(
        self,
        drafts: Sequence[MemoryDraft | None],
        actor: str = "user",
        then: Callable[[sqlite3.Connection, list[Written]], None] | None = None,
    ) -> list[Written]:
        """Write checked memory drafts in one transaction (duplicates merge); `then` runs in
        that transaction with the outcomes (what must commit with them). Past
        `max_memories`, the least valuable others go to the trash (upkeep/capacity.py)."""
        from mnemoweave.upkeep import capacity

        evicted: list[str] = []

        def within(db: sqlite3.Connection, results: list[Written]) -> None:
            if then is not None:
                then(db, results)
            kept = {w.ref for w in results if w.action == "new"}
            if kept and self.config.max_memories > 0:
                evicted.extend(capacity.evict(db, self.config, kept))

        written = self._writer().memories(drafts, actor, within)
        capacity.announce_evicted(self, evicted)
        return written

    def rewrite_memory(self, ref: str, draft: MemoryDraft, actor: str = "user") -> Written:
        """Replace an active memory's kind, title and text in place (see review.edit)."""
        return self._writer().rewrite(ref, draft, actor)

    def write_turns(self, drafts: Sequence[TurnDraft | None], actor: str = "") -> list[Written]:
        """Write checked turn drafts in one transaction, classified (a known key: skipped);
        on_turn hears of each new one."""
        classify = self.classify
        results, stored = self._writer().turns(drafts, actor, lambda d: classify(d.as_turn()))
        for turn in stored:
            self.pm.hook.on_turn(turn=turn, engine=self)
        return results

    def _writer(self) -> Writer:
        channels = self.channels
        if self.settling:  # a remote model embeds these rows later (daemon/remote_work.py)
            channels = [c for c in channels if not c.remote]
        return Writer(self.db, self.config, channels, self._vectors, self.pm)

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
        from mnemoweave.learn.review import held_reason, rivals  # a new memory that clashes says so

        found = rivals(self, draft.body, draft.project) if draft is not None else []
        firm = [int(ref[2:]) for ref, verdict in found if verdict.firm]

        def corrects(db: sqlite3.Connection, results: list[Written]) -> None:
            """In the write's transaction: it ranks above what it firmly corrects, until
            one supersedes the other (recall/corrections.py)."""
            if firm and results[0].action == "new":
                memories_table.corrected(db, firm, int(results[0].ref[2:]))

        written = self.write_memories([draft], actor, corrects)[0]
        if draft is None or written.action != "new" or not found:
            return written
        return Written("new", written.id, held_reason(written.ref, found))

    def remember_many(self, rows: Iterable[dict[str, Any]], actor: str = "user") -> list[Written]:
        """Store many memories in one transaction (import, benchmarks); all checked first.

        Each dict has the keyword arguments of `remember` (text, kind, project, tags,
        importance, title, evidence).
        """
        default = {"importance": self.config.default_importance}
        given = [
            m | default if isinstance(m, dict) and m.get("importance") is None else m for m in rows
        ]
        drafts = [from_fields(draft_memory, m, n) for n, m in enumerate(given, 1)]
        return self.write_memories(drafts, actor)

    def get(self, ref: str) -> Memory | Turn | Card:
        table, rowid = parse_id(ref)
        if table == "memory":
            row = memories_table.get(self.db, rowid)
            if row is not None:
                return memories_table.from_row(row)
        elif table == "turn":
            row = turns_table.get(self.db, rowid)
            if row is not None:
                return turns_table.from_row(row)
        elif (row := cards_table.get(self.db, rowid)) is not None:
            return cards_table.from_row(row)
        raise NotFound(f"no {table} with id {ref}")

    def list_memories(
        self,
        n: int = 20,
        *,
        kind: str | None = None,
        project: str | None = None,
        status: str = "active",
        offset: int = 0,
    ) -> list[Memory]:
        """Memories newest first: `status` active, superseded or trashed; `offset` pages."""
        if n < 1:
            raise InvalidInput(f"-n must be at least 1, got {n}")
        if offset < 0:
            raise InvalidInput(f"the offset must be 0 or more, got {offset}")
        if status not in MEMORY_STATUSES:
            known = ", ".join(MEMORY_STATUSES)
            raise InvalidInput(f"unknown status {status!r}; use one of: {known}")
        if kind is not None:
            check_kind(kind)
        rows = memories_table.listing(self.db, n, kind, visible(project), status, offset)
        return [memories_table.from_row(row) for row in rows]

    forget = Delegated(lambda: _trash.forget)  # into the trash, restorable until purged
    restore = Delegated(lambda: _trash.restore)
    purge = Delegated(lambda: _trash.purge)  # memories and turns, for good
    purge_expired = Delegated(lambda: _trash.purge_expired)

    # --- events from hosts ------------------------------------------------------------------

    @property
    def pm(self) -> Plugins:
        """This engine's plugin manager (built on first use)."""
        if self._pm is None:
            from mnemoweave.plugins import make_plugin_manager

            self._pm = make_plugin_manager()
        return self._pm

    def classify(self, turn: Turn) -> Classification:
        """A plugin's answer (classify_turn), else the configured registered classifier."""
        answer: Classification | None = self.pm.hook.classify_turn(turn=turn)
        if answer is not None:
            return answer
        if self._classifier is None:
            from mnemoweave.plugins import chosen

            self._classifier = chosen(self.pm, "register_classifiers", self.config.classifier)
        return self._classifier(turn=turn)  # keywords, as register_classifiers says

    def handle(self, event: Turn | SessionEvent) -> Written | None:
        """The one entry for every host: store and classify a turn, or record a session event."""
        if isinstance(event, Turn):
            return self.write_turns([draft_of(event)])[0]
        now = event.ts or time.time()
        with transaction(self.db) as db:
            sessions_table.touch(
                db, event.session, event.host, event.project, now, ended=event.kind == "end"
            )
            if event.kind == "pre_compact" or event.source in RESETS:
                sessions_table.compacted(db, event.session, now)
        hook = {
            "start": self.pm.hook.on_session_start,
            "idle": self.pm.hook.on_session_idle,
            "pre_compact": self.pm.hook.on_pre_compact,
            "end": self.pm.hook.on_session_end,
        }[event.kind]
        hook(event=event, engine=self)
        return None

    def weave(
        self,
        query: str,
        *,
        session: str | None = None,
        project: str | None = None,
        budget: int | None = None,
        record: bool = False,
    ) -> Weave:
        """Scene, knowledge and nudge for the next model turn, within `budget` tokens, all
        from one scope: `project`'s memories plus global ones ('' or None: global only).

        With a session, lines that session already received (since its last compaction)
        are left out; `record` (what a host's hook does) notes what goes in this time and
        counts the recall of the memories woven."""
        from mnemoweave.recall.weave import weave

        budget = self.config.weave_budget if budget is None else budget
        if budget < 1:
            raise InvalidInput(f"the budget must be at least 1 token, got {budget}")
        return weave(self, query_part(query), session, project_name(project), budget, record)

    def capsule(self, session: str) -> dict[str, Any]:
        """The session's rolling recap (goal, latest decisions, open threads)."""
        from mnemoweave.capture import capsule

        return capsule.load(sessions_table.capsule(self.db, session))

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
        return self.write_turns([draft])[0]

    def ingest_many(self, turns: Iterable[dict[str, Any]]) -> list[Written]:
        """Append many turns in one transaction (bulk import, benchmarks).

        Each dict has the keyword arguments of `ingest`: session, role, text and optionally
        host, project, ts, key. All are checked before anything is written.
        """
        return self.write_turns([from_fields(draft_turn, t, n) for n, t in enumerate(turns, 1)])

    # --- search ---------------------------------------------------------------------------

    def query_vector(self, channel: DenseChannel, query: str) -> Any:
        """The channel's embedding of a query as search embeds it (its query_part), made once
        for the latest query (texts outside the index are weighed against it)."""
        return query_vector(self._vectors, channel, query_part(query))

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
        exclude_session: str | None = None,
        by_meaning: int = 0,
        expand: bool = False,
    ) -> list[Hit]:
        """Hybrid search (BM25 + dense, fused and weighted), best first.

        `mode` lexical or dense uses one channel; without a built model it is lexical.
        `touch` counts the recall of returned memories (access_count, last_access).
        `exclude_session` leaves that session's turns out. `by_meaning` adds, after the `k`
        best, up to that many more that the dense channels alone rank best (hybrid mode).
        `expand` adds, after them, the memories one hop away in the knowledge graph (those
        naming the nearest neighbours of the entities the query names), up to `k`.
        """
        k = self.config.search_k if k is None else k
        if not 1 <= k <= MAX_K:
            raise InvalidInput(f"-k must be between 1 and {MAX_K}, got {k}")
        if not 0 <= by_meaning <= MAX_K:
            raise InvalidInput(f"by_meaning must be between 0 and {MAX_K}, got {by_meaning}")
        if kind is not None:
            check_kind(kind)
        if source not in SOURCES:
            raise InvalidInput(f"unknown source {source!r}; use one of: {', '.join(SOURCES)}")
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; use one of: {', '.join(MODES)}")
        if not query or not query.strip():
            raise InvalidInput("the search query is empty")
        query = query_part(query)
        channels = [] if mode == "lexical" else self.searching(query)  # lexical loads no model
        retriever = Retriever(self.db, self.config, channels, self._vectors)
        scope = visible(project)
        hits: list[Hit] = []
        if source in ("memories", "all"):
            hits += retriever.search("memories", query, k, scope, kind, mode, None, by_meaning)
        if source in ("turns", "all") and kind is None:
            hits += retriever.search(
                "turns", query, k, scope, None, mode, exclude_session, by_meaning
            )
        if source not in ("memories", "turns"):  # what plugins hold (team memory: "team")
            found = self.pm.hook.search_hits(
                engine=self, source=source, query=query, k=k, scope=scope, kind=kind, mode=mode
            )
            hits += [hit for contributed in found for hit in contributed or []]
        hits = newest_first(self.db, best_of(hits, k, by_meaning if mode == "hybrid" else 0))
        if expand and source in ("memories", "all"):
            hits += self._expanded(query, hits, k, scope, kind)
        if touch:
            self._touch([hit.id for hit in hits if hit.id.startswith("m_")])
        return hits

    def _expanded(
        self, query: str, hits: list[Hit], k: int, scope: list[str] | None, kind: str | None
    ) -> list[Hit]:
        """The memories one hop away in the graph, scored under the last hit."""
        from mnemoweave.graph.recall import expansion

        seeds = [int(hit.id[2:]) for hit in hits if hit.id.startswith("m_")]
        found = expansion(self.db, query, seeds, scope, k)
        rows = {row["id"]: row for row in memories_table.ranked(self.db, [f[0] for f in found])}
        low = min((hit.score for hit in hits), default=1.0) / 2
        out = []
        for rank, (mid, origin, neighbour) in enumerate(found, start=1):
            row = rows.get(mid)
            if row is None or (kind is not None and row["kind"] != kind):
                continue
            explain = {"expanded": {"from": origin, "neighbour": neighbour}}
            extra = {
                "title": row["title"],
                "evidence": json.loads(row["evidence"]),
                "explain": explain,
            }
            out.append(
                Hit(
                    f"m_{mid}",
                    row["kind"],
                    row["body"],
                    low / rank,
                    row["project"],
                    row["created"],
                    extra,
                )
            )
        return out

    def _touch(self, refs: list[str]) -> None:
        if refs and damage.reason(self.db_path) is None:  # a damaged store is read, not written
            with transaction(self.db) as db:
                memories_table.touch(db, [int(ref[2:]) for ref in refs], time.time())

    # --- review (see review.py) ------------------------------------------------------------

    def pending(self, project: str | None = None, limit: int = 50) -> list[Any]:
        """Cards awaiting review (a project's and global ones, or all)."""
        return cards_table.pending(self.db, visible(project), limit)

    def review(self, ref: str, decision: str, **options: Any) -> Written:
        """accept (kind, summary, title) or reject (why) a pending card."""
        from mnemoweave.learn import review

        if decision not in DECISIONS:
            raise InvalidInput(f"unknown decision {decision!r}; use accept or reject")
        written: Written = getattr(review, decision)(self, ref, **options)
        self.pm.hook.on_card(card=self.get(ref))  # the card as decided, after the commit
        return written

    def distill(
        self,
        *,
        session: str | None = None,
        since: float | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[Card]:
        """Propose cards from the turns not yet distilled in the window (see distill.py)."""
        from mnemoweave.learn.distill import run

        if offset < 0 or (limit is not None and limit < 1):
            raise InvalidInput(f"bad window: offset {offset} (>= 0), limit {limit} (>= 1)")
        return run(self, session=session, since=since, offset=offset, limit=limit)

    edit = Delegated(lambda: _review.edit)  # a person's rewrite of a memory, in place
    supersede = Delegated(lambda: _review.supersede)  # new replaces old (kept for audit)
    feedback = Delegated(lambda: _review.feedback)
    evidence = Delegated(lambda: _review.evidence)
    rehydrate = Delegated(lambda: _review.rehydrate)

    # --- operations kept in their own modules ------------------------------------------------

    unanswered = Delegated(lambda: _threads.unanswered)
    teach_skill = Delegated(lambda: _skills.teach)
    check_skill = Delegated(lambda: _skills.check)
    load_skill = Delegated(lambda: _skills.load)
    skills = Delegated(lambda: _skills.listing)
    skill_queue = Delegated(lambda: _skill_queue.entries)
    close_queued_skill = Delegated(lambda: _skill_queue.close)
    projects = Delegated(lambda: _projects.listing)
    rename_project = Delegated(lambda: _projects.rename)
    hygiene = Delegated(lambda: _hygiene.report)
    consolidate_propose = Delegated(lambda: _consolidate.propose)
    consolidate_apply = Delegated(lambda: _consolidate.apply)
    consolidate_rollback = Delegated(lambda: _consolidate.rollback)
    sessions = Delegated(lambda: _timeline.sessions)
    injections = Delegated(lambda: _timeline.injections)
    entities = Delegated(lambda: _graph.entities)
    entity = Delegated(lambda: _graph.entity)
    merge_entities = Delegated(lambda: _graph.merge_entities)

    # --- files and index ------------------------------------------------------------------

    def import_path(self, path: Path, split: bool = False) -> dict[str, Any]:
        """Import turns (.jsonl) and memories (.md) from a file or directory: what was read
        is written all or nothing; the counts, and `problems` (files of a directory left
        out and why, fields ignored)."""
        from mnemoweave.capture.file_formats import collect

        found = collect(Path(path), split)
        return {**self.import_records(found.records), "problems": found.problems}

    import_records = Delegated(
        lambda: _import_export.import_records
    )  # what file_formats.collect read
    import_text = Delegated(lambda: _import_export.import_text)  # one uploaded file's text

    def export(self, directory: Path, per_memory: bool = False) -> list[Path]:
        """Write active memories as Markdown (one file per project, or one note per memory)
        and turns as JSONL."""
        from mnemoweave.capture.import_export import write_files

        return write_files(Path(directory), self.export_files(per_memory))

    export_files = Delegated(lambda: _import_export.export_files)  # file name -> content
    reindex = Delegated(lambda: _indexing.reindex)  # the vector and full-text indexes, from SQLite
    status = Delegated(lambda: _health.status)
    doctor = Delegated(lambda: _health.doctor)
