"""`mnemoweave team`: status, sync and serve (the team's Chroma server in one command)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .cli import _emit, _engine, cli, json_option
from .terminal import echo

insecure_option = click.option(
    "--allow-insecure",
    is_flag=True,
    help="Allow a plain-http team_url that is not loopback (the token travels in clear).",
)


@cli.group()
def team() -> None:
    """Team memory on a Chroma server: share reviewed memories, read the team's."""


def _when(ts: float | None) -> str:
    return "never" if not ts else f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ts))}"


@team.command("status")
@json_option
def status(as_json: bool) -> None:
    """The team's server and its state, the last sync, what is queued, the last error."""
    with _engine() as engine:
        found = engine.team_status()
    if as_json:
        _emit(found)
        return
    if not found.get("team"):
        echo(f"team: {found['state']}")
        return
    state = found["state"]
    if state == "ok":
        state = f"ok, {found['records']} record(s) on the server"
    echo(f"team {found['team']} at {found['server']} (as {found['author']}): {state}")
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
    with _engine() as engine:
        done = engine.team_sync(allow_insecure=allow_insecure)
    if as_json:
        _emit(done)
    elif "error" in done:
        raise click.ClickException(f"team sync failed: {done['error']}")
    else:
        echo(", ".join(f"{key} {value}" for key, value in done.items()))


@team.command("serve")
@click.option(
    "--path",
    "path",
    type=click.Path(path_type=Path),
    required=True,
    help="Where the server keeps its data.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--token", envvar="MNEMOWEAVE_TEAM_TOKEN", help="The team token (or team_token).")
def serve(path: Path, host: str, port: int, token: str | None) -> None:
    """Run the team's Chroma server (`chroma run`) behind a token check, until stopped."""
    from .config import load_config
    from .team.gate import serve as run

    run(path, host, port, token or load_config().team_token, echo=echo)
