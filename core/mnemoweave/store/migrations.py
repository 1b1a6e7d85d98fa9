"""The one migration set: `mNNN_name(db)` functions applied in order, each in a transaction.

Applied migrations are recorded in the `migrations` table; a migration never changes once
released: add a new one instead.
"""

from __future__ import annotations

import json
import re
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
    from mnemoweave.text import language

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
    from mnemoweave.store import memories, turns

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
    from mnemoweave.store.private import tighten

    path = db.execute("PRAGMA database_list").fetchone()["file"]
    if path:  # an in-memory store has no data dir
        tighten(Path(path).parent)


def m009_ids_never_reused(db: sqlite3.Connection) -> None:
    """Memory, card and turn ids are never handed out twice (a purged `m_6` stays gone):
    each table is rebuilt with AUTOINCREMENT, keeping its rows, ids and indexes, and its
    counter starts above every id the audit log has seen, purged ones included. The
    full-text tables are keyed by the same ids and need no change."""
    for table, prefix in (("memories", "m"), ("cards", "c"), ("turns", "t")):
        schema = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()[0]
        indexes = [
            row[0]
            for row in db.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
                " AND sql IS NOT NULL",
                (table,),
            )
        ]
        rebuilt, count = re.subn(
            r"\bid INTEGER PRIMARY KEY\b", "id INTEGER PRIMARY KEY AUTOINCREMENT", schema, count=1
        )
        if not count:
            raise ValueError(f"unexpected schema for {table}: {schema[:80]}")
        rebuilt = rebuilt.replace(f"CREATE TABLE {table}", f"CREATE TABLE {table}_rebuilt", 1)
        db.execute(rebuilt)
        db.execute(f"INSERT INTO {table}_rebuilt SELECT * FROM {table}")
        db.execute(f"DROP TABLE {table}")
        db.execute(f"ALTER TABLE {table}_rebuilt RENAME TO {table}")
        for sql in indexes:
            db.execute(sql)
        highest = db.execute(
            f"SELECT max(coalesce((SELECT max(id) FROM {table}), 0), coalesce((SELECT"
            " max(CAST(substr(target, 3) AS INTEGER)) FROM audit WHERE substr(target, 1, 2) = ?"
            "), 0))",
            (f"{prefix}_",),
        ).fetchone()[0]
        db.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))
        db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, highest))


def m010_project_keys(db: sqlite3.Connection) -> None:
    """Projects are named by their repository, not their path (see projects.py): each
    path-named project whose directory still exists moves to its key, so its clones and
    worktrees share it. A path that no longer exists keeps its name (`mnemoweave project
    rename` moves it)."""
    from mnemoweave.projects import project_from_cwd
    from mnemoweave.store import projects

    for path in projects.counts(db):
        if path.startswith("/") and Path(path).is_dir():
            key = project_from_cwd(path)
            if key and key != path:
                projects.rename(db, path, key)


def m011_skill_queue(db: sqlite3.Connection) -> None:
    """Tasks a skill check found no skill for, to learn: asked how often, and when closed."""
    db.execute(
        """
        CREATE TABLE skill_queue (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            task TEXT NOT NULL UNIQUE,
            asked INTEGER NOT NULL DEFAULT 1,
            created REAL NOT NULL,
            last_asked REAL NOT NULL,
            done REAL
        )
        """
    )


def m012_injections(db: sqlite3.Connection) -> None:
    """What the weave put before each prompt of a host session (its line ids), kept for
    people to see why the model saw a line; and memories listed newest first by status."""
    _run_script(
        db,
        """
        CREATE TABLE injections (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            ts REAL NOT NULL,
            refs TEXT NOT NULL,
            tokens INTEGER NOT NULL
        );
        CREATE INDEX injections_session ON injections (session_id, ts);
        CREATE INDEX memories_listing ON memories (status, updated DESC, id DESC);
        """,
    )


