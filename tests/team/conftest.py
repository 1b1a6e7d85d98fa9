"""Fixtures: built models, and a team server on a free port killed at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from team_servers import Server, free_port

BUILT = os.environ.get("MNEMOWEAVE_MODELS", "")  # the caller's models, read before the
# autouse fixture (../../conftest.py) clears MNEMOWEAVE_* for the test
NEEDED = ("use-m3", "e5-small")  # the team's model, and another member's


@pytest.fixture
def models(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Built models: the caller's MNEMOWEAVE_MODELS when it holds both, else built once."""
    if BUILT and all((Path(BUILT) / name).is_dir() for name in NEEDED):
        monkeypatch.setenv("MNEMOWEAVE_MODELS", BUILT)
        return Path(BUILT)
    built: Path = request.getfixturevalue("real_models")
    return built


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    team = Server(tmp_path / "server-data", free_port()).start()
    try:
        yield team
    finally:
        team.stop()


@pytest.fixture
def short(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tm")  # a socket path must stay short
