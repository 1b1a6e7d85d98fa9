"""Claude Code: hook payloads in, canonical events out, and the JSON Claude Code reads back.

SessionStart      -> start (any source); answers with the scene and nudge tiers
UserPromptSubmit  -> the user turn; answers with the weave for the prompt
PostToolUse       -> a short observation of a tool call worth keeping (a tool turn)
Stop              -> the assistant's last message, then idle (distill the session)
PreCompact        -> pre_compact (distill); SessionEnd -> end (distill)

The project is the one of the payload's `cwd`. Turn keys come from the payload, so a
turn the hook and the transcript both report, or a replayed payload, is stored once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemoweave.hosts import payloads
from mnemoweave.model import SessionEvent, Turn, sane_time
from mnemoweave.projects import project_from_cwd
from mnemoweave.text import clean, clip

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

HOST = "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
OBSERVATION = 300  # characters kept of one tool observation
# Tool calls that change something; reading and searching tools are not worth a turn.
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
# Transcript text that is the CLI's own bookkeeping, not something said.
NOT_SAID = ("<command-", "<local-command", "Caveat:", "[Request interrupted")
QUIET_COMMANDS = ("ls", "cat", "pwd", "echo", "head", "tail", "grep", "rg", "find", "which", "cd")


def turn_key(session: str, role: str, text: str, prompt: str = "") -> str:
    """The same message of the same session gets the same key, whoever reports it: the
    hook, the transcript, or the spool (which keeps the text cleaned of secrets). The
    prompt's id (Claude Code gives one to each prompt and its replies) keeps apart the same
    words said again later in the session: two "Done." replies are two turns."""
    parts = (session, role, prompt) if prompt else (session, role)
    return f"{HOST}:{payloads.said_digest(*parts, text=text)}"


def prompt_id(payload: dict[str, Any]) -> str:
    """The payload's prompt id ('' when the host sends none)."""
    found = payload.get("prompt_id")
    return found.strip() if isinstance(found, str) else ""


def observation(payload: dict[str, Any]) -> str:
    """One line about a tool call that changed something ('' for the rest)."""
    tool, given = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(given, dict):
        return ""
    if tool in EDIT_TOOLS and isinstance(given.get("file_path"), str):
        return f"{tool} {given['file_path']}"
    command = given.get("command")
    if tool != "Bash" or not isinstance(command, str) or not command.strip():
        return ""
    if command.split()[0] in QUIET_COMMANDS:
        return ""
    response = payload.get("tool_response")
    outcome = ""
    if isinstance(response, dict):
        errors = response.get("stderr")
        if isinstance(errors, str) and errors.strip():
            outcome = " -> stderr: " + errors.strip().splitlines()[-1]
        elif response.get("interrupted"):
            outcome = " -> interrupted"
    return clip(clean(f"$ {command}{outcome}"), OBSERVATION)  # redacted before it is cut


def events(event: str, payload: dict[str, Any]) -> list[Turn | SessionEvent]:
    """What one hook payload announces, in order (raises InvalidInput on a bad payload)."""
    payloads.checked("Claude Code", EVENTS, event, payload)
    session = payloads.session(payload, "session_id")
    project = project_from_cwd(payloads.cwd(payload))

    def turn(role: str, text: str, key: str | None = None) -> Turn:
        return Turn(
            session,
            role,
            text,
            key=key or turn_key(session, role, text, prompt_id(payload)),
            host=HOST,
            project=project,
        )

    if event == "SessionStart":
        return [payloads.started(payload, session, HOST, project)]
    if event == "UserPromptSubmit":
        prompt = payloads.text(payload, "prompt")
        return [turn("user", prompt)] if prompt.strip() else []
    if event == "PostToolUse":
        seen = observation(payload)
        use_id = payload.get("tool_use_id")
        key = f"{HOST}:tool:{use_id}" if isinstance(use_id, str) and use_id else None
        return [turn("tool", seen, key)] if seen else []
    if event == "Stop":
        said = payload.get("last_assistant_message")
        answer = [turn("assistant", said)] if isinstance(said, str) and said.strip() else []
        return [*answer, SessionEvent("idle", session, host=HOST, project=project)]
    kind = "pre_compact" if event == "PreCompact" else "end"
    return [SessionEvent(kind, session, host=HOST, project=project)]


def answer(
    engine: Engine, event: str, payload: dict[str, Any], announced: list[Turn | SessionEvent]
) -> dict[str, Any] | None:
    """The JSON to print for Claude Code: the scene and nudge at SessionStart, the weave for
    the prompt at UserPromptSubmit; None otherwise."""
    if event not in ("SessionStart", "UserPromptSubmit") or not announced:
        return None
    return payloads.context(event, payloads.woven(engine, announced))


# --- transcripts: ~/.claude/projects/<cwd-slug>/<session>.jsonl -----------------------------


def _said(message: Any) -> str:
    """The text blocks of a transcript message (tool calls and results are not text)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
        parts = [part for part in parts if isinstance(part, str)]
    else:
        return ""
    text = "\n".join(parts).strip()
    return "" if text.startswith(NOT_SAID) else text


def _time(value: Any) -> float | None:
    """A transcript line's time; None (stored as read now) when it is missing or not a time
    between 1970 and 2200."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):
        return None
    return when if sane_time(when) else None


def transcript_turns(lines: Iterable[str], prompt: str = "") -> list[Turn]:
    """The user and assistant text of transcript lines (other lines, side chains, tool
    traffic and lines that do not parse are skipped). Keys match the hooks' keys: a reply
    takes the id of the prompt before it (`prompt`: the one in effect before these lines)."""
    turns = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        given = entry.get("promptId")
        if entry["type"] == "user" and isinstance(given, str) and given.strip():
            prompt = given.strip()
        session, role = entry.get("sessionId"), entry["type"]
        text = _said(entry.get("message"))
        if not isinstance(session, str) or not session.strip() or not text:
            continue
        cwd = entry.get("cwd")
        turns.append(
            Turn(
                session.strip(),
                role,
                text,
                ts=_time(entry.get("timestamp")),
                host=HOST,
                project=project_from_cwd(cwd if isinstance(cwd, str) else None),
                key=turn_key(session.strip(), role, text, prompt),
            )
        )
    return turns


_PROMPT_ID = re.compile(rb'"promptId"\s*:\s*"([^"]+)"')


def last_prompt(raw: bytes, before: str = "") -> str:
    """The id of the last prompt in raw transcript bytes (`before` when there is none)."""
    found = _PROMPT_ID.findall(raw)
    return found[-1].decode("utf-8", "replace").strip() if found else before


def transcripts_dir(home: Path) -> Path:
    """Where Claude Code keeps the transcripts of the user whose home is `home`."""
    return home / ".claude" / "projects"


def is_transcript(path: Path, home: Path) -> bool:
    """Only the user's Claude Code transcripts are ever read on a payload's word."""
    try:
        resolved = path.resolve(strict=True)
        root = transcripts_dir(home).resolve(strict=True)
    except OSError:
        return False
    return resolved.suffix == ".jsonl" and resolved.is_relative_to(root) and resolved.is_file()
