"""Capacity: past `max_memories`, a write trashes the least valuable memories (restorable,
audited); preferences, rules and pinned memories are never evicted; status shows the use."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

from mnemoweave.store import audit

DAY = 86400


def _age(engine, ref: str, days: float) -> None:
    engine.db.execute(
        "UPDATE memories SET updated = updated - ?, created = created - ? WHERE id = ?",
        (days * DAY, days * DAY, int(ref[2:])),
    )


def test_past_the_limit_the_least_valuable_go_to_the_trash(engine):
    engine.config = replace(engine.config, max_memories=4)
    refs = {
        "pref": engine.remember("Always answer in English", kind="pref", importance=1).id,
        "rule": engine.remember("Never push to main directly", importance=5).id,
        "trivia": engine.remember("The office plant is a ficus", importance=1).id,
        "old": engine.remember("The staging VM was rebooted on Monday", importance=2).id,
        "recalled": engine.remember("Deploys need the VPN on", importance=2).id,
    }
    _age(engine, refs["old"], 900)
    _age(engine, refs["recalled"], 900)
    engine.db.execute(
        "UPDATE memories SET access_count = 40 WHERE id = ?", (int(refs["recalled"][2:]),)
    )
    assert engine.get(refs["trivia"]).status == "trashed"  # the fifth write: 5 > 4
    fresh = engine.remember("Releases are tagged vYYYY.MM", importance=3)
    assert engine.get(refs["old"]).status == "trashed"  # old, never recalled, importance 2
    assert engine.get(fresh.id).status == "active"  # what the write stored stays
    for name in ("pref", "rule", "recalled"):
        assert engine.get(refs[name]).status == "active", name
    assert engine.status()["capacity"] == {"active": 4, "max_memories": 4}
    evicted = audit.by_actor(engine.db, "capacity")
    assert [(e["target"], e["action"]) for e in evicted] == [
        (refs["trivia"], "evict"),
        (refs["old"], "evict"),
    ]
    assert engine.restore(refs["old"]).action == "restored"


def test_preferences_and_rules_are_never_evicted_even_over_the_limit(engine):
    engine.config = replace(engine.config, max_memories=1)
    engine.remember("Comments in English", kind="pref")
    engine.remember("Never force-push", importance=5)
    engine.remember("Tabs in Makefiles", kind="pref", importance=2)
    assert engine.status()["capacity"] == {"active": 3, "max_memories": 1}


def test_no_limit_by_default_and_status_says_the_use(engine):
    assert engine.config.max_memories == 0
    for n in range(5):
        engine.remember(f"fact number {n}: the port of service {n} is 80{n}", importance=1)
    assert engine.status()["capacity"] == {"active": 5, "max_memories": 0}
    engine.close()
    (engine.home / "config.toml").write_text("max_memories = 10\n")
    shown = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "status"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "capacity  5 of 10 active memories (50%)" in shown.stdout
