"""An engine on the real models (built once per test session: see ../conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def real_engine(built_home: tuple[Path, dict], mnemoweave_home: Path):
    """An engine in this test's own data dir that uses the session's built models."""
    from mnemoweave import Engine

    mnemoweave_home.mkdir(parents=True, exist_ok=True)
    (mnemoweave_home / "models").symlink_to(built_home[0] / "models")
    with Engine() as engine:
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"
        yield engine
