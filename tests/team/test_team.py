"""Team memory against a real Chroma server: two members in two clones of one repository."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from team_servers import Server, clone, member

from mnemoweave import Engine
from mnemoweave.projects import project_from_cwd
from mnemoweave.recall.weave import Weave
from mnemoweave.team import outbox
from mnemoweave.team.sync import connect, status, sync

PITFALL = (
    "Pitfall: the staging deploy script silently skips database migrations when"
    " DEPLOY_ENV is unset, so always export DEPLOY_ENV before running deploy.sh"
)
OWN = [
    "the deploy runs from CI on every merge to main",
    "unit tests live beside the code in tests/unit",
    "the frontend is built with vite and served by nginx",
    "we review every pull request within one working day",
    "logs go to loki, metrics to prometheus, traces to tempo",
    "the api gateway rate limits each client to 100 requests per second",
    "feature flags are kept in launchdarkly and cleaned up monthly",
    "the mobile app releases every second thursday",
    "postgres backups run nightly and are restored weekly as a drill",
    "python services are formatted with ruff and typed with mypy",
    "the on-call rotation changes every monday at 10:00",
    "customer data never leaves the eu region",
]
ASK = "why did the staging deploy skip the database migrations?"


def accept_shared(engine: Engine, project: str, text: str) -> str:
    """A's pitfall becomes a card (distilled from its turn) and is accepted with --share."""
    engine.ingest("s-a", "user", text, project=project)
    engine.ingest("s-a", "assistant", "Noted.", project=project)
    engine.distill()
    cards = [c for c in engine.pending(project) if "DEPLOY_ENV" in c.summary]
    assert cards, "the pitfall turn made no card"
    written = engine.review(cards[0].id, "accept", kind="fact", summary=text, share=True)
    assert written.action == "new", written
    return written.ref


def mirrored_texts(engine: Engine, project: str) -> str:
    woven: Weave = engine.weave(ASK, project=project, budget=2000)
    return woven.text


def test_a_shares_b_sees_then_a_forgets(server: Server, tmp_path: Path, models: Path):
    project = project_from_cwd(str(clone(tmp_path, "a")))
    assert project == project_from_cwd(str(clone(tmp_path, "b")))  # two clones, one project
    with (
        Engine(member(tmp_path, "alice", server)) as a,
        Engine(member(tmp_path, "bob", server)) as b,
    ):
        a.ingest("s-a0", "user", "RAWTURN-zq81 only in a raw turn", project=project)
        a.remember("GLOBALPREF-kk27 I like my diffs small", kind="pref", project="")
        ref = accept_shared(a, project, PITFALL)
        assert "error" not in sync(a)
        b.remember_many({"text": t, "project": project} for t in OWN)  # B's own memory
        assert "DEPLOY_ENV" not in mirrored_texts(b, project)  # not synced yet
        assert sync(b)["mirrored"] == 1
        woven = mirrored_texts(b, project)
        assert "DEPLOY_ENV" in woven and "team · alice@acme.dev" in woven
        hits = b.search(ASK, project=project, source="all")
        assert hits[0].id.startswith("team:") and hits[0].extra["authors"] == ["alice@acme.dev"]

        a.forget(ref)
        assert sync(a)["retracted"] == 1
        assert sync(b)["removed"] == 1
        assert "DEPLOY_ENV" not in mirrored_texts(b, project)
        assert b.search(ASK, project=project, source="team") == []

    stored = b"".join(p.read_bytes() for p in server.path.rglob("*") if p.is_file())
    assert b"RAWTURN-zq81" not in stored and b"GLOBALPREF-kk27" not in stored


def test_same_fact_from_two_members_is_one_record(server: Server, tmp_path: Path, models: Path):
    project = project_from_cwd(str(clone(tmp_path, "a")))
    fact = "The billing service rounds every invoice total half-up to two decimals"
    listed = f'["{project}"]'
    with (
        Engine(member(tmp_path, "alice", server, team_projects=listed)) as a,
        Engine(member(tmp_path, "bob", server, team_projects=listed)) as b,
    ):
        a.remember(fact, project=project)
        b.remember(fact + ".", project=project)  # the same fact, normalised
        assert sync(a)["published"] == 1 and sync(b)["published"] == 1
        got = on_the_server(a)
        assert len(got) == 1
        assert got[0].record.authors == ("alice@acme.dev", "bob@acme.dev")
        assert b"half-up to two decimals" in b"".join(
            p.read_bytes() for p in server.path.rglob("*") if p.is_file()
        )  # the grep above can find a shared text: its silence means something


