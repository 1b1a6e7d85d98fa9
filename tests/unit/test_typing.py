"""The Engine's operations are typed: a wrong call fails the type check, delegated ones too."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CALLS = """
from mnemoweave.engine import Engine


def calls(engine: Engine) -> None:
    engine.forget(1, 2, 3, bogus=True)  # delegated: upkeep/trash.py
    engine.search("q", k="five")  # the engine's own method
    engine.teach_skill(name="deploy", summary="s", triggers=[], steps=[], source_urls=[])
    engine.forget("m_1")
"""


@pytest.mark.slow  # a type check of the engine and what it imports
def test_a_wrong_call_of_an_engine_operation_fails_the_type_check(tmp_path):
    (tmp_path / "calls.py").write_text(CALLS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "calls.py"],
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT / "core"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert {line.split(":")[1] for line in errors} == {"6", "7"}, done.stdout
    assert 'Unexpected keyword argument "bogus"' in done.stdout
    assert 'Argument "k" to "search" of "Engine" has incompatible type "str"' in done.stdout
