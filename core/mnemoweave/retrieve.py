"""Hybrid retrieval: BM25 over jieba tokens + dense vectors, fused, then weighted.

Fusion is gated by language. For a candidate in the query's language both channels
count (dense weight `fusion_alpha`, lexical 1 - alpha); for a candidate in another
language the lexical channel cannot match, so its dense score is weighed by
`fusion_cross` instead, and same-language lexical look-alikes do not drown it. Each
channel is normalised within its own candidate list. Memories are then weighted by decay
(strength = 0.5^(age/stability), stability = half_life * (1 + log2(1 + access_count))),
importance and feedback weight. Turns are raw evidence and are not decayed.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import Config
from .model import Hit
from .store import fts
from .text import language

if TYPE_CHECKING:
    from .embed.base import Embedder
    from .store.vectors import VectorIndex

MODES = ("hybrid", "lexical", "dense")


@dataclass
class Candidate:
    ref: str
    row: sqlite3.Row
    lexical: float = 0.0  # raw BM25 (higher is better)
    lexical_rank: int | None = None
    dense: float | None = None  # cosine
    dense_rank: int | None = None
    parts: dict[str, float] = field(default_factory=dict)


def _normalise(values: dict[str, float]) -> dict[str, float]:
    """Min-max to [0, 1] within one channel's list (a single candidate gets 1)."""
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low < 1e-9:
        return dict.fromkeys(values, 1.0)
    return {ref: (v - low) / (high - low) for ref, v in values.items()}


def _same_language(a: str, b: str) -> bool:
    """Mixed text shares a language with anything; otherwise zh and en differ."""
    return a == b or "mixed" in (a, b)


def decay_factor(row: sqlite3.Row, config: Config, now: float) -> float:
    """floor + (1 - floor) * strength, where strength halves every `stability` days."""
    last = max(row["updated"], row["last_access"] or 0.0)
    age_days = max(0.0, now - last) / 86400
    stability = config.half_life_days * (1 + math.log2(1 + row["access_count"]))
    strength = 0.5 ** (age_days / stability)
    return config.decay_floor + (1 - config.decay_floor) * strength


def importance_factor(importance: int) -> float:
    """1 (trivia) -> 0.8 ... 3 -> 1.0 ... 5 (rule) -> 1.2."""
    return 1.0 + 0.1 * (importance - 3)


