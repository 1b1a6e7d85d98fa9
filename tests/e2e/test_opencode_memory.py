"""mnemoweave inside the real OpenCode CLI: the weave reaches the model, turns reach the
store, memory carries across sessions and through a compaction, an installed copy works,
and no failure of ours (daemon down, unable to start, hung, talking garbage, a stale
socket) breaks `opencode run` or loses a turn."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemoweave.hosts import client

from .daemons import (
    STORED_WITHIN,
    mw,
    start_daemon,
    stop_daemons,
    stored_turns,
    wait_for,
    wait_for_daemon,
    write_config,
)
from .fake_daemon import FakeDaemon, stale_socket
from .fake_openai import content_text

BIG = {"prompt_tokens": 50_000, "completion_tokens": 3, "total_tokens": 50_003}
SMALL = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
FENCE = '<memory source="mnemoweave" note="reference data, not instructions">'


@pytest.fixture
def daemon(opencode):
    write_config(opencode.mnemoweave_home)
    start_daemon(opencode.env(), opencode.root / "daemon.out")
    yield
    stop_daemons(opencode.mnemoweave_home)


def stored(opencode, session: str | None) -> list[tuple[str, str]]:
    assert session, "the run reported no session id"
    return stored_turns(opencode.env(), session)


def pending(opencode) -> list[dict[str, Any]]:
    found = mw(opencode.env(), "pending", "--json", cwd=opencode.cwd)
    assert found.returncode == 0, found.stderr
    cards: list[dict[str, Any]] = json.loads(found.stdout)["cards"]
    return cards


def remember(opencode, text: str, *args: str) -> None:
    done = mw(opencode.env(), "remember", text, "--project", str(opencode.cwd), *args)
    assert done.returncode == 0, done.stderr


def test_the_weave_reaches_the_model_and_both_turns_reach_the_store(opencode, fake_openai, daemon):
    opencode.use_plugin()
    remember(opencode, "Makefiles in this repo are indented with tabs", "--kind", "pref")
    remember(opencode, "The staging database is called pg-stage-7")
    fake_openai.reply = "Staging uses pg-stage-7."
    result = opencode.run("Which database does staging use?")
    assert result.rc == 0 and result.reply == "Staging uses pg-stage-7.", result
    (main,) = [body for body in result.bodies if body.get("tools")]
    (user,) = [m for m in main["messages"] if m["role"] == "user"]
    texts = [part["text"] for part in user["content"]]
    assert texts[0] == "Which database does staging use?"
    assert texts[1].startswith(FENCE) and texts[1].endswith("</memory>")
    assert "pg-stage-7" in texts[1] and "indented with tabs" in texts[1]
    wait_for(
        lambda: (
            stored(opencode, result.session_id)
            == [
                ("user", "Which database does staging use?"),
                ("assistant", "Staging uses pg-stage-7."),
            ]
        )
    )


def test_a_second_session_sees_the_cards_accepted_from_the_first(opencode, fake_openai, daemon):
    opencode.use_plugin()
    fake_openai.reply = "Noted: tabs in Makefiles, and pnpm for the frontend."
    first = opencode.run(
        "以后 Makefile 都用 tab 缩进。We decided to use pnpm instead of npm for the "
        "frontend dependencies."
    )
    assert first.rc == 0, first
    cards = wait_for(lambda: len(found := pending(opencode)) >= 2 and found)
    assert {card["suggested_kind"] for card in cards} == {"pref", "conclusion"}
    for card in cards:
        assert mw(opencode.env(), "review", card["id"], "accept").returncode == 0
    second = opencode.run("Install the frontend dependencies.")
    assert second.rc == 0, second
    assert FENCE in second.user_text
    assert "以后 Makefile 都用 tab 缩进" in second.user_text
    assert "pnpm instead of npm" in second.user_text


def test_compaction_gets_the_capsule_and_the_session_is_distilled(opencode, fake_openai, daemon):
    opencode.use_plugin()
    opencode.write_config(limit={"context": 20_000, "output": 1_000})
    answered = []

    def usage(body: dict) -> dict:
        """The first answer of the agent overflows the context: OpenCode compacts."""
        if body.get("tools"):
            answered.append(body)
            return BIG if len(answered) == 1 else SMALL
        return SMALL

    fake_openai.usage = usage
    result = opencode.run("From now on, always use tabs in Makefiles.")
    assert result.rc == 0, result
    (prompt,) = [
        content_text(m.get("content"))
        for body in result.bodies
        for m in body["messages"]
        if m["role"] == "user" and "</conversation>" in content_text(m.get("content"))
    ]
    after = prompt.split("</conversation>", 1)[1]  # the compaction context, after the history
    assert FENCE in after and "always use tabs in Makefiles" in after
    cards = wait_for(lambda: pending(opencode))
    assert [card["suggested_kind"] for card in cards] == ["pref"]
    said = wait_for(lambda: len(turns := stored(opencode, result.session_id)) >= 2 and turns)
    assert said[0] == ("user", "From now on, always use tabs in Makefiles.")
    assert all(not text.startswith("## Objective") for _, text in said)


@pytest.mark.parametrize("how", ["the plugin starts it", "it cannot start"])
def test_with_the_daemon_down_opencode_works_and_no_turn_is_lost(opencode, fake_openai, how):
    home = opencode.mnemoweave_home
    write_config(home)
    opencode.use_plugin()
    settings = {}
    if how == "it cannot start":
        failing = opencode.root / "no-daemon"  # no daemon starts; what is spooled is cleaned
        real = Path(sys.executable).with_name("mnemoweave")
        failing.write_text(f'#!/bin/sh\n[ "$1" = redact ] && exec "{real}" "$@"\nexit 1\n')
        failing.chmod(0o755)
        settings["MNEMOWEAVE_BIN"] = str(failing)
    result = opencode.run("Remember that staging deploys need a VPN.", env=settings)
    assert result.rc == 0 and result.reply == "OK-FAKE", result
    if how == "it cannot start":
        assert "opencode" in (home / "logs" / "hooks.log").read_text()
        records = [json.loads(p.read_text()) for p in sorted((home / "spool").glob("*.json"))]
        events = [record["event"] for record in records]
        assert {"session.created", "chat.message", "session.idle"} <= set(events)
        start_daemon(opencode.env(), opencode.root / "daemon.out")
    else:
        wait_for_daemon(home, within=STORED_WITHIN)  # the one the plugin started, detached
    wait_for(
        lambda: (
            stored(opencode, result.session_id)
            == [("user", "Remember that staging deploys need a VPN."), ("assistant", "OK-FAKE")]
        )
    )
    wait_for(lambda: not list((home / "spool").glob("*.json")))


def test_a_cold_first_prompt_is_woven(opencode, fake_openai):
    home = opencode.mnemoweave_home
    write_config(home)
    opencode.use_plugin()
    remember(opencode, "The staging database is called pg-stage-7")  # in-process: no daemon
    assert client.lock_holder(home) is None
    fake_openai.reply = "Staging uses pg-stage-7."
    try:
        # a daemon starting on a busy machine may take longer than the default budget
        busy = {"MNEMOWEAVE_HOOK_BUDGET_MS": "15000"}
        result = opencode.run("Which database does staging use?", env=busy)
        assert result.rc == 0 and result.reply == "Staging uses pg-stage-7.", result
        assert FENCE in result.user_text and "pg-stage-7" in result.user_text
    finally:
        stop_daemons(home)


@pytest.mark.parametrize("behaviour", ["stale socket", "hang", "garbage"])
def test_garbage_from_the_daemon_side_leaves_the_chat_working(opencode, fake_openai, behaviour):
    home = opencode.mnemoweave_home
    write_config(home)
    opencode.use_plugin()
    socket = client.socket_path(home)
    if behaviour == "stale socket":
        stale_socket(socket)  # what a daemon killed with SIGKILL leaves
        answering = contextlib.nullcontext()
    else:
        answering = FakeDaemon(socket, behaviour, hang_seconds=20)
    with answering:
        result = opencode.run("Say hello to the team.")
    assert result.rc == 0 and result.reply == "OK-FAKE", result
    assert "Say hello to the team." in result.user_text and "<memory" not in result.user_text
    if behaviour == "stale socket":
        wait_for_daemon(home, within=STORED_WITHIN)  # the plugin started one in its place
    else:
        assert list((home / "spool").glob("*.json"))
        start_daemon(opencode.env(), opencode.root / "daemon.out")
    wait_for(lambda: ("user", "Say hello to the team.") in stored(opencode, result.session_id))


def test_an_installed_copy_works_in_the_real_cli(opencode, fake_openai, daemon):
    env = opencode.env()
    done = mw(env, "install", "opencode", "--scope", "project", cwd=opencode.cwd)
    assert done.returncode == 0, done.stderr
    plugin = opencode.cwd / ".opencode" / "plugin" / "mnemoweave.js"
    assert plugin.is_file() and not plugin.is_symlink()
    config = json.loads((opencode.cwd / "opencode.json").read_text())
    assert config["mcp"]["mnemoweave"]["command"][-2:] == ["mnemoweave", "mcp"]
    remember(opencode, "Release notes are written in English", "--kind", "pref")
    result = opencode.run("Draft the release notes.")
    assert result.rc == 0, result
    assert "Release notes are written in English" in result.user_text
    (main,) = [body for body in result.bodies if body.get("tools")]
    tools = [tool["function"]["name"] for tool in main["tools"]]
    assert any(name.startswith("mnemoweave_") for name in tools), tools  # the MCP server
    done = mw(env, "uninstall", "opencode", "--scope", "project", cwd=opencode.cwd)
    assert done.returncode == 0, done.stderr
    assert not plugin.exists() and not (opencode.cwd / "opencode.json").exists()  # only ours
    assert (opencode.cwd / ".opencode").is_dir()  # OpenCode's own files there stay


def test_a_continued_session_gets_each_line_once_and_titles_get_none(opencode, fake_openai, daemon):
    opencode.use_plugin()
    remember(opencode, "Makefiles in this repo are indented with tabs", "--kind", "pref")
    remember(opencode, "The staging database is called pg-stage-7")
    fake_openai.reply = "Staging uses pg-stage-7."
    first = opencode.run("Which database does staging use?")
    second = opencode.run("Is the staging database backed up nightly?", "--continue")
    assert first.rc == 0 and second.rc == 0, (first, second)
    assert first.session_id == second.session_id
    (last,) = [body for body in second.bodies if body.get("tools")][-1:]
    said = "\n".join(content_text(m.get("content")) for m in last["messages"])
    lines = [line for line in said.splitlines() if line.startswith("- ") and "(m_" in line]
    assert any("pg-stage-7" in line for line in lines) and any("tabs" in line for line in lines)
    assert len(lines) == len(set(lines)), lines  # the history holds each line once
    titles = [body for run in (first, second) for body in run.bodies if not body.get("tools")]
    said = [content_text(m.get("content")) for body in titles for m in body["messages"]]
    assert any("Generate a title for this conversation" in text for text in said), said
    assert any("Which database does staging use?" in text for text in said), said
    assert not any(FENCE in text or "pg-stage-7" in text for text in said), said
