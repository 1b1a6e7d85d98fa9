"""Installing the MCP server into clients that speak MCP but run no hooks: Cursor, Claude
Desktop, Zed and Windsurf.

Each keeps its servers in a documented JSON file under one key. Installing puts our entry
there (a backup of the file first, under the data dir's `backups/`; every other byte kept,
see jsonc.py; installing twice changes nothing); uninstall removes only our entry. Such a
client captures nothing by itself: the agent calls `memory_ingest`, as SKILL.md says.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemoweave.config import data_dir
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import jsonc
from mnemoweave.hosts.install import MCP_NAME, _put_text, project_root


def _config_home() -> Path:
    given = os.environ.get("XDG_CONFIG_HOME", "")
    return Path(given) if os.path.isabs(given) else Path.home() / ".config"


def _claude_desktop() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home())) / "Claude"
    return _config_home() / "Claude"


@dataclass(frozen=True)
class Client:
    key: str  # the settings object's member that holds the servers
    user: str  # the user's file, relative to `base`
    project: str = ""  # the project's file, relative to the git root ('' none)
    base: str = "home"  # "home", "config" ($XDG_CONFIG_HOME) or "claude-desktop"

    def path(self, scope: str, cwd: Path | None) -> Path:
        if scope == "project":
            if not self.project:
                raise InvalidInput("this client has no project settings; drop --scope")
            return project_root(cwd) / self.project
        if scope != "user":
            raise InvalidInput(f"unknown scope {scope!r}; use user or project")
        bases = {"home": Path.home, "config": _config_home, "claude-desktop": _claude_desktop}
        return bases[self.base]() / self.user


CLIENTS = {
    "cursor": Client("mcpServers", ".cursor/mcp.json", ".cursor/mcp.json"),
    "claude-desktop": Client("mcpServers", "claude_desktop_config.json", base="claude-desktop"),
    "zed": Client("context_servers", "zed/settings.json", ".zed/settings.json", "config"),
    "windsurf": Client("mcpServers", ".codeium/windsurf/mcp_config.json"),
}


def entry(client: str, scope: str, cwd: Path | None = None) -> dict[str, Any]:
    """Our server: this Python, by absolute path, with the data dir in its environment
    (a desktop app does not pass on a shell's). Claude Desktop's chats belong to no project,
    so its memories are global; a project install names its project."""
    args = ["-m", "mnemoweave", "mcp"]
    if client == "claude-desktop":
        args.append("--global")
    elif scope == "project":
        args += ["--project", str(project_root(cwd))]
    return {"command": sys.executable, "args": args, "env": {"MNEMOWEAVE_HOME": str(data_dir())}}


def _client(name: str) -> Client:
    if name not in CLIENTS:
        raise InvalidInput(f"unknown MCP client {name!r}; use one of: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def install(name: str, scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Put our entry into the client's settings file; a no-op when it is there already."""
    client = _client(name)
    path = client.path(scope, cwd)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    wanted = jsonc.put(text, path, (client.key, MCP_NAME), entry(name, scope, cwd))
    backup = _put_text(path, wanted) if wanted != text else None
    return {"settings": str(path), "changed": wanted != text, "backup": _said(backup)}


def uninstall(name: str, scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Remove our entry from the client's settings file; everything else stays."""
    client = _client(name)
    path = client.path(scope, cwd)
    if not path.exists():
        return {"settings": str(path), "changed": False, "backup": None}
    text = path.read_text(encoding="utf-8")
    rest = jsonc.drop(text, path, (client.key, MCP_NAME))
    backup = _put_text(path, rest) if rest != text else None
    return {"settings": str(path), "changed": rest != text, "backup": _said(backup)}


def _said(backup: Path | None) -> str | None:
    return str(backup) if backup else None
