"""End to end: does the woven context put the answer before the model, at what cost in tokens?

A history is ingested as a host sends it (session start, its turns, session end, which
distills the session into pending cards), the cards are accepted or left pending
(`--review all|none`), and each prompt is asked in a new session, as a host opens one: the
session's start block (the brief, as Claude Code's SessionStart gets it), then the
prompt's weave. What the model holds at the prompt finds the evidence when any line of
either (any tier) is an evidence turn (an exchange stands for its question and answer) or
a memory or card citing one: `weave_evidence_recall`; the prompt's weave alone:
`prompt_evidence_recall`. Tokens are reported apart: the start block (`mean_start_tokens`)
and the prompt's weave (`mean_tokens`); knowledge lines per off-topic prompt count the
prompt's weave.
The baseline packs plain-BM25 turns into the same budget. Off-topic prompts measure what
the weave injects when nothing should be said.

Data (`--data`, recognised by its content):
- LongMemEval-S: one fresh store per question (project "lme"); evidence = `has_answer`
  turns; questions without one are skipped. `--half a|b` keeps the questions at even / odd
  positions within their type, then `--n` takes N round-robin over types.
- the coding set (`{"projects": [...], "prompts": [...]}`): one store holding every
  project; `--half a|b` keeps split dev / check. On-topic prompts are scored like
  questions; the other types count the knowledge lines they get.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from time import perf_counter
from typing import Any, TypeVar

from bm25 import BM25Ranker
from datasets import _read_json, parse_longmemeval_date
from fillers import padding
from harness import load_embedders, progress
from metrics import mean, percentiles
from mnemoweave import Engine
from mnemoweave.errors import InvalidInput
from mnemoweave.model import Line, SessionEvent
from mnemoweave.recall.weave import CLOSE, OPEN, Weave, render_line
from mnemoweave.text import estimate_tokens

OFFTOPIC = (
    "What's 2+2?",
    "Write a haiku about autumn leaves",
    "写一首关于秋天的诗",
    "How do I reverse a list in Python?",
    "今天天气怎么样？",
)
ON_TOPIC = "on-topic"  # the coding set's one prompt type scored on its evidence
FIXED = "fixed-offtopic"  # the type given to the OFFTOPIC prompts
BM25_DEPTH = 200  # ranked turns the baseline looks at while packing
STEP = 60.0  # seconds between the turns of a session
LME_PROJECT = "lme"
T = TypeVar("T")


@dataclass(frozen=True)
class Session:
    """One host session: turns are (dataset key, role, text)."""

    id: str
    project: str
    host: str
    ts: float
    turns: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class Prompt:
    """A prompt to weave; `evidence` (dataset turn keys) is empty for off-topic types."""

    id: str
    project: str
    text: str
    type: str
    lang: str = "en"
    evidence: frozenset[str] = frozenset()
    answer: str = ""


@dataclass(frozen=True)
class Case:
    """What one store holds (sessions, in any order) and the prompts asked of it."""

    name: str
    sessions: tuple[Session, ...]
    prompts: tuple[Prompt, ...]


# --- loading and selection --------------------------------------------------------------


def halve(items: Sequence[T], type_of: Callable[[T], str], half: str) -> list[T]:
    """Half a: items at even positions within their type; b: odd positions; all: every one."""
    if half == "all":
        return list(items)
    seen: Counter[str] = Counter()
    kept = []
    for item in items:
        position = seen[type_of(item)]
        seen[type_of(item)] += 1
        if position % 2 == (half == "b"):
            kept.append(item)
    return kept


def round_robin(items: Sequence[T], type_of: Callable[[T], str], n: int | None) -> list[T]:
    """N items taken the first of each type, then the second of each, ... (file order)."""
    if n is None:
        return list(items)
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(type_of(item), []).append(item)
    depth = max(map(len, groups.values()), default=0)
    order = [group[i] for i in range(depth) for group in groups.values() if i < len(group)]
    return order[:n]


def _lme_case(item: dict[str, Any]) -> Case:
    """One question's haystack as sessions; turn keys "<session id>:<turn index>"."""
    sessions, evidence = [], []
    for sid, date, turns in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    ):
        keyed = tuple((f"{sid}:{i}", turn["role"], turn["content"]) for i, turn in enumerate(turns))
        evidence += [f"{sid}:{i}" for i, turn in enumerate(turns) if turn.get("has_answer")]
        ts = parse_longmemeval_date(date)
        sessions.append(Session(sid, LME_PROJECT, "bench", ts, keyed))
    prompt = Prompt(
        item["question_id"],
        LME_PROJECT,
        item["question"],
        item["question_type"],
        evidence=frozenset(evidence),
        answer=str(item["answer"]),
    )
    return Case(item["question_id"], tuple(sessions), (prompt,))


