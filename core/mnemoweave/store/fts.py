"""Full-text index over jieba-segmented text (FTS5, BM25)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from mnemoweave.text import content_terms, segment, terms, translations


def index(db: sqlite3.Connection, table: str, rowid: int, text: str) -> None:
    db.execute(f"INSERT INTO {table}_fts (rowid, text) VALUES (?, ?)", (rowid, segment(text)))


def unindex(db: sqlite3.Connection, table: str, rowid: int) -> None:
    db.execute(f"DELETE FROM {table}_fts WHERE rowid = ?", (rowid,))


def compact(db: sqlite3.Connection, table: str) -> None:
    """Merge the index segments so deleted rows leave no tokens behind."""
    db.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('optimize')")


def replace_all(db: sqlite3.Connection, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """Rebuild a table's index from (rowid, text) pairs."""
    db.execute(f"DELETE FROM {table}_fts")
    for rowid, text in rows:
        index(db, table, rowid, text)


def match_expression(query: str, drop_stopwords: bool = True) -> str | None:
    """An FTS5 query matching any token of `query` (ranked by BM25), or None if it has none;
    each content word also matches its glossary equivalents in the other language
    (text.translations: "部署" finds "deploy").

    Stopwords are dropped unless nothing else is left ("what did I say?" still matches).
    """
    seen = dict.fromkeys(terms(query))
    if drop_stopwords:
        seen = dict.fromkeys(content_terms(query)) or seen
    if not seen:
        return None
    seen |= dict.fromkeys(other for token in list(seen) for other in translations(token))
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in seen)


def ranked(db: sqlite3.Connection, table: str, expression: str, limit: int) -> list[sqlite3.Row]:
    """The (rowid, score) of the best `limit` rows of `table` that match `expression`, best
    first; the score is BM25 negated, so higher is better."""
    return db.execute(
        f"SELECT rowid, -bm25({table}_fts) FROM {table}_fts WHERE {table}_fts MATCH ?"
        f" ORDER BY bm25({table}_fts) LIMIT ?",
        (expression, limit),
    ).fetchall()


def frequencies(db: sqlite3.Connection, table: str, wanted: Sequence[str]) -> dict[str, int]:
    """How many of `table`'s rows hold each of these terms (a term in none is left out)."""
    if not wanted:
        return {}
    marks = ",".join("?" * len(wanted))
    return dict(
        db.execute(
            f"SELECT term, doc FROM {table}_vocab WHERE term IN ({marks})", list(wanted)
        ).fetchall()
    )


def missing_and_extra(db: sqlite3.Connection, table: str) -> tuple[int, int]:
    """Rows of `table` absent from its index, and index entries with no row."""
    missing = db.execute(
        f"SELECT count(*) FROM {table} WHERE id NOT IN (SELECT rowid FROM {table}_fts)"
    ).fetchone()[0]
    extra = db.execute(
        f"SELECT count(*) FROM {table}_fts WHERE rowid NOT IN (SELECT id FROM {table})"
    ).fetchone()[0]
    return missing, extra
