"""The real Claude Code CLI, run offline against the in-process fake Anthropic server.

``install_claude_code`` installs ``@anthropic-ai/claude-code`` from npm once into the e2e
cache directory (see npm.py) that is reused by later test runs. ``ClaudeHarness`` gives one
test an isolated HOME, TMPDIR and git project (see runs.py) and runs
``claude -p PROMPT --output-format json`` there; each run returns a ``Result`` carrying the
requests that reached the fake model during that run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .fake_anthropic import FakeAnthropic, message_bodies
from .npm import CliUnavailable, InstalledCli, NpmCli
from .runs import HostHarness, RunResult, RunTimeout

CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION = "2.1.197"
OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}

ClaudeCode = InstalledCli


class ClaudeUnavailable(CliUnavailable):
    """Claude Code cannot be run here (no node/npm, or no network and nothing cached)."""


class ClaudeTimeout(RunTimeout):
    """A ``claude`` run outlived its timeout; it and its child processes were killed."""


CLAUDE_CODE = NpmCli(
    "Claude Code", CLAUDE_CODE_PACKAGE, "claude", "claude-code", OFFLINE_ENV, ClaudeUnavailable
)


def install_claude_code(
    cache: Path | None = None, version: str = CLAUDE_CODE_VERSION
) -> ClaudeCode:
    """The pinned Claude Code from the cache, installing it on first use (see
    ``NpmCli.install``)."""
    return CLAUDE_CODE.install(version, cache)


class Result(RunResult):
    """One ``claude -p`` run: exit code, output, and the requests the fake model received."""

    @property
    def json(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.stdout)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def reply(self) -> str | None:
        """The final answer text (``result`` of the JSON output)."""
        data = self.json
        return data.get("result") if data else None

    @property
    def session_id(self) -> str | None:
        data = self.json
        return data.get("session_id") if data else None

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Bodies of the ``POST /v1/messages`` requests of this run."""
        return message_bodies(self.requests)

    @property
    def model_text(self) -> str:
        return model_text(self.requests)

    @property
    def injected_text(self) -> str:
        return injected_text(self.requests)


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_result":
            texts.extend(_content_texts(block.get("content")))
        elif kind == "tool_use":
            texts.append(json.dumps(block.get("input"), ensure_ascii=False))
    return texts


def request_texts(body: Mapping[str, Any], *, system_prompt: bool = True) -> list[str]:
    """Every text of one request body: the system prompt (unless excluded), then each
    message's text blocks, tool results and tool inputs, ``role: system`` entries included."""
    texts = _content_texts(body.get("system")) if system_prompt else []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            texts.extend(_content_texts(message.get("content")))
    return texts


def model_text(requests: Iterable[Mapping[str, Any]], *, system_prompt: bool = True) -> str:
    """All text that reached the model in these recorded requests, joined by newlines."""
    return "\n".join(
        text
        for body in message_bodies(requests)
        for text in request_texts(body, system_prompt=system_prompt)
    )


def injected_text(requests: Iterable[Mapping[str, Any]]) -> str:
    """Text Claude Code added to the conversation beside the user's own words: the
    ``role: system`` entries of ``messages`` (where hook additional context lands) and the
    ``<system-reminder>`` text blocks (where tool hook context lands)."""
    parts: list[str] = []
    for body in message_bodies(requests):
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            texts = _content_texts(message.get("content"))
            if message.get("role") == "system":
                parts.extend(texts)
            else:
                parts.extend(t for t in texts if "<system-reminder>" in t)
    return "\n".join(parts)


def make_plugin(
    directory: Path,
    name: str,
    hooks: Mapping[str, Any],
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a Claude Code plugin (``.claude-plugin/plugin.json`` + ``hooks/hooks.json``)
    into ``directory``, plus any ``files`` (relative path -> text); for ``--plugin-dir``."""
    (directory / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (directory / "hooks").mkdir(parents=True, exist_ok=True)
    manifest = {"name": name, "version": "0.0.1", "description": f"{name} test plugin"}
    (directory / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2))
    (directory / "hooks" / "hooks.json").write_text(json.dumps({"hooks": dict(hooks)}, indent=2))
    for relative, text in (files or {}).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


class ClaudeHarness(HostHarness[Result]):
    """An isolated HOME, TMPDIR and git project for running the real CLI against ``server``.

    Runs in one harness share HOME and project, so a later run sees what earlier ones left
    on disk (transcripts, memory data); each run is still a new session unless ``-c`` or
    ``--resume`` is passed. The environment of a run is the caller's minus
    Anthropic/Claude/mnemoweave/XDG settings, with the fake server as the API.
    """

    command = "claude"
    dropped_env = ("ANTHROPIC_", "CLAUDE", "MNEMOWEAVE_", "XDG_", "OTEL_")
    offline_env = OFFLINE_ENV
    result_type = Result
    timeout_error = ClaudeTimeout
    tag_runs = True  # hooks run in process groups of their own

    def __init__(
        self,
        claude: ClaudeCode,
        server: FakeAnthropic,
        root: Path,
        mnemoweave_home: Path,
        background_timeout: float = 10.0,
    ) -> None:
        self.claude = claude
        self.background_timeout = background_timeout
        super().__init__(server, root, mnemoweave_home)
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        self.write_settings({})

    def host_env(self) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.server.base_url, "ANTHROPIC_API_KEY": "sk-fake"}

    @property
    def settings_path(self) -> Path:
        return self.home / ".claude" / "settings.json"

    def write_settings(self, settings: Mapping[str, Any]) -> Path:
        """Replace ``$HOME/.claude/settings.json`` (for example ``{"hooks": {...}}``)."""
        self.settings_path.write_text(json.dumps(dict(settings), indent=2))
        return self.settings_path

    def transcripts(self) -> list[Path]:
        """Session transcripts written so far, oldest first."""
        found = (self.home / ".claude" / "projects").glob("*/*.jsonl")
        return sorted(found, key=lambda p: p.stat().st_mtime)

    @property
    def grace(self) -> float:
        """Seconds the processes a run leaves behind (async hooks) get to finish."""
        return self.background_timeout

    def argv(self, prompt: str, extra_args: Sequence[str]) -> list[str]:
        """``claude -p PROMPT --output-format json *extra_args``; a run past its timeout
        raises ``ClaudeTimeout`` after its processes are killed."""
        args = [str(self.claude.executable), "-p", prompt, "--output-format", "json"]
        return [*args, *extra_args]

    def run_sessions(
        self,
        *prompts: str,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        timeout: float = 120,
    ) -> list[Result]:
        """One new session per prompt, in order, in the same HOME and project."""
        return [self.run(prompt, *args, env=env, timeout=timeout) for prompt in prompts]
