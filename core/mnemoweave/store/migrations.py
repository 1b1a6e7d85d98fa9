"""The one migration set: `mNNN_name(db)` functions applied in order, each in a transaction.

Applied migrations are recorded in the `migrations` table; a migration never changes once
released: add a new one instead.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

Migration = Callable[[sqlite3.Connection], None]


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute statements one by one (executescript would commit the open transaction)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement.strip()[:60]}")


def m001_create_tables(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            host TEXT NOT NULL DEFAULT '',
            project TEXT NOT NULL DEFAULT '',
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
            text TEXT NOT NULL,
            ts REAL NOT NULL,
            seq INTEGER NOT NULL,
            kind TEXT,
            kind_conf REAL,
            key TEXT NOT NULL UNIQUE
        );
        CREATE INDEX turns_session ON turns (session_id, seq);
        CREATE INDEX turns_project_ts ON turns (project, ts);

        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL
                CHECK (kind IN ('pref', 'pers', 'skill', 'mission', 'conclusion', 'fact')),
            title TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL,
            norm TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            project TEXT NOT NULL DEFAULT '',
            importance INTEGER NOT NULL DEFAULT 3 CHECK (importance BETWEEN 1 AND 5),
            weight REAL NOT NULL DEFAULT 1.0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_access REAL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            evidence TEXT NOT NULL DEFAULT '[]',
            supersedes INTEGER REFERENCES memories (id) ON DELETE SET NULL,
            superseded_by INTEGER REFERENCES memories (id) ON DELETE SET NULL,
            status TEXT NOT NULL DEFAULT 'active'
                CHECK (status IN ('active', 'superseded', 'trashed')),
            deleted_at REAL
        );
        CREATE INDEX memories_scope ON memories (project, status, kind);
        CREATE INDEX memories_norm ON memories (norm);

        CREATE TABLE cards (
            id INTEGER PRIMARY KEY,
            topic TEXT NOT NULL DEFAULT '',
            summary TEXT NOT NULL,
            suggested_kind TEXT NOT NULL,
            evidence TEXT NOT NULL DEFAULT '[]',
            confidence REAL NOT NULL DEFAULT 0,
            project TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'accepted', 'rejected')),
            created REAL NOT NULL,
            decided REAL,
            why TEXT,
            memory_id INTEGER REFERENCES memories (id) ON DELETE SET NULL
        );
        CREATE INDEX cards_status ON cards (status, project);

        CREATE TABLE skills (
            name TEXT PRIMARY KEY,
            summary TEXT NOT NULL,
            triggers TEXT NOT NULL DEFAULT '[]',
            steps TEXT NOT NULL DEFAULT '[]',
            source_urls TEXT NOT NULL CHECK (json_array_length(source_urls) > 0),
            usage_count INTEGER NOT NULL DEFAULT 0,
            health REAL NOT NULL DEFAULT 1.0,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL DEFAULT '',
            project TEXT NOT NULL DEFAULT '',
            started REAL NOT NULL,
            ended REAL,
            capsule TEXT NOT NULL DEFAULT '',
            last_user_turn INTEGER
        );

        CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            before TEXT,
            after TEXT
        );
        CREATE INDEX audit_target ON audit (target);

        -- Full-text indexes hold jieba-segmented text, so Chinese words are whole tokens.
        CREATE VIRTUAL TABLE memories_fts
            USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE turns_fts
            USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
        """,
    )


def m002_language_column(db: sqlite3.Connection) -> None:
    """Each turn's and memory's language (zh, en, mixed), for language-gated fusion."""
    from ..text import language

    db.create_function("mw_language", 1, language, deterministic=True)
    for table, column in (("turns", "text"), ("memories", "body")):
        db.execute(f"ALTER TABLE {table} ADD COLUMN lang TEXT NOT NULL DEFAULT 'en'")
        db.execute(f"UPDATE {table} SET lang = mw_language({column})")


def m003_nudge_index(db: sqlite3.Connection) -> None:
    """The always-on memories (preferences, importance 5) in the order the nudge reads them."""
    db.execute(
        "CREATE INDEX memories_nudge ON memories (importance DESC, updated DESC)"
        " WHERE status = 'active' AND (kind = 'pref' OR importance >= 5)"
    )


def m004_memory_origin(db: sqlite3.Connection) -> None:
    """Where a memory's text came from: user, import, card (as proposed) or agent (edited)."""
    db.execute("ALTER TABLE memories ADD COLUMN origin TEXT NOT NULL DEFAULT 'user'")


def m005_turn_distilled(db: sqlite3.Connection) -> None:
    """When each turn was walked by distill (NULL: not yet), and the walk's index."""
    db.execute("ALTER TABLE turns ADD COLUMN distilled REAL")
    db.execute("CREATE INDEX turns_undistilled ON turns (id) WHERE distilled IS NULL")


def m006_stemmed_fts(db: sqlite3.Connection) -> None:
    """English words are indexed by their stems ("uploads" finds "upload"): reindex both."""
    from . import memories, turns

    turns.reindex(db)
    memories.reindex(db)
    for table in ("turns", "memories"):  # document frequencies, for the relevance gate
        db.execute(f"CREATE VIRTUAL TABLE {table}_vocab USING fts5vocab ({table}_fts, 'row')")


def m007_woven(db: sqlite3.Connection) -> None:
    """What the weave put before each host session (a line goes in once until a compaction),
    and when a session was last compacted."""
    _run_script(
        db,
        """
        CREATE TABLE woven (
            session_id TEXT NOT NULL,
            ref TEXT NOT NULL,
            ts REAL NOT NULL,
            PRIMARY KEY (session_id, ref)
        ) WITHOUT ROWID;
        ALTER TABLE sessions ADD COLUMN compacted REAL;
        CREATE INDEX sessions_project ON sessions (project, started);
        """,
    )


def m008_private_files(db: sqlite3.Connection) -> None:
    """The data dir and everything in it owner-only (0700 / 0600), as new files now are:
    earlier versions left them open to every local user. A migration, so it happens once
    per store; `doctor` checks the modes from then on and `doctor --repair` fixes them."""
    from ..private import tighten

    path = db.execute("PRAGMA database_list").fetchone()["file"]
    if path:  # an in-memory store has no data dir
        tighten(Path(path).parent)


MIGRATIONS: list[Migration] = [
    m001_create_tables,
    m002_language_column,
    m003_nudge_index,
    m004_memory_origin,
    m005_turn_distilled,
    m006_stemmed_fts,
    m007_woven,
    m008_private_files,
]


def applied(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY applied, name")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction; return the names applied."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)"
    )
    done = set(applied(db))
    ran = []
    for migration in MIGRATIONS:
        name = migration.__name__
        if name in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            # re-check under the write lock: another process may have just applied it
            if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                db.execute("ROLLBACK")
                continue
            migration(db)
            db.execute("INSERT INTO migrations (name, applied) VALUES (?, ?)", (name, time.time()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        ran.append(name)
    return ran
