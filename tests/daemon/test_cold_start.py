"""A hook never waits for a daemon to warm up: a session's start is answered from the store
(cold_start.py) while the daemon it woke starts, what the session was given is not given
again, and every other event is spooled at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from running import STOP_WITHIN, daemon_env

from mnemoweave.engine import Engine
from mnemoweave.hosts import client
from mnemoweave.projects import project_from_cwd

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "plugins" / "claude-code" / "scripts" / "mnemoweave"
RULE = "Never log request bodies in the upload service."
FACT = "The staging database is called pg-stage-7."
UP_WITHIN = 90.0  # seconds for the daemon a hook woke to answer and take the spool


@pytest.fixture
def store(home: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A store holding a rule and a fact of a project, and no daemon; (home, project)."""
    project = tmp_path / "app"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    engine = Engine(home)
    try:
        key = project_from_cwd(str(project))
        engine.remember(RULE, kind="pref", project=key)
        engine.remember(FACT, kind="fact", project=key)
    finally:
        engine.close()
    yield home, project
    from mnemoweave.daemon.process import stop

    stop(home, STOP_WITHIN)


def hook(home: Path, event: str, payload: dict[str, Any]) -> str:
    done = subprocess.run(
        [str(LAUNCHER), "hook", "claude-code", event],
        input=json.dumps(payload).encode(),
        env=daemon_env(home),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.decode()


def context(output: str) -> str:
    return json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""


def log(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


def waited(check, within: float = UP_WITHIN) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_session_started_with_no_daemon_gets_its_brief_from_the_store(store):
    home, project = store
    start = {"session_id": "s1", "cwd": str(project), "source": "startup"}
    given = context(hook(home, "SessionStart", start))
    assert RULE in given and "## brief" in given
    assert "no daemon answered; one is starting; spooled" in log(home)
    waited(lambda: client.running(home))  # the hook woke one
    waited(lambda: not list((home / "spool").glob("*.json")))  # and it took the start
    prompt = {"session_id": "s1", "cwd": str(project), "prompt": "what is the staging database?"}
    again = context(hook(home, "UserPromptSubmit", prompt))
    assert FACT in again and RULE not in again  # the brief went in once
    other = context(hook(home, "UserPromptSubmit", prompt | {"session_id": "s2"}))
    assert RULE in other  # a session with no start yet gets the brief with its prompt


def test_other_events_are_spooled_at_once_and_stored_by_the_daemon_they_woke(store):
    home, project = store
    said = "Bodies stay out of the logs now."
    stop = {"session_id": "s3", "cwd": str(project), "last_assistant_message": said}
    assert hook(home, "Stop", stop) == ""
    assert "claude-code Stop: no daemon answered; one is starting; spooled" in log(home)
    waited(lambda: client.running(home))
    waited(lambda: not list((home / "spool").glob("*.json")))
    turns = client.request(home, "GET", "/v1/turns?session=s3")["result"]
    assert [t["text"] for t in turns] == [said]


def test_the_answer_from_the_store_loads_no_model_and_no_vector_index(store):
    home, project = store
    code = (
        "import json, sys; from mnemoweave.hosts.cold_start import answer; "
        f"out = answer({str(home)!r}, 'claude-code', 'SessionStart', "
        f"{{'session_id': 's4', 'cwd': {str(project)!r}, 'source': 'startup'}}); "
        "print(json.dumps([out, [m for m in ('onnxruntime', 'chromadb', 'numpy') "
        "if m in sys.modules]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=daemon_env(home), capture_output=True, timeout=60
    )
    out, loaded = json.loads(done.stdout)
    assert RULE in context(out) and loaded == []


def test_no_answer_from_the_store_after_a_compaction_or_before_there_is_one(store, tmp_path):
    from mnemoweave.hosts.cold_start import answer

    home, project = store
    compacted = {"session_id": "s5", "cwd": str(project), "source": "compact"}
    assert answer(str(home), "claude-code", "SessionStart", compacted) == ""
    prompt = {"session_id": "s5", "cwd": str(project), "prompt": "staging database"}
    assert answer(str(home), "claude-code", "UserPromptSubmit", prompt) == ""
    empty = tmp_path / "empty"
    started = {"session_id": "s6", "cwd": str(project), "source": "startup"}
    assert answer(str(empty), "claude-code", "SessionStart", started) == ""
    assert not empty.exists()  # nothing made where there was no store
