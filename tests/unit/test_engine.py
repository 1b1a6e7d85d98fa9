import json

import pytest

from mnemoweave.errors import InvalidInput, NotFound


def ids(hits):
    return [hit.id for hit in hits]


def test_chinese_word_inside_a_sentence_is_found(engine):
    zh = engine.remember("以后代码注释都用英文，提交信息也用英文。", kind="pref")
    engine.remember("The deploy script lives in tools/deploy.sh", kind="fact")
    assert zh.action == "new"
    assert ids(engine.search("注释")) == [zh.id]
    assert ids(engine.search("代码注释用什么语言"))[0] == zh.id


def test_english_word_is_found(engine):
    en = engine.remember("Pin httpx timeouts to 10 seconds; the uploader hung without them.")
    engine.remember("以后代码注释都用英文")
    assert ids(engine.search("timeouts")) == [en.id]
    assert ids(engine.search("HTTPX")) == [en.id]


def test_exact_duplicates_merge(engine):
    first = engine.remember("Use tabs in Makefiles.", tags=["style"], importance=2)
    again = engine.remember("use  tabs in makefiles", tags=["make"], importance=4)
    assert (first.action, again.action) == ("new", "merged")
    assert again.id == first.id
    memory = engine.get(first.id)
    assert memory.tags == ("style", "make") and memory.importance == 4
    assert len(engine.list_memories()) == 1
    # another project is another scope
    assert engine.remember("Use tabs in Makefiles.", project="other").action == "new"


def test_secrets_are_redacted_and_private_spans_dropped(engine):
    result = engine.remember(
        "deploy key sk-ant-api03-AbCdEf0123456789GhIjKl <private>my pin 1234</private> done"
    )
    body = engine.get(result.id).body
    assert "sk-ant" not in body and "1234" not in body and "[REDACTED:api-key]" in body
    skipped = engine.remember("<private>nothing else</private>")
    assert skipped.action == "skipped" and skipped.id is None
    assert engine.status()["counts"]["memories"] == 1


def test_forget_restore_purge(engine):
    ref = engine.remember("The staging database is read-only on Fridays").id
    assert engine.forget(ref).action == "trashed"
    assert engine.search("staging") == []
    assert ids(engine.list_memories(status="trashed")) == [ref]
    assert engine.get(ref).status == "trashed"
    assert engine.forget(ref).action == "unchanged"
    assert engine.restore(ref).action == "restored"
    assert ids(engine.search("staging")) == [ref]
    assert engine.purge(ref).action == "purged"
    with pytest.raises(NotFound):
        engine.get(ref)
    assert engine.search("staging") == []
    rows = engine.db.execute("SELECT action, before, after FROM audit WHERE target = ?", (ref,))
    actions = [(a, b, c) for a, b, c in rows]
    assert [a for a, _, _ in actions] == ["remember", "forget", "restore", "purge"]
    # purge scrubs the content the audit log held
    assert all(b is None and c is None for _, b, c in actions)
    assert b"read-only on Fridays" not in engine.db_path.read_bytes()


def test_every_mutation_is_audited(engine):
    ref = engine.remember("fact one").id
    engine.remember("fact one")
    engine.ingest("s1", "user", "hello")
    actions = [r[0] for r in engine.db.execute("SELECT action FROM audit ORDER BY id")]
    assert actions == ["remember", "merge", "ingest"]
    after = json.loads(
        engine.db.execute("SELECT after FROM audit WHERE target = ?", (ref,)).fetchone()[0]
    )
    assert after["body"] == "fact one"


def test_trash_expires(engine):
    ref = engine.remember("old news").id
    engine.forget(ref)
    assert engine.purge_expired() == []
    later = engine.get(ref).deleted_at + engine.config.trash_days * 86400 + 1
    assert engine.purge_expired(now=later) == [ref]


def test_project_scope_includes_global(engine):
    a = engine.remember("alpha uses poetry", project="alpha").id
    b = engine.remember("beta uses poetry too", project="beta").id
    g = engine.remember("poetry lock files are committed").id
    assert set(ids(engine.search("poetry", project="alpha"))) == {a, g}
    assert set(ids(engine.search("poetry"))) == {a, b, g}
    assert set(ids(engine.list_memories(project="beta"))) == {b, g}


def test_kind_filter_and_bad_kind(engine):
    pref = engine.remember("prefers pytest over unittest", kind="pref").id
    engine.remember("pytest 8 dropped python 3.7", kind="fact")
    assert ids(engine.search("pytest", kind="pref")) == [pref]
    with pytest.raises(InvalidInput):
        engine.remember("x", kind="bogus")
    with pytest.raises(InvalidInput):
        engine.search("x", kind="bogus")


