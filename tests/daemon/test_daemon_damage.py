"""A store file damaged on disk: found, reported with a way to recover, and written no
more (hooks spool meanwhile) until it is sound again."""

from __future__ import annotations

import io
import json
import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from running import START_WITHIN, start_daemon

from mnemoweave import Engine, hook
from mnemoweave.cli.main import cli
from mnemoweave.hosts import client
from mnemoweave.store.damage import MARKER
from mnemoweave.store.db import DB_NAME, checkpoint


def damage_store(home: Path) -> Path:
    """A store whose turns table's root page is overwritten with random bytes, as a disk
    fault would; returns a copy of it from before (a backup)."""
    with Engine(home) as engine:
        turns = [{"session": f"s{n // 20}", "role": "user", "text": f"turn {n} on uploads"}
                 for n in range(60)]  # fmt: skip
        engine.ingest_many(turns)
        engine.remember("Uploads retry three times")
        checkpoint(engine.db)
        root = engine.db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'turns'")
        page = root.fetchone()[0]
        size = engine.db.execute("PRAGMA page_size").fetchone()[0]
    store = home / DB_NAME
    backup = home.parent / f"{home.name}-backup.sqlite"
    shutil.copyfile(store, backup)
    with open(store, "r+b") as file:
        file.seek((page - 1) * size)
        file.write(random.Random(7).randbytes(size))
    return backup


def memories_in(home: Path) -> int:
    with sqlite3.connect(home / DB_NAME) as db:
        count: int = db.execute("SELECT count(*) FROM memories").fetchone()[0]
        return count


def test_doctor_reports_the_damage_and_how_to_recover(home):
    damage_store(home)
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1
    (line,) = [line for line in result.stdout.splitlines() if "store integrity" in line]
    store = home / DB_NAME
    assert line.startswith(
        f"FAIL  store integrity: {store}: database disk image is malformed; writes are "
        f"stopped. Recover: `mnemoweave stop`; `sqlite3 {store} .recover | sqlite3 "
        f"{store}.recovered`"
    )
    assert line.endswith("Or put back a backup of the data dir")
    assert json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).stdout)["ok"] is False


def test_writes_stop_in_a_damaged_store_and_resume_once_a_backup_is_back(home):
    backup = damage_store(home)
    hit = CliRunner().invoke(cli, ["ingest", "-s", "s9", "-r", "user", "one more turn"])
    assert hit.exit_code == 1 and "database disk image is malformed" in hit.stderr
    assert (home / MARKER).is_file()  # found on a write: no more writes from now on
    refused = CliRunner().invoke(cli, ["remember", "a memory for a sound table"])
    assert refused.exit_code == 1
    assert refused.stderr == (
        "Error: store error: the store is damaged (database disk image is malformed): writes "
        "are stopped so that nothing more goes into it; `mnemoweave doctor` says how to "
        "recover\n"
    )
    assert memories_in(home) == 1
    listed = CliRunner().invoke(cli, ["list"])  # reading what still reads goes on
    assert listed.exit_code == 0 and "Uploads retry three times" in listed.stdout
    for suffix in ("-wal", "-shm"):
        (home / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(backup, home / DB_NAME)
    assert CliRunner().invoke(cli, ["doctor"]).exit_code == 0
    assert not (home / MARKER).exists()
    again = CliRunner().invoke(cli, ["remember", "a memory for a sound table"])
    assert again.exit_code == 0 and again.stdout == "new m_2\n"


def test_a_daemon_finds_the_damage_refuses_writes_and_hooks_spool(home, monkeypatch):
    damage_store(home)
    daemon = start_daemon(home)
    try:
        deadline = time.monotonic() + START_WITHIN
        while not (home / MARKER).exists():  # its check at start, off the requests' path
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with pytest.raises(client.DaemonError) as refused:
            daemon.request("POST", "/v1/memories", {"text": "a memory for a sound table"})
        assert refused.value.status == 503 and "the store is damaged" in str(refused.value)
        assert [m["body"] for m in daemon.call("GET", "/v1/memories")] == [
            "Uploads retry three times"
        ]
        monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "20000")  # time enough to answer
        prompt = {"session_id": "s9", "cwd": "/tmp", "prompt": "why do uploads fail?"}
        out = io.StringIO()
        raw = io.BytesIO(json.dumps(prompt).encode())
        assert hook.run("claude-code", "UserPromptSubmit", raw, out) == 0
    finally:
        assert daemon.stop() == 0
    assert out.getvalue() == ""
    (spooled,) = (home / "spool").glob("*.json")
    assert json.loads(spooled.read_text())["payload"]["prompt"] == "why do uploads fail?"
    # the hook was answered; the turn it could not store was spooled by the daemon
    logged = (home / "logs" / "daemon.log").read_text()
    assert "storing after the answer failed (the store is damaged" in logged
    assert memories_in(home) == 1
