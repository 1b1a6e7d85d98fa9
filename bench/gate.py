"""The relevance gate: fit it on labelled prompts and draw its precision / recall curve.

Every candidate the weave's knowledge tier weighs (`weave.weigh`: memories and earlier
sessions' turns) becomes a row with the gate's features. Rows of on-topic prompts are
positive when the candidate is one of the prompt's evidence turns (or a memory citing
one) and left out otherwise (a nearby turn may help or not); every candidate of an
off-topic prompt (coding chores, small talk, another project's topics, hard negatives,
and five fixed unrelated prompts per LongMemEval store) is negative. A logistic model is
fitted on the dev half (`--fit`), and the curve is drawn on both halves at prompt level:
recall = on-topic prompts with an evidence candidate at or above the threshold,
off-topic lines = candidates at or above it per off-topic prompt, precision = on-topic
prompts found / all prompts given any line. The weave has two gates: a prompt gets
knowledge only when one candidate reaches `weave_gate` (chosen on the first curve), and
then every candidate that reaches `weave_line_gate` (chosen on the second, `lines_*`,
drawn with that trigger), both by the same rule: the best dev recall with at most
`TARGET_OFFTOPIC` off-topic lines per prompt.

`.venv/bin/python bench/run.py gate --data bench/data/coding_e2e.json
 --lme ../shared/bench/longmemeval/longmemeval_s.dev.json.gz [--lme-n N] [--fit] --json`
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import load_embedders, progress
from mnemoweave import relevance
from mnemoweave.relevance import NOT_FOUND, Gate
from mnemoweave.text import terms
from mnemoweave.weave import weigh
from reach import (
    OFFTOPIC,
    ON_TOPIC,
    Case,
    Prompt,
    fresh_engine,
    ingest,
    load_coding_case,
    load_longmemeval_cases,
)

FEATURES = ("cosine", "info", "matched")
THRESHOLDS = tuple(round(0.01 * i, 2) for i in range(1, 100))
TARGET_OFFTOPIC = 0.10  # knowledge lines per off-topic prompt the chosen threshold allows


@dataclass(frozen=True)
class Row:
    """One candidate of one prompt: its features and label (None: not judged)."""

    prompt: str
    half: str
    kind: str  # on-topic or off-topic
    source: str  # coding or lme
    features: tuple[float, ...]
    label: int | None
    extra: dict[str, float] | None = None  # further signals, for trying other models


def _extra(weighed: Any, gates: dict[str, Any], rank: int) -> dict[str, float]:
    """Signals the shipped model does not use, kept in the rows to try other models."""
    gate = gates["memories" if weighed.hit.id.startswith("m_") else "turns"]
    have = set(terms(weighed.hit.text))
    known = {t: w for t, w in gate.weights.items() if gate.known.get(t)}
    own = weighed.signals
    return {
        "own_coverage": own.coverage,
        "own_cosine": NOT_FOUND if own.cosine is None else own.cosine,
        "coverage_known": sum(w for t, w in known.items() if t in have)
        / (sum(known.values()) or 1),
        "rank": float(rank),
        "memory": float(weighed.hit.id.startswith("m_")),
        "user": float(weighed.hit.extra.get("role") == "user"),
    }


def _rows(engine: Any, case: Case, stored: dict[str, str], half_of: Any, source: str) -> list[Row]:
    rows = []
    for prompt in case.prompts:
        memories, past, gate = weigh(engine, prompt.text, f"gate-{prompt.id}", prompt.project)
        gates = {"turns": gate, "memories": Gate(engine, prompt.text, "memories")}
        on_topic = bool(prompt.evidence)
        ranked = [(w, i) for group in (memories, past) for i, w in enumerate(group, 1)]
        for weighed, rank in ranked:
            refs = [weighed.hit.id, *weighed.hit.extra.get("evidence", ())]
            hit = any(stored.get(ref) in prompt.evidence for ref in refs)
            label = (1 if hit else None) if on_topic else 0
            features = weighed.signals.features()
            rows.append(
                Row(
                    prompt.id,
                    half_of(prompt),
                    ON_TOPIC if on_topic else "off-topic",
                    source,
                    tuple(features.get(name, 0.0) for name in FEATURES),
                    label,
                    _extra(weighed, gates, rank),
                )
            )
        if on_topic and not any(r.prompt == prompt.id and r.label for r in rows):
            rows.append(Row(prompt.id, half_of(prompt), ON_TOPIC, source, (), None))  # missed
    return rows


def collect(args: argparse.Namespace) -> list[Row]:
    """Candidate rows of the coding set (one store) and of LongMemEval (one per question)."""
    embedders = load_embedders(args.embedder, args.models)
    rows: list[Row] = []
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    halves = {letter: load_coding_case(data, letter, None) for letter in ("a", "b")}
    with fresh_engine(embedders) as engine:
        progress(f"gate: coding set, {sum(len(c.prompts) for c in halves.values())} prompts")
        stored = ingest(engine, halves["a"].sessions)
        for letter, case in halves.items():
            rows += _rows(engine, case, stored, lambda p, h=letter: h, "coding")
    if args.lme:
        opener = gzip.open if str(args.lme).endswith(".gz") else open
        with opener(args.lme, "rt", encoding="utf-8") as handle:
            items = json.load(handle)
        for letter in ("a", "b"):
            for number, case in enumerate(load_longmemeval_cases(items, letter, args.lme_n), 1):
                progress(f"gate: longmemeval half {letter}, {number} {case.name}")
                fixed = tuple(
                    Prompt(f"{case.name}-off{i}", case.prompts[0].project, text, "fixed")
                    for i, text in enumerate(OFFTOPIC)
                )
                case = Case(case.name, case.sessions, case.prompts + fixed)
                with fresh_engine(embedders) as engine:
                    stored = ingest(engine, case.sessions)
                    rows += _rows(engine, case, stored, lambda p, h=letter: h, "lme")
    return rows


def fit(rows: Sequence[Row], l2: float = 1e-3) -> dict[str, float]:
    """Logistic regression (Newton's method), positives and negatives weighted equally."""
    judged = [r for r in rows if r.label is not None and r.features]
    x = np.array([(1.0, *r.features) for r in judged])
    y = np.array([r.label for r in judged], dtype=float)
    weight = np.where(y == 1, 0.5 / max(1, y.sum()), 0.5 / max(1, (1 - y).sum()))
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(x @ beta)))
        gradient = x.T @ (weight * (p - y)) + l2 * beta
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"bias": round(float(beta[0]), 3)} | {
        name: round(float(b), 3) for name, b in zip(FEATURES, beta[1:], strict=True)
    }


