"""Every test, in tests/ and bench/tests/, runs against its own data dir and its own models
cache (empty: see tests/conftest.py for the built models): none touches the real home, and no
MNEMOWEAVE_* setting of the caller's environment leaks in."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_STASH = pytest.StashKey[str]()
ROOT = Path(__file__).resolve().parent
# Folders whose every test starts a daemon, a server, a browser or a setup: all marked slow,
# as is every test that needs the real models (built once per worker). The fast tier,
# `-m "not slow and not e2e"`, is what is left.
SLOW_FOLDERS: tuple[str, ...] = (
    "tests/daemon",
    "tests/integration",
    "tests/web",
    "tests/team",
    "tests/proxy",
)
SLOW_FOLDERS += ("bench/tests",)
REAL_MODELS = {"real_models", "built_models"}


def pytest_configure(config: pytest.Config) -> None:
    """The run writes no bytecode into the checkout: this process and every Python it starts
    cache it under a temporary prefix instead (a test that runs ./setup.sh, which compiles the
    bundle it runs in, removes the prefix from its own environment)."""
    prefix = tempfile.mkdtemp(prefix="mw-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix = prefix
    config.stash[_STASH] = prefix


# The folders whose files take longest, longest first: the two workers take a file at a time
# in collection order (`--no-loadscope-reorder`: xdist would put the files with the most
# tests first), so these start first and the quick unit files fill in at the end.
FIRST = ("tests/e2e", "tests/proxy", "bench/tests", "tests/integration", "tests/daemon")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = [ROOT / folder for folder in SLOW_FOLDERS]
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in slow) or REAL_MODELS & set(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.slow)
    first = [ROOT / folder for folder in FIRST]

    def rank(item: pytest.Item) -> int:
        found = (n for n, folder in enumerate(first) if item.path.is_relative_to(folder))
        return next(found, len(first))

    items.sort(key=rank)  # stable: each file's tests keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    prefix = config.stash.get(_STASH, None)
    if prefix:
        shutil.rmtree(prefix, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The XDG cache of every test of a worker: what mnemoweave shares between data dirs
    (jieba's dictionary table, built once per worker; the models have a cache of their own
    per test, see MNEMOWEAVE_MODELS)."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def mnemoweave_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache_home: Path
) -> Iterator[Path]:
    home = tmp_path / "mnemoweave-home"
    for name in list(os.environ):
        if name.startswith("MNEMOWEAVE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache_home))
    # git names projects: it reads no system or user config of the machine running the tests
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))  # never the user's Codex
    yield home
    _stop_daemon(home)


STOP_WITHIN = 20.0  # seconds a daemon gets to stop on SIGTERM before it is killed


def _stop_daemon(home: Path) -> None:
    """Stop the daemon a test's hook or MCP server started on its data dir (one outlives the
    test it was started in): `mnemoweave stop`'s own way, then SIGKILL if it held on."""
    from mnemoweave.daemon.process import daemon_pid, stop

    done, _ = stop(home, STOP_WITHIN)
    if not done and (pid := daemon_pid(home)):
        os.kill(pid, signal.SIGKILL)
