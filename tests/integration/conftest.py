"""The real models, built once per test session into their own data dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """A data dir with both built-in models built (and their build results)."""
    from mnemoweave.embed import build_models

    home = tmp_path_factory.mktemp("models-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNEMOWEAVE_HOME", str(home))
        results = {r.name: r for r in build_models(["use-m3", "e5-small"])}
    yield home, results


@pytest.fixture
def real_engine(built_home: tuple[Path, dict], mnemoweave_home: Path):
    """An engine in this test's own data dir that uses the session's built models."""
    from mnemoweave import Engine

    mnemoweave_home.mkdir(parents=True, exist_ok=True)
    (mnemoweave_home / "models").symlink_to(built_home[0] / "models")
    with Engine() as engine:
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"
        yield engine
