"""Metrics, percentiles and the dataset parsers they are fed with."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from datasets import parse_evidence, parse_locomo_date, parse_longmemeval_date
from metrics import all_at_k, hit_at_k, mean, ndcg_at_k, percentiles, recall_at_k, unique

RANKED = ["a", "b", "c", "d", "e"]


def test_hit_at_k_counts_any_relevant_key_within_k() -> None:
    assert hit_at_k(RANKED, {"c"}, 3) == 1.0
    assert hit_at_k(RANKED, {"c"}, 2) == 0.0
    assert hit_at_k(RANKED, {"x", "e"}, 5) == 1.0
    assert hit_at_k([], {"a"}, 5) == 0.0


def test_recall_at_k_is_the_share_of_distinct_relevant_keys_found() -> None:
    assert recall_at_k(RANKED, ["a", "d", "x", "y"], 4) == 0.5
    assert recall_at_k(RANKED, ["a", "a"], 1) == 1.0
    with pytest.raises(ValueError):
        recall_at_k(RANKED, [], 3)


def test_all_at_k_needs_every_relevant_key() -> None:
    assert all_at_k(RANKED, {"a", "c"}, 3) == 1.0
    assert all_at_k(RANKED, {"a", "d"}, 3) == 0.0


def test_ndcg_at_k() -> None:
    assert ndcg_at_k(RANKED, {"a"}, 10) == 1.0
    assert ndcg_at_k(RANKED, {"b"}, 10) == pytest.approx(1 / math.log2(3))
    # Two relevant keys at ranks 2 and 4 against the ideal ranks 1 and 2.
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RANKED, {"b", "d"}, 10) == pytest.approx(expected)
    # The ideal is capped at k: three relevant keys, k=1, the first is relevant.
    assert ndcg_at_k(RANKED, {"a", "b", "x"}, 1) == 1.0
    assert ndcg_at_k(RANKED, {"x"}, 10) == 0.0


def test_unique_keeps_first_occurrences_in_order() -> None:
    assert unique(["s2", "s1", "s2", "s3", "s1"]) == ["s2", "s1", "s3"]


def test_mean_rounds_and_handles_empty() -> None:
    assert mean([1.0, 0.0, 0.0]) == 0.333
    assert mean([]) is None


def test_percentiles_interpolate_linearly() -> None:
    assert percentiles([float(v) for v in range(1, 101)]) == {"p50": 50.5, "p95": 95.05}
    assert percentiles([3.0]) == {"p50": 3.0, "p95": 3.0}
    assert percentiles([]) == {"p50": None, "p95": None}


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (["D1:3"], ("D1:3",)),
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D30:05"], ("D30:5",)),
        (["D1:18", "D", "D1:20"], ("D1:18", "D1:20")),
        (["D:11:26", "D20:21"], ("D20:21",)),
        (["D2:1", "D2:01"], ("D2:1",)),
        ([], ()),
        (["D"], ()),
    ],
)
def test_parse_evidence(evidence: list[str], expected: tuple[str, ...]) -> None:
    assert parse_evidence(evidence) == expected


def test_parse_locomo_date() -> None:
    moment = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == moment.timestamp()
    midnight = datetime(2023, 8, 9, 0, 9, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 9 August, 2023") == midnight.timestamp()


def test_parse_longmemeval_date() -> None:
    moment = datetime(2023, 4, 29, 16, 59, tzinfo=UTC)
    assert parse_longmemeval_date("2023/04/29 (Sat) 16:59") == moment.timestamp()
