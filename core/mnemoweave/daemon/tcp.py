"""The optional loopback TCP listener, for clients that cannot reach the Unix socket.

Off unless `daemon_port` is set. It binds 127.0.0.1 and nothing else, serves the same API
as the socket, and answers only requests that carry `Authorization: Bearer <token>`, the
token being the content of `$MNEMOWEAVE_HOME/daemon.token` (mode 0600, made on first use,
kept across restarts). The Host header must name the loopback address, so a web page
that resolves its own name to 127.0.0.1 (DNS rebinding) is refused before the token is
even looked at. A refusal is a 401 or 403 with one line; the engine never sees it.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
TOKEN_NAME = "daemon.token"
_TOKEN_BYTES = 32


def token_path(home: Path) -> Path:
    return Path(home) / TOKEN_NAME


def token(home: Path) -> str:
    """The data dir's access token, made (0600, never readable by others) when missing."""
    path = token_path(home)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return _make(path)
    with os.fdopen(fd, encoding="ascii", errors="replace") as handle:
        if os.fstat(handle.fileno()).st_mode & 0o077:
            os.fchmod(handle.fileno(), 0o600)
        value = handle.read().strip()
    return value if len(value) >= 32 and value.isascii() else _make(path, replace=True)


def _make(path: Path, replace: bool = False) -> str:
    value = secrets.token_urlsafe(_TOKEN_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(value + "\n")
    if replace:
        os.replace(partial, path)
    else:
        try:
            os.link(partial, path)  # never overwrite a token another process just made
        except FileExistsError:
            return token(path.parent)
        finally:
            partial.unlink(missing_ok=True)
    return value


def refusal(headers: Any, port: int, expected: str | None) -> tuple[int, str] | None:
    """Why a TCP request is refused (status, one line), or None when it may pass; with
    `expected` None only the Host header is checked (the web page's files, its sign-in)."""
    host = (headers.get("Host") or "").strip().lower()
    if host not in {f"{HOST}:{port}", f"localhost:{port}"}:
        return 403, f"the Host header must be {HOST}:{port} or localhost:{port}"
    if expected is None:
        return None
    scheme, _, given = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return 401, f"a bearer token is required (it is in $MNEMOWEAVE_HOME/{TOKEN_NAME})"
    if not hmac.compare_digest(given.strip().encode(), expected.encode()):
        return 401, "the bearer token is wrong"
    return None