def _score(model: dict[str, float], features: tuple[float, ...]) -> float:
    z = model["bias"] + sum(model.get(n, 0.0) * v for n, v in zip(FEATURES, features, strict=True))
    return float(1 / (1 + np.exp(-z)))


def curve(
    rows: Sequence[Row], model: dict[str, float], trigger: float | None = None
) -> list[dict[str, float]]:
    """Prompt-level recall, off-topic lines per prompt and precision at each threshold.

    With a `trigger`, the threshold is the line gate: a prompt gets the candidates at or
    above it only when its best candidate reaches the trigger (the weave's two gates)."""
    scored: dict[str, list[tuple[float, int | None]]] = {}  # prompt -> (score, label)
    kinds: dict[str, str] = {}
    for r in rows:
        kinds[r.prompt] = r.kind
        scored.setdefault(r.prompt, [])
        if r.features:
            scored[r.prompt].append((_score(model, r.features), r.label))
    points = []
    for t in THRESHOLDS:
        if trigger is not None and t > trigger:
            break
        found = noisy = lines = on_topic = 0
        for prompt, candidates in scored.items():
            fires = trigger is None or any(score >= trigger for score, _ in candidates)
            given = [label for score, label in candidates if fires and score >= t]
            if kinds[prompt] == ON_TOPIC:
                on_topic += 1
                found += any(label == 1 for label in given)
            else:
                noisy += bool(given)
                lines += len(given)
        off_topic = len(scored) - on_topic
        points.append(
            {
                "threshold": t,
                "recall": round(found / max(1, on_topic), 3),
                "offtopic_lines_per_prompt": round(lines / max(1, off_topic), 3),
                "offtopic_prompts_with_lines": round(noisy / max(1, off_topic), 3),
                "precision": round(found / max(1, found + noisy), 3),
            }
        )
    return points


def choose(points: Sequence[dict[str, float]]) -> float:
    """The threshold with the best recall whose off-topic lines stay within the target."""
    allowed = [p for p in points if p["offtopic_lines_per_prompt"] <= TARGET_OFFTOPIC]
    return max(allowed, key=lambda p: (p["recall"], -p["threshold"]))["threshold"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="bench/data/coding_e2e.json")
    parser.add_argument("--lme", type=Path, default=None, help="longmemeval_s*.json(.gz)")
    parser.add_argument("--lme-n", type=int, default=None, help="LongMemEval questions per half")
    parser.add_argument("--fit", action="store_true", help="fit the model on the dev half")
    parser.add_argument("--rows", type=Path, default=None, help="save (or reuse) the rows here")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.rows and args.rows.exists():
        rows = [
            Row(**(r | {"features": tuple(r["features"])}))
            for r in json.loads(args.rows.read_text())
        ]
    else:
        rows = collect(args)
        if args.rows:
            args.rows.write_text(json.dumps([r.__dict__ for r in rows]))
    mode = "lexical" if args.embedder == "none" else "hybrid"
    shipped = dict(relevance.GATE_WEIGHTS[mode])
    model = fit([r for r in rows if r.half == "a"]) if args.fit else shipped
    report: dict[str, Any] = {"model": model, "shipped": shipped}
    for half in ("a", "b"):
        for source in ("coding", "lme", "all"):
            chosen = [r for r in rows if r.half == half and source in ("all", r.source)]
            if chosen:
                report[f"curve_{half}_{source}"] = curve(chosen, model)
    report["threshold"] = trigger = choose(report["curve_a_all"])
    for half in ("a", "b"):
        for source in ("coding", "lme", "all"):
            chosen = [r for r in rows if r.half == half and source in ("all", r.source)]
            if chosen:
                report[f"lines_{half}_{source}"] = curve(chosen, model, trigger)
    report["line_threshold"] = choose(report["lines_a_all"])
    report["counts"] = {
        "rows": len(rows),
        "prompts": len({r.prompt for r in rows}),
        "positive_rows": sum(r.label == 1 for r in rows),
        "negative_rows": sum(r.label == 0 for r in rows),
    }
    return report
