"""The shared runtime of the built-in models: HF tokenizers + an onnxruntime CPU session.

Every built-in model is a `model.onnx` taking int64 `input_ids`/`attention_mask` and
returning an L2-normalised `sentence_embedding`, plus a `tokenizer.json`; what differs
(prefixes, pad id, ...) is a RuntimeConfig stored in the model's meta.json.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mnemoweave.embed.artifacts import MODEL_FILE, TOKENIZER_FILE, read_meta
from mnemoweave.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

BATCH_SIZE = 32
BATCH_TOKENS = 4096  # padded tokens per run, so one long text does not pad a whole batch
DEFAULT_MAX_LENGTH = 256


# intra-op threads of the sessions a process makes from now on; None: all cores up to 4.
# The daemon sets 1: it embeds one prompt at a time on the prompt's path, where waking
# other threads after an idle pause costs more than they save (batches run 1.7x faster
# on two threads, a single prompt no faster).
THREADS: int | None = None


def default_threads() -> int:
    """intra-op threads: THREADS, else all cores up to 4 (more barely helps models this
    small)."""
    return THREADS or max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class RuntimeConfig:
    """How texts become model inputs for one model."""

    name: str
    dim: int
    pad_id: int = 0
    query_prefix: str = ""
    passage_prefix: str = ""
    max_length: int = DEFAULT_MAX_LENGTH  # tokens, special tokens included
    # ids fed for a text with no content tokens (e.g. "" for USE, whose reference
    # tokenizer emits <s> <unk> </s> there); None: keep the bare special tokens
    empty_ids: tuple[int, ...] | None = None
    # HF's Unigram fuses a run of unknown characters into one <unk>; the reference
    # tokenizers of both built-ins emit one <unk> per character. When set, runs are split.
    unk_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuntimeConfig:
        empty = data.get("empty_ids")
        return cls(**{**data, "empty_ids": tuple(empty) if empty is not None else None})


_ort_lock = threading.Lock()


def import_onnxruntime(cache: Path) -> ModuleType:
    """Import onnxruntime with its cache pointed into `cache`, not ~/.cache.

    onnxruntime writes a telemetry device id and database under $XDG_CACHE_HOME (default
    ~/.cache) when it is first imported; XDG_CACHE_HOME is set for the import only. If
    another library already imported onnxruntime, it is too late and this is a no-op.
    """
    with _ort_lock:
        if "onnxruntime" in sys.modules:
            return sys.modules["onnxruntime"]
        cache.mkdir(parents=True, exist_ok=True)
        saved = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = str(cache)
        try:
            import onnxruntime
        finally:
            if saved is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = saved
        loaded: ModuleType = onnxruntime
        return loaded


class OnnxEmbedder:
    """An Embedder over a model dir: batches of 32, padded, truncated, CPU provider only."""

    def __init__(self, model_dir: Path, config: RuntimeConfig, threads: int | None = None):
        import numpy as np
        from tokenizers import Tokenizer

        from mnemoweave.text import cache_dir

        ort = import_onnxruntime(cache_dir())
        self.name = config.name
        self.dim = config.dim
        self.config = config
        self._np = np
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(config.max_length)

    @property
    def symmetric(self) -> bool:
        """A query and a passage of the same text get the same vector (no prefixes)."""
        return self.config.query_prefix == self.config.passage_prefix

    def token_ids(self, texts: Sequence[str], *, query: bool = False) -> list[list[int]]:
        """The ids fed to the model for each text (prefix and special tokens included)."""
        prefix = self.config.query_prefix if query else self.config.passage_prefix
        out = []
        for enc in self._tokenizer.encode_batch([prefix + t for t in texts]):
            ids = enc.ids
            if self.config.empty_ids is not None and all(enc.special_tokens_mask):
                ids = list(self.config.empty_ids)
            elif self.config.unk_id in ids:
                ids = self._split_unknowns(ids, enc.offsets)
            out.append(ids)
        return out

    def _split_unknowns(self, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        """One <unk> per character of each fused unknown run, re-truncated to max_length."""
        unk = self.config.unk_id
        out: list[int] = []
        for token, (start, end) in zip(ids, offsets, strict=True):
            out.extend([token] * max(1, end - start) if token == unk else [token])
        if len(out) > self.config.max_length:
            out = out[: self.config.max_length - 1] + out[-1:]
        return out

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Texts -> float32 (n, dim), L2-normalised; sorted by length so batches pad little."""
        np = self._np
        if isinstance(texts, str):
            raise InvalidInput("embed() takes a list of texts, not a single string")
        ids = self.token_ids(texts, query=query)
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        batch: list[int] = []
        for i in sorted(range(len(ids)), key=lambda i: len(ids[i])):
            if batch and (
                len(batch) == BATCH_SIZE or (len(batch) + 1) * len(ids[i]) > BATCH_TOKENS
            ):
                out[batch] = self._run([ids[j] for j in batch])
                batch = []
            batch.append(i)
        if batch:
            out[batch] = self._run([ids[j] for j in batch])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: NDArray[Any] = out / np.maximum(norms, 1e-12)
        return unit

    def _run(self, rows: list[list[int]]) -> np.ndarray:
        np = self._np
        width = max(len(r) for r in rows)
        input_ids = np.full((len(rows), width), self.config.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        embedded: NDArray[Any] = self._session.run(["sentence_embedding"], feed)[0]
        return embedded


def load_dir(model_dir: Path, threads: int | None = None) -> OnnxEmbedder:
    """Load a built model dir; its meta.json says how to feed it."""
    meta = read_meta(model_dir)
    if meta is None or "runtime" not in meta:
        raise InvalidInput(f"{model_dir}: no built model here (run `mnemoweave model build`)")
    return OnnxEmbedder(model_dir, RuntimeConfig.from_dict(meta["runtime"]), threads)
