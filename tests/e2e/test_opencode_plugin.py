"""The OpenCode plugin without OpenCode, against a real daemon and against things that are
not one: what it sends and puts into the chat, its budgets, the spool it writes (hook.py's
format), payloads in flight at exit, and starting the daemon. Each test runs in node and in
the Bun that OpenCode is built on (its binary runs as `bun` with BUN_BE_BUN=1)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemoweave.hosts import client

from . import daemons
from .daemons import mw, start_daemon, stop_daemons, wait_for_daemon, write_config
from .fake_daemon import FakeDaemon

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "opencode" / "mnemoweave.js"
DRIVE = Path(__file__).with_name("opencode_drive.mjs")
NODE = shutil.which("node")
SESSION = "ses_plugin0001"
WITHIN = 30.0


@pytest.fixture(params=["node", "bun"])
def runtime(request: pytest.FixtureRequest) -> tuple[list[str], dict[str, str]]:
    """How to run the driver: node, or OpenCode's own Bun."""
    if request.param == "bun":
        opencode = request.getfixturevalue("opencode_cli")
        return [str(opencode.executable)], {"BUN_BE_BUN": "1"}
    if NODE is None:
        pytest.skip("node is not installed")
    return [NODE], {}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / ".git").mkdir(parents=True)
    return path


@pytest.fixture
def env(tmp_path: Path, mnemoweave_home: Path) -> Iterator[dict[str, str]]:
    """The plugin's environment; any daemon of the data dir is stopped at the end."""
    write_config(mnemoweave_home)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
    yield clean | {"HOME": str(tmp_path / "user"), "MNEMOWEAVE_HOME": str(mnemoweave_home)}
    stop_daemons(mnemoweave_home)


@pytest.fixture
def daemon(env: dict[str, str], mnemoweave_home: Path, tmp_path: Path):
    start_daemon(env, tmp_path / "daemon.out")
    yield
    stop_daemons(mnemoweave_home)


@pytest.fixture
def drive(runtime, env: dict[str, str], repo: Path):
    """``drive(steps, messages=(), plugin=PLUGIN, **settings)``: the plugin through `steps`
    in the runtime (bounded), with `settings` added to the environment; one result per
    step."""
    command, extra = runtime

    def run(
        steps: list[dict[str, Any]], messages=(), plugin: Path = PLUGIN, **settings: str
    ) -> list[dict[str, Any]]:
        spec = {
            "plugin": str(plugin),
            "directory": str(repo),
            "worktree": str(repo),
            "messages": list(messages),
            "steps": steps,
        }
        done = subprocess.run(
            [*command, str(DRIVE)],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            timeout=WITHIN,
            env=env | extra | settings,
            check=False,
            umask=0o022,  # the usual one: the plugin keeps its files private by itself
        )
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    return run


def event(kind: str, **properties: Any) -> dict[str, Any]:
    return {"event": {"type": kind, "properties": properties}}


def assistant(message: str, text: str, **info: Any) -> list[dict[str, Any]]:
    """The events OpenCode sends for an assistant message with one text part."""
    base = {"id": message, "sessionID": SESSION, "role": "assistant", **info}
    part = {"id": f"prt_{message}", "messageID": message, "sessionID": SESSION, "type": "text"}
    return [
        event("message.updated", sessionID=SESSION, info=base),
        event("message.part.updated", sessionID=SESSION, part={**part, "text": ""}),
        event("message.part.updated", sessionID=SESSION, part={**part, "text": text}),
    ]


def chat(text: str, message: str = "msg_user1") -> dict[str, Any]:
    return {"chat": {"sessionID": SESSION, "messageID": message, "text": text}}


def said(env: dict[str, str], session: str = SESSION) -> list[tuple[str, str]]:
    return daemons.stored_turns(env, session)


def spooled(home: Path) -> list[Path]:
    return sorted((home / "spool").glob("*.json"))


