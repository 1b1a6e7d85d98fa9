"""The engine end to end with the real models: a bilingual session in, the next one's weave out."""

from mnemoweave.model import SessionEvent, Turn


def test_a_bilingual_session_preference_reaches_the_next_session(real_engine):
    script = [
        ("user", "以后代码注释都用英文，commit message 也用英文。"),
        ("assistant", "好的，以后注释和提交信息都用英文。"),
        ("user", "We are migrating the uploader to asyncio this week."),
        (
            "assistant",
            "Understood. The blocking calls were the cause of the hang; switching "
            "to httpx.AsyncClient fixed it in my test.",
        ),
        ("user", "thanks!"),
    ]
    real_engine.handle(SessionEvent("start", "s1", host="claude-code", project="uploader"))
    for role, text in script:
        real_engine.handle(Turn("s1", role, text, host="claude-code", project="uploader"))
    real_engine.handle(SessionEvent("end", "s1", host="claude-code", project="uploader"))
    kinds = [row[0] for row in real_engine.db.execute("SELECT kind FROM turns ORDER BY id")]
    assert kinds[0] == "pref" and kinds[-1] == "chat"
    cards = real_engine.db.execute("SELECT suggested_kind, evidence FROM cards").fetchall()
    assert ("pref", '["t_1", "t_2"]') in [tuple(c) for c in cards]  # the rule and its reply
    assert real_engine.capsule("s1")["goal"]["ref"] == "t_3"  # the mission
    # the agent reviews: accepts the preference card, which becomes a memory with evidence
    (pref,) = [card for card in real_engine.pending() if card.evidence == ("t_1", "t_2")]
    assert pref.suggested_kind == "pref"
    memory = real_engine.get(real_engine.review(pref.id, "accept").id)
    assert memory.evidence == ("t_1", "t_2") and memory.project == "uploader"
    real_engine.handle(SessionEvent("start", "s2", host="claude-code", project="uploader"))
    woven = real_engine.weave("给 upload 函数加注释", session="s2", project="uploader")
    assert "以后代码注释都用英文" in woven.text
    assert real_engine.db.execute("SELECT ended FROM sessions WHERE id = 's1'").fetchone()[0]


def test_a_new_data_dir_uses_the_shared_models_without_a_build(real_models, tmp_path):
    from mnemoweave import Engine

    with Engine(tmp_path / "other") as engine:  # not the process's data dir, and new
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"
    assert not (tmp_path / "other" / "models").exists()