def on_the_server(engine: Engine):
    """Every record the team's server holds (tombstones too), as this member reads them."""
    return connect(engine).changed(0.0, 1000, 0)


@pytest.mark.slow
def test_server_killed_during_a_publish_of_500(
    server: Server, tmp_path: Path, models: Path, monkeypatch: pytest.MonkeyPatch
):
    project = project_from_cwd(str(clone(tmp_path, "a")))
    texts = [
        f"Team rule {n}: service s{n} owns queue q{n} and pages team t{n % 7}" for n in range(500)
    ]
    monkeypatch.setattr(outbox, "BATCH", 10)
    listed = f'["{project}"]'  # near-duplicate merging off: 500 templated texts stay 500
    with Engine(
        member(tmp_path, "alice", server, team_projects=listed, dedup_threshold="1.0")
    ) as a:
        a.remember_many({"text": t, "project": project} for t in texts)
        assert len(a.list_memories(1000, project=project)) == 500
        server_side = connect(a)
        outcome: dict[str, Any] = {}
        pushing = threading.Thread(target=lambda: outcome.update(sync(a)))
        pushing.start()
        deadline = time.monotonic() + 120
        while server_side.count() < 50 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()
        pushing.join(120)
        assert not pushing.is_alive()
        assert "error" in outcome, outcome  # killed before the end
        left = status(a, probe=False)
        assert 0 < left["queued"] < 500 and left["last_error"]

        server.start()  # the same --path
        assert "error" not in sync(a)
        assert status(a, probe=False)["queued"] == 0
        got = [c.record for c in on_the_server(a)]
        assert sorted(r.text for r in got) == sorted(texts)  # each exactly once
        assert {r.authors for r in got} == {("alice@acme.dev",)}


def test_wrong_token_is_reported_and_hooks_are_unaffected(
    server: Server, tmp_path: Path, models: Path
):
    project = project_from_cwd(str(clone(tmp_path, "a")))
    with Engine(member(tmp_path, "eve", server, token="not-the-token")) as eve:
        eve.remember_many({"text": t, "project": project} for t in [PITFALL, *OWN])
        found = status(eve)
        assert found["state"] == "error" and "refused the token" in found["error"]
        assert "refused the token" in sync(eve)["error"]
        began = time.monotonic()
        woven = eve.weave(ASK, project=project, session="s-1", record=True)
        assert "DEPLOY_ENV" in woven.text and time.monotonic() - began < 2.0


def test_an_own_memory_ranks_above_the_same_team_memory(
    server: Server, tmp_path: Path, models: Path
):
    project = project_from_cwd(str(clone(tmp_path, "a")))
    with (
        Engine(member(tmp_path, "alice", server)) as a,
        Engine(member(tmp_path, "bob", server)) as b,
    ):
        accept_shared(a, project, PITFALL)
        sync(a)
        b.remember_many({"text": t, "project": project} for t in [PITFALL, *OWN])  # not shared
        assert sync(b)["mirrored"] == 1
        hits = b.search(ASK, project=project, source="all")
        assert [h.id.split("_")[0].split(":")[0] for h in hits[:2]] == ["m", "team"]
        assert hits[0].text == hits[1].text and hits[0].score > hits[1].score


def test_a_member_with_another_model_is_refused_in_one_line(
    server: Server, tmp_path: Path, models: Path
):
    with Engine(member(tmp_path, "alice", server)) as a:
        assert "error" not in sync(a)  # the collection records use-m3
    with Engine(member(tmp_path, "carol", server, embedder="e5-small")) as c:
        error = sync(c)["error"]
        assert error == (
            "team acme uses the embedding model use-m3, this machine e5-small:"
            " set embedder = 'use-m3' to join it"
        )
