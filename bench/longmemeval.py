"""LongMemEval-S: find the sessions (and turns) holding the answer in a ~115k-token history.

Official retrieval protocol: one store per question holding its user turns; sessions are
ranked by their best turn; targets are the `has_answer` user turns and their sessions.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from datasets import Store, load_longmemeval
from harness import BaselineStore, Opener, SearchStore, engine_opener, run_stores
from metrics import all_at_k, hit_at_k, mean, ndcg_at_k, unique

DEPTH = 100  # turns fetched per question: enough to rank well over 10 distinct sessions
SESSION_METRICS = ("recall_any@5", "recall_any@10", "recall_all@5", "recall_all@10", "ndcg@10")
TURN_METRICS = ("recall_any@5", "recall_any@10")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="longmemeval_s*.json(.gz)")


def _ask(store: SearchStore, question: Store) -> list[dict[str, Any]]:
    (query,) = question.queries
    session_of = {doc.key: doc.session for doc in question.docs}
    turns = store.search(query.text, DEPTH)
    sessions = unique(session_of[key] for key in turns)
    targets = {session_of[key] for key in query.relevant}
    return [
        {
            "session": {
                "recall_any@5": hit_at_k(sessions, targets, 5),
                "recall_any@10": hit_at_k(sessions, targets, 10),
                "recall_all@5": all_at_k(sessions, targets, 5),
                "recall_all@10": all_at_k(sessions, targets, 10),
                "ndcg@10": ndcg_at_k(sessions, targets, 10),
            },
            "turn": {
                "recall_any@5": hit_at_k(turns, query.relevant, 5),
                "recall_any@10": hit_at_k(turns, query.relevant, 10),
            },
        }
    ]


def evaluate(questions: list[Store], opener: Opener, label: str) -> dict[str, Any]:
    rows, clock = run_stores(questions, opener, label, _ask)
    return {
        "session": {name: mean([row["session"][name] for row in rows]) for name in SESSION_METRICS},
        "turn": {name: mean([row["turn"][name] for row in rows]) for name in TURN_METRICS},
        **clock.report(),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = load_longmemeval(args.data)[: args.limit]
    report = evaluate(questions, engine_opener("turns", args), "longmemeval engine")
    report["baseline"] = evaluate(questions, BaselineStore, "longmemeval baseline")
    report["n"] = len(questions)
    report["counts"] = {
        "questions": len(questions),
        "user_turns": sum(len(q.docs) for q in questions),
        "target_turns": sum(len(q.queries[0].relevant) for q in questions),
    }
    return report
