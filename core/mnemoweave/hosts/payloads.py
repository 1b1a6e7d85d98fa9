"""What every host adapter checks and derives the same way: the event and the payload's
shape, its text fields and session id, and the hash that keys a turn by what was said."""

from __future__ import annotations

import hashlib
from typing import Any

from mnemoweave.errors import InvalidInput
from mnemoweave.model import SessionEvent
from mnemoweave.text import kept


def checked(host: str, events: tuple[str, ...], event: str, payload: Any) -> dict[str, Any]:
    """The payload, once the event is one of `events` and the payload a JSON object."""
    if event not in events:
        raise InvalidInput(f"unknown {host} event {event!r}; use one of: {', '.join(events)}")
    if not isinstance(payload, dict):
        raise InvalidInput(f"the {host} payload must be a JSON object")
    return payload


def text(payload: dict[str, Any], name: str, *, required: bool = True) -> str:
    """A string field; an optional one may be missing or null (then "")."""
    value = payload.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"the payload's {name!r} must be a string")
    return value


def session(payload: dict[str, Any], name: str) -> str:
    """The session id field, stripped; refused when missing, not text, or empty."""
    value = text(payload, name).strip()
    if not value:
        raise InvalidInput(f"the payload has an empty {name}")
    return value


def said_digest(*parts: object, text: str) -> str:
    """A short hash of what was said (what is kept of it: cleaned and bounded, as it is
    stored and spooled) and where: the hook, the transcript and the spool report the same
    message under the same key, and a huge message costs no more than a long one."""
    head = "".join(f"{part}\x00" for part in parts).encode()
    return hashlib.sha256(head + kept(text).encode("utf-8", "replace")).hexdigest()[:24]


def started(payload: dict[str, Any], session: str, host: str, project: str) -> SessionEvent:
    """The session start a host's payload announces, with its `source` when it names one
    (startup, resume, clear, compact)."""
    source = payload.get("source")
    kind = source if isinstance(source, str) else ""
    return SessionEvent("start", session, source=kind, host=host, project=project)
