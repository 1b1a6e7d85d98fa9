"""Fixtures shared by the tests (the data dir one is in ../conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def engine(mnemoweave_home: Path):
    from mnemoweave import Engine

    with Engine() as engine:
        yield engine


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """A data dir with both built-in models built (and their build results)."""
    from mnemoweave.embed import build_models

    home = tmp_path_factory.mktemp("models-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMOWEAVE_HOME", str(home))
        results = {r.name: r for r in build_models(["use-m3", "e5-small"])}
    yield home, results
