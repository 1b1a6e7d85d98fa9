"""The review loop: pending cards, accept (as is or edited), reject, feedback, evidence."""

import json

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput, NotFound


@pytest.fixture
def session(engine):
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。", project="up")
    engine.ingest("s1", "assistant", "好的。", project="up")
    engine.ingest(
        "s1",
        "user",
        "The upload hang was caused by httpx having no timeout; setting it to 10 seconds fixed it.",
        project="up",
    )
    engine.distill()
    return engine


def test_non_chat_turns_await_review_with_their_evidence(session):
    cards = session.pending()
    assert [(c.suggested_kind, c.evidence) for c in cards] == [
        ("pref", ("t_1",)),
        ("conclusion", ("t_3",)),
    ]
    assert session.pending("other") == []  # another project's cards are not shown


def test_accept_promotes_a_card_keeping_its_evidence(session):
    written = session.review("c_1", "accept")
    memory = session.get(written.id)
    assert (memory.kind, memory.evidence, memory.origin) == ("pref", ("t_1",), "card")
    assert memory.body == session.get("t_1").text
    card = session.get("c_1")
    assert (card.status, card.memory_id) == ("accepted", written.id)
    assert [t.id for t in session.evidence(written.id)] == ["t_1"]
    assert [c.id for c in session.pending()] == ["c_2"]
    with pytest.raises(InvalidInput, match="already accepted"):
        session.review("c_1", "accept")


def test_an_edited_summary_is_the_agents_text(session):
    written = session.review(
        "c_2",
        "accept",
        summary="httpx needs a timeout (10 s) for uploads",
        kind="conclusion",
        title="httpx timeout",
    )
    memory = session.get(written.id)
    assert (memory.origin, memory.title, memory.evidence) == ("agent", "httpx timeout", ("t_3",))


def test_reject_is_remembered_with_its_reason(session):
    assert session.review("c_2", "reject", why="too specific").action == "rejected"
    row = session.db.execute("SELECT status, why FROM cards WHERE id = 2").fetchone()
    assert tuple(row) == ("rejected", "too specific")
    assert session.status()["counts"]["memories"] == 0


def test_a_reason_is_stored_with_its_secrets_redacted(session):
    token = "ghp_" + "Zq8vXc4LmN8pQ2" * 3
    session.review("c_1", "reject", why=f"it leaks {token} <private>my diary</private>")
    (why,) = session.db.execute("SELECT why FROM cards WHERE id = 1").fetchone()
    (audit,) = session.db.execute("SELECT after FROM audit WHERE action = 'reject'").fetchone()
    assert why == "it leaks [REDACTED:github-token]" and json.loads(audit)["why"] == why


def test_pending_cards_are_counted_in_the_nudge_never_woven_as_knowledge(session):
    woven = session.weave("httpx timeout upload hang", project="up")
    assert not [line for line in woven.knowledge if line.ref.startswith("m_")]
    assert "2 cards to review" in woven.text


def test_feedback_moves_weight_within_bounds_and_outdated_retires(engine):
    ref = engine.remember("Deploy with make deploy").id
    for _ in range(10):
        engine.feedback(ref, "useful")
    assert engine.get(ref).weight == 2.0
    for _ in range(10):
        engine.feedback(ref, "wrong")
    assert engine.get(ref).weight == 0.25
    assert engine.feedback(ref, "outdated").action == "superseded"
    assert engine.search("deploy") == []
    actions = [r[0] for r in engine.db.execute("SELECT action FROM audit WHERE target = ?", (ref,))]
    assert actions.count("feedback") == 21
    with pytest.raises(InvalidInput):
        engine.feedback(ref, "meh")
    with pytest.raises(NotFound):
        engine.feedback("m_99", "useful")


def test_rehydrate_by_session_window_and_words(session):
    assert [t.id for t in session.rehydrate(session="s1")] == ["t_1", "t_2", "t_3"]
    first = session.get("t_1").ts
    assert [t.id for t in session.rehydrate(session="s1", end=first)] == ["t_1"]
    assert [t.id for t in session.rehydrate(match="httpx timeout")] == ["t_3"]
    with pytest.raises(InvalidInput):
        session.rehydrate()


def test_review_through_the_cli(session, mnemoweave_home):
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(cli, list(args), catch_exceptions=False)
        return result

    cards = json.loads(run("pending", "--project", "up", "--json").stdout)["cards"]
    assert [c["id"] for c in cards] == ["c_1", "c_2"]
    accepted = json.loads(run("review", "c_1", "accept", "--global", "--json").stdout)
    assert accepted["action"] == "new"
    assert json.loads(run("get", accepted["id"], "--json").stdout)["project"] == ""
    got = json.loads(run("get", accepted["id"], "--evidence", "--json").stdout)
    assert [t["id"] for t in got["evidence_turns"]] == ["t_1"]
    assert run("review", "c_2", "reject", "--why", "noise").stdout.startswith("rejected c_2")
    assert run("review", "c_2", "accept").exit_code == 2  # already decided
    assert run("review", "c_1", "reject", "--kind", "pref").exit_code == 2
    assert run("review", "c_1", "reject", "--global").exit_code == 2
    assert run("feedback", accepted["id"], "useful").exit_code == 0
    lines = run("rehydrate", "--session", "s1").stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["t_1", "t_2", "t_3"]
    assert run("rehydrate").exit_code == 2


def test_accepting_a_card_writes_the_memory_and_the_decision_together(session, monkeypatch):
    """Both in one transaction: a decision that fails leaves no memory behind."""
    from mnemoweave.store import cards as cards_table

    def broken(*args, **kwargs):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(cards_table, "decide", broken)
    with pytest.raises(RuntimeError, match="disk went away"):
        session.review("c_1", "accept")
    assert session.list_memories() == [] and session.get("c_1").status == "pending"
    monkeypatch.undo()
    written = session.review("c_1", "accept")
    assert [m.id for m in session.list_memories()] == [written.id]


def test_remember_names_a_clash_in_plain_output(mnemoweave_home):
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False).stdout

    assert run("remember", "The upload timeout is 30 seconds.", "-p", "up") == "new m_1\n"
    out = run("remember", "The upload timeout is 60 seconds.", "-p", "up")
    assert out.startswith("new m_2 (conflicts with m_1") or out.startswith("new m_2 (updates m_1")
    assert "`mnemoweave supersede m_1 m_2` retires m_1" in out
