"""The records everything passes around: small frozen dataclasses of plain data."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import InvalidInput

MEMORY_KINDS = ("pref", "pers", "skill", "mission", "conclusion", "fact")
ROLES = ("user", "assistant", "tool")

# External ids carry their table: m_12 is memory 12, t_5 is turn 5, c_3 is card 3.
PREFIXES = {"m": "memory", "t": "turn", "c": "card"}
_ID = re.compile(r"^([mtc])_(\d+)$")


def parse_id(ref: str) -> tuple[str, int]:
    """'m_12' -> ('memory', 12); raises InvalidInput for anything else."""
    match = _ID.match(ref.strip())
    if not match:
        raise InvalidInput(f"not a valid id: {ref!r} (expected m_N, t_N or c_N)")
    return PREFIXES[match.group(1)], int(match.group(2))


def check_kind(kind: str) -> str:
    if kind not in MEMORY_KINDS:
        raise InvalidInput(f"unknown kind {kind!r}; use one of: {', '.join(MEMORY_KINDS)}")
    return kind


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; use one of: {', '.join(ROLES)}")
    return role


_TIME_FIELDS = {"ts", "created", "updated", "last_access", "deleted_at", "decided"}


def iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Record:
    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output; timestamps become ISO 8601 strings."""
        data = asdict(self)
        for name in _TIME_FIELDS & data.keys():
            data[name] = iso(data[name])
        return data


@dataclass(frozen=True)
class Turn(Record):
    """One raw message of a session: the evidence everything else points at."""

    id: str
    session: str
    role: str
    text: str
    ts: float
    seq: int
    host: str = ""
    project: str = ""
    kind: str | None = None
    kind_conf: float | None = None


@dataclass(frozen=True)
class Memory(Record):
    """A piece of durable knowledge the weave may show."""

    id: str
    kind: str
    title: str
    body: str
    project: str
    importance: int
    created: float
    updated: float
    tags: tuple[str, ...] = ()
    weight: float = 1.0
    access_count: int = 0
    last_access: float | None = None
    evidence: tuple[str, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None
    status: str = "active"
    deleted_at: float | None = None


@dataclass(frozen=True)
class Hit(Record):
    """One search result."""

    id: str
    kind: str
    text: str
    score: float
    project: str
    created: float
    extra: dict[str, Any] = field(default_factory=dict)
