"""Fixtures: a data dir with a short path, and real daemons on it (see running.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from running import Daemon, make_home, start_daemon


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's data dir (short path), also as $MNEMOWEAVE_HOME for in-process calls."""
    path = make_home(tmp_path_factory)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(path))
    return path


@pytest.fixture
def daemon(home: Path) -> Iterator[Daemon]:
    running = start_daemon(home)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for a module's API tests (they use their own ids and sessions)."""
    running = start_daemon(make_home(tmp_path_factory))
    yield running
    running.stop()
