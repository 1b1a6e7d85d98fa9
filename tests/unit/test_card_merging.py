"""Identical cards merge: the same summary (normalised) of the same kind and project, said
again in another session or on another host, adds evidence instead of a second card; one
already rejected, or already an active memory, is not proposed again."""

import json

RULE_ZH = "以后提交信息都用英文。"
RULE_EN = "Never commit directly to main."


def _tell(engine, session, text, *, host="claude-code", project="up"):
    ref = engine.ingest(session, "user", text, host=host, project=project).id
    return ref, engine.distill(session=session)


def _audit(engine, action):
    rows = engine.db.execute(
        "SELECT target, before, after FROM audit WHERE action = ? ORDER BY id", (action,)
    )
    return [(row[0], json.loads(row[1] or "null"), json.loads(row[2] or "null")) for row in rows]


def test_the_same_card_from_another_session_and_host_adds_its_evidence(engine):
    first, (card,) = _tell(engine, "s1", RULE_ZH)
    second, proposed = _tell(engine, "s2", "以后提交信息都用英文", host="opencode")
    assert proposed == []  # nothing new to review
    (pending,) = engine.pending()
    assert (pending.id, pending.evidence) == (card.id, (first, second))
    assert pending.summary == RULE_ZH  # the first wording stays
    assert _audit(engine, "merge") == [
        (card.id, {"evidence": [first]}, {"evidence": [first, second]})
    ]


def test_case_width_and_spacing_do_not_make_a_new_card(engine):
    _tell(engine, "s1", RULE_EN)
    _tell(engine, "s2", "never  commit directly to MAIN")
    (card,) = engine.pending()
    assert len(card.evidence) == 2


def test_another_project_or_other_words_make_their_own_card(engine):
    _tell(engine, "s1", RULE_EN, project="up")
    _tell(engine, "s2", RULE_EN, project="down")
    _tell(engine, "s3", "Never commit directly to the release branch.", project="up")
    cards = engine.pending()
    assert [(c.project, len(c.evidence)) for c in cards] == [("up", 1), ("down", 1), ("up", 1)]


def test_a_rejected_card_is_not_proposed_again_nor_given_evidence(engine):
    first, (card,) = _tell(engine, "s1", RULE_EN)
    engine.review(card.id, "reject", why="we do commit to main")
    _, proposed = _tell(engine, "s2", RULE_EN)
    assert proposed == [] and engine.pending() == []
    rejected = engine.get(card.id)
    assert (rejected.status, rejected.evidence) == ("rejected", (first,))
    assert _audit(engine, "merge") == []


def test_an_accepted_card_whose_memory_is_active_is_not_proposed_again(engine):
    _, (card,) = _tell(engine, "s1", RULE_ZH)
    memory = engine.review(card.id, "accept").id
    _, proposed = _tell(engine, "s2", "以后提交信息都用英文！")
    assert proposed == [] and engine.pending() == []
    engine.forget(memory)  # once the memory is gone, the rule may be proposed again
    _, (again,) = _tell(engine, "s3", RULE_ZH)
    assert again.id != card.id and again.status == "pending"


def test_a_merge_survives_a_rerun_and_counts_once(engine):
    _tell(engine, "s1", RULE_EN)
    _tell(engine, "s2", RULE_EN)
    engine.db.execute("UPDATE turns SET distilled = NULL")  # walk the same history again
    assert engine.distill() == []
    (card,) = engine.pending()
    assert len(card.evidence) == 2 and len(_audit(engine, "merge")) == 1
