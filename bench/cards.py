"""Bilingual coding-agent memory cards: find the right memory within a project.

All cards go into one store as memories (kind mapped to the engine's, the original kind
kept as a tag); each query searches its project plus global memories. hit@k: any relevant
card in the top k. Queries of type "none" have no relevant card: they count only towards
`none_empty`, the share whose woven knowledge tier is empty (null while the engine has no
weave).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from datasets import Store, load_cards
from harness import BaselineStore, Opener, SearchStore, engine_opener, run_stores
from metrics import hit_at_k, mean

DEPTH = 10
CUTOFFS = (1, 3)
NONE = "none"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=Path, required=True, help="memories.jsonl")
    parser.add_argument("--queries", type=Path, required=True, help="queries*.jsonl")


def _ask(store: SearchStore, cards: Store) -> list[dict[str, Any]]:
    rows = []
    for query in cards.queries:
        if query.group == NONE:
            empty = store.knowledge_empty(query.text, query.project)
            rows.append({"type": NONE, "empty": empty})
            continue
        ranked = store.search(query.text, DEPTH, project=query.project)
        hits = {f"hit@{k}": hit_at_k(ranked, query.relevant, k) for k in CUTOFFS}
        rows.append({"type": query.group} | hits)
    return rows


def _hits(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(rows)} | {f"hit@{k}": mean([row[f"hit@{k}"] for row in rows]) for k in CUTOFFS}


def _none_empty(rows: list[dict[str, Any]]) -> float | None:
    answers = [row["empty"] for row in rows if row["type"] == NONE]
    if not answers or None in answers:
        return None
    return mean([float(answer) for answer in answers])


def evaluate(cards: Store, opener: Opener, label: str) -> dict[str, Any]:
    rows, clock = run_stores([cards], opener, label, _ask)
    scored = [row for row in rows if row["type"] != NONE]
    by_type: dict[str, Any] = {
        kind: _hits([row for row in scored if row["type"] == kind])
        for kind in sorted({row["type"] for row in scored})
    }
    nones = [row for row in rows if row["type"] == NONE]
    if nones:
        by_type[NONE] = {"n": len(nones), "none_empty": _none_empty(rows)}
    hits = _hits(scored)
    return hits | {"by_type": by_type, "none_empty": _none_empty(rows)} | clock.report()


def run(args: argparse.Namespace) -> dict[str, Any]:
    cards = load_cards(args.memories, args.queries)
    if args.limit is not None:
        cards = Store(cards.name, cards.docs, cards.queries[: args.limit])
    report = evaluate(cards, engine_opener("memories", args), "cards engine")
    report["baseline"] = evaluate(cards, BaselineStore, "cards baseline")
    report["counts"] = {
        "memories": len(cards.docs),
        "queries": len(cards.queries),
        "scored": report["n"],
    }
    return report
