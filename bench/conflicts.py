"""Conflict detection: precision / recall of "needs a decision" on labelled memory pairs.

`bench/data/conflict_pairs.jsonl` holds 240 pairs of coding-team memories (en, zh, and
mixed: one side each), labelled `conflict` (same subject, incompatible claims), `update`
(the second replaces the first's value), `compatible` (same subject, both hold) or
`unrelated` (different subjects, some sharing words), split dev / check at random (seed
18, stratified by label and language). `mnemoweave.learn.conflicts.detect(a, b, cosine)` is run
on each pair with the main model's cosine (or none: `--embedder none`, lexical only).
The positive class is conflict or update; the report gives precision, recall, F1 and the
confusion of the four labels against the verdict (conflict / update / none), per split and
per language. Thresholds were tuned on the dev half only.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from harness import load_embedders
from mnemoweave.learn.conflicts import detect

DATA = Path(__file__).resolve().parent / "data" / "conflict_pairs.jsonl"
LABELS = ("conflict", "update", "compatible", "unrelated")
POSITIVE = ("conflict", "update")
TARGET = {"precision": 0.85, "recall": 0.75}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="labelled pairs (.jsonl)")
    parser.add_argument(
        "--verbose", action="store_true", help="list the misses (false positives, negatives)"
    )


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def scores(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision, recall and F1 of "needs a decision", and the label x verdict confusion."""
    tp = sum(1 for row in rows if row["label"] in POSITIVE and row["verdict"])
    fp = sum(1 for row in rows if row["label"] not in POSITIVE and row["verdict"])
    fn = sum(1 for row in rows if row["label"] in POSITIVE and not row["verdict"])
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall
        else None
    )
    counts = Counter((row["label"], row["verdict"] or "none") for row in rows)
    return {
        "n": len(rows),
        "precision": None if precision is None else round(precision, 3),
        "recall": None if recall is None else round(recall, 3),
        "f1": None if f1 is None else round(f1, 3),
        "confusion": {
            label: {v: counts[(label, v)] for v in ("conflict", "update", "none")}
            for label in LABELS
            if any(row["label"] == label for row in rows)
        },
    }


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores per split, and per language within each split."""
    out: dict[str, Any] = {}
    for split in ("dev", "check"):
        part = [row for row in rows if row["split"] == split]
        if not part:
            continue
        out[split] = scores(part)
        out[split]["meets_target"] = all(
            out[split][key] is not None and out[split][key] >= value
            for key, value in TARGET.items()
        )
        out[split]["by_language"] = {
            lang: scores([row for row in part if row["lang"] == lang])
            for lang in ("en", "zh", "mixed")
            if any(row["lang"] == lang for row in part)
        }
    return out


def judge(pairs: list[dict[str, Any]], cosines: list[float] | None) -> list[dict[str, Any]]:
    rows = []
    for i, pair in enumerate(pairs):
        cosine = None if cosines is None else cosines[i]
        verdict = detect(pair["a"], pair["b"], cosine)
        rows.append(pair | {"verdict": verdict.kind, "reason": verdict.reason, "cosine": cosine})
    return rows


def misses(rows: list[dict[str, Any]]) -> list[str]:
    return [
        f"{row['split']} {row['label']} -> {row['verdict']}: {row['a']} | {row['b']} "
        f"({row['reason']})"
        for row in rows
        if (row["label"] in POSITIVE) != bool(row["verdict"])
    ]


def run(args: argparse.Namespace) -> dict[str, Any]:
    pairs = load(args.data)
    out: dict[str, Any] = {
        "n": len(pairs),
        "labels": dict(Counter(pair["label"] for pair in pairs)),
        "target": TARGET,
    }
    embedders = load_embedders(args.embedder, args.models)
    runs: list[tuple[str, list[float] | None]] = [("lexical", None)]
    for embedder in embedders[:1]:  # the detector takes the main model's cosine
        a = embedder.embed([pair["a"] for pair in pairs])
        b = embedder.embed([pair["b"] for pair in pairs])
        runs.insert(0, (embedder.name, [float(c) for c in (a * b).sum(axis=1)]))
    for name, cosines in runs:
        rows = judge(pairs, cosines)
        out[name] = report(rows)
        if getattr(args, "verbose", False):
            out[name]["misses"] = misses(rows)
    return out
