"""What every host adapter checks and derives the same way: the event and the payload's
shape, its text fields and session id, and the hash that keys a turn by what was said."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.projects import project_from_cwd
from mnemoweave.text import kept

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

MAX_CONTEXT = 10_000  # Claude Code cuts hook output strings at 10,000 characters; the
# other hosts get no more


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


def cwd(payload: dict[str, Any]) -> str | None:
    """The payload's working directory, when it gives one."""
    found = payload.get("cwd")
    return found if isinstance(found, str) else None


def woven(engine: Engine, announced: list[Turn | SessionEvent]) -> str:
    """What a session's start (no query: its scene and nudge) or a prompt (its weave) is
    given, recorded as given."""
    first = announced[0]
    query = first.text if isinstance(first, Turn) else ""
    return engine.weave(query, session=first.session, project=first.project, record=True).text


def context(event: str, text: str) -> dict[str, Any] | None:
    """The hook output that adds `text` to the model's context (Claude Code, Codex and
    Gemini read the same shape), cut to MAX_CONTEXT and still closed; None for no text."""
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": clipped(text)}}


def clipped(text: str) -> str:
    """The woven block within MAX_CONTEXT, still closed."""
    if len(text) <= MAX_CONTEXT:
        return text
    closing = text[text.rfind("\n") :]
    return text[: MAX_CONTEXT - len(closing) - 1].rsplit("\n", 1)[0] + closing


@dataclass(frozen=True)
class Exchange:
    """A host whose hooks tell a session as its start, each prompt, each reply and its end
    (Codex, Gemini): the events of a payload and the answer, the same way for each.

    The start and the prompt are answered (the scene and nudge, the prompt's weave); the
    other events print nothing. A turn's key holds the payload's `mark` field (a turn id,
    a time), so the same words said again later are a turn of their own and a replayed
    payload is stored once."""

    host: str
    title: str  # the host's name in errors
    prompt: tuple[str, str]  # (event, field of the user's words)
    reply: tuple[str, str]  # (event, field of the assistant's last message)
    mark: str
    said: Callable[[str], str] = str.strip  # the user's words of the prompt field

    @property
    def names(self) -> tuple[str, ...]:
        return ("SessionStart", self.prompt[0], self.reply[0], "SessionEnd")

    def key(self, session: str, role: str, text: str, mark: str = "") -> str:
        return f"{self.host}:{said_digest(session, role, mark, text=text)}"

    def events(self, event: str, payload: Any) -> list[Turn | SessionEvent]:
        """What one hook payload announces, in order (raises InvalidInput on a bad one)."""
        checked(self.title, self.names, event, payload)
        session_id = session(payload, "session_id")
        project = project_from_cwd(cwd(payload))
        mark = text(payload, self.mark, required=False).strip()

        def turn(role: str, words: str) -> Turn:
            key = self.key(session_id, role, words, mark)
            return Turn(session_id, role, words, key=key, host=self.host, project=project)

        if event == "SessionStart":
            return [started(payload, session_id, self.host, project)]
        if event == self.prompt[0]:
            words = self.said(text(payload, self.prompt[1]))
            return [turn("user", words)] if words else []
        if event == self.reply[0]:
            reply = text(payload, self.reply[1], required=False)
            answer = [turn("assistant", reply)] if reply.strip() else []
            return [*answer, SessionEvent("idle", session_id, host=self.host, project=project)]
        return [SessionEvent("end", session_id, host=self.host, project=project)]

    def answer(
        self,
        engine: Engine,
        event: str,
        payload: dict[str, Any],
        announced: list[Turn | SessionEvent],
    ) -> dict[str, Any] | None:
        """The start's scene and nudge, the prompt's weave; None (print nothing) else."""
        if event not in ("SessionStart", self.prompt[0]) or not announced:
            return None
        return context(event, woven(engine, announced))