def _case_type(case: Case) -> str:
    return case.prompts[0].type


def load_longmemeval_cases(data: list[dict[str, Any]], half: str, n: int | None) -> list[Case]:
    """Questions with a `has_answer` turn, halved within types, then N round-robin."""
    cases = [case for case in map(_lme_case, data) if case.prompts[0].evidence]
    return round_robin(halve(cases, _case_type, half), _case_type, n)


def _iso(text: str) -> float:
    """ISO 8601 -> epoch seconds (a date without a zone is read as UTC)."""
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def load_coding_case(data: dict[str, Any], half: str, n: int | None, pad: int = 0) -> Case:
    """Every project in one store; prompts of split dev (a) or check (b), N round-robin.
    `pad`: each project also gets that many more rules and decisions on other subjects
    (fillers.padding), said in sessions spread over its own dates."""
    sessions = [
        Session(
            session["id"],
            project["name"],
            session.get("host", "bench"),
            _iso(session["date"]),
            tuple((turn["id"], turn["role"], turn["text"]) for turn in session["turns"]),
        )
        for project in data["projects"]
        for session in project["sessions"]
    ]
    for project in data["projects"] if pad else ():
        dates = [_iso(session["date"]) for session in project["sessions"]]
        asked = [p["text"] for p in data["prompts"] if p["project"] == project["name"]]
        for extra in padding(project["name"], pad, min(dates), max(dates), asked):
            turns = tuple((t["id"], t["role"], t["text"]) for t in extra["turns"])
            sessions.append(Session(extra["id"], project["name"], "bench", extra["ts"], turns))
    split = {"all": None, "a": "dev", "b": "check"}[half]
    prompts = [
        Prompt(
            p["id"],
            p["project"],
            p["text"],
            p["type"],
            p.get("lang", "en"),
            frozenset(p.get("evidence", ()) if p["type"] == ON_TOPIC else ()),
            answer=p.get("why", ""),
        )
        for p in data["prompts"]
        if split is None or p.get("split") == split
    ]
    return Case("coding", tuple(sessions), tuple(round_robin(prompts, lambda p: p.type, n)))


# --- one store --------------------------------------------------------------------------


@contextmanager
def fresh_engine(embedders: Sequence[Any]) -> Iterator[Engine]:
    """An engine on a new data dir under MNEMOWEAVE_HOME, using the shared models."""
    with tempfile.TemporaryDirectory(prefix="store-", dir=os.environ["MNEMOWEAVE_HOME"]) as home:
        engine = Engine(home=Path(home))
        try:
            engine.use_embedder(*embedders)
            yield engine
        finally:
            engine.close()


def ingest(engine: Engine, sessions: Sequence[Session]) -> dict[str, str]:
    """Send the sessions as a host would, oldest first; returns turn id (t_N) -> dataset key."""
    stored: dict[str, str] = {}
    for session in sorted(sessions, key=lambda s: s.ts):
        where = {"host": session.host, "project": session.project}
        engine.handle(SessionEvent("start", session.id, ts=session.ts, **where))
        turns = [(i, key, role, text) for i, (key, role, text) in enumerate(session.turns)]
        kept = [turn for turn in turns if turn[3].strip()]
        written = engine.ingest_many(
            {"session": session.id, "role": role, "text": text, "ts": session.ts + STEP * i}
            | {"key": f"bench:{key}"}
            | where
            for i, key, role, text in kept
        )
        stored |= {w.id: turn[1] for turn, w in zip(kept, written, strict=True) if w.id}
        end = session.ts + STEP * len(session.turns)
        engine.handle(SessionEvent("end", session.id, ts=end, **where))
    return stored