def test_a_message_gets_the_weave_and_the_turns_are_stored(drive, env, repo, daemon):
    assert (
        mw(env, "remember", "Staging deploys need the VPN", "--project", str(repo)).returncode == 0
    )
    assert mw(env, "remember", "以后代码注释都用英文", "--kind", "pref", "--global").returncode == 0
    results = drive(
        [
            event(
                "session.created", sessionID=SESSION, info={"id": SESSION, "directory": str(repo)}
            ),
            chat("How do staging deploys work?"),
            *assistant("msg_a1", "Through the VPN, as noted."),
            event("session.idle", sessionID=SESSION),
        ],
    )
    parts = results[1]["parts"]
    assert len(parts) == 2 and parts[1]["synthetic"] is True and parts[1]["type"] == "text"
    assert parts[1]["id"] > parts[0]["id"]  # OpenCode orders parts by id: after the prompt
    assert {parts[1]["sessionID"], parts[1]["messageID"]} == {SESSION, "msg_user1"}
    woven = parts[1]["text"]
    assert woven.startswith('<memory source="mnemoweave"') and woven.endswith("</memory>")
    assert "Staging deploys need the VPN" in woven and "以后代码注释都用英文" in woven
    assert said(env) == [
        ("user", "How do staging deploys work?"),
        ("assistant", "Through the VPN, as noted."),
    ]
    assert spooled(Path(env["MNEMOWEAVE_HOME"])) == []


def test_the_clients_message_list_stands_in_when_no_event_was_seen(drive, env, repo, daemon):
    def message(ident: str, role: str, text: str, **info) -> dict:
        part = {"id": f"prt_{ident}", "type": "text", "text": text}
        return {"info": {"id": ident, "sessionID": SESSION, "role": role, **info}, "parts": [part]}

    listed = [
        message("msg_u0", "user", "earlier question"),
        message("msg_a0", "assistant", "an earlier answer"),
        message("msg_u1", "user", "Use pnpm, not npm."),
        message("msg_a1", "assistant", "Switched the scripts to pnpm."),
        message("msg_s1", "assistant", "## Objective ...", summary=True, mode="compaction"),
    ]
    drive(
        [chat("Use pnpm, not npm.", "msg_u1"), event("session.idle", sessionID=SESSION)],
        messages=listed,
    )
    assert said(env) == [
        ("user", "Use pnpm, not npm."),
        ("assistant", "Switched the scripts to pnpm."),
    ]


def test_compaction_gets_the_session_capsule_and_a_summary_is_not_a_turn(drive, env, repo, daemon):
    results = drive(
        [
            chat("We are migrating the uploader from requests to httpx."),
            {"compacting": {"sessionID": SESSION}},
            *assistant("msg_s1", "## Objective\n- migrate", summary=True, mode="compaction"),
            *assistant("msg_a2", "Migration started."),
            event("session.compacted", sessionID=SESSION),
            event("session.idle", sessionID=SESSION),
        ],
    )
    (context,) = results[1]["context"]
    assert "## scene" in context and "migrating the uploader" in context
    assert [role for role, _ in said(env)] == ["user", "assistant"]


