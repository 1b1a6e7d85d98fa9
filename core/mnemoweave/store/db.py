"""Opening the SQLite store: WAL mode, foreign keys, migrations applied on open."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .migrations import migrate

DB_NAME = "mnemoweave.sqlite"


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the store at `path` and bring its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA busy_timeout = 10000")
    db.execute("PRAGMA secure_delete = ON")  # purged content is overwritten, not left in free pages
    migrate(db)
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: committed on success, rolled back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def checkpoint(db: sqlite3.Connection) -> None:
    """Fold the WAL into the main file and truncate it (old page versions go with it)."""
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