def accept_all(engine: Engine, batch: int = 500) -> int:
    """Accept every pending card, as a dutiful agent would; returns how many were accepted.
    A card held because it clashes with a memory is accepted beside it (`keep_both`): the
    agent changes no memory it was not asked about."""
    accepted = 0
    tried: set[str] = set()  # each card is tried once, so the loop ends
    while cards := [c for c in engine.pending(limit=batch + len(tried)) if c.id not in tried]:
        for card in cards:
            tried.add(card.id)
            try:
                written = engine.review(card.id, "accept")
                if written.action == "held":
                    written = engine.review(card.id, "accept", keep_both=True)
                accepted += written.action != "held"
            except InvalidInput:  # e.g. a summary of private content only
                pass
    return accepted


def fence_overhead() -> int:
    """Tokens of the fence and one tier header, as `weave.assemble` counts them."""
    return estimate_tokens(OPEN) + estimate_tokens(CLOSE) + 2 + estimate_tokens("## knowledge") + 1


def pack(lines: Sequence[Line], budget: int) -> list[int]:
    """Indexes of the lines (best first) that fit the budget; a line too long is skipped."""
    used, kept = fence_overhead(), []
    for index, line in enumerate(lines):
        cost = estimate_tokens(render_line(line)) + 1
        if used + cost <= budget:
            kept.append(index)
            used += cost
    return kept


class Baseline:
    """Plain BM25 over one project's raw turns, packed into the weave's budget."""

    def __init__(self, turns: Sequence[tuple[str, str, str]]) -> None:
        self.turns = list(turns)  # (ref, dataset key, text)
        self.ranker = BM25Ranker([text for _, _, text in self.turns])

    def packed(self, query: str, budget: int) -> list[str]:
        """Dataset keys of the turns the same budget holds."""
        ranked = [self.turns[i] for i in self.ranker.rank(query)[:BM25_DEPTH]]
        lines = [Line(text, ref) for ref, _, text in ranked]
        return [ranked[i][1] for i in pack(lines, budget)]


def baselines(sessions: Sequence[Session], stored: dict[str, str]) -> dict[str, Baseline]:
    """One BM25 baseline per project over its non-empty turns, each shown under its t_N."""
    ref_of = {key: ref for ref, key in stored.items()}
    turns: dict[str, list[tuple[str, str, str]]] = {}
    for session in sessions:
        for key, _, text in session.turns:
            if text.strip():
                turns.setdefault(session.project, []).append((ref_of.get(key, ""), key, text))
    return {project: Baseline(rows) for project, rows in turns.items()}


def found(engine: Engine, woven: Weave, wanted: set[str], cache: dict[str, set[str]]) -> bool:
    """Whether a line of any tier is a wanted turn (t_N, an exchange's question or answer)
    or a memory or card whose evidence cites one."""
    for lines in woven.tiers.values():
        for line in lines:
            for ref in (line.ref, *line.also):
                if ref in wanted:
                    return True
                if ref.startswith(("m_", "c_")):
                    if ref not in cache:
                        cache[ref] = set(engine.get(ref).evidence)  # type: ignore[union-attr]
                    if cache[ref] & wanted:
                        return True
    return False


@dataclass
class Run:
    """Everything measured over the stores of one run."""

    budget: int | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per dataset prompt
    fixed: list[dict[str, Any]] = field(default_factory=list)  # one per OFFTOPIC weave
    counts: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    weave_ms: list[float] = field(default_factory=list)  # dataset prompts only
    brief_tokens: list[int] = field(default_factory=list)  # each session's start block
    warnings: Counter[str] = field(default_factory=Counter)  # the engine's, by template


def ask(engine: Engine, prompt: Prompt, session: str, budget: int, run: Run) -> tuple[Weave, Weave]:
    """A new session as a host opens it: its start (which gets the brief, as Claude Code's
    SessionStart does), then the prompt's weave; both recorded, as hosts record them. The
    prompt's weave is timed."""
    engine.handle(SessionEvent("start", session, host="bench", project=prompt.project))
    start = engine.weave("", session=session, project=prompt.project, record=True)
    started = perf_counter()
    woven = engine.weave(
        prompt.text, session=session, project=prompt.project, budget=budget, record=True
    )
    elapsed = (perf_counter() - started) * 1000
    run.seconds["weave"] += elapsed / 1000
    if prompt.type != FIXED:
        run.weave_ms.append(elapsed)
        run.brief_tokens.append(start.tokens)
    return start, woven


