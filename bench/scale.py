"""Scale: write throughput, and search and weave latency, of one store as it grows.

Memories are corpus.py's (the dev cards plus bilingual engineering notes over 20 projects,
N of them stored: near-duplicates that merged away are topped up), written 1,000 per
transaction through `Engine.remember_many`, in-process, with the run's models. The
prompts are the dev queries in their projects, rotated to --queries. For each size
(--n, comma-separated: every size in the same run) it reports the seconds to store the N
memories, `Engine.search` (k 10, memories, recalls not counted) and `Engine.weave`
latency p50/p95, and what the woven knowledge tier found: the share of prompts with a
target that cite one (`relevant_hit_rate`) and of off-topic prompts that weave any
knowledge. The baseline is plain BM25 in memory over the same stored texts, filtered to
the prompt's project plus global, and the smallest size's figures.

`--sources turns` also times indexing N raw turns (SQLite, FTS and every vector index):
the project's own texts, each made distinct by a ticket number; then weaves, each right
after a new turn of its project, as a prompt's weave follows the turn stored before it.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from bm25 import BM25Ranker
from corpus import DEV_PROJECTS, OTHER_PROJECTS, Prompt, Tally, fill, prompts, rotate
from datasets import Doc
from harness import Clock, EngineStore, engine_opener, load_embedders, progress
from metrics import percentiles

DATA = Path(__file__).resolve().parent / "data"
SEARCH_K = 10  # hits per timed search


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--n", default="10000", help="memories (or turns) per store, comma-separated sizes"
    )
    parser.add_argument("--queries", type=int, default=200, help="timed searches and weaves")
    parser.add_argument(
        "--sources",
        default="memories",
        help="what to store: memories (latency and index time), turns (index time)",
    )


def sizes(text: str) -> list[int]:
    found = sorted({int(part) for part in text.split(",") if part.strip()})
    if not found or found[0] < 1:
        raise SystemExit(f"--n {text}: give one or more positive sizes, comma-separated")
    return found


# --- turns ---------------------------------------------------------------------------------


def _texts() -> list[str]:
    texts = []
    for name in ("dev_memories.jsonl", "classify_train.jsonl", "classify_heldout.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            texts.append(json.loads(line)["text"])
    return texts


def turn_docs(n: int) -> list[Doc]:
    texts = _texts()
    projects = ["alpha", "beta", "gamma", "delta", ""]
    return [
        Doc(
            f"d{i}",
            f"{texts[i % len(texts)]} (ticket {i})",
            session=f"s{i // 50}",
            ts=1.7e9 + i,
            project=projects[i % len(projects)],
        )
        for i in range(n)
    ]


def index_turns(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """Seconds to store and index `n` turns in a fresh store; then the latency of a weave
    that follows a stored turn, as each prompt's does (its turn is stored after its
    answer): `args.queries` prompts of one project, each after one new turn of that
    project."""
    clock = Clock()
    store = engine_opener("turns", args)(turn_docs(n), clock)
    assert isinstance(store, EngineStore)
    engine, texts = store.engine, _texts()
    latencies = []
    try:
        for i in range(args.queries):
            said = f"{texts[(7 * i) % len(texts)]} (live {i})"
            engine.ingest(f"live-{i}", "user", said, project="alpha", host="bench")
            started = perf_counter()
            engine.weave(texts[(11 * i) % len(texts)], session=f"ask-{i}", project="alpha")
            latencies.append((perf_counter() - started) * 1000)
    finally:
        store.close()
    return {
        "index_seconds": round(clock.ingest_seconds, 1),
        "weave_after_a_write_ms": percentiles(latencies),
    }


# --- memories ------------------------------------------------------------------------------


def _timed(call: Any, asked: list[Prompt]) -> tuple[list[float], list[Any]]:
    latencies, answers = [], []
    for prompt in asked:
        started = perf_counter()
        answers.append(call(prompt))
        latencies.append((perf_counter() - started) * 1000)
    return latencies, answers


def baseline(stored: list[dict[str, Any]], asked: list[Prompt]) -> dict[str, Any]:
    """BM25 in memory over the stored texts: build seconds and ranking latency."""
    started = perf_counter()
    ranker = BM25Ranker([row["text"] for row in stored])
    build = perf_counter() - started
    scopes = np.array([row["project"] for row in stored], dtype=object)
    latencies, _ = _timed(lambda p: ranker.rank(p.text, np.isin(scopes, [p.cwd, ""])), asked)
    return {"index_seconds": round(build, 2), "latency_ms": percentiles(latencies)}


def memories(n: int, args: argparse.Namespace, embedders: list[Any]) -> dict[str, Any]:
    """Store `n` memories in a fresh store, then time searches and weaves over them."""
    from mnemoweave import Engine

    projects = {name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}
    where = tempfile.TemporaryDirectory(prefix="scale-", dir=os.environ["MNEMOWEAVE_HOME"])
    with where as home, Engine(home=Path(home)) as engine:
        engine.use_embedder(*embedders)
        started = perf_counter()
        ids, stored = fill(engine, n, projects)
        seconds = perf_counter() - started
        counted = engine.status()["counts"]["memories"]
        asked = rotate(prompts(projects, ids), args.queries)
        warm = asked[:20]  # untimed: models, caches and the OS page cache warmed
        for prompt in warm:
            engine.weave(prompt.text, project=prompt.cwd)

        def search(prompt: Prompt) -> Any:
            return engine.search(
                prompt.text, k=SEARCH_K, project=prompt.cwd, source="memories", touch=False
            )

        search_ms, _ = _timed(search, asked)
        weave_ms, woven = _timed(lambda p: engine.weave(p.text, project=p.cwd), asked)
        retrieval = engine.retrieval_mode()
    tally = Tally([])
    for ms, weave, prompt in zip(weave_ms, woven, asked, strict=True):
        tally.add(ms, weave.text or None, prompt)
    rates = tally.rates()
    return {
        "memories": counted,
        "index_seconds": round(seconds, 1),
        "search_latency_ms": percentiles(search_ms),
        "weave_latency_ms": percentiles(weave_ms),
        "relevant_hit_rate": rates["relevant_hit_rate"],
        "offtopic_knowledge_rate": rates["offtopic_knowledge_rate"],
        "retrieval": retrieval,
        "baseline": baseline(stored, asked),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    chosen = sizes(args.n)
    sources = [part.strip() for part in args.sources.split(",") if part.strip()]
    unknown = set(sources) - {"memories", "turns"}
    if unknown:
        raise SystemExit(f"--sources: unknown {', '.join(sorted(unknown))} (memories, turns)")
    report: dict[str, Any] = {"sizes": chosen, "queries": args.queries}
    if "memories" in sources:
        embedders = load_embedders(args.embedder, args.models)
        report["memories"] = {}
        for n in chosen:
            progress(f"scale: storing {n} memories")
            report["memories"][str(n)] = memories(n, args, embedders)
        first = report["memories"][str(chosen[0])]
        last = report["memories"][str(chosen[-1])]
        report["weave_p95_growth"] = _ratio(last, first, "weave_latency_ms")
        report["search_p95_growth"] = _ratio(last, first, "search_latency_ms")
    if "turns" in sources:
        report["turns"] = {}
        for n in chosen:
            progress(f"scale: indexing {n} turns")
            report["turns"][str(n)] = index_turns(n, args)
    return report


def _ratio(last: dict[str, Any], first: dict[str, Any], key: str) -> float | None:
    """How many times the smallest size's p95 the largest size's p95 is."""
    a, b = last[key]["p95"], first[key]["p95"]
    return round(a / b, 2) if a and b else None
