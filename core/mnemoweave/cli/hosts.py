"""CLI commands that connect hosts: hook (what a host runs), redact (what the JS plugins
spool), install and uninstall."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from mnemoweave.cli.main import UserError, _emit, _engine, cli, json_option
from mnemoweave.cli.terminal import shown
from mnemoweave.config import load_config
from mnemoweave.hook import HOSTS
from mnemoweave.model import counted

SCOPES = ("user", "project")
MCP_CLIENTS = ("cursor", "claude-desktop", "zed", "windsurf")  # MCP only: hosts/mcp_clients.py
INSTALLABLE = (*HOSTS, "dsh", *MCP_CLIENTS)


@cli.command()
@click.argument("given", nargs=-1, metavar="HOST EVENT")
def hook(given: tuple[str, ...]) -> None:
    """Run one host hook: payload on stdin, the host's JSON on stdout; never fails the host."""
    from mnemoweave.hook import home, log, run

    if len(given) != 2 or given[0] not in HOSTS:
        problem = (
            f"mnemoweave hook: expected HOST EVENT, HOST one of {', '.join(HOSTS)}; "
            f"got {shown(' '.join(given)) or 'nothing'}"
        )
        log(home(), problem)
        click.echo(problem, err=True)
        sys.exit(0)  # the host goes on: a hook never fails it
    sys.exit(run(*given, sys.stdin.buffer, sys.stdout))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Stdin is JSON: clean each of its strings.")
def redact(as_json: bool) -> None:
    """Print stdin as mnemoweave would store it: secrets redacted, <private> spans dropped.
    The JS plugins hand a payload to `redact --json` before they spool it."""
    from mnemoweave.text import clean, clean_all

    given = sys.stdin.buffer.read().decode("utf-8", "replace")
    if not as_json:
        sys.stdout.buffer.write(clean(given).encode("utf-8") + b"\n")
        return
    try:
        value = json.loads(given)
    except ValueError as exc:
        raise UserError(f"stdin is not JSON: {exc}") from None
    click.echo(json.dumps(clean_all(value)))  # ASCII, whatever the locale


def _scope_option(function):
    return click.option(
        "--scope",
        type=click.Choice(SCOPES),
        default="user",
        show_default=True,
        help="user: ~/.claude/settings.json, ~/.config/opencode/, ~/.gemini/settings.json, "
        "~/.cursor/mcp.json, ~/.config/zed/settings.json; project: the same under the git "
        "root (.claude/settings.json; .opencode/plugin/ and opencode.json; "
        ".gemini/settings.json; .cursor/mcp.json; .zed/settings.json). Codex, Claude Desktop "
        "and Windsurf: the user's only.",
    )(function)


