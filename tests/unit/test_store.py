import sqlite3
from pathlib import Path

import pytest

from mnemoweave.store import migrations
from mnemoweave.store.db import connect


def test_open_applies_migrations_in_wal_mode(tmp_path):
    db = connect(tmp_path / "s.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"turns", "memories", "cards", "skills", "sessions", "audit", "migrations"} <= tables
    assert migrations.applied(db) == [m.__name__ for m in migrations.MIGRATIONS]
    db.close()
    # reopening applies nothing twice
    db = connect(tmp_path / "s.sqlite")
    assert migrations.migrate(db) == []


def test_a_failing_migration_leaves_nothing_behind(tmp_path, monkeypatch):
    def m999_broken(db):
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m999_broken])
    with pytest.raises(RuntimeError):
        connect(tmp_path / "s.sqlite")
    db = sqlite3.connect(tmp_path / "s.sqlite")
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert "half_done" not in names
    assert "m999_broken" not in {r[0] for r in db.execute("SELECT name FROM migrations")}


def test_schema_refuses_bad_rows(tmp_path):
    db = connect(tmp_path / "s.sqlite")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO memories (kind, body, norm, created, updated)"
            " VALUES ('bogus', 'x', 'x', 0, 0)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(
            "INSERT INTO skills (name, summary, source_urls, created, updated)"
            " VALUES ('s', 'x', '[]', 0, 0)"
        )


def test_m002_backfills_the_language_of_existing_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
    db = connect(tmp_path / "s.sqlite")
    db.execute(
        "INSERT INTO memories (kind, body, norm, created, updated) VALUES"
        " ('pref', '以后代码注释都用英文', 'x', 0, 0), ('fact', 'use tabs', 'y', 0, 0)"
    )
    db.close()
    monkeypatch.undo()
    db = connect(tmp_path / "s.sqlite")
    assert [r[0] for r in db.execute("SELECT lang FROM memories ORDER BY id")] == ["zh", "en"]


def _citations(db, owner):
    return sorted(tuple(r) for r in db.execute(f"SELECT turn, {owner} FROM {owner}_citations"))


def test_citations_follow_the_evidence_lists(tmp_path):
    db = connect(tmp_path / "s.sqlite")
    db.execute(
        "INSERT INTO memories (kind, body, norm, created, updated, evidence)"
        " VALUES ('fact', 'a', 'a', 0, 0, '[\"t_1\", \"t_2\", \"t_1\"]')"
    )
    db.execute(
        "INSERT INTO cards (summary, suggested_kind, created, evidence)"
        " VALUES ('b', 'fact', 0, '[\"t_2\"]')"
    )
    assert _citations(db, "memory") == [("t_1", 1), ("t_2", 1)]
    assert _citations(db, "card") == [("t_2", 1)]
    db.execute("UPDATE memories SET evidence = '[\"t_3\"]' WHERE id = 1")
    db.execute('UPDATE cards SET evidence = \'["t_2", "t_4"]\' WHERE id = 1')
    db.execute("UPDATE memories SET body = 'changed' WHERE id = 1")  # evidence untouched
    assert _citations(db, "memory") == [("t_3", 1)]
    assert _citations(db, "card") == [("t_2", 1), ("t_4", 1)]
    db.execute("DELETE FROM memories WHERE id = 1")
    db.execute("DELETE FROM cards WHERE id = 1")
    assert _citations(db, "memory") == [] and _citations(db, "card") == []


def test_citations_of_an_older_store_are_filled_in(tmp_path, monkeypatch):
    older = [m for m in migrations.MIGRATIONS if m.__name__ != "m015_citations"]
    monkeypatch.setattr(migrations, "MIGRATIONS", older)
    db = connect(tmp_path / "s.sqlite")
    db.execute(
        "INSERT INTO memories (kind, body, norm, created, updated, evidence)"
        " VALUES ('fact', 'a', 'a', 0, 0, '[\"t_5\"]')"
    )
    db.execute(
        "INSERT INTO cards (summary, suggested_kind, created, evidence)"
        " VALUES ('b', 'fact', 0, '[\"t_5\", \"t_6\"]')"
    )
    db.close()
    monkeypatch.undo()
    db = connect(tmp_path / "s.sqlite")
    assert "m015_citations" in migrations.applied(db)
    assert _citations(db, "memory") == [("t_5", 1)]
    assert _citations(db, "card") == [("t_5", 1), ("t_6", 1)]


def test_the_brief_reads_its_rows_in_index_order_without_sorting(tmp_path: Path) -> None:
    from mnemoweave.store import memories

    db = connect(tmp_path / "s.sqlite")
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    memories.briefing(db, "/src/app", ("pref", "conclusion")).close()
    db.set_trace_callback(None)
    (sql,) = [s for s in statements if "FROM memories" in s]
    plan = " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
    assert plan.count("USING INDEX memories_brief") == 2, plan
    assert "TEMP B-TREE" not in plan, plan
