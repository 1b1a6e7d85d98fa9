"""Hooks: spawn-to-exit latency of the Claude Code prompt hook, warm daemon vs cold CLI.

Each call runs what Claude Code runs on UserPromptSubmit: `plugins/claude-code/scripts/
mnemoweave hook claude-code UserPromptSubmit` (the plugin's launcher, which runs
`.venv/bin/python -S -c ENTRY`, see
mnemoweave/hook.py) with the JSON payload on stdin and the project dir as cwd, and is timed
from spawn to exit (exit code 0 checked). Every call has its own session id, started as
Claude Code starts one: its SessionStart hook (untimed, which gives the session its brief)
`--pause` seconds before the prompt. So each prompt stores a new user turn and weaves for
it, as in real use; the payload names a transcript that is not written, so the daemon
follows none. The daemon (`mnemoweave serve`) is
started by the benchmark on a data dir already holding N memories (loaded in-process
before it starts: the daemon holds the store lock) and stopped afterwards, whatever
happens. After the hook calls, the same request is sent from this process
(`daemon_request_ms`): the daemon's share of a call, without the process spawn.

The cold path does the same work without a daemon, through the CLI, which then opens the
store in-process: `mnemoweave ingest` (the prompt as a user turn) followed by `mnemoweave
weave PROMPT --session S --project P`, timed together; each part is reported too, and
`speedup_weave_only` compares the warm hook with the weave process alone (a lower bound
of any cold path, since it skips storing the prompt).

Memories and prompts are those of corpus.py (N memories stored, the dev queries rotated),
each project a checkout dir.

Everything lives in one temporary directory with a short path (Unix socket paths are
limited): the data dirs, a HOME for every subprocess, the project checkouts, a copy of the
built models, and the bytecode cache (PYTHONPYCACHEPREFIX; PYTHONDONTWRITEBYTECODE is
dropped, so the warm-up calls compile once, as on an ordinary install).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from corpus import DEV_PROJECTS, OTHER_PROJECTS, Prompt, Tally, fill, prompts, rotate
from harness import progress
from launchers import command, launcher_paths
from metrics import percentiles

REPO = Path(__file__).resolve().parents[1]
EVENT = "UserPromptSubmit"
START = "SessionStart"  # sent first, untimed: Claude Code starts every session with it
SOCKET_PATH_MAX = 107  # bytes of a Unix socket path, NUL excluded (Linux)
HOOK_TIMEOUT = 30.0  # seconds one hook process may take before the run fails
CLI_TIMEOUT = 300.0  # seconds one cold CLI process may take
START_TIMEOUT = 180.0  # seconds the daemon may take to load and answer
STOP_TIMEOUT = 30.0
TARGETS = {"warm_p95_ms_at_10000": 80.0, "speedup": 10.0}
REQUESTS = 50  # in-process requests after the hook calls, to split daemon time from spawn
PAUSE = 0.5  # seconds between two prompts: a real reply comes between them, and the turn
# the daemon stores after answering is written meanwhile (0: back to back)
STARTED: list[subprocess.Popen[bytes]] = []  # every daemon this process started


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes", default="1000,10000", help="memory counts, comma-separated (default 1000,10000)"
    )
    parser.add_argument("--calls", type=int, default=200, help="timed hook calls per size")
    parser.add_argument("--warmup", type=int, default=10, help="untimed hook calls first")
    parser.add_argument("--cold-calls", type=int, default=20, help="timed cold CLI calls")
    parser.add_argument(
        "--pause",
        type=float,
        default=PAUSE,
        help=f"seconds between prompts (default {PAUSE}; 0: back to back)",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also time the warm hook with the daemon and hook of git revision REV, on the "
        "same data dirs in the same run (reported under `baseline`); a revision from before "
        "the per-project vector index (05f8247) finds none of their vectors",
    )


# --- the data dirs -------------------------------------------------------------------------


def short_root() -> Path:
    """A fresh directory with a path short enough for `<root>/h<N>/daemon.sock`."""
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) > 40:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="mwh-", dir=base))


def make_projects(root: Path) -> dict[str, str]:
    """A git checkout dir per project (an empty `.git` is enough): name -> project path."""
    projects = {}
    for name in (*DEV_PROJECTS, *OTHER_PROJECTS):
        (root / "src" / name / ".git").mkdir(parents=True)
        projects[name] = str(root / "src" / name)
    return projects


def resolve_models(embedder: str, models: Path, root: Path) -> tuple[list[str], str]:
    """(models to use, mode): built models are copied into `root`/models, the run's models
    cache; missing -> lexical."""
    if embedder == "none":
        return [], "lexical-only (--embedder none)"
    from mnemoweave.embed import registered

    names, specs = embedder.split(","), registered()
    missing = [n for n in names if n not in specs or not specs[n].is_built(models / n)]
    if missing:
        return [], f"lexical-only (model {', '.join(missing)} not built in {models})"
    for name in names:
        shutil.copytree(models / name, root / "models" / name, symlinks=False)
    return names, f"dense+lexical ({','.join(names)})"


def configure(home: Path, names: Sequence[str]) -> dict[str, str]:
    """Create the data dir; the settings that choose the models, as env."""
    home.mkdir(parents=True)
    if len(os.fsencode(home / "daemon.sock")) > SOCKET_PATH_MAX:
        raise SystemExit(f"{home}: too long a path for the daemon's Unix socket")
    chosen = {
        "MNEMOWEAVE_EMBEDDER": names[0] if names else "none",
        "MNEMOWEAVE_SECOND_EMBEDDER": names[1] if len(names) > 1 else "",
    }
    lines = [f'{key[11:].lower()} = "{value}"' for key, value in chosen.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return chosen


def subprocess_env(root: Path, home: Path, chosen: dict[str, str]) -> dict[str, str]:
    """The caller's environment with a temporary HOME and data dir, this run's models, and
    bytecode cached under `root` as on an ordinary install (never in the checkout)."""
    dropped = ("MNEMOWEAVE_BIN", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped} | chosen
    env["HOME"], env["MNEMOWEAVE_HOME"] = str(root / "home"), str(home)
    env["MNEMOWEAVE_MODELS"] = str(root / "models")
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


@contextmanager
def data_dir(home: Path, models: Path) -> Iterator[None]:
    """MNEMOWEAVE_HOME set to `home` and MNEMOWEAVE_MODELS to `models` for the block."""
    settings = {"MNEMOWEAVE_HOME": str(home), "MNEMOWEAVE_MODELS": str(models)}
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def load(
    home: Path, models: Path, n: int, projects: dict[str, str], chosen: dict[str, str]
) -> dict[str, Any]:
    """Store the corpus until `n` memories exist, in-process (before the daemon starts)."""
    from mnemoweave import Engine
    from mnemoweave.config import load_config

    config = replace(
        load_config(home),
        embedder=chosen["MNEMOWEAVE_EMBEDDER"],
        second_embedder=chosen["MNEMOWEAVE_SECOND_EMBEDDER"],
    )
    started = time.perf_counter()
    with data_dir(home, models), Engine(home, config) as engine:
        retrieval = engine.retrieval_mode()
        if len(engine.channels) != len(config.models()):
            raise SystemExit(f"hooks: the models did not load in {home}: {retrieval}")
        ids, stored = fill(engine, n, projects)
        count = len(stored)
    return {
        "ids": ids,
        "memories": count,
        "seconds": round(time.perf_counter() - started, 1),
        "retrieval": retrieval,
    }


# --- the daemon ----------------------------------------------------------------------------


# the package on the path (a baseline's, under its PYTHONPATH), whatever its console script
PACKAGE = [sys.executable, "-m", "mnemoweave"]


def mnemoweave_cli() -> list[str]:
    script = Path(sys.executable).with_name("mnemoweave")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mnemoweave"]


def _log_tail(home: Path) -> str:
    with suppress(OSError):
        lines = (home / "logs" / "daemon.log").read_text(encoding="utf-8").splitlines()
        return " | ".join(lines[-5:])
    return "(no daemon log)"


def stop_daemon(process: subprocess.Popen[bytes], env: dict[str, str]) -> None:
    """`mnemoweave stop` for the data dir, then SIGKILL to its process group if need be."""
    with suppress(subprocess.TimeoutExpired, OSError):
        subprocess.run(
            [*PACKAGE, "stop", "--wait", str(STOP_TIMEOUT / 2)],
            env=env,
            capture_output=True,
            timeout=STOP_TIMEOUT,
        )
    try:
        process.wait(timeout=STOP_TIMEOUT / 2)
    except subprocess.TimeoutExpired:
        with suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


@contextmanager
def daemon(home: Path, env: dict[str, str], timeout: float = START_TIMEOUT) -> Iterator[float]:
    """A warm `mnemoweave serve` for `home` while the block runs; yields its start seconds."""
    from mnemoweave.hosts import client

    started = time.monotonic()
    (home / "logs").mkdir(exist_ok=True)
    with open(home / "logs" / "serve.out", "ab") as out:
        process = subprocess.Popen(
            [*PACKAGE, "serve"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    STARTED.append(process)
    try:
        while not client.running(home, timeout=1.0):
            if process.poll() is not None:
                raise SystemExit(f"the daemon exited with {process.returncode}: {_log_tail(home)}")
            if time.monotonic() - started > timeout:
                raise SystemExit(f"the daemon did not answer in {timeout:g}s: {_log_tail(home)}")
            time.sleep(0.1)
        yield time.monotonic() - started
    finally:
        stop_daemon(process, env)


# --- one call ------------------------------------------------------------------------------


def payload(prompt: Prompt, session: str, user_home: Path, event: str = EVENT) -> dict[str, Any]:
    """A UserPromptSubmit payload as Claude Code sends it (the transcript is not written),
    or the SessionStart payload of its session."""
    slug = prompt.cwd.replace("/", "-")
    sent = {
        "session_id": session,
        "transcript_path": str(user_home / ".claude" / "projects" / slug / f"{session}.jsonl"),
        "cwd": prompt.cwd,
        "hook_event_name": event,
    }
    if event == START:
        return sent | {"source": "startup"}
    return sent | {
        "prompt_id": str(uuid.uuid4()),
        "permission_mode": "default",
        "prompt": prompt.text,
    }


def context_of(stdout: str, event: str = EVENT) -> str | None:
    """The additionalContext the hook of `event` printed for Claude Code, or None."""
    if not stdout.strip():
        return None
    try:
        output = json.loads(stdout)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(output, dict) or output.get("hookEventName") != event:
        return None
    text = output.get("additionalContext")
    return text if isinstance(text, str) and text else None


def call_hook(
    prompt: Prompt, env: dict[str, str], checkout: Path = REPO, pause: float = 0.0
) -> tuple[float, str, str]:
    """A session's start, then its prompt `pause` seconds later, each a hook process (the
    launcher of `checkout`), as Claude Code runs them; the prompt's is timed from spawn to
    exit: (milliseconds, the prompt's stdout, the start's). Fails on a non-zero exit."""
    session = str(uuid.uuid4())
    start = hook_process(prompt, env, checkout, session, START)
    time.sleep(pause)
    started = time.perf_counter()
    stdout = hook_process(prompt, env, checkout, session, EVENT)
    return (time.perf_counter() - started) * 1000, stdout, start


def hook_process(
    prompt: Prompt, env: dict[str, str], checkout: Path, session: str, event: str
) -> str:
    """One hook process for `event` of `session`: its stdout."""
    user_home = Path(env["HOME"])
    body = json.dumps(payload(prompt, session, user_home, event), ensure_ascii=False)
    done = subprocess.run(
        [*command(checkout, "hook"), "claude-code", event],
        input=body.encode("utf-8"),
        capture_output=True,
        cwd=prompt.cwd,
        env=env,
        timeout=HOOK_TIMEOUT,
    )
    if done.returncode != 0:
        raise SystemExit(f"the hook exited with {done.returncode}: {done.stderr[-500:]!r}")
    return done.stdout.decode("utf-8", "replace")


def cli_ms(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, cwd=cwd, env=env, timeout=CLI_TIMEOUT)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:2])} exited with {done.returncode}: {done.stderr!r}")
    return elapsed, done.stdout.decode("utf-8", "replace")


def call_cold(prompt: Prompt, env: dict[str, str]) -> tuple[float, float, str]:
    """The hook's work without a daemon: (ingest ms, weave ms, woven text)."""
    session, cli = str(uuid.uuid4()), mnemoweave_cli()
    where = ["--session", session, "--project", prompt.cwd]
    ingest, _ = cli_ms(
        [*cli, "ingest", *where, "--role", "user", "--host", "claude-code", prompt.text],
        env,
        prompt.cwd,
    )
    weave, text = cli_ms([*cli, "weave", prompt.text, *where], env, prompt.cwd)
    return ingest, weave, text


