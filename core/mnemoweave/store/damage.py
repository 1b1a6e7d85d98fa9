"""A store file SQLite finds corrupt: the marker that stops writes into it, the check that
finds it, and how to recover.

When SQLite reports the file corrupt (SQLITE_CORRUPT or SQLITE_NOTADB), on a write, in the
daemon's check at start or in `doctor`'s integrity check, `store.damaged` is written beside
it with the reason. Every write transaction refuses while it is there, in every process,
so nothing more goes into a damaged file (hooks spool meanwhile). `doctor` says how to
recover, and removes the marker once the store passes its integrity check again.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

MARKER = "store.damaged"
CORRUPT = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (the low byte of an extended code)


class StoreDamaged(sqlite3.DatabaseError):
    """A write refused because the store file is corrupt."""


def is_corruption(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in CORRUPT


def reason(db_path: Path) -> str | None:
    """Why writes into the store at `db_path` are stopped; None when they are not."""
    try:
        return db_path.with_name(MARKER).read_text(encoding="utf-8").strip() or "corrupt"
    except FileNotFoundError:
        return None


def mark(db_path: Path, why: str) -> None:
    db_path.with_name(MARKER).write_text(f"{' '.join(why.split())}\n", encoding="utf-8")


def clear(db_path: Path) -> None:
    db_path.with_name(MARKER).unlink(missing_ok=True)


def refusal(why: str) -> StoreDamaged:
    return StoreDamaged(
        f"the store is damaged ({why}): writes are stopped so that nothing more goes into "
        "it; `mnemoweave doctor` says how to recover"
    )


def recovery(db_path: Path) -> str:
    """What to do about a damaged store, in one line."""
    return (
        f"Recover: `mnemoweave stop`; `sqlite3 {db_path} .recover | sqlite3 "
        f"{db_path}.recovered` (with a sqlite3 shell that has .recover, as sqlite.org's "
        f"builds do); move {db_path.name} and its -wal and -shm aside and "
        f"{db_path.name}.recovered into its place; `mnemoweave doctor --repair`. "
        "Or put back a backup of the data dir"
    )


def integrity(db: sqlite3.Connection) -> str:
    """SQLite's integrity check of the open store: "ok", or up to five problems joined by
    "; ". A file too damaged to check raises sqlite3.DatabaseError."""
    return "; ".join(row[0] for row in db.execute("PRAGMA integrity_check(5)"))


def check(db_path: Path) -> str:
    """SQLite's quick check of the file, on a read-only connection of its own (writers do
    not wait on it): "ok", or what is wrong, which also marks the store damaged."""
    try:
        with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as db:
            found = "; ".join(row[0] for row in db.execute("PRAGMA quick_check(5)"))
    except sqlite3.DatabaseError as exc:
        if not is_corruption(exc):
            raise
        found = str(exc)
    if found != "ok":
        mark(db_path, found)
    return found
