"""Team: sync time of a team's memories, and search and weave beside a large team mirror.

A real team server (the `team serve` HTTP server and its records in Chroma, in a thread of
this process) on a free loopback port, in the run's temporary data dir. One member's store
holds --own memories (corpus.py's, as the scale benchmark stores them) in the corpus
projects. For each team size (--n, comma-separated) a team of its own is seeded with that
many memories in the member's projects (the fillers' texts, each made distinct by a note
number, with their model embeddings; written straight to Chroma, stamped an hour old, as if
published earlier by a teammate), and the member gets a token of that team, then:
- `sync_seconds`: the member's first sync, which mirrors every one of them;
- `incremental_sync_seconds`: a later sync after --fresh new records arrive (it reads
  again what changed in the OVERLAP before its cursor, and mirrors only what is new or
  changed: `incremental_records`);
- search (`source="all"`: own memories, turns and team hits) and weave p50/p95 over the
  dev prompts, with the mirror, and `baseline` the same with the team off.
The weave target is p95 under 100 ms.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import Any

from corpus import DEV_PROJECTS, OTHER_PROJECTS, fill, fillers, prompts, rotate
from harness import load_embedders, progress
from metrics import percentiles

SEARCH_K = 10
BASE = 2000  # distinct texts embedded; team memories reuse their vectors round-robin
SEED_BATCH = 1000
SPREAD = 3000.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", default="10000,100000", help="team memories, comma-separated")
    parser.add_argument("--own", type=int, default=10000, help="the member's own memories")
    parser.add_argument("--queries", type=int, default=200, help="timed searches and weaves")
    parser.add_argument("--fresh", type=int, default=100, help="records new before a resync")


@contextmanager
def team_server(path: Path) -> Iterator[tuple[Any, str, Path]]:
    """The team server on a free loopback port: its Records (to seed), URL and directory."""
    from mnemoweave.team.members import Members
    from mnemoweave.team.records import Records
    from mnemoweave.team.service import TeamHTTPServer, chroma_client

    path.mkdir(mode=0o700, parents=True)
    records = Records(chroma_client(path))
    server = TeamHTTPServer("127.0.0.1", 0, Members(path), records)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield records, f"http://127.0.0.1:{server.server_address[1]}", path
    finally:
        server.shutdown()
        server.server_close()


def team_rows(n: int, projects: list[str], embedder: Any) -> tuple[list[Any], Any]:
    """`n` team records (an hour old) in `projects`, round-robin, and their vectors, from
    BASE embedded texts."""
    from mnemoweave.store.team import TeamRecord
    from mnemoweave.team.server import content_id

    source = fillers({name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}, seed=11)
    base = [next(source) for _ in range(min(BASE, n))]
    vectors = embedder.embed([row["text"] for row in base])
    old = time.time() - 3600  # published over SPREAD seconds, an hour ago
    records = []
    for i in range(n):
        row = base[i % len(base)]
        text, project = f"{row['text']} (team note {i})", projects[i % len(projects)]
        cid = content_id(text, project, row["kind"])
        records.append(
            TeamRecord(cid, project, row["kind"], text, ("mate@bench",), old, old + i * SPREAD / n)
        )
    return records, [vectors[i % len(base)] for i in range(n)]


def seed(records: Any, team: str, embedder: Any, rows: list[Any], vectors: list[Any]) -> float:
    """Write team memories straight to the team's collection, as published earlier."""
    from mnemoweave.team.records import collection_name, metadata

    records.join(team, embedder.name, embedder.dim)
    collection = records.client.get_collection(collection_name(team), embedding_function=None)
    started = perf_counter()
    for start in range(0, len(rows), SEED_BATCH):
        part = rows[start : start + SEED_BATCH]
        collection.upsert(
            ids=[r.cid for r in part],
            embeddings=[list(map(float, v)) for v in vectors[start : start + SEED_BATCH]],
            documents=[r.text for r in part],
            metadatas=[
                metadata(r.project, r.kind, r.authors, r.created, r.updated, False) for r in part
            ],
        )
    return perf_counter() - started


