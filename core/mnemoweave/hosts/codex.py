"""The Codex CLI: hook payloads in, canonical events out, and the JSON Codex reads back.

SessionStart      -> start; answers with the scene and nudge tiers
UserPromptSubmit  -> the user turn; answers with the weave for the prompt
Stop              -> the assistant's last message, then idle (distill the session)
SessionEnd        -> end (distill)

Codex puts each hook's `additionalContext` in a developer message beside the prompt, and
drops the whole output of a hook that prints a field its schema does not know: only
SessionStart and UserPromptSubmit print, and only `hookSpecificOutput`. The project is the
one of the payload's `cwd`; a turn's key holds Codex's turn id (payloads.Exchange).
"""

from __future__ import annotations

from mnemoweave.hosts.payloads import Exchange

HOST = "codex"
CODEX = Exchange(
    HOST,
    "Codex",
    prompt=("UserPromptSubmit", "prompt"),
    reply=("Stop", "last_assistant_message"),
    mark="turn_id",
)
EVENTS = CODEX.names
events = CODEX.events
answer = CODEX.answer
