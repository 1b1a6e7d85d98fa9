"""The session capsule: an extractive, rolling recap of one session, updated per turn.

goal = the first mission, else the first substantial user request (what the session set
out to do: a preference, a fact about the user, a decision or a finding the user states is
not a goal, whatever the classifier says, when `worth` reads it as one); rules = the latest
preferences the user stated; decisions = the latest conclusions; open threads = substantial
user requests no assistant turn has followed yet (a greeting or a statement is not a thread).
Each entry is the turn's id and (a short head of) its text, so the agent can expand it.
"""

from __future__ import annotations

import json
from typing import Any

from mnemoweave.learn.worth import kind_of
from mnemoweave.model import Turn
from mnemoweave.text import cjk_count, clip

KEEP_DECISIONS = 3
KEEP_RULES = 3
KEEP_OPEN = 3
HEAD = 160  # characters of a turn kept in the capsule
REQUESTS = ("mission", "chat")  # user turns that ask for something rather than state it


def empty() -> dict[str, Any]:
    return {"turns": 0, "goal": None, "goal_from": "", "rules": [], "decisions": [], "open": []}


def load(raw: str) -> dict[str, Any]:
    return empty() | json.loads(raw) if raw else empty()


def _substantial(text: str) -> bool:
    return cjk_count(text) >= 8 or len(text.split()) >= 6


def _entry(turn: Turn) -> dict[str, str]:
    return {"ref": turn.id or "", "text": clip(turn.text, HEAD)}


def _kind(turn: Turn) -> str | None:
    """A user turn's kind as the distiller reads it where that says more than the
    classifier: a rule, a pitfall or decision, or a fact stated is never a goal."""
    if turn.role == "user":
        read = kind_of(turn.text, turn.role, turn.kind or "")
        if read is not None and read.alone and read.kind in ("pref", "conclusion", "fact"):
            return read.kind
    return turn.kind


def update(capsule: dict[str, Any], turn: Turn) -> dict[str, Any]:
    """The capsule after one more stored (and classified) turn."""
    capsule = dict(capsule)
    capsule["turns"] += 1
    kind = _kind(turn)
    request = turn.role == "user" and kind in REQUESTS
    if kind == "mission" and capsule["goal_from"] != "mission":
        capsule["goal"], capsule["goal_from"] = _entry(turn), "mission"
    elif capsule["goal"] is None and request and _substantial(turn.text):
        capsule["goal"], capsule["goal_from"] = _entry(turn), "user"
    if kind == "conclusion":
        capsule["decisions"] = [*capsule["decisions"], _entry(turn)][-KEEP_DECISIONS:]
    if kind == "pref" and turn.role == "user":
        capsule["rules"] = [*capsule["rules"], _entry(turn)][-KEEP_RULES:]
    if request and (kind != "chat" or _substantial(turn.text)):
        capsule["open"] = [*capsule["open"], _entry(turn)][-KEEP_OPEN:]
    elif turn.role == "assistant":
        capsule["open"] = []
    return capsule


def without(capsule: dict[str, Any], ref: str) -> dict[str, Any]:
    """The capsule with every entry of a purged turn removed."""
    capsule = dict(capsule)
    if capsule["goal"] and capsule["goal"]["ref"] == ref:
        capsule["goal"], capsule["goal_from"] = None, ""
    for name in ("rules", "decisions", "open"):
        capsule[name] = [entry for entry in capsule[name] if entry["ref"] != ref]
    return capsule


def dump(capsule: dict[str, Any]) -> str:
    return json.dumps(capsule, ensure_ascii=False)
