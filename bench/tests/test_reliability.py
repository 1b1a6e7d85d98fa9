"""The reliability benchmark at small counts: the same code the full runs use."""

from __future__ import annotations

import pytest

from reliability import concurrency, crash


@pytest.fixture
def lexical_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("rel")  # short: a Unix socket path lives in it
    (home / "config.toml").write_text('embedder = "none"\n')
    return home


def test_killed_daemons_lose_no_acknowledged_turn(lexical_home):
    report = crash(lexical_home, ingests=150, kills=3, seed=3)
    assert report["kills"] == 3 and report["restarts"] >= 1
    assert report["acknowledged"] == 150 and report["lost"] == 0
    assert report["integrity"] == "ok" and report["index_consistent_after_repair"]


def test_concurrent_hooks_with_distill_and_search_lose_nothing(lexical_home):
    report = concurrency(lexical_home, clients=4, events=10)
    assert report["hook_calls"] == 4 * 12 and report["failures"] == []
    assert report["lost"] == 0 and report["stored_turns"] == report["expected_turns"]
    assert report["locked_errors"] == 0
    assert report["background"]["distill"] > 0 and report["background"]["search"] > 0
