"""The memory proxy as a host: it reaches memory the way every host's hook does, through the
daemon's hooks route (`/v1/hooks/proxy/{event}`: answer first, store after).

- `prompt`, before a request goes upstream: the prompt as a turn, answered with the weave
  for it (`{"context": ...}`, None when nothing is woven) and stored once the answer is out.
- `reply`, once the response is out: the exchange's turns (the prompt again, the reply, a
  line per tool call); keys make a turn sent twice stored once.
- `idle`, when a conversation went quiet or long: the session event that distills it.

Every payload names the conversation (`session`) and its project (a key the proxy
resolved); each turn is `{"role", "text", "key"}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import payloads
from mnemoweave.model import ROLES, SessionEvent, Turn

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

HOST = "proxy"
EVENTS = ("prompt", "reply", "idle")


def events(event: str, payload: Any) -> list[Turn | SessionEvent]:
    """What one of the proxy's payloads announces (raises InvalidInput on a bad one)."""
    payloads.checked(HOST, EVENTS, event, payload)
    session = payloads.session(payload, "session")
    project = payloads.text(payload, "project", required=False)
    if event == "idle":
        return [SessionEvent("idle", session, host=HOST, project=project)]
    said = payload.get("turns")
    if not isinstance(said, list):
        raise InvalidInput("the proxy payload's 'turns' must be a list")
    turns: list[Turn | SessionEvent] = []
    for item in said:
        if not isinstance(item, dict):
            raise InvalidInput("each of the proxy payload's turns must be a JSON object")
        role = payloads.text(item, "role")
        if role not in ROLES:
            raise InvalidInput(f"unknown role {role!r}; use one of: {', '.join(ROLES)}")
        text, key = payloads.text(item, "text"), payloads.text(item, "key")
        if text.strip():
            turns.append(Turn(session, role, text, host=HOST, project=project, key=key))
    return turns


def answer(
    engine: Engine, event: str, payload: Any, announced: list[Turn | SessionEvent]
) -> dict[str, Any] | None:
    """`{"context": ...}` for a prompt: the weave for it; None otherwise."""
    if event != "prompt":
        return None
    prompt = next((t for t in announced if isinstance(t, Turn) and t.role == "user"), None)
    if prompt is None:
        return None
    woven = engine.weave(prompt.text, session=prompt.session, project=prompt.project, record=True)
    return {"context": woven.text} if woven.text else None
