"""Starting and stopping real daemon processes on throw-away data dirs (lexical-only).

A Unix socket path is limited to ~107 bytes, so data dirs sit right under pytest's base
temp dir. Every start, request and stop is bounded in time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import processes
from mnemoweave.hosts import client

START_WITHIN = 60.0  # seconds a daemon may take to answer (imports, jieba, warm-up)
STOP_WITHIN = 20.0


def make_home(factory: pytest.TempPathFactory) -> Path:
    """A data dir under pytest's base temp dir (kept like every tmp_path: in-process jieba
    remembers the first data dir it was set up in), with a short enough socket path."""
    home = factory.mktemp("mw")
    assert len(str(home / "daemon.sock")) <= 100, f"{home}: too long for a Unix socket path"
    (home / "config.toml").write_text('embedder = "none"\n', encoding="utf-8")
    return home


def daemon_env(home: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
    # the test's own models cache (../../conftest.py); a module's daemon, started before
    # that is set, gets one beside its data dir
    models = os.environ.get("MNEMOWEAVE_MODELS", str(home.with_name(f"{home.name}-models")))
    return env | {"MNEMOWEAVE_HOME": str(home), "MNEMOWEAVE_MODELS": models} | settings


class Daemon:
    """A `mnemoweave serve` process started by a test."""

    def __init__(self, home: Path, process: subprocess.Popen[str]) -> None:
        self.home, self.process = home, process

    @property
    def pid(self) -> int:
        return self.process.pid

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        return client.request(self.home, method, path, body, timeout=timeout)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return self.request(method, path, body)["result"]

    def wait(self, timeout: float = STOP_WITHIN) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> int:
        """SIGTERM, then (only if it hangs) SIGKILL; the exit status."""
        try:
            return processes.stop(self.process, STOP_WITHIN)
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream:
                    stream.close()


def start_daemon(home: Path, **settings: str) -> Daemon:
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", "serve"],
        env=daemon_env(home, **settings),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + START_WITHIN
    while not client.running(home, timeout=1.0):
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(f"the daemon exited {process.returncode}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            process.wait(timeout=STOP_WITHIN)
            raise AssertionError(f"the daemon did not answer within {START_WITHIN}s")
        time.sleep(0.05)
    return Daemon(home, process)


def raw_request(
    home: Path, method: str, target: str, body: bytes = b""
) -> tuple[int, dict[str, Any]]:
    """One request with any body, as the client would send it: the status and the JSON."""
    status, answer = client.send(home, method, target, body, 60)
    return status, json.loads(answer) if answer else {}


NODE = shutil.which("node")


def run_node(script: Path, spec: dict[str, Any], env: dict[str, str], timeout: float) -> str:
    """A node script given `spec` as JSON on stdin (bounded); what it printed."""
    done = subprocess.run(
        [NODE or "node", str(script)],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
