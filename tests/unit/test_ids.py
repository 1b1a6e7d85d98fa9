"""Ids shown to users (m_6, c_5, t_14) are never handed out twice, on new stores and on
stores built before the schema said so."""

import pytest

from mnemoweave.store import migrations
from mnemoweave.store.db import connect


def test_a_purged_memory_id_is_not_given_again(engine):
    engine.remember("The staging database is read-only on Fridays")
    last = engine.remember("Deploys go out on Tuesdays")
    engine.purge(last.id)
    again = engine.remember("Releases are tagged from main")
    assert again.id != last.id
    assert int(again.id[2:]) > int(last.id[2:])


def _old_store(path, monkeypatch):
    """A store as m008 left it: rows, a supersede chain, a card that became a memory, and
    the highest memory already purged (only the audit log remembers it)."""
    before = migrations.MIGRATIONS[: migrations.MIGRATIONS.index(migrations.m009_ids_never_reused)]
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", before)
        db = connect(path)
    for mid in (1, 2, 3):
        db.execute(
            "INSERT INTO memories (id, kind, body, norm, created, updated)"
            " VALUES (?, 'fact', ?, ?, 0, 0)",
            (mid, f"body {mid}", f"body {mid}"),
        )
        db.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (mid, f"body {mid}"))
    db.execute("UPDATE memories SET superseded_by = 2, status = 'superseded' WHERE id = 1")
    db.execute("UPDATE memories SET supersedes = 1 WHERE id = 2")
    db.execute(
        "INSERT INTO turns (id, session_id, role, text, ts, seq, key)"
        " VALUES (4, 's', 'user', 'hello', 0, 1, 'k4')"
    )
    db.execute(
        "INSERT INTO cards (id, summary, suggested_kind, created, memory_id)"
        " VALUES (2, 'card', 'fact', 0, 2)"
    )
    db.execute("DELETE FROM memories WHERE id = 3")
    db.execute("INSERT INTO audit (ts, actor, action, target) VALUES (0, 'user', 'purge', 'm_3')")
    db.close()


def test_the_migration_keeps_rows_and_ids_and_skips_purged_ones(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    _old_store(path, monkeypatch)
    db = connect(path)
    assert "m009_ids_never_reused" in migrations.applied(db)
    memories = db.execute("SELECT id, supersedes, superseded_by FROM memories ORDER BY id")
    assert [tuple(r) for r in memories] == [(1, None, 2), (2, 1, None)]
    assert db.execute("SELECT memory_id FROM cards WHERE id = 2").fetchone()[0] == 2
    # indexes and the full-text rows are still there, under the same ids
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"memories_scope", "memories_nudge", "turns_session", "cards_status"} <= names
    assert [r[0] for r in db.execute("SELECT rowid FROM memories_fts ORDER BY rowid")] == [1, 2, 3]
    # the next ids go above everything ever used, the purged m_3 included
    db.execute(
        "INSERT INTO memories (kind, body, norm, created, updated) VALUES ('fact', 'n', 'n', 0, 0)"
    )
    assert db.execute("SELECT max(id) FROM memories").fetchone()[0] == 4
    db.execute("DELETE FROM turns WHERE id = 4")
    db.execute(
        "INSERT INTO turns (session_id, role, text, ts, seq, key)"
        " VALUES ('s', 'user', 'x', 0, 2, 'k')"
    )
    assert db.execute("SELECT max(id) FROM turns").fetchone()[0] == 5
    # foreign keys are enforced again after migrating
    with pytest.raises(Exception, match="FOREIGN KEY"):
        db.execute("UPDATE cards SET memory_id = 99 WHERE id = 2")
