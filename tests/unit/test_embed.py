"""The embedder registry, build caching and the fake embedder (no real model is built)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mnemoweave import hookspecs
from mnemoweave.embed import (
    BuildResult,
    Embedder,
    EmbedderSpec,
    build_models,
    built,
    load_embedder,
    models_dir,
    registered,
)
from mnemoweave.embed.artifacts import (
    FORMAT_VERSION,
    META_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelBuildError,
    Produced,
    build_model,
    is_built,
    is_current,
    read_meta,
)
from mnemoweave.embed.fake import HashEmbedder
from mnemoweave.embed.onnx_embedder import RuntimeConfig
from mnemoweave.errors import InvalidInput, MnemoweaveError
from mnemoweave.plugins import Plugins, make_plugin_manager

SOURCE = {"package": "stub-weights", "version": "1.0"}


def producer(calls: list[Path], parity: float = 0.9999):
    """A stand-in converter: writes two small files and reports a parity."""

    def produce(staging: Path) -> Produced:
        calls.append(staging)
        (staging / MODEL_FILE).write_bytes(b"onnx")
        (staging / TOKENIZER_FILE).write_text("{}")
        if parity < 0.99:
            raise ModelBuildError(f"stub: cosine {parity} too low")
        return Produced(parity, "stub reference", {"w.bin": "0" * 64}, {"name": "stub"})

    return produce


# --- the fake embedder -------------------------------------------------------------------


def test_hash_embedder_shape_norm_and_determinism() -> None:
    fake = HashEmbedder(dim=32)
    texts = ["use tabs for indentation", "以后代码注释都用英文", "", "!!!"]
    a, b = fake.embed(texts), HashEmbedder(dim=32).embed(texts, query=True)
    assert a.shape == (4, 32) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert np.array_equal(a, b)
    assert fake.embed([]).shape == (0, 32)


def test_hash_embedder_texts_sharing_words_are_closer() -> None:
    q, near, far = HashEmbedder(dim=256).embed(
        ["deploy on friday", "we deploy every friday evening", "tabs versus spaces"]
    )
    assert q @ near > q @ far
    zh = HashEmbedder(dim=256).embed(["代码注释用英文", "以后代码注释都用英文", "数据库连接池"])
    assert zh[0] @ zh[1] > zh[0] @ zh[2]


# --- registry and API --------------------------------------------------------------------


def test_builtins_are_registered() -> None:
    specs = registered()
    assert {"use-m3": 512, "e5-small": 384}.items() <= {n: s.dim for n, s in specs.items()}.items()
    assert all(s.description for s in specs.values())


def test_load_embedder_is_none_until_built() -> None:
    assert load_embedder("use-m3") is None
    assert load_embedder("e5-small") is None


def test_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(InvalidInput, match=r"unknown embedder 'nope'.*e5-small, openai, use-m3"):
        load_embedder("nope")
    with pytest.raises(InvalidInput, match="unknown embedder"):
        build_models(["nope"])


def test_importing_embed_stays_cheap() -> None:
    code = (
        "import sys, mnemoweave.embed as e; e.registered(); "
        "print([m for m in ('numpy', 'onnx', 'onnxruntime', 'tokenizers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class StubPlugin:
    """A third-party model: builds through the shared flow, loads as the fake embedder."""

    def __init__(self, name: str = "stub", load: Callable[[Path], Embedder] | None = None):
        self.name = name
        self.calls: list[Path] = []
        self.load = load or (lambda model_dir: HashEmbedder(dim=16, name=name))

    @hookspecs.hookimpl
    def register_embedders(self, register) -> None:
        register(
            EmbedderSpec(
                name=self.name,
                dim=16,
                description="stub",
                build=lambda d, force: build_model(
                    self.name, d, force, SOURCE, producer(self.calls)
                ),
                load=self.load,
                is_built=is_built,
            )
        )


def plugin_manager(*plugins: object) -> Plugins:
    pm = make_plugin_manager(load_entrypoints=False)
    for plugin in plugins:
        pm.register(plugin)
    return pm


def test_plugin_model_builds_once_and_then_loads() -> None:
    stub = StubPlugin()
    pm = plugin_manager(stub)
    assert load_embedder("stub", pm) is None
    (first,) = build_models(["stub"], pm=pm)
    assert first.built and first.path == models_dir() / "stub"
    assert first.parity_min_cosine == pytest.approx(0.9999)
    (second,) = build_models(["stub", "stub"], pm=pm)
    assert not second.built and len(stub.calls) == 1
    embedder = load_embedder("stub", pm)
    assert embedder is not None and embedder.embed(["a b"]).shape == (1, 16)


def test_a_duplicate_name_keeps_the_built_in_or_the_first_and_an_unsafe_one_is_refused() -> None:
    pm = make_plugin_manager(load_entrypoints=False)
    first = StubPlugin()
    for name, plugin in [
        ("impostor", StubPlugin("use-m3")),
        ("first", first),
        ("second", StubPlugin()),
        ("unsafe", StubPlugin("../x")),
    ]:
        pm.register(plugin, name=name)
    specs = registered(pm)
    assert specs["use-m3"].dim != 16 and specs["use-m3"].description != "stub"  # the built-in
    assert specs["stub"].load is first.load and "../x" not in specs
    kept = "mnemoweave.default_plugins.embedders's is kept"
    assert pm.clashes == [
        f"impostor: register_embedders 'use-m3' registered twice: {kept}",
        "second: register_embedders 'stub' registered twice: first's is kept",
        "unsafe: register_embedders '../x' refused: an embedder's name takes lowercase"
        " letters, digits, . - _",
    ]
    assert not pm.failures  # no plugin is blamed for another's registration


def test_damaged_model_raises_a_readable_error() -> None:
    def broken(model_dir: Path) -> Embedder:
        raise RuntimeError("protobuf parsing failed")

    pm = plugin_manager(StubPlugin(load=broken))
    build_models(["stub"], pm=pm)
    with pytest.raises(MnemoweaveError, match="cannot be loaded.*protobuf parsing failed"):
        load_embedder("stub", pm)


# --- where built models live: one cache for every data dir -----------------------------


def test_models_dir_is_the_setting_else_the_xdg_cache_else_the_home_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "mine"))
    assert models_dir() == tmp_path / "mine"
    monkeypatch.delenv("MNEMOWEAVE_MODELS")
    xdg_cache = Path(os.environ["XDG_CACHE_HOME"])  # ../../conftest.py
    assert models_dir() == xdg_cache / "mnemoweave" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as XDG says
    assert models_dir() == tmp_path / "user" / ".cache" / "mnemoweave" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert models_dir() == tmp_path / "user" / ".cache" / "mnemoweave" / "models"


def test_builds_land_in_the_setting_else_in_the_xdg_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pm = plugin_manager(StubPlugin())
    monkeypatch.delenv("MNEMOWEAVE_MODELS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (result,) = build_models(["stub"], pm=pm)
    assert result.path == tmp_path / "xdg" / "mnemoweave" / "models" / "stub"
    assert is_built(result.path)
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "mine"))
    assert load_embedder("stub", pm) is None  # another cache: nothing built there yet
    (result,) = build_models(["stub"], pm=pm)
    assert result.built and result.path == tmp_path / "mine" / "stub"


def test_a_new_data_dir_finds_the_models_built_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub = StubPlugin()
    pm = plugin_manager(stub)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(tmp_path / "first"))
    build_models(["stub"], pm=pm)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(tmp_path / "second"))
    assert load_embedder("stub", pm) is not None
    assert load_embedder("stub", pm, home=tmp_path / "third") is not None
    (again,) = build_models(["stub"], pm=pm)
    assert not again.built and len(stub.calls) == 1
    assert not (tmp_path / "first" / "models").exists()


def test_an_old_data_dir_keeps_its_models_moved_into_the_cache_once(
    tmp_path: Path, mnemoweave_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub = StubPlugin()
    pm = plugin_manager(stub)
    old = mnemoweave_home / "models" / "stub"
    build_model("stub", old, False, SOURCE, producer(stub.calls))  # where older versions built
    demo = tmp_path / "demo"  # another data dir opened from this one's process, as the demo is
    assert built("stub", pm, home=demo)  # as `status` and `model list` ask: nothing loaded
    assert is_built(models_dir() / "stub") and not (mnemoweave_home / "models").exists()
    assert load_embedder("stub", pm, home=demo) is not None
    (again,) = build_models(["stub"], pm=pm)
    assert not again.built and len(stub.calls) == 1  # no rebuild

    other = tmp_path / "other"
    build_model("stub", other / "models" / "stub", False, SOURCE, producer(stub.calls))
    assert load_embedder("stub", pm, home=other) is not None
    assert is_built(other / "models" / "stub")  # the cache has one: this one stays, unused
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "models").symlink_to(other / "models")  # a link's target is not ours to move
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(tmp_path / "empty-cache"))
    assert load_embedder("stub", pm, home=linked) is None
    assert is_built(other / "models" / "stub")


# --- the shared build flow ---------------------------------------------------------------


def test_build_writes_meta_last_and_skips_when_current(tmp_path: Path) -> None:
    calls: list[Path] = []
    model_dir = tmp_path / "models" / "stub"
    result = build_model("stub", model_dir, False, SOURCE, producer(calls))
    assert isinstance(result, BuildResult) and result.built
    meta = json.loads((model_dir / META_FILE).read_text())
    assert meta["format_version"] == FORMAT_VERSION and meta["source"] == SOURCE
    assert meta["parity_min_cosine"] == pytest.approx(0.9999)
    assert meta["source_sha256"] == {"w.bin": "0" * 64} and meta["runtime"] == {"name": "stub"}
    assert {"built_at", "build_seconds", "parity_reference"} <= meta.keys()
    assert is_current(model_dir, SOURCE)
    assert sorted(p.name for p in model_dir.parent.iterdir()) == ["stub"]  # staging removed

    again = build_model("stub", model_dir, False, SOURCE, producer(calls))
    assert not again.built and again.parity_min_cosine == pytest.approx(0.9999)
    assert len(calls) == 1
    assert build_model("stub", model_dir, True, SOURCE, producer(calls)).built
    newer = {**SOURCE, "version": "1.1"}
    assert not is_current(model_dir, newer)
    assert build_model("stub", model_dir, False, newer, producer(calls)).built
    assert len(calls) == 3


def test_failed_build_keeps_the_previous_model(tmp_path: Path) -> None:
    model_dir = tmp_path / "stub"
    build_model("stub", model_dir, False, SOURCE, producer([]))
    before = (model_dir / META_FILE).read_bytes()
    with pytest.raises(ModelBuildError, match="too low"):
        build_model("stub", model_dir, True, SOURCE, producer([], parity=0.5))
    assert (model_dir / META_FILE).read_bytes() == before and is_built(model_dir)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stub"]


def test_failed_first_build_leaves_nothing_valid(tmp_path: Path) -> None:
    model_dir = tmp_path / "stub"
    with pytest.raises(ModelBuildError):
        build_model("stub", model_dir, False, SOURCE, producer([], parity=0.5))
    assert not is_built(model_dir)


def test_model_without_valid_meta_is_not_built(tmp_path: Path) -> None:
    model_dir = tmp_path / "stub"
    build_model("stub", model_dir, False, SOURCE, producer([]))
    (model_dir / TOKENIZER_FILE).unlink()
    assert not is_built(model_dir)
    build_model("stub", model_dir, True, SOURCE, producer([]))
    meta = json.loads((model_dir / META_FILE).read_text())
    (model_dir / META_FILE).write_text(json.dumps({**meta, "format_version": 0}))
    assert read_meta(model_dir) is None and not is_built(model_dir)
    (model_dir / META_FILE).write_text("{not json")
    assert not is_built(model_dir)


def test_runtime_config_round_trips() -> None:
    config = RuntimeConfig("m", 8, pad_id=1, query_prefix="q: ", empty_ids=(1, 0, 2), unk_id=0)
    assert RuntimeConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
