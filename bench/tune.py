"""Tune the fusion on the dev sets: collect each query's channel scores once, then sweep.

    .venv/bin/python bench/tune.py --embedder use-m3 [--models DIR] [--cache FILE]

For every dev query the engine's own retriever gathers its candidates (BM25 over jieba
tokens, dense cosine); the sweep then ranks them under each fusion setting, in memory,
and prints the dev metrics per setting (best first by their mean). This is how the
defaults in `mnemoweave.config` were chosen; rerun it when the model or the data change.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
HERE = Path(__file__).resolve().parent


def dev_sets() -> dict[str, tuple[list[Any], str, int]]:
    """name -> (stores, source, k of the metric that is tuned)."""
    from datasets import load_cards, load_locomo, load_memorybank

    mb = SHARED / "memorybank"
    return {
        "locomo@10": (load_locomo(SHARED / "locomo" / "locomo10.dev.json"), "turns", 10),
        "mb_cn@1": (
            load_memorybank(mb / "memory_bank_cn.json", mb / "gold_cn.dev.jsonl", None),
            "turns",
            1,
        ),
        "mb_x@3": (
            load_memorybank(mb / "memory_bank_cn.json", mb / "gold_cn.dev.jsonl", "en"),
            "turns",
            3,
        ),
        "mb_en@3": (
            load_memorybank(mb / "memory_bank_en.json", mb / "gold_en.dev.jsonl", None),
            "turns",
            3,
        ),
        "cards@3": (
            [
                load_cards(
                    SHARED / "cards" / "memories.jsonl", SHARED / "cards" / "queries.dev.jsonl"
                )
            ],
            "memories",
            3,
        ),
        "devcards@3": (
            [load_cards(HERE / "data" / "dev_memories.jsonl", HERE / "data" / "dev_queries.jsonl")],
            "memories",
            3,
        ),
    }


def collect(embedder: Any, n: int) -> dict[str, list[dict[str, Any]]]:
    """Per dev set, per query: relevant keys and candidates (keys, bm25, cosine, same lang)."""
    from harness import Clock, EngineStore, search_options
    from mnemoweave.retrieve import Retriever, _same_language
    from mnemoweave.text import language

    out: dict[str, list[dict[str, Any]]] = {}
    for name, (stores, source, _) in dev_sets().items():
        rows = out.setdefault(name, [])
        for store in stores:
            opened = EngineStore(store.docs, Clock(), source, search_options("default"), embedder)
            engine = opened.engine
            retriever = Retriever(engine.db, engine.config, engine.embedder, engine.index)
            for query in store.queries:
                if query.group == "none":
                    continue
                projects = None if query.project is None else [query.project, ""]
                found = retriever.candidates(source, query.text, n, projects, None, "hybrid")
                qlang = language(query.text)
                rows.append(
                    {
                        "relevant": set(query.relevant),
                        "group": query.group,
                        "candidates": [
                            (
                                opened.keys.get(c.ref, []),
                                c.lexical if c.lexical_rank else None,
                                c.dense,
                                _same_language(
                                    qlang,
                                    language(
                                        c.row["body"] if source == "memories" else c.row["text"]
                                    ),
                                ),
                            )
                            for c in found.values()
                        ],
                    }
                )
            opened.close()
        print(f"collected {name}: {len(rows)} queries", file=sys.stderr)
    return out


def _minmax(values: list[float]) -> list[float]:
    low, high = min(values), max(values)
    return [1.0 if high - low < 1e-9 else (v - low) / (high - low) for v in values]


def rank(candidates: list[tuple], alpha: float, cross: float) -> list[str]:
    lex = [c[1] for c in candidates if c[1] is not None]
    dense = [c[2] for c in candidates if c[2] is not None]
    lex_n = dict(zip(lex, _minmax(lex), strict=True)) if lex else {}
    dense_n = dict(zip(dense, _minmax(dense), strict=True)) if dense else {}
    scored = []
    for keys, bm25, cosine, same in candidates:
        ln = 0.0 if bm25 is None else lex_n[bm25]
        dn = 0.0 if cosine is None else dense_n[cosine]
        score = alpha * dn + (1 - alpha) * ln if same else cross * dn
        scored.append((score, keys))
    scored.sort(key=lambda pair: -pair[0])
    return [key for _, keys in scored for key in keys]


def evaluate(data: dict[str, list[dict[str, Any]]], alpha: float, cross: float) -> dict[str, float]:
    ks = {name: k for name, (_, _, k) in dev_sets.cache.items()}  # type: ignore[attr-defined]
    result = {}
    for name, rows in data.items():
        k = ks[name]
        hits = [bool(set(rank(r["candidates"], alpha, cross)[:k]) & r["relevant"]) for r in rows]
        result[name] = round(sum(hits) / len(hits), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="use-m3")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(os.environ.get("MNEMOWEAVE_HOME", Path.home() / ".mnemoweave")) / "models",
    )
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--cache", type=Path, help="pickle of collected candidates to reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemoweave-tune-") as home:
        os.environ["MNEMOWEAVE_HOME"] = home
        from harness import load_embedder, warm_up

        warm_up()
        dev_sets.cache = dev_sets()  # type: ignore[attr-defined]
        if args.cache and args.cache.exists():
            data = pickle.loads(args.cache.read_bytes())
        else:
            data = collect(load_embedder(args.embedder, args.models), args.candidates)
            if args.cache:
                args.cache.write_bytes(pickle.dumps(data))
    grid = itertools.product(
        [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0], [0.3, 0.5, 0.7, 0.9, 1.0, 1.2]
    )
    results = []
    for alpha, cross in grid:
        metrics = evaluate(data, alpha, cross)
        results.append((sum(metrics.values()) / len(metrics), alpha, cross, metrics))
    results.sort(key=lambda r: -r[0])
    channels = [r for r in results if r[1] in (0.0, 1.0) and r[2] == 1.0]
    for mean, alpha, cross, metrics in results[:10] + channels:
        print(json.dumps({"mean": round(mean, 3), "alpha": alpha, "cross": cross} | metrics))


if __name__ == "__main__":
    main()
