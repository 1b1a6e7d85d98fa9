"""Embedding models: which are registered, building their files, loading them.

Importing this package stays cheap: numpy, onnx, onnxruntime and tokenizers are imported
only inside the functions that build or run a model.

    from mnemoweave.embed import build_models, load_embedder
    build_models(["use-m3"])               # convert once into models_dir() / "use-m3"
    embedder = load_embedder("use-m3")     # None until built: fall back to lexical search
    vectors = embedder.embed(["some text"], query=True)

Built models are shared by every data dir (see `models_dir`). A data dir of an older version
kept its own under `<data dir>/models/<name>/`: the first load or build that finds one there,
built, while the shared cache has none of that name moves it into the cache (once, no
rebuild); a model the cache already has is left where it was, unused.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mnemoweave.config import data_dir, shared_cache
from mnemoweave.embed.artifacts import ModelBuildError
from mnemoweave.embed.base import BuildResult, Embedder, EmbedderSpec
from mnemoweave.errors import InvalidInput, MnemoweaveError

if TYPE_CHECKING:
    from mnemoweave.plugins import Plugins

__all__ = [
    "BuildResult",
    "Embedder",
    "EmbedderSpec",
    "ModelBuildError",
    "build_models",
    "built",
    "load_embedder",
    "models_dir",
    "registered",
]

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def models_dir() -> Path:
    """Where built models live, one cache for every data dir: `$MNEMOWEAVE_MODELS`, else
    `$XDG_CACHE_HOME/mnemoweave/models`, else `~/.cache/mnemoweave/models`."""
    if chosen := os.environ.get("MNEMOWEAVE_MODELS", "").strip():
        return Path(chosen).expanduser()
    return shared_cache() / "models"


def _adopt(spec: EmbedderSpec, homes: list[Path]) -> None:
    """Move `spec`'s model built under a data dir of an older version into the shared cache,
    unless the cache has one already."""
    target = models_dir() / spec.name
    for old in (home / "models" / spec.name for home in homes):
        if target.exists() or old.parent.is_symlink() or old.is_symlink() or not spec.is_built(old):
            continue  # nothing to move, or a link whose target is not ours
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            old.rename(target)
        except OSError:  # another file system: copy next to the target, then rename
            staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=target.parent))
            shutil.copytree(old, staging, dirs_exist_ok=True)
            try:
                staging.rename(target)
            except OSError:  # another process adopted it meanwhile
                shutil.rmtree(staging, ignore_errors=True)
                continue
            shutil.rmtree(old, ignore_errors=True)
        with contextlib.suppress(OSError):
            old.parent.rmdir()  # `<data dir>/models`, once empty


def registered(pm: Plugins | None = None) -> dict[str, EmbedderSpec]:
    """Every registered model, by name (a name registered twice: see mnemoweave.plugins)."""
    from mnemoweave.plugins import make_plugin_manager, registry

    pm = pm or make_plugin_manager()
    return registry(pm, "register_embedders", named=lambda spec: (spec.name, spec), check=_wrong)


def _wrong(name: str, spec: EmbedderSpec) -> str | None:
    if not _NAME.fullmatch(name):
        return "an embedder's name takes lowercase letters, digits, . - _"
    return None


def _spec(name: str, specs: dict[str, EmbedderSpec]) -> EmbedderSpec:
    if name not in specs:
        known = ", ".join(sorted(specs)) or "none"
        raise InvalidInput(f"unknown embedder {name!r}; registered: {known}")
    return specs[name]


def build_models(
    names: list[str] | None = None, force: bool = False, pm: Plugins | None = None
) -> list[BuildResult]:
    """Build the named models (None: all registered), skipping those already current."""
    specs = registered(pm)
    chosen = [_spec(n, specs) for n in dict.fromkeys(names if names is not None else specs)]
    for spec in chosen:
        _adopt(spec, [data_dir()])
    return [spec.build(models_dir() / spec.name, force) for spec in chosen]


def _built_dir(spec: EmbedderSpec, home: Path | None) -> Path | None:
    """Where `spec`'s built files are in the shared cache (None: not built there), once a
    model an older version built in `home` or the process's data dir has been moved in."""
    _adopt(spec, list(dict.fromkeys([home or data_dir(), data_dir()])))
    model_dir = models_dir() / spec.name
    return model_dir if spec.is_built(model_dir) else None


def built(name: str, pm: Plugins | None = None, home: Path | None = None) -> bool:
    """Whether the named model is built, for the data dir `home` (as load_embedder finds it),
    without loading anything."""
    return _built_dir(_spec(name, registered(pm)), home) is not None


def load_embedder(
    name: str, pm: Plugins | None = None, home: Path | None = None
) -> Embedder | None:
    """The named model ready to embed, or None when its files are not built yet. `home` is
    the data dir it is loaded for (default the process's): a model an older version built
    there, or in the process's data dir, is moved into the shared cache first.

    Raises InvalidInput for a name nobody registered, and MnemoweaveError when built files
    cannot be loaded (damaged: rebuild with force).
    """
    spec = _spec(name, registered(pm))
    model_dir = _built_dir(spec, home)
    if model_dir is None:
        return None
    key = (spec, str(model_dir), model_dir.stat().st_mtime_ns)
    if key not in _loaded:
        _loaded[key] = _load(spec, model_dir)
    return _loaded[key]


# The models this process loaded, by spec, dir and build: a model is read-only, and loading
# one (or freeing it) takes a good part of a second, so every engine of the process shares
# it (the MCP server opens one per call). A rebuild moves files into the dir: a new key.
_loaded: dict[tuple[EmbedderSpec, str, int], Embedder] = {}


def _load(spec: EmbedderSpec, model_dir: Path) -> Embedder:
    try:
        return spec.load(model_dir)
    except MnemoweaveError:
        raise
    except Exception as exc:
        raise MnemoweaveError(
            f"embedder {spec.name!r}: the files in {model_dir} cannot be loaded ({exc}); "
            "rebuild them with force"
        ) from exc
