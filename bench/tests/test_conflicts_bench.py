"""The conflict benchmark: its data set's shape, and a lexical-only run of the whole set."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import conflicts


def test_the_pairs_are_balanced_bilingual_and_split_half_and_half() -> None:
    pairs = conflicts.load(conflicts.DATA)
    assert len(pairs) >= 240
    labels = Counter(pair["label"] for pair in pairs)
    assert set(labels) == set(conflicts.LABELS)
    assert min(labels.values()) >= len(pairs) // 5
    assert sum(pair["lang"] != "en" for pair in pairs) >= len(pairs) // 2
    splits = Counter((pair["label"], pair["lang"], pair["split"]) for pair in pairs)
    for (label, lang, split), count in splits.items():
        other = "check" if split == "dev" else "dev"
        assert abs(count - splits[(label, lang, other)]) <= 1
    assert len({(pair["a"], pair["b"]) for pair in pairs}) == len(pairs)


def test_scores_count_conflict_and_update_as_positive() -> None:
    rows: list[dict[str, Any]] = [
        {"label": "conflict", "verdict": "conflict"},
        {"label": "update", "verdict": None},
        {"label": "compatible", "verdict": "conflict"},
        {"label": "unrelated", "verdict": None},
    ]
    scores = conflicts.scores(rows)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 0.5, 0.5)
    assert scores["confusion"]["update"] == {"conflict": 0, "update": 0, "none": 1}


def test_a_lexical_only_run_reports_both_halves(tmp_path: Path) -> None:
    args = argparse.Namespace(
        data=conflicts.DATA, embedder="none", models=tmp_path / "no-models", verbose=True
    )
    report = conflicts.run(args)
    assert set(report) >= {"n", "labels", "lexical"}
    for split in ("dev", "check"):
        half = report["lexical"][split]
        assert half["n"] == report["n"] // 2
        assert set(half["by_language"]) == {"en", "zh", "mixed"}
        assert half["precision"] >= 0.7 and half["recall"] >= 0.5
    assert report["lexical"]["misses"]
