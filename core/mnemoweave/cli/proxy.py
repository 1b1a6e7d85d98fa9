"""CLI command of the memory proxy: `mnemoweave proxy --upstream URL` (see proxy/)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import click

from mnemoweave.cli.main import cli
from mnemoweave.config import data_dir, load_config
from mnemoweave.scope import resolve_scope

IDLE_SECONDS = 30.0  # a conversation this long quiet is distilled, as a host's stop hook does
LOG_NAME = "logs/proxy.log"


def _log_to(path: str) -> None:
    """The proxy's log lines go to `path` (never a header, never a body)."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("mnemoweave.proxy")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


@cli.command()
@click.option(
    "--upstream",
    metavar="URL",
    help="The API root to forward to, with its version "
    "(https://api.openai.com/v1, https://api.anthropic.com/v1); default: "
    "proxy_upstream.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port on 127.0.0.1 (0: any free one; default: proxy_port).",
)
@click.option(
    "--project",
    "project_arg",
    metavar="PATH|KEY",
    help="The project whose memories are woven and which stores the turns (default: global).",
)
@click.option(
    "--project-from-header",
    is_flag=True,
    help="Take the project from each request's X-Mnemoweave-Project header (else --project).",
)
@click.option(
    "--token",
    default=None,
    help="Require this X-Mnemoweave-Token header of clients (default: proxy_token).",
)
@click.option(
    "--idle-seconds",
    type=click.FloatRange(min=0.1),
    default=IDLE_SECONDS,
    show_default=True,
    help="Distill a conversation this long quiet.",
)
def proxy(
    upstream: str | None,
    port: int | None,
    project_arg: str | None,
    project_from_header: bool,
    token: str | None,
    idle_seconds: float,
) -> None:
    """An OpenAI- and Anthropic-compatible proxy on 127.0.0.1 that adds memory."""
    from mnemoweave.proxy.app import Settings, serve
    from mnemoweave.proxy.memory import Memory

    config = load_config()
    url = upstream or config.proxy_upstream
    if not url:
        raise click.UsageError("give --upstream URL (or set proxy_upstream in config.toml)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.UsageError(f"--upstream: give an http(s) URL, got {url!r}")
    home = data_dir()
    _log_to(str(home / LOG_NAME))
    project = resolve_scope(project_arg) if project_arg else None
    memory = Memory(str(home), project, project_from_header, idle_seconds)
    settings = Settings(url, token or config.proxy_token, memory)
    chosen = port if port is not None else config.proxy_port
    try:
        serve(settings, chosen, click.echo)
    except OSError as exc:
        message = f"cannot listen on 127.0.0.1:{chosen}: {exc.strerror or exc}"
        raise click.ClickException(message) from None
