"""Search over the team mirror (never the network): BM25 and the main model, fused.

Team hits are scored as own memories are (the language-gated fusion of retrieve.py, each
channel scaled within the team's candidates) and multiplied by TEAM_RANK, so for equal
relevance a member's own memory ranks first. A memory this member published is left out:
it is an own memory here. Hits carry `team:ID` ids and their authors in `extra`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from mnemoweave.model import Hit
from mnemoweave.recall.retrieve import _normalise, fuse, same_language
from mnemoweave.store import fts
from mnemoweave.store import team as team_table
from mnemoweave.team.mirror import TABLE
from mnemoweave.text import language

TEAM_RANK = 0.9  # a team hit's score against an own memory's for the same relevance


def ref(cid: str) -> str:
    return f"team:{cid[:12]}"


def hits(
    engine: Any, query: str, k: int, scope: Sequence[str] | None, kind: str | None, mode: str
) -> list[Hit]:
    db, config = engine.db, engine.config
    n = max(config.candidates, k)
    rows: dict[str, Any] = {}
    lexical: dict[str, float] = {}
    dense: dict[str, float] = {}
    expression = fts.match_expression(query) if mode != "dense" else None
    if expression is not None:
        found = fts.ranked(db, "team_mirror", expression, n * 4)
        by_id = team_table.mirror_by_rowid(db, [rowid for rowid, _ in found])
        for rowid, score in found:
            if rowid in by_id:
                rows[by_id[rowid]["cid"]] = by_id[rowid]
                lexical[by_id[rowid]["cid"]] = score
    channel = engine.channels[0] if engine.channels and mode != "lexical" else None
    if channel is not None:
        key = (channel.name, query)
        vector = engine._vectors.get(key)  # the weave's own search embedded it already
        if vector is None:
            vector = channel.embedder.embed([query], query=True)[0]
        near = [
            (c, cos)
            for c, cos in channel.index.query(TABLE, vector, n * 3, scope)
            if cos >= config.min_cosine
        ]
        rows |= team_table.mirror_rows(db, [c for c, _ in near if c not in rows])
        dense = dict(near)
    mine = {cid for cid, _ in team_table.published(db).values()}
    eligible = {
        cid: row
        for cid, row in rows.items()
        if cid not in mine
        and (scope is None or row["project"] in scope)
        and (kind is None or row["kind"] == kind)
    }
    lex = _normalise({c: lexical[c] for c in eligible if c in lexical}, 0.0)
    den = _normalise({c: dense[c] for c in eligible if c in dense}, config.min_cosine)
    asked = language(query)
    scored = []
    for cid, row in eligible.items():
        same = same_language(asked, language(row["text"]))
        parts = [den.get(cid, 0.0)] if channel is not None else []
        fused = (
            lex.get(cid, 0.0)
            if channel is None
            else fuse(lex.get(cid, 0.0), parts, same, config, mode)
        )
        if fused > 0:
            scored.append((fused * TEAM_RANK, cid, row))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [_hit(cid, row, score, dense.get(cid), channel, mode) for score, cid, row in scored[:k]]


def _hit(cid: str, row: Any, score: float, cosine: float | None, channel: Any, mode: str) -> Hit:
    explain: dict[str, Any] = {"mode": mode, "team_rank": TEAM_RANK, "dense": {}}
    if channel is not None and cosine is not None:
        explain["dense"] = {channel.name: {"cosine": round(cosine, 6)}}
    return Hit(
        ref(cid),
        row["kind"],
        row["text"],
        score,
        row["project"],
        row["created"],
        {
            "authors": json.loads(row["authors"]),
            "updated": row["updated"],
            "title": "",
            "evidence": [],
            "explain": explain,
            "age": time.time() - row["updated"],
        },
    )
