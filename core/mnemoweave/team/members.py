"""The team server's members: one token each, issued and revoked with `team member`.

The members live in `members.json` in the server's directory (owner-only): for each name,
its team and the SHA-256 of its token (the token itself is shown once, when issued, and
kept nowhere). The server reads the file again whenever it changes, so a token removed
is refused from the next request on, with no restart. Several servers in front of one
Chroma deployment share the file (a mounted secret or a shared volume) and so the members.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemoweave.errors import InvalidInput
from mnemoweave.team.server import check_name, checked

FILE = "members.json"
TOKEN_PREFIX = "mwt_"  # a mnemoweave team token: mwt_ and 43 url-safe characters
MEMBER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._@+-]{0,62}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Member:
    name: str
    team: str


def check_member(name: str) -> str:
    return checked(MEMBER, name, "member name", "1-64 letters, digits, '.', '_', '@', '+' or '-'")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    if not isinstance(found, dict):
        raise InvalidInput(f"{path}: not a members file")
    return found


@contextmanager
def _editing(directory: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The members, to change under the directory's lock; written whole when done."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(directory / ".members.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        members = _read(directory / FILE)
        yield members
        fresh = directory / f".{FILE}.{os.getpid()}"
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(members, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, directory / FILE)


def add(directory: Path, name: str, team: str) -> str:
    """Issue a member a token (returned, and shown only now); a name already there is
    refused (remove it first: its old token stops working then)."""
    check_member(name)
    check_name(team)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with _editing(directory) as members:
        if name in members:
            raise InvalidInput(f"{name} is already a member (of team {members[name]['team']})")
        members[name] = {"team": team, "token_sha256": digest(token), "added": time.time()}
    return token


def remove(directory: Path, name: str) -> Member:
    """Revoke a member's token; the member it was."""
    with _editing(directory) as members:
        if name not in members:
            raise InvalidInput(f"{name} is not a member")
        gone = members.pop(name)
    return Member(name, str(gone["team"]))


def listed(directory: Path) -> list[dict[str, Any]]:
    return [
        {"name": name, "team": entry["team"], "added": entry["added"]}
        for name, entry in sorted(_read(directory / FILE).items())
    ]


class Members:
    """Who a token belongs to, read from the members file again whenever it changes."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self._seen: tuple[int, int, int] | None = None
        self._by_digest: dict[str, Member] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        self._refresh()
        return len(self._by_digest)

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
            seen = (info.st_mtime_ns, info.st_size, info.st_ino)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if seen == self._seen:
                return
            found = _read(self.path) if seen is not None else {}
            self._by_digest = {
                str(entry["token_sha256"]): Member(name, str(entry["team"]))
                for name, entry in found.items()
            }
            self._seen = seen

    def who(self, token: str) -> Member | None:
        """The member this token was issued to, or None (a revoked or unknown token)."""
        if not token:
            return None
        self._refresh()
        return self._by_digest.get(digest(token))
