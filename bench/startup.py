"""Startup: the wall time mnemoweave adds to a one-prompt session of the real Claude Code
(`claude -p`), OpenCode (`opencode run`), Codex (`codex exec`) and Gemini (`gemini -p`)
CLIs, against a local fake model server.

For each host, a run with mnemoweave and a run without it alternate (which one goes first
alternates too), --runs of each, in three states:
- warm: a daemon answers before the session starts (started once, models loaded);
- stopped: no daemon runs when the session starts (stopped before each run with it);
- first: the first session after installing: a fresh data dir, no store, no daemon (the
  models are already built in the shared cache, as `setup.sh` leaves them).
Claude Code loads the plugin of this checkout (`--plugin-dir plugins/claude-code`: hooks,
MCP server and skill); OpenCode the plugin linked into the project; Codex and Gemini the hooks
`mnemoweave install` writes (run by the checkout's Python, without site), Codex with hook
trust bypassed on both sides. A run is timed from
spawn to the host's exit; the report gives the median and p90 of each side and the added
median and p90 (with minus without).

Where the time goes, measured apart on the same machine in the same run: `mnemoweave mcp`
answering `initialize` (spawn to reply), each hook of Claude Code, Codex and Gemini (spawn
to exit on a payload shaped as the host's, daemon warm), and the daemon's start (spawn to
its first answer).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import progress
from hooks import machine
from launchers import command, launcher_paths
from metrics import percentiles
from mnemoweave.hosts import client

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests"))  # the e2e harness: real host CLIs, fake model servers

from bundle_copy import provide_venv  # noqa: E402
from e2e.claude import ClaudeHarness, install_claude_code  # noqa: E402
from e2e.codex import CodexHarness, install_codex  # noqa: E402
from e2e.fake_anthropic import FakeAnthropic  # noqa: E402
from e2e.fake_gemini import FakeGemini  # noqa: E402
from e2e.fake_openai import FakeOpenAI  # noqa: E402
from e2e.fake_responses import FakeResponses  # noqa: E402
from e2e.gemini import SETTINGS, GeminiHarness, install_gemini  # noqa: E402
from e2e.opencode import OpenCodeHarness, install_opencode  # noqa: E402
from mnemoweave.hook import ENTRY  # noqa: E402
from mnemoweave.hosts.install import hooks_object  # noqa: E402

STATES = ("warm", "stopped", "first")
HOSTS = ("claude-code", "opencode", "codex", "gemini")
PROMPT = "Say hello in one word."
RUN_WITHIN = 120.0  # seconds one host run may take
START_WITHIN = 90.0  # seconds a daemon may take to answer
# the hooks each host runs in a one-prompt session, each with the fields its payload adds
HOOK_PAYLOADS: dict[str, dict[str, dict[str, str]]] = {
    "claude-code": {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": PROMPT},
        "Stop": {"last_assistant_message": "Hello"},
        "SessionEnd": {},
    },
    "codex": {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": PROMPT, "turn_id": "turn-1"},
        "Stop": {"last_assistant_message": "Hello", "turn_id": "turn-1"},
        "SessionEnd": {},
    },
    "gemini": {
        "SessionStart": {"source": "startup"},
        "BeforeAgent": {"prompt": PROMPT},
        "AfterAgent": {"prompt": PROMPT, "prompt_response": "Hello"},
        "SessionEnd": {},
    },
}
TARGET_WARM_S, TARGET_COLD_S = 0.3, 1.0  # added median: warm; stopped and first


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="runs of each side, each state")
    parser.add_argument("--hosts", default=",".join(HOSTS), help=",".join(HOSTS))
    parser.add_argument("--states", default=",".join(STATES), help="warm,stopped,first")
    parser.add_argument("--probes", type=int, default=20, help="starts of each part timed apart")
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REV",
        help="also run git revision REV's plugins and package, interleaved (`baseline`)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    hosts = [h for h in args.hosts.split(",") if h]
    states = [s for s in args.states.split(",") if s]
    unknown = set(hosts) - set(HOSTS) | set(states) - set(STATES)
    if unknown:
        raise SystemExit(f"startup: unknown host or state {sorted(unknown)}")
    os.environ.setdefault("MNEMOWEAVE_MODELS", str(args.models))
    report: dict[str, Any] = {"runs": args.runs, "prompt": PROMPT}
    with tempfile.TemporaryDirectory(prefix="mw-startup-") as scratch:
        root = Path(scratch)
        trees = {"this": ROOT}
        if args.baseline:
            trees["baseline"] = checkout(args.baseline, root / "baseline")
            report["baseline_rev"] = args.baseline
        for host in hosts:
            report[host] = measure_host(host, states, args.runs, root / host, trees)
        report["parts"] = {
            name: parts(tree, root / f"parts-{name}", args.probes) for name, tree in trees.items()
        }
    report["targets"] = {"added_median_warm_s": TARGET_WARM_S, "added_median_cold_s": TARGET_COLD_S}
    report["machine"] = machine()
    return report


def checkout(rev: str, where: Path) -> Path:
    """Git revision `rev` as a checkout of its own (plugins, launchers, package) with a
    `.venv` that runs its package on this environment's libraries."""
    where.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "core", *launcher_paths(rev), "pyproject.toml"],
        capture_output=True,
        timeout=60,
    )
    if archive.returncode:
        raise SystemExit(f"startup: no revision {rev!r}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True, timeout=60)
    provide_venv(where)
    return where


# --- one host ---------------------------------------------------------------------------


@dataclass
class Variant:
    """One side of the comparison: a checkout whose plugin the host loads (None: the host
    without mnemoweave), with a data dir of its own."""

    name: str
    tree: Path | None
    home: Path

    @property
    def python(self) -> str:
        return str(self.tree / ".venv" / "bin" / "python") if self.tree else sys.executable


def _claude_run(harness: ClaudeHarness, variant: Variant) -> Any:
    args = ("--plugin-dir", str(variant.tree / "plugins" / "claude-code")) if variant.tree else ()
    env = {"MNEMOWEAVE_HOME": str(variant.home)}
    return harness.run(PROMPT, *args, env=env, timeout=RUN_WITHIN)


def _opencode_run(harness: OpenCodeHarness, variant: Variant) -> Any:
    if variant.tree:
        harness.use_plugin(variant.tree / "plugins" / "opencode" / "mnemoweave.js")
    else:
        (harness.cwd / ".opencode" / "plugin" / "mnemoweave.js").unlink(missing_ok=True)
    return harness.run(PROMPT, env={"MNEMOWEAVE_HOME": str(variant.home)}, timeout=RUN_WITHIN)


def _installed(variant: Variant, host: str) -> dict[str, Any]:
    """The hooks `mnemoweave install` writes for `host`, run by the variant's checkout."""
    assert variant.tree is not None
    python, core = shlex.quote(variant.python), shlex.quote(str(variant.tree / "core"))
    return hooks_object(f"{python} -S -c {shlex.quote(ENTRY)} {core}", host)


def _codex_run(harness: CodexHarness, variant: Variant) -> Any:
    hooks = harness.codex_home / "hooks.json"
    if variant.tree:
        hooks.write_text(json.dumps({"hooks": _installed(variant, "codex")}))
    else:
        hooks.unlink(missing_ok=True)
    env = {"MNEMOWEAVE_HOME": str(variant.home)}
    return harness.run(PROMPT, "--dangerously-bypass-hook-trust", env=env, timeout=RUN_WITHIN)


def _gemini_run(harness: GeminiHarness, variant: Variant) -> Any:
    hooks = {"hooks": _installed(variant, "gemini")} if variant.tree else {}
    harness.settings_path.write_text(json.dumps({**SETTINGS, **hooks}))
    return harness.run(PROMPT, env={"MNEMOWEAVE_HOME": str(variant.home)}, timeout=RUN_WITHIN)


@contextmanager
def host_harness(host: str, root: Path) -> Iterator[Any]:
    home = root / "unused-data"
    if host == "claude-code":
        with FakeAnthropic(reply="Hello", max_requests=100_000) as server:
            yield ClaudeHarness(install_claude_code(), server, root, home, 1.0)
    elif host == "opencode":
        with FakeOpenAI(reply="Hello", max_requests=100_000) as server:
            yield OpenCodeHarness(install_opencode(), server, root, home)
    elif host == "codex":
        with FakeResponses(reply="Hello", max_requests=100_000) as server:
            yield CodexHarness(install_codex(), server, root, home)
    else:
        with FakeGemini(reply="Hello", max_requests=100_000) as server:
            yield GeminiHarness(install_gemini(), server, root, home)


RUNS: dict[str, Callable[[Any, Variant], Any]] = {
    "claude-code": _claude_run,
    "opencode": _opencode_run,
    "codex": _codex_run,
    "gemini": _gemini_run,
}


def measure_host(
    host: str, states: list[str], runs: int, root: Path, trees: dict[str, Path]
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    once = RUNS[host]
    for state in states:
        variants = [Variant("without", None, root / state / "none")]
        variants += [Variant(n, t, root / state / n) for n, t in trees.items()]
        with host_harness(host, root / state) as harness:
            env = harness.env()

            def timed(variant: Variant) -> float:
                result = once(harness, variant)
                if result.rc != 0 or not result.reply:
                    raise SystemExit(f"startup: a {host} run failed: {result!r}")
                return float(result.elapsed)

            for variant in variants:  # the first run in a new HOME or data dir, unmeasured
                variant.home.mkdir(parents=True, exist_ok=True)
                timed(variant)
                stop(env, variant)
                if state == "warm" and variant.tree:
                    start_daemon(env, variant)
            times: dict[str, list[float]] = {v.name: [] for v in variants}
            for i in range(runs):
                for variant in variants[i % len(variants) :] + variants[: i % len(variants)]:
                    if variant.tree and state != "warm":
                        stop(env, variant)
                        if state == "first":
                            shutil.rmtree(variant.home)
                            variant.home.mkdir(parents=True)
                    times[variant.name].append(timed(variant))
                progress(f"startup {host} {state} {i + 1}/{runs}")
            for variant in variants:
                stop(env, variant)
        found[state] = summary(times)
    return found


def summary(times: dict[str, list[float]]) -> dict[str, Any]:
    def seconds(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        at = min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))
        return {"median": round(statistics.median(ordered), 3), "p90": round(ordered[at], 3)}

    found: dict[str, Any] = {name: seconds(values) for name, values in times.items()}
    off = found["without"]
    for name in times:
        if name != "without":
            found[f"{name}_added_median_s"] = round(found[name]["median"] - off["median"], 3)
            found[f"{name}_added_p90_s"] = round(found[name]["p90"] - off["p90"], 3)
    return found


# --- the daemon -----------------------------------------------------------------------------


def start_daemon(env: dict[str, str], variant: Variant) -> subprocess.Popen[bytes]:
    """The variant's `mnemoweave serve`, waited for until it answers."""
    home = variant.home
    log = open(home / "bench-daemon.out", "ab")  # noqa: SIM115 (closed with the process)
    process = subprocess.Popen(
        [variant.python, "-m", "mnemoweave", "serve"],
        env=env | {"MNEMOWEAVE_HOME": str(home)},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + START_WITHIN
    while not client.running(home):
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit(f"startup: the daemon did not start: {home / 'bench-daemon.out'}")
        time.sleep(0.02)
    return process


def stop(env: dict[str, str], variant: Variant) -> None:
    """No daemon of the variant's data dir runs (`mnemoweave stop`, then a kill if one still
    holds the lock)."""
    if variant.tree is None:
        return
    subprocess.run(
        [variant.python, "-m", "mnemoweave", "stop"],
        env=env | {"MNEMOWEAVE_HOME": str(variant.home)},
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    holder = client.lock_holder(variant.home)
    if holder and holder[1] == client.DAEMON_ROLE and holder[0]:
        os.kill(holder[0], 9)


# --- where the time goes --------------------------------------------------------------------


def _mcp_ms(tree: Path, env: dict[str, str], cwd: Path) -> float:
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    start = time.perf_counter()
    process = subprocess.Popen(
        command(tree, "mcp"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert process.stdin and process.stdout
    process.stdin.write(json.dumps(hello).encode() + b"\n")
    process.stdin.flush()
    answer = process.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000
    process.kill()
    process.wait(timeout=30)
    if b'"result"' not in answer:
        raise SystemExit(f"startup: mnemoweave mcp did not answer initialize: {answer!r}")
    return elapsed


def _hook_ms(
    tree: Path, host: str, event: str, env: dict[str, str], cwd: Path, session: str
) -> float:
    payload: dict[str, Any] = {"session_id": session, "cwd": str(cwd), "hook_event_name": event}
    payload |= HOOK_PAYLOADS[host][event]
    start = time.perf_counter()
    done = subprocess.run(
        [*command(tree, "hook"), host, event],
        input=json.dumps(payload).encode(),
        env=env | ({"MNEMOWEAVE_HOOK_VIA": "plugin"} if host == "claude-code" else {}),
        cwd=cwd,
        capture_output=True,
        timeout=60,
    )
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"startup: the {event} hook failed: {done.stderr!r}")
    return elapsed


def parts(tree: Path, root: Path, probes: int) -> dict[str, Any]:
    """What each part of the tree's plugin takes, timed apart (see the module doc)."""
    variant = Variant("parts", tree, root / "data")
    (root / "home").mkdir(parents=True, exist_ok=True)
    cwd = root / "project"
    cwd.mkdir(parents=True, exist_ok=True)
    variant.home.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"MNEMOWEAVE_HOME": str(variant.home), "HOME": str(root / "home")}
    mcp = [_mcp_ms(tree, env, cwd) for _ in range(probes)]
    starts = []
    for _ in range(max(3, probes // 4)):
        stop(env, variant)
        begun = time.perf_counter()
        start_daemon(env, variant)
        starts.append((time.perf_counter() - begun) * 1000)
    hooks: dict[str, dict[str, list[float]]] = {
        host: {event: [] for event in events} for host, events in HOOK_PAYLOADS.items()
    }
    for i in range(probes):
        for host, events in hooks.items():
            for event, times in events.items():
                times.append(_hook_ms(tree, host, event, env, cwd, f"bench-{host}-{i}"))
    stop(env, variant)
    progress(f"startup parts of {tree} measured")
    return {
        "mcp_initialize_ms": percentiles(mcp),
        "hook_ms_warm": {
            host: {event: percentiles(times) for event, times in events.items()}
            for host, events in hooks.items()
        },
        "daemon_start_ms": percentiles(starts),
    }
