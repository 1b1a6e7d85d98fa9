"""Every test, in tests/ and bench/tests/, runs against its own data dir and its own models
cache (empty: see tests/conftest.py for the built models): none touches the real home, and no
MNEMOWEAVE_* setting of the caller's environment leaks in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def mnemoweave_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
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
    return home
