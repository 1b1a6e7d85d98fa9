"""Every test, in tests/ and bench/tests/, runs against its own data dir: none touches the
real home, and no MNEMOWEAVE_* setting of the caller's environment leaks in."""

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
    return home
