"""`mnemoweave team`: status and sync; serve, and its members (one token each)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from mnemoweave.cli.main import _emit, _engine, cli, json_option
from mnemoweave.cli.terminal import echo


def _team(operation: str, **arguments: Any) -> dict[str, Any]:
    """`status` or `sync` of team/sync.py: in the daemon when one runs (its team routes),
    else in-process."""
    from mnemoweave.daemon.remote import RemoteEngine
    from mnemoweave.team import sync

    with _engine() as engine:
        if isinstance(engine, RemoteEngine):
            found: dict[str, Any] = engine.call_operation(f"team_{operation}", **arguments)
            return found
        done: dict[str, Any] = getattr(sync, operation)(engine, **arguments)
        return done


insecure_option = click.option(
    "--allow-insecure",
    is_flag=True,
    help="Allow a plain-http team_url that is not loopback (the token travels in clear).",
)


@cli.group()
def team() -> None:
    """Team memory: share reviewed memories through a team server, read the team's."""


def _when(ts: float | None) -> str:
    return "never" if not ts else f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ts))}"


@team.command("status")
@json_option
def status(as_json: bool) -> None:
    """The team's server and its state, the last sync, what is queued, the last error."""
    found = _team("status")
    if as_json:
        _emit(found)
        return
    if not found.get("server"):
        echo(f"team: {found['state']}")
        return
    state = found["state"]
    if state == "ok":
        state = f"ok, {found['records']} record(s) on the server"
    member = f" (as {found['member']})" if found.get("member") else ""
    echo(f"team {found['team'] or '?'} at {found['server']}{member}: {state}")
    if found.get("error"):
        echo(f"  error: {found['error']}")
    echo(
        f"  last sync: {_when(found['last_sync'])}; queued: {found['queued']};"
        f" mirrored: {found['mirrored']}"
    )
    if found.get("last_error"):
        echo(f"  last sync error: {found['last_error']}")


@team.command("sync")
@insecure_option
@json_option
def sync(allow_insecure: bool, as_json: bool) -> None:
    """Push what is queued and pull the team's changes now."""
    done = _team("sync", allow_insecure=allow_insecure)
    if as_json:
        _emit(done)
    elif "error" in done:
        raise click.ClickException(f"team sync failed: {done['error']}")
    else:
        echo(", ".join(f"{key} {value}" for key, value in done.items()))


path_option = click.option(
    "--path",
    "path",
    type=click.Path(path_type=Path),
    required=True,
    help="The server's directory: its members, and its Chroma data.",
)


@team.command("serve")
@path_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option(
    "--chroma",
    "chroma_url",
    default="",
    help="A Chroma server or distributed deployment to keep the records in (default: Chroma"
    " in this process, on --path).",
)
def serve(path: Path, host: str, port: int, chroma_url: str) -> None:
    """Serve the team's memories to its members (one token each), until stopped."""
    from mnemoweave.team.service import serve as run

    run(path, host, port, chroma_url, echo=echo)


@team.group("member")
def member() -> None:
    """The team server's members: each has a token of its own."""


@member.command("add")
@click.argument("name")
@click.option("--team", "team_name", required=True, help="The member's team.")
@path_option
@json_option
def member_add(name: str, team_name: str, path: Path, as_json: bool) -> None:
    """Issue NAME a token (shown once: give it to them as their team_token)."""
    from mnemoweave.team import members

    token = members.add(path, name, team_name)
    if as_json:
        _emit({"name": name, "team": team_name, "token": token})
    else:
        echo(f"{name} joins team {team_name}; their team_token (shown once):")
        echo(token)


@member.command("remove")
@click.argument("name")
@path_option
def member_remove(name: str, path: Path) -> None:
    """Revoke NAME's token (a running server refuses it from the next request on)."""
    from mnemoweave.team import members

    gone = members.remove(path, name)
    echo(f"{gone.name} left team {gone.team}: their token is refused from now on")


@member.command("list")
@path_option
@json_option
def member_list(path: Path, as_json: bool) -> None:
    """The members and their teams (never their tokens)."""
    from mnemoweave.team import members

    found = members.listed(path)
    if as_json:
        _emit(found)
        return
    for entry in found:
        echo(f"{entry['name']}  team {entry['team']}  added {_when(entry['added'])}")
    if not found:
        echo("no members yet: `mnemoweave team member add NAME --team TEAM --path DIR`")
