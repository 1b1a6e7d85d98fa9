"""The Gemini CLI: hook payloads in, canonical events out, and the JSON Gemini reads back.

SessionStart  -> start; answers with the scene and nudge tiers
BeforeAgent   -> the user turn; answers with the weave for the prompt
AfterAgent    -> the reply (`prompt_response`), then idle (distill the session)
SessionEnd    -> end (distill)

Gemini sends `hookSpecificOutput.additionalContext` to the model (a session start's is put
before the prompt's text, a prompt's after it, each in <hook_context> tags) and shows plain
output to the user only. It also hands that start context back inside the prompt of the
later events: it is taken out, so the store keeps what the user said, and a prompt's weave
is asked with the user's words alone. Gemini gives no turn id: a turn's key holds the
event's time (payloads.Exchange).
"""

from __future__ import annotations

import re

from mnemoweave.hosts.payloads import Exchange

HOST = "gemini"
HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.S)


def said(prompt: str) -> str:
    """The user's words of a prompt, without the context hooks added to it."""
    return HOOK_CONTEXT.sub("", prompt).strip()


GEMINI = Exchange(
    HOST,
    "Gemini",
    prompt=("BeforeAgent", "prompt"),
    reply=("AfterAgent", "prompt_response"),
    mark="timestamp",
    said=said,
)
EVENTS = GEMINI.names
events = GEMINI.events
answer = GEMINI.answer
