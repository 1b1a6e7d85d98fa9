"""Opening the SQLite store: WAL mode, foreign keys, migrations applied on open, files
private to their owner."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mnemoweave.store import damage
from mnemoweave.store.migrations import migrate
from mnemoweave.store.private import make_dir, restrict

DB_NAME = "mnemoweave.sqlite"


class Store(sqlite3.Connection):
    """A connection to the store that knows its file (writes stop while it is damaged)."""

    path: Path


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the store at `path` and bring its schema up to date. What
    this process creates from then on is owner-only, as the store's own files are."""
    restrict()
    make_dir(path.parent)
    db = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=10.0, factory=Store
    )
    db.path = path
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
    """One write transaction: committed on success, rolled back on any error. Refused while
    the store is damaged; SQLite finding it corrupt here marks it so (see damage.py)."""
    path = getattr(db, "path", None)
    why = damage.reason(path) if path else None
    if why:
        raise damage.refusal(why)
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException as exc:
        if path and damage.is_corruption(exc):
            damage.mark(path, str(exc))
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def checkpoint(db: sqlite3.Connection) -> None:
    """Fold the WAL into the main file and truncate it (old page versions go with it)."""
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The row id the INSERT just run on `cur` gave its new row."""
    if cur.lastrowid is None:  # sqlite3 sets it after every INSERT that adds a row
        raise RuntimeError("the INSERT gave no row id")
    return cur.lastrowid


def first(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
    """The first row `sql` selects (None: none)."""
    found: sqlite3.Row | None = db.execute(sql, params).fetchone()
    return found


def number(db: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> int:
    """The number in the first column of the first row `sql` selects (a count)."""
    return int(db.execute(sql, params).fetchone()[0])


def journal_mode(db: sqlite3.Connection) -> str:
    """The store's journal mode ("wal" once open)."""
    mode: str = db.execute("PRAGMA journal_mode").fetchone()[0]
    return mode


def snapshot(source: Path, dest: Path) -> None:
    """A compact, consistent copy of the store at `source` in the new file `dest` (`VACUUM
    INTO`: no free pages, so nothing purged travels), from a read-only connection: one read
    transaction, which never blocks a writer beside it."""
    db = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=10.0)
    try:
        db.execute("VACUUM INTO ?", (str(dest),))
    finally:
        db.close()


def state(db: sqlite3.Connection) -> tuple[int, int]:
    """What changes when anyone writes to the store: this connection's changes and SQLite's
    data version (other connections' commits)."""
    return db.total_changes, int(db.execute("PRAGMA data_version").fetchone()[0])
