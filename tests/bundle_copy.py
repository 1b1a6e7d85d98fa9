"""The checkout as a new user gets it, in a temporary directory: its working tree copied
(uncommitted edits included) and a ``.venv`` that needs no package index. Tests that run
``./setup.sh`` or the bundle's launchers use it, so no test writes to the checkout."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(
    argv: Sequence[str | os.PathLike[str]],
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """One command, bounded; with `check`, one that fails fails the test, with its output."""
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert not check or done.returncode == 0, (
        f"{argv}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    )
    return done


def copy_worktree(dest: Path, env: dict[str, str] | None = None) -> Path:
    """The checkout's working tree over `dest`: tracked files and new ones git does not
    ignore, as they are now (modes kept, links as links; no .venv, caches or .git); a file
    deleted in the working tree is deleted in `dest` too (a clone of the last commit may
    hold it)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT, env)
    for name in filter(None, listed.stdout.split("\0")):
        source, target = ROOT / name, dest / name
        if source.is_symlink():  # as git keeps it: a link (the package's bundle/)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists() and target.is_file():
            target.unlink()
    return dest


def provide_venv(bundle: Path, extras: str = "", env: dict[str, str] | None = None) -> Path:
    """`bundle`'s ``.venv`` as ``./setup.sh`` leaves it, without the package index: a venv
    whose path holds the bundle's ``core`` and then this interpreter's site-packages (as a
    path only, so its editable install of the checkout is not read), the ``mnemoweave``
    script ``pip install -e`` writes, and the stamp that tells ``setup.sh`` the install of
    ``mnemoweave{extras}`` is done. Returns its python."""
    venv = bundle / ".venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], bundle, env)
    python = venv / "bin" / "python"
    purelib = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], bundle, env
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "mnemoweave-checkout.pth").write_text(f"{bundle / 'core'}\n{ours}\n")
    script = venv / "bin" / "mnemoweave"
    named = tomllib.loads((bundle / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = named["mnemoweave"].split(":")
    script.write_text(
        f"#!{python}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n"
    )
    script.chmod(0o755)
    digest = hashlib.sha256((bundle / "pyproject.toml").read_bytes()).hexdigest()[:16]
    (venv / ".mnemoweave-installed").write_text(f"{digest} {extras}\n")
    return python
