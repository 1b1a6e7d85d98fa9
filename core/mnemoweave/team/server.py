"""The team's server, as a member sees it: the member's token opens its team's records.

The server (`team serve`, service.py) knows from the token who the member is and which
team it belongs to; it stamps the authors and the times of what is published. A shared
memory's id is its content id (a hash of the normalised text, the project key and the
kind), computed alike here and there, so publishing a fact twice writes one record.

The token goes in the `Authorization: Bearer` header of requests to `team_url` only, every
request bounded by TIMEOUT; plain http is allowed on loopback (or with allow_insecure).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ipaddress
import json
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from mnemoweave.errors import InvalidInput, MnemoweaveError
from mnemoweave.store.team import TeamRecord
from mnemoweave.text import normalise

TIMEOUT = 30.0  # seconds one request to the team's server may take
MAX_ANSWER = 256 << 20  # bytes read of one answer (a page of 1,000 records is about 20 MB)
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,58}[A-Za-z0-9])?")


class TeamError(MnemoweaveError):
    """The team's server refused or could not be reached (the message says which)."""


def content_id(text: str, project: str, kind: str) -> str:
    """The stable id of a shared memory: the same fact in the same project is one record."""
    key = "\0".join((normalise(text), project, kind))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def pack(vector: Any) -> str:
    """An embedding on the wire: its float32 values, little-endian, in base64 (a JSON
    list of numbers costs several times the bytes and the time)."""
    import numpy as np

    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def unpack(text: Any, dim: int) -> Any:
    """The embedding `pack` wrote, checked: `dim` finite values, else InvalidInput."""
    import numpy as np

    try:
        vector = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4")
    except (TypeError, ValueError):
        vector = None
    if vector is None or len(vector) != dim or not np.isfinite(vector).all():
        raise InvalidInput(f"a record's 'vector' must be {dim} finite float32 values, in base64")
    return vector.astype(np.float32)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, allow_insecure: bool) -> tuple[str, int, bool]:
    """(host, port, tls) of a team_url; plain http to another machine needs allow_insecure."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"team_url {url!r}: use https://HOST[:PORT] (or http:// on loopback)")
    tls = parts.scheme == "https"
    if not tls and not loopback(parts.hostname) and not allow_insecure:
        raise InvalidInput(
            f"team_url {url} is plain http to another machine: the token would travel in"
            " clear; use https, or --allow-insecure (team_allow_insecure = true)"
        )
    return parts.hostname, parts.port or (443 if tls else 80), tls


def checked(pattern: re.Pattern[str], value: str, what: str, allowed: str) -> str:
    """`value` when it matches `pattern`; else a one-line refusal naming what is allowed."""
    if not pattern.fullmatch(value):
        raise InvalidInput(
            f"{what} {value!r}: use {allowed} (starting and ending with a letter or digit)"
        )
    return value


def check_name(name: str) -> str:
    return checked(NAME, name, "team name", "1-60 letters, digits, '.', '_' or '-'")


def why(exc: Exception) -> str:
    """One line for a failed request: what the server said, or that it cannot be reached."""
    text = " ".join(str(exc).split())
    if isinstance(exc, TeamError):
        return text
    if isinstance(exc, OSError):
        return f"the server cannot be reached ({type(exc).__name__}: {text[:120]})"
    return f"{type(exc).__name__}: {text[:160]}"


@dataclass(frozen=True)
class Change:
    """A record read from the server: a memory to mirror, or a tombstone."""

    record: TeamRecord
    tombstone: bool
    vector: Any  # the embedding (None for a tombstone)


class TeamServer:
    """The team's server at `url`, through one member's token, for one embedding model."""

    def __init__(
        self, url: str, token: str, name: str, model: str, dim: int, allow_insecure: bool
    ) -> None:
        self.url = url
        self.host, self.port, self.tls = check_url(url, allow_insecure)
        self.expected = check_name(name) if name else ""
        self.token, self.model, self.dim = token, model, dim
        self.team = self.member = ""
        self._joined = False

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self.tls:
            context = ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.host, self.port, timeout=TIMEOUT, context=context
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        try:
            conn.request(method, path, data, headers)
            answer = conn.getresponse()
            raw = answer.read(MAX_ANSWER)
        finally:
            conn.close()
        try:
            found = json.loads(raw)
        except ValueError:
            found = {"error": raw[:200].decode("utf-8", "replace")}
        if answer.status == 401:
            raise TeamError(f"the server refused the token (team_token): {found.get('error')}")
        if answer.status == 409:
            raise TeamError(str(found.get("error")))
        if answer.status >= 400:
            raise TeamError(f"the team server answered {answer.status}: {found.get('error')}")
        return found

    def _welcome(self, found: dict[str, Any]) -> None:
        self.team, self.member = str(found["team"]), str(found["member"])
        if self.expected and self.expected != self.team:
            raise TeamError(
                f"team_token is a member of team {self.team}, not {self.expected}"
                " (team_name): ask for a token of that team, or set team_name"
                f" = {self.team!r}"
            )

    def ready(self) -> TeamServer:
        """Joined: the team's collection exists for this model (checked before anything
        is sent), and the member and its team are known."""
        if not self._joined:
            self._welcome(
                self._call("POST", "/v1/team/join", {"model": self.model, "dim": self.dim})
            )
            self._joined = True
        return self

    def info(self) -> dict[str, Any]:
        """The member, its team and the team's model and size (nothing is created)."""
        found = self._call("GET", "/v1/team")
        self._welcome(found)
        return dict(found)

    def publish(self, records: Sequence[TeamRecord], vectors: Sequence[Any]) -> list[str]:
        """Write memories (the server adds this member to their authors); their ids."""
        if not records:
            return []
        sent = [
            {
                "project": r.project,
                "kind": r.kind,
                "text": r.text,
                "created": r.created,
                "vector": pack(v),
            }
            for r, v in zip(records, vectors, strict=True)
        ]
        found = self.ready()._call(
            "POST", "/v1/team/publish", {"model": self.model, "records": sent}
        )
        return [str(item["cid"]) for item in found["records"]]

    def retract(self, cids: Sequence[str]) -> int:
        """Take this member off these records (the last author's retract buries one)."""
        if not cids:
            return 0
        found = self.ready()._call(
            "POST", "/v1/team/retract", {"model": self.model, "cids": list(cids)}
        )
        return int(found["retracted"])

    def changed(self, since: float, limit: int, offset: int) -> list[Change]:
        """A page of the team's records updated after `since` (tombstones included)."""
        query = urlencode({"since": repr(since), "limit": limit, "offset": offset})
        found = self.ready()._call("GET", f"/v1/team/changes?{query}")
        return [
            Change(
                TeamRecord(
                    str(r["cid"]),
                    str(r["project"]),
                    str(r["kind"]),
                    str(r["text"]),
                    tuple(str(a) for a in r["authors"]),
                    float(r["created"]),
                    float(r["updated"]),
                ),
                bool(r["tombstone"]),
                None if r["tombstone"] else unpack(r["vector"], self.dim),
            )
            for r in found["records"]
        ]

    def count(self) -> int:
        return int(self.info()["records"])
