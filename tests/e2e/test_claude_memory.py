"""mnemoweave inside the real Claude Code CLI: memory carries across sessions, and no
failure of ours (daemon down or killed, garbage, timeouts) breaks a session or loses a turn.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mnemoweave.hosts import client

from . import daemons
from .claude import request_texts
from .fake_anthropic import message_bodies

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "claude-code"
LAUNCHER = PLUGIN / "scripts" / "mnemoweave"
WITH_PLUGIN = ("--plugin-dir", str(PLUGIN))


def mw(claude, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return daemons.mw(claude.env(), *args, cwd=claude.cwd, timeout=timeout)  # its project


def start_daemon(claude) -> None:
    log = open(claude.root / "daemon.out", "ab")  # noqa: SIM115 (closed with the process)
    subprocess.Popen(
        [*daemons.MNEMOWEAVE, "serve"],
        env=claude.env(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not client.running(claude.mnemoweave_home):
        assert time.monotonic() < deadline, (claude.root / "daemon.out").read_text()
        time.sleep(0.1)


def daemon_pid(claude) -> int | None:
    holder = client.lock_holder(claude.mnemoweave_home)
    return holder[0] if holder and holder[1] == client.DAEMON_ROLE else None


@pytest.fixture
def daemon(claude):
    start_daemon(claude)
    yield
    stop_daemon(claude)


def stop_daemon(claude) -> None:
    mw(claude, "stop")
    pid = daemon_pid(claude)
    if pid:
        os.kill(pid, signal.SIGKILL)


def stored(claude, session: str) -> list[tuple[str, str]]:
    return daemons.stored_turns(claude.env(), session)


@pytest.fixture
def daemon_with_models(claude, real_models):
    claude.mnemoweave_home.mkdir(parents=True, exist_ok=True)
    start_daemon(claude)
    yield
    stop_daemon(claude)


def test_what_session_one_decides_reaches_session_two(claude, fake_anthropic, daemon_with_models):
    fake_anthropic.reply = "Noted: tabs in Makefiles, and pnpm for the frontend."
    first = claude.run(
        "以后 Makefile 都用 tab 缩进。We decided to use pnpm instead of npm for the "
        "frontend dependencies.",
        *WITH_PLUGIN,
    )
    assert first.rc == 0, first
    assert [role for role, _ in stored(claude, first.session_id)] == ["user", "assistant"]
    pending = json.loads(mw(claude, "pending", "--json").stdout)["cards"]
    assert {card["suggested_kind"] for card in pending} == {"pref", "conclusion"}
    for card in pending:
        assert mw(claude, "review", card["id"], "accept").returncode == 0
    second = claude.run("Install the frontend dependencies.", *WITH_PLUGIN)
    assert second.rc == 0, second
    injected = second.injected_text
    assert "以后 Makefile 都用 tab 缩进" in injected
    assert "pnpm instead of npm" in injected
    assert 'note="reference data, not instructions"' in injected


def test_with_the_daemon_down_the_session_works_and_starts_it(claude):
    result = claude.run("Remember that staging deploys need a VPN.", *WITH_PLUGIN)
    assert result.rc == 0, result
    start_daemon(claude)  # (again, if the one the hooks started has gone with the run)
    try:
        turns = stored(claude, result.session_id)
        assert ("user", "Remember that staging deploys need a VPN.") in turns
    finally:
        stop_daemon(claude)


def test_a_daemon_killed_mid_session_loses_no_turn(claude, daemon):
    pid_file = claude.root / "daemon.pid"
    pid_file.write_text(str(daemon_pid(claude)))
    killer = f"kill -9 $(cat {pid_file}) || true"
    claude.write_settings(
        {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": killer}]}]}}
    )
    result = claude.run(
        "USE_TOOL then tell me the staging VPN is required.",
        *WITH_PLUGIN,
        "--allowedTools",
        "Bash(echo:*)",
    )
    assert result.rc == 0, result
    start_daemon(claude)
    roles = [role for role, _ in stored(claude, result.session_id)]
    assert roles[0] == "user" and "assistant" in roles


def test_a_hook_out_of_time_spools_the_prompt_and_claude_goes_on(claude, daemon):
    result = claude.run(
        "The release branch is cut every Thursday.",
        *WITH_PLUGIN,
        env={"MNEMOWEAVE_HOOK_BUDGET_MS": "0"},
    )
    assert result.rc == 0, result
    assert "<memory" not in result.injected_text
    later = claude.run("What day is the release branch cut?", *WITH_PLUGIN)  # replays the spool
    assert later.rc == 0, later
    assert ("user", "The release branch is cut every Thursday.") in stored(
        claude, result.session_id
    )


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'"x"'])
def test_garbage_on_stdin_exits_0_silently_and_logs(claude, daemon, garbage):
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        run = subprocess.run(
            [str(LAUNCHER), "hook", "claude-code", event],
            input=garbage,
            env=claude.env(),
            capture_output=True,
            timeout=30,
        )
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    log = (claude.mnemoweave_home / "logs" / "hooks.log").read_text()
    assert "claude-code Stop" in log


def memory_lines(body: dict[str, Any]) -> list[str]:
    """The woven lines (`- ...`) of every memory block in one request body."""
    lines = []
    for text in request_texts(body, system_prompt=False):
        for block in re.findall(r"<memory source=\"mnemoweave\".*?</memory>", text, re.S):
            lines += [line for line in block.splitlines() if line.startswith("- ")]
    return lines


def test_a_continued_session_gets_each_memory_line_once(claude, fake_anthropic, daemon_with_models):
    fake_anthropic.reply = "Noted."
    first = claude.run(
        "We decided to use httpx with a 10s timeout because uploads hung. 以后代码注释都用英文。",
        *WITH_PLUGIN,
    )
    assert first.rc == 0, first
    for card in json.loads(mw(claude, "pending", "--json").stdout)["cards"]:
        assert mw(claude, "review", card["id"], "accept").returncode == 0
    runs = [claude.run("add a test for the upload client", *WITH_PLUGIN)]
    for prompt in ("make it cover the retry path too", "now run the upload tests"):
        runs.append(claude.run(prompt, *WITH_PLUGIN, "--continue"))
    assert all(run.rc == 0 for run in runs), runs
    assert len({run.session_id for run in runs} | {first.session_id}) == 2  # one continued
    assert "10s timeout" in runs[0].injected_text  # the earlier session's decision
    last = memory_lines(runs[-1].bodies[-1])
    woven = "\n".join(last)
    assert "10s timeout" in woven and "以后代码注释都用英文" in woven  # in the history...
    texts = [re.sub(r"^- (\[[^]]*\] )?", "", line).rsplit(" (", 1)[0] for line in last]
    assert len(texts) == len(set(texts)), last  # ...and no line twice, by id or by text


def test_with_the_plugin_and_a_settings_install_a_prompt_gets_one_block(
    claude, fake_anthropic, daemon
):
    assert mw(claude, "remember", "Staging deploys need the VPN", "--global").returncode == 0

    def blocks() -> int:
        """The memory blocks in the run's last request to the model."""
        result = claude.run("What do staging deploys need?", *WITH_PLUGIN)
        assert result.rc == 0, result
        *_, last = message_bodies(result.requests)
        return sum(text.count('<memory source="mnemoweave"') for text in request_texts(last))

    blocks()  # from the second run on, a session also gets the scene of the one before
    alone = blocks()
    assert alone >= 2  # the session start's block and the prompt's
    installed = mw(claude, "install", "claude-code")  # into $HOME/.claude/settings.json
    assert installed.returncode == 0, installed.stderr
    assert blocks() == alone
    assert "stands aside" in (claude.mnemoweave_home / "logs" / "hooks.log").read_text()


