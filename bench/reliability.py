"""Reliability under faults and load: `run.py reliability [--ingests N --kills K]
[--clients C --events E] [--writes W] [--prompt-mb M] [--imports I]`.

crash: a stream of N ingests through the daemon while it is killed with SIGKILL K times
at random moments (and restarted); a turn the daemon acknowledged must be in the store
afterwards, `PRAGMA integrity_check` must say ok, and `doctor` must find the vector index
consistent with SQLite (or make it so with --repair). The client retries a failed ingest
with the same key, as the hooks' spool does, so an ingest committed just before a kill is
acknowledged on the retry as a duplicate.

concurrency: C hook processes at a time (the real plugin launcher, `scripts/mnemoweave
hook`, spawned per event as Claude Code does), E events each (prompts, every fifth
followed by a Stop with the answer), while distill and search run in a loop beside them.
No write may be lost (a hook out of budget spools its payload; the daemon stores it within
seconds), no "database is locked" may reach a host or a log, and the hooks' latency is
reported.

bursts: W `mnemoweave ingest` processes started at once, against a daemon and then with
none (each waits its turn for the store's lock); every write must be stored.

huge prompt: an M MB prompt through the real Claude Code prompt hook while a search runs
in a loop: the hook must exit within the host's timeout (what `install` sets), the search
must keep answering, and the prompt must be stored bounded.

killed import: `mnemoweave import` of I turns through the daemon, SIGKILLed once the turns
are committed and before its answer; what the CLI says, what is stored, and how long the
restarted daemon takes to embed every row in the background (no `doctor --repair`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from launchers import command
from metrics import percentiles
from mnemoweave.hosts import client

ROOT = Path(__file__).resolve().parents[1]
START_WITHIN = 180.0  # seconds a daemon may take to answer (models, index, jieba)
DRAIN_WITHIN = 60.0  # seconds for spooled payloads to be stored


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ingests", type=int, default=10_000, help="crash: turns ingested")
    parser.add_argument("--kills", type=int, default=10, help="crash: SIGKILLs on the way")
    parser.add_argument("--clients", type=int, default=8, help="concurrency: hook processes")
    parser.add_argument("--events", type=int, default=500, help="concurrency: events each")
    parser.add_argument("--writes", type=int, default=100, help="bursts: CLI writes at once")
    parser.add_argument("--prompt-mb", type=float, default=10, help="huge prompt: its size")
    parser.add_argument("--imports", type=int, default=5000, help="killed import: turns")
    parser.add_argument("--seed", type=int, default=7)


# --- a daemon we can kill -----------------------------------------------------------------


def env_for(home: Path, **extra: str) -> dict[str, str]:
    """The caller's environment with `home` as the data dir; of the MNEMOWEAVE_* settings
    only the models cache is kept."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MNEMOWEAVE_") or k == "MNEMOWEAVE_MODELS"
    }
    return env | {"MNEMOWEAVE_HOME": str(home)} | extra


