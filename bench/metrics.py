"""Retrieval metrics over ranked lists of dataset keys (best first), and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when any relevant key is among the first k, else 0.0."""
    return float(any(key in relevant for key in ranked[:k]))


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the (distinct) relevant keys found among the first k."""
    wanted = set(relevant)
    if not wanted:
        raise ValueError("recall needs at least one relevant key")
    return len(wanted & set(ranked[:k])) / len(wanted)


def all_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every relevant key is among the first k, else 0.0."""
    return float(set(relevant) <= set(ranked[:k]))


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Binary-relevance nDCG@k; the ideal ranking puts every relevant key first."""
    wanted = set(relevant)
    if not wanted:
        raise ValueError("nDCG needs at least one relevant key")
    dcg = sum(1 / math.log2(rank + 2) for rank, key in enumerate(ranked[:k]) if key in wanted)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
    return dcg / ideal


def unique(items: Iterable[T]) -> list[T]:
    """Items in order of first appearance, repeats dropped (turn ranking -> session ranking)."""
    return list(dict.fromkeys(items))


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean rounded to 3 places; None for no values."""
    return round(sum(values) / len(values), 3) if values else None


def percentiles(values_ms: Sequence[float]) -> dict[str, float | None]:
    """p50 and p95 (linear interpolation) in milliseconds, rounded to 0.01 ms."""
    if not values_ms:
        return {"p50": None, "p95": None}
    p50, p95 = np.percentile(np.asarray(values_ms, dtype=float), [50, 95])
    return {"p50": round(float(p50), 2), "p95": round(float(p95), 2)}
