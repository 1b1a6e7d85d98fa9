"""A team's server for tests: `mnemoweave team serve` (Chroma in its process) on a free
loopback port, its members (`team member add`), and members' data dirs in clones of one
repository. Every start, wait and stop is bounded in time."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

START_WITHIN = 90.0
STOP_WITHIN = 15.0
REMOTE = "https://github.com/acme/app.git"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """The team's server process on `path` (`chroma_url`: its records on that Chroma)."""

    def __init__(self, path: Path, port: int, chroma_url: str = "") -> None:
        self.path, self.port, self.chroma_url = path, port, chroma_url
        self.process: subprocess.Popen[bytes] | None = None

    def add(self, name: str, team: str = "acme") -> str:
        """`team member add`: the new member's token."""
        return self.manage("add", name, "--team", team).strip().splitlines()[-1]

    def remove(self, name: str) -> None:
        self.manage("remove", name)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mnemoweave", "team", "member", *args, "--path", str(self.path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        chroma = ["--chroma", self.chroma_url] if self.chroma_url else []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mnemoweave",
                "team",
                "serve",
                "--path",
                str(self.path),
                "--port",
                str(self.port),
                *chroma,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_WITHIN
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the team server exited"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the team server did not listen within {START_WITHIN}s")

    def kill(self) -> None:
        """SIGKILL the server (no chance to finish anything)."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        self._signal(signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, sig)
        try:
            self.process.wait(STOP_WITHIN)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_WITHIN)


def clone(root: Path, name: str) -> Path:
    """A checkout of the acme/app repository (git init + the same origin URL)."""
    path = root / name
    path.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", REMOTE]):
        subprocess.run(["git", *args], cwd=path, check=True, timeout=30, capture_output=True)
    return path


def member(root: Path, name: str, server: Server, token: str = "", **extra: str) -> Path:
    """A member's data dir with its team settings: a token issued to NAME@acme.dev in team
    acme, unless `token` is given."""
    home = root / f"home-{name}"
    home.mkdir(parents=True)
    settings = {
        "team_url": server.url,
        "team_token": token or server.add(f"{name}@acme.dev"),
        **extra,
    }
    lines = [
        f"{key} = {value}" if value.startswith("[") else f'{key} = "{value}"'
        for key, value in settings.items()
    ]
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return home


DAEMON_WITHIN = 90.0  # seconds a daemon with a model may take to answer


class MemberDaemon:
    """`mnemoweave serve` on a member's data dir (the short path a Unix socket needs)."""

    def __init__(self, home: Path) -> None:
        from mnemoweave.hosts import client

        self.home = home
        env = {k: v for k, v in os.environ.items() if k != "MNEMOWEAVE_HOME"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mnemoweave", "serve"],
            env=env | {"MNEMOWEAVE_HOME": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + DAEMON_WITHIN
        while not client.running(home, timeout=1.0):
            assert self.process.poll() is None, "the daemon exited"
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the daemon did not answer within {DAEMON_WITHIN}s")
            time.sleep(0.05)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        from mnemoweave.hosts import client

        return client.request(self.home, method, path, body, timeout=30.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_WITHIN)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_WITHIN)
