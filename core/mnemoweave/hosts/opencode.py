"""OpenCode: what the mnemoweave plugin (plugins/opencode/mnemoweave.js) posts, canonical
events out, and the answer the plugin puts into the chat.

The plugin does not forward OpenCode's own hook objects (they change between releases);
it sends one small JSON object per event, built from them. Every payload carries
`sessionID` (required) and the `directory` and `worktree` the plugin was loaded for
(optional; the project is the one of `directory`, else of `worktree` unless that is
OpenCode's "/" for a directory outside git).

event                           payload beyond the common fields -> events; answer
chat.message                    `messageID`, `text` (the user's text parts, joined)
                                -> the user turn; `{"context": weave for the text}`
session.created                 -> start; `{"context": scene and nudge}`
session.idle                    `messages`: `[{"id", "text", "role"?}]`, the turn's
                                assistant messages (role defaults to assistant; user is
                                accepted too) -> those turns, then idle (distill)
session.compacted               -> pre_compact (distill; the session's context is new)
experimental.session.compacting -> pre_compact too; `{"context": the session's capsule
                                and the nudge}` for the plugin to add to the compaction
                                prompt

An answer is None when there is nothing worth saying; the plugin pushes a context as one
synthetic text part after the user's (chat.message), keeps it for the session's first
message in case that weave fails (session.created), or appends it to the compaction
context. Only the chat.message answer counts as received by the session (see weave.py):
the first message's weave therefore carries the scene and nudge too. Turn keys are
`opencode:<session>:<message id>` (a hash of role and cleaned text when a message has no
id), so a payload replayed from the spool, or a message sent again at the
next idle, is stored once. The plugin's budgets (250 ms for chat.message), daemon start and
spool are described at the top of the plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import payloads
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.projects import project_from_cwd

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

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
    return f"{HOST}:{session}:{payloads.said_digest(session, role, text=text)}"


def project_of(payload: dict[str, Any]) -> str:
    """The project of the plugin's directory (or worktree; "/" means no worktree)."""
    directory = payloads.text(payload, "directory", required=False).strip()
    worktree = payloads.text(payload, "worktree", required=False).strip()
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
        text, ident = (
            payloads.text(message, "text", required=False),
            payloads.text(message, "id", required=False).strip(),
        )
        role = payloads.text(message, "role", required=False).strip() or "assistant"
        if role not in ROLES:
            raise InvalidInput(f"message {number} has role {role!r}; use assistant or user")
        if text.strip():
            found.append((role, text, ident))
    return found


def events(event: str, payload: Any) -> list[Turn | SessionEvent]:
    """What one plugin payload announces, in order (raises InvalidInput on a bad payload)."""
    payloads.checked("OpenCode", EVENTS, event, payload)
    session = payloads.session(payload, "sessionID")
    project = project_of(payload)

    def turn(role: str, text: str, ident: str = "") -> Turn:
        return Turn(
            session,
            role,
            text,
            key=turn_key(session, role, text, ident),
            host=HOST,
            project=project,
        )

    if event == "chat.message":
        text = payloads.text(payload, "text")
        ident = payloads.text(payload, "messageID", required=False).strip()
        return [turn("user", text, ident)] if text.strip() else []
    if event == "session.created":
        return [SessionEvent("start", session, source="created", host=HOST, project=project)]
    if event == "session.idle":
        said = [turn(role, text, ident) for role, text, ident in _messages(payload)]
        return [*said, SessionEvent("idle", session, host=HOST, project=project)]
    # experimental.session.compacting comes first (its answer goes into the compaction
    # prompt), session.compacted after; either may be missing, so both announce it.
    return [SessionEvent("pre_compact", session, host=HOST, project=project)]


def answer(
    engine: Engine, event: str, payload: dict[str, Any], announced: list[Turn | SessionEvent]
) -> dict[str, Any] | None:
    """The answer for the plugin: the weave for the prompt at chat.message, the scene and
    nudge at session.created and for the compaction prompt; None otherwise."""
    if event == "chat.message" and announced and isinstance(announced[0], Turn):
        query = announced[0].text
    elif event in ("session.created", "experimental.session.compacting"):
        query = ""
    else:
        return None
    session, project = payload["sessionID"].strip(), project_of(payload)
    # Only chat.message puts its answer into the chat: the others are kept as a fallback
    # or go into the compaction prompt, so they do not count as received.
    record = event == "chat.message"
    text = engine.weave(query, session=session, project=project, record=record).text
    return {"context": text} if text else None
