"""An engine on the real models (built once per test session: see ../conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def real_engine(real_models: Path):
    """An engine in this test's own data dir that uses the session's built models."""
    from mnemoweave import Engine

    with Engine() as engine:
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"
        yield engine