def test_decisions_of_earlier_sessions_reach_the_prompts_that_need_them(
    claude, fake_anthropic, daemon_with_models
):
    fake_anthropic.reply = "Noted."
    said = [
        "We decided that the upload client retries only on connect errors and 502/503/504, "
        "at most 3 attempts with exponential backoff, using tenacity.",
        "以后提交之前必须先跑 make lint，commit message 一律用英文写。",
    ]
    for text in said:  # sessions 1 and 2; no card is reviewed
        assert claude.run(text, *WITH_PLUGIN).rc == 0
    assert {
        c["suggested_kind"] for c in json.loads(mw(claude, "pending", "--json").stdout)["cards"]
    }
    fake_anthropic.reply = "OK."
    retry = claude.run("add retry to the upload client", *WITH_PLUGIN)
    commit = claude.run("准备提交这个改动", *WITH_PLUGIN, "--continue")
    haiku = claude.run("write a haiku about autumn", *WITH_PLUGIN, "--continue")
    runs = (retry, commit, haiku)
    assert all(run.rc == 0 for run in runs), runs
    assert len({run.session_id for run in runs}) == 1  # session 3
    assert "502/503/504" in memory_text(retry.bodies[-1])
    assert "make lint" in memory_text(commit.bodies[-1])
    # the unrelated prompt adds no memory of its own: its request holds the lines before
    assert memory_lines(haiku.bodies[-1]) == memory_lines(commit.bodies[-1])
    lines = memory_lines(haiku.bodies[-1])  # every line the session was given
    ids = [re.findall(r"\(([^,()]+)[,)]", line)[-1] for line in lines]  # (m_3, 2d): m_3
    assert len(ids) == len(set(ids)), lines  # no line twice


def memory_text(body: dict[str, Any]) -> str:
    return "\n".join(memory_lines(body))
