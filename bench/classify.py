"""Turn-classifier benchmark: accuracy and macro-F1 of `mnemoweave.learn.classify` on turns.

Data: JSONL, one turn a line: {"id", "role", "text", "kind", "lang"?, "hard"?}.
`.venv/bin/python bench/classify.py --data bench/data/classify_heldout.jsonl` prints one
JSON object. `evaluate(path)` returns the same dict for bench/run.py.

The classifier's learned lexicon is rebuilt from the training turns (never from held-out or
check sets) with:
`.venv/bin/python bench/classify.py --data bench/data/classify_train.jsonl --build-ngrams`
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

from metrics import percentiles
from mnemoweave.learn.classify import KINDS, NGRAMS_FILE, classify, ngram_features
from mnemoweave.text import language


def load(path: str | Path) -> list[dict[str, Any]]:
    """The labelled turns of a JSONL file (blank lines skipped)."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("kind") not in KINDS:
                raise ValueError(f"{path}:{number}: unknown kind {row.get('kind')!r}")
            row.setdefault("role", "user")
            row.setdefault("lang", language(row["text"]))
            rows.append(row)
    return rows


def _f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 (over the kinds present in gold or predictions) and per-kind P/R/F1."""
    n = len(gold)
    if not n:
        return {"n": 0, "accuracy": None, "macro_f1": None, "by_kind": {}}
    by_kind: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        tp = sum(g == p == kind for g, p in zip(gold, pred, strict=True))
        fp = sum(p == kind != g for g, p in zip(gold, pred, strict=True))
        fn = sum(g == kind != p for g, p in zip(gold, pred, strict=True))
        if tp + fp + fn == 0:
            continue
        precision, recall, f1 = _f1(tp, fp, fn)
        by_kind[kind] = {
            "precision": round(precision, 3),
            "recall": round(recall, 3),
            "f1": round(f1, 3),
            "support": tp + fn,
        }
    accuracy = sum(g == p for g, p in zip(gold, pred, strict=True)) / n
    macro = sum(k["f1"] for k in by_kind.values()) / len(by_kind)
    return {"n": n, "accuracy": round(accuracy, 3), "macro_f1": round(macro, 3), "by_kind": by_kind}


def _majority_baseline(rows: list[dict[str, Any]], gold: list[str]) -> dict[str, Any]:
    """The same scores for always answering the most common kind (computed on this data)."""
    majority = Counter(gold).most_common(1)[0][0] if gold else "chat"
    report = scores(gold, [majority] * len(gold))
    by_lang = {}
    for lang in ("zh", "en"):
        picked = [i for i, row in enumerate(rows) if row["lang"] == lang]
        sub = scores([gold[i] for i in picked], [majority] * len(picked))
        by_lang[lang] = {key: sub[key] for key in ("n", "accuracy", "macro_f1")}
    return {"predicts": majority, **report, "by_lang": by_lang}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="labelled turns (.jsonl)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """`bench/run.py classify --data FILE`: the built-in classifier on labelled turns."""
    return evaluate(args.data)


def evaluate(path: str | Path, embedder: Any = None, errors: bool = False) -> dict[str, Any]:
    """Classify every turn of `path` and score it: overall, per language, per kind, confusion.

    `confusion[gold][predicted]` counts turns. With `errors`, the misclassified turns are
    listed too.
    """
    rows = load(path)
    gold = [row["kind"] for row in rows]
    pred: list[str] = []
    classify("warm up: load the lexicon", embedder=embedder)  # not part of the timing
    latencies = []
    for row in rows:
        started = perf_counter()
        pred.append(classify(row["text"], role=row["role"], embedder=embedder).kind)
        latencies.append((perf_counter() - started) * 1000)
    elapsed_ms = sum(latencies)
    report = scores(gold, pred)
    langs: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        langs[row["lang"]].append(index)
    by_lang = {}
    for lang in sorted(set(langs) | {"zh", "en"}):
        picked = langs.get(lang, [])
        sub = scores([gold[i] for i in picked], [pred[i] for i in picked])
        by_lang[lang] = {key: sub[key] for key in ("n", "accuracy", "macro_f1")}
    confusion: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        counts = Counter(p for g, p in zip(gold, pred, strict=True) if g == kind)
        if counts:
            confusion[kind] = {k: counts[k] for k in KINDS if counts[k]}
    report.update(
        {
            "data": str(path),
            "by_lang": by_lang,
            "confusion": confusion,
            "hard": _subset(rows, gold, pred, lambda row: bool(row.get("hard"))),
            "ms_per_turn": round(elapsed_ms / len(rows), 4) if rows else None,
            "latency_ms": percentiles(latencies),
            "baseline": _majority_baseline(rows, gold),
        }
    )
    if errors:
        report["errors"] = [
            {"id": row.get("id"), "gold": g, "pred": p, "role": row["role"], "text": row["text"]}
            for row, g, p in zip(rows, gold, pred, strict=True)
            if g != p
        ]
    return report


def _subset(rows: Iterable[dict[str, Any]], gold, pred, keep) -> dict[str, Any]:
    picked = [i for i, row in enumerate(rows) if keep(row)]
    sub = scores([gold[i] for i in picked], [pred[i] for i in picked])
    return {key: sub[key] for key in ("n", "accuracy", "macro_f1")}


def build_ngrams(
    path: str | Path, out: str | Path = NGRAMS_FILE, alpha: float = 0.5
) -> dict[str, Any]:
    """Write the learned lexicon: naive-Bayes log-ratios of each feature for each kind.

    A feature counts once per turn; `alpha` is the additive smoothing. Each feature's
    log-likelihoods are centred over the kinds, so only differences between kinds remain.
    """
    rows = load(path)
    counts = {kind: Counter() for kind in KINDS}
    for row in rows:
        counts[row["kind"]].update(ngram_features(row["text"], row["role"]))
    vocabulary = sorted(set().union(*counts.values()))
    totals = {kind: sum(counts[kind].values()) + alpha * len(vocabulary) for kind in KINDS}
    weights = {}
    for feature in vocabulary:
        logs = [math.log((counts[k][feature] + alpha) / totals[k]) for k in KINDS]
        mean = sum(logs) / len(logs)
        weights[feature] = [round(value - mean, 2) for value in logs]
    data = {
        "about": "learned lexicon of mnemoweave.learn.classify; built by bench/classify.py",
        "source": Path(path).name,
        "turns": len(rows),
        "alpha": alpha,
        "kinds": list(KINDS),
        "weights": weights,
    }
    Path(out).write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return {"out": str(out), "turns": len(rows), "features": len(weights)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="labelled turns, JSONL")
    parser.add_argument("--errors", action="store_true", help="also list misclassified turns")
    parser.add_argument(
        "--build-ngrams",
        action="store_true",
        help="instead of evaluating, rebuild the learned lexicon from --data (training turns)",
    )
    args = parser.parse_args(argv)
    if args.build_ngrams:
        report = build_ngrams(args.data)
    else:
        report = evaluate(args.data, errors=args.errors)
    json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
