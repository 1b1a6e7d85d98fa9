"""What an embedder is, and how one is registered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """A loaded model: texts in, L2-normalised float32 vectors (n, dim) out. One that
    embeds a query as it embeds a passage may say so with `symmetric = True`: a prompt's
    vector from its search is then reused when the prompt is stored."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Embed documents, or queries when `query` (models with query/passage prefixes differ)."""
        ...


@dataclass(frozen=True)
class BuildResult:
    """What `mnemoweave model build` did for one model."""

    name: str
    path: Path
    built: bool  # False: the cached files were already valid, nothing was done
    parity_min_cosine: float | None  # against the weight package's own encoder
    seconds: float


@dataclass(frozen=True)
class EmbedderSpec:
    """A registered model: how to build its files into a directory and how to load them."""

    name: str
    dim: int
    description: str
    build: Callable[[Path, bool], BuildResult]  # (model_dir, force) -> result
    load: Callable[[Path], Embedder]  # model_dir -> embedder; raises if files are missing
    is_built: Callable[[Path], bool]  # model_dir -> are valid files present
    relevant_cosine: float = 1.0  # calibrated: a cosine at or above it means "on topic"
