"""Bench modules import each other by bare name (bench/ is on sys.path when run.py runs)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
