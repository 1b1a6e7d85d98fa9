"""The daemon's client: HTTP/1.1 over the data dir's Unix socket, standard library only.

Short-lived hook processes import this on every prompt, so it imports only the
standard library's C modules at first (not `socket`, `json` or `http.client`, whose imports
cost a hook more than its answer does): a request is one connection, one JSON body each
way. `ensure_daemon` starts `mnemoweave serve` detached when no daemon answers.
"""

from __future__ import annotations

import _socket
import errno
import fcntl
import os
import sys
import time

TYPE_CHECKING = False  # typing and pathlib cost imports on the hot path: paths are strings
if TYPE_CHECKING:
    from os import PathLike
    from typing import Any

    Where = str | PathLike[str]

SOCKET_NAME = "daemon.sock"
LOCK_NAME = "store.lock"  # the one-writer lock: the daemon holds it while it runs
DAEMON_ROLE = "daemon"  # what the daemon writes into the lock file, after its pid
LOG_NAME = "logs/daemon.log"
DEFAULT_TIMEOUT = 30.0
PROBE_TIMEOUT = 1.0
RETRY_FOR = 5.0  # seconds at most a request keeps trying to connect (a burst, a daemon binding)


class DaemonError(Exception):
    """The daemon could not be reached, did not answer in time, or refused the request.

    `status` is the HTTP status of a refusal (None when there was no answer); the message
    is the daemon's own.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Unanswered(DaemonError):
    """The request was sent, but the daemon stopped before answering: it may have been
    applied. A request whose records carry keys (an import, a hook event) can be sent again:
    what is already stored is recognised, not stored twice."""


def socket_path(home: Where) -> str:
    """Where the daemon of the data dir `home` listens."""
    return os.path.join(os.fspath(home), SOCKET_NAME)


def _connect(path: str, deadline: float) -> _socket.socket:
    """A connection to the daemon's socket. While its listen backlog is full (EAGAIN), or it
    refuses or is not there while a daemon holds the lock (it is binding, or stopping), this
    retries with a short backoff, for at most RETRY_FOR seconds and never past `deadline`."""
    give_up = min(deadline, time.monotonic() + RETRY_FOR)
    pause = 0.005
    while True:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.connect(path)
            return sock
        except OSError as exc:
            sock.close()
            again = exc.errno == errno.EAGAIN or (
                exc.errno in (errno.ECONNREFUSED, errno.ENOENT)
                and _daemon_holds_lock(os.path.dirname(path))
            )
            if not again or time.monotonic() + pause >= give_up:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _exchange(path: str, raw: bytes, deadline: float) -> bytes:
    """Send one request and read the whole answer: up to its Content-Length, or until the
    daemon closes the connection; b"" when the connection ended without one."""
    sock = _connect(path, deadline)
    try:
        try:  # noqa: SIM105 (contextlib would be one more import on the hook's path)
            sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon closed early: whatever it answered is still read
        answer = bytearray()
        size: int | None = None  # the whole answer's length, once its head has arrived
        while size is None or len(answer) < size:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                break
            answer += chunk
            if size is None:
                size = _length(answer)
        return bytes(answer)
    finally:
        sock.close()


def _length(answer: bytearray) -> int | None:
    """The length of the whole answer its head announces (Content-Length), once the head
    is in: the client need not wait for the close (the daemon may still be busy with work
    it left for after the answer)."""
    end = answer.find(b"\r\n\r\n")
    if end < 0:
        return None
    for line in bytes(answer[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return end + 4 + int(value)
    return 1 << 62  # no length: read until the connection closes


def encodable(value: Any) -> Any:
    """A JSON value whose strings UTF-8 can encode: a lone surrogate (JSON's "\\ud800", or a
    command-line argument that was not UTF-8) becomes "?"."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [encodable(item) for item in value]
    if isinstance(value, dict):
        return {encodable(key): encodable(item) for key, item in value.items()}
    return value


def _status(answer: bytes) -> tuple[int, bytes]:
    """An answer's HTTP status and body."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise DaemonError("the daemon sent a malformed answer")
    return int(status_line[1]), body


def send(home: Where, method: str, path: str, data: bytes, timeout: float) -> tuple[int, bytes]:
    """One request whose JSON body is already encoded: the answer's status and body.

    Raises DaemonError when the daemon is not there or does not answer within `timeout`
    seconds (Unanswered when it closed the connection without answering)."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: mnemoweave\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    where = socket_path(home)
    try:
        answer = _exchange(where, head.encode("utf-8") + data, time.monotonic() + timeout)
    except TimeoutError:
        raise DaemonError(f"the daemon did not answer {method} {path} in {timeout:g}s") from None
    except OSError as exc:
        raise DaemonError(f"no daemon at {where}: {exc.strerror or exc}") from None
    if not answer:
        raise Unanswered(
            f"the daemon stopped before answering {method} {path.split('?')[0]}; "
            "the request may have been applied"
        )
    return _status(answer)