@cli.command()
@click.argument("host", type=click.Choice(INSTALLABLE), required=False, metavar="[HOST]")
@_scope_option
@click.option("--profile", help="dsh: the profile to add the bundle to (else dsh's default).")
@click.option(
    "--trust",
    is_flag=True,
    help="codex: have Codex record its trust in mnemoweave's hooks (as its /hooks review "
    "does); without it Codex skips them until you trust them there.",
)
@json_option
def install(host: str | None, scope: str, profile: str | None, trust: bool, as_json: bool) -> None:
    """Record where this program is (the Claude Code plugin, installed from its marketplace,
    finds it there) and build the embedding model if it is not built yet.

    \b
    HOST: claude-code, opencode, codex, gemini, dsh,
          cursor, claude-desktop, zed, windsurf

    With HOST, also
    merge mnemoweave's hooks into Claude Code's, Codex's or Gemini's settings (backup first,
    others untouched; Codex and Gemini get the MCP server too), put OpenCode's plugin file
    and MCP server entry in place, add the dsh bundle to a dsh profile, or add the MCP
    server to Cursor's, Claude Desktop's, Zed's or Windsurf's settings."""
    from mnemoweave.config import data_dir
    from mnemoweave.hook import PROGRAM, record_program

    record_program(str(data_dir()))
    _model_built(quiet=as_json)
    if host is None:
        recorded = data_dir() / PROGRAM
        if as_json:
            _emit({"program": str(recorded)})
        else:
            click.echo(f"this program is recorded in {recorded}: the Claude Code plugin finds it")
        return
    if host in MCP_CLIENTS:
        from mnemoweave.hosts import mcp_clients

        _done(mcp_clients.install(host, scope), as_json, "installed into", "MCP server")
        if not as_json:
            click.echo(
                f"restart {host}: its agent gets the memory_* tools, and stores what a "
                "conversation decides by calling memory_ingest"
            )
        return
    if host == "dsh":
        from mnemoweave.hosts.install import install_dsh

        added = install_dsh(profile)
        if as_json:
            _emit(added)
        elif added["changed"]:
            click.echo(f"the dsh bundle is added: {added['command']}")
        else:
            click.echo(f"dsh is not on PATH; to add the bundle, run: {added['command']}")
        return
    if host == "opencode":
        from mnemoweave.hosts.install import install_opencode

        _done(install_opencode(scope), as_json, "installed into")
        return
    if host == "codex":
        _codex_installed(scope, trust, as_json)
        return
    if host == "gemini":
        from mnemoweave.hosts.install import install_gemini

        _done(install_gemini(scope), as_json, "installed into", "hooks and MCP server")
        return
    from mnemoweave.hosts.install import install as merge
    from mnemoweave.hosts.install import settings_path

    _done(merge(settings_path(scope)), as_json, "installed into")


@cli.command()
@click.argument("host", type=click.Choice((*HOSTS, *MCP_CLIENTS)), metavar="HOST")
@_scope_option
@json_option
def uninstall(host: str, scope: str, as_json: bool) -> None:
    """Remove mnemoweave's hooks from the host's settings (other hooks stay); for OpenCode,
    our plugin file and MCP server entry; for an MCP client, our MCP server entry.

    \b
    HOST: claude-code, opencode, codex, gemini,
          cursor, claude-desktop, zed, windsurf
    """
    if host in MCP_CLIENTS:
        from mnemoweave.hosts import mcp_clients

        _done(mcp_clients.uninstall(host, scope), as_json, "removed from", "MCP server")
        return
    if host == "opencode":
        from mnemoweave.hosts.install import uninstall_opencode

        _done(uninstall_opencode(scope), as_json, "removed from")
        return
    if host == "codex":
        from mnemoweave.hosts.install import uninstall_codex

        _only_user(host, scope)
        _done(uninstall_codex(), as_json, "removed from")
        return
    if host == "gemini":
        from mnemoweave.hosts.install import uninstall_gemini

        _done(uninstall_gemini(scope), as_json, "removed from", "hooks and MCP server")
        return
    from mnemoweave.hosts.install import settings_path
    from mnemoweave.hosts.install import uninstall as remove

    _done(remove(settings_path(scope)), as_json, "removed from")


def _only_user(host: str, scope: str) -> None:
    if scope != "user":
        raise UserError(f"{host} is installed for the user only ($CODEX_HOME); drop --scope")


def _codex_installed(scope: str, trust: bool, as_json: bool) -> None:
    from mnemoweave.hosts.install import install_codex

    _only_user("codex", scope)
    result = install_codex(trust=trust)
    if as_json:
        _emit(result)
        return
    _done(result, False, "installed into")
    if result["trusted"]:
        click.echo(f"Codex trusts mnemoweave's hooks ({len(result['trusted'])} recorded)")
    else:
        click.echo(
            "Codex runs a hook only once you trust it, and skips it silently until then: "
            "run `codex`, type /hooks and trust mnemoweave's, or run "
            "`mnemoweave install codex --trust` to have Codex record it now"
        )


