"""The records everything passes around: small frozen dataclasses of plain data."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeGuard, get_args

from mnemoweave.errors import InvalidInput
from mnemoweave.secrets import holds_secret

# Each value list is declared once, as a type; its tuple is what code checks against.
MemoryKind = Literal["pref", "pers", "skill", "mission", "conclusion", "fact"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)
ROLES = ("user", "assistant", "tool")
Source = Literal["memories", "turns", "team", "all"]  # team: the team mirror (search_hits)
SOURCES: tuple[Source, ...] = get_args(Source)
Mode = Literal["hybrid", "lexical", "dense"]  # which search channels
MODES: tuple[Mode, ...] = get_args(Mode)
Decision = Literal["accept", "reject"]  # of a pending card
DECISIONS: tuple[Decision, ...] = get_args(Decision)
Verdict = Literal["useful", "wrong", "outdated"]  # feedback on a memory
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

# External ids carry their table: m_12 is memory 12, t_5 is turn 5, c_3 is card 3.
PREFIXES = {"m": "memory", "t": "turn", "c": "card"}
_ID = re.compile(r"^([mtc])_(\d+)$")
# A needle tag: a bracketed word of up to 12 characters opening a memory ("[坑] ...",
# "【坑】..."); not a Markdown link ("[text](url)").
NEEDLE = re.compile(r"\[([^\[\]\s]{1,12})\](?!\()|【([^【】\s]{1,12})】")


def needle_tags(text: str) -> tuple[str, ...]:
    """The needle tags a text opens with, brackets and all: "[坑][决策] x" -> ("[坑]", "[决策]")."""
    found, rest = [], text.lstrip()
    while match := NEEDLE.match(rest):
        found.append(match.group())
        rest = rest[match.end() :].lstrip()
    return tuple(found)


def same_tag(tag: str, wanted: str) -> bool:
    """Whether `tag` is the one asked for: a needle tag is found with or without brackets."""
    return tag.strip("[]【】") == wanted.strip().strip("[]【】") if wanted.strip() else False


def parse_id(ref: str) -> tuple[str, int]:
    """'m_12' -> ('memory', 12); raises InvalidInput for anything else."""
    match = _ID.match(ref.strip())
    if not match:
        if NEEDLE.fullmatch(ref.strip()):
            raise InvalidInput(
                f"{ref.strip()} is a tag, not an id: select by it with "
                f"`forget --tag '{ref.strip()}'` (MCP: tag), which lists the memories first"
            )
        raise InvalidInput(f"not a valid id: {ref!r} (expected m_N, t_N or c_N)")
    return PREFIXES[match.group(1)], int(match.group(2))


def check_kind(kind: str) -> str:
    if kind not in MEMORY_KINDS:
        raise InvalidInput(f"unknown kind {kind!r}; use one of: {', '.join(MEMORY_KINDS)}")
    return kind


def check_importance(value: int) -> int:
    if not 1 <= value <= 5:
        raise InvalidInput(f"importance must be between 1 and 5, got {value}")
    return value


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; use one of: {', '.join(ROLES)}")
    return role


def check_identifier(value: str, name: str, separator: str = "") -> str:
    """An id (a session, host, key, project or actor) as given, refused when it holds a
    secret (a key is checked a part at a time, `host:session:message`, a URL kept whole);
    the value is not repeated in the error."""
    parts = re.split(re.escape(separator) + "(?!//)", value) if separator else [value]
    if value and any(holds_secret(part) for part in parts):
        raise InvalidInput(f"the {name} holds what looks like a secret: refused, nothing stored")
    return value


_TIME_FIELDS = {"ts", "created", "updated", "last_access", "deleted_at", "decided"}
EARLIEST, LATEST = 0.0, 7_258_118_400.0  # 1970-01-01 and 2200-01-01 UTC, in epoch seconds


def sane_time(ts: object) -> TypeGuard[float]:
    """A finite epoch time between 1970 and 2200 (NaN and infinities fail the range)."""
    return isinstance(ts, int | float) and not isinstance(ts, bool) and EARLIEST <= ts < LATEST


def check_time(ts: Any, name: str = "ts") -> Any:
    """`ts` itself (epoch seconds), refused unless it is a finite time between 1970 and 2200."""
    if not sane_time(ts):
        raise InvalidInput(
            f"{name} must be a time between 1970 and 2200 in epoch seconds, got {ts!r}"
        )
    return ts


def iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string; None for None, and for a time outside
    1970..2200 (rows stored before times were checked)."""
    if not sane_time(ts):
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def age(seconds: float) -> str:
    """A short age: 12d, 3h, 5m or now (? when it cannot be told)."""
    if not math.isfinite(seconds):
        return "?"
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def counted(number: int, noun: str, plural: str = "") -> str:
    """A count with its noun in the right number: 1 card, 2 cards, 1 memory, 3 memories."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


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
    """One message of a session: announced by an adapter, then stored as evidence.

    An announced turn has no id yet; a stored one has its id (t_N), position in the
    session (seq) and classification. `key` makes a turn idempotent across sources (a hook
    and a transcript may both report it).
    """

    session: str
    role: str
    text: str
    ts: float | None = None
    host: str = ""
    project: str = ""
    key: str | None = None
    id: str | None = None
    seq: int | None = None
    kind: str | None = None
    kind_conf: float | None = None

    @property
    def ref(self) -> str:
        """The stored turn's id (an announced turn has none yet)."""
        if self.id is None:
            raise ValueError("a turn not stored yet has no id")
        return self.id


