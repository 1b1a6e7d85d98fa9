"""Scale: write and search throughput of one store at 10,000 memories and turns.

Documents are the project's own bilingual texts (dev memories, labelled turns), each made
distinct by a ticket number, cycled up to --n; queries are the dev queries. Reports the
seconds to index N turns (SQLite + FTS + every vector index), to store N memories, and
search and weave latency over the N memories, with plain BM25 over the same texts as the
baseline.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from time import perf_counter
from typing import Any

from bm25 import BM25Ranker
from datasets import Doc
from harness import Clock, EngineStore, engine_opener, progress
from metrics import percentiles

DATA = Path(__file__).resolve().parent / "data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=10_000, help="documents per store")
    parser.add_argument("--queries", type=int, default=200, help="timed searches")
    parser.add_argument(
        "--sources",
        default="turns,memories",
        help="stores to build: turns (index time), memories (index time and latency)",
    )


def _texts() -> list[str]:
    texts = []
    for name in ("dev_memories.jsonl", "classify_train.jsonl", "classify_heldout.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            texts.append(json.loads(line)["text"])
    return texts


def _docs(n: int) -> list[Doc]:
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


def _queries(count: int) -> list[str]:
    lines = (DATA / "dev_queries.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines]
    random.Random(7).shuffle(queries)
    return (queries * (count // len(queries) + 1))[:count]


def _timed(store: Any, queries: list[str], project: str | None) -> list[float]:
    latencies = []
    for query in queries:
        started = perf_counter()
        store.search(query, 10, project=project)
        latencies.append((perf_counter() - started) * 1000)
    return latencies


def _woven(engine: Any, queries: list[str], project: str) -> list[float]:
    latencies = []
    for query in queries:
        started = perf_counter()
        engine.weave(query, project=project)
        latencies.append((perf_counter() - started) * 1000)
    return latencies


def run(args: argparse.Namespace) -> dict[str, Any]:
    docs, queries = _docs(args.n), _queries(args.queries)
    report: dict[str, Any] = {"n": args.n}
    for source in args.sources.split(","):
        progress(f"scale: writing {args.n} {source}")
        clock = Clock()
        store = engine_opener(source, args)(docs, clock)
        assert isinstance(store, EngineStore)
        report[f"index_{source}_seconds"] = round(clock.ingest_seconds, 1)
        if source == "memories":
            _timed(store, queries[:20], "alpha")  # warm-up: models and caches loaded
            report["latency_ms"] = percentiles(_timed(store, queries, "alpha"))
            report["weave_latency_ms"] = percentiles(_woven(store.engine, queries, "alpha"))
            report["retrieval"] = clock.retrieval
        store.close()
    started = perf_counter()
    ranker = BM25Ranker([doc.text for doc in docs])
    build = perf_counter() - started
    latencies = []
    for query in queries:
        started = perf_counter()
        ranker.rank(query, None)
        latencies.append((perf_counter() - started) * 1000)
    report["baseline"] = {"index_seconds": round(build, 1), "latency_ms": percentiles(latencies)}
    return report
