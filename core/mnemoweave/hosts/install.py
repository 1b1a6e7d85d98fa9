"""Installing into a host: Claude Code's hooks (one table, rendered for the plugin and for
settings files), OpenCode's plugin file and MCP server entry, the dsh bundle.

Claude Code reads the same `hooks` object from a plugin's `hooks/hooks.json` and from
`settings.json`. The plugin's commands run its own launcher (`scripts/mnemoweave`, which
finds the program); an install into settings records the Python that runs this code, so
the hook never depends on PATH. Installing merges our entries and leaves every other hook
as it was; a backup of the file is written first, under the data dir's `backups/`, never
beside it; installing twice changes nothing; uninstall removes ours, and a file left with
nothing in it goes. The plugin's hooks stand aside where a settings install of ours is
active, so a prompt gets one memory block (`settings_install`); `doctor` warns when both
are there. dsh gets its bundle from dsh's own `dsh plugin add`.

OpenCode loads every JS file of its plugin folder (`$XDG_CONFIG_HOME/opencode/plugin/` for
the user, `.opencode/plugin/` at the project's git root). Installing copies
`plugins/opencode/mnemoweave.js` there with this Python recorded in it (the command the
plugin starts the daemon with), and registers `python -m mnemoweave mcp` under `mcp` in the
opencode.json beside it, with the same backup-first, merge-only rules. The copy is known as
ours by its marker line; another file of the same name is never overwritten or removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mnemoweave.config import data_dir
from mnemoweave.errors import InvalidInput
from mnemoweave.hook import ENTRY, package_dir
from mnemoweave.projects import checkout_root

# The bundle's files that hosts read, in the package (links to the repository's in a
# checkout, copies in a wheel): the plugins, .claude-plugin/marketplace.json, SKILL.md and
# manifest.json.
BUNDLE = Path(__file__).resolve().parents[1] / "bundle"
HOST = "claude-code"
# host -> event -> (timeout in seconds, runs in the background)
HOOK_EVENTS = {
    HOST: {
        "SessionStart": (10, False),
        "UserPromptSubmit": (5, False),
        "PostToolUse": (10, True),
        "Stop": (10, False),
        "PreCompact": (10, False),
        "SessionEnd": (2, False),
    },
    "codex": {
        "SessionStart": (10, False),
        "UserPromptSubmit": (5, False),
        "Stop": (10, False),
        "SessionEnd": (5, False),  # the hook gives up after 1 s; a loaded machine starts it slowly
    },
    "gemini": {
        "SessionStart": (10, False),
        "BeforeAgent": (5, False),
        "AfterAgent": (10, False),
        "SessionEnd": (5, False),
    },
}
TIMEOUT_UNITS = {"gemini": 1000}  # Gemini counts hook timeouts in milliseconds
PLUGIN_COMMAND = 'MNEMOWEAVE_HOOK_VIA=plugin "${CLAUDE_PLUGIN_ROOT}/scripts/mnemoweave" hook'
CLAUDE_PLUGIN = "mnemoweave"  # the plugin's name in enabledPlugins ("mnemoweave@<market>")
MARKERS = ("mnemoweave-hook", "mnemoweave.hook", "mnemoweave hook")  # how ours are known


def recorded_command() -> str:
    """The hook command for settings files: this Python, by absolute path, without site
    (see hook.ENTRY)."""
    return f"{shlex.quote(sys.executable)} -S -c {shlex.quote(ENTRY)} {shlex.quote(package_dir())}"


def hooks_object(command: str, host: str = HOST) -> dict[str, Any]:
    """The `hooks` object for Claude Code, Codex or Gemini (the same shape), each event
    running `command HOST EVENT`."""
    hooks: dict[str, Any] = {}
    for event, (timeout, background) in HOOK_EVENTS[host].items():
        entry: dict[str, Any] = {
            "type": "command",
            "command": f"{command} {host} {event}",
            "timeout": timeout * TIMEOUT_UNITS.get(host, 1),
        }
        if background:
            entry["async"] = True
        group: dict[str, Any] = {"hooks": [entry]}
        if event == "PostToolUse":
            group = {"matcher": "*", **group}
        hooks[event] = [group]
    return hooks


def project_root(cwd: Path | None = None) -> Path:
    """Where a project scope's files go: the git root of `cwd` (default: here), else it."""
    here = str((cwd or Path.cwd()).resolve())
    return Path(checkout_root(here) or here)


