"""The on-disk form of a built model, and the build flow every built-in model shares.

A model dir holds `model.onnx`, `tokenizer.json` and `meta.json`. `meta.json` is written
last and is the validity marker: a build produces and verifies its files in a staging dir
first, removes the old `meta.json`, moves the files in, then writes the new `meta.json`.
An interrupted build therefore leaves either the old valid model or no valid model.

Staleness check (kept cheap on purpose): a model is current when `meta.json` has the
current format version, the same `source` key (package name, version and the byte size
of the weight files) and both files exist. The sha256 of the weight files is computed
and recorded only when building, never re-hashed on the no-op path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemoweave.embed.base import BuildResult
from mnemoweave.errors import MnemoweaveError

FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "meta.json"


class ModelBuildError(MnemoweaveError):
    """A model could not be built, or the built model failed its parity check."""


@dataclass(frozen=True)
class Produced:
    """What a converter reports after writing the model files into a staging dir."""

    parity_min_cosine: float
    parity_reference: str  # which encoder the parity was measured against
    source_sha256: dict[str, str]  # weight file name -> sha256
    runtime: dict[str, Any]  # RuntimeConfig.to_dict() of the model


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temp file in the same dir and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_meta(model_dir: Path) -> dict[str, Any] | None:
    """The model's meta.json, or None when it is missing, unreadable or of another format."""
    try:
        meta = json.loads((model_dir / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
        return None
    return meta


def is_built(model_dir: Path) -> bool:
    """Valid files are present (whatever the source version they were built from)."""
    return (
        read_meta(model_dir) is not None
        and (model_dir / MODEL_FILE).is_file()
        and (model_dir / TOKENIZER_FILE).is_file()
    )


def is_current(model_dir: Path, source: dict[str, Any]) -> bool:
    """Built, and from the same source package, version and weight file sizes."""
    meta = read_meta(model_dir)
    return meta is not None and meta.get("source") == source and is_built(model_dir)


def build_model(
    name: str,
    model_dir: Path,
    force: bool,
    source: dict[str, Any],
    produce: Callable[[Path], Produced],
) -> BuildResult:
    """Shared build flow: skip when current, else produce + verify in staging, then install.

    `source` is the cheap staleness key (see the module docstring); `produce(staging_dir)`
    writes MODEL_FILE and TOKENIZER_FILE there, checks parity (raising ModelBuildError
    when it fails) and reports the result.
    """
    start = time.perf_counter()
    if not force and is_current(model_dir, source):
        meta = read_meta(model_dir) or {}
        return BuildResult(
            name, model_dir, False, meta.get("parity_min_cosine"), time.perf_counter() - start
        )
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=model_dir.parent, prefix=f".{name}.staging-"))
    try:
        produced = produce(staging)
        model_dir.mkdir(parents=True, exist_ok=True)
        (model_dir / META_FILE).unlink(missing_ok=True)
        for file in (MODEL_FILE, TOKENIZER_FILE):
            os.replace(staging / file, model_dir / file)
        seconds = time.perf_counter() - start
        meta = {
            "format_version": FORMAT_VERSION,
            "name": name,
            "source": source,
            "source_sha256": produced.source_sha256,
            "parity_min_cosine": produced.parity_min_cosine,
            "parity_reference": produced.parity_reference,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_seconds": round(seconds, 2),
            "runtime": produced.runtime,
        }
        write_atomic(model_dir / META_FILE, json.dumps(meta, indent=2).encode("utf-8"))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BuildResult(name, model_dir, True, produced.parity_min_cosine, seconds)
