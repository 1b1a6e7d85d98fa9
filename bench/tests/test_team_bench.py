"""The team benchmark at small sizes, with a real team server and the built model: the code
the 100,000-memory run uses."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

import team

BUILT = os.environ.get("MNEMOWEAVE_MODELS", "")  # read before the autouse fixture clears it


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The caller's built models (MNEMOWEAVE_MODELS), else use-m3 built here."""
    if BUILT and (Path(BUILT) / "use-m3").is_dir():
        return Path(BUILT)
    from mnemoweave.embed import build_models

    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "models"))
    build_models(["use-m3"])
    return tmp_path / "models"


def test_team_bench_syncs_and_times_a_small_team(models: Path, mnemoweave_home: Path) -> None:
    mnemoweave_home.mkdir(parents=True, exist_ok=True)
    args = argparse.Namespace(
        n="30,60", own=40, queries=5, fresh=7, embedder="use-m3", models=models
    )
    report = team.run(args)
    for n in (30, 60):
        done = report["sizes"][str(n)]
        assert done["errors"] == [] and done["mirrored"] == n + 7
        assert 7 <= done["incremental_records"] < n  # what is new, not everything again
        assert done["weave_latency_ms"]["p95"] is not None
        assert done["baseline"]["search_latency_ms"]["p95"] is not None
