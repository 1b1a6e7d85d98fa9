"""Embedding models: which are registered, building their files, loading them.

Importing this package stays cheap: numpy, onnx, onnxruntime and tokenizers are imported
only inside the functions that build or run a model.

    from mnemoweave.embed import build_models, load_embedder
    build_models(["use-m3"])               # convert once into <data dir>/models/use-m3/
    embedder = load_embedder("use-m3")     # None until built: fall back to lexical search
    vectors = embedder.embed(["some text"], query=True)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import data_dir
from ..errors import InvalidInput, MnemoweaveError
from .artifacts import ModelBuildError
from .base import BuildResult, Embedder, EmbedderSpec

if TYPE_CHECKING:
    import pluggy

__all__ = [
    "BuildResult",
    "Embedder",
    "EmbedderSpec",
    "ModelBuildError",
    "build_models",
    "load_embedder",
    "models_dir",
    "registered",
]

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def models_dir(home: Path | None = None) -> Path:
    """Where built models live: `<data dir>/models/<name>/` (`home`, else the data dir)."""
    return (home or data_dir()) / "models"


def registered(pm: pluggy.PluginManager | None = None) -> dict[str, EmbedderSpec]:
    """Every registered model, by name."""
    if pm is None:
        from ..plugins import make_plugin_manager

        pm = make_plugin_manager()
    specs: dict[str, EmbedderSpec] = {}

    def register(spec: EmbedderSpec) -> None:
        if not _NAME.fullmatch(spec.name):
            raise InvalidInput(f"embedder name {spec.name!r}: use lowercase letters, digits, .-_")
        if spec.name in specs:
            raise MnemoweaveError(f"two plugins register an embedder named {spec.name!r}")
        specs[spec.name] = spec

    pm.hook.register_embedders(register=register)
    return specs


def _spec(name: str, specs: dict[str, EmbedderSpec]) -> EmbedderSpec:
    if name not in specs:
        known = ", ".join(sorted(specs)) or "none"
        raise InvalidInput(f"unknown embedder {name!r}; registered: {known}")
    return specs[name]


def build_models(
    names: list[str] | None = None, force: bool = False, pm: pluggy.PluginManager | None = None
) -> list[BuildResult]:
    """Build the named models (None: all registered), skipping those already current."""
    specs = registered(pm)
    chosen = [_spec(n, specs) for n in dict.fromkeys(names if names is not None else specs)]
    return [spec.build(models_dir() / spec.name, force) for spec in chosen]


def load_embedder(
    name: str, pm: pluggy.PluginManager | None = None, home: Path | None = None
) -> Embedder | None:
    """The named model ready to embed, or None when its files are not built yet.

    Raises InvalidInput for a name nobody registered, and MnemoweaveError when built files
    cannot be loaded (damaged: rebuild with force).
    """
    spec = _spec(name, registered(pm))
    model_dir = models_dir(home) / name
    if not spec.is_built(model_dir):
        return None
    try:
        return spec.load(model_dir)
    except MnemoweaveError:
        raise
    except Exception as exc:
        raise MnemoweaveError(
            f"embedder {name!r}: the files in {model_dir} cannot be loaded ({exc}); "
            "rebuild them with force"
        ) from exc