def test_without_a_daemon_the_payloads_are_spooled_as_hooks_spool_them(drive, env, repo, tmp_path):
    home = Path(env["MNEMOWEAVE_HOME"])
    failing = tmp_path / "no-daemon"  # no daemon starts; what is spooled is still cleaned
    real = Path(sys.executable).with_name("mnemoweave")
    failing.write_text(f'#!/bin/sh\n[ "$1" = redact ] && exec "{real}" "$@"\nexit 1\n')
    failing.chmod(0o755)
    results = drive(
        [
            event("session.created", sessionID=SESSION, info={"id": SESSION}),
            chat("The release branch is cut on Thursdays."),
            *assistant("msg_a1", "Noted: Thursdays."),
            event("session.idle", sessionID=SESSION),
        ],
        MNEMOWEAVE_BIN=str(failing),
        MNEMOWEAVE_HOOK_BUDGET_MS="200",
    )
    assert results[1]["ms"] < 5000  # its budget and the process, not a hang (busy machines too)
    assert len(results[1]["parts"]) == 1  # the chat goes on unchanged
    files = spooled(home)
    assert [json.loads(f.read_text())["event"] for f in files] == [
        "session.created",
        "chat.message",
        "session.idle",
    ]
    for path in files:
        assert re.fullmatch(r"\d{19}-\d+\.json", path.name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        record = json.loads(path.read_text())
        assert set(record) == {"host", "event", "payload"} and record["host"] == "opencode"
    made = ("spool", "logs", "logs/hooks.log", "logs/daemon.log")
    modes = {name: stat.S_IMODE((home / name).stat().st_mode) for name in made}
    assert modes == dict(zip(made, (0o700, 0o700, 0o600, 0o600), strict=True))
    log = (home / "logs" / "hooks.log").read_text()
    assert "opencode chat.message:" in log and "spooled to" in log
    assert all(len(line) < 600 for line in log.splitlines())
    start_daemon(env, tmp_path / "daemon.out")
    try:
        daemons.wait_for(lambda: not spooled(home), WITHIN)
        assert said(env) == [
            ("user", "The release branch is cut on Thursdays."),
            ("assistant", "Noted: Thursdays."),
        ]
    finally:
        stop_daemons(home)


@pytest.mark.parametrize("behaviour", ["hang", "garbage", "malformed", "error"])
def test_a_broken_daemon_costs_the_prompt_its_budget_and_nothing_is_lost(
    drive, env, repo, behaviour
):
    home = Path(env["MNEMOWEAVE_HOME"])
    with FakeDaemon(client.socket_path(home), behaviour, hang_seconds=10) as fake:
        results = drive([chat("Tabs in Makefiles, always.")], MNEMOWEAVE_HOOK_BUDGET_MS="300")
    assert fake.events() == ["chat.message"]
    assert results[0]["ms"] < 5000 and len(results[0]["parts"]) == 1
    (record,) = [json.loads(f.read_text()) for f in spooled(home)]
    assert record["payload"]["text"] == "Tabs in Makefiles, always."


def test_the_first_message_falls_back_on_the_sessions_start_context(drive, env, repo):
    def answer(event: str, payload) -> dict | None:
        if event == "chat.message":
            time.sleep(1.0)  # past the prompt's budget
            return {"context": "TOO LATE"}
        return {"context": f"START CONTEXT of {payload['sessionID']}"}

    home = Path(env["MNEMOWEAVE_HOME"])
    with FakeDaemon(client.socket_path(home), output=answer):
        results = drive(
            [
                event("session.created", sessionID=SESSION, info={"id": SESSION}),
                chat("first"),
                chat("second", "msg_user2"),
            ],
            MNEMOWEAVE_HOOK_BUDGET_MS="300",
        )
    first, second = results[1]["parts"], results[2]["parts"]
    assert [p["text"] for p in first] == ["first", f"START CONTEXT of {SESSION}"]
    assert [p["text"] for p in second] == ["second"]  # only ever for the first message


def test_a_refusal_is_logged_and_not_spooled(drive, env, repo):
    home = Path(env["MNEMOWEAVE_HOME"])
    with FakeDaemon(client.socket_path(home), "refuse"):
        results = drive([chat("hello")])
    assert len(results[0]["parts"]) == 1 and spooled(home) == []
    assert (
        "opencode chat.message: refused: bad payload" in (home / "logs" / "hooks.log").read_text()
    )


def test_what_is_still_in_flight_when_opencode_exits_is_spooled(drive, env, repo):
    home = Path(env["MNEMOWEAVE_HOME"])
    with FakeDaemon(client.socket_path(home), "hang", hang_seconds=10) as fake:
        drive(
            [
                *assistant("msg_a1", "Done."),
                {**event("session.idle", sessionID=SESSION), "wait": False},
                {"sleep": 100},
                {"exit": 0},
            ],
        )
        assert fake.events() == ["session.idle"]
    (record,) = [json.loads(f.read_text()) for f in spooled(home)]
    assert record["event"] == "session.idle"
    assert record["payload"]["messages"] == [{"id": "msg_a1", "text": "Done."}]
    assert "still in flight at exit" in (home / "logs" / "hooks.log").read_text()


def test_the_plugin_starts_the_daemon_and_what_it_spooled_is_stored(drive, env, repo, tmp_path):
    home = Path(env["MNEMOWEAVE_HOME"])
    try:
        drive(
            [event("session.created", sessionID=SESSION, info={"id": SESSION}), chat("hi there")],
            MNEMOWEAVE_BIN=str(Path(sys.executable).with_name("mnemoweave")),
        )
        wait_for_daemon(home)
        daemons.wait_for(lambda: ("user", "hi there") in said(env), WITHIN)
    finally:
        stop_daemons(home)
    log = (home / "logs" / "daemon.log").read_text()
    assert "serving" in log


def test_an_installed_copy_starts_the_daemon_with_the_command_recorded_in_it(
    drive, env, repo, tmp_path
):
    from mnemoweave.hosts.install import render_plugin

    home = Path(env["MNEMOWEAVE_HOME"])
    copy = tmp_path / "elsewhere" / "mnemoweave.js"  # no checkout around it
    copy.parent.mkdir()
    copy.write_text(render_plugin([sys.executable, "-m", "mnemoweave"]))
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    drive(
        [event("session.created", sessionID=SESSION, info={"id": SESSION})], plugin=copy, PATH=path
    )
    wait_for_daemon(home)
    pid, _ = client.lock_holder(home)
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in args] == [
        sys.executable,
        "-m",
        "mnemoweave",
        "--home",
        str(home),
        "serve",
    ]