def evaluate_case(engine: Engine, case: Case, review: str, budget: int | None, run: Run) -> None:
    """Ingest the case into the engine, review, weave each prompt and the fixed ones."""
    started = perf_counter()
    stored = ingest(engine, case.sessions)
    run.seconds["ingest"] += perf_counter() - started
    started = perf_counter()
    run.counts["accepted"] += accept_all(engine) if review == "all" else 0
    run.seconds["review"] += perf_counter() - started
    budget = engine.config.weave_budget if budget is None else budget
    run.budget = budget
    refs: dict[str, list[str]] = {}
    for ref, key in stored.items():
        refs.setdefault(key, []).append(ref)
    bm25 = baselines(case.sessions, stored)
    cache: dict[str, set[str]] = {}
    for prompt in case.prompts:
        start, woven = ask(engine, prompt, f"ask-{prompt.id}", budget, run)
        row: dict[str, Any] = {
            "id": prompt.id,
            "type": prompt.type,
            "lang": prompt.lang,
            "question": prompt.text,
            "answer": prompt.answer,
            "knowledge": len(woven.knowledge),
            "tokens": woven.tokens,
            "woven": woven.text,
            "start": start.text,
        }
        if prompt.evidence:
            wanted = {ref for key in prompt.evidence for ref in refs.get(key, ())}
            row["hit"] = float(found(engine, woven, wanted, cache))
            row["hit_with_start"] = float(row["hit"] or found(engine, start, wanted, cache))
            baseline = bm25.get(prompt.project)
            packed = baseline.packed(prompt.text, budget) if baseline else []
            row["bm25"] = float(bool(prompt.evidence & set(packed)))
        run.rows.append(row)
    for project in sorted({s.project for s in case.sessions}):
        for number, text in enumerate(OFFTOPIC):
            prompt = Prompt(f"{case.name}-{project}-{number}", project, text, FIXED)
            _, woven = ask(engine, prompt, f"offtopic-{prompt.id}", budget, run)
            run.fixed.append({"id": prompt.id, "knowledge": len(woven.knowledge)})
    run.counts.update(engine.status()["counts"])


# --- report -----------------------------------------------------------------------------


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """n plus recall (rows with evidence) or knowledge lines per prompt (rows without)."""
    scored = [row for row in rows if "hit" in row]
    report: dict[str, Any] = {"n": len(rows)}
    if scored:
        report["weave_evidence_recall"] = mean([row["hit_with_start"] for row in scored])
        report["prompt_evidence_recall"] = mean([row["hit"] for row in scored])
        report["bm25_same_budget_recall"] = mean([row["bm25"] for row in scored])
    if negatives := [row for row in rows if "hit" not in row]:
        report["knowledge_per_prompt"] = mean([row["knowledge"] for row in negatives])
        report["any_knowledge"] = mean([float(row["knowledge"] > 0) for row in negatives])
    report["mean_tokens"] = mean([row["tokens"] for row in rows])
    return report


