"""The daemon's life: one per data dir, a private socket, graceful SIGTERM, idle shutdown,
`stop`, `status`, and `ensure_daemon` starting it within a budget."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from running import START_WITHIN, STOP_WITHIN, daemon_env, start_daemon

from mnemoweave.capture.file_formats import collect
from mnemoweave.cli.main import cli
from mnemoweave.daemon.wire import encode
from mnemoweave.hosts import client


def test_socket_is_private_and_pid_file_names_the_daemon(daemon):
    mode = os.stat(client.socket_path(daemon.home)).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert (daemon.home / "daemon.pid").read_text().strip() == str(daemon.pid)
    assert client.lock_holder(daemon.home) == (daemon.pid, "daemon")


def test_a_second_daemon_on_the_same_home_refuses(daemon):
    second = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "serve"],
        env=daemon_env(daemon.home),
        capture_output=True,
        text=True,
        timeout=START_WITHIN,
    )
    assert second.returncode == 1
    assert second.stderr.strip() == (
        f"Error: a daemon already serves {daemon.home} (pid {daemon.pid}); "
        "`mnemoweave stop` stops it"
    )
    assert client.running(daemon.home)  # the first one is untouched


def test_sigterm_while_a_write_is_in_flight_loses_nothing(home):
    turns = home / "turns.jsonl"
    n = 3000
    lines = (
        {"session": f"s{i % 7}", "role": "user", "text": f"第 {i} 条：以后用 pytest 跑测试 {i}"}
        for i in range(n)
    )
    turns.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")
    daemon = start_daemon(home)
    answer = {}

    def import_all() -> None:
        try:
            records = [encode(record) for record in collect(turns).records]
            answer["ok"] = daemon.call("POST", "/v1/import", {"records": records})
        except client.DaemonError as exc:
            answer["error"] = exc

    writer = threading.Thread(target=import_all)
    writer.start()
    deadline = time.monotonic() + 30
    while daemon.call("GET", "/v1/daemon")["requests"]["in_flight"] < 1:
        assert time.monotonic() < deadline, "the import never started"
        time.sleep(0.01)
    daemon.process.send_signal(signal.SIGTERM)
    writer.join(timeout=STOP_WITHIN * 3)
    assert not writer.is_alive()
    assert daemon.stop() == 0
    assert answer.get("ok", {}).get("turns") == n, answer
    assert not os.path.exists(client.socket_path(home)) and not (home / "daemon.pid").exists()
    assert client.lock_holder(home) is None
    log = (home / "logs" / "daemon.log").read_text(encoding="utf-8")
    assert "SIGTERM: stopping" in log and "stopped after" in log
    from mnemoweave import Engine

    with Engine(home) as engine:
        assert engine.status()["counts"]["turns"] == n


def test_idle_daemon_shuts_itself_down(home):
    daemon = start_daemon(home, MNEMOWEAVE_DAEMON_IDLE_MINUTES="0.01")  # 0.6 s
    assert daemon.wait(timeout=STOP_WITHIN) == 0
    assert not os.path.exists(client.socket_path(home)) and not (home / "daemon.pid").exists()
    log = (home / "logs" / "daemon.log").read_text(encoding="utf-8")
    assert "idle for 0.01 minutes: stopping" in log


def test_stop_then_stop_again(daemon):
    runner = CliRunner()
    stopped = runner.invoke(cli, ["stop"], catch_exceptions=False)
    assert stopped.exit_code == 0, stopped.output
    assert stopped.output.startswith(f"stopped the daemon (pid {daemon.pid}) in ")
    assert daemon.wait() == 0
    again = runner.invoke(cli, ["stop"], catch_exceptions=False)
    assert again.exit_code == 0 and again.output == "the daemon is not running\n"


def test_stop_clears_a_stale_pid_file(home):
    (home / "daemon.pid").write_text("999999\n")
    result = CliRunner().invoke(cli, ["stop"], catch_exceptions=False)
    assert result.output == "the daemon is not running (removed a stale pid file)\n"
    assert not (home / "daemon.pid").exists()


def test_status_shows_the_daemon_or_says_it_is_not_running(home):
    runner = CliRunner()
    alone = runner.invoke(cli, ["status"], catch_exceptions=False)
    assert "daemon    not running" in alone.output
    assert json.loads(runner.invoke(cli, ["status", "--json"]).output)["daemon"] is None
    daemon = start_daemon(home)
    try:
        data = json.loads(runner.invoke(cli, ["status", "--json"]).output)
        state = data["daemon"]
        assert state["pid"] == daemon.pid
        assert state["socket"] == str(client.socket_path(home))
        assert state["uptime"] >= 0 and state["started"].endswith("Z")
        assert state["requests"]["total"] >= 1 and state["last_error"] is None
        assert data["counts"] == {"turns": 0, "memories": 0, "cards": 0, "skills": 0}
        text = runner.invoke(cli, ["status"], catch_exceptions=False).output
        assert f"daemon    pid {daemon.pid}, up " in text and "last error: none" in text
    finally:
        assert daemon.stop() == 0


@pytest.fixture
def started_elsewhere(home):
    """Stops whatever daemon the test started through ensure_daemon."""
    yield home
    from mnemoweave.daemon.process import stop

    done, message = stop(home, STOP_WITHIN)
    assert done, message


def test_ensure_daemon_starts_one_within_its_budget(started_elsewhere, monkeypatch):
    home = started_elsewhere
    monkeypatch.setenv("MNEMOWEAVE_EMBEDDER", "none")
    began = time.monotonic()
    assert client.ensure_daemon(home, budget_seconds=START_WITHIN)
    assert time.monotonic() - began < START_WITHIN
    assert client.running(home)
    pid = client.request(home, "GET", "/v1/daemon")["result"]["pid"]
    assert client.ensure_daemon(home, budget_seconds=1.0)  # already up: no second one
    assert client.request(home, "GET", "/v1/daemon")["result"]["pid"] == pid


def test_ensure_daemon_gives_up_at_its_budget(home, monkeypatch):
    monkeypatch.setenv("MNEMOWEAVE_BIN", str(home / "no-such-mnemoweave"))
    began = time.monotonic()
    assert not client.ensure_daemon(home, budget_seconds=0.5)
    assert time.monotonic() - began < 5


def test_daemon_command_needs_no_path(monkeypatch, tmp_path):
    monkeypatch.setenv("MNEMOWEAVE_BIN", "/opt/mw/bin/mnemoweave")
    assert client.daemon_command() == ["/opt/mw/bin/mnemoweave"]
    monkeypatch.delenv("MNEMOWEAVE_BIN")
    beside = os.path.join(os.path.dirname(sys.executable), "mnemoweave")
    assert client.daemon_command() == [beside]  # the venv's console script
    run_as_module = type(sys)("__main__")
    run_as_module.__spec__ = importlib.util.find_spec("mnemoweave.__main__")
    with monkeypatch.context() as patch:  # `python -m mnemoweave`: the daemon is run so too
        patch.setitem(sys.modules, "__main__", run_as_module)
        assert client.daemon_command() == [sys.executable, "-m", "mnemoweave"]
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert client.daemon_command() == [str(tmp_path / "python"), "-m", "mnemoweave"]


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_another_user_cannot_connect_to_the_socket(daemon):
    where = str(client.socket_path(daemon.home))
    probe = (
        "import os, socket\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({where!r}); print('connected')\n"
        "except PermissionError:\n"
        "    print('refused')\n"
    )
    for folder in [daemon.home, *daemon.home.parents]:  # the other user may reach the file
        if folder == Path(tempfile.gettempdir()):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o011)

    def attempt() -> str:
        run = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30
        )
        return run.stdout.strip() or run.stderr

    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600
    assert attempt() == "refused"
    os.chmod(where, 0o666)  # the control: the same user gets in once the mode allows it
    assert attempt() == "connected"


def test_a_daemon_mends_the_vector_index_a_crash_left_behind(home, real_models):
    """SIGKILL between SQLite's commit and the vector write leaves rows without vectors;
    the next daemon embeds them itself, with nobody running `doctor --repair`."""
    from mnemoweave import Engine
    from mnemoweave.upkeep.indexing import drift

    (home / "config.toml").write_text('embedder = "use-m3"\n', encoding="utf-8")
    with Engine(home) as engine:
        engine.remember("The uploader needs httpx timeouts of 10 s")
        engine.ingest("s1", "user", "以后代码注释都用英文")
        engine.ingest("s1", "assistant", "Noted: comments in English.")
        channel = engine.channels[0]
        channel.index.delete("turns", ["t_1", "t_2"])  # committed, never embedded
        channel.index.delete("memories", ["m_1"])
        assert drift(engine)[("use-m3", "turns")] == (2, 0)
    daemon = start_daemon(home)
    try:
        deadline = time.monotonic() + START_WITHIN
        while True:
            doctor = daemon.call("POST", "/v1/doctor", {})
            checks = {c["name"]: c for c in doctor}
            vectors = [c for name, c in checks.items() if name.startswith("vector index")]
            if vectors and all(c["ok"] for c in vectors):
                break
            assert time.monotonic() < deadline, vectors
            time.sleep(0.2)
        log = (home / "logs" / "daemon.log").read_text(encoding="utf-8")
        assert "vector index (use-m3, turns): embedded 2, dropped 0" in log
        assert "vector index (use-m3, memories): embedded 1, dropped 0" in log
        hits = daemon.call(
            "POST",
            "/v1/search",
            {"query": "code comments in English", "mode": "dense", "source": "turns"},
        )
        assert "t_1" in [hit["id"] for hit in hits]
    finally:
        assert daemon.stop() == 0
