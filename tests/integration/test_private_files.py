"""With the usual umask 022, a whole run leaves nothing under the data dir that group or
others may read: the model build, a hook that spools, the daemon (replay, transcript
follower, hooks, distill), CLI commands through it and in-process, an export, the logs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mnemoweave.hosts import client

WITHIN = 120  # seconds for one command (the model build, a daemon warming up)
SESSION = "5b1c0a7e-1111-4222-8333-944455556666"


def open_to_others(home: Path) -> dict[str, str]:
    """Every entry under `home` (itself included) with a group or other permission bit."""
    found = {}
    for folder, dirs, files in os.walk(home):
        for path in [Path(folder), *(Path(folder, name) for name in (*dirs, *files))]:
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found[str(path.relative_to(home))] = oct(stat.S_IMODE(mode))
    return found


class Run:
    """Commands in child processes with umask 022, on one data dir and one user home."""

    def __init__(self, home: Path, user: Path) -> None:
        self.home = home
        keep = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
        models = os.environ["MNEMOWEAVE_MODELS"]  # the test's own (../../conftest.py)
        self.env = keep | {"MNEMOWEAVE_HOME": str(home), "MNEMOWEAVE_MODELS": models}
        self.env["HOME"] = str(user)

    def __call__(self, *args: str, stdin: str = "", **env: str) -> str:
        done = subprocess.run(
            [sys.executable, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=WITHIN,
            env=self.env | env,
            umask=0o022,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def mw(self, *args: str) -> str:
        return self("-m", "mnemoweave", *args)

    def hook(self, event: str, payload: dict[str, Any], **env: str) -> str:
        body = {"session_id": SESSION, "hook_event_name": event, **payload}
        return self("-m", "mnemoweave.hook", "claude-code", event, stdin=json.dumps(body), **env)

    def serve(self) -> subprocess.Popen[bytes]:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "mnemoweave", "serve"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            umask=0o022,
        )
        wait_for(lambda: client.running(self.home), f"the daemon (exit {daemon.poll()})")
        return daemon


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WITHIN
    while not condition():
        assert time.monotonic() < deadline, f"waited {WITHIN}s for {what}"
        time.sleep(0.1)


def transcript(user: Path, project: Path) -> Path:
    """A Claude Code transcript of the session, where the daemon may follow it."""
    path = user / ".claude" / "projects" / "-proj" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    said = [
        ("user", "Staging deploys need the VPN turned on first"),
        ("assistant", "Noted: turn the VPN on before deploying to staging."),
    ]
    lines = [
        {
            "type": role,
            "sessionId": SESSION,
            "cwd": str(project),
            "uuid": f"u{n}",
            "timestamp": "2026-11-29T14:05:38.449Z",
            "message": {"role": role, "content": text},
        }
        for n, (role, text) in enumerate(said)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_whole_run_with_umask_022_leaves_nothing_open_to_others(tmp_path_factory):
    home = tmp_path_factory.mktemp("mw") / "data"  # short: the socket path has a limit
    user, project = tmp_path_factory.mktemp("user"), tmp_path_factory.mktemp("proj")
    failing = user / "no-daemon"
    failing.write_text("#!/bin/sh\nexit 1\n")
    failing.chmod(0o755)
    run = Run(home, user)
    where = {"cwd": str(project), "transcript_path": str(transcript(user, project))}

    run.mw("model", "build", "use-m3")
    prompt = {"prompt": "Remember: the release branch is cut on Thursdays", **where}
    run.hook("UserPromptSubmit", prompt, MNEMOWEAVE_BIN=str(failing))  # no daemon: spooled
    assert list((home / "spool").glob("*.json")) and (home / "logs" / "hooks.log").is_file()

    daemon = run.serve()  # replays the spool
    try:
        run.hook("SessionStart", {"source": "startup", **where})  # follows the transcript
        wait_for(lambda: (home / "transcripts.json").is_file(), "the transcript follower")
        for n, text in enumerate(["Use httpx, not requests", "以后代码注释都用英文"]):
            run.mw("ingest", text, "--session", "cli", "--role", "user", "--project", "p")
            run.mw("remember", f"{text} ({n})", "--project", "p")
        found = run.mw("search", "release branch", "--in", "turns", "-p", str(project))
        assert "Thursdays" in found
        run.mw("weave", "which http client?", "--project", "p")
        run.hook("SessionEnd", {"reason": "other", **where})  # distills the session
        run.mw("export", str(home / "exports"))
        assert "ok    private files" in run.mw("doctor")
        assert {"mnemoweave.sqlite-wal", "daemon.sock", "daemon.pid"} <= {
            p.name for p in home.iterdir()
        }
        assert open_to_others(home) == {}
    finally:
        daemon.terminate()  # SIGTERM: it finishes what is in flight and exits
        daemon.wait(timeout=WITHIN)

    run.mw("remember", "In-process, with no daemon: still private")
    assert "ok    private files" in run.mw("doctor")
    made = [
        "mnemoweave.sqlite",
        "chroma/chroma.sqlite3",
        "cache",
        "spool",
        "transcripts.json",
        "logs/hooks.log",
        "logs/daemon.log",
    ]
    assert [name for name in made if not (home / name).exists()] == []
    assert (Path(run.env["MNEMOWEAVE_MODELS"]) / "use-m3" / "model.onnx").is_file()
    assert list((home / "exports").glob("*.md"))
    assert [p for p in (home / "chroma").iterdir() if p.is_dir()]  # a segment's own dir
    assert open_to_others(home) == {}
