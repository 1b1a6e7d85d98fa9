"""The built models are one cache shared by every data dir: a new data dir, the demo and an
older version's data dir use them without a build, and `doctor` says where they are."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

WITHIN = 120  # seconds for one command that loads the real model


def mw(*args: str, python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *python, "-m", "mnemoweave", *args],
        capture_output=True,
        text=True,
        timeout=WITHIN,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def hits_of(output: str, query: str) -> list[str]:
    """The result lines the demo printed under `search 'query'`."""
    lines = output.splitlines()
    start = lines.index(f"search {query!r}:") + 1
    found = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        found.append(line.strip())
    return found


def test_the_demo_in_a_new_data_dir_is_hybrid_and_crosses_languages(real_models, mnemoweave_home):
    output = mw("demo").stdout
    assert "retrieval: hybrid (bm25 + use-m3)" in output
    hits = hits_of(output, "what language should code comments be written in")
    assert hits and "以后代码注释都用英文" in hits[0], output
    assert not (mnemoweave_home / "models").exists()


def test_doctor_names_the_models_dir_and_what_is_built(real_models):
    output = mw("doctor").stdout
    assert f"models: {real_models} (built: use-m3, e5-small)" in output, output
    assert "semantic search: hybrid (bm25 + use-m3)" in output


def test_an_older_data_dir_keeps_its_models_without_a_rebuild(real_models, tmp_path, monkeypatch):
    from mnemoweave import Engine

    old = tmp_path / "old"  # as an older version left it: its models under the data dir
    shutil.copytree(real_models / "use-m3", old / "models" / "use-m3", copy_function=os.link)
    cache = tmp_path / "cache"
    monkeypatch.setenv("MNEMOWEAVE_MODELS", str(cache))
    assert "use-m3: up to date" in mw("--home", str(old), "model", "build", "use-m3").stdout
    assert not (old / "models").exists() and (cache / "use-m3" / "model.onnx").is_file()
    with Engine(old) as engine:
        assert engine.retrieval_mode() == "hybrid (bm25 + use-m3)"


def test_status_reports_the_built_models_without_loading_them(real_models):
    done = mw("status", "--json", python=("-X", "importtime"))
    assert json.loads(done.stdout)["retrieval"] == "hybrid (bm25 + use-m3)"
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "mnemoweave.upkeep.health" in imported  # the listing is complete
    assert not imported & {"numpy", "onnxruntime", "tokenizers", "chromadb"}
