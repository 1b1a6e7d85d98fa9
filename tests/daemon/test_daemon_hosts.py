"""The daemon's host side: the hooks route, the spool, and following transcripts."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from running import daemon_env, start_daemon

from mnemoweave import hook
from mnemoweave.hosts import client
from mnemoweave.hosts.install import hooks_object, recorded_command

ROOT = Path(__file__).resolve().parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"
WITHIN = 20.0  # seconds for the follower to catch up


def payload(event: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / f"{event}.json").read_text())
    return data | changes


def turns(daemon, session: str) -> list[tuple[str, str]]:
    found = daemon.call("GET", f"/v1/turns?session={session}")
    return [(t["role"], t["text"]) for t in found]


def wait_for(check, within: float = WITHIN):
    deadline = time.monotonic() + within
    while not (result := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return result


def test_the_hooks_route_answers_with_the_hosts_output(daemon):
    daemon.call("POST", "/v1/memories", {"text": "Uploads retry three times", "project": "/p"})
    prompt = payload("UserPromptSubmit", prompt="How often do uploads retry?", cwd="/p")
    answer = daemon.request("POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": prompt})
    context = answer["output"]["hookSpecificOutput"]["additionalContext"]
    assert "Uploads retry three times" in context
    assert daemon.request("POST", "/v1/hooks/claude-code/Stop", {"payload": payload("Stop")}) == {
        "output": None
    }
    with pytest.raises(client.DaemonError, match="session_id") as refused:
        daemon.request("POST", "/v1/hooks/claude-code/Stop", {"payload": {"x": 1}})
    assert refused.value.status == 400
    with pytest.raises(client.DaemonError, match="host"):
        daemon.request("POST", "/v1/hooks/nohost/Stop", {"payload": payload("Stop")})


def test_the_hook_process_prints_the_answer(daemon, monkeypatch):
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(daemon.home))
    daemon.call("POST", "/v1/memories", {"text": "以后代码注释都用英文", "kind": "pref"})
    out = io.StringIO()
    raw = json.dumps(payload("SessionStart")).encode()
    assert hook.run("claude-code", "SessionStart", io.BytesIO(raw), out) == 0
    printed = json.loads(out.getvalue())
    assert "以后代码注释都用英文" in printed["hookSpecificOutput"]["additionalContext"]


def test_the_plugins_hook_stands_aside_where_a_settings_install_is_active(
    daemon, monkeypatch, tmp_path
):
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(daemon.home))
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    global_memory = {"text": "Uploads retry three times", "project": ""}
    daemon.call("POST", "/v1/memories", global_memory)

    def prompted(via: str) -> str:
        monkeypatch.setenv("MNEMOWEAVE_HOOK_VIA", via)
        prompt = payload(
            "UserPromptSubmit",
            prompt="How often do uploads retry?",
            cwd=str(project),
            session_id=str(uuid.uuid4()),
        )
        out = io.StringIO()
        raw = io.BytesIO(json.dumps(prompt).encode())
        assert hook.run("claude-code", "UserPromptSubmit", raw, out) == 0
        return out.getvalue()

    assert "Uploads retry three times" in prompted("plugin")  # the only install: it answers
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": hooks_object(recorded_command())}))
    assert prompted("plugin") == ""
    last = (daemon.home / "logs" / "hooks.log").read_text().splitlines()[-1]
    assert f"the plugin stands aside for the hooks in {settings}" in last
    assert "Uploads retry three times" in prompted("")  # the settings install's hook answers


def test_what_the_hooks_spooled_is_stored_when_a_daemon_runs(home, monkeypatch):
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(home))
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")  # no time to wait for a daemon
    hook.spool(home, "claude-code", "Stop", {"not": "a payload"})  # refused at replay
    prompt = payload("UserPromptSubmit", prompt="The release branch is cut on Thursdays.")
    out = io.StringIO()
    raw = io.BytesIO(json.dumps(prompt).encode())
    assert hook.run("claude-code", "UserPromptSubmit", raw, out) == 0
    assert out.getvalue() == ""
    assert "spooled" in (home / "logs" / "hooks.log").read_text()
    try:
        assert client.ensure_daemon(home, 60)  # the one the hook started, or a new one
        stored = client.request(home, "GET", f"/v1/turns?session={prompt['session_id']}")
        assert [(t["role"], t["text"]) for t in stored["result"]] == [
            ("user", "The release branch is cut on Thursdays.")
        ]
        assert list((home / "spool").glob("*.json")) == []
        assert len(list((home / "spool" / "rejected").glob("*.json"))) == 1
    finally:
        subprocess.run(
            [sys.executable, "-m", "mnemoweave", "stop"],
            env=daemon_env(home),
            capture_output=True,
            timeout=60,
        )


def test_transcripts_are_followed_without_double_counting_what_hooks_stored(home, tmp_path):
    user_home = tmp_path / "user"
    folder = user_home / ".claude" / "projects" / "-tmp-PROJECT"
    folder.mkdir(parents=True)
    lines = (PAYLOADS / "transcript.jsonl").read_text().splitlines(keepends=True)
    transcript = folder / "s.jsonl"
    transcript.write_text("".join(lines[:3]))  # up to the user's prompt
    daemon = start_daemon(home, HOME=str(user_home))
    try:
        session = json.loads(lines[2])["sessionId"]
        prompt = payload(
            "UserPromptSubmit",
            session_id=session,
            transcript_path=str(transcript),
            prompt=json.loads(lines[2])["message"]["content"],
            prompt_id=json.loads(lines[2])["promptId"],  # the prompt the transcript records
        )
        client.request(home, "POST", "/v1/hooks/claude-code/UserPromptSubmit", {"payload": prompt})
        with transcript.open("a") as out:
            out.write("".join(lines[3:]))
            out.write('{"type": "assistant", "sessionId": "')  # a line still being written
        stored = lambda: client.request(home, "GET", f"/v1/turns?session={session}")["result"]  # noqa: E731
        found = wait_for(lambda: len(stored()) >= 2 and stored())
        assert sorted((t["role"], t["text"]) for t in found) == [
            ("assistant", "OK-FAKE"),
            ("user", "USE_TOOL and remember: 以后注释用英文"),
        ]
        offsets = json.loads((home / "transcripts.json").read_text())
        assert offsets == {str(transcript.resolve()): len("".join(lines).encode())}
        outside = tmp_path / "elsewhere.jsonl"
        outside.write_text("".join(lines))
        client.request(
            home,
            "POST",
            "/v1/hooks/claude-code/Stop",
            {"payload": payload("Stop", session_id="other", transcript_path=str(outside))},
        )
        assert str(outside.resolve()) not in json.loads((home / "transcripts.json").read_text())
    finally:
        daemon.stop()
