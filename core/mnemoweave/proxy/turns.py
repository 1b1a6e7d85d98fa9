"""What the proxy stores of an exchange: the prompt, the reply, and tool calls as short
lines (as the Claude Code adapter keeps them: a shell command, or the file an editing tool
changed; reading and searching tools, and quiet commands, are not worth a turn)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mnemoweave.hosts.claude_code import OBSERVATION, QUIET_COMMANDS
from mnemoweave.text import clean, clip

EDITING = ("edit", "write", "patch", "create", "replace", "delete", "remove", "move", "rename")
PATH_FIELDS = ("file_path", "filePath", "path", "filename")


def text_of(content: Any) -> str:
    """A message's (or system prompt's) text: a string, or its text parts (both APIs put
    text in `{"type": "text", "text": ...}` items)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


@dataclass
class Reply:
    """The assistant's answer: its text and its tool calls (name, arguments as sent)."""

    text: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Conversation:
    """What the proxy reads of a chat request: the system prompt and first user message
    (which name the conversation), the prompt ('' when the last message is not the user's
    text: a tool result, an assistant prefill) and the prompt's position."""

    system: str
    first: str
    prompt: str
    position: int


def arguments_of(given: Any) -> dict[str, Any]:
    """A tool call's arguments as an object (OpenAI sends them as a JSON string)."""
    if isinstance(given, str):
        try:
            given = json.loads(given)
        except ValueError:
            return {}
    return given if isinstance(given, dict) else {}


def tool_line(name: str, given: Any) -> str:
    """One redacted line about a tool call that changes something ('' for the rest)."""
    arguments = arguments_of(given)
    command = arguments.get("command") or arguments.get("cmd")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if isinstance(command, str) and command.strip():
        if command.split()[0] in QUIET_COMMANDS:
            return ""
        return clip(clean(f"$ {command}"), OBSERVATION)
    path = next((arguments[f] for f in PATH_FIELDS if isinstance(arguments.get(f), str)), "")
    if path and any(word in name.lower() for word in EDITING):
        return clip(clean(f"{name} {path}"), OBSERVATION)
    return ""
