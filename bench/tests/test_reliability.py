"""The reliability benchmark at small counts: the same code the full runs use."""

from __future__ import annotations

import pytest

from reliability import bursts, concurrency, crash, huge_prompt, killed_import


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


def test_a_burst_of_cli_writes_loses_none(tmp_path_factory):
    report = bursts(tmp_path_factory.mktemp("rel"), writes=12)
    for mode in ("daemon", "in_process"):
        assert report[mode]["errors"] == [] and report[mode]["lost"] == 0, report
        assert report[mode]["stored"] == 12


def test_a_huge_prompt_is_stored_bounded_while_a_search_answers(lexical_home):
    report = huge_prompt(lexical_home, megabytes=2)
    assert report["hook_rc"] == 0 and report["hook_stderr"] == ""
    assert report["stored_chars"] and max(report["stored_chars"]) < 200_100
    assert report["searches_during"] > 0


def test_a_killed_import_is_reported_and_kept(lexical_home):
    """Lexical-only, the daemon answers right after the commit, so the kill may come before
    or after its answer: the CLI's report must match either way."""
    report = killed_import(lexical_home, turns=300)
    assert report["cli_rc"] == 0 and report["lost"] == 0
    if report["cli_said"]:  # killed before it answered: sent again, found stored
        assert report["cli_said"][0].startswith("the daemon stopped before answering POST")
        assert report["cli_counts"] == "0 turns, 0 memories, 0 merged, 300 duplicate, 0 skipped"
    else:
        assert report["cli_counts"] == "300 turns, 0 memories, 0 merged, 0 duplicate, 0 skipped"
    assert report["index_consistent_without_repair"]
