"""Installing the hooks into a host: one table of hooks, rendered for the plugin and for
settings files.

Claude Code reads the same `hooks` object from a plugin's `hooks/hooks.json` and from
`settings.json`. The plugin's commands run the checkout's `hooks/mnemoweave-hook`; an
install into settings records the Python that runs this code, so the hook never depends
on PATH. Installing merges our entries and leaves every other hook as it was; a backup
of the file is written first; installing twice changes nothing; uninstall removes ours.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .errors import InvalidInput
from .projects import project_from_cwd

HOST = "claude-code"
# event -> (timeout in seconds, runs in the background)
CLAUDE_CODE_HOOKS = {
    "SessionStart": (10, False),
    "UserPromptSubmit": (5, False),
    "PostToolUse": (10, True),
    "Stop": (10, False),
    "PreCompact": (10, False),
    "SessionEnd": (2, False),
}
PLUGIN_COMMAND = '"${CLAUDE_PLUGIN_ROOT}/../../hooks/mnemoweave-hook"'
MARKERS = ("mnemoweave-hook", "mnemoweave.hook", "mnemoweave hook")  # how ours are known


def recorded_command() -> str:
    """The hook command for settings files: this Python, by absolute path."""
    return f"{shlex.quote(sys.executable)} -m mnemoweave.hook"


def hooks_object(command: str) -> dict[str, Any]:
    """The `hooks` object for Claude Code, each event running `command HOST EVENT`."""
    hooks: dict[str, Any] = {}
    for event, (timeout, background) in CLAUDE_CODE_HOOKS.items():
        entry: dict[str, Any] = {
            "type": "command",
            "command": f"{command} {HOST} {event}",
            "timeout": timeout,
        }
        if background:
            entry["async"] = True
        group: dict[str, Any] = {"hooks": [entry]}
        if event == "PostToolUse":
            group = {"matcher": "*", **group}
        hooks[event] = [group]
    return hooks


def settings_path(scope: str, cwd: Path | None = None) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        root = project_from_cwd(str((cwd or Path.cwd()).resolve()))
        return Path(root) / ".claude" / "settings.json"
    raise InvalidInput(f"unknown scope {scope!r}; use user or project")


def _ours(group: Any) -> bool:
    commands = [h.get("command", "") for h in group.get("hooks", []) if isinstance(h, dict)]
    return any(marker in command for command in commands for marker in MARKERS)


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise InvalidInput(f"{path} does not hold a settings object with a hooks object")
    return data


def _without_ours(hooks: dict[str, Any]) -> dict[str, Any]:
    kept = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        rest = [g for g in groups if not (isinstance(g, dict) and _ours(g))]
        if rest:
            kept[event] = rest
    return kept


def _write(path: Path, data: dict[str, Any]) -> Path | None:
    """Write atomically, after a timestamped backup of the current file (if any)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.bak")
        shutil.copy2(path, backup)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return backup


def install(path: Path, command: str | None = None) -> dict[str, Any]:
    """Merge our hooks into the settings file at `path`; a no-op when already there."""
    data = _read(path)
    hooks = _without_ours(data.get("hooks", {}))
    for event, groups in hooks_object(command or recorded_command()).items():
        hooks[event] = [*hooks.get(event, []), *groups]
    if hooks == data.get("hooks"):
        return {"settings": str(path), "changed": False, "backup": None}
    backup = _write(path, {**data, "hooks": hooks})
    return {"settings": str(path), "changed": True, "backup": str(backup) if backup else None}


def uninstall(path: Path) -> dict[str, Any]:
    """Remove our hooks from the settings file at `path`; other hooks stay."""
    data = _read(path)
    if "hooks" not in data:
        return {"settings": str(path), "changed": False, "backup": None}
    hooks = _without_ours(data["hooks"])
    if hooks == data["hooks"]:
        return {"settings": str(path), "changed": False, "backup": None}
    rest = {**data, "hooks": hooks} if hooks else {k: v for k, v in data.items() if k != "hooks"}
    backup = _write(path, rest)
    return {"settings": str(path), "changed": True, "backup": str(backup) if backup else None}
