"""Fixtures shared by the tests (the data dir one is in ../conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from mnemoweave.embed import BuildResult


@pytest.fixture
def engine(mnemoweave_home: Path):
    from mnemoweave import Engine

    with Engine() as engine:
        yield engine


@pytest.fixture(scope="session")
def built_models(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, dict[str, BuildResult]]]:
    """A models cache with both built-in models built (and their build results), built from
    the data dir beside it (`../home`, which keeps the build's downloads)."""
    from mnemoweave.embed import build_models

    root = tmp_path_factory.mktemp("built")
    models = root / "models"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMOWEAVE_HOME", str(root / "home"))
        mp.setenv("MNEMOWEAVE_MODELS", str(models))
        results = {r.name: r for r in build_models(["use-m3", "e5-small"])}
    yield models, results


@pytest.fixture
def real_models(
    built_models: tuple[Path, dict[str, BuildResult]], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """This test, and the processes it starts, use the session's built models."""
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(built_models[0]))
    return built_models[0]