def request(
    home: Where,
    method: str,
    path: str,
    body: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    """One API call (`path` is the URL path with any query string); the answer's JSON object.

    Raises DaemonError when the daemon is not there, does not answer within `timeout`
    seconds, or answers with a non-2xx status (with its message).
    """
    import json

    data = b"" if body is None else json.dumps(encodable(body), ensure_ascii=False).encode()
    status, answer = send(home, method, path, data, timeout)
    try:
        payload = json.loads(answer) if answer else {}
    except ValueError:
        raise DaemonError("the daemon sent a malformed answer") from None
    if not 200 <= status < 300:
        message = payload.get("error") if isinstance(payload, dict) else None
        raise DaemonError(message or f"the daemon answered HTTP {status}", status)
    if not isinstance(payload, dict):
        raise DaemonError("the daemon sent a malformed answer")
    return payload


def running(home: Where, timeout: float = PROBE_TIMEOUT) -> bool:
    """Does a daemon answer on the data dir's socket?"""
    if not os.path.exists(socket_path(home)):
        return False
    try:
        request(home, "GET", "/v1/daemon", timeout=timeout)
    except DaemonError:
        return False
    return True


def _daemon_holds_lock(home: Where) -> bool:
    holder = lock_holder(home)
    return holder is not None and holder[1] == DAEMON_ROLE


def lock_holder(home: Where) -> tuple[int, str] | None:
    """(pid, role) of the process holding the data dir's lock, or None when it is free."""
    try:
        fd = os.open(os.path.join(os.fspath(home), LOCK_NAME), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, role = os.pread(fd, 200, 0).decode("utf-8", "replace").strip().partition(" ")
            return (int(pid), role) if pid.isdigit() else (0, "")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def daemon_command() -> list[str]:
    """How to run `mnemoweave` without relying on PATH: $MNEMOWEAVE_BIN; as this process
    was run when that was `python -m mnemoweave` (a plugin's recorded command: the daemon
    it starts itself is started the same way, whichever starts first); the script next to
    this Python; else `python -m mnemoweave`."""
    override = os.environ.get("MNEMOWEAVE_BIN")
    if override:
        return [override]
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if getattr(spec, "name", "") == "mnemoweave.__main__":
        return [sys.executable, "-m", "mnemoweave"]
    script = os.path.join(os.path.dirname(sys.executable), "mnemoweave")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "mnemoweave"]


def _spawn(home: str) -> Any:
    """Start `mnemoweave serve` in its own session, output appended to the daemon log: its
    process (None when it could not be started)."""
    import subprocess

    log = os.path.join(home, LOG_NAME)
    try:
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "ab") as out:
            return subprocess.Popen(
                [*daemon_command(), "--home", home, "serve"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                close_fds=True,
                env={**os.environ, "MNEMOWEAVE_HOME": home},
            )
    except OSError:
        return None


def ensure_daemon(home: Where, budget_seconds: float = 5.0) -> bool:
    """A daemon answers for `home` within `budget_seconds`: start one if none runs.

    A daemon still warming up (it holds the lock but does not answer yet) is waited for,
    not started twice. False when none answered in time (one may still be starting), or
    when the one it started exited and no other is starting.
    """
    home = os.fspath(home)
    deadline = time.monotonic() + budget_seconds
    if running(home, timeout=min(PROBE_TIMEOUT, budget_seconds)):
        return True
    holder, started = lock_holder(home), None
    if (holder is None or holder[1] != DAEMON_ROLE) and (started := _spawn(home)) is None:
        return False
    pause = 0.01
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.1)
        if started is not None and started.poll() is not None:  # the one it started exited
            holder = lock_holder(home)
            if holder is None or holder[1] != DAEMON_ROLE:
                return running(home, timeout=PROBE_TIMEOUT)
            started = None  # another one is starting (it lost the race to it): wait for that
        if running(home, timeout=max(0.05, min(PROBE_TIMEOUT, deadline - time.monotonic()))):
            return True
    return False
