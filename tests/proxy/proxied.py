"""Real processes for the proxy's tests: a daemon (`mnemoweave serve`) on a throw-away data
dir with a short path (Unix socket paths are limited), and the proxy (`python -m
mnemoweave proxy`) in front of a fake upstream. Every start,
wait and stop is bounded in time; HOME is a temporary dir too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import processes
from mnemoweave.hosts import client

START_WITHIN = 60.0
STOP_WITHIN = 20.0
STORED_WITHIN = 30.0
BUDGET_MS = "5000"  # the weave's budget in these tests: a busy machine is no failure
T = TypeVar("T")


def environment(home: Path, **settings: str) -> dict[str, str]:
    """The test's environment for a process of data dir `home` (its own HOME beside it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
    models = os.environ.get("MNEMOWEAVE_MODELS", str(home.with_name(f"{home.name}-models")))
    user = home.with_name(f"{home.name}-user")
    user.mkdir(exist_ok=True)
    return (
        env
        | {"MNEMOWEAVE_HOME": str(home), "MNEMOWEAVE_MODELS": models, "HOME": str(user)}
        | settings
    )


def new_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with a path short enough for its socket, lexical-only."""
    path = tmp_path_factory.mktemp("px")
    assert len(str(path / "daemon.sock")) <= 100, f"{path}: too long for a Unix socket path"
    (path / "config.toml").write_text('embedder = "none"\ndaemon_idle_minutes = 5\n')
    return path


def wait_for(check: Callable[[], T], within: float = STORED_WITHIN) -> T:
    """Poll `check` until it returns something true, for at most `within` seconds."""
    deadline = time.monotonic() + within
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return value


class Daemon:
    """A `mnemoweave serve` started by a test."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mnemoweave", "serve"],
            env=environment(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(lambda: self.process.poll() is not None or client.running(home), START_WITHIN)
        assert self.process.poll() is None, "the daemon exited"

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return client.request(self.home, method, path, body, timeout=30)["result"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def turns(self, session: str) -> list[tuple[str, str]]:
        return self.turns_of(self.home, session)

    @staticmethod
    def turns_of(home: Path, session: str) -> list[tuple[str, str]]:
        """The (role, text) turns stored for `session` (none while no daemon answers)."""
        try:
            found = client.request(home, "GET", f"/v1/turns?session={session}&limit=100")
        except client.DaemonError:
            return []
        return [(t["role"], t["text"]) for t in found["result"]]

    def stop(self) -> None:
        processes.stop(self.process, STOP_WITHIN)


def stop_any_daemon(home: Path) -> None:
    """Stop every daemon of `home`, however it was started (the proxy wakes one; one woken
    twice waits for the lock and serves once the first has stopped): done when neither the
    lock's holder nor any `serve` process of `home` is left."""
    deadline = time.monotonic() + STOP_WITHIN
    while found := processes.daemons(home):
        assert time.monotonic() < deadline, f"timed out: {found} still serve {home}"
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        time.sleep(0.05)


class Proxy:
    """`mnemoweave proxy --upstream URL --port 0 *args`, its address read from its first
    line; its output kept (the key test reads it)."""

    def __init__(self, home: Path, upstream: str, *args: str, **settings: str) -> None:
        self.home = home
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mnemoweave",
                "proxy",
                "--upstream",
                upstream,
                "--port",
                "0",
                *args,
            ],
            env=environment(home, **settings),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.output: list[bytes] = []
        first = threading.Event()

        def read(stream: Any) -> None:
            for line in stream:
                self.output.append(line)
                first.set()

        for stream in (self.process.stdout, self.process.stderr):
            threading.Thread(target=read, args=(stream,), daemon=True).start()
        assert first.wait(START_WITHIN), "the proxy said nothing"
        line = self.output[0].decode()
        assert line.startswith("mnemoweave proxy on http://127.0.0.1:"), self.output
        self.url = line.split()[3]

    @property
    def log(self) -> str:
        path = self.home / "logs" / "proxy.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def stop(self) -> int:
        return processes.stop(self.process, STOP_WITHIN)
