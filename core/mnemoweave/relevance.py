"""The relevance gate: is a memory or a past turn worth putting before the model?

Search ranks candidates against each other, so its fused scores say nothing about whether
the best one is on topic at all. The gate uses absolute signals instead:
- coverage: the share of the query's content terms the text holds, each weighted by its
  inverse document frequency in the store (rare words say more than common ones);
- cosine: each model's cosine to the query, minus the cosine above which that model calls
  a text on topic;
- info: how much the query says (log of one plus the idf of its content terms), and
  matched, the coverage times it: covering a query that names nothing in particular
  proves little.
A past turn takes each signal at the better of its own and that of the turn before it when
that turn is a candidate too: an answer is on topic when the question it answers is.
They combine into one score in [0, 1] (a logistic model whose weights live in
`GATE_WEIGHTS`, fitted on labelled on-topic and off-topic prompts by `bench/gate.py`), and
a prompt gets knowledge when one candidate's score reaches `weave_gate` (config), and then
every candidate that reaches `weave_line_gate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .store import fts
from .store import memories as memories_table
from .store import turns as turns_table
from .text import content_terms, terms

if TYPE_CHECKING:
    from .engine import Engine

# The logistic models, with and without an embedding model: bias, then one weight per
# feature (see `Signals.features`).
GATE_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "hybrid": {"bias": -3.16, "cosine": 6.38, "info": 0.69, "matched": 2.64},
    # without a model (not fitted): about half the query's weighted words pass either gate
    "lexical": {"bias": -0.6, "coverage": 6.0},
}


NOT_FOUND = -0.5  # the cosine signal of a text no model found near the query
TABLES = {"memories": memories_table, "turns": turns_table}  # the store modules gated


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency, kept positive (a word in every text is worth ~0)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Signals:
    """What the gate knows of one candidate (and of the turn before it, when that turn is a
    candidate too: an answer is on topic when the question it answers is)."""

    coverage: float
    cosine: float | None  # the best model's cosine minus its on-topic cosine; None: no model
    before: Signals | None = None
    info: float = 0.0  # how much the query says: log(1 + the idf of its content terms)

    def features(self) -> dict[str, float]:
        """The gate's inputs: each signal at the better of the candidate and its question."""
        before = self.before or self
        coverage = max(self.coverage, before.coverage)
        found = {"coverage": coverage, "info": self.info, "matched": coverage * self.info}
        if self.cosine is not None and before.cosine is not None:
            found["cosine"] = max(self.cosine, before.cosine)
        return found


class Gate:
    """The relevance test for one query, built once and applied to each candidate."""

    def __init__(self, engine: Engine, query: str, table: str) -> None:
        self.wanted = list(dict.fromkeys(content_terms(query)))
        self.known = fts.frequencies(engine.db, table, self.wanted)
        self.weights = _weights(engine, table, self.wanted, self.known)
        self.total = sum(self.weights.values())
        self.cutoffs = {channel.name: channel.relevant_cosine for channel in engine.channels}
        self.model = GATE_WEIGHTS["hybrid" if self.cutoffs else "lexical"]

    def coverage(self, text: str) -> float:
        if not self.total:
            return 0.0
        have = set(terms(text))
        return sum(w for term, w in self.weights.items() if term in have) / self.total

    def signals(self, text: str, explain: Mapping[str, Any]) -> Signals:
        dense = explain.get("dense", {})
        cosine = None
        if self.cutoffs:  # a candidate no model found is further than any it did find
            cosine = max(
                (found["cosine"] - self.cutoffs.get(name, 1.0) for name, found in dense.items()),
                default=NOT_FOUND,
            )
        return Signals(self.coverage(text), cosine, info=math.log1p(self.total))

    def score(self, signals: Signals) -> float:
        z = self.model["bias"] + sum(
            self.model.get(name, 0.0) * value for name, value in signals.features().items()
        )
        return 1 / (1 + math.exp(-z))


def _weights(
    engine: Engine, table: str, wanted: list[str], frequencies: dict[str, int]
) -> dict[str, float]:
    """Each wanted term's idf in `table`; a term the store has never seen counts as rare as
    its rarest one (in a young store, common words are still unseen)."""
    if not wanted:
        return {}
    n = TABLES[table].count(engine.db)
    return {term: idf(max(1, frequencies.get(term, 0)), n) for term in wanted}