SESSION_EVENTS = ("start", "idle", "pre_compact", "end")


@dataclass(frozen=True)
class SessionEvent(Record):
    """Something that happened to a session as a whole (start, idle, pre_compact, end)."""

    kind: str
    session: str
    host: str = ""
    project: str = ""
    ts: float | None = None
    source: str = ""  # e.g. Claude Code's SessionStart source: startup|resume|clear|compact

    def __post_init__(self) -> None:
        if self.kind not in SESSION_EVENTS:
            raise InvalidInput(
                f"unknown session event {self.kind!r}; use one of: {', '.join(SESSION_EVENTS)}"
            )
        if self.ts is not None:
            check_time(self.ts)


MemoryStatus = Literal["active", "superseded", "trashed"]
MEMORY_STATUSES: tuple[MemoryStatus, ...] = get_args(MemoryStatus)


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
    origin: str = "user"  # user, import, card (accepted as proposed) or agent (edited)


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


LISTED_SCORE = 0.0005  # the best hit scores about 1; below this one matches next to nothing


def listed(hits: list[Hit]) -> list[Hit]:
    """The hits a search lists: those scoring at least LISTED_SCORE (not, say, a memory
    found by a word that almost every memory holds)."""
    return [hit for hit in hits if hit.score >= LISTED_SCORE]


TURN_KINDS = ("pref", "pers", "skill", "mission", "conclusion", "chat")


@dataclass(frozen=True)
class Classification(Record):
    """What a turn is about, and how sure the classifier is (0..1)."""

    kind: str
    confidence: float


@dataclass(frozen=True)
class Card(Record):
    """A candidate memory awaiting the agent's review, with the turns it came from."""

    id: str
    summary: str
    suggested_kind: str
    evidence: tuple[str, ...]
    confidence: float
    project: str = ""
    topic: str = ""
    status: str = "pending"
    created: float | None = None
    decided: float | None = None
    memory_id: str | None = None
    conflicts: tuple[str, ...] = ()  # active memories it clashes with (an acceptance held)
    proposal: str = ""  # "r_N ITEM": accepting it applies that consolidation item


TIERS = ("scene", "brief", "proposed", "knowledge", "nudge")
# What a session starts with (brief.py): the tiers that spend `brief_budget`, not the weave's.
BRIEF_TIERS = ("brief", "proposed")


@dataclass(frozen=True)
class Line(Record):
    """One line of the weave: text plus the id the agent can expand, its age and score."""

    text: str
    ref: str = ""
    age: float | None = None  # seconds
    score: float = 0.0
    label: str = ""  # e.g. the memory kind, shown as [pref]
    also: tuple[str, ...] = ()  # further ids the line stands for (an exchange's answer)


@dataclass(frozen=True)
class Block(Record):
    """A group of weave lines for one tier, contributed by a plugin."""

    tier: str
    lines: tuple[Line, ...]
    source: str = ""
    priority: float = 0.0  # higher first within a tier
