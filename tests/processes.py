"""Stopping a process a test started: SIGTERM, then (only if it hangs) SIGKILL."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


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
