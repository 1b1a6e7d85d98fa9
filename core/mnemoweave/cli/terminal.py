"""What the CLI prints of stored text: its control characters written out, so that text an
agent, a tool or a web page put into the store can neither clear the screen nor retitle
the window."""

from __future__ import annotations

import re

import click

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """Stored text as it may reach a terminal: control characters (escape sequences that
    clear the screen or retitle the window) written out as \\u001b and the like, newlines
    and tabs kept. In JSON, such an escape is JSON's own."""
    return _CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def echo(text: str) -> None:
    """Print a line that holds stored text (see `shown`)."""
    click.echo(shown(text))