def test_bad_input_changes_nothing(engine):
    engine.remember("baseline")
    before = engine.db.execute("SELECT count(*) FROM audit").fetchone()[0]
    for call in (
        lambda: engine.remember("   "),
        lambda: engine.remember("x", importance=9),
        lambda: engine.ingest("", "user", "x"),
        lambda: engine.ingest("s", "robot", "x"),
        lambda: engine.ingest("s", "user", ""),
        lambda: engine.forget("m_999"),
        lambda: engine.forget("t_1"),
        lambda: engine.restore("nonsense"),
        lambda: engine.purge("m_999"),
        lambda: engine.search(""),
        lambda: engine.search("x", k=0),
    ):
        with pytest.raises((InvalidInput, NotFound)):
            call()
    assert engine.db.execute("SELECT count(*) FROM audit").fetchone()[0] == before


def test_ingest_stores_turns_in_order_and_once_per_key(engine):
    a = engine.ingest("s1", "user", "上传一直卡住", host="claude-code", project="up", ts=100.0)
    b = engine.ingest("s1", "assistant", "I set the httpx timeout", ts=101.0)
    dup = engine.ingest("s1", "user", "上传一直卡住", ts=100.0)
    assert (a.action, b.action, dup.action) == ("new", "new", "duplicate") and dup.id == a.id
    turn = engine.get(b.id)
    assert (turn.seq, turn.session, turn.role) == (2, "s1", "assistant")
    hits = engine.search("卡住", source="turns")
    assert ids(hits)[0] == a.id and hits[0].kind == "turn"
    session = engine.db.execute("SELECT * FROM sessions WHERE id = 's1'").fetchone()
    assert session["started"] == 100.0 and session["last_user_turn"] == int(a.id[2:])
    # turns can be purged (privacy) but not trashed
    with pytest.raises(InvalidInput):
        engine.forget(a.id)
    engine.purge(a.id)
    assert engine.search("卡住", source="turns") == []


def test_doctor_detects_and_repairs_index_drift(engine):
    engine.remember("index me")
    engine.ingest("s", "user", "and me")
    assert all(c.ok for c in engine.doctor())
    engine.db.execute("DELETE FROM memories_fts")
    bad = {c.name: c for c in engine.doctor()}
    assert not bad["full-text index (memories)"].ok
    assert all(c.ok for c in engine.doctor(repair=True))
    assert ids(engine.search("index")) == ["m_1"]


def test_status_counts(engine):
    engine.remember("one")
    engine.ingest("s", "user", "two")
    status = engine.status()
    assert status["counts"] == {"turns": 1, "memories": 1, "cards": 0, "skills": 0}
    assert status["data_dir"] == str(engine.home)
    assert status["versions"]["schema"] == "m019_corrections"
    sizes = status["sizes"]
    assert sizes["db_bytes"] > 0
    assert 0 <= sizes["vector_index_bytes"] < sizes["data_dir_bytes"]
    assert sizes["db_bytes"] + sizes["vector_index_bytes"] <= sizes["data_dir_bytes"]


def test_a_huge_turn_is_stored_cut_with_a_marker_never_dropped(engine):
    from mnemoweave.text import MAX_TEXT

    huge = "以后日志都用英文。" + "x" * (10 * 1024 * 1024)
    written = engine.ingest("s", "user", huge)
    stored = engine.get(written.id).text
    assert stored.startswith("以后日志都用英文。") and len(stored) < MAX_TEXT + 100
    assert stored.endswith(f"[truncated: kept {MAX_TEXT} of {len(huge)} characters]")
    memory = engine.get(engine.remember(huge).id)
    assert memory.body.endswith("characters]") and len(memory.body) < MAX_TEXT + 100


def test_bulk_writes_refuse_a_bad_row_by_number_and_write_nothing(engine):
    with pytest.raises(
        InvalidInput, match="row 2: missing 2 required positional arguments: .role. and .text."
    ):
        engine.ingest_many([{"session": "s", "role": "user", "text": "one"}, {"session": "s"}])
    with pytest.raises(InvalidInput, match="row 1: unknown field 'colour'"):
        engine.remember_many([{"text": "x", "colour": "red"}])
    with pytest.raises(InvalidInput) as refused:  # the message stays one line
        engine.ingest_many([{"session": "s", "role": "user", "text": "x", "\n": 1}])
    assert str(refused.value) == "row 1: unknown field '\\n'"
    with pytest.raises(InvalidInput, match="row 1: expected an object"):
        engine.ingest_many(["just text"])
    assert engine.status()["counts"]["turns"] == engine.status()["counts"]["memories"] == 0
    (written,) = engine.remember_many([{"text": "Uploads retry", "importance": None}])
    assert engine.get(written.id).importance == engine.config.default_importance
