"""The relevance gate: fit its weights and choose its thresholds on labelled prompts.

Every candidate the weave's knowledge tier weighs (`weave.weigh`: memories, and earlier
sessions' turns) becomes a row with the gate's features (`Signals.features()`, exactly what
the weave scores), and whether the session already has it from its brief (those are never
woven for a prompt, so the thresholds are not chosen on them). Rows of on-topic prompts
are positive when the candidate is one of the prompt's evidence turns (or a memory citing
one) and left out otherwise (a nearby turn may help or not); every candidate of an
off-topic prompt is negative. The prompts:
- the coding set (one store; turns as they are, `--review none`, and every card accepted,
  `--review all`), its dev (a) and check (b) splits;
- LongMemEval (`--lme`, one store per question, both review modes; its five fixed unrelated
  prompts per store are the off-topic ones), halves a and b;
- the sanity cases (`--sanity`): one memory per store, then 10, 100 and 1,000 memories
  (fillers.py), direct and cross-language questions and unrelated prompts; dev and check
  splits.
A logistic model is fitted on the dev half of the rows of turns as they are (review none)
and of the sanity stores (`--fit`; otherwise the shipped GATE_WEIGHTS are read). Then the
thresholds are chosen on the dev half by one rule: the best mean recall (coding, LongMemEval,
sanity direct and cross-language) with no off-topic line in the sanity stores and at most
TARGET_OFFTOPIC lines per off-topic prompt on the coding set (review none) and on
LongMemEval (both modes); `memory_gate` applies to memories, `weave_gate` (also the line
gate) to exchanges. The report gives both halves at those thresholds, per source.

`.venv/bin/python bench/run.py gate --data bench/data/coding_e2e.json
 --lme ../shared/bench/longmemeval/longmemeval_s.dev.json.gz --sanity bench/data/sanity.json
 [--fit] [--rows FILE] --json`
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import sanity
from fillers import fillers, unrelated
from harness import load_embedders, progress
from mnemoweave.model import BRIEF_TIERS
from mnemoweave.recall import relevance
from mnemoweave.recall.exchanges import exchange_of
from mnemoweave.recall.knowledge import weigh
from reach import (
    OFFTOPIC,
    Prompt,
    accept_all,
    fresh_engine,
    ingest,
    load_coding_case,
    load_longmemeval_cases,
)

FEATURES = ("coverage", "matched", "key", "cosine", "cross_cosine", "cross")
TARGET_OFFTOPIC = 0.10  # knowledge lines per off-topic prompt the chosen thresholds allow
SLACK = 0.01  # of mean dev recall given up for stricter gates
SANITY_SIZES = (1, 10, 100, 1000)
GRID = tuple(round(0.02 * i, 2) for i in range(5, 50))  # 0.10 ... 0.98


@dataclass(frozen=True)
class Row:
    """One prompt and what the gate sees of each of its candidates."""

    prompt: str
    group: str  # e.g. "coding:none", "lme:all", "sanity:direct:10"
    half: str  # a (dev) or b (check)
    on_topic: bool
    candidates: list[dict[str, Any]]  # {"memory": bool, "label": 0|1|None, features...}


def _briefed(engine: Any, project: str) -> set[str]:
    """The ids a session of `project` has from its brief: the brief's memories and cards,
    and their evidence turns (the weave does not repeat them for a prompt)."""
    start = engine.weave("", project=project)
    shown = [line.ref for tier in BRIEF_TIERS for line in start.tiers.get(tier, ())]
    return {*shown, *(turn for ref in shown for turn in engine.get(ref).evidence)}


def _rows(
    engine: Any, prompts: Sequence[Prompt], hit: Any, group: Any, half: Any, brief: bool = True
) -> list[Row]:
    """The prompts' rows; `brief`: their sessions start with the project's brief."""
    rows: list[Row] = []
    briefs: dict[str, set[str]] = {}
    for prompt in prompts:
        if prompt.project not in briefs:
            briefs[prompt.project] = _briefed(engine, prompt.project) if brief else set()
        memories, past, _ = weigh(engine, prompt.text, f"gate-{prompt.id}", prompt.project)
        on_topic = bool(prompt.evidence)
        candidates = []
        for weighed in (*memories, *past):
            found = hit(prompt, weighed.hit)
            ref = weighed.hit.id
            line = exchange_of(engine, weighed.hit).refs if ref.startswith("t_") else (ref,)
            candidates.append(
                {
                    "memory": ref.startswith("m_"),  # cards are judged as talk is
                    "line": "+".join(line),  # what the weave shows it in: a turn's exchange
                    "briefed": ref in briefs[prompt.project],
                    "label": (1 if found else None) if on_topic else 0,
                    **weighed.signals.features(),
                }
            )
        rows.append(Row(prompt.id, group(prompt), half(prompt), on_topic, candidates))
    return rows


def _evidence_hit(stored: dict[str, str]) -> Any:
    def hit(prompt: Prompt, found: Any) -> bool:
        refs = [found.id, *found.extra.get("evidence", ())]
        return any(stored.get(ref) in prompt.evidence for ref in refs)

    return hit


def collect(args: argparse.Namespace) -> list[Row]:
    """Rows of the coding set, LongMemEval and the sanity stores, in both review modes."""
    embedders = load_embedders(args.embedder, args.models)
    rows: list[Row] = []
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    halves = {letter: load_coding_case(data, letter, None) for letter in ("a", "b")}
    for review in ("none", "all"):
        with fresh_engine(embedders) as engine:
            progress(f"gate: coding set, review {review}")
            stored = ingest(engine, halves["a"].sessions)
            if review == "all":
                accept_all(engine)
            for letter, case in halves.items():
                rows += _rows(
                    engine,
                    case.prompts,
                    _evidence_hit(stored),
                    lambda p, r=review: f"coding:{r}",
                    lambda p, h=letter: h,
                )
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
                for review in ("none", "all"):
                    with fresh_engine(embedders) as engine:
                        stored = ingest(engine, case.sessions)
                        if review == "all":
                            accept_all(engine)
                        rows += _rows(
                            engine,
                            case.prompts + fixed,
                            _evidence_hit(stored),
                            lambda p, r=review: f"lme:{r}",
                            lambda p, h=letter: h,
                        )
    if args.sanity:
        rows += _sanity_rows(json.loads(Path(args.sanity).read_text(encoding="utf-8")), embedders)
    return rows


def _sanity_rows(data: dict[str, Any], embedders: Sequence[Any]) -> list[Row]:
    """The sanity stores (sanity.py): direct and cross-language questions of each memory
    (dev or check by the memory's split), then the unrelated prompts once per size
    (alternately dev and check)."""
    cases = data["memories"]
    prompts = [p for m in cases for p in (m["direct"], m["cross"])]
    prompts += [p["text"] for p in data["offtopic"]]
    pool = unrelated(list(fillers(max(SANITY_SIZES) * 2)), prompts)
    halves: dict[str, str] = {}
    rows: list[Row] = []
    for size in SANITY_SIZES:
        progress(f"gate: sanity stores of {size}")
        for number, (memories, questioned) in enumerate(sanity._stores(cases, size, pool)):
            with fresh_engine(embedders) as engine:
                ids = sanity._store(engine, memories)
                ref_of = {case: ref for ref, case in ids.items() if case}
                asked = []
                for case in questioned:
                    for kind in ("direct", "cross"):
                        ident = f"{case['id']}-{kind}-{size}"
                        halves[ident] = "a" if case["split"] == "dev" else "b"
                        asked.append(
                            Prompt(
                                ident,
                                sanity.PROJECT,
                                case[kind],
                                kind,
                                evidence=frozenset([ref_of[case["id"]]]),
                            )
                        )
                for i, prompt in enumerate(data["offtopic"] if number == 0 else ()):
                    halves[f"off{i}-{size}"] = "ab"[i % 2]
                    asked.append(
                        Prompt(f"off{i}-{size}", sanity.PROJECT, prompt["text"], "offtopic")
                    )
                rows += _rows(
                    engine,
                    asked,
                    lambda p, found: found.id in p.evidence,
                    lambda p, s=size: f"sanity:{p.type}:{s}",
                    lambda p: halves[p.id],
                    brief=False,  # as sanity.py asks: the prompt's weave alone
                )
    return rows


def _score(candidate: dict[str, Any], model: dict[str, float]) -> float:
    z = model["bias"] + sum(
        weight * candidate.get(name, 0.0) for name, weight in model.items() if name != "bias"
    )
    return 1 / (1 + math.exp(-z))


def fit(rows: Sequence[Row], l2: float = 1e-3) -> dict[str, float]:
    """Logistic regression (Newton's method); each source's positives and negatives weigh
    the same in all."""
    judged = [
        (row.group.split(":")[0], c)
        for row in rows
        for c in row.candidates
        if c["label"] is not None
    ]
    x = np.array([(1.0, *(c.get(name, 0.0) for name in FEATURES)) for _, c in judged])
    y = np.array([c["label"] for _, c in judged], dtype=float)
    counts = Counter((source, c["label"]) for source, c in judged)
    sources = {source for source, _ in counts}
    weight = np.array([1 / (counts[(s, c["label"])] * 2 * len(sources)) for s, c in judged])
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ beta)))
        gradient = x.T @ (weight * (p - y)) + l2 * beta
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(beta))
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return {"bias": round(float(beta[0]), 2)} | {
        name: round(float(b), 2) for name, b in zip(FEATURES, beta[1:], strict=True)
    }


@dataclass(frozen=True)
class Scored:
    """One prompt as the gates see it: its report key, and its candidates' scores."""

    key: str
    half: str
    on_topic: bool
    memories: list[tuple[float, int | None, str]]  # (score, label, line)
    exchanges: list[tuple[float, int | None, str]]


def scored(rows: Sequence[Row], model: dict[str, float]) -> list[Scored]:
    out = []
    for row in rows:
        key = (
            row.group
            if row.group.startswith("sanity")
            else row.group + (":on" if row.on_topic else ":off")
        )
        pairs = [
            (_score(c, model), c["label"], c["line"], c["memory"])
            for c in row.candidates
            if not c.get("briefed")  # given at the session's start, never again for a prompt
        ]
        memories = [(score, label, line) for score, label, line, memory in pairs if memory]
        exchanges = [(score, label, line) for score, label, line, memory in pairs if not memory]
        out.append(Scored(key, row.half, row.on_topic, memories, exchanges))
    return out


def measure(
    prompts: Sequence[Scored], gates: tuple[float, float, float], half: str
) -> dict[str, float]:
    """Per group: recall (on-topic prompts with a positive candidate woven) and knowledge
    lines per off-topic prompt, as the weave's gates decide: memories (and cards) at the
    memory gate, exchanges once one reaches the weave gate, each at the line gate."""
    memory_gate, weave_gate, line_gate = gates
    seen: dict[str, list[float]] = {}
    for prompt in prompts:
        if prompt.half != half:
            continue
        kept = [(label, line) for score, label, line in prompt.memories if score >= memory_gate]
        if any(score >= weave_gate for score, _, _ in prompt.exchanges):
            kept += [(label, line) for score, label, line in prompt.exchanges if score >= line_gate]
        lines = {line for _, line in kept}  # a question and its answer make one line
        value = float(any(label == 1 for label, _ in kept)) if prompt.on_topic else len(lines)
        seen.setdefault(prompt.key, []).append(value)
    return {key: round(sum(v) / len(v), 3) for key, v in sorted(seen.items())}


def _value(found: dict[str, float]) -> float | None:
    """The mean recall of a dev measurement (each source's groups averaged first), or None
    when it breaks an off-topic limit."""
    noise = [v for k, v in found.items() if k.startswith("sanity:offtopic")]
    limits = [
        found.get(k, 0.0)
        for k in ("coding:none:off", "coding:all:off", "lme:none:off", "lme:all:off")
    ]
    if any(noise) or any(v > TARGET_OFFTOPIC for v in limits):
        return None
    recalls: dict[str, list[float]] = {}  # by source: the coding set, LongMemEval, sanity
    for key, value in found.items():
        if key.endswith(":on") or ":direct:" in key or ":cross:" in key:
            recalls.setdefault(key.split(":")[0], []).append(value)
    return sum(sum(v) / len(v) for v in recalls.values()) / max(1, len(recalls))


def choose(prompts: Sequence[Scored]) -> tuple[float, float, float]:
    """The memory and weave gates (the line gate at the weave gate: the dev half has too few
    prompts to choose a third threshold on) with the best mean dev recall within the
    off-topic limits, the strictest of those within SLACK of it (the dev half's few off-topic
    prompts do not show every near miss)."""
    found = []
    for memory_gate in GRID:
        for weave_gate in GRID:
            gates = (memory_gate, weave_gate, weave_gate)
            value = _value(measure(prompts, gates, "a"))
            if value is not None:
                found.append((value, gates))
    if not found:
        raise SystemExit("gate: no thresholds keep the off-topic limits")
    top = max(value for value, _ in found)
    return max((gates for value, gates in found if value >= top - SLACK))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="bench/data/coding_e2e.json")
    parser.add_argument("--lme", type=Path, default=None, help="longmemeval_s*.json(.gz)")
    parser.add_argument("--lme-n", type=int, default=None, help="LongMemEval questions per half")
    parser.add_argument("--sanity", type=Path, default=None, help="bench/data/sanity.json")
    parser.add_argument("--fit", action="store_true", help="fit the model on the dev half")
    parser.add_argument("--rows", type=Path, default=None, help="save (or reuse) the rows here")


def _fitted_on(row: Row) -> bool:
    """The model is fitted on the dev half of turns as they are and of the sanity stores
    (reviewed memories are chosen for by the memory gate, not fitted on twice)."""
    return row.half == "a" and (row.group.endswith(":none") or row.group.startswith("sanity"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.rows and args.rows.exists():
        rows = [Row(**row) for row in json.loads(args.rows.read_text())]
    else:
        rows = collect(args)
        if args.rows:
            args.rows.write_text(json.dumps([asdict(row) for row in rows]))
    mode = "lexical" if args.embedder == "none" else "hybrid"
    shipped = dict(relevance.GATE_WEIGHTS[mode])
    model = fit([row for row in rows if _fitted_on(row)]) if args.fit else shipped
    prompts = scored(rows, model)
    gates = choose(prompts)
    return {
        "model": model,
        "shipped": shipped,
        "memory_gate": gates[0],
        "weave_gate": gates[1],
        "weave_line_gate": gates[2],
        "dev": measure(prompts, gates, "a"),
        "check": measure(prompts, gates, "b"),
        "counts": {
            "prompts": len(rows),
            "candidates": sum(len(r.candidates) for r in rows),
            "positive": sum(c["label"] == 1 for r in rows for c in r.candidates),
            "negative": sum(c["label"] == 0 for r in rows for c in r.candidates),
        },
    }
