"""MemoryBank-SiliconFriend: recall an earlier exchange of a ten-day companion chat.

One store per user; each {query, response} pair is one turn "<query> <response>" dated by
its day. hit@k: any gold evidence id (evidence or evidence_alt) in the top k, whatever the
question's evidence_mode. Cross-lingual variant: Chinese history and gold with
`--query-lang en`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from datasets import Store, load_memorybank
from harness import BaselineStore, Opener, SearchStore, engine_opener, run_stores
from metrics import hit_at_k, mean

CUTOFFS = (1, 3, 5)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, required=True, help="memory_bank_{cn,en}.json")
    parser.add_argument("--gold", type=Path, required=True, help="gold_{cn,en}*.jsonl")
    parser.add_argument(
        "--query-lang",
        choices=("cn", "en"),
        default=None,
        help="which question_<lang> to ask (default: the history's language)",
    )


def _ask(store: SearchStore, user: Store) -> list[dict[str, Any]]:
    rows = []
    for query in user.queries:
        ranked = store.search(query.text, max(CUTOFFS))
        rows.append({f"hit@{k}": hit_at_k(ranked, query.relevant, k) for k in CUTOFFS})
    return rows


def evaluate(users: list[Store], opener: Opener, label: str) -> dict[str, Any]:
    rows, clock = run_stores(users, opener, label, _ask)
    metrics = {f"hit@{k}": mean([row[f"hit@{k}"] for row in rows]) for k in CUTOFFS}
    return metrics | {"n": len(rows)} | clock.report()


def run(args: argparse.Namespace) -> dict[str, Any]:
    users = load_memorybank(args.history, args.gold, args.query_lang)[: args.limit]
    report = evaluate(users, engine_opener("turns", args), "memorybank engine")
    report["baseline"] = evaluate(users, BaselineStore, "memorybank baseline")
    report["query_lang"] = args.query_lang or "history's"
    report["counts"] = {"users": len(users), "turns": sum(len(u.docs) for u in users)}
    return report
