"""Every test runs against its own data dir; none touches the real home."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def mnemoweave_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "mnemoweave-home"
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    for name in ("TRASH_DAYS", "DEFAULT_IMPORTANCE", "SEARCH_K"):
        monkeypatch.delenv(f"MNEMOWEAVE_{name}", raising=False)
    return home


@pytest.fixture
def engine(mnemoweave_home: Path):
    from mnemoweave import Engine

    with Engine() as engine:
        yield engine
