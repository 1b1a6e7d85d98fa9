"""Hybrid retrieval: BM25 over jieba tokens + one or two dense channels, fused, weighted.

Fusion is gated by language. Each channel's scores are scaled within its own candidate
list, from the channel's floor (BM25 0, a model's `min_cosine`) to its best candidate. A
candidate in the query's language scores
    weight_lexical * L + weight_dense * D1 + weight_second * D2,
a candidate in another language (where BM25 cannot match, and same-language look-alikes
must not drown it) scores
    cross_dense * D1 + cross_second * D2,
where D1 is the main embedder and D2 the optional second one (a model strong across
languages beside one strong within them). Turns then inherit part of the score of the turn
before them (answers follow their questions). Memories are weighted by decay (strength =
0.5^(age/stability), stability = the half-life of the memory's scope, project or global,
* (1 + log2(1 + access_count)); preferences and importance-5 memories do not decay),
importance and feedback weight; turns are raw evidence and do not decay.
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemoweave.config import Config
from mnemoweave.model import Hit
from mnemoweave.store import fts
from mnemoweave.store import memories as memories_table
from mnemoweave.store import turns as turns_table
from mnemoweave.text import language

if TYPE_CHECKING:
    from mnemoweave.embed.base import Embedder
    from mnemoweave.store.vectors import VectorIndex

log = logging.getLogger("mnemoweave")
TABLES = {"memories": memories_table, "turns": turns_table}  # the store modules searched


@dataclass(frozen=True)
class DenseChannel:
    """One embedding model and the vectors it made of this store."""

    embedder: Embedder
    index: VectorIndex
    relevant_cosine: float = 1.0  # this model's cosine above which a text is on topic

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def remote(self) -> bool:
        """Whether its model answers over the network (remote/): never asked on a hook's
        behalf, and filled by the daemon's remote work."""
        return bool(getattr(self.embedder, "remote", False))


def channels_for(home: Path, pm: Any, embedders: Sequence[Any]) -> list[DenseChannel]:
    """A channel (with its vector index under `home`) per embedder; None entries skipped."""
    from mnemoweave.embed import registered
    from mnemoweave.store.vectors import VectorIndex

    specs = registered(pm)
    return [
        DenseChannel(
            e,
            VectorIndex(home / "chroma", e.name),
            specs[e.name].relevant_cosine if e.name in specs else 1.0,
        )
        for e in embedders
        if e is not None
    ]


def configured_channels(home: Path, config: Config, pm: Any) -> list[DenseChannel]:
    """The configured models that are built; a missing one is logged and left out."""
    from mnemoweave.embed import load_embedder, models_dir

    embedders = []
    for name in config.models():
        embedder = load_embedder(name, pm, home)
        if embedder is None:
            where = models_dir()
            log.warning("model %s is not built in %s: run `mnemoweave model build`", name, where)
        embedders.append(embedder)
    return channels_for(home, pm, embedders)


def describe(models: Sequence[str], config: Config) -> str:
    """The retrieval mode in words, with these models, for status, doctor and search --explain."""
    if not models:
        why = "disabled" if config.embedder == "none" else "model not built"
        return f"lexical-only ({why}: {config.embedder})"
    return "hybrid (bm25 + " + " + ".join(models) + ")"


def built_mode(home: Path, config: Config, pm: Any) -> str:
    """The retrieval mode the configured models that are built give, none of them loaded
    (loading one costs about a second: `status` does without)."""
    from mnemoweave.embed import built

    return describe([name for name in config.models() if built(name, pm, home)], config)


@dataclass
class Candidate:
    ref: str
    row: sqlite3.Row
    lexical: float | None = None  # raw BM25, higher is better
    lexical_rank: int | None = None
    dense: dict[str, float] = field(default_factory=dict)  # channel -> cosine
    dense_rank: dict[str, int] = field(default_factory=dict)
    entity: float | None = None  # the share of the query's entities it names
    entity_rank: int | None = None
    named: frozenset[str] = frozenset()  # the query's terms that named the entities it names
    parts: dict[str, float] = field(default_factory=dict)