# --- runs ----------------------------------------------------------------------------------


def hook_log(home: Path) -> list[str]:
    """The lines the hooks logged (each a failure: timeout, spool, bad payload)."""
    try:
        return (home / "logs" / "hooks.log").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def hook_log_lines(home: Path) -> int:
    """How many lines the hooks logged."""
    return len(hook_log(home))


def request_ms(home: Path, prompt: Prompt, user_home: Path, pause: float = 0.0) -> float:
    """The hook's request alone, from this process: what the daemon takes, no spawn (the
    session's start is sent `pause` seconds before, untimed)."""
    from mnemoweave.hosts import client

    session = str(uuid.uuid4())
    for event in (START, EVENT):
        body = {"payload": payload(prompt, session, user_home, event)}
        if event == EVENT:
            time.sleep(pause)
            started = time.perf_counter()
        path = f"/v1/hooks/claude-code/{event}"
        client.request(home, "POST", path, body, timeout=HOOK_TIMEOUT)
    return (time.perf_counter() - started) * 1000


def warm_run(
    home: Path,
    env: dict[str, str],
    asked: Sequence[Prompt],
    warmup: int,
    pause: float,
    checkout: Path = REPO,
) -> tuple[Tally, list[float], float]:
    """Hook calls (the launcher of `checkout`) against a warm daemon, then the same
    requests in-process, `pause` seconds apart: (the timed calls, the requests' ms, daemon
    start seconds)."""
    tally, requests = Tally([]), []
    with daemon(home, env) as start_seconds:
        for number in range(warmup):
            call_hook(asked[number % len(asked)], env, checkout)
        for number, prompt in enumerate(asked):
            time.sleep(pause)
            ms, stdout, start = call_hook(prompt, env, checkout, pause)
            tally.add(ms, context_of(stdout), prompt, context_of(start, START))
            if (number + 1) % 50 == 0:
                progress(f"hooks: {number + 1}/{len(asked)} calls")
        for prompt in asked[:REQUESTS]:
            time.sleep(pause)
            requests.append(request_ms(home, prompt, Path(env["HOME"]), pause))
    return tally, requests, start_seconds


