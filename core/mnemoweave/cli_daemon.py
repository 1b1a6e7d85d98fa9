"""CLI commands of the warm daemon: serve and stop, and the daemon's part of `status`."""

from __future__ import annotations

from typing import Any

import click

from . import client
from .cli import cli
from .config import data_dir
from .model import age, iso


@cli.command()
def serve() -> None:
    """Run the warm daemon for the data dir (HTTP JSON API on its Unix socket)."""
    from .daemon.server import serve as run

    run(data_dir(), echo=click.echo)


@cli.command()
@click.option("--wait", type=float, default=10.0, show_default=True, help="Seconds to wait.")
def stop(wait: float) -> None:
    """Stop the daemon: it finishes the requests in flight, then exits."""
    from .daemon.process import stop as stop_daemon

    done, message = stop_daemon(data_dir(), wait)
    if not done:
        raise click.ClickException(message)
    click.echo(message)


def daemon_status() -> dict[str, Any] | None:
    """The running daemon's own report (times in ISO 8601), or None when none answers."""
    home = data_dir()
    if not client.running(home):
        return None
    try:
        state = client.request(home, "GET", "/v1/daemon", timeout=client.PROBE_TIMEOUT)["result"]
    except client.DaemonError:
        return None
    state["started"] = iso(state["started"])
    if state["last_error"]:
        state["last_error"]["time"] = iso(state["last_error"]["time"])
    return state


def daemon_line(state: dict[str, Any] | None) -> str:
    if state is None:
        return "daemon    not running (commands open the store in-process)"
    uptime = state["uptime"]
    up = f"{int(uptime)}s" if uptime < 60 else age(uptime)
    counts = state["requests"]
    error = state["last_error"]
    last = f"{error['message']} ({error['route']}, {error['time']})" if error else "none"
    if state.get("tcp"):
        listening = f"socket {state['socket']} and http://{state['tcp']} (token required)"
    elif state.get("tcp_error"):
        listening = f"socket {state['socket']} (no TCP: {state['tcp_error']})"
    else:
        listening = f"socket {state['socket']}"
    return (
        f"daemon    pid {state['pid']}, up {up}, {listening}, "
        f"{counts['total']} requests ({counts['refused']} refused, {counts['failed']} failed), "
        f"last error: {last}"
    )
