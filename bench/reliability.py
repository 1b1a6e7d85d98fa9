"""Reliability under faults and load: `run.py reliability [--ingests N --kills K]
[--clients C --events E]`.

crash: a stream of N ingests through the daemon while it is killed with SIGKILL K times
at random moments (and restarted); a turn the daemon acknowledged must be in the store
afterwards, `PRAGMA integrity_check` must say ok, and `doctor` must find the vector index
consistent with SQLite (or make it so with --repair). The client retries a failed ingest
with the same key, as the hooks' spool does, so an ingest committed just before a kill is
acknowledged on the retry as a duplicate.

concurrency: C hook processes at a time (the real `hooks/mnemoweave-hook`, spawned per
event as Claude Code does), E events each (prompts, every fifth followed by a Stop with
the answer), while distill and search run in a loop beside them. No write may be lost (a
hook out of budget spools its payload; the daemon stores it within seconds), no "database
is locked" may reach a host or a log, and the hooks' latency is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from metrics import percentiles
from mnemoweave import client

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "hooks" / "mnemoweave-hook"
START_WITHIN = 180.0  # seconds a daemon may take to answer (models, index, jieba)
DRAIN_WITHIN = 60.0  # seconds for spooled payloads to be stored


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ingests", type=int, default=10_000, help="crash: turns ingested")
    parser.add_argument("--kills", type=int, default=10, help="crash: SIGKILLs on the way")
    parser.add_argument("--clients", type=int, default=8, help="concurrency: hook processes")
    parser.add_argument("--events", type=int, default=500, help="concurrency: events each")
    parser.add_argument("--seed", type=int, default=7)


# --- a daemon we can kill -----------------------------------------------------------------


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
    return env | {"MNEMOWEAVE_HOME": str(home)} | extra


def serve(home: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start `mnemoweave serve` and wait until it answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_WITHIN
    while not client.running(home):
        if process.poll() is not None and process.returncode != 0:
            raise RuntimeError(f"the daemon exited with {process.returncode}")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the daemon did not answer within {START_WITHIN:g} s")
        time.sleep(0.05)
    return process


def shut(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


# --- crash safety -------------------------------------------------------------------------


def crash(home: Path, ingests: int, kills: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    env = env_for(home)
    process = serve(home, env)
    kill_after = sorted(rng.sample(range(1, ingests), min(kills, ingests - 1)))
    acknowledged: list[str] = []
    restarts = killed = 0
    started = time.monotonic()
    i = 0
    try:
        while i < ingests:
            turn = {
                "session": f"crash-{i // 50}",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": f"turn {i}: the upload worker retries {i % 7} times before it gives up",
                "host": "bench",
                "key": f"crash:{i}",
            }
            try:
                client.request(home, "POST", "/v1/turns", turn, timeout=30)
            except client.DaemonError:
                if not client.running(home):
                    process.wait(timeout=30)
                    process = serve(home, env)
                    restarts += 1
                continue  # the same turn again, with the same key
            acknowledged.append(turn["key"])
            i += 1
            if kill_after and i == kill_after[0]:
                kill_after.pop(0)
                killed += 1
                victim = process.pid
                delay = rng.uniform(0.0, 0.03)  # lands in one of the next requests
                threading.Timer(delay, os.kill, (victim, signal.SIGKILL)).start()
    finally:
        shut(process)
    seconds = time.monotonic() - started
    report = {"ingests": ingests, "kills": killed, "restarts": restarts}
    return report | {"seconds": round(seconds, 1)} | _verify(home, acknowledged)


def _verify(home: Path, acknowledged: list[str]) -> dict[str, Any]:
    from mnemoweave import Engine

    with Engine(home) as engine:
        present = 0
        for start in range(0, len(acknowledged), 500):
            keys = acknowledged[start : start + 500]
            marks = ",".join("?" * len(keys))
            query = f"SELECT count(*) FROM turns WHERE key IN ({marks})"
            present += engine.db.execute(query, keys).fetchone()[0]
        integrity = engine.db.execute("PRAGMA integrity_check").fetchone()[0]
        index = [c for c in engine.doctor() if c.name.startswith(("vector", "full-text"))]
        consistent = all(c.ok for c in index)
        repaired = consistent or all(
            c.ok for c in engine.doctor(repair=True) if c.name.startswith(("vector", "full-text"))
        )
        retrieval = engine.retrieval_mode()
    return {
        "retrieval": retrieval,  # a missing model shows here, not only in a log
        "acknowledged": len(acknowledged),
        "lost": len(acknowledged) - present,
        "integrity": integrity,
        "index_consistent": consistent,
        "index_consistent_after_repair": repaired,
    }


# --- concurrency --------------------------------------------------------------------------


def _hook(env: dict[str, str], event: str, payload: dict[str, Any]) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(LAUNCHER), "claude-code", event],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        timeout=60,
    )
    return (time.perf_counter() - started) * 1000, done.returncode, done.stderr


def concurrency(home: Path, clients: int, events: int) -> dict[str, Any]:
    env = env_for(home)
    hook_env = env_for(home, HOME=str(home / "user"))
    process = serve(home, env)
    latencies: list[float] = []
    failures: list[str] = []
    expected: dict[str, int] = {}
    lock = threading.Lock()
    quiet = threading.Event()
    background = {"distill": 0, "search": 0}

    def load(name: str, path: str, body: dict[str, Any]) -> None:
        while not quiet.is_set():
            try:
                client.request(home, "POST", path, body, timeout=30)
                background[name] += 1
            except client.DaemonError as exc:
                with lock:
                    failures.append(f"{name}: {exc}")
            quiet.wait(0.1)

    def one_client(number: int) -> None:
        session = f"client-{number}"
        stored = 0
        for event in range(events):
            prompt = f"client {number} event {event}: why does the nightly export time out?"
            calls = [("UserPromptSubmit", {"prompt": prompt})]
            if event % 5 == 4:
                calls.append(("Stop", {"last_assistant_message": f"answer {number}/{event}"}))
            for name, extra in calls:
                payload = {"session_id": session, "cwd": "/bench/project", **extra}
                took, rc, stderr = _hook(hook_env, name, payload)
                with lock:
                    latencies.append(took)
                    if rc != 0 or stderr:
                        failures.append(f"{session} {name}: rc {rc} {stderr[:200]!r}")
                stored += 1
        with lock:
            expected[session] = stored

    loads = [
        threading.Thread(target=load, args=("distill", "/v1/distill", {})),
        threading.Thread(target=load, args=("search", "/v1/search", {"query": "export timeout"})),
    ]
    workers = [threading.Thread(target=one_client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for thread in loads + workers:
        thread.start()
    for thread in workers:
        thread.join()
    quiet.set()
    for thread in loads:
        thread.join(timeout=60)
    seconds = time.monotonic() - started
    try:
        found = _drained(home, expected)
    finally:
        shut(process)
    logs = "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*.log"))
    spooled = logs.count("spooled to")
    return {
        "clients": clients,
        "events": events,
        "hook_calls": len(latencies),
        "seconds": round(seconds, 1),
        "latency_ms": percentiles(latencies),
        "spooled": spooled,
        "expected_turns": sum(expected.values()),
        "stored_turns": found,
        "lost": sum(expected.values()) - found,
        "locked_errors": logs.count("database is locked"),
        "failures": failures[:10],
        "background": background,
    }


def _drained(home: Path, expected: dict[str, int]) -> int:
    """Turns stored for the clients' sessions, once the spool is empty (bounded wait)."""
    deadline = time.monotonic() + DRAIN_WITHIN
    while True:
        found = sum(
            len(client.request(home, "GET", f"/v1/turns?session={s}&limit=100000")["result"])
            for s in expected
        )
        spool = list((home / "spool").glob("*.json")) if (home / "spool").exists() else []
        if (found >= sum(expected.values()) and not spool) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": sys.version[:6]}}
    with tempfile.TemporaryDirectory(prefix="mw-rel-", dir="/tmp") as tmp:
        home = Path(tmp) / "c"
        _models(home, args)
        report["crash"] = crash(home, args.ingests, args.kills, args.seed)
        home = Path(tmp) / "l"
        _models(home, args)
        report["concurrency"] = concurrency(home, args.clients, args.events)
    return report


def _models(home: Path, args: argparse.Namespace) -> None:
    """The benchmark's model setting: the built models linked in, or lexical-only."""
    home.mkdir(parents=True)
    if args.embedder == "none":
        (home / "config.toml").write_text('embedder = "none"\n')
        return
    (home / "models").symlink_to(Path(args.models).resolve())
    (home / "config.toml").write_text(f'embedder = "{args.embedder}"\n')