def cold_run(
    home: Path, env: dict[str, str], asked: Sequence[Prompt]
) -> tuple[dict[str, list[float]], Tally]:
    """The same work through the CLI with no daemon: (ms of each part, the totals)."""
    from mnemoweave.hosts import client

    if client.running(home) or client.lock_holder(home) is not None:
        raise SystemExit(f"{home} is in use; the cold path needs the store to itself")
    call_cold(asked[-1], env)  # untimed: bytecode cached, models in the OS page cache
    times: dict[str, list[float]] = {"total": [], "ingest": [], "weave": []}
    tally = Tally([])
    for number, prompt in enumerate(asked):
        ingest, weave, woven = call_cold(prompt, env)
        times["ingest"].append(ingest)
        times["weave"].append(weave)
        times["total"].append(ingest + weave)
        tally.add(ingest + weave, woven.strip() or None, prompt)
        progress(f"hooks: cold {number + 1}/{len(asked)}: {ingest + weave:.0f} ms")
    return times, tally


def summarise(
    warm: Mapping[int, Sequence[float]], cold: Mapping[str, Sequence[float]]
) -> dict[str, Any]:
    """The headline: warm p50/p95 per size, cold p50/p95, and cold p50 / warm p50 at the
    largest size (ms)."""
    report: dict[str, Any] = {
        "warm": {str(n): percentiles(ms) for n, ms in sorted(warm.items())},
        "cold": percentiles(cold.get("total", ())),
    }
    largest = report["warm"][str(max(warm))]["p50"] if warm else None
    cold_p50 = report["cold"]["p50"]
    report["speedup"] = round(cold_p50 / largest, 1) if cold_p50 and largest else None
    parts = {name: percentiles(ms) for name, ms in cold.items() if name != "total"}
    if parts:
        report["cold_parts"] = parts
        weave_p50 = parts.get("weave", {}).get("p50")
        report["speedup_weave_only"] = (
            round(weave_p50 / largest, 1) if weave_p50 and largest else None
        )
    return report


