"""Faults between clients and the daemon: bursts, a daemon not listening yet, a daemon
killed in the middle of a request, and what it mends when it comes back."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from running import START_WITHIN, daemon_env, start_daemon

from mnemoweave import Engine
from mnemoweave.daemon.process import StoreLock
from mnemoweave.hosts import client
from mnemoweave.upkeep.indexing import drift

ANSWER = b'HTTP/1.0 200 OK\r\nContent-Length: 14\r\n\r\n{"result": 1}\n'


def _answer_after(server: socket.socket, delay: float, count: int) -> threading.Thread:
    """Accept and answer `count` connections, starting after `delay` seconds."""

    def serve() -> None:
        time.sleep(delay)
        for _ in range(count):
            connection, _ = server.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(ANSWER)

    thread = threading.Thread(target=serve)
    thread.start()
    return thread


def test_a_full_backlog_is_retried_not_reported_as_no_daemon(home):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(client.socket_path(home)))
    server.listen(0)  # one waiting connection at most: the next ones get EAGAIN
    answered = _answer_after(server, 0.5, 4)
    results, errors = [], []

    def ask() -> None:
        try:
            results.append(client.request(home, "GET", "/v1/daemon", timeout=20))
        except client.DaemonError as exc:
            errors.append(str(exc))

    askers = [threading.Thread(target=ask) for _ in range(4)]
    for thread in askers:
        thread.start()
    for thread in askers:
        thread.join(timeout=30)
    answered.join(timeout=30)
    server.close()
    assert errors == [] and results == [{"result": 1}] * 4


def test_a_refused_connection_is_retried_while_a_daemon_holds_the_lock(home):
    lock = StoreLock(home)
    assert lock.acquire(client.DAEMON_ROLE)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(client.socket_path(home)))  # bound, not listening yet: refused
    threading.Timer(0.3, server.listen, (8,)).start()
    answered = _answer_after(server, 0.4, 1)
    try:
        assert client.request(home, "GET", "/v1/daemon", timeout=20) == {"result": 1}
    finally:
        answered.join(timeout=30)
        server.close()
        lock.release()


def test_a_stale_socket_without_a_daemon_fails_at_once(home):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(client.socket_path(home)))
    stale.close()  # the file stays, nobody listens, nobody holds the lock
    started = time.monotonic()
    with pytest.raises(client.DaemonError, match="no daemon at .*refused"):
        client.request(home, "GET", "/v1/daemon", timeout=20)
    assert time.monotonic() - started < client.RETRY_FOR  # no retrying a dead socket
    assert not client.running(home)


def test_a_connection_closed_without_an_answer_says_the_request_may_have_been_applied(home):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(client.socket_path(home)))
    server.listen(1)

    def read_then_close() -> None:
        connection, _ = server.accept()
        connection.recv(65536)
        connection.close()  # as a daemon killed in the middle of the request

    thread = threading.Thread(target=read_then_close)
    thread.start()
    with pytest.raises(client.Unanswered) as raised:
        client.request(home, "POST", "/v1/import", {"records": []}, timeout=20)
    thread.join(timeout=30)
    server.close()
    assert str(raised.value) == (
        "the daemon stopped before answering POST /v1/import; the request may have been applied"
    )


def test_a_burst_of_parallel_writes_loses_none(daemon):
    """More simultaneous connections than a default listen backlog (5) holds."""
    count = 150
    start = threading.Barrier(count)
    failures = []

    def write(number: int) -> None:
        turn = {
            "session": "burst",
            "role": "user",
            "text": f"burst write {number}",
            "key": f"burst:{number}",
        }
        start.wait(timeout=30)
        try:
            client.request(daemon.home, "POST", "/v1/turns", turn, timeout=60)
        except client.DaemonError as exc:
            failures.append(str(exc))

    writers = [threading.Thread(target=write, args=(n,)) for n in range(count)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=120)
    assert failures == []
    stored = daemon.call("GET", "/v1/turns?session=burst&limit=1000")
    assert sorted(turn["key"] for turn in stored) == sorted(f"burst:{n}" for n in range(count))


def test_a_10_mb_prompt_is_stored_bounded_while_a_search_is_answered(daemon):
    daemon.call("POST", "/v1/memories", {"text": "Uploads retry with exponential backoff"})
    prompt = {"session_id": "huge", "cwd": "/tmp", "prompt": "why?\n" + "z" * 10_000_000}
    searched = []

    def search() -> None:
        searched.append(daemon.call("POST", "/v1/search", {"query": "backoff"}))

    beside = threading.Thread(target=search)
    beside.start()
    daemon.request("POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": prompt})
    beside.join(timeout=120)
    assert [hit["text"] for hit in searched[0]] == ["Uploads retry with exponential backoff"]
    (turn,) = daemon.call("GET", "/v1/turns?session=huge")
    assert turn["text"].startswith("why?\nzzz")
    assert turn["text"].endswith(f"[truncated: kept 200000 of {len(prompt['prompt'])} characters]")


def test_a_daemon_killed_mid_import_is_reported_honestly_and_mended_after_restart(
    home, real_models
):
    """SIGKILL once the import is committed, while the daemon embeds it: the CLI says so
    and sends the import again (recognised: duplicates), and the next daemon embeds every
    row in the background, with nobody running `doctor --repair`."""
    (home / "config.toml").write_text('embedder = "use-m3"\n', encoding="utf-8")
    count = 600
    source = home.parent / f"{home.name}-import.jsonl"
    source.write_text(
        "".join(
            json.dumps({"session": f"imp-{n // 50}", "role": "user", "ts": 1_700_000_000 + n,
                        "text": f"turn {n}: the upload worker retries {n % 7} times"}) + "\n"
            for n in range(count)
        )
    )  # fmt: skip
    daemon = start_daemon(home)
    importing = subprocess.Popen(
        [sys.executable, "-m", "mnemoweave", "import", str(source)],
        env=daemon_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        store = sqlite3.connect(f"file:{home / 'mnemoweave.sqlite'}?mode=ro", uri=True)
        deadline = time.monotonic() + START_WITHIN
        while store.execute("SELECT count(*) FROM turns").fetchone()[0] < count:
            assert time.monotonic() < deadline and importing.poll() is None
            time.sleep(0.01)
        store.close()
        os.kill(daemon.pid, signal.SIGKILL)  # committed, the vectors not yet written
        daemon.wait()
        out, err = importing.communicate(timeout=300)
    finally:
        if importing.poll() is None:
            importing.kill()
            importing.wait(timeout=30)
        daemon.stop()
    assert importing.returncode == 0, err
    assert "the daemon stopped before answering POST /v1/import" in err
    assert out == f"0 turns, 0 memories, 0 merged, {count} duplicate, 0 skipped\n"
    with Engine(home) as engine:
        assert drift(engine)[("use-m3", "turns")] == (count, 0)
    restarted = start_daemon(home)
    try:
        answered = restarted.call("POST", "/v1/search", {"query": "upload worker"})
        deadline = time.monotonic() + 300
        while drift_of(restarted) != {"memories": "consistent", "turns": "consistent"}:
            assert time.monotonic() < deadline, drift_of(restarted)
            time.sleep(0.5)
    finally:
        assert restarted.stop() == 0
    assert isinstance(answered, list)
    log = (home / "logs" / "daemon.log").read_text(encoding="utf-8")
    assert f"vector index (use-m3, turns): embedded {count}, dropped 0" in log


def drift_of(daemon) -> dict[str, str]:
    """Per table, what `doctor` says of the vector index (it repairs nothing)."""
    checks = daemon.call("POST", "/v1/doctor", {})
    prefix = "vector index (use-m3, "
    return {
        c["name"][len(prefix) : -1]: "consistent" if c["ok"] else c["detail"]
        for c in checks
        if c["name"].startswith(prefix)
    }


def test_a_lone_surrogate_in_a_hook_payload_keeps_the_prompt(daemon, monkeypatch):
    from mnemoweave import hook

    monkeypatch.setenv("MNEMOWEAVE_HOME", str(daemon.home))
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "20000")
    raw = b'{"session_id": "sur", "cwd": "/tmp", "prompt": "deploy \\ud800 notes"}'
    assert hook.run("claude-code", "UserPromptSubmit", io.BytesIO(raw), io.StringIO()) == 0
    assert [t["text"] for t in daemon.call("GET", "/v1/turns?session=sur")] == ["deploy ? notes"]
    daemon.stop()  # no daemon, and no time to start one: the prompt is spooled
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")
    raw = raw.replace(b"deploy", b"release")
    assert hook.run("claude-code", "UserPromptSubmit", io.BytesIO(raw), io.StringIO()) == 0
    (spooled,) = (daemon.home / "spool").glob("*.json")
    assert json.loads(spooled.read_text())["payload"]["prompt"] == "release ? notes"