def _normalise(values: dict[str, float], floor: float) -> dict[str, float]:
    """One channel's scores scaled to [0, 1]: the best gets 1, the channel's own floor (what
    matching nothing scores) 0, so the weakest candidate found still counts for something."""
    if not values:
        return {}
    high = max(values.values())
    if high - floor < 1e-9:
        return dict.fromkeys(values, 1.0)
    return {ref: max(0.0, (v - floor) / (high - floor)) for ref, v in values.items()}


def _short(value: float) -> float:
    """Six significant digits: readable, and never rounds a small score to zero."""
    return float(f"{value:.6g}")


def same_language(a: str, b: str) -> bool:
    """Mixed text shares a language with anything; otherwise zh and en differ."""
    return a == b or "mixed" in (a, b)


def strength(row: sqlite3.Row | dict[str, Any], config: Config, now: float) -> float:
    """How much of a memory's recency is left, 1 to 0: it halves every `stability` days
    since the memory was last written or recalled, stability = the half-life of its scope
    (`half_life_project_days` for a project's memory, `half_life_global_days` for a global
    one) * (1 + log2(1 + recalls)). A preference or an importance-5 memory keeps all of it."""
    if row["kind"] == "pref" or row["importance"] >= 5:
        return 1.0
    last = max(row["updated"], row["last_access"] or 0.0)
    age_days = max(0.0, now - last) / 86400
    half_life = config.half_life_project_days if row["project"] else config.half_life_global_days
    stability = half_life * (1 + math.log2(1 + row["access_count"]))
    return float(0.5 ** (age_days / stability))


def decay_factor(row: sqlite3.Row | dict[str, Any], config: Config, now: float) -> float:
    """floor + (1 - floor) * strength: the share of a memory's score its age leaves it."""
    return float(config.decay_floor + (1 - config.decay_floor) * strength(row, config, now))


def importance_factor(importance: int) -> float:
    """1 (trivia) -> 0.8 ... 3 -> 1.0 ... 5 (rule) -> 1.2."""
    return 1.0 + 0.1 * (importance - 3)


def fuse(
    lexical: float,
    dense: Sequence[float],
    same: bool,
    config: Config,
    mode: str,
    entity: float = 0.0,
) -> float:
    """The language-gated weighted sum of normalised channel scores (see module docstring),
    plus the share of the query's entities the candidate names, in any language."""
    first = dense[0] if dense else 0.0
    second = dense[1] if len(dense) > 1 else 0.0
    named = config.weight_entity * entity
    if same:
        lexical_weight = 0.0 if mode == "dense" else config.weight_lexical
        return (
            lexical_weight * lexical
            + config.weight_dense * first
            + config.weight_second * second
            + named
        )
    return config.cross_dense * first + config.cross_second * second + named


def query_vector(vectors: dict[tuple[Any, ...], Any], channel: Any, query: str) -> Any:
    """The channel's embedding of `query`, made once: `vectors` keeps only the latest query's
    (the weave searches again, and weighs texts outside the index against it)."""
    key = (channel.name, query)
    if key not in vectors:
        if any(seen[-1] != query for seen in vectors):
            vectors.clear()
        vectors[key] = channel.embedder.embed([query], query=True)[0]
    return vectors[key]