def serve(home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
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


def shut(process: subprocess.Popen[bytes]) -> None:
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
        [*command(ROOT, "hook"), "claude-code", event],
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


# --- bursts, a huge prompt, a killed import --------------------------------------------------


def _cli(env: dict[str, str], *args: str, **options: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def _stored(home: Path, sql: str, *values: Any) -> int:
    with sqlite3.connect(f"file:{home / 'mnemoweave.sqlite'}?mode=ro", uri=True) as db:
        stored: int = db.execute(sql, values).fetchone()[0]
    return stored


def _burst(home: Path, writes: int) -> dict[str, Any]:
    env = env_for(home)
    started = time.monotonic()
    running = [
        _cli(env, "ingest", "-s", "burst", "-r", "user", f"burst {n}") for n in range(writes)
    ]
    failures = []
    for process in running:
        out, err = process.communicate(timeout=3600)
        if process.returncode != 0:
            failures.append(err.strip()[:200])
    seconds = time.monotonic() - started
    stored = _stored(home, "SELECT count(*) FROM turns WHERE session_id = 'burst'")
    report = {"writes": writes, "failed": len(failures), "stored": stored}
    return report | {"lost": writes - stored, "seconds": round(seconds, 1), "errors": failures[:5]}


def bursts(home: Path, writes: int, models: Any = None) -> dict[str, Any]:
    """`writes` CLI writes at once against a daemon, then (in a fresh data dir) with none."""
    served = home / "daemon"
    (models or _lexical)(served)
    process = serve(served, env_for(served))
    try:
        report = {"daemon": _burst(served, writes)}
    finally:
        shut(process)
    alone = home / "alone"
    (models or _lexical)(alone)
    return report | {"in_process": _burst(alone, writes)}


def _lexical(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text('embedder = "none"\n')


def huge_prompt(home: Path, megabytes: float) -> dict[str, Any]:
    """The prompt hook on a huge prompt, a search answering in a loop beside it."""
    from mnemoweave.hosts.install import HOOK_EVENTS

    env, hook_env = env_for(home), env_for(home, HOME=str(home / "user"))
    process = serve(home, env)
    client.request(home, "POST", "/v1/memories", {"text": "Uploads retry with backoff"})
    size = int(megabytes * 1_000_000)
    prompt = "Why does this log end in a timeout?\n" + ("upload retry 503 backoff\n" * size)[:size]
    payload = {"session_id": "huge", "cwd": "/bench/project", "prompt": prompt}
    searches: list[tuple[float, float]] = []  # (started, took ms)
    quiet = threading.Event()

    def search() -> None:
        while not quiet.is_set():
            began = time.monotonic()
            client.request(home, "POST", "/v1/search", {"query": "upload backoff"}, timeout=60)
            searches.append((began, (time.monotonic() - began) * 1000))
            quiet.wait(0.02)

    beside = threading.Thread(target=search)
    try:
        beside.start()
        time.sleep(1.0)  # the search's own pace first
        hook_started = time.monotonic()
        took, rc, stderr = _hook(hook_env, "UserPromptSubmit", payload)
        asked = time.monotonic()  # the daemon's own time for the same request
        direct = payload | {"session_id": "huge-direct"}
        client.request(home, "POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": direct})
        answered = time.monotonic()
        time.sleep(1.0)
        quiet.set()
        beside.join(timeout=60)
        deadline = time.monotonic() + DRAIN_WITHIN
        while not (stored := _huge_turns(home)) and time.monotonic() < deadline:
            time.sleep(0.5)  # a hook out of budget spooled it: the daemon stores it soon
    finally:
        quiet.set()
        shut(process)
    during = [ms for began, ms in searches if hook_started <= began <= answered]
    before = [ms for began, ms in searches if began < hook_started]
    return {
        "prompt_mb": megabytes,
        "hook_ms": round(took, 1),
        "hook_rc": rc,
        "hook_stderr": stderr.decode(errors="replace")[:200],
        "host_timeout_ms": HOOK_EVENTS["claude-code"]["UserPromptSubmit"][0] * 1000,
        "hook_budget_ms": 250,
        "daemon_request_ms": round((answered - asked) * 1000, 1),
        "search_before_ms": percentiles(before) | {"max": round(max(before, default=0), 1)},
        "search_during_ms": percentiles(during) | {"max": round(max(during, default=0), 1)},
        "searches_during": len(during),
        "spooled": "spooled" in _log(home, "hooks.log"),
        "stored_chars": stored,
    }


def _huge_turns(home: Path) -> list[int]:
    found = client.request(home, "GET", "/v1/turns?session=huge")["result"]
    return [len(turn["text"]) for turn in found]


def _log(home: Path, name: str) -> str:
    path = home / "logs" / name
    return path.read_text(errors="replace") if path.exists() else ""


def killed_import(home: Path, turns: int) -> dict[str, Any]:
    """SIGKILL the daemon once an import is committed, before it answers; then restart."""
    env = env_for(home)
    source = home.parent / f"{home.name}-import.jsonl"
    with open(source, "w", encoding="utf-8") as lines:
        for n in range(turns):
            line = {"session": f"import-{n // 50}", "role": "user" if n % 2 == 0 else "assistant",
                    "text": f"turn {n}: the upload worker retries {n % 7} times, then gives up",
                    "ts": 1_700_000_000 + n}  # fmt: skip
            lines.write(json.dumps(line) + "\n")
    process = serve(home, env)
    started = time.monotonic()
    importing = _cli(env, "import", str(source), start_new_session=True)
    try:
        while _count(home) < turns:
            if importing.poll() is not None or time.monotonic() - started > 3600:
                raise RuntimeError("the import ended or stalled before it was committed")
            time.sleep(0.01)
        killed_after = time.monotonic() - started
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        out, err = importing.communicate(timeout=3600)
    finally:
        if importing.poll() is None:
            importing.kill()
    from mnemoweave import Engine
    from mnemoweave.upkeep.indexing import drift

    with Engine(home) as engine:
        unembedded = sum(missing for missing, _ in drift(engine).values())
    restarted = time.monotonic()
    process = serve(home, env)
    serving = time.monotonic()
    searches: list[float] = []
    try:
        while True:
            began = time.monotonic()
            client.request(home, "POST", "/v1/search", {"query": "upload worker"}, timeout=60)
            searches.append((time.monotonic() - began) * 1000)
            checks = client.request(home, "POST", "/v1/doctor", {})["result"]
            vectors = [c for c in checks if c["name"].startswith("vector index")]
            if all(c["ok"] for c in vectors) or time.monotonic() - serving > 3600:
                break
            time.sleep(0.2)
        mended = time.monotonic()
    finally:
        shut(process)
    return {
        "turns": turns,
        "killed_after_s": round(killed_after, 1),
        "cli_rc": importing.returncode,
        "cli_said": err.strip().splitlines()[:2],
        "cli_counts": out.strip(),
        "stored": _count(home),
        "lost": turns - _count(home),
        "unembedded_after_kill": unembedded,
        "restart_to_serving_s": round(serving - restarted, 1),
        "embedded_in_background_s": round(mended - serving, 1),
        "index_consistent_without_repair": all(c["ok"] for c in vectors),
        "search_while_mending_ms": percentiles(searches) | {"max": round(max(searches), 1)},
        "mend_log": [
            line.split(" INFO ")[-1]
            for line in _log(home, "daemon.log").splitlines()
            if "vector index (" in line
        ],
    }


def _count(home: Path) -> int:
    try:
        return _stored(home, "SELECT count(*) FROM turns")
    except sqlite3.Error:
        return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "python": sys.version[:6]}}
    with tempfile.TemporaryDirectory(prefix="mw-rel-", dir="/tmp") as tmp:
        home = Path(tmp) / "c"
        _models(home, args)
        report["crash"] = crash(home, args.ingests, args.kills, args.seed)
        home = Path(tmp) / "l"
        _models(home, args)
        report["concurrency"] = concurrency(home, args.clients, args.events)
        report["bursts"] = bursts(Path(tmp) / "b", args.writes, lambda h: _models(h, args))
        home = Path(tmp) / "h"
        _models(home, args)
        report["huge_prompt"] = huge_prompt(home, args.prompt_mb)
        home = Path(tmp) / "k"
        _models(home, args)
        report["killed_import"] = killed_import(home, args.imports)
    return report


def _models(home: Path, args: argparse.Namespace) -> None:
    """The benchmark's model setting: the built models in `--models` (the processes it
    starts are given them by env_for), or lexical-only."""
    home.mkdir(parents=True)
    if args.embedder == "none":
        (home / "config.toml").write_text('embedder = "none"\n')
        return
    os.environ["MNEMOWEAVE_MODELS"] = str(Path(args.models).resolve())
    (home / "config.toml").write_text(f'embedder = "{args.embedder}"\n')
