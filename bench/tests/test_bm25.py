"""The baseline against BM25Okapi computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bm25 import BM25, BM25Ranker


def test_scores_match_bm25okapi_by_hand() -> None:
    corpus = [["apple", "pie"], ["apple", "apple", "tart"], ["pear"], ["plum", "jam", "pie"]]
    index = BM25(corpus)
    average = 9 / 4
    idf_pie = math.log(4 - 2 + 0.5) - math.log(2 + 0.5)  # 0: neither negative nor floored
    idf_tart = math.log(4 - 1 + 0.5) - math.log(1 + 0.5)
    assert index.idf["pie"] == pytest.approx(idf_pie)

    def term(idf: float, tf: int, length: int) -> float:
        return idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / average))

    scores = index.scores(["tart", "pie"])
    assert scores[1] == pytest.approx(term(idf_tart, 1, 3))
    assert scores[2] == 0.0


def test_negative_idf_is_floored_at_epsilon_times_the_average() -> None:
    corpus = [["a", "b"], ["a", "c"], ["a", "d"]]
    index = BM25(corpus)
    raw = {"a": math.log(0.5) - math.log(3.5), "b": math.log(2.5) - math.log(1.5)}
    average = (raw["a"] + 3 * raw["b"]) / 4
    assert index.idf["a"] == pytest.approx(0.25 * average)
    assert index.idf["b"] == pytest.approx(raw["b"])


def test_repeated_query_terms_count_each_time() -> None:
    index = BM25([["x", "y"], ["y", "z"], ["z"]])
    assert index.scores(["x", "x"])[0] == pytest.approx(2 * index.scores(["x"])[0])


def test_ranker_returns_matching_texts_best_first_within_the_mask() -> None:
    texts = ["deploy with fly", "fly fly fly deploy", "unrelated text", "部署 流程", "more", "text"]
    ranker = BM25Ranker(texts)
    assert ranker.rank("fly deploy") == [1, 0]
    assert ranker.rank("部署") == [3]
    assert ranker.rank("fly", allowed=np.array([True, False, False, False, True, True])) == [0]
    assert ranker.rank("nothing matches") == []
