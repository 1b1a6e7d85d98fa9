"""LoCoMo: evidence-turn retrieval in long two-person conversations.

Each conversation is its own store of turns "<speaker>: <text>" (session date as the
timestamp); the question is the query; hits are evidence dia_ids among the top turns.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from datasets import ADVERSARIAL, LOCOMO_CATEGORIES, Store, load_locomo
from harness import BaselineStore, Opener, SearchStore, engine_opener, run_stores
from metrics import hit_at_k, mean, recall_at_k

DEPTH = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="locomo10*.json")


def _ask(store: SearchStore, conversation: Store) -> list[dict[str, Any]]:
    rows = []
    for query in conversation.queries:
        ranked = store.search(query.text, DEPTH)
        rows.append(
            {
                "group": query.group,
                "hit@5": hit_at_k(ranked, query.relevant, 5),
                "hit@10": hit_at_k(ranked, query.relevant, 10),
                "recall@10": recall_at_k(ranked, query.relevant, 10),
            }
        )
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(rows)} | {
        name: mean([row[name] for row in rows]) for name in ("hit@5", "hit@10", "recall@10")
    }


def evaluate(conversations: list[Store], opener: Opener, label: str) -> dict[str, Any]:
    """Metrics for categories 1-4 together and apart, and for category 5 (adversarial)."""
    rows, clock = run_stores(conversations, opener, label, _ask)
    groups = list(LOCOMO_CATEGORIES.values())
    return {
        "all_1_4": _summary([row for row in rows if row["group"] in groups]),
        "by_category": {
            name: _summary([row for row in rows if row["group"] == name]) for name in groups
        },
        "adversarial": _summary([row for row in rows if row["group"] == ADVERSARIAL]),
        **clock.report(),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    conversations = load_locomo(args.data)[: args.limit]
    report = evaluate(conversations, engine_opener("turns", args), "locomo engine")
    report["baseline"] = evaluate(conversations, BaselineStore, "locomo baseline")
    report["n"] = report["all_1_4"]["n"]
    report["counts"] = {
        "conversations": len(conversations),
        "turns": sum(len(c.docs) for c in conversations),
        "questions_1_4": report["all_1_4"]["n"],
        "questions_5": report["adversarial"]["n"],
    }
    return report
