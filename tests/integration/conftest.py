"""An engine on the real models (built once per test session: see ../conftest.py), and the
checkout's copy that tests run ``./setup.sh`` in: no test writes to the checkout itself."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bundle_copy import copy_worktree, provide_venv, run

ROOT = Path(__file__).resolve().parents[2]
# what ./setup.sh writes in the bundle it runs from (besides HOME, MNEMOWEAVE_HOME, the models;
# the test run's own bytecode goes elsewhere: ../../conftest.py)
SETUP_WRITES = (".venv", ".claude", "core/mnemoweave.egg-info", ":(glob)core/**/__pycache__/**")


@pytest.fixture
def real_engine(real_models: Path):
    """An engine in this test's own data dir that uses the session's built models."""
    from mnemoweave import Engine

    with Engine() as engine:
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"
        yield engine


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    """A copy of the checkout with its ``.venv`` provided (see provide_venv, extras
    ``[dev]``), for running ``./setup.sh`` and the bundle's launchers."""
    bundle = copy_worktree(tmp_path / "mnemoweave")
    run(["git", "init", "-q"], bundle)  # a checkout, as a clone is (its files untracked)
    provide_venv(bundle, "[dev]")
    return bundle


@pytest.fixture
def setup_env(tmp_path: Path) -> dict[str, str]:
    """The environment ``./setup.sh`` runs in: this test's (MNEMOWEAVE_HOME, the models
    cache, XDG and git settings: ../../conftest.py), HOME in the test's tmp dir, and nothing
    that points at the checkout's venv (its bin dir off PATH, no VIRTUAL_ENV or PYTHONPATH)."""
    ours = str(Path(sys.executable).parent)
    dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONPYCACHEPREFIX"}  # setup compiles the bundle
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    env["HOME"] = str(tmp_path / "home")
    return env


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def checkout_state(root: Path = ROOT) -> dict[str, object]:
    """What of the checkout ``./setup.sh`` would change if it ran there: git's view of the
    paths it writes (``--ignored``: .venv, .claude, the egg-info, the bytecode caches), the
    venv's own files (interpreter, pyvenv.cfg, install stamp, script, the installed
    package's record) and every file of .claude, the egg-info and core's bytecode, with
    its mtime and size."""
    status = run(["git", "status", "--porcelain", "--ignored", "--", *SETUP_WRITES], root).stdout
    venv = root / ".venv"
    files = [
        venv / "pyvenv.cfg",
        venv / "bin" / "python",
        venv / ".mnemoweave-installed",
        venv / "bin" / "mnemoweave",
    ]
    for site in venv.glob("lib/python*/site-packages"):
        files += site.glob("*mnemoweave*.pth")
        files += site.glob("mnemoweave-*.dist-info/RECORD")
    for tree in (root / ".claude", root / "core" / "mnemoweave.egg-info"):
        files += [p for p in tree.rglob("*") if p.is_file()]
    files += (root / "core").rglob("__pycache__/*.pyc")
    return {"git status": status, **{str(p.relative_to(root)): _stat(p) for p in files}}


@pytest.fixture(name="checkout_state")
def checkout_state_fixture():
    """checkout_state, for the tests (of a copy's state: ROOT is checked by untouched_checkout)."""
    return checkout_state


@pytest.fixture
def untouched_checkout():
    """Fails the test if the checkout's state (checkout_state) is not the same after it."""
    before = checkout_state()
    yield ROOT
    after = checkout_state()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if changed:
        pytest.fail(f"the test changed the checkout {ROOT}: {changed}", pytrace=False)
