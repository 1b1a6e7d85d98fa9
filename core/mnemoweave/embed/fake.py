"""A fake embedder for tests of other modules. Not a model: never use it for real search."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemoweave.text import tokens

if TYPE_CHECKING:
    import numpy as np


class HashEmbedder:
    """FOR TESTS ONLY: word tokens hashed into `dim` buckets, counted, L2-normalised.

    Deterministic across processes (blake2b, not `hash()`), instant, no model files.
    Texts that share words are similar and texts that share none are (nearly) orthogonal,
    which is all a test of ranking, storage or fusion needs. `query` is ignored. A text
    with no word tokens is hashed whole, so every row still has unit norm.
    """

    def __init__(self, dim: int = 64, name: str = "hash-fake"):
        self.name = name
        self.dim = dim

    def _bucket(self, token: str) -> int:
        digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8)
        return int.from_bytes(digest.digest(), "little") % self.dim

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokens(text) or [text.strip()]:
                out[row, self._bucket(token)] += 1.0
        unit: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return unit
