"""The plain-BM25 baseline: BM25Okapi as in rank_bm25 (k1=1.5, b=0.75, epsilon=0.25).

Terms whose idf would be negative (in more than half the documents) get epsilon times the
average idf instead, and a query term counts once per occurrence in the query, as in
rank_bm25. Tokens come from `mnemoweave.text.tokens`: lowercased `\\w+` words for English,
jieba search-mode words for Chinese.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from mnemoweave.text import tokens


class BM25:
    """A BM25Okapi index over tokenised documents."""

    def __init__(
        self,
        corpus: Sequence[Sequence[str]],
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> None:
        self.size = len(corpus)
        self.k1 = k1
        lengths = np.array([len(doc) for doc in corpus], dtype=float)
        average = lengths.mean() if self.size and lengths.sum() else 1.0
        # Per-document denominator term: k1 * (1 - b + b * |d| / avgdl).
        self._norm = k1 * (1 - b + b * lengths / average)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for index, doc in enumerate(corpus):
            for term, count in Counter(doc).items():
                docs, counts = postings.setdefault(term, ([], []))
                docs.append(index)
                counts.append(count)
        self._postings = {
            term: (np.array(docs), np.array(counts, dtype=float))
            for term, (docs, counts) in postings.items()
        }
        self.idf = self._idf(epsilon)

    def _idf(self, epsilon: float) -> dict[str, float]:
        idf = {
            term: math.log(self.size - len(docs) + 0.5) - math.log(len(docs) + 0.5)
            for term, (docs, _) in self._postings.items()
        }
        if not idf:
            return idf
        floor = epsilon * sum(idf.values()) / len(idf)
        return {term: floor if value < 0 else value for term, value in idf.items()}

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """One score per document (0 for documents sharing no term with the query)."""
        total = np.zeros(self.size)
        for term in query:
            if term not in self._postings:
                continue
            docs, counts = self._postings[term]
            total[docs] += self.idf[term] * counts * (self.k1 + 1) / (counts + self._norm[docs])
        return total


class BM25Ranker:
    """Ranks texts for a query: indices of the texts sharing a term with it, best first."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.index = BM25([tokens(text) for text in texts])

    def rank(self, query: str, allowed: np.ndarray | None = None) -> list[int]:
        """Matching texts by descending score (ties: earlier text first).

        `allowed` is an optional boolean mask restricting which texts may be returned.
        """
        scores = self.index.scores(tokens(query))
        matched = scores != 0
        if allowed is not None:
            matched &= allowed
        candidates = np.flatnonzero(matched)
        order = np.argsort(-scores[candidates], kind="stable")
        ranked: list[int] = candidates[order].tolist()
        return ranked
