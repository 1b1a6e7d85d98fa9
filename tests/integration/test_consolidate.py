"""Consolidation with the real models: a proposal changes no memory, apply carries out
what was picked in audited steps, rollback restores every row exactly, and a store that
changed since the proposal is refused, naming the item."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.upkeep.consolidate import idle_cards

DAY = 86400.0
PROJECT = "github.com/acme/uploader"


def memories(engine) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in engine.db.execute("SELECT * FROM memories ORDER BY id")]


@pytest.fixture
def store(real_engine):
    """Two near-duplicates (written apart: the write-time merge is off meanwhile), an
    update of a value, a chain, a stale trivia, and memories that are fine."""
    engine = real_engine
    merging = engine.config
    engine.config = replace(merging, dedup_threshold=1.01)
    refs = {
        "dup_a": engine.remember("Run ruff before every merge.", kind="pref", project=PROJECT),
        "dup_b": engine.remember("Run ruff before each merge.", kind="pref", project=PROJECT),
        "old": engine.remember(
            "The upload timeout is 10 seconds.", kind="conclusion", project=PROJECT
        ),
        "new": engine.remember(
            "Actually, make the upload timeout 30 seconds.", kind="conclusion", project=PROJECT
        ),
        "trivia": engine.remember(
            "The office plant is a ficus.", kind="fact", project=PROJECT, importance=1
        ),
        "fine": engine.remember("Releases are tagged vYYYY.MM.", kind="fact", project=PROJECT),
        "elsewhere": engine.remember("Run ruff before every merge.", kind="pref", project="other"),
    }
    engine.config = merging
    ids = {name: written.ref for name, written in refs.items()}
    engine.db.execute(  # 3.6 project half-lives (52 weeks): strength 0.08, stale
        "UPDATE memories SET updated = updated - 1300 * 86400 WHERE id = ?",
        (int(ids["trivia"][2:]),),
    )
    engine.db.execute(  # the new value came a day after the old
        "UPDATE memories SET updated = updated + 86400 WHERE id = ?", (int(ids["new"][2:]),)
    )
    return engine, ids


def test_a_proposal_finds_what_to_tidy_and_changes_no_memory(store):
    engine, ids = store
    before = memories(engine)
    run = engine.consolidate_propose(project=PROJECT, since="30d")
    assert memories(engine) == before
    items = run["items"]
    (dups,) = [item for item in items.values() if item["type"] == "duplicates"]
    assert {dups["keep"], *dups["merge"]} == {ids["dup_a"], ids["dup_b"]}
    (update,) = [item for item in items.values() if item["type"] == "update"]
    assert (update["older"], update["newer"], update["resolve"]) == (
        ids["old"],
        ids["new"],
        "newer",
    )
    (stale,) = [item for item in items.values() if item["type"] == "stale"]
    assert stale["id"] == ids["trivia"]
    named = json.dumps(items)
    assert ids["fine"] not in named and ids["elsewhere"] not in named


def test_apply_then_rollback_restores_every_row(store):
    engine, ids = store
    before = memories(engine)
    run = engine.consolidate_propose(project=PROJECT)
    done = engine.consolidate_apply(run["run"])
    assert set(done["applied"]) == set(run["items"])
    status = {ref: engine.get(ref).status for ref in ids.values()}
    assert status[ids["old"]] == "superseded" and status[ids["trivia"]] == "trashed"
    assert engine.get(ids["old"]).superseded_by == ids["new"]
    assert sorted(status.values()).count("active") == 4
    assert len(memories(engine)) == len(before)  # nothing deleted
    audited = engine.db.execute(
        "SELECT count(*) FROM audit WHERE actor = ? AND action = 'consolidate'",
        (f"consolidate {run['run']}",),
    ).fetchone()[0]
    assert audited >= 4  # the merged, the kept, the old value's pair, the stale one
    engine.consolidate_rollback(run["run"])
    assert memories(engine) == before
    with pytest.raises(InvalidInput, match="rolled back"):
        engine.consolidate_rollback(run["run"])


def test_apply_only_the_items_named(store):
    engine, ids = store
    run = engine.consolidate_propose(project=PROJECT)
    (stale_item,) = [n for n, item in run["items"].items() if item["type"] == "stale"]
    assert engine.consolidate_apply(run["run"], [stale_item])["applied"] == [stale_item]
    assert engine.get(ids["trivia"]).status == "trashed"
    assert engine.get(ids["old"]).status == "active"
    with pytest.raises(InvalidInput, match="no item zz"):
        engine.consolidate_apply(engine.consolidate_propose()["run"], ["zz"])


def test_a_store_changed_since_the_proposal_is_refused_naming_the_item(store):
    engine, ids = store
    run = engine.consolidate_propose(project=PROJECT)
    (name,) = [n for n, item in run["items"].items() if item["type"] == "update"]
    engine.feedback(ids["new"], "useful")  # the newer memory changed (its weight, updated)
    before = memories(engine)
    with pytest.raises(InvalidInput, match=rf"^{name}: {ids['new']} changed since"):
        engine.consolidate_apply(run["run"])
    assert memories(engine) == before


def test_the_cli_proposes_applies_and_rolls_back(store, monkeypatch):
    engine, ids = store
    engine.close()
    runner = CliRunner()
    proposed = runner.invoke(cli, ["consolidate", "propose", "--project", PROJECT, "--json"])
    assert proposed.exit_code == 0, proposed.output
    run = json.loads(proposed.output)["run"]
    shown = runner.invoke(cli, ["consolidate", "propose", "--project", PROJECT])
    assert "update" in shown.output and "stale: trash" in shown.output
    applied = runner.invoke(cli, ["consolidate", "apply", run])
    assert applied.exit_code == 0 and applied.output.startswith(f"{run}: applied")
    again = runner.invoke(cli, ["consolidate", "apply", run])
    assert again.exit_code == 2 and "already applied" in again.output
    assert runner.invoke(cli, ["consolidate", "rollback", run]).exit_code == 0
    bad = runner.invoke(cli, ["consolidate", "propose", "--since", "soon"])
    assert bad.exit_code == 2 and "--since" in bad.output


def test_a_clash_at_write_time_is_named_and_held_until_decided(real_engine):
    engine = real_engine
    old = engine.remember("The upload timeout is 10 seconds.", kind="conclusion", project=PROJECT)
    engine.ingest(
        "s1",
        "user",
        "We decided the upload timeout is now 30 seconds, since big files failed.",
        project=PROJECT,
    )
    engine.distill()
    (card,) = engine.pending(PROJECT)
    held = engine.review(card.id, "accept")
    assert (held.action, held.id) == ("held", card.id) and held.reason.startswith(
        f"updates {old.id} ("
    )
    assert engine.get(card.id).conflicts == (old.id,)
    calm = engine.remember("Releases are tagged vYYYY.MM.", kind="fact", project=PROJECT)
    assert calm.reason == ""  # no clash, no line
    engine.forget(calm.id)
    with pytest.raises(InvalidInput, match=f"{calm.id} is trashed, not active"):
        engine.review(card.id, "accept", replaces=calm.id)
    kept = engine.review(card.id, "accept", keep_both=True)
    assert kept.action == "new" and engine.get(old.id).status == "active"
    said = engine.remember(
        "Make the upload timeout 60 seconds instead.", project=PROJECT, kind="conclusion"
    )
    assert said.action == "new" and f"mnemoweave supersede {old.id} {said.id}" in said.reason


def test_idle_cards_ask_once_and_accepting_one_applies_its_item(store):
    engine, ids = store
    made = idle_cards(engine)
    cards = {card.id: card for card in engine.pending(None)}
    assert set(made) <= set(cards) and len(made) == 2  # the duplicates and the update
    merge = next(cards[c] for c in made if cards[c].summary.startswith("Merge near-duplicates"))
    update = next(cards[c] for c in made if " updates " in cards[c].summary)
    assert ids["old"] in update.summary and ids["new"] in update.summary
    before = memories(engine)
    assert engine.review(update.id, "reject").action == "rejected"
    assert memories(engine) == before  # rejecting applies nothing
    accepted = engine.review(merge.id, "accept")
    assert accepted.action == "consolidated" and "consolidate rollback r_" in accepted.reason
    statuses = {engine.get(ids[n]).status for n in ("dup_a", "dup_b")}
    assert statuses == {"active", "superseded"}
    again = idle_cards(engine)
    assert again == []  # neither question is asked twice


def test_the_daemon_looks_only_when_quiet_and_due(store):
    from mnemoweave.daemon import idle
    from mnemoweave.daemon.routes import Context

    engine, _ = store
    work = idle.IdleWork(Context(engine), enabled=True)
    work.tick(idle.QUIET_SECONDS - 1, now=1000.0)
    assert work.thread is None  # not quiet long enough
    work.tick(idle.QUIET_SECONDS, now=1000.0)
    work.thread.join(timeout=60)
    assert len(engine.pending(None)) == 2
    assert work.run() == []  # a proposal was made today: not due again
    off = idle.IdleWork(Context(engine), enabled=False)
    off.tick(10 * idle.QUIET_SECONDS, now=5000.0)
    assert off.thread is None