def grouped(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """`summary` per value of the rows' `key` (type or lang)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return {name: summary(group) for name, group in groups.items()}


def misses(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prompts whose weave missed the evidence, or that got knowledge while off-topic."""
    keys = ("id", "type", "lang", "question", "answer", "woven", "start")
    return [
        {key: row[key] for key in keys}
        for row in rows
        if row.get("hit_with_start") == 0.0 or ("hit" not in row and row["knowledge"])
    ]


def report(run: Run, review: str, coding: bool, verbose: bool) -> dict[str, Any]:
    scored = [row for row in run.rows if "hit" in row]
    negatives = [row for row in run.rows if "hit" not in row]
    fixed = mean([row["knowledge"] for row in run.fixed])
    turns, cards = run.counts["turns"], run.counts["cards"]
    result: dict[str, Any] = {
        "weave_evidence_recall": mean([row["hit_with_start"] for row in scored]),
        "prompt_evidence_recall": mean([row["hit"] for row in scored]),
        "bm25_same_budget_recall": mean([row["bm25"] for row in scored]),
        "mean_tokens": mean([row["tokens"] for row in run.rows]),
        "mean_start_tokens": mean(run.brief_tokens),
        "offtopic_knowledge_per_prompt": (
            mean([row["knowledge"] for row in negatives]) if coding else fixed
        ),
        "fixed_offtopic_knowledge_per_prompt": fixed,
        "cards_per_1k_turns": round(1000 * cards / turns, 1) if turns else None,
        "by_type": grouped(run.rows, "type"),
        "n": len(run.rows),
        "review": review,
        "budget": run.budget,
        "weave_latency_ms": percentiles(run.weave_ms),
        "seconds": {name: round(value, 2) for name, value in run.seconds.items()},
        "counts": {
            "questions": len(run.rows),
            "scored": len(scored),
            "turns": turns,
            "cards": cards,
            "accepted": run.counts["accepted"],
            "memories": run.counts["memories"],
        },
        "warnings": dict(run.warnings.most_common()),
    }
    if coding:
        result["by_lang"] = grouped(run.rows, "lang")
    if verbose:
        result["misses"] = misses(run.rows)
    return result


class _CountWarnings(logging.Handler):
    """Counts the engine's warnings (e.g. refused cards) by message template."""

    def __init__(self, counts: Counter[str]) -> None:
        super().__init__(logging.WARNING)
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[str(record.msg)] += 1


def evaluate(
    cases: Sequence[Case],
    embedders: Sequence[Any],
    review: str = "all",
    budget: int | None = None,
    coding: bool = False,
    verbose: bool = False,
    brief_budget: int | None = None,
) -> dict[str, Any]:
    """Run every case in its own fresh store and report over all of them (`brief_budget`:
    the brief's budget instead of the engine's)."""
    run = Run()
    retrieval = None
    handler = _CountWarnings(run.warnings)
    logger = logging.getLogger("mnemoweave")
    logger.addHandler(handler)
    try:
        for number, case in enumerate(cases, 1):
            turns = sum(len(s.turns) for s in case.sessions)
            size = f"{len(case.sessions)} sessions, {turns} turns"
            progress(f"e2e {number}/{len(cases)} {case.name}: {size}")
            with fresh_engine(embedders) as engine:
                if brief_budget is not None:
                    engine.config = replace(engine.config, brief_budget=brief_budget)
                retrieval = engine.retrieval_mode()
                evaluate_case(engine, case, review, budget, run)
    finally:
        logger.removeHandler(handler)
    return report(run, review, coding, verbose) | {"retrieval": retrieval}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", type=Path, required=True, help="longmemeval_s*.json(.gz) or the coding set"
    )
    parser.add_argument("--n", type=int, default=None, help="N prompts, round-robin over types")
    parser.add_argument("--review", choices=("all", "none"), default="all")
    parser.add_argument(
        "--half", choices=("a", "b", "all"), default="all", help="a: dev, b: check half"
    )
    parser.add_argument("--budget", type=int, default=None, help="default: the engine's")
    parser.add_argument(
        "--brief-budget", type=int, default=None, help="the brief's; default: the engine's"
    )
    parser.add_argument("--verbose", action="store_true", help="list the misses")
    parser.add_argument(
        "--pad", type=int, default=0, help="coding set: N more rules and decisions per project"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """`bench/run.py e2e --data FILE ...`: the data's kind is read from its content."""
    data = _read_json(args.data)
    n = args.n if args.n is not None else args.limit
    coding = isinstance(data, dict) and "projects" in data
    cases = (
        [load_coding_case(data, args.half, n, args.pad)]
        if coding
        else load_longmemeval_cases(data, args.half, n)
    )
    embedders = load_embedders(args.embedder, args.models)
    result = evaluate(
        cases, embedders, args.review, args.budget, coding, args.verbose, args.brief_budget
    )
    if args.verbose and not args.json:
        for miss in result.pop("misses"):
            progress(f"miss {miss['id']} ({miss['type']}): {miss['question']}")
            progress(f"  answer: {miss['answer']}\n  woven: {miss['woven'] or '(nothing)'}")
    return result
