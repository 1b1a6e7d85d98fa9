"""OpenCode: what the mnemoweave plugin (plugins/opencode/mnemoweave.js) posts, canonical
events out, and the answer the plugin puts into the chat.

The plugin does not forward OpenCode's own hook objects (they change between releases);
it sends one small JSON object per event, built from them. Every payload carries
`sessionID` (required) and the `directory` and `worktree` the plugin was loaded for
(optional; the project is the git root of `directory`, else of `worktree` unless that is
OpenCode's "/" for a directory outside git).

event                           payload beyond the common fields -> events; answer
chat.message                    `messageID`, `text` (the user's text parts, joined)
                                -> the user turn; `{"context": weave for the text}`
session.created                 -> start; `{"context": scene and nudge}`
session.idle                    `messages`: `[{"id", "text", "role"?}]`, the turn's
                                assistant messages (role defaults to assistant; user is
                                accepted too) -> those turns, then idle (distill)
session.compacted               -> pre_compact (distill)
experimental.session.compacting -> nothing stored; `{"context": scene and nudge}` for
                                the plugin to add to the compaction prompt

An answer is None when there is nothing worth saying; the plugin pushes a context as one
synthetic text part after the user's (chat.message), keeps it for the session's first
message in case that weave fails (session.created), or appends it to the compaction
context. Turn keys are `opencode:<session>:<message id>` (a hash of role and text when a
message has no id), so a payload replayed from the spool, or a message sent again at the
next idle, is stored once. The plugin's budgets (250 ms for chat.message), daemon start and
spool are described at the top of the plugin.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..model import SessionEvent, Turn
from ..projects import project_from_cwd

if TYPE_CHECKING:
    from ..engine import Engine

HOST = "opencode"
EVENTS = (
    "chat.message",
    "session.created",
    "session.idle",
    "session.compacted",
    "experimental.session.compacting",
)
MAX_MESSAGES = 200  # messages one idle payload may carry
ROLES = ("assistant", "user")


def turn_key(session: str, role: str, text: str, message_id: str | None = None) -> str:
    """The message id when there is one (ids are unique per session), else the text."""
    if message_id:
        return f"{HOST}:{session}:{message_id}"
    digest = hashlib.sha256(f"{session}\x00{role}\x00{text.strip()}".encode()).hexdigest()
    return f"{HOST}:{session}:{digest[:24]}"


def _optional_text(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"the payload's {name!r} must be a string")
    return value


def project_of(payload: dict[str, Any]) -> str:
    """The git root of the plugin's directory (or worktree; "/" means no worktree)."""
    directory = _optional_text(payload, "directory").strip()
    worktree = _optional_text(payload, "worktree").strip()
    if not directory and worktree != "/":
        directory = worktree
    return project_from_cwd(directory or None)


def _messages(payload: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, text, id) of the idle payload's messages, in order."""
    given = payload.get("messages", [])
    if given is None:
        return []
    if not isinstance(given, list):
        raise InvalidInput("the payload's 'messages' must be a list")
    if len(given) > MAX_MESSAGES:
        raise InvalidInput(f"the payload carries {len(given)} messages; at most {MAX_MESSAGES}")
    found = []
    for number, message in enumerate(given):
        if not isinstance(message, dict):
            raise InvalidInput(f"message {number} of the payload must be an object")
        text, ident = _optional_text(message, "text"), _optional_text(message, "id").strip()
        role = _optional_text(message, "role").strip() or "assistant"
        if role not in ROLES:
            raise InvalidInput(f"message {number} has role {role!r}; use assistant or user")
        if text.strip():
            found.append((role, text, ident))
    return found


def events(event: str, payload: Any) -> list[Turn | SessionEvent]:
    """What one plugin payload announces, in order (raises InvalidInput on a bad payload)."""
    if event not in EVENTS:
        raise InvalidInput(f"unknown OpenCode event {event!r}; use one of: {', '.join(EVENTS)}")
    if not isinstance(payload, dict):
        raise InvalidInput("the OpenCode payload must be a JSON object")
    session = payload.get("sessionID")
    if not isinstance(session, str):
        raise InvalidInput("the payload's 'sessionID' must be a string")
    session = session.strip()
    if not session:
        raise InvalidInput("the payload has an empty sessionID")
    where = {"host": HOST, "project": project_of(payload)}

    def turn(role: str, text: str, ident: str = "") -> Turn:
        return Turn(session, role, text, key=turn_key(session, role, text, ident), **where)

    if event == "chat.message":
        if not isinstance(payload.get("text"), str):
            raise InvalidInput("the payload's 'text' must be a string")
        text, ident = payload["text"], _optional_text(payload, "messageID").strip()
        return [turn("user", text, ident)] if text.strip() else []
    if event == "session.created":
        return [SessionEvent("start", session, source="created", **where)]
    if event == "session.idle":
        said = [turn(role, text, ident) for role, text, ident in _messages(payload)]
        return [*said, SessionEvent("idle", session, **where)]
    if event == "session.compacted":
        return [SessionEvent("pre_compact", session, **where)]
    project_of(payload)  # experimental.session.compacting: checked, nothing to store
    return []


def _context(text: str) -> dict[str, Any] | None:
    return {"context": text} if text else None


def handle(engine: Engine, event: str, payload: Any) -> dict[str, Any] | None:
    """Store what the payload announces; the answer for the plugin, or None."""
    announced = events(event, payload)
    for item in announced:
        engine.handle(item)
    session = payload["sessionID"].strip()
    project = project_of(payload)
    if event == "chat.message" and announced:
        return _context(engine.weave(announced[0].text, session=session, project=project).text)
    if event in ("session.created", "experimental.session.compacting"):
        return _context(engine.weave("", session=session, project=project).text)
    return None