def machine() -> dict[str, Any]:
    cpu = ""
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def baseline_code(root: Path, rev: str) -> Path:
    """Git revision `rev` unpacked under `root` as a checkout of its own: its package
    (`core`, which a PYTHONPATH puts before the installed one; the store's schema must be
    the same) and its hook launcher (launchers.py: it runs this checkout's `.venv`, linked)."""
    where = root / "baseline"
    where.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "core", *launcher_paths(rev)],
        capture_output=True,
        timeout=60,
    )
    if archive.returncode:
        raise SystemExit(f"hooks: no revision {rev!r}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True, timeout=60)
    (where / ".venv").symlink_to(REPO / ".venv")
    return where


def prepare(
    root: Path, embedder: str, models: Path, baseline: str | None, bench: str
) -> tuple[Path | None, dict[str, str], list[str], str]:
    """Under `root`: the HOME of every subprocess, the baseline's package (None: no
    baseline), the project checkouts and the run's models. Returns the package, the
    projects, the models' names and the retrieval mode they give."""
    (root / "home").mkdir()
    old_code = baseline_code(root, baseline) if baseline else None
    projects = make_projects(root)
    names, mode = resolve_models(embedder, models, root)
    progress(f"{bench}: {mode}; data under {root}")
    return old_code, projects, names, mode


def measure(
    sizes: Sequence[int],
    calls: int,
    warmup: int,
    cold_calls: int,
    pause: float,
    embedder: str,
    models: Path,
    baseline: str | None = None,
) -> dict[str, Any]:
    """The whole benchmark in a temporary root, removed afterwards."""
    root, load_before = short_root(), [round(load, 2) for load in os.getloadavg()]
    before: dict[str, Any] = {}
    try:
        old_code, projects, names, mode = prepare(root, embedder, models, baseline, "hooks")
        warm: dict[int, list[float]] = {}
        cold: dict[str, list[float]] = {}
        extra: dict[str, dict[str, Any]] = {
            k: {}
            for k in (
                "daemon_request_ms",
                "memories",
                "load_seconds",
                "daemon_start_seconds",
                "hook_failures",
                "hook_log",
            )
        }
        rates: dict[str, dict[str, Any]] = {}
        retrieval = ""
        for size in sizes:
            home = root / f"h{size}"
            chosen = configure(home, names)
            env = subprocess_env(root, home, chosen)
            progress(f"hooks: storing {size} memories")
            loaded = load(home, root / "models", size, projects, chosen)
            retrieval = loaded["retrieval"]
            extra["memories"][str(size)] = loaded["memories"]
            extra["load_seconds"][str(size)] = loaded["seconds"]
            asked = prompts(projects, loaded["ids"])
            if size == max(sizes) and cold_calls:
                progress(f"hooks: cold CLI at {size} memories")
                cold, cold_tally = cold_run(home, env, rotate(asked, cold_calls, start=calls))
                rates["cold"] = cold_tally.rates()
            if old_code is not None:
                progress(f"hooks: warm daemon at {size} memories, {baseline}")
                old_env = env | {"PYTHONPATH": str(old_code / "core")}
                logged = hook_log_lines(home)
                old, old_requests, _ = warm_run(
                    home, old_env, rotate(asked, calls), warmup, pause, old_code
                )
                before[str(size)] = percentiles(old.ms)
                before[f"start_context_rate_{size}"] = old.rates()["start_context_rate"]
                before[f"daemon_request_ms_{size}"] = percentiles(old_requests)
                before[f"hook_failures_{size}"] = hook_log_lines(home) - logged
            progress(f"hooks: warm daemon at {size} memories")
            logged = hook_log_lines(home)  # the baseline's lines are its own
            tally, requests, start_seconds = warm_run(
                home, env, rotate(asked, calls), warmup, pause
            )
            extra["daemon_request_ms"][str(size)] = percentiles(requests)
            warm[size] = tally.ms
            extra["daemon_start_seconds"][str(size)] = round(start_seconds, 1)
            extra["hook_failures"][str(size)] = hook_log_lines(home) - logged
            extra["hook_log"][str(size)] = hook_log(home)[logged:][-5:]  # what they were
            rates[str(size)] = tally.rates()
        report = summarise(warm, cold)
        largest = report["warm"][str(max(sizes))]
        report |= {
            "mode": mode,
            "retrieval": retrieval,
            "machine": machine() | {"load_average_before": load_before},
            "calls": {"warm": calls, "warmup": warmup, "cold": cold_calls, "pause_seconds": pause},
            "context_hit_rate": {key: r["context_hit_rate"] for key, r in rates.items()},
            "rates": rates,
            **extra,
            "hook_budget_ms": os.environ.get("MNEMOWEAVE_HOOK_BUDGET_MS") or "250 (default)",
            "bytecode": "cached under the run's PYTHONPYCACHEPREFIX (written by the warm-ups)",
            "cold_command": "mnemoweave ingest --session S --project P --role user --host "
            "claude-code PROMPT; mnemoweave weave PROMPT --session S --project P (no daemon)",
            "targets": TARGETS,
            **({"baseline": {"rev": baseline, "warm": before}} if baseline else {}),
            "meets": {
                "warm_p95_at_largest": largest["p95"] is not None
                and largest["p95"] <= TARGETS["warm_p95_ms_at_10000"],
                "speedup": report["speedup"] is not None
                and report["speedup"] >= TARGETS["speedup"],
            },
        }
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode != "default":
        raise SystemExit("hooks: --mode does not apply (the hook uses the daemon's retrieval)")
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    calls = args.limit or args.calls
    return measure(
        sizes,
        calls,
        args.warmup,
        args.cold_calls,
        args.pause,
        args.embedder,
        args.models,
        args.baseline,
    )
