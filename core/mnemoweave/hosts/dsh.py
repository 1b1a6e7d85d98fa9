"""dsh (DeepSeek Harness): the bridge's payloads in, canonical events out, and the context
the bridge adds to the model's next step.

session-start  -> start; answers with the scene and nudge tiers
pre-step       -> the user messages entering a step; answers with the weave for the last one
turn-end       -> the turn's user messages and final assistant text, then idle (distill)
session-end    -> end (distill)

The bridge (plugins/dsh/index.js) reads dsh's live agent, session and session-log objects
and posts plain JSON: every payload names `session_id` and the session's `cwd` (its
project is the one of that directory); `pre-step` and `turn-end` carry the dsh `turn` number and
`messages: [{role, text}]`. Turn keys hash the session, turn, role and cleaned text, so a
message reported at pre-step and again at turn-end, or replayed from the spool (where it
was written cleaned), is stored once. Answers are `{"context": text}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import payloads
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.projects import project_from_cwd

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

HOST = "dsh"
EVENTS = ("session-start", "pre-step", "turn-end", "session-end")
# Who may speak in each event's messages: a step brings what the user typed; a turn's
# end also brings the assistant's final text.
SPEAKERS = {"pre-step": ("user",), "turn-end": ("user", "assistant")}


def turn_key(session: str, turn: int, role: str, text: str) -> str:
    """The same message of the same turn gets the same key, whoever reports it."""
    return f"{HOST}:{payloads.said_digest(session, turn, role, text=text)}"


def _turn(payload: dict[str, Any]) -> int:
    value = payload.get("turn")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("the payload's 'turn' must be a non-negative integer")
    return value


def _messages(event: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
    value = payload.get("messages")
    if not isinstance(value, list):
        raise InvalidInput("the payload's 'messages' must be a list")
    speakers = SPEAKERS[event]
    said = []
    for index, item in enumerate(value):
        role = item.get("role") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if role not in speakers:
            raise InvalidInput(
                f"messages[{index}]: 'role' must be one of {', '.join(speakers)} for {event}"
            )
        if not isinstance(text, str):
            raise InvalidInput(f"messages[{index}]: 'text' must be a string")
        if text.strip():
            said.append((role, text))
    return said


def events(event: str, payload: Any) -> list[Turn | SessionEvent]:
    """What one bridge payload announces, in order (raises InvalidInput on a bad payload)."""
    payloads.checked("dsh", EVENTS, event, payload)
    session = payloads.session(payload, "session_id")
    cwd = payloads.text(payload, "cwd", required=False)
    project = project_from_cwd(cwd or None)
    if event == "session-start":
        return [payloads.started(payload, session, HOST, project)]
    if event == "session-end":
        return [SessionEvent("end", session, host=HOST, project=project)]
    turn = _turn(payload)
    said: list[Turn | SessionEvent] = [
        Turn(
            session, role, text, key=turn_key(session, turn, role, text), host=HOST, project=project
        )
        for role, text in _messages(event, payload)
    ]
    if event == "turn-end":
        said.append(SessionEvent("idle", session, host=HOST, project=project))
    return said


def answer(
    engine: Engine, event: str, payload: Any, announced: list[Turn | SessionEvent]
) -> dict[str, Any] | None:
    """`{"context": ...}` for the bridge: the scene and nudge at session-start, the weave
    for the step's last user message at pre-step; None otherwise."""
    if event == "session-start":
        start = announced[0]
        text = engine.weave("", session=start.session, project=start.project, record=True).text
    elif event == "pre-step" and announced and isinstance(announced[-1], Turn):
        prompt = announced[-1]
        woven = engine.weave(
            prompt.text, session=prompt.session, project=prompt.project, record=True
        )
        text = woven.text
    else:
        return None
    return {"context": text} if text else None