def m013_consolidation(db: sqlite3.Connection) -> None:
    """Consolidation runs: a proposal (its items and what each memory looked like when it
    was made), then what was applied and whether it was rolled back; the memories a card
    clashes with, when its acceptance was held; and the consolidation item a card proposes."""
    db.execute("ALTER TABLE cards ADD COLUMN conflicts TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE cards ADD COLUMN proposal TEXT NOT NULL DEFAULT ''")
    db.execute(
        """
        CREATE TABLE consolidations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            created REAL NOT NULL,
            scope TEXT NOT NULL,
            report TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'proposed'
                CHECK (state IN ('proposed', 'applied', 'rolled back')),
            applied TEXT NOT NULL DEFAULT '[]'
        )
        """
    )


def m014_team(db: sqlite3.Connection) -> None:
    """Team memory (team/): memories marked shared, what this member published (so a
    change or a forget travels), the local mirror of the team's memories with its full-text
    index, and the sync's state (cursors, last sync, last error)."""
    _run_script(
        db,
        """
        CREATE TABLE team_shared (memory_id INTEGER PRIMARY KEY, since REAL NOT NULL);
        CREATE TABLE team_published (
            memory_id INTEGER PRIMARY KEY,
            cid TEXT NOT NULL,
            updated REAL NOT NULL
        );
        CREATE TABLE team_mirror (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            cid TEXT NOT NULL UNIQUE,
            project TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            authors TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX team_mirror_project ON team_mirror (project);
        CREATE VIRTUAL TABLE team_mirror_fts
            USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
        CREATE TABLE team_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


def m015_citations(db: sqlite3.Connection) -> None:
    """Which memories and cards cite each turn as evidence, kept by triggers from their
    `evidence` lists: a prompt's past turns find the memory that stands in for them, and
    the cards they are evidence of, by index rather than by reading every list."""
    script = []
    for table, owner in (("memories", "memory"), ("cards", "card")):
        cites = f"{owner}_citations"
        cite = f"INSERT INTO {cites} (turn, {owner}) SELECT DISTINCT value, new.id"
        script.append(
            f"""
            CREATE TABLE {cites} (turn TEXT NOT NULL, {owner} INTEGER NOT NULL);
            CREATE INDEX {cites}_turn ON {cites} (turn);
            CREATE INDEX {cites}_{owner} ON {cites} ({owner});
            INSERT INTO {cites} (turn, {owner})
                SELECT DISTINCT e.value, t.id FROM {table} t, json_each(t.evidence) e;
            CREATE TRIGGER {cites}_insert AFTER INSERT ON {table} BEGIN
                {cite} FROM json_each(new.evidence);
            END;
            CREATE TRIGGER {cites}_update AFTER UPDATE OF evidence, id ON {table} BEGIN
                DELETE FROM {cites} WHERE {owner} = old.id;
                {cite} FROM json_each(new.evidence);
            END;
            CREATE TRIGGER {cites}_delete AFTER DELETE ON {table} BEGIN
                DELETE FROM {cites} WHERE {owner} = old.id;
            END;
            """
        )
    _run_script(db, "".join(script))


def m016_brief_index(db: sqlite3.Connection) -> None:
    """A scope's active memories in the order the brief ranks them (memories.briefing): a
    session's start reads the few that fit instead of sorting every one of its project."""
    db.execute(
        "CREATE INDEX memories_brief ON memories (project, status, importance DESC,"
        " weight DESC, access_count DESC, updated DESC, id DESC)"
    )


def m017_graph(db: sqlite3.Connection) -> None:
    """The knowledge graph, derived from the texts like the full-text index (graph/): the
    entities, the other keys each is written by, which texts mention which, and the typed
    relations texts state (with the text as evidence). `graphed` says which version of a
    text the graph holds; a user's merge of two entities is an alias of origin 'user',
    kept when the graph is rebuilt."""
    _run_script(
        db,
        """
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            kind TEXT NOT NULL
        );
        CREATE TABLE aliases (
            key TEXT PRIMARY KEY,
            into_key TEXT NOT NULL,
            origin TEXT NOT NULL CHECK (origin IN ('text', 'user'))
        );
        CREATE INDEX aliases_into ON aliases (into_key);
        CREATE TABLE mentions (
            entity INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            ref_table TEXT NOT NULL CHECK (ref_table IN ('memories', 'turns')),
            ref_id INTEGER NOT NULL,
            name TEXT NOT NULL,
            PRIMARY KEY (entity, ref_table, ref_id)
        );
        CREATE INDEX mentions_ref ON mentions (ref_table, ref_id);
        CREATE TABLE relations (
            id INTEGER PRIMARY KEY,
            type TEXT NOT NULL,
            source INTEGER REFERENCES entities (id) ON DELETE CASCADE,
            target INTEGER REFERENCES entities (id) ON DELETE CASCADE,
            version TEXT,
            ref_table TEXT NOT NULL CHECK (ref_table IN ('memories', 'turns')),
            ref_id INTEGER NOT NULL,
            ts REAL NOT NULL
        );
        CREATE INDEX relations_source ON relations (source);
        CREATE INDEX relations_target ON relations (target);
        CREATE INDEX relations_ref ON relations (ref_table, ref_id);
        CREATE TABLE graphed (
            ref_table TEXT NOT NULL,
            ref_id INTEGER NOT NULL,
            stamp TEXT NOT NULL,
            PRIMARY KEY (ref_table, ref_id)
        );
        """,
    )


def m018_needle_tags(db: sqlite3.Connection) -> None:
    """A bracketed word opening a memory ("[坑] ...") is a tag too (model.needle_tags): the
    memories stored before it was are given theirs."""
    from mnemoweave.model import needle_tags

    rows = db.execute("SELECT id, body, tags FROM memories WHERE ltrim(body) LIKE '[%'")
    for mid, body, tags in rows.fetchall():
        kept = json.loads(tags or "[]")
        more = [tag for tag in needle_tags(body) if tag not in kept]
        if more:
            db.execute(
                "UPDATE memories SET tags = ? WHERE id = ?",
                (json.dumps(kept + more, ensure_ascii=False), mid),
            )


def m019_corrections(db: sqlite3.Connection) -> None:
    """`corrected_by`: the newer active memory that a memory clashes with (remember's
    conflict check), until one supersedes the other: search and the weave rank the newer
    first and show this one as earlier."""
    db.execute("ALTER TABLE memories ADD COLUMN corrected_by INTEGER")


MIGRATIONS: list[Migration] = [
    m001_create_tables,
    m002_language_column,
    m003_nudge_index,
    m004_memory_origin,
    m005_turn_distilled,
    m006_stemmed_fts,
    m007_woven,
    m008_private_files,
    m009_ids_never_reused,
    m010_project_keys,
    m011_skill_queue,
    m012_injections,
    m013_consolidation,
    m014_team,
    m015_citations,
    m016_brief_index,
    m017_graph,
    m018_needle_tags,
    m019_corrections,
]


def applied(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY applied, name")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every pending migration, each in its own transaction; return the names applied."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)"
    )
    done = set(applied(db))
    pending = [m for m in MIGRATIONS if m.__name__ not in done]
    if not pending:
        return []
    # a table rebuild drops a table others refer to: foreign keys are checked after each
    # migration instead (the pragma only changes outside a transaction)
    enforced = db.execute("PRAGMA foreign_keys").fetchone()[0]
    db.execute("PRAGMA foreign_keys = OFF")
    try:
        return [m.__name__ for m in pending if _apply(db, m)]
    finally:
        db.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")


def _apply(db: sqlite3.Connection, migration: Migration) -> bool:
    """Apply one migration in its own transaction; False if another process just did."""
    name = migration.__name__
    db.execute("BEGIN IMMEDIATE")
    try:
        # re-check under the write lock: another process may have just applied it
        if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
            db.execute("ROLLBACK")
            return False
        migration(db)
        broken = db.execute("PRAGMA foreign_key_check").fetchone()
        if broken:
            raise sqlite3.IntegrityError(f"{name} broke a foreign key in {broken[0]}")
        db.execute("INSERT INTO migrations (name, applied) VALUES (?, ?)", (name, time.time()))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return True
