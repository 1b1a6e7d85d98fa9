"""CLI commands of the warm daemon: serve and stop, and the daemon's part of `status`."""

from __future__ import annotations

from typing import Any

import click

from mnemoweave.cli.main import cli
from mnemoweave.config import data_dir
from mnemoweave.hosts import client
from mnemoweave.model import age, iso

UI_START_SECONDS = 60.0  # a cold daemon loads its models before it answers


@cli.command()
def serve() -> None:
    """Run the warm daemon for the data dir (HTTP JSON API on its Unix socket)."""
    from mnemoweave.daemon.server import serve as run

    run(data_dir(), echo=click.echo)


@cli.command()
@click.option("--wait", type=float, default=10.0, show_default=True, help="Seconds to wait.")
def stop(wait: float) -> None:
    """Stop the daemon: it finishes the requests in flight, then exits."""
    from mnemoweave.daemon.process import stop as stop_daemon

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
        answer = client.request(home, "GET", "/v1/daemon", timeout=client.PROBE_TIMEOUT)
        state: dict[str, Any] = answer["result"]
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


@cli.command()
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Loopback port (default: daemon_port, else a free one).",
)
def ui(open_browser: bool, port: int | None) -> None:
    """Serve the web page (browse, search, review, curate) from the daemon, starting it if
    needed, and print its one-time sign-in URL."""
    home = data_dir()
    if not client.ensure_daemon(home, UI_START_SECONDS):
        raise click.ClickException(
            f"the daemon did not answer within {UI_START_SECONDS:g} s; see `mnemoweave status`"
        )
    body = {} if port is None else {"port": port}
    try:
        opened = client.request(home, "POST", "/v1/ui", body, timeout=UI_START_SECONDS)["result"]
    except client.DaemonError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"mnemoweave is at {opened['url']}")
    click.echo(
        f"sign in once with (valid {opened['expires_in'] / 60:g} minutes): {opened['login']}"
    )
    if open_browser:
        import webbrowser

        if not webbrowser.open(opened["login"]):
            click.echo(
                "no browser could be opened here: open the sign-in URL above in one", err=True
            )
