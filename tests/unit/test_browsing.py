"""What the web page reads and changes through the engine: memories paged by status, an
edit in place, sessions with what was woven before each prompt, an uploaded file."""

from __future__ import annotations

import json

import pytest

from mnemoweave import Engine
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.model import Memory


def written_title(engine: Engine, ref: str) -> str:
    memory = engine.get(ref)
    assert isinstance(memory, Memory)
    return memory.title


def test_memories_page_by_status_newest_first(engine):
    refs = [engine.remember(f"memory number {n} about uploads").ref for n in range(7)]
    engine.forget(refs[0])
    engine.supersede(refs[1], refs[2])
    active = [m.id for m in engine.list_memories(3)]
    assert active == refs[6:3:-1]
    assert [m.id for m in engine.list_memories(3, offset=3)] == [refs[3], refs[2]]
    assert [m.id for m in engine.list_memories(10, status="superseded")] == [refs[1]]
    assert [m.id for m in engine.list_memories(10, status="trashed")] == [refs[0]]
    with pytest.raises(InvalidInput, match="unknown status 'gone'"):
        engine.list_memories(status="gone")
    with pytest.raises(InvalidInput, match="offset"):
        engine.list_memories(offset=-1)


def test_an_edit_rewrites_the_memory_in_place_and_keeps_the_old_text_in_the_audit(engine):
    ref = engine.remember("Uploads use a 10 s timeout", kind="conclusion", project="app").ref
    written = engine.edit(ref, text="Uploads use a 30 s timeout", kind="pref")
    assert (written.action, written.id) == ("edited", ref)
    memory = engine.get(ref)
    assert (memory.body, memory.kind, memory.project, memory.origin) == (
        "Uploads use a 30 s timeout",
        "pref",
        "app",
        "user",
    )
    assert [h.id for h in engine.search("30", mode="lexical", project="app")] == [ref]
    assert engine.search("10", mode="lexical", project="app") == []
    (before, after) = engine.db.execute(
        "SELECT before, after FROM audit WHERE target = ? AND action = 'edit'", (ref,)
    ).fetchone()
    assert json.loads(before)["body"] == "Uploads use a 10 s timeout"
    assert json.loads(after) == {
        "kind": "pref",
        "title": written_title(engine, ref),
        "body": "Uploads use a 30 s timeout",
    }
    assert engine.edit(ref, text="Uploads use a 30 s timeout").action == "unchanged"


def test_an_edit_of_a_trashed_or_missing_memory_or_a_card_is_refused(engine):
    ref = engine.remember("Uploads use a 10 s timeout").ref
    engine.forget(ref)
    with pytest.raises(InvalidInput, match="restore it before editing"):
        engine.edit(ref, text="something else")
    with pytest.raises(NotFound):
        engine.edit("m_999", text="something else")
    with pytest.raises(InvalidInput, match="only memories"):
        engine.edit("c_1", text="something else")
    with pytest.raises(InvalidInput, match="empty"):
        engine.edit(ref, text="  ")
    assert engine.get(ref).body == "Uploads use a 10 s timeout"


def test_sessions_list_their_turns_and_what_was_woven_before_each_prompt(engine):
    engine.remember("Uploads use httpx with a 10 s timeout", kind="conclusion", project="app")
    engine.ingest("s1", "user", "fix the login page", host="claude-code", project="app")
    engine.ingest("s2", "user", "why do uploads hang", host="claude-code", project="app")
    woven = engine.weave("why do uploads hang", session="s2", project="app", record=True)
    shown = [line.ref for lines in woven.tiers.values() for line in lines if line.ref]
    assert shown
    listed = engine.sessions(project="app")
    assert [s["id"] for s in listed] == ["s2", "s1"]
    assert (listed[0]["turns"], listed[0]["prompts"], listed[1]["prompts"]) == (1, 1, 0)
    (injection,) = engine.injections("s2")
    assert injection["refs"] == shown and injection["tokens"] == woven.tokens
    assert engine.injections("s1") == []
    assert engine.sessions(project="elsewhere") == []
    assert [s["id"] for s in engine.sessions(n=1, offset=1)] == ["s1"]


def test_an_uploaded_file_is_parsed_by_its_name_and_imported_all_or_nothing(engine):
    counts = engine.import_text("notes.md", "# Notes\n\n- Always run ruff before merging\n")
    assert counts["memories"] == 1
    lines = '{"session": "old", "role": "user", "text": "hello there"}\n'
    assert engine.import_text("chat.jsonl", lines)["turns"] == 1
    with pytest.raises(InvalidInput, match="unsupported file type"):
        engine.import_text("notes.txt", "anything")
    with pytest.raises(InvalidInput, match="chat.jsonl:2"):
        engine.import_text("chat.jsonl", lines + "not json\n")
    assert engine.status()["counts"]["turns"] == 1
