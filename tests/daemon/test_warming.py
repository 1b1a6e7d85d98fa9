"""A daemon takes hooks while it warms up (daemon/warming.py): at once, from a process of
its own, storing them once it is warm; everything else waits for the warm-up.

The warm-up is held here the way a busy store holds it: another connection keeps the store
locked (SQLite's EXCLUSIVE lock), so the daemon's engine waits (busy timeout 10 s) while
the socket already answers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from running import STOP_WITHIN, daemon_env
from test_cold_start import (  # noqa: F401 (store: a fixture)
    FACT,
    LAUNCHER,
    context,
    hook,
    log,
    store,
    waited,
)

from mnemoweave.hosts import client
from mnemoweave.store.db import DB_NAME

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")


@contextmanager
def store_held(home: Path) -> Iterator[None]:
    """The store locked against every other connection, as long as the block runs."""
    db = sqlite3.connect(home / DB_NAME, isolation_level=None)
    try:
        db.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        db.close()


def serve(home: Path, started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """A daemon started on `home` (kept in `started`), once it takes hooks while warming
    up: its socket is there, and its taker."""
    daemon = subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", "serve"],
        env=daemon_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started.append(daemon)
    sock = client.socket_path(home)
    waited(lambda: os.path.exists(sock) and len(children(daemon.pid)) == 1, within=60)
    return daemon


def children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in found.read_text().split()] if found.exists() else []


def gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status  # a zombie is not running (its parent may not reap it)


def spooled(home: Path) -> list[Path]:
    return sorted((home / "spool").glob("*.json"))


@pytest.fixture
def daemon_exits() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=STOP_WITHIN)


def test_hooks_are_taken_at_once_while_the_daemon_warms_up_and_stored_once_it_is_warm(
    store,  # noqa: F811
    daemon_exits,
):
    home, project = store
    said = "The upload service logs no bodies now."
    with store_held(home):
        daemon = serve(home, daemon_exits)
        prompt = {"session_id": "w1", "cwd": str(project), "prompt": "what about the logs?"}
        began = time.monotonic()
        assert hook(home, "UserPromptSubmit", prompt) == ""  # nothing to weave with yet
        stop = {"session_id": "w1", "cwd": str(project), "last_assistant_message": said}
        assert hook(home, "Stop", stop) == ""
        took = time.monotonic() - began
        assert "spooled" not in log(home)  # the daemon took both: the hooks spooled nothing
        assert len(spooled(home)) == 2  # it spooled them, to store once warm
        with pytest.raises(client.DaemonError) as refused:
            client.request(home, "GET", "/v1/daemon", timeout=10)
        assert refused.value.status == 503 and "warming up" in str(refused.value)
        assert not client.running(home)  # so nobody sends it work it cannot do yet
        assert daemon.poll() is None and len(children(daemon.pid)) == 1  # the taker
        assert took < 10  # the store was held all along: no hook waited for the warm-up
    waited(lambda: client.running(home))
    waited(lambda: not spooled(home))
    turns = client.request(home, "GET", "/v1/turns?session=w1")["result"]
    assert [t["text"] for t in turns] == ["what about the logs?", said]
    assert children(daemon.pid) == []  # the taker is gone once the daemon serves
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=STOP_WITHIN) == 0


def test_a_daemon_stopped_or_killed_while_warming_up_leaves_nothing_running_and_loses_nothing(
    store,  # noqa: F811
    daemon_exits,
):
    home, project = store
    stop = {"session_id": "w2", "cwd": str(project), "last_assistant_message": "Done."}
    with store_held(home):
        stopped = serve(home, daemon_exits)
        assert hook(home, "Stop", stop) == ""
        (taker,) = children(stopped.pid)
        stopped.send_signal(signal.SIGTERM)  # it stops once the engine is made
    assert stopped.wait(timeout=STOP_WITHIN + 10) == 0
    assert gone(taker) and client.lock_holder(home) is None
    assert len(spooled(home)) == 1  # kept for the next daemon

    with store_held(home):
        killed = serve(home, daemon_exits)
        (taker,) = children(killed.pid)
        killed.kill()
        killed.wait(timeout=STOP_WITHIN)
        waited(lambda: gone(taker), within=10)  # it sees its daemon gone
    assert client.lock_holder(home) is None  # the taker never held the store's lock

    assert hook(home, "Stop", stop | {"last_assistant_message": "Done again."}) == ""
    waited(lambda: client.running(home))  # that hook woke a daemon
    waited(lambda: not spooled(home))
    turns = client.request(home, "GET", "/v1/turns?session=w2")["result"]
    assert [t["text"] for t in turns] == ["Done.", "Done again."]


def test_a_prompt_that_may_wait_is_held_while_the_daemon_warms_up_then_woven(
    store,  # noqa: F811
    daemon_exits,
):
    home, project = store
    prompt = {"session_id": "w3", "cwd": str(project), "prompt": "the staging database name?"}
    stop = {"session_id": "w3", "cwd": str(project), "last_assistant_message": "Checked."}
    with store_held(home):
        serve(home, daemon_exits)
        assert hook(home, "Stop", stop) == ""  # spooled: storing it waits for the store
        asked = subprocess.Popen(
            [str(LAUNCHER), "hook", "claude-code", "UserPromptSubmit"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=daemon_env(home, MNEMOWEAVE_HOOK_BUDGET_MS="30000"),
        )
        assert asked.stdin is not None and asked.stdout is not None
        asked.stdin.write(json.dumps(prompt).encode())
        asked.stdin.close()
        time.sleep(1.0)
        assert asked.poll() is None  # held: the daemon may be ready within its 30 s
    assert asked.wait(timeout=60) == 0
    out = asked.stdout.read()
    asked.stdout.close()
    assert FACT in context(out.decode())  # woven by the daemon once warm
    assert "spooled" not in log(home)
    turns = client.request(home, "GET", "/v1/turns?session=w3")["result"]
    assert [t["text"] for t in turns] == ["Checked.", "the staging database name?"]
    assert 0 < float((home / "daemon.warm-up").read_text()) < 60  # the next guess: this one
