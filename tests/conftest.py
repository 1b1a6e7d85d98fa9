"""Fixtures shared by the unit and integration tests (the data dir one is in ../conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def engine(mnemoweave_home: Path):
    from mnemoweave import Engine

    with Engine() as engine:
        yield engine
