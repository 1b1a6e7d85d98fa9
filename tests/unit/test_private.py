"""The data dir stays private: `doctor` finds what is open to group or others and
`--repair` closes it, a migration closes a store an earlier version left open, and an
empty `--home` is refused; a host's settings file keeps its own mode under our umask."""

from __future__ import annotations

import os
import platform
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.hosts.install import install
from mnemoweave.store import migrations
from mnemoweave.store.db import DB_NAME, connect


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_doctor_reports_a_loose_file_and_repair_closes_it(mnemoweave_home):
    runner = CliRunner()
    assert runner.invoke(cli, ["remember", "Deploys go out on Tuesdays"]).exit_code == 0
    db, logs = mnemoweave_home / DB_NAME, mnemoweave_home / "logs"
    logs.mkdir()
    os.chmod(db, 0o644)
    os.chmod(logs, 0o755)
    found = runner.invoke(cli, ["doctor"])
    assert found.exit_code == 1
    # the store's -wal and -shm files, made when doctor opens it, take the store's mode
    line = next(line for line in found.output.splitlines() if "private files" in line)
    assert line.startswith("FAIL  private files: 4 open to group or others (")
    assert all(f"{name}," in line or f"{name})" in line for name in ("logs", DB_NAME))
    assert line.endswith(f"run `mnemoweave doctor --repair` (or `chmod -R go= {mnemoweave_home}`)")
    repaired = runner.invoke(cli, ["doctor", "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert "ok    private files: nothing open to group or others" in repaired.output
    assert (mode(db), mode(logs)) == (0o600, 0o700)


def test_the_migration_closes_a_store_an_earlier_version_left_open(tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "models"
    before = migrations.MIGRATIONS[: migrations.MIGRATIONS.index(migrations.m008_private_files)]
    with pytest.MonkeyPatch.context() as patch:  # the store as the version before left it
        patch.setattr(migrations, "MIGRATIONS", before)
        connect(home / DB_NAME).close()
    for name in ("logs/hooks.log", "exports/global.md", "chroma/0a1b/header.bin"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("x")
    (home / "transcripts.json").write_text("{}")
    elsewhere.mkdir()
    (elsewhere / "model.onnx").write_text("x")
    (home / "models").symlink_to(elsewhere)  # not ours to change
    for folder, _, files in os.walk(tmp_path):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder, name), 0o644)
    assert mode(home) == 0o755 and mode(home / "chroma" / "0a1b" / "header.bin") == 0o644

    db = connect(home / DB_NAME)
    assert "m008_private_files" in migrations.applied(db)
    db.close()
    closed = {
        str(path.relative_to(home)): mode(path)
        for path in [home, *home.rglob("*")]
        if not path.is_symlink()
    }
    assert closed == {
        ".": 0o700,
        DB_NAME: 0o600,
        "logs": 0o700,
        "logs/hooks.log": 0o600,
        "exports": 0o700,
        "exports/global.md": 0o600,
        "chroma": 0o700,
        "chroma/0a1b": 0o700,
        "chroma/0a1b/header.bin": 0o600,
        "transcripts.json": 0o600,
    }
    assert (mode(elsewhere), mode(elsewhere / "model.onnx")) == (0o755, 0o644)


def test_a_host_settings_file_keeps_its_mode_under_our_umask(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}')
    settings.chmod(0o644)
    umask = os.umask(0o077)  # what the CLI runs with
    try:
        assert install(settings, command="/venv/bin/python -m mnemoweave.hook")["changed"]
    finally:
        os.umask(umask)
    assert mode(settings) == 0o644 and "hooks" in settings.read_text()


@pytest.mark.parametrize("home", ["", "  "])
def test_an_empty_home_is_refused_not_taken_as_the_current_dir(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["--home", home, "remember", "where does this go?"])
    assert result.exit_code == 2
    assert result.output == "Error: --home: give a directory (the path is empty)\n"
    assert list(tmp_path.iterdir()) == []


GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="M_PERTURB is glibc's")
def test_freed_memory_is_scrubbed_once_a_vector_index_may_write_it():
    """A freed buffer's text shows up in the next uninitialised one (which Chroma writes
    into its HNSW file) until scrub_freed_memory; after it, never."""
    probe = (
        "import ctypes\n"
        "from mnemoweave.store.private import scrub_freed_memory\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.malloc.restype = ctypes.c_void_p\n"
        "libc.malloc.argtypes = [ctypes.c_size_t]\n"
        "libc.free.argtypes = [ctypes.c_void_p]\n"
        "def reused():\n"
        "    held = libc.malloc(8192)\n"
        "    ctypes.memmove(held, b'AKIA-NOT-A-KEY ' * 500, 7500)\n"
        "    libc.free(held)\n"
        "    fresh = libc.malloc(8192)\n"
        "    seen = ctypes.string_at(fresh, 8192)\n"
        "    libc.free(fresh)\n"
        "    return b'AKIA-NOT-A-KEY' in seen\n"
        "before = reused()\n"
        "scrub_freed_memory()\n"
        "print(before, reused())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "False"]
