"""Entity and relation extraction against a hand-labelled set, per split and language.

`bench/data/entities.jsonl` holds texts of coding-agent memory (cards and turns, English and
Chinese), each with its entity mentions and the typed relations it states, labelled by the
rules of `bench/data/entities.md`. A text's entities are compared as sets of keys (the
extractor's normalised names, so "UploadClient" and "upload client" are one entity); a
relation matches on its type and both keys (`rule_about` on its type and target, `pinned_to`
on its version as written). Micro-averaged precision and recall; `--show` prints each miss
and each false find of a split. `--data SET`: another labelled set (bench/README.md says
which were seen while the rules were written).
The texts are read in order, as a store reads them: a name found in an earlier text is a
known name in the later ones (`--alone`: each text by itself).

`--scale N`: a store of N memories (corpus.py's, as scale.py writes them, with the run's
models), then the graph rebuilt from scratch (seconds), and `entity NAME` timed (p50/p95,
in-process) for the 50 most named entities and 50 others, beside a keyword search for the
same name in the same run (the baseline: what "what do we know about X?" was before).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mnemoweave.graph.build import written
from mnemoweave.graph.extract import extract, key
from mnemoweave.graph.recall import word_keys

DATA = Path(__file__).resolve().parent / "data" / "entities.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="labelled texts (.jsonl)")
    parser.add_argument("--show", metavar="SPLIT", help="print the errors of a split")
    parser.add_argument("--scale", type=int, help="time the graph of a store of N memories")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="read each text alone (default: in order, as a store does: a name found in an"
        " earlier text is known in the later ones)",
    )


def _gold_relation(relation: dict[str, str]) -> tuple[str, str, str]:
    kind = relation["type"]
    source = "" if kind == "rule_about" else key(relation["source"])
    target = relation["target"].replace(" ", "") if kind == "pinned_to" else key(relation["target"])
    return kind, source, target


def _score(found: int, gold: int, right: int) -> dict[str, Any]:
    return {
        "precision": round(right / found, 3) if found else None,
        "recall": round(right / gold, 3) if gold else None,
        "found": found,
        "labelled": gold,
    }


def scale(args: argparse.Namespace) -> dict[str, Any]:
    import random
    import tempfile

    from corpus import DEV_PROJECTS, OTHER_PROJECTS, fill
    from harness import load_embedders
    from metrics import percentiles
    from mnemoweave import Engine
    from mnemoweave.graph import build

    projects = {name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}
    with tempfile.TemporaryDirectory(dir=os.environ["MNEMOWEAVE_HOME"]) as home:
        engine = Engine(home=Path(home))
        try:
            engine.use_embedder(*load_embedders(args.embedder, args.models))
            started = time.perf_counter()
            fill(engine, args.scale, projects)
            stored = time.perf_counter() - started
            started = time.perf_counter()
            read = build.rebuild(engine.db)
            rebuilt = time.perf_counter() - started
            listed = engine.entities(limit=100_000)
            rng = random.Random(7)
            names = [row["name"] for row in listed[:50]]
            names += rng.sample([row["name"] for row in listed[50:]], min(50, len(listed) - 50))
            engine.entity(names[0])  # the first call reads what is left to read, if anything
            entity_ms, search_ms = [], []
            for name in names:
                started = time.perf_counter()
                engine.entity(name)
                entity_ms.append(1000 * (time.perf_counter() - started))
                started = time.perf_counter()
                engine.search(name, k=10, touch=False)
                search_ms.append(1000 * (time.perf_counter() - started))
            counts = {
                table: engine.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("memories", "entities", "mentions", "relations", "aliases")
            }
        finally:
            engine.close()
    return {
        "memories": args.scale,
        "store_seconds": round(stored, 1),
        "rebuild_seconds": round(rebuilt, 2),
        "texts_read": read,
        "graph": counts,
        "entity_ms": percentiles(entity_ms),
        "search_same_name_ms": percentiles(search_ms),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.scale:
        return scale(args)
    texts = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    tally: dict[tuple[str, str], Counter[str]] = {}
    by_type: dict[tuple[str, str], Counter[str]] = {}
    started = time.perf_counter()
    seen: dict[str, str] = {}  # key -> kind of every entity found so far (the store's)
    for text in texts:
        grams = word_keys(text["text"])
        known = {} if args.alone else written(grams, {k: seen[k] for k in grams if k in seen})
        found = extract(text["text"], known)
        seen.update((m.key, m.kind) for m in found.mentions)
        got = set(found.keys)
        gold = {key(name) for name in text["entities"]}
        got_relations = {(r.type, r.source, r.target) for r in found.relations}
        gold_relations = {_gold_relation(r) for r in text["relations"]}
        for group in ((text["split"], text["lang"]), (text["split"], "all")):
            counts = tally.setdefault(group, Counter())
            counts.update(
                found=len(got),
                gold=len(gold),
                right=len(got & gold),
                rel_found=len(got_relations),
                rel_gold=len(gold_relations),
                rel_right=len(got_relations & gold_relations),
            )
        for kind in {r[0] for r in got_relations | gold_relations}:
            counts = by_type.setdefault((text["split"], kind), Counter())
            counts.update(
                found=sum(1 for r in got_relations if r[0] == kind),
                gold=sum(1 for r in gold_relations if r[0] == kind),
                right=sum(1 for r in got_relations & gold_relations if r[0] == kind),
            )
        if args.show == text["split"] and (got != gold or got_relations != gold_relations):
            print(f"{text['id']}: {text['text']}", file=sys.stderr)
            if got - gold or gold - got:
                print(
                    f"   extra {sorted(got - gold)}  missed {sorted(gold - got)}", file=sys.stderr
                )
            if got_relations != gold_relations:
                print(
                    f"   rel extra {sorted(got_relations - gold_relations)}  "
                    f"missed {sorted(gold_relations - got_relations)}",
                    file=sys.stderr,
                )
    seconds = time.perf_counter() - started
    report: dict[str, Any] = {
        "texts": len(texts),
        "ms_per_text": round(1000 * seconds / len(texts), 2),
    }
    for (split, lang), counts in sorted(tally.items()):
        report[f"{split}.{lang}"] = {
            "entities": _score(counts["found"], counts["gold"], counts["right"]),
            "relations": _score(counts["rel_found"], counts["rel_gold"], counts["rel_right"]),
        }
    for (split, kind), counts in sorted(by_type.items()):
        report[f"{split}.relation.{kind}"] = _score(
            counts["found"], counts["gold"], counts["right"]
        )
    return report
