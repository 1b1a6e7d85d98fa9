"""A write is reported as it happened: stored rows as stored, even when their vectors fail,
and a write sent again is recognised instead of stored twice."""

from __future__ import annotations

import pytest

from mnemoweave import Engine
from mnemoweave.embed.fake import HashEmbedder
from mnemoweave.upkeep.indexing import drift, repair


@pytest.fixture
def dense(mnemoweave_home):
    with Engine() as engine:
        engine.use_embedder(HashEmbedder(name="hash"))
        yield engine


def test_rows_stored_before_the_vector_index_failed_are_reported_stored(dense, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the vector store is unavailable")

    monkeypatch.setattr(dense.index, "add", broken)
    turn = dense.ingest("s", "user", "the uploader retries three times")
    memory = dense.remember("Uploads retry three times")
    assert (turn.action, memory.action) == ("new", "new")
    assert dense.get(turn.id).text == "the uploader retries three times"
    assert drift(dense) == {("hash", "memories"): (1, 0), ("hash", "turns"): (1, 0)}
    monkeypatch.undo()
    assert len(repair(dense)) == 2 and drift(dense) == {
        ("hash", "memories"): (0, 0),
        ("hash", "turns"): (0, 0),
    }


def test_an_import_sent_again_is_recognised_not_stored_twice(dense, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "turns.jsonl").write_text(
        '{"session": "s", "role": "user", "text": "no time given"}\n'
        '{"session": "s", "role": "user", "text": "a time given", "ts": 1700000000}\n'
    )
    (source / "notes.md").write_text("## tabs\nUse tabs in the Makefile\n")
    first = dense.import_path(source)
    again = dense.import_path(source)
    assert (first["turns"], first["memories"]) == (2, 1)
    assert again == {
        "turns": 0,
        "memories": 0,
        "merged": 1,
        "duplicate": 2,
        "skipped": 0,
        "problems": [],
    }
    assert dense.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 2
