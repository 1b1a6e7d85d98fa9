"""Rows whose text is not valid UTF-8 (a damaged page that SQLite's integrity check still
passes): found by `doctor`, and with `doctor --repair` moved out of the store into
`quarantine/` under the data dir, one JSON file a row (each column as base64 of its bytes,
0600), so the rest of the store reads again and nothing is thrown away."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path

from mnemoweave.store.db import transaction
from mnemoweave.store.private import make_dir

TABLES = ("turns", "memories", "cards")  # what commands read by id (t_N, m_N, c_N)
FOLDER = "quarantine"


def _raw(db: sqlite3.Connection, table: str) -> tuple[list[str], str]:
    """A table's text columns, and the query of a row's id and those columns' bytes."""
    columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})") if row[2] == "TEXT"]
    raw = ", ".join(f"CAST({column} AS BLOB)" for column in columns)
    return columns, f"SELECT id, {raw} FROM {table}"


def undecodable(db: sqlite3.Connection) -> dict[str, list[int]]:
    """The ids, by table, of rows holding text that is not valid UTF-8."""
    found: dict[str, list[int]] = {}
    for table in TABLES:
        for row in db.execute(_raw(db, table)[1]):
            if any(_broken(value) for value in row[1:]):
                found.setdefault(table, []).append(row[0])
    return found


def _broken(value: bytes | None) -> bool:
    if value is None:
        return False
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def quarantine(db: sqlite3.Connection, home: Path, found: dict[str, list[int]]) -> list[Path]:
    """Write each row to `quarantine/TABLE-ID.json`, then delete it from the store (its
    full-text entries go with it; `doctor --repair` then drops its vectors)."""
    written = []
    for table, ids in found.items():
        columns, query = _raw(db, table)
        for rowid in ids:
            row = db.execute(f"{query} WHERE id = ?", (rowid,)).fetchone()
            if row is None:
                continue
            encoded = {
                column: base64.b64encode(value).decode("ascii")
                for column, value in zip(columns, row[1:], strict=True)
                if value is not None
            }
            kept = {"table": table, "id": rowid, "base64": encoded}
            make_dir(home / FOLDER)
            path = home / FOLDER / f"{table}-{rowid}.json"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(kept, out)
            written.append(path)
    with transaction(db):
        for table, ids in found.items():
            db.executemany(f"DELETE FROM {table} WHERE id = ?", [(rowid,) for rowid in ids])
    return written
