"""The CLI through the daemon prints what it prints in-process; without a daemon it holds
the one-writer lock; a command that needs the store to itself refuses while one runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from typing import Any

import pytest
from click.testing import CliRunner
from running import make_home, start_daemon

from mnemoweave.cli.main import cli
from mnemoweave.daemon import remote
from mnemoweave.daemon.process import StoreLock
from mnemoweave.hosts import client

SETUP = [
    ["remember", "以后代码注释都用英文，提交信息也用英文", "--kind", "pref"],
    ["remember", "Retry flaky uploads with exponential backoff", "-p", "up", "-t", "net"],
    ["ingest", "-s", "s1", "-r", "user", "-p", "up", "上传大文件一直卡住，我们决定以后都用 httpx"],
    ["ingest", "-s", "s1", "-r", "assistant", "-p", "up", "Fixed: the httpx timeout is 10 s now."],
    ["distill", "--session", "s1"],
    ["skill", "teach", "git-release", "--summary", "Tag and push a release", "--step",
     "git tag v1", "--source-url", "https://git-scm.com/book"],
]  # fmt: skip

# In an order where no output shows a time written during the run (search and weave count
# recalls). Scored commands are compared with scores rounded: decay moves with the clock.
COMMANDS = [
    ["list"], ["list", "--json"], ["list", "--trash"], ["get", "m_1"], ["get", "m_2", "--json"],
    ["get", "t_1"], ["get", "m_1", "--evidence", "--json"], ["get", "c_1", "--evidence"],
    ["pending"], ["pending", "--json", "-p", "up"], ["rehydrate", "--session", "s1"],
    ["rehydrate", "--match", "httpx", "--json"], ["skill", "list"], ["skill", "list", "--json"],
    ["skill", "check", "tag and push a release"], ["skill", "check", "bake bread", "--json"],
    ["classify", "以后都用英文写注释"], ["classify", "I prefer tabs", "--json"], ["hygiene"],
    ["hygiene", "--json"], ["doctor"], ["doctor", "--json"],
    ["search", "注释"], ["search", "backoff", "--json"], ["search", "httpx", "--in", "all"],
    ["search", "httpx", "--in", "turns", "--json", "-p", "up"],
    ["weave", "给上传模块加注释", "--session", "s1", "-p", "up"], ["weave"],
    ["get", "m_99"], ["get", "nonsense"], ["search", " "], ["review", "c_99", "accept"],
    ["rehydrate"], ["list", "-n", "0"], ["forget", "t_1"], ["feedback", "m_99", "useful"],
    ["skill", "load", "unknown"], ["skill", "teach", "Bad Name"],
    ["remember", "Prefer pytest over unittest", "--json"], ["remember", "<private>x</private>"],
    ["ingest", "-s", "s2", "-r", "user", "hello there", "--json"], ["distill", "--json"],
    ["review", "c_1", "accept", "--summary", "Use httpx with a 10 s timeout", "--json"],
    ["review", "c_1", "reject"], ["feedback", "m_1", "useful"], ["feedback", "m_2", "wrong"],
    ["supersede", "m_2", "m_3"], ["forget", "m_1"], ["forget", "m_1"], ["list", "--trash"],
    ["restore", "m_1"], ["purge", "m_3"], ["purge", "--expired"], ["skill", "load", "git-release"],
    ["export", "{home}/out"], ["import", "{home}/out"], ["import", "{home}/missing.md"],
]  # fmt: skip
SCORED = {"search", "weave"}


def _rounded(data):
    if isinstance(data, float):
        return round(data, 4)
    if isinstance(data, dict):
        return {key: _rounded(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_rounded(value) for value in data]
    return data


def run_all(home, commands: list[list[str]]) -> list[tuple[list[str], int, Any, str]]:
    runner = CliRunner()
    seen = []
    for command in commands:
        args = [arg.replace("{home}", str(home)) for arg in command]
        result = runner.invoke(cli, ["--home", str(home), *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            command,
            result.exception,
        )
        out, err = (text.replace(str(home), "HOME") for text in (result.stdout, result.stderr))
        # jieba is set up once per process: in this one, with the first test's data dir
        out = re.sub(r"dictionary \S+/jieba\.sqlite", "dictionary JIEBA", out)
        out = re.sub(r'("detail": ".*; dictionary )[^"]*jieba\.sqlite"', r'\1JIEBA"', out)
        if command[0] in SCORED and "--json" in command:
            out = _rounded(json.loads(out))
        seen.append((command, result.exit_code, out, err))
    return seen


def test_routed_output_equals_in_process_output(tmp_path_factory):
    alone, served = make_home(tmp_path_factory), make_home(tmp_path_factory)
    run_all(alone, SETUP)
    shutil.copytree(alone, served, dirs_exist_ok=True)
    assert not client.running(alone)
    in_process = run_all(alone, COMMANDS)
    daemon = start_daemon(served)
    try:
        routed = run_all(served, COMMANDS)
        asked = daemon.call("GET", "/v1/daemon")["requests"]["total"]
    finally:
        assert daemon.stop() == 0
    for expected, got in zip(in_process, routed, strict=True):
        assert got == expected
    assert asked > len(COMMANDS)  # they did go through the daemon
    codes = {code for _, code, _, _ in routed}
    assert codes == {0, 2}  # successes and bad input


def test_reindex_refuses_while_the_daemon_runs(daemon):
    result = CliRunner().invoke(cli, ["reindex"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: `mnemoweave reindex` needs the store to itself and the daemon "
        f"(pid {daemon.pid}) has it open: run `mnemoweave stop` first\n"
    )


def test_a_second_in_process_writer_waits_then_says_who_holds_the_lock(home, monkeypatch):
    monkeypatch.setattr(remote, "LOCK_WAIT", 0.3)
    holder = StoreLock(home)
    assert holder.acquire("test holder")
    try:
        result = CliRunner().invoke(cli, ["remember", "blocked"])
    finally:
        holder.release()
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the store is busy: pid {os.getpid()} (test holder) holds {home}/store.lock "
        "(waited 0.3s); try again, or `mnemoweave stop` a daemon that hangs\n"
    )
    listed = CliRunner().invoke(cli, ["list", "--json"])
    assert json.loads(listed.stdout) == {"memories": []}


def test_a_waiting_writer_proceeds_once_the_lock_is_free(home):
    holder = StoreLock(home)
    assert holder.acquire("test holder")
    threading.Timer(0.3, holder.release).start()
    result = CliRunner().invoke(cli, ["remember", "written after the wait"])
    assert result.exit_code == 0 and result.stdout == "new m_1\n"


def test_a_writer_waits_through_a_queue_of_holders_longer_than_the_lock_wait(home, monkeypatch):
    """Parallel commands without a daemon: each holds the lock briefly, together longer
    than LOCK_WAIT; the one waiting behind them writes, it does not fail."""
    monkeypatch.setattr(remote, "LOCK_WAIT", 0.5)
    first = StoreLock(home)
    assert first.acquire("writer 0")

    def pass_on(current: StoreLock, left: int) -> None:
        nxt = StoreLock(home)
        current.release()
        if left and nxt.acquire(f"writer {left}", wait=5):
            threading.Timer(0.3, pass_on, (nxt, left - 1)).start()

    threading.Timer(0.3, pass_on, (first, 5)).start()  # held ~1.8 s in all, 0.3 s each
    result = CliRunner().invoke(cli, ["remember", "written after the queue"])
    assert result.exit_code == 0 and result.stdout == "new m_1\n"


@pytest.mark.parametrize("command", [["list"], ["remember", "held while it runs"]])
def test_in_process_commands_hold_the_lock(home, monkeypatch, command):
    seen = []
    from mnemoweave import engine

    opened = engine.Engine.__enter__

    def spy(self):
        seen.append(client.lock_holder(home))
        return opened(self)

    monkeypatch.setattr(engine.Engine, "__enter__", spy)
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0, result.output
    assert seen == [(os.getpid(), f"mnemoweave {command[0]}")]
    assert client.lock_holder(home) is None
