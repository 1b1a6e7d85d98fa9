"""Every test, in tests/ and bench/tests/, runs against its own data dir and its own models
cache (empty: see tests/conftest.py for the built models): none touches the real home, and no
MNEMOWEAVE_* setting of the caller's environment leaks in."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_STASH = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The run writes no bytecode into the checkout: this process and every Python it starts
    cache it under a temporary prefix instead (a test that runs ./setup.sh, which compiles the
    bundle it runs in, removes the prefix from its own environment)."""
    prefix = tempfile.mkdtemp(prefix="mw-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = prefix
    config.stash[_STASH] = prefix


def pytest_unconfigure(config: pytest.Config) -> None:
    prefix = config.stash.get(_STASH, None)
    if prefix:
        shutil.rmtree(prefix, ignore_errors=True)


@pytest.fixture(autouse=True)
def mnemoweave_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "mnemoweave-home"
    for name in list(os.environ):
        if name.startswith("MNEMOWEAVE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    # git names projects: it reads no system or user config of the machine running the tests
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    yield home
    _stop_daemon(home)


STOP_WITHIN = 20.0  # seconds a daemon gets to stop on SIGTERM before it is killed


def _stop_daemon(home: Path) -> None:
    """Stop the daemon a test's hook or MCP server started on its data dir (one outlives the
    test it was started in)."""
    from mnemoweave import client

    holder = client.lock_holder(home)
    if not holder or holder[1] != client.DAEMON_ROLE or not holder[0]:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(holder[0], sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_WITHIN
        while time.monotonic() < deadline:
            if not _alive(holder[0]):
                return
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie nobody reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"
