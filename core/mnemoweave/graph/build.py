"""Keeping the knowledge graph in step with the texts it is read from. A text is read as it
is written, in the write's transaction (`read`): a memory when it is stored or edited, a
turn when it is stored, which is after a hook's answer. What an older version stored, or
read with older rules (`RULES`), is read by the daemon a batch at a time while it is idle,
and by a command that shows the graph; `reindex` reads everything again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from mnemoweave.graph.extract import extract
from mnemoweave.store import graph as graph_table
from mnemoweave.store.db import transaction
from mnemoweave.text import cjk_count

RULES = "2"  # the version of the extraction rules: a text read with others is read again
BATCH = 16
TEXT_LIMIT = 4000  # characters of a long turn read (a pasted log names little more)


def read(db: sqlite3.Connection, table: str, rid: int, text: str, ts: float) -> None:
    """Read one text into the graph (inside the caller's transaction). A name the store
    already knows as an entity counts however the text writes it ("owlfw" found once as
    a sentence's subject is found again in "the GPIO code of owlfw")."""
    text = text[:TEXT_LIMIT]
    found = extract(text, known(db, text))
    mentions = [(m.key, m.name, m.kind) for m in found.mentions]
    relations = [(r.type, r.source, r.target) for r in found.relations]
    graph_table.record(db, table, rid, RULES, (mentions, relations, found.aliases), ts)


def known(db: sqlite3.Connection, text: str) -> dict[str, str]:
    """The text's words (one to three at a time) that name an entity the store holds:
    as written, lowercase -> the entity's kind."""
    from mnemoweave.graph.recall import word_keys

    grams = word_keys(text)
    found = graph_table.entities_of(db, grams)
    return written(grams, {k: kind for k, (_, kind) in found.items()})


def written(grams: dict[str, tuple[str, ...]], kinds: dict[str, str]) -> dict[str, str]:
    """The known names as the text writes them (Chinese without spaces) -> their kinds."""
    joiner = {True: "", False: " "}
    return {joiner[bool(cjk_count(k))].join(grams[k]): kind for k, kind in kinds.items()}


def steps(db: sqlite3.Connection, size: int = BATCH) -> Iterator[int]:
    """Read what the graph lacks, one transaction of up to `size` texts per step; each
    step yields how many texts it read or dropped. Ends when the graph is current."""
    while True:
        with transaction(db) as tx:
            dropped = graph_table.gone(tx)
            for table, rid in dropped:
                graph_table.forget(tx, table, rid)
            done = len(dropped)
            for table in graph_table.TEXTS:
                rows = graph_table.stale(tx, table, RULES, size - done) if done < size else []
                for row in rows:
                    read(tx, table, row["id"], row["text"], row["ts"])
                done += len(rows)
            if done:  # a text read again may no longer name an entity
                graph_table.prune(tx)
        if not done:
            return
        yield done


def catch_up(db: sqlite3.Connection) -> int:
    """All of `steps` at once; how many texts were read or dropped."""
    return sum(steps(db, 256))


def rebuild(db: sqlite3.Connection) -> int:
    """The graph read again from every text (a user's merges kept); texts read."""
    with transaction(db) as tx:
        graph_table.clear(tx)
    return catch_up(db)