def settings_path(scope: str, cwd: Path | None = None) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return project_root(cwd) / ".claude" / "settings.json"
    raise InvalidInput(f"unknown scope {scope!r}; use user or project")


def settings_files(cwd: Path | None = None) -> list[Path]:
    """The settings files Claude Code reads hooks from in `cwd`: the user's, the project's
    and the project's local one."""
    project = settings_path("project", cwd)
    return [settings_path("user"), project, project.with_name("settings.local.json")]


def _settings(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def settings_install(cwd: Path | None = None) -> Path | None:
    """The settings file that holds our hooks for `cwd`, if one does."""
    for path in settings_files(cwd):
        hooks = _settings(path).get("hooks")
        groups = hooks.values() if isinstance(hooks, dict) else []
        if any(_ours(g) for found in groups if isinstance(found, list) for g in found):
            return path
    return None


PLUGIN = "plugin"  # what the Claude Code plugin's hooks send as `via` (MNEMOWEAVE_HOOK_VIA)


def aside_for(host: str, payload: Any, via: str | None) -> Path | None:
    """The settings install a hook of the Claude Code plugin stands aside for, so that a
    prompt gets one memory block (None: the hook answers)."""
    if via != PLUGIN or host != "claude-code":
        return None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return settings_install(Path(cwd) if isinstance(cwd, str) and cwd else None)


def plugin_enabled(cwd: Path | None = None) -> bool:
    """Whether a settings file in `cwd` enables mnemoweave's Claude Code plugin."""
    for path in settings_files(cwd):
        enabled = _settings(path).get("enabledPlugins")
        if isinstance(enabled, dict) and any(
            on and str(name).split("@")[0] == CLAUDE_PLUGIN for name, on in enabled.items()
        ):
            return True
    return False


def both_installed(cwd: Path | None = None) -> str:
    """What to say when the plugin is enabled and a settings install is active too."""
    active = settings_install(cwd)
    if active is None or not plugin_enabled(cwd):
        return ""
    scope = "user" if active == settings_path("user") else "project"
    return (
        f"claude-code: the plugin and the hooks in {active} are both installed (the plugin's "
        f"hooks stand aside); keep one: `mnemoweave uninstall claude-code --scope {scope}` "
        "or disable the plugin"
    )


def _ours(group: Any) -> bool:
    if not isinstance(group, dict):
        return False
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


def _backup(path: Path) -> Path:
    """A copy of `path` under the data dir: `backups/<time>/<its absolute path>` (0600)."""
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    backup = data_dir() / "backups" / stamp / path.resolve().relative_to(path.anchor)
    backup.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copy2(path, backup)
    backup.chmod(0o600)
    return backup


def _write(path: Path, data: dict[str, Any]) -> Path | None:
    """Write `data` as JSON (see _put_text); a file left with nothing in it (or only its
    `$schema`) is removed."""
    empty = not data.keys() - {"$schema"}
    return _put_text(path, "" if empty else json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _put_text(path: Path, text: str) -> Path | None:
    """Write `text` atomically, after a backup of the current file (if any). Empty text
    removes the file, and the folder it leaves empty."""
    backup = _backup(path) if path.exists() else None
    if not text.strip():
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when empty
        return backup
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    if backup is not None:
        shutil.copymode(path, temporary)  # the user's file keeps its mode, whatever our umask
    os.replace(temporary, path)
    return backup


def install(path: Path, command: str | None = None, host: str = HOST) -> dict[str, Any]:
    """Merge our hooks into the settings (or hooks) file at `path`; a no-op when already
    there."""
    data = _read(path)
    hooks = _merged(data.get("hooks", {}), command, host)
    if hooks == data.get("hooks"):
        return {"settings": str(path), "changed": False, "backup": None}
    backup = _write(path, {**data, "hooks": hooks})
    return {"settings": str(path), "changed": True, "backup": str(backup) if backup else None}


def _merged(hooks: dict[str, Any], command: str | None, host: str) -> dict[str, Any]:
    """`hooks` with ours (for `host`) in place of any earlier ones of ours."""
    merged = _without_ours(hooks)
    for event, groups in hooks_object(command or recorded_command(), host).items():
        merged[event] = [*merged.get(event, []), *groups]
    return merged


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


# --- OpenCode: the plugin file, and the MCP server in opencode.json ------------------------

OPENCODE = "opencode"
OPENCODE_PLUGIN = BUNDLE / "plugins" / "opencode" / "mnemoweave.js"
PLUGIN_NAME = "mnemoweave.js"
COMMAND_LINE = "const INSTALLED_COMMAND = []; // mnemoweave:installed-command"
COMMAND_MARK = "// mnemoweave:installed-command"  # how our plugin file is known
MCP_NAME = "mnemoweave"


def recorded_argv() -> list[str]:
    """How the plugin runs mnemoweave (this Python, by absolute path)."""
    return [sys.executable, "-m", "mnemoweave"]


def mcp_entry() -> dict[str, Any]:
    """The `mcp` entry of opencode.json for our MCP server."""
    return {"type": "local", "command": [*recorded_argv(), "mcp"], "enabled": True}


def opencode_paths(scope: str, cwd: Path | None = None) -> tuple[Path, Path]:
    """(plugin folder, config file): `$XDG_CONFIG_HOME/opencode` (default ~/.config) for the
    user, `.opencode/plugin` and `opencode.json` at the project's git root for a project.
    An existing opencode.jsonc is used when there is no opencode.json."""
    if scope == "user":
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config") / "opencode"
        folder, config = base / "plugin", base / "opencode.json"
    elif scope == "project":
        root = project_root(cwd)
        folder, config = root / ".opencode" / "plugin", root / "opencode.json"
    else:
        raise InvalidInput(f"unknown scope {scope!r}; use user or project")
    if not config.exists() and config.with_suffix(".jsonc").exists():
        config = config.with_suffix(".jsonc")
    return folder, config


def render_plugin(argv: list[str] | None = None) -> str:
    """The plugin's text with the command that runs mnemoweave recorded in it."""
    try:
        text = OPENCODE_PLUGIN.read_text(encoding="utf-8")
    except OSError:
        raise InvalidInput(f"the OpenCode plugin is missing: {OPENCODE_PLUGIN}") from None
    if COMMAND_LINE not in text:
        raise InvalidInput(f"{OPENCODE_PLUGIN} has no line to record the command in")
    recorded = f"const INSTALLED_COMMAND = {json.dumps(argv or recorded_argv())}; {COMMAND_MARK}"
    return text.replace(COMMAND_LINE, recorded)


def _ours_plugin(path: Path) -> bool:
    try:
        return COMMAND_MARK in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        entry = json.dumps({"mcp": {MCP_NAME: mcp_entry()}})
        raise InvalidInput(
            f"{path} is not plain JSON ({exc}); fix it, or add this by hand: {entry}"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("mcp", {}), dict):
        raise InvalidInput(f"{path} does not hold a config object with an mcp object")
    return data


def _put_plugin(path: Path, text: str) -> bool:
    """Write our plugin file (atomically); False when it is already there as it should be."""
    if path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == text:
        return False
    if (path.exists() or path.is_symlink()) and not _ours_plugin(path):
        raise InvalidInput(f"{path} exists and is not mnemoweave's plugin; move it away first")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return True


def install_opencode(scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Put the plugin (with this Python recorded) into OpenCode's plugin folder and register
    the MCP server in opencode.json; a no-op when both are already as they should be."""
    folder, config = opencode_paths(scope, cwd)
    data = _read_config(config)  # refuse a broken config before touching anything
    plugin_changed = _put_plugin(folder / PLUGIN_NAME, render_plugin())
    servers = {**data.get("mcp", {}), MCP_NAME: mcp_entry()}
    backup = None
    if servers != data.get("mcp"):
        fresh = {} if config.exists() else {"$schema": "https://opencode.ai/config.json"}
        backup = _write(config, {**fresh, **data, "mcp": servers})
    changed = plugin_changed or servers != data.get("mcp")
    return {
        "settings": str(config),
        "plugin": str(folder / PLUGIN_NAME),
        "changed": changed,
        "backup": str(backup) if backup else None,
    }


def uninstall_opencode(scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Remove our plugin file and our MCP entry; everything else stays."""
    folder, config = opencode_paths(scope, cwd)
    data = _read_config(config)
    plugin = folder / PLUGIN_NAME
    removed = (plugin.exists() or plugin.is_symlink()) and _ours_plugin(plugin)
    if removed:
        plugin.unlink()
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty, and then its parent (`.opencode`) too
            folder.parent.rmdir()
    backup, registered = None, MCP_NAME in data.get("mcp", {})
    if registered:
        servers = {k: v for k, v in data["mcp"].items() if k != MCP_NAME}
        rest = {k: servers if k == "mcp" else v for k, v in data.items() if k != "mcp" or servers}
        backup = _write(config, rest)
    return {
        "settings": str(config),
        "plugin": str(plugin),
        "changed": bool(removed or registered),
        "backup": str(backup) if backup else None,
    }


# --- dsh: the bundle, added to a profile with dsh's own command ------------------------------

DSH_BUNDLE = BUNDLE / "plugins" / "dsh"


def install_dsh(profile: str | None = None) -> dict[str, Any]:
    """Add the dsh bundle to a dsh profile (`dsh plugin [--profile P] add BUNDLE`); when dsh
    is not on PATH, nothing is run and the result holds the command to run."""
    argv = ["dsh", "plugin", *(["--profile", profile] if profile else []), "add", str(DSH_BUNDLE)]
    result = {"bundle": str(DSH_BUNDLE), "command": shlex.join(argv), "changed": False}
    dsh = shutil.which("dsh")
    if dsh is None:
        return result
    try:
        done = subprocess.run(
            [dsh, *argv[1:]], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidInput(f"`{result['command']}` could not run: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-500:]
        raise InvalidInput(f"`{result['command']}` failed ({done.returncode}): {said}")
    return result | {"changed": True}


# --- Codex: hooks.json and the MCP server in config.toml -------------------------------------

CODEX = "codex"
CODEX_MCP = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*\"?mnemoweave\"?\s*(?:\.[^\]]*)?\]")
TABLE = re.compile(r"^\s*\[")


def codex_home() -> Path:
    """Codex's home: $CODEX_HOME, else ~/.codex."""
    given = os.environ.get("CODEX_HOME", "")
    return Path(given) if os.path.isabs(given) else Path.home() / ".codex"


def codex_mcp_block() -> str:
    """Our MCP server's table for config.toml. Codex gives an MCP server a minimal
    environment, so a data dir set by MNEMOWEAVE_HOME is written into it."""
    lines = [
        "[mcp_servers.mnemoweave]",
        f"command = {json.dumps(sys.executable)}",
        f"args = {json.dumps(['-m', 'mnemoweave', 'mcp'])}",
    ]
    if home := os.environ.get("MNEMOWEAVE_HOME"):
        lines.append(f"env = {{ MNEMOWEAVE_HOME = {json.dumps(home)} }}")
    return "\n".join(lines) + "\n"


def _toml(path: Path) -> str:
    import tomllib

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it first") from None
    return text


def _without_our_table(text: str, path: Path) -> str:
    """The config without our [mcp_servers.mnemoweave] table (and its sub-tables)."""
    import tomllib

    kept, ours = [], False
    for line in text.splitlines(keepends=True):
        if TABLE.match(line):
            ours = bool(CODEX_MCP.match(line))
        if not ours:
            kept.append(line)
    rest = "".join(kept)
    if "mnemoweave" in tomllib.loads(rest).get("mcp_servers", {}):
        raise InvalidInput(
            f"{path} defines mcp_servers.mnemoweave inline; remove it or add this by hand:\n"
            + codex_mcp_block()
        )
    return rest


def install_codex(trust: bool = False) -> dict[str, Any]:
    """Merge our hooks into $CODEX_HOME/hooks.json and our MCP server into config.toml
    (backups first, everything else kept); with `trust`, have Codex record its trust in
    our hooks (see trust_codex)."""
    home = codex_home()
    config = home / "config.toml"
    text = _toml(config)  # refuse a broken config before touching anything
    hooks = install(home / "hooks.json", host=CODEX)
    rest = _without_our_table(text, config)
    wanted = rest.rstrip("\n") + ("\n\n" if rest.strip() else "") + codex_mcp_block()
    backup = _put_text(config, wanted) if wanted != text else None
    result = {
        "settings": hooks["settings"],
        "config": str(config),
        "changed": hooks["changed"] or wanted != text,
        "backup": hooks["backup"],
        "config_backup": str(backup) if backup else None,
        "trusted": trust_codex(home / "hooks.json") if trust else None,
    }
    return result


def uninstall_codex() -> dict[str, Any]:
    """Remove our hooks from hooks.json and our MCP server from config.toml; the rest
    stays (Codex drops the trust it recorded for hooks that are gone)."""
    home = codex_home()
    config = home / "config.toml"
    hooks = uninstall(home / "hooks.json") if (home / "hooks.json").exists() else None
    text = _toml(config)
    rest = _without_our_table(text, config)
    backup = _put_text(config, rest) if rest != text else None
    return {
        "settings": str(home / "hooks.json"),
        "config": str(config),
        "changed": bool(hooks and hooks["changed"]) or rest != text,
        "backup": hooks["backup"] if hooks else None,
        "config_backup": str(backup) if backup else None,
    }


TRUST_TIMEOUT = 30  # seconds `codex app-server` may take to list and trust our hooks


def trust_codex(hooks_path: Path, codex: str | None = None) -> list[str]:
    """Ask Codex itself to trust our hooks in `hooks_path`, as its /hooks review does:
    `codex app-server` (JSON-RPC on stdio) lists the hooks with their keys and hashes, and
    writes `hooks.state."<key>".trusted_hash` for ours into config.toml. Codex runs an
    untrusted hook never, and says nothing. The trusted keys; raises InvalidInput when Codex
    cannot be run or refuses."""
    program = codex or shutil.which("codex")
    if program is None:
        raise InvalidInput("codex is not on PATH: run `codex`, then /hooks, and trust mnemoweave's")
    groups = _our_groups(hooks_path)
    wanted = {f"{hooks_path}:{_snake(event)}:{index}:0" for event, index in groups.items()}
    try:
        listed = _app_server(program, [("hooks/list", {"cwds": [str(Path.home())]})])[0]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        raise InvalidInput(f"codex app-server could not list the hooks: {exc}") from None
    states = {}
    for entry in listed.get("data", []):
        for hook in entry.get("hooks", []):
            if hook.get("key") in wanted and hook.get("trustStatus") != "trusted":
                states[hook["key"]] = {"trusted_hash": hook["currentHash"]}
    if states:
        edit = {"keyPath": "hooks.state", "value": states, "mergeStrategy": "upsert"}
        try:
            _app_server(program, [("config/batchWrite", {"edits": [edit]})])
        except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
            raise InvalidInput(f"codex app-server could not record the trust: {exc}") from None
    return sorted(wanted)


def _our_groups(path: Path) -> dict[str, int]:
    """Each event of the hooks file and the index of our group in it."""
    hooks = _read(path).get("hooks", {})
    return {
        event: index
        for event, groups in hooks.items()
        if isinstance(groups, list)
        for index, group in enumerate(groups)
        if _ours(group)
    }


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _app_server(program: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Results of JSON-RPC calls to `codex app-server`, one after the other, after its
    initialize handshake (killed after TRUST_TIMEOUT seconds)."""
    hello = {"clientInfo": {"name": "mnemoweave", "title": "mnemoweave", "version": "1"}}
    server = subprocess.Popen(
        [program, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=Path.home(),
    )
    killer = threading.Timer(TRUST_TIMEOUT, server.kill)
    killer.start()
    try:
        results = []
        for n, (method, params) in enumerate([("initialize", hello), *calls]):
            _send(server, {"id": n, "method": method, "params": params})
            result = _reply(server, n, method)
            if n == 0:
                _send(server, {"method": "initialized"})
            else:
                results.append(result)
        return results
    finally:
        killer.cancel()
        server.kill()
        server.wait(timeout=5)


def _send(server: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()


def _reply(server: subprocess.Popen[str], n: int, method: str) -> dict[str, Any]:
    assert server.stdout is not None
    for line in server.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == n:
            if "error" in message:
                raise ValueError(f"{method}: {message['error']}")
            result = message.get("result")
            return result if isinstance(result, dict) else {}
    raise ValueError(f"codex app-server ended without answering {method}")


# --- Gemini: hooks and the MCP server in settings.json ---------------------------------------

GEMINI = "gemini"


def gemini_settings(scope: str, cwd: Path | None = None) -> Path:
    """~/.gemini/settings.json for the user, .gemini/settings.json at the git root for a
    project."""
    if scope == "user":
        return Path.home() / ".gemini" / "settings.json"
    if scope == "project":
        return project_root(cwd) / ".gemini" / "settings.json"
    raise InvalidInput(f"unknown scope {scope!r}; use user or project")


def gemini_mcp_entry() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mnemoweave", "mcp"]}


def install_gemini(scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Merge our hooks and MCP server into Gemini's settings.json (backup first, others
    untouched); a no-op when both are already there."""
    path = gemini_settings(scope, cwd)
    data = _read(path)
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path} has an mcpServers that is not an object; fix it first")
    wanted = {
        **data,
        "hooks": _merged(data.get("hooks", {}), None, GEMINI),
        "mcpServers": {**servers, MCP_NAME: gemini_mcp_entry()},
    }
    if wanted == data:
        return {"settings": str(path), "changed": False, "backup": None}
    backup = _write(path, wanted)
    return {"settings": str(path), "changed": True, "backup": str(backup) if backup else None}


def uninstall_gemini(scope: str = "user", cwd: Path | None = None) -> dict[str, Any]:
    """Remove our hooks and MCP server from Gemini's settings.json; the rest stays."""
    path = gemini_settings(scope, cwd)
    data = _read(path)
    rest = dict(data)
    hooks = _without_ours(data.get("hooks", {}))
    if hooks:
        rest["hooks"] = hooks
    else:
        rest.pop("hooks", None)
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and MCP_NAME in servers:
        others = {k: v for k, v in servers.items() if k != MCP_NAME}
        if others:
            rest["mcpServers"] = others
        else:
            rest.pop("mcpServers")
    if rest == data:
        return {"settings": str(path), "changed": False, "backup": None}
    backup = _write(path, rest)
    return {"settings": str(path), "changed": True, "backup": str(backup) if backup else None}
