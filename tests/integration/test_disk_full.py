"""A full disk: writes fail with a clear error, nothing is half-written, the store stays sound.

The child process gets a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored), so a write
past it fails with EFBIG exactly as on a full disk, without filling a real one.
"""

from __future__ import annotations

import json
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, sys
from mnemoweave import Engine
engine = Engine()
for i in range(10_000):
    text = f"memory {i}: " + ("the upload worker retries with backoff " * 500)
    try:
        written = engine.remember(text, kind="fact")
    except Exception as exc:
        print(json.dumps({"failed": i, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        break
    print(json.dumps({"stored": written.id, "i": i}), flush=True)
"""


def limited(size: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def test_writes_fail_cleanly_when_the_disk_is_full(mnemoweave_home: Path):
    mnemoweave_home.mkdir(parents=True, exist_ok=True)
    (mnemoweave_home / "config.toml").write_text('embedder = "none"\n')
    from mnemoweave import Engine

    with Engine() as engine:
        engine.remember("a memory from before the disk filled up")
    size = (mnemoweave_home / "mnemoweave.sqlite").stat().st_size
    run = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited(size + 400_000),
    )
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    stored = [line["stored"] for line in lines if "stored" in line]
    (failure,) = [line for line in lines if "failed" in line]
    assert stored, run.stderr
    full = ("database or disk is full", "disk I/O error")  # ENOSPC, EFBIG
    assert failure["error"] in {f"OperationalError: {reason}" for reason in full}
    cli = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "remember", "-"],
        input="the disk is full " * 30_000,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited((mnemoweave_home / "mnemoweave.sqlite").stat().st_size + 1000),
    )
    assert cli.returncode == 1 and cli.stdout == ""
    assert cli.stderr.strip().splitlines() in (
        [f"Error: store error: {reason}"] for reason in full
    ), cli.stderr
    with sqlite3.connect(mnemoweave_home / "mnemoweave.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert count == 1 + len(stored)  # every acknowledged write, and no part of the failed one
    with Engine() as engine:
        assert all(check.ok for check in engine.doctor()), engine.doctor()
        assert engine.remember("writing works again once there is room").action == "new"
