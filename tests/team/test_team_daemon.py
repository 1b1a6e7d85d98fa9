"""Team memory in the daemon: the background sync, woken by a session start, and hooks that
read the mirror only (a wrong token leaves them as they were)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from team_servers import MemberDaemon, Server, clone, member
from test_team import ASK, OWN, PITFALL, accept_shared

from mnemoweave import Engine
from mnemoweave.projects import project_from_cwd

SYNCED_WITHIN = 30.0


def prompt(session: str, cwd: Path, text: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
        "transcript_path": "",
        "permission_mode": "default",
    }


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"MNEMOWEAVE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "mnemoweave", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def hook(daemon: MemberDaemon, event: str, payload: dict[str, Any]) -> str:
    return str(daemon.call("POST", f"/v1/hooks/claude-code/{event}", {"payload": payload}))


def first_session(daemon: MemberDaemon, checkout: Path, mirrored: int) -> None:
    """Session s-b starts in `checkout`; back once the daemon's sync mirrored that many."""
    start = {
        "session_id": "s-b",
        "cwd": str(checkout),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "transcript_path": "",
    }
    hook(daemon, "SessionStart", start)
    deadline = time.monotonic() + SYNCED_WITHIN
    while daemon.call("GET", "/v1/team")["result"]["mirrored"] < mirrored:
        assert time.monotonic() < deadline, "the session start did not pull the team"
        time.sleep(0.2)


def test_a_session_start_pulls_what_a_shared(server: Server, short: Path, models: Path):
    checkout = clone(short, "b")
    project = project_from_cwd(str(checkout))
    alice = member(short, "alice", server)
    with Engine(alice) as a:
        accept_shared(a, project, PITFALL)
    assert cli(alice, "team", "sync").returncode == 0  # the CLI, in-process
    shown = cli(alice, "team", "status")
    assert "queued: 0" in shown.stdout and "1 record(s) on the server" in shown.stdout, shown
    home = member(short, "bob", server)
    with Engine(home) as b:
        b.remember_many({"text": t, "project": project} for t in OWN)
    daemon = MemberDaemon(home)
    try:
        first_session(daemon, checkout, mirrored=1)
        answer = hook(daemon, "UserPromptSubmit", prompt("s-b", checkout, ASK))
        assert "DEPLOY_ENV" in answer and "team · alice@acme.dev" in answer
    finally:
        daemon.stop()


def test_a_wrong_token_is_reported_and_hooks_still_answer(
    server: Server, short: Path, models: Path
):
    checkout = clone(short, "e")
    project = project_from_cwd(str(checkout))
    home = member(short, "eve", server, token="not-the-token")
    with Engine(home) as eve:
        eve.remember_many({"text": t, "project": project} for t in [PITFALL, *OWN])
    daemon = MemberDaemon(home)
    try:
        found = daemon.call("GET", "/v1/team")["result"]
        assert found["state"] == "error" and "refused the token" in found["error"]
        began = time.monotonic()
        answer = hook(daemon, "UserPromptSubmit", prompt("s-e", checkout, ASK))
        assert "DEPLOY_ENV" in answer and time.monotonic() - began < 2.0
        shown = cli(home, "team", "status")  # through the daemon
        assert "refused the token" in shown.stdout, shown
    finally:
        daemon.stop()
