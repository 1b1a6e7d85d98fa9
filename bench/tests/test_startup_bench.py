from __future__ import annotations

from pathlib import Path

import pytest

import startup
from e2e.npm import CliUnavailable


def test_the_added_time_is_each_sides_median_and_p90_against_the_host_alone() -> None:
    found = startup.summary({"without": [1.0, 2.0, 3.0], "this": [1.5, 2.5, 9.0]})
    assert found["without"] == {"median": 2.0, "p90": 3.0}
    assert found["this"] == {"median": 2.5, "p90": 9.0}
    assert (found["this_added_median_s"], found["this_added_p90_s"]) == (0.5, 6.0)


def test_the_parts_are_timed_on_the_real_launchers(tmp_path: Path) -> None:
    parts = startup.parts(startup.ROOT, tmp_path, probes=2)
    assert parts["mcp_initialize_ms"]["p50"] > 0 and parts["daemon_start_ms"]["p50"] > 0
    assert set(parts["hook_ms_warm"]) == {"claude-code", "codex", "gemini"}
    assert set(parts["hook_ms_warm"]["gemini"]) == set(startup.HOOK_PAYLOADS["gemini"])


def test_one_warm_claude_code_run_each_side(tmp_path: Path) -> None:
    try:
        found = startup.measure_host("claude-code", ["warm"], 1, tmp_path, {"this": startup.ROOT})
    except CliUnavailable as exc:
        pytest.skip(f"Claude Code unavailable: {exc}")
    warm = found["warm"]
    assert warm["without"]["median"] > 0 and warm["this"]["median"] > 0
    assert "this_added_median_s" in warm
