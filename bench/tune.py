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

from mnemoweave.embed import models_dir

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


def collect(embedders: list[Any], n: int) -> dict[str, list[dict[str, Any]]]:
    """Per dev set, per query: relevant keys and candidates (keys, bm25, cosines, same lang)."""
    from harness import Clock, EngineStore, search_options
    from mnemoweave.recall.retrieve import Retriever, same_language
    from mnemoweave.text import language

    out: dict[str, list[dict[str, Any]]] = {}
    for name, (stores, source, _) in dev_sets().items():
        rows = out.setdefault(name, [])
        for store in stores:
            opened = EngineStore(store.docs, Clock(), source, search_options("default"), [])
            engine = opened.engine
            engine.use_embedder(*embedders)
            engine.reindex()
            retriever = Retriever(engine.db, engine.config, engine.channels)
            names = [channel.name for channel in engine.channels]
            for query in store.queries:
                if query.group == "none":
                    continue
                projects = None if query.project is None else [query.project, ""]
                found = retriever.candidates(source, query.text, n, projects, None, "hybrid")
                qlang = language(query.text)
                candidates = [
                    (
                        opened.keys.get(c.ref, []),
                        c.lexical,
                        [c.dense.get(channel) for channel in names],
                        same_language(qlang, c.row["lang"]),
                    )
                    for c in found.values()
                ]
                rows.append(
                    {
                        "relevant": set(query.relevant),
                        "group": query.group,
                        "candidates": candidates,
                    }
                )
            opened.close()
        print(f"collected {name}: {len(rows)} queries", file=sys.stderr)
    return out


def _minmax(values: list[float]) -> dict[float, float]:
    low, high = min(values, default=0.0), max(values, default=0.0)
    return {v: 1.0 if high - low < 1e-9 else (v - low) / (high - low) for v in values}


def rank(candidates: list[tuple], config: Any) -> list[str]:
    """Dataset keys ranked by the engine's own fusion under `config`."""
    from mnemoweave.recall.retrieve import fuse

    lexical = _minmax([c[1] for c in candidates if c[1] is not None])
    channels = len(candidates[0][2]) if candidates else 0
    dense = [_minmax([c[2][i] for c in candidates if c[2][i] is not None]) for i in range(channels)]
    scored = []
    for keys, bm25, cosines, same in candidates:
        parts = [0.0 if cos is None else dense[i][cos] for i, cos in enumerate(cosines)]
        lex = 0.0 if bm25 is None else lexical[bm25]
        scored.append((fuse(lex, parts, same, config, "hybrid"), keys))
    scored.sort(key=lambda pair: -pair[0])
    return [key for _, keys in scored for key in keys]


def evaluate(data: dict[str, list[dict[str, Any]]], config: Any) -> dict[str, float]:
    from datasets import ADVERSARIAL  # LoCoMo category 5: reported apart, not tuned on

    ks = {name: k for name, (_, _, k) in dev_sets.cache.items()}  # type: ignore[attr-defined]
    result = {}
    for name, rows in data.items():
        k = ks[name]
        rows = [r for r in rows if r["group"] != ADVERSARIAL]
        hits = [bool(set(rank(r["candidates"], config)[:k]) & r["relevant"]) for r in rows]
        result[name] = round(sum(hits) / len(hits), 3)
    return result


GRID = {
    "weight_dense": [0.3, 0.4, 0.5, 0.6, 0.8],
    "weight_second": [0.0, 0.1, 0.2, 0.3],
    "cross_dense": [0.0, 0.25, 0.5, 0.75],
    "cross_second": [0.5, 0.75, 1.0, 1.25],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--embedder",
        default="e5-small,use-m3",
        help="comma-separated: the main model, then the optional second",
    )
    parser.add_argument(
        "--models",
        type=Path,
        default=models_dir(),
    )
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--cache", type=Path, help="pickle of collected candidates to reuse")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemoweave-tune-") as home:
        os.environ["MNEMOWEAVE_HOME"] = home
        from harness import load_embedders, warm_up

        warm_up()
        dev_sets.cache = dev_sets()  # type: ignore[attr-defined]
        if args.cache and args.cache.exists():
            data = pickle.loads(args.cache.read_bytes())
        else:
            embedders = load_embedders(args.embedder, args.models)
            data = collect(embedders, args.candidates)
            if args.cache:
                args.cache.write_bytes(pickle.dumps(data))
    from dataclasses import replace

    from mnemoweave.config import Config

    results = []
    for values in itertools.product(*GRID.values()):
        config = replace(Config(), weight_lexical=1.0, **dict(zip(GRID, values, strict=True)))
        metrics = evaluate(data, config)
        results.append(
            (sum(metrics.values()) / len(metrics), dict(zip(GRID, values, strict=True)), metrics)
        )
    results.sort(key=lambda r: -r[0])
    for mean, weights, metrics in results[:10]:
        print(json.dumps({"mean": round(mean, 3)} | weights | metrics))


if __name__ == "__main__":
    main()
