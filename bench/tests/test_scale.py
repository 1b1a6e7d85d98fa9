"""The scale benchmark at small sizes (lexical-only): the code the 100,000-memory run uses."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import corpus
import scale


@dataclass
class Wrote:
    action: str
    id: str | None


class MergingEngine:
    """Takes every second memory as a near-duplicate of an earlier one (merged, no id)."""

    def __init__(self) -> None:
        self.stored: list[dict[str, Any]] = []
        self.writes = 0

    def remember_many(self, rows: Iterable[dict[str, Any]]) -> list[Wrote]:
        out = []
        for row in rows:
            self.writes += 1
            if self.writes % 2 == 0:
                out.append(Wrote("merged", "m_1"))
            else:
                self.stored.append(row)
                out.append(Wrote("new", f"m_{len(self.stored)}"))
        return out


def test_fill_tops_up_what_merged_away_until_n_memories_are_stored() -> None:
    projects = {name: name for name in (*corpus.DEV_PROJECTS, *corpus.OTHER_PROJECTS)}
    engine = MergingEngine()
    ids, stored = corpus.fill(engine, 2500, projects)
    assert len(stored) == len(engine.stored) == 2500
    assert stored == engine.stored
    assert engine.writes > 4000  # half of the writes merged, and were made up for
    # targets that merged away have no id; the others keep theirs, by dev-set position
    assert ids and all(ref.startswith("m_") for ref in ids.values())
    assert len(ids) < len(corpus.targets(projects))


def test_sizes_are_sorted_and_checked() -> None:
    assert scale.sizes("100000,1000, 10000") == [1000, 10000, 100000]
    with pytest.raises(SystemExit, match="positive sizes"):
        scale.sizes("0")


@pytest.mark.slow
def test_a_small_run_stores_every_size_and_reports_latency_and_hits(
    tmp_path: Path, mnemoweave_home: Path
) -> None:
    mnemoweave_home.mkdir()  # run.py makes the run's data dir; here the test does
    args = argparse.Namespace(
        n="150,400",
        queries=30,
        sources="memories,turns",
        embedder="none",
        models=tmp_path / "no-models",
        mode="default",
    )
    report = scale.run(args)
    assert report["sizes"] == [150, 400]
    for n in ("150", "400"):
        one = report["memories"][n]
        assert one["memories"] == int(n)  # stored memories, not writes
        assert one["retrieval"].startswith("lexical-only")
        for key in ("search_latency_ms", "weave_latency_ms"):
            assert 0 < one[key]["p50"] <= one[key]["p95"]
        assert 0 <= one["relevant_hit_rate"] <= 1
        assert 0 <= one["offtopic_knowledge_rate"] <= 1
        assert one["baseline"]["latency_ms"]["p50"] > 0
    assert report["weave_p95_growth"] > 0 and report["search_p95_growth"] > 0
    assert set(report["turns"]) == {"150", "400"}
    for one in report["turns"].values():
        assert one["index_seconds"] >= 0
        assert 0 < one["weave_after_a_write_ms"]["p50"] <= one["weave_after_a_write_ms"]["p95"]
