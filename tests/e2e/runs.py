"""A host CLI run in isolation against a fake model server: ``HostHarness`` gives one test
its own HOME, TMPDIR, XDG dirs, MNEMOWEAVE_HOME and git project, runs the CLI there bounded
in time, kills what the run leaves behind, and returns a ``RunResult`` carrying the
requests that reached the fake model during the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from mnemoweave.daemon.process import daemon_pid

from .fake_server import FakeServer

RUN_TOKEN_ENV = "E2E_RUN_TOKEN"
KILLED_WITHIN = 30  # seconds a killed run gets to close its pipes and be reaped
POLL = 0.05  # seconds between looks for what a finished run left running


class RunTimeout(AssertionError):
    """A run outlived its timeout; it and its processes were killed."""


@dataclass
class RunResult:
    """One run: exit code, output, and the requests the fake model received."""

    rc: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    args: list[str] = field(default_factory=list)
    elapsed: float = 0.0  # seconds from the CLI's start until it exited and closed its output

    @property
    def reply(self) -> str | None:
        return None

    def __repr__(self) -> str:
        return (
            f"Result(rc={self.rc}, reply={self.reply!r}, requests={len(self.requests)}, "
            f"elapsed={self.elapsed:.1f}s, args={self.args[1:]!r},\n"
            f"  stdout={self.stdout[-1500:]!r},\n  stderr={self.stderr[-3000:]!r})"
        )


ResultT = TypeVar("ResultT", bound=RunResult)


class HostHarness(Generic[ResultT]):
    """The isolated tree of one test; runs in one harness share it, so a later run sees
    what earlier ones left on disk.

    A subclass names the CLI (``command``), the caller's settings it drops
    (``dropped_env``, prefixes), the settings that keep it offline (``offline_env``), its
    ``result_type`` and ``timeout_error``, the seconds a run's leftovers get (``grace``),
    where its XDG dirs are (``xdg_homes``), what else its environment holds (``host_env``)
    and a run's command line (``argv``). With ``tag_runs``, every process of a run carries
    a token in its environment, so what escapes the run's process group is found and
    killed too.
    """

    command: ClassVar[str]
    dropped_env: ClassVar[tuple[str, ...]]
    offline_env: ClassVar[Mapping[str, str]]
    result_type: type[ResultT]
    timeout_error: ClassVar[type[RunTimeout]] = RunTimeout
    tag_runs: ClassVar[bool] = False

    def __init__(
        self, server: FakeServer, root: Path, mnemoweave_home: Path, project: Path | None = None
    ) -> None:
        self.server = server
        self.root = root
        self.home = root / "home"
        self.tmpdir = root / "tmp"
        self.cwd = project or root / "project"
        self.mnemoweave_home = mnemoweave_home
        self.results: list[ResultT] = []
        for directory in (self.home, self.tmpdir, self.cwd, mnemoweave_home):
            directory.mkdir(parents=True, exist_ok=True)
        git = shutil.which("git")
        if git and not (self.cwd / ".git").exists():
            subprocess.run(
                [git, "init", "-q", str(self.cwd)],
                check=True,
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                env={**self.env(), "GIT_CONFIG_NOSYSTEM": "1"},
            )

    def seed_shared_cache(self) -> None:
        """Give the run's XDG cache the tables every data dir shares, built once per test
        worker from installed packages (jieba's dictionary, the word pieces): the host's
        first daemon then warms as on a user's second day, not the first hour."""
        from mnemoweave.config import shared_cache
        from mnemoweave.recall import wordinfo
        from mnemoweave.text import jieba_dictionary

        wordinfo.piece_table()
        target = self.xdg_homes()["CACHE"] / "mnemoweave"
        target.mkdir(parents=True, exist_ok=True)
        for built in (jieba_dictionary(), shared_cache() / wordinfo.CACHE):
            if built.exists():
                shutil.copy2(built, target / built.name)

    def daemon(self) -> set[int]:
        """The daemon serving the data dir, which a run may leave running (a hook or plugin
        starts it detached to outlive the session; the test's end stops it)."""
        pid = daemon_pid(self.mnemoweave_home)
        return {pid} if pid else set()

    @property
    def grace(self) -> float:
        """Seconds the processes a run leaves behind get to finish."""
        raise NotImplementedError

    def xdg_homes(self) -> dict[str, Path]:
        """``XDG_<NAME>_HOME`` by NAME (CONFIG, DATA, CACHE, STATE): where they are by
        default under HOME, unless the host needs them elsewhere."""
        return {
            "CONFIG": self.home / ".config",
            "CACHE": self.home / ".cache",
            "DATA": self.home / ".local" / "share",
            "STATE": self.home / ".local" / "state",
        }

    def host_env(self) -> dict[str, str]:
        return {}

    def env(self, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment of a run: the caller's minus ``dropped_env``, with HOME, TMPDIR,
        XDG dirs and MNEMOWEAVE_HOME inside this harness, ``offline_env`` and ``host_env``,
        the test interpreter's bin directory first on PATH, then ``extra`` (None unsets)."""
        dropped = (*self.dropped_env, RUN_TOKEN_ENV)
        env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
        path = env.get("PATH", os.defpath)
        env.update(self.offline_env)
        env.update(HOME=str(self.home), TMPDIR=str(self.tmpdir))
        env.update({f"XDG_{name}_HOME": str(p) for name, p in self.xdg_homes().items()})
        env.update(MNEMOWEAVE_HOME=str(self.mnemoweave_home), **self.host_env())
        env["MNEMOWEAVE_MODELS"] = os.environ["MNEMOWEAVE_MODELS"]  # the test's own
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
        for key, value in (extra or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def argv(self, prompt: str, extra_args: Sequence[str]) -> list[str]:
        """The command line of a run on ``prompt``."""
        raise NotImplementedError

    def run(
        self,
        prompt: str,
        *extra_args: str,
        env: Mapping[str, str | None] | None = None,
        timeout: float = 120,
    ) -> ResultT:
        """The CLI on ``prompt`` (see ``argv``) in the project, with ``env`` added to the
        environment (see ``env``). Past ``timeout`` the run is killed and ``timeout_error``
        raised; what it leaves running gets ``grace`` seconds before it is killed."""
        args = self.argv(prompt, extra_args)
        token = uuid.uuid4().hex if self.tag_runs else None
        run_env = self.env(env) | ({RUN_TOKEN_ENV: token} if token else {})
        first = len(self.server.requests)
        start = time.monotonic()
        proc = subprocess.Popen(
            args,
            cwd=self.cwd,
            env=run_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
            finished = time.monotonic()
        except subprocess.TimeoutExpired:
            _kill_run(proc.pid, _tagged(token))
            stdout, stderr = proc.communicate(timeout=KILLED_WITHIN)
            _kill_run(proc.pid, _tagged(token))
            raise self.timeout_error(
                f"{self.command} did not finish within {timeout} s: {args[1:]!r}\n"
                f"stdout: {stdout[-1500:]!r}\nstderr: {stderr[-3000:]!r}"
            ) from None
        finally:
            if proc.poll() is None:
                _kill_run(proc.pid, _tagged(token))
                proc.wait(timeout=KILLED_WITHIN)
        _reap_run(proc.pid, token, self.grace, self.daemon)
        result = self.result_type(
            rc=proc.returncode,
            stdout=stdout,
            stderr=stderr,
            requests=list(self.server.requests[first:]),
            args=args,
            elapsed=finished - start,  # the CLI's own run, without the reaping
        )
        self.results.append(result)
        return result


def _tagged(token: str | None) -> list[int]:
    """Processes carrying this run's token in their environment: a CLI may start children
    in process groups of their own, and orphans lose their parent link, but all of them
    inherit the environment of the run."""
    if token is None:
        return []
    needle = f"{RUN_TOKEN_ENV}={token}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _kill_run(pgid: int, pids: list[int]) -> None:
    """SIGKILL the run's process group and `pids` (the run's other processes)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    _kill(pids)


def _reap_run(pgid: int, token: str | None, grace: float, kept: Callable[[], set[int]]) -> None:
    """Wait up to ``grace`` seconds for the run's process group (and, with a token, every
    process carrying it but those ``kept`` gives) to end, then kill what is left. A process
    group id cannot be reused while any member lives, and the token is unique to the run, so
    only the run's own processes are reached."""
    deadline = time.monotonic() + grace

    def left() -> list[int]:
        keep = kept() if token else set()
        return [pid for pid in _tagged(token) if pid not in keep]

    while _group_alive(pgid) or left():
        if time.monotonic() >= deadline:
            _kill_run(pgid, left())
            for _ in range(3 if token else 0):
                time.sleep(0.1)
                _kill(left())
            return
        time.sleep(POLL)