def timed(call: Any, asked: list[Any]) -> list[float]:
    latencies = []
    for prompt in asked:
        started = perf_counter()
        call(prompt)
        latencies.append((perf_counter() - started) * 1000)
    return latencies


def latencies(engine: Any, asked: list[Any]) -> dict[str, Any]:
    for prompt in asked[:20]:  # untimed warm-up
        engine.weave(prompt.text, project=prompt.cwd)
    search = timed(
        lambda p: engine.search(p.text, k=SEARCH_K, project=p.cwd, source="all", touch=False),
        asked,
    )
    weave = timed(lambda p: engine.weave(p.text, project=p.cwd), asked)
    return {"search_latency_ms": percentiles(search), "weave_latency_ms": percentiles(weave)}


def size(
    n: int, engine: Any, server: tuple[Any, str, Path], args: argparse.Namespace, asked: list[Any]
) -> dict[str, Any]:
    from mnemoweave.store import projects as projects_table
    from mnemoweave.store import team as team_table
    from mnemoweave.team import members
    from mnemoweave.team.sync import connect, sync

    records, url, path = server
    team = f"bench{n}"
    token = members.add(path, f"me{n}@bench", team)
    engine.config = replace(engine.config, team_url=url, team_token=token)
    projects = sorted(set(projects_table.counts(engine.db)) - {""})
    progress(f"team: seeding {n} team memories")
    rows, vectors = team_rows(n + args.fresh, projects, engine.embedder)
    seeded = seed(records, team, engine.embedder, rows[:n], vectors[:n])
    progress(f"team: first sync of {n}")
    started = perf_counter()
    first = sync(engine)
    sync_seconds = perf_counter() - started
    member = connect(engine)
    for start in range(n, n + args.fresh, SEED_BATCH // 10):  # published now, by the member
        end = min(n + args.fresh, start + SEED_BATCH // 10)
        member.publish(rows[start:end], vectors[start:end])
    started = perf_counter()
    again = sync(engine)
    incremental = perf_counter() - started
    progress(f"team: timing search and weave beside {n} team memories")
    report = {
        "seed_seconds": round(seeded, 1),
        "sync_seconds": round(sync_seconds, 1),
        "mirrored": team_table.mirror_count(engine.db),
        "incremental_sync_seconds": round(incremental, 2),
        "incremental_records": again.get("mirrored"),
        "errors": [e for e in (first.get("error"), again.get("error")) if e],
        **latencies(engine, asked),
    }
    engine.config = replace(engine.config, team_url="")
    report["baseline"] = latencies(engine, asked)  # the same store with the team off
    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    from mnemoweave import Engine
    from mnemoweave.config import load_config

    chosen = sorted({int(part) for part in args.n.split(",") if part.strip()})
    embedders = load_embedders(args.embedder, args.models)
    if not embedders:
        raise SystemExit("team memory needs an embedding model (not --embedder none)")
    root = Path(tempfile.mkdtemp(prefix="team-", dir=os.environ["MNEMOWEAVE_HOME"]))
    report: dict[str, Any] = {"own": args.own, "queries": args.queries, "sizes": {}}
    with team_server(root / "server") as server:
        home = root / "member"
        config = replace(load_config(home), team_sync_seconds=60.0)
        with Engine(home, config) as engine:
            engine.use_embedder(*embedders)
            projects = {name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}
            progress(f"team: storing {args.own} own memories")
            ids, _ = fill(engine, args.own, projects)
            asked = rotate(prompts(projects, ids), args.queries)
            for n in chosen:
                report["sizes"][str(n)] = size(n, engine, server, args, asked)
    largest = report["sizes"][str(chosen[-1])]
    report["weave_p95_under_100ms"] = (largest["weave_latency_ms"]["p95"] or 1e9) < 100
    return report