def _model_built(quiet: bool) -> None:
    """Build the configured embedding models not built yet, once, into the cache every data
    dir shares (what ./setup.sh does; an install from a wheel gets it here). A build that
    fails leaves search lexical, as before, and says so."""
    from mnemoweave.cli.model import said
    from mnemoweave.embed import build_models, built
    from mnemoweave.errors import MnemoweaveError
    from mnemoweave.plugins import make_plugin_manager

    pm = make_plugin_manager()
    missing = [name for name in load_config().models() if not built(name, pm)]
    if not missing:
        return
    if not quiet:
        click.echo(
            f"building the embedding model into the shared cache, once: {', '.join(missing)}"
        )
    try:
        results = build_models(missing, pm=pm)
    except (MnemoweaveError, OSError) as exc:
        click.echo(
            f"could not build the embedding model ({exc}); search stays lexical until "
            "`mnemoweave model build` succeeds",
            err=True,
        )
        return
    for result in results if not quiet else ():
        click.echo(said(result))


def _done(result: dict[str, Any], as_json: bool, verb: str, what: str = "hooks") -> None:
    if as_json:
        _emit(result)
        return
    plugin = result.get("plugin")  # OpenCode: a plugin file beside the config
    if config := result.get("config"):  # Codex: hooks.json and config.toml
        if not result["changed"]:
            click.echo(f"nothing to do: {result['settings']} and {config} are as they should be")
            return
        backups = [b for b in (result["backup"], result["config_backup"]) if b]
        saved = f" (backups: {', '.join(backups)})" if backups else ""
        click.echo(f"hooks and MCP server {verb} {result['settings']} and {config}{saved}")
        return
    if not result["changed"]:
        where = (
            f"{plugin} and {result['settings']} are already as they should be"
            if plugin
            else f"{result['settings']} is already as it should be"
        )
        click.echo(f"nothing to do: {where}")
        return
    backup = f" (backup: {result['backup']})" if result["backup"] else ""
    if plugin:
        click.echo(f"plugin and MCP server {verb} {plugin} and {result['settings']}{backup}")
    elif what != "hooks":
        click.echo(f"{what} {verb} {result['settings']}{backup}")
    else:
        click.echo(f"hooks {verb} {result['settings']}{backup}")
        if verb == "installed into":
            click.echo(
                "hooks only: the plugin (claude plugin install mnemoweave@mnemoweave) also "
                "gives the MCP tools and the skill; use one or the other"
            )


BATCH = 500  # turns stored per request while importing


def import_claude_code(every: bool, as_json: bool) -> None:
    """Backfill past Claude Code transcripts (~/.claude/projects): this project's, or all."""
    from mnemoweave.hosts.claude_code import transcript_turns, transcripts_dir
    from mnemoweave.projects import project_from_cwd

    project = None if every else project_from_cwd(os.getcwd())
    files = sorted(transcripts_dir(Path.home()).glob("*/*.jsonl"))
    counts = {"transcripts": 0, "turns": 0, "duplicate": 0, "skipped": 0}
    with (
        _engine() as engine,
        click.progressbar(
            files, label="claude-code transcripts", file=sys.stderr, show_pos=True
        ) as bar,
    ):
        for path in bar:
            with path.open(encoding="utf-8", errors="replace") as lines:
                turns = [t for t in transcript_turns(lines) if every or t.project == project]
            if not turns:
                continue
            counts["transcripts"] += 1
            rows = [
                {
                    k: getattr(t, k)
                    for k in ("session", "role", "text", "ts", "host", "project", "key")
                }
                for t in turns
            ]
            for start in range(0, len(rows), BATCH):
                for written in engine.ingest_many(rows[start : start + BATCH]):
                    action = "turns" if written.action == "new" else written.action
                    counts[action] = counts.get(action, 0) + 1
    if as_json:
        _emit(counts)
        return
    click.echo(
        f"{counted(counts['turns'], 'new turn')} from "
        f"{counted(counts['transcripts'], 'transcript')} ({counts['duplicate']} already "
        "stored); `mnemoweave distill` proposes cards from them"
    )
