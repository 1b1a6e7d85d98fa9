from __future__ import annotations

from pathlib import Path

import cold


def test_a_tiny_run_times_each_command_against_a_baseline(tmp_path: Path) -> None:
    report = cold.measure(30, calls=2, embedder="none", models=tmp_path / "none", baseline="HEAD")
    assert report["memories"] == 30 and report["retrieval"].startswith("lexical")
    for version in ("current", "baseline"):
        assert set(report[version]) - {"rev"} == {"search_en", "search_zh", "status"}
        assert all(report[version][c]["p50_ms"] > 0 for c in ("search_en", "search_zh", "status"))
    assert report["baseline"]["rev"] == "HEAD" and report["speedup_p50"]["status"] > 0
