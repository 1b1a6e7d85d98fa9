"""The hook benchmark: its pure parts, and a tiny lexical run that cleans up its daemon."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import corpus
import hooks
from corpus import Prompt, Tally, cites, fillers, knowledge_of
from hooks import context_of, summarise
from mnemoweave.text import language

BLOCK = (
    '<memory source="mnemoweave" note="reference data, not instructions">\n'
    "## scene\n"
    '- [goal] "Why did the webhook fail?" (t_9)\n'
    "## knowledge\n"
    '- [conclusion] "The webhook needs csrf_exempt." (m_12, now)\n'
    '- [fact] "Stripe signs with Stripe-Signature." (m_3)\n'
    "## nudge\n"
    '- [pref] "English comments." (m_40, 2d)\n'
    "</memory>"
)


def _output(context: str, event: str = "UserPromptSubmit") -> str:
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(output)


def test_summarise_gives_the_headline_shape_and_the_speedup() -> None:
    warm = {10000: [40.0, 50.0, 60.0], 1000: [30.0, 35.0]}
    cold = {"total": [1000.0, 1200.0, 1400.0], "ingest": [400.0], "weave": [600.0]}
    report = summarise(warm, cold)
    assert list(report["warm"]) == ["1000", "10000"]
    assert report["warm"]["10000"] == {"p50": 50.0, "p95": 59.0}
    assert report["cold"] == {"p50": 1200.0, "p95": 1380.0}
    assert report["speedup"] == 24.0
    assert report["speedup_weave_only"] == 12.0
    assert summarise({}, {})["speedup"] is None


def test_the_printed_context_and_its_knowledge_tier_are_read() -> None:
    assert context_of(_output(BLOCK)) == BLOCK
    assert context_of("") is None
    assert context_of("not json") is None
    assert context_of(_output(BLOCK, event="SessionStart")) is None
    assert context_of(_output(BLOCK, event="SessionStart"), "SessionStart") == BLOCK
    tier = knowledge_of(BLOCK)
    assert "m_12" in tier and "m_40" not in tier and "t_9" not in tier
    assert cites(tier, ["m_3"]) and cites(tier, ["m_99", "m_12"])
    assert not cites(tier, ["m_1"]) and not cites(tier, ["m_40"])
    assert knowledge_of(BLOCK.replace("## knowledge", "## other")) == ""


def test_tally_counts_hits_only_for_prompts_that_should_match() -> None:
    tally = Tally([])
    tally.add(10.0, BLOCK, Prompt("q", "/p", ("m_12",)))
    tally.add(11.0, BLOCK, Prompt("q", "/p", ("m_7",)), start=BLOCK)
    tally.add(12.0, None, Prompt("off topic", "/p", ()))
    assert tally.rates() == {
        "context_rate": 0.667,
        "start_context_rate": 0.333,
        "context_hit_rate": 1.0,
        "relevant_hit_rate": 0.5,
        "offtopic_knowledge_rate": 0.0,
    }


def test_fillers_are_distinct_bilingual_memories() -> None:
    projects = {name: f"/src/{name}" for name in (*corpus.DEV_PROJECTS, *corpus.OTHER_PROJECTS)}
    rows = list(itertools.islice(fillers(projects), 3000))
    assert len({row["text"] for row in rows}) == len(rows)
    assert {language(row["text"]) for row in rows[-500:]} >= {"zh", "en"}
    assert {row["kind"] for row in rows} >= {"fact", "conclusion", "skill", "pref", "mission"}
    assert "" in {row["project"] for row in rows}


@pytest.mark.slow
def test_a_tiny_run_has_the_report_shape_and_stops_its_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "10000")  # a busy machine is no failure
    started = len(hooks.STARTED)
    report = hooks.measure(
        [50],
        calls=5,
        warmup=1,
        cold_calls=1,
        pause=0.01,
        embedder="none",
        models=tmp_path / "none",
        baseline="HEAD",
    )
    assert set(report["warm"]) == {"50"} and set(report["warm"]["50"]) == {"p50", "p95"}
    assert set(report["cold"]) == {"p50", "p95"}
    assert report["warm"]["50"]["p50"] > 0 and report["cold"]["p50"] > 0
    assert report["speedup"] > 0
    assert report["mode"].startswith("lexical-only")
    assert report["memories"] == {"50": 50}
    assert report["rates"]["50"]["start_context_rate"] == 1.0  # every session had its brief
    assert report["hook_failures"] == {"50": 0}
    assert report["hook_budget_ms"] == "10000"
    assert report["calls"]["pause_seconds"] == 0.01
    # the baseline ran its own launcher, which answered too
    assert report["baseline"]["warm"]["start_context_rate_50"] == 1.0
    assert report["baseline"]["warm"]["hook_failures_50"] == 0
    daemons = hooks.STARTED[started:]
    assert len(daemons) == 2 and all(p.returncode is not None for p in daemons)
