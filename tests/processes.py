"""Stopping a process a test started: SIGTERM, then (only if it hangs) SIGKILL; and the
daemons of a data dir, wherever they were started."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from mnemoweave.daemon.process import daemon_pid


def stop(process: subprocess.Popen[Any], within: float) -> int:
    """The exit status of `process` after SIGTERM; one that outlives `within` seconds is
    killed, and the test fails (subprocess.TimeoutExpired)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=within)
        raise


def serving(home: Path) -> list[int]:
    """Processes serving `home`: `mnemoweave ... serve` whose --home or MNEMOWEAVE_HOME is it
    (one still starting, or waiting for the lock, included)."""
    wanted = os.fsencode(str(home))
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                args = handle.read().split(b"\0")
            if b"serve" not in args or not any(b"mnemoweave" in a for a in args):
                continue
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if wanted in args or b"MNEMOWEAVE_HOME=" + wanted in environ:
            found.append(int(name))
    return found


def daemons(home: Path) -> set[int]:
    """The daemons of `home`: the one holding its lock and every `serve` process of it."""
    held = daemon_pid(home)
    return set(serving(home)) | ({held} if held else set())