class Retriever:
    """Searches one table of one store through the lexical and dense channels."""

    def __init__(
        self,
        db: sqlite3.Connection,
        config: Config,
        embedder: Embedder | None,
        index: VectorIndex | None,
    ) -> None:
        self.db = db
        self.config = config
        self.embedder = embedder
        self.index = index

    @property
    def dense_available(self) -> bool:
        return self.embedder is not None and self.index is not None

    def search(
        self,
        table: str,
        query: str,
        k: int,
        projects: Sequence[str] | None,
        kind: str | None,
        mode: str,
    ) -> list[Hit]:
        mode = self.effective_mode(mode)
        candidates = self.candidates(
            table, query, max(self.config.candidates, k), projects, kind, mode
        )
        norms = (
            _normalise({r: c.lexical for r, c in candidates.items() if c.lexical_rank}),
            _normalise({r: c.dense for r, c in candidates.items() if c.dense is not None}),
        )
        now = time.time()
        query_lang = language(query)
        scored = [
            (self._score(table, c, query_lang, mode, now, norms), c) for c in candidates.values()
        ]
        scored.sort(key=lambda pair: (-pair[0], -pair[1].row["id"]))
        return [self._hit(table, c, score, mode) for score, c in scored[:k]]

    def effective_mode(self, mode: str) -> str:
        return mode if mode == "lexical" or self.dense_available else "lexical"

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
            self._dense(table, query, n, projects, kind, found)
        return found

    # --- channels --------------------------------------------------------------------------

    def _rows(self, table: str, ids: list[int]) -> dict[int, sqlite3.Row]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(f"SELECT * FROM {table} WHERE id IN ({marks})", ids)
        return {row["id"]: row for row in rows}

    def _eligible(self, table: str, row: sqlite3.Row, projects, kind) -> bool:
        if projects is not None and row["project"] not in projects:
            return False
        if table == "memories":
            return row["status"] == "active" and (kind is None or row["kind"] == kind)
        return True

    def _lexical(self, table, query, n, projects, kind, out: dict[str, Candidate]) -> None:
        expression = fts.match_expression(query)
        if expression is None:
            return
        hits = self.db.execute(
            f"SELECT rowid, -bm25({table}_fts) FROM {table}_fts WHERE {table}_fts MATCH ?"
            f" ORDER BY bm25({table}_fts) LIMIT ?",
            (expression, n * 4),
        ).fetchall()
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

    def _dense(self, table, query, n, projects, kind, out: dict[str, Candidate]) -> None:
        assert self.embedder is not None and self.index is not None
        vector = self.embedder.embed([query], query=True)[0]
        # An unfiltered nearest-neighbour query is fast; filter in SQLite, and only fall back
        # to Chroma's (slower) metadata filter when the scope is too rare to fill the list.
        found = self.index.query(table, vector, n * 4)
        kept = self._keep(table, found, projects, kind, n)
        if len(kept) < n and projects is not None and len(found) >= n * 4:
            kept = self._keep(
                table, self.index.query(table, vector, n * 4, projects), projects, kind, n
            )
        for rank, (ref, cosine, row) in enumerate(kept, start=1):
            candidate = out.setdefault(ref, Candidate(ref, row))
            candidate.dense, candidate.dense_rank = cosine, rank

    def _keep(self, table, found, projects, kind, n) -> list[tuple[str, float, sqlite3.Row]]:
        rows = self._rows(table, [int(ref[2:]) for ref, _ in found])
        kept = []
        for ref, cosine in found:
            if cosine < self.config.min_cosine:
                break  # best first: the rest are further away
            row = rows.get(int(ref[2:]))
            if row is not None and self._eligible(table, row, projects, kind):
                kept.append((ref, cosine, row))
                if len(kept) >= n:
                    break
        return kept

    # --- scoring ---------------------------------------------------------------------------

    def _score(
        self,
        table: str,
        c: Candidate,
        query_lang: str,
        mode: str,
        now: float,
        norms: tuple[dict[str, float], dict[str, float]],
    ) -> float:
        c.parts = {}
        if mode == "lexical":
            fused = c.lexical
        elif mode == "dense":
            fused = c.dense or 0.0
        else:
            fused = self._fused(table, c, query_lang, norms)
        c.parts["fused"] = fused
        if table != "memories":
            return fused
        row = c.row
        c.parts["decay"] = decay_factor(row, self.config, now)
        c.parts["importance"] = importance_factor(row["importance"])
        c.parts["weight"] = row["weight"]
        return fused * c.parts["decay"] * c.parts["importance"] * c.parts["weight"]

    def _fused(
        self,
        table: str,
        c: Candidate,
        query_lang: str,
        norms: tuple[dict[str, float], dict[str, float]],
    ) -> float:
        lex, dense = norms[0].get(c.ref, 0.0), norms[1].get(c.ref, 0.0)
        text = c.row["body"] if table == "memories" else c.row["text"]
        same = _same_language(query_lang, language(text))
        alpha = self.config.fusion_alpha if same else self.config.fusion_cross
        c.parts.update(lexical_norm=lex, dense_norm=dense, alpha=alpha)
        return alpha * dense + (1 - alpha) * lex if same else alpha * dense

    def _hit(self, table: str, c: Candidate, score: float, mode: str) -> Hit:
        row = c.row
        explain: dict[str, Any] = {
            "mode": mode,
            "lexical": {"rank": c.lexical_rank, "bm25": round(c.lexical, 4)},
            "dense": {
                "rank": c.dense_rank,
                "cosine": None if c.dense is None else round(c.dense, 4),
            },
            **{name: round(value, 4) for name, value in c.parts.items()},
        }
        if table == "memories":
            return Hit(
                c.ref,
                row["kind"],
                row["body"],
                score,
                row["project"],
                row["created"],
                {"title": row["title"], "explain": explain},
            )
        return Hit(
            c.ref,
            "turn",
            row["text"],
            score,
            row["project"],
            row["ts"],
            {"session": row["session_id"], "role": row["role"], "explain": explain},
        )
