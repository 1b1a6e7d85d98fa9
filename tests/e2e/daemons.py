"""The mnemoweave CLI and daemon as the e2e tests drive them: commands in a harness's
environment, the turns stored for a session, a daemon started and waited for, a bounded wait
for what happens in the background, and every daemon of a data dir stopped at the end (the
one a test started, and any a host plugin or hook started detached)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from mnemoweave.daemon.process import stop
from mnemoweave.hosts import client
from processes import daemons

MNEMOWEAVE = [sys.executable, "-m", "mnemoweave"]
START_WITHIN = 90.0  # seconds a daemon may take to answer (models, jieba, warm-up)
STOP_WITHIN = 15.0
STORED_WITHIN = 60.0  # seconds for what a host spooled or sent in the background to be stored

T = TypeVar("T")


def mw(
    env: Mapping[str, str], *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One `mnemoweave` command in `env` (its MNEMOWEAVE_HOME is the data dir)."""
    return subprocess.run(
        [*MNEMOWEAVE, *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def stored_turns(env: Mapping[str, str], session: str) -> list[tuple[str, str]]:
    """The (role, text) turns the store of env's data dir holds for `session`."""
    found = mw(env, "rehydrate", "--session", session, "--json")
    assert found.returncode == 0, found.stderr
    return [(t["role"], t["text"]) for t in json.loads(found.stdout)["turns"]]


def wait_for(check: Callable[[], T], within: float = STORED_WITHIN, every: float = 0.1) -> T:
    """Poll `check` every `every` seconds until it returns something true, for at most
    `within` seconds; that value."""
    deadline = time.monotonic() + within
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)
    return value


def write_config(home: Path, lexical: bool = True) -> None:
    """A config for a test data dir: a short idle timeout, so a daemon nobody stops goes
    away by itself; lexical-only retrieval unless models are wanted."""
    home.mkdir(parents=True, exist_ok=True)
    lines = ["daemon_idle_minutes = 5"] + (['embedder = "none"'] if lexical else [])
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def start_daemon(env: Mapping[str, str], log: Path) -> None:
    """`mnemoweave serve` for env's data dir, detached; returns once it answers."""
    home = Path(env["MNEMOWEAVE_HOME"])
    with open(log, "ab") as out:
        subprocess.Popen(
            [*MNEMOWEAVE, "serve"],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    wait_for_daemon(home, log)


def wait_for_daemon(home: Path, log: Path | None = None, within: float = START_WITHIN) -> None:
    deadline = time.monotonic() + within
    while not client.running(home):
        if time.monotonic() > deadline:
            said = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"no daemon answered for {home} within {within}s\n{said}")
        time.sleep(0.1)


def stop_daemons(home: Path) -> None:
    """Stop every daemon of `home`: as `mnemoweave stop` does, then SIGTERM and, if that is not
    enough, SIGKILL to whatever still serves it (one may still have been starting)."""
    if not daemons(home):
        return  # nothing serves it, nothing is starting to
    stop(home, 10)
    pids = daemons(home)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_WITHIN
        while pids and time.monotonic() < deadline:
            pids = {pid for pid in pids if _alive(pid)}
            time.sleep(0.05)
        if not pids:
            return


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"
