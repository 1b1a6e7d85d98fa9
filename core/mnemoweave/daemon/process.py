"""The daemon as other processes see it: the one-writer lock, the pid file, `stop`.

`store.lock` (fcntl.flock, exclusive) is held by the daemon for its whole life, or by one
in-process CLI command at a time when no daemon runs: the store never has two writers.
The holder writes "<pid> <role>" into it so a waiting process can say who holds it.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from pathlib import Path

from mnemoweave.hosts.client import DAEMON_ROLE, LOCK_NAME, lock_holder

PID_NAME = "daemon.pid"
LOCK_WAIT = 10.0  # seconds an in-process command waits on one holder of the lock
STOP_WAIT = 10.0


class StoreLock:
    """The data dir's one-writer lock."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self, role: str, wait: float = 0.0) -> bool:
        """Take the lock within `wait` seconds (False if another process keeps it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {role}\n".encode(), 0)
        self._fd = fd
        return True

    @property
    def fd(self) -> int:
        """The held lock's descriptor."""
        if self._fd is None:
            raise RuntimeError("the lock is not held")
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def holder_text(home: Path) -> str:
    """Who holds the lock, in words: 'the daemon (pid 12)' or 'pid 40 (mnemoweave remember)'."""
    holder = lock_holder(home)
    if holder is None:
        return "nobody"
    pid, role = holder
    if role == DAEMON_ROLE:
        return f"the daemon (pid {pid})"
    return f"pid {pid} ({role})" if role else "another process"


def pid_path(home: Path) -> Path:
    return Path(home) / PID_NAME


def write_pid(home: Path) -> None:
    pid_path(home).write_text(f"{os.getpid()}\n", encoding="utf-8")


def read_pid(home: Path) -> int | None:
    try:
        text = pid_path(home).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def remove_pid(home: Path) -> None:
    pid_path(home).unlink(missing_ok=True)


def daemon_pid(home: Path) -> int | None:
    """The running daemon's pid: it holds the lock as the daemon (a pid file alone may be
    left over from a crash)."""
    holder = lock_holder(home)
    if holder is None or holder[1] != DAEMON_ROLE:
        return None
    return holder[0] or read_pid(home)


def stop(home: Path, wait: float = STOP_WAIT) -> tuple[bool, str]:
    """SIGTERM the daemon and wait (at most `wait` seconds) until it has let the lock go.

    Returns (done, what happened in one line).
    """
    pid = daemon_pid(home)
    if pid is None:
        stale = read_pid(home) is not None and lock_holder(home) is None
        if stale:
            remove_pid(home)
        return True, "the daemon is not running" + (" (removed a stale pid file)" if stale else "")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True, "the daemon is not running"
    started = time.monotonic()
    while time.monotonic() - started < wait:
        if daemon_pid(home) is None:
            return True, f"stopped the daemon (pid {pid}) in {time.monotonic() - started:.1f}s"
        time.sleep(0.05)
    return False, (
        f"the daemon (pid {pid}) is still finishing its work after {wait:g}s; "
        f"see {Path(home) / 'logs' / 'daemon.log'}"
    )
