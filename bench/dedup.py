"""Near-duplicate threshold: which cosine separates rewordings from different memories.

`bench/data/dedup_pairs.jsonl` holds bilingual pairs labelled `same` (a rewording, which
should merge) or not (close but different: tabs vs spaces, 10 s vs 60 s, which must not).
For each threshold the report gives precision and recall of "merge" as the engine decides
it (cosine at or above the threshold, and not the same words reordered), per model; the
engine's `dedup_threshold` is the lowest threshold with no false merge on this set.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from harness import load_embedders
from mnemoweave.text import is_near_duplicate

DATA = Path(__file__).resolve().parent / "data" / "dedup_pairs.jsonl"
THRESHOLDS = [round(t, 2) for t in np.arange(0.80, 1.0, 0.01)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="labelled pairs (.jsonl)")


def _sweep(pairs: list[dict], cosines: np.ndarray, same: np.ndarray) -> list[dict[str, Any]]:
    rows = []
    for threshold in THRESHOLDS:
        merged = np.array(
            [
                is_near_duplicate(pair["a"], pair["b"], float(cosine), threshold)
                for pair, cosine in zip(pairs, cosines, strict=True)
            ]
        )
        true = int((merged & same).sum())
        rows.append(
            {
                "threshold": threshold,
                "precision": round(true / merged.sum(), 3) if merged.any() else None,
                "recall": round(true / same.sum(), 3),
                "false_merges": int((merged & ~same).sum()),
            }
        )
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    pairs = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    same = np.array([pair["same"] for pair in pairs])
    report: dict[str, Any] = {"n": len(pairs), "same": int(same.sum())}
    for embedder in load_embedders(args.embedder, args.models):
        a = embedder.embed([pair["a"] for pair in pairs])
        b = embedder.embed([pair["b"] for pair in pairs])
        cosines = (a * b).sum(axis=1)
        sweep = _sweep(pairs, cosines, same)
        safe = [row for row in sweep if row["false_merges"] == 0]
        report[embedder.name] = {
            "lowest_safe_threshold": safe[0]["threshold"] if safe else None,
            "recall_at_safe": safe[0]["recall"] if safe else None,
            "max_cosine_different": round(float(cosines[~same].max()), 4),
            "sweep": sweep,
        }
    return report
