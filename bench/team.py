"""Team: sync time of a team's memories, and search and weave beside a large team mirror.

A real team server (`mnemoweave team serve`: `chroma run` behind the token gate) on a
free loopback port, in the run's temporary data dir. One member's store holds --own
memories (corpus.py's, as the scale benchmark stores them) in the corpus projects. For each
team size (--n, comma-separated) the server is seeded with that many team memories in the
member's projects, which its mirror follows (the fillers' texts, each made distinct by a
note number, with their model embeddings; stamped an hour old, as if published earlier),
then:
- `sync_seconds`: the member's first sync, which mirrors every one of them;
- `incremental_sync_seconds`: a later sync after --fresh new records arrive (it also
  pulls again what changed in the OVERLAP before its cursor: `incremental_records`);
- search (`source="all"`: own memories, turns and team hits) and weave p50/p95 over the
  dev prompts, with the mirror, and `baseline` the same with the team off.
The weave target is p95 under 100 ms.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import Any

from corpus import DEV_PROJECTS, OTHER_PROJECTS, fill, fillers, prompts, rotate
from harness import load_embedders, progress
from metrics import percentiles

TOKEN = "bench-team-token"
SEARCH_K = 10
BASE = 2000  # distinct texts embedded; team memories reuse their vectors round-robin
SEED_BATCH = 1000
START_WITHIN = 90.0
SPREAD = 3000.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", default="10000,100000", help="team memories, comma-separated")
    parser.add_argument("--own", type=int, default=10000, help="the member's own memories")
    parser.add_argument("--queries", type=int, default=200, help="timed searches and weaves")
    parser.add_argument("--fresh", type=int, default=100, help="records new before a resync")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(path: Path, port: int) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", "team", "serve", "--path", str(path)]
        + ["--port", str(port), "--token", TOKEN],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit("the team server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return child
        except OSError:
            time.sleep(0.1)
    child.kill()
    raise SystemExit(f"the team server did not listen within {START_WITHIN:g}s")


def stop_server(child: subprocess.Popen[bytes]) -> None:
    child.terminate()
    try:
        child.wait(20)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(20)


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


def seed(server: Any, records: list[Any], vectors: list[Any]) -> float:
    started = perf_counter()
    for start in range(0, len(records), SEED_BATCH):
        end = start + SEED_BATCH
        server.put(records[start:end], vectors[start:end])
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


def size(n: int, engine: Any, url: str, args: argparse.Namespace, asked: list[Any]) -> dict:
    from mnemoweave.store import team as team_table
    from mnemoweave.team import mirror
    from mnemoweave.team.sync import connect, sync

    engine.config = replace(engine.config, team_url=url, team_name=f"bench{n}")
    server = connect(engine)
    progress(f"team: seeding {n} team memories")
    records, vectors = team_rows(n + args.fresh, mirror.projects(engine), engine.embedder)
    seeded = seed(server, records[:n], vectors[:n])
    progress(f"team: first sync of {n}")
    started = perf_counter()
    first = sync(engine)
    sync_seconds = perf_counter() - started
    fresh = [replace(r, updated=time.time()) for r in records[n:]]
    server.put(fresh, vectors[n:])
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
    port = _free_port()
    child = start_server(root / "server", port)
    report: dict[str, Any] = {"own": args.own, "queries": args.queries, "sizes": {}}
    try:
        home = root / "member"
        config = replace(
            load_config(home), team_token=TOKEN, team_author="me@bench", team_sync_seconds=60.0
        )
        with Engine(home, config) as engine:
            engine.use_embedder(*embedders)
            projects = {name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}
            progress(f"team: storing {args.own} own memories")
            ids, _ = fill(engine, args.own, projects)
            asked = rotate(prompts(projects, ids), args.queries)
            for n in chosen:
                report["sizes"][str(n)] = size(n, engine, f"http://127.0.0.1:{port}", args, asked)
    finally:
        stop_server(child)
    largest = report["sizes"][str(chosen[-1])]
    report["weave_p95_under_100ms"] = (largest["weave_latency_ms"]["p95"] or 1e9) < 100
    return report
