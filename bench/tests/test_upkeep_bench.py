"""The upkeep benchmark at a tiny size (lexical-only): the code the 10,000-memory run uses."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import upkeep


def test_sizes_are_sorted_and_checked() -> None:
    assert upkeep.sizes("10000, 100") == [100, 10000]
    with pytest.raises(SystemExit, match="positive sizes"):
        upkeep.sizes("0")


def test_a_tiny_run_backs_up_and_restores_every_memory(
    tmp_path: Path, mnemoweave_home: Path
) -> None:
    mnemoweave_home.mkdir()  # run.py makes the run's data dir; here the test does
    args = argparse.Namespace(sizes="60", embedder="none", models=tmp_path / "no-models")
    report = upkeep.run(args)
    one = report["60"]
    assert one["memories"] == one["restored_memories"] == 60
    assert 0 < one["backup_seconds"] < upkeep.TARGET_SECONDS and one["restore_seconds"] > 0
    assert one["backup_mb"] > 0 and one["restore_doctor_ok"]
    assert one["restore_retrieval"].startswith("lexical-only")
    assert report["backup_within_target"] is True and report["propose_within_target"] is True
    assert one["propose_seconds"] >= 0 and one["proposed_items"] >= 0
    left = [p.name for p in mnemoweave_home.iterdir()]
    assert left in ([], ["cache"]), left  # the run's stores are gone (jieba's cache stays)
