"""The proxy benchmark at a tiny size: the report's shape, every proxied call woven, and
nothing left running."""

from __future__ import annotations

from pathlib import Path

import pytest

import proxy


@pytest.mark.slow
def test_a_tiny_run_reports_both_paths_and_the_added_latency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOWEAVE_PROXY_BUDGET_MS", "10000")  # a busy machine is no failure
    report = proxy.measure(
        [50], calls=4, warmup=1, pause=0.01, embedder="none", models=tmp_path / "none"
    )
    (size,) = report["sizes"].values()
    for path in ("direct", "proxy"):
        for kind in ("ttfb", "total"):
            assert size[path][kind]["p50"] > 0 and size[path][kind]["p95"] > 0
    assert set(size["added"]) == {"ttfb_p50", "ttfb_p95", "total_p50", "total_p95"}
    assert size["memories"] == 50 and size["woven_rate"] == 1.0 and size["weave_skipped"] == 0
    assert report["mode"].startswith("lexical-only")
    assert set(report["meets"]) == {"added_ttfb_p95"}