class Retriever:
    """Searches one table of one store through the lexical and dense channels."""

    def __init__(
        self,
        db: sqlite3.Connection,
        config: Config,
        channels: Sequence[DenseChannel],
        vectors: dict[tuple[Any, ...], Any] | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self.channels = list(channels)
        # (model, query) -> its embedding, and (model, the index's writes, table, width,
        # scope, query) -> the index's nearest neighbours: kept for the latest query only
        self.vectors = {} if vectors is None else vectors
        self.excluded: str | None = None  # a session whose turns this search leaves out

    def effective_mode(self, mode: str) -> str:
        return mode if mode == "lexical" or self.channels else "lexical"

    def search(
        self,
        table: str,
        query: str,
        k: int,
        projects: Sequence[str] | None,
        kind: str | None,
        mode: str,
        exclude_session: str | None = None,
        by_meaning: int = 0,
    ) -> list[Hit]:
        """The best `k` rows with a score above zero (a hit that matches nothing is none),
        then, in hybrid mode, up to `by_meaning` more that the dense channels alone rank
        best (as a dense search of the same candidates would): a hit in another language
        must not be crowded out by texts that merely share a word with the query.

        `exclude_session` leaves one session's turns out (the host already has them)."""
        mode = self.effective_mode(mode)
        self.excluded = exclude_session
        found = self.candidates(table, query, max(self.config.candidates, k), projects, kind, mode)
        wanted = by_meaning > 0 and mode == "hybrid"
        meaning = {  # what a dense search finds: the dense channels' candidates, as they were
            ref: replace(c, lexical=None, lexical_rank=None, dense=dict(c.dense), parts={})
            for ref, c in (found.items() if wanted else ())
            if c.dense_rank
        }
        hits = self._best(table, query, found, k, mode)
        if wanted:
            seen = {hit.id for hit in hits}
            near = self._best(table, query, meaning, by_meaning, "dense")
            hits += [hit for hit in near if hit.id not in seen]
        return hits

    def _best(
        self, table: str, query: str, found: dict[str, Candidate], k: int, mode: str
    ) -> list[Hit]:
        """The best `k` of the candidates, as hits."""
        scored = self.score(table, query, found, mode, time.time())
        if table == "turns" and self.config.context_weight > 0:
            scored = self._with_context(scored)
        scored = [pair for pair in scored if pair[0] > 0]
        scored.sort(key=lambda pair: (-pair[0], -pair[1].row["id"]))
        if mode != "lexical":
            self._complete(table, query, [c for _, c in scored[:k]])
        return [self._hit(table, c, score, mode) for score, c in scored[:k]]

    def _complete(self, table: str, query: str, hits: list[Candidate]) -> None:
        """Give each hit every model's cosine, also where that model did not rank it among
        its candidates (its rank stays empty): how close a hit is must not depend on it."""
        projects = {c.row["project"] for c in hits}
        for channel in self.channels:
            missing = [c.ref for c in hits if channel.name not in c.dense]
            stored = channel.index.vectors(table, missing, projects)
            vector = self.vectors[(channel.name, query)]
            for c in hits:
                if c.ref in stored:
                    c.dense[channel.name] = float(stored[c.ref] @ vector)

    # --- candidates ------------------------------------------------------------------------

    def candidates(
        self,
        table: str,
        query: str,
        n: int,
        projects: Sequence[str] | None,
        kind: str | None,
        mode: str,
    ) -> dict[str, Candidate]:
        """Up to `n` eligible rows from each channel the mode uses, with raw channel scores."""
        found: dict[str, Candidate] = {}
        if mode in ("hybrid", "lexical"):
            self._lexical(table, query, n, projects, kind, found)
        if mode in ("hybrid", "dense"):
            for channel in self.channels:
                self._dense(channel, table, query, n, projects, kind, found)
        if table == "memories" and mode != "dense" and self.config.weight_entity > 0:
            self._entities(table, query, n, projects, kind, found)
        return found

    def _rows(self, table: str, ids: list[int]) -> dict[int, sqlite3.Row]:
        return {row["id"]: row for row in TABLES[table].ranked(self.db, ids)}

    def _eligible(self, table: str, row: sqlite3.Row, projects, kind) -> bool:
        if projects is not None and row["project"] not in projects:
            return False
        if table == "memories":
            return row["status"] == "active" and (kind is None or row["kind"] == kind)
        return self.excluded is None or row["session_id"] != self.excluded

    def _lexical(self, table, query, n, projects, kind, out: dict[str, Candidate]) -> None:
        expression = fts.match_expression(query)
        if expression is None:
            return
        hits = fts.ranked(self.db, table, expression, n * 4)
        rows = self._rows(table, [rowid for rowid, _ in hits])
        rank = 0
        for rowid, score in hits:
            row = rows.get(rowid)
            if row is None or not self._eligible(table, row, projects, kind):
                continue
            rank += 1
            ref = f"{table[0]}_{rowid}"
            out[ref] = Candidate(ref, row, lexical=score, lexical_rank=rank)
            if rank >= n:
                break

    def _entities(self, table, query, n, projects, kind, out: dict[str, Candidate]) -> None:
        """The memories naming the query's entities, the most of their weight first; every
        candidate gets its share and the query's terms that named them (what the relevance
        gate reads).
        Past turns are left as they are: ranked by the names they hold (people, chit-chat),
        conversations came out worse (LoCoMo), and raw talk about the same thing is not the
        answer to the question (the coding set's hard negatives)."""
        from mnemoweave.graph.recall import named, prompt_entities

        shares = named(self.db, table, prompt_entities(self.db, query))
        best = sorted(shares.items(), key=lambda pair: (-pair[1][0], -pair[0]))[: n * 4]
        rows = self._rows(table, [rid for rid, _ in best])
        rank = 0
        for rid, (share, terms) in best:
            row = rows.get(rid)
            if row is None or not self._eligible(table, row, projects, kind):
                continue
            rank += 1
            candidate = out.setdefault(f"{table[0]}_{rid}", Candidate(f"{table[0]}_{rid}", row))
            candidate.entity, candidate.entity_rank, candidate.named = share, rank, terms
            if rank >= n:
                break
        for ref, candidate in out.items():  # found by the other channels: named or not
            if candidate.entity is None:
                candidate.entity, candidate.named = shares.get(int(ref[2:]), (0.0, frozenset()))

    def _dense(self, channel, table, query, n, projects, kind, out) -> None:
        vector = query_vector(self.vectors, channel, query)
        # The index reads only the scope's collections; status, kind and the excluded
        # session are checked in SQLite, and a first pass that keeps under half the wanted
        # candidates (a session that fills the nearest turns) gets a wider second one.
        for width in (n * 2, n * 12):
            scope = tuple(projects or ("*",))
            asked = (channel.name, channel.index.writes, table, width, scope, query)
            if asked not in self.vectors:  # the same neighbours, asked again by the weave
                self.vectors[asked] = channel.index.query(table, vector, width, projects)
            found = self.vectors[asked]
            kept, complete = self._keep(table, found, projects, kind, n)
            if complete or len(found) < width or len(kept) >= n // 2:
                break
        for rank, (ref, cosine, row) in enumerate(kept, start=1):
            candidate = out.setdefault(ref, Candidate(ref, row))
            candidate.dense[channel.name] = cosine
            candidate.dense_rank[channel.name] = rank

    def _keep(
        self, table, found, projects, kind, n
    ) -> tuple[list[tuple[str, float, sqlite3.Row]], bool]:
        """The eligible rows among `found`, and whether looking further could add any."""
        rows = self._rows(table, [int(ref[2:]) for ref, _ in found])
        kept: list[tuple[str, float, sqlite3.Row]] = []
        for ref, cosine in found:
            if cosine < self.config.min_cosine:
                return kept, True  # best first: the rest are further away
            row = rows.get(int(ref[2:]))
            if row is not None and self._eligible(table, row, projects, kind):
                kept.append((ref, cosine, row))
                if len(kept) >= n:
                    return kept, True
        return kept, False

    # --- scoring ---------------------------------------------------------------------------

    def score(
        self, table: str, query: str, found: dict[str, Candidate], mode: str, now: float
    ) -> list[tuple[float, Candidate]]:
        """Each candidate with its final score (fused, then weighted for memories)."""
        lexical = _normalise({r: c.lexical for r, c in found.items() if c.lexical is not None}, 0.0)
        dense = [
            _normalise(
                {r: c.dense[ch.name] for r, c in found.items() if ch.name in c.dense},
                self.config.min_cosine,
            )
            for ch in self.channels
        ]
        query_lang = language(query)
        scored = []
        for ref, c in found.items():
            entity = c.entity or 0.0
            if mode == "lexical":
                fused = lexical.get(ref, 0.0) + self.config.weight_entity * entity
                c.parts = {"fused": fused}
            else:
                same = same_language(query_lang, c.row["lang"])
                parts = [norm.get(ref, 0.0) for norm in dense]
                fused = fuse(lexical.get(ref, 0.0), parts, same, self.config, mode, entity)
                c.parts = {"lexical_norm": lexical.get(ref, 0.0), "same_language": float(same)}
                c.parts |= {
                    f"{ch.name}_norm": p for ch, p in zip(self.channels, parts, strict=True)
                }
                c.parts["fused"] = fused
            if c.entity is not None:
                c.parts["entity"] = c.entity
            scored.append((self._weighted(table, c, fused, now), c))
        return scored

    def _weighted(self, table: str, c: Candidate, fused: float, now: float) -> float:
        if table != "memories":
            return fused
        row = c.row
        c.parts["decay"] = decay_factor(row, self.config, now)
        c.parts["importance"] = importance_factor(row["importance"])
        c.parts["weight"] = row["weight"]
        return fused * c.parts["decay"] * c.parts["importance"] * c.parts["weight"]

    def _with_context(self, scored: list[tuple[float, Candidate]]) -> list[tuple[float, Candidate]]:
        """Let a turn inherit part of the score of the turn before it in its session.

        Short answers ("Sichuan and Cantonese") match a query only through the question they
        answer, asked in the turn before; so the turns that follow the best candidates join
        the candidates, and each turn gains context_weight x its predecessor's score.
        """
        by_position = {(c.row["session_id"], c.row["seq"]): score for score, c in scored}
        best = sorted(scored, key=lambda pair: -pair[0])[: self.config.context_expand]
        wanted = [(c.row["session_id"], c.row["seq"] + 1) for score, c in best if score > 0]
        wanted = [position for position in wanted if position not in by_position]
        if wanted:
            for row in turns_table.ranked_at(self.db, wanted):
                scored.append((0.0, Candidate(f"t_{row['id']}", row, parts={"fused": 0.0})))
        out = []
        for score, c in scored:
            inherited = by_position.get((c.row["session_id"], c.row["seq"] - 1), 0.0)
            c.parts["context"] = self.config.context_weight * inherited
            out.append((score + c.parts["context"], c))
        return out

    def _hit(self, table: str, c: Candidate, score: float, mode: str) -> Hit:
        row = c.row
        explain: dict[str, Any] = {
            "mode": mode,
            "lexical": {
                "rank": c.lexical_rank,
                "bm25": None if c.lexical is None else _short(c.lexical),
            },
            "dense": {
                name: {"rank": c.dense_rank.get(name), "cosine": _short(cos)}
                for name, cos in c.dense.items()
            },
            **{name: _short(value) for name, value in c.parts.items()},
        }
        if c.named:
            explain["named"] = sorted(c.named)
        if table == "memories":
            return Hit(
                c.ref,
                row["kind"],
                row["body"],
                score,
                row["project"],
                row["created"],
                {
                    "title": row["title"],
                    "evidence": json.loads(row["evidence"]),
                    "explain": explain,
                },
            )
        return Hit(
            c.ref,
            "turn",
            row["text"],
            score,
            row["project"],
            row["ts"],
            {
                "session": row["session_id"],
                "seq": row["seq"],
                "role": row["role"],
                "explain": explain,
            },
        )


def best_of(hits: Sequence[Hit], k: int, by_meaning: int = 0) -> list[Hit]:
    """The `k` best of hits from several searches, then up to `by_meaning` of those left
    out that the dense channels alone ranked (Retriever.search's `by_meaning`), best first."""
    best = sorted(hits, key=lambda hit: -hit.score)[:k]
    if not by_meaning:
        return best
    chosen = {hit.id for hit in best}
    near = [h for h in hits if h.id not in chosen and _dense_only(h)]
    return best + sorted(near, key=lambda hit: -hit.score)[:by_meaning]


def _dense_only(hit: Hit) -> bool:
    """Whether the dense channels alone ranked a hit (a team hit says nothing of that)."""
    return bool(hit.extra.get("explain", {}).get("mode") == "dense")
