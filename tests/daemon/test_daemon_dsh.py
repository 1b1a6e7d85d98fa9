"""The dsh bridge (node) against a real daemon: a step gets the weave with a stored memory,
a turn's end stores the turn; with no daemon, what it spooled is stored when one starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from running import NODE, run_node, start_daemon

from mnemoweave.hosts import client

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "plugins" / "dsh" / "index.js"
DRIVE = Path(__file__).with_name("dsh_drive.mjs")
WITHIN = 60.0

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def drive(
    home: Path, tmp_path: Path, env: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """One dsh session through the bridge, in a node process (bounded); `env`: more of the
    bridge's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")} | (env or {})
    env |= {"HOME": str(tmp_path / "user"), "MNEMOWEAVE_HOME": str(home)}
    spec = {"plugin": str(BRIDGE), "home": str(home), **spec}
    answer: dict[str, Any] = json.loads(run_node(DRIVE, spec, env, WITHIN))
    return answer


def project(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    return repo


def said(daemon, session: str) -> list[tuple[str, str]]:
    found = daemon.call("GET", f"/v1/turns?session={session}")
    return [(t["role"], t["text"]) for t in found]


def test_a_step_gets_the_weave_and_the_turn_is_stored(daemon, tmp_path):
    repo = project(tmp_path)
    daemon.call("POST", "/v1/memories", {"text": "以后代码注释都用英文", "kind": "pref"})
    daemon.call("POST", "/v1/memories", {"text": "Uploads retry three times", "project": str(repo)})
    out = drive(
        daemon.home,
        tmp_path,
        session="session-e2e-1",
        cwd=str(repo / "src"),
        prompt="How often do uploads retry?",
        answer="Three times, with backoff.",
    )
    (start,) = out["injected"]
    assert start.startswith("<memory") and "以后代码注释都用英文" in start
    prompt, woven = out["step"]
    assert prompt == "How often do uploads retry?"
    assert woven.startswith("<memory") and "Uploads retry three times" in woven
    assert said(daemon, "session-e2e-1") == [
        ("user", "How often do uploads retry?"),
        ("assistant", "Three times, with backoff."),
    ]
    assert not list((daemon.home / "spool").glob("*.json"))
    turns = daemon.call("GET", "/v1/turns?session=session-e2e-1")
    assert {t["project"] for t in turns} == {str(repo)}  # the git root of the session's cwd


def test_a_cold_first_step_is_woven(home, tmp_path):
    (home / "config.toml").write_text('embedder = "none"\ndaemon_idle_minutes = 5\n')
    repo, mnemoweave = project(tmp_path), [sys.executable, "-m", "mnemoweave"]
    remember = [*mnemoweave, "remember", "Uploads retry three times", "--project", str(repo)]
    subprocess.run(remember, check=True, timeout=WITHIN, capture_output=True)  # no daemon
    assert client.lock_holder(home) is None
    try:
        out = drive(
            home,
            tmp_path,
            # a daemon starting on a busy machine may take longer than the default budget
            env={"MNEMOWEAVE_HOOK_BUDGET_MS": "15000"},
            cold=True,
            session="session-e2e-3",
            cwd=str(repo),
            prompt="How often do uploads retry?",
            answer="Three times.",
        )
        prompt, woven = out["step"]
        assert woven.startswith("<memory") and "Uploads retry three times" in woven
    finally:
        stop = [*mnemoweave, "stop", "--wait", "10"]
        subprocess.run(stop, check=True, timeout=WITHIN, capture_output=True)


def test_what_the_bridge_spooled_is_stored_when_a_daemon_starts(home, tmp_path):
    repo = project(tmp_path)
    out = drive(
        home,
        tmp_path,
        session="session-e2e-2",
        cwd=str(repo),
        prompt="The release branch is cut on Thursdays.",
        answer="Noted: releases branch on Thursdays.",
    )
    assert out == {"injected": [], "step": ["The release branch is cut on Thursdays."]}
    names = sorted(p.name for p in (home / "spool").glob("*.json"))
    assert [json.loads((home / "spool" / n).read_text())["event"] for n in names] == [
        "session-start",
        "pre-step",
        "turn-end",
        "session-end",
    ]
    daemon = start_daemon(home)
    try:
        deadline = time.monotonic() + WITHIN
        while len(found := said(daemon, "session-e2e-2")) < 2:
            assert time.monotonic() < deadline, "the spool was not replayed"
            time.sleep(0.05)
        assert found == [
            ("user", "The release branch is cut on Thursdays."),
            ("assistant", "Noted: releases branch on Thursdays."),
        ]
        assert [n for n in os.listdir(home / "spool") if n.endswith(".json")] == []
    finally:
        daemon.stop()
