"""The `mnemoweave` program. Two commands that hosts start on their own path skip the CLI,
which alone takes a fifth of a second to load: `mnemoweave mcp` (the MCP server's front,
mcp_front.py) and `mnemoweave hook HOST EVENT` (hook.py). Every other command, and those
two asked for help or given what they do not take, is the CLI's."""

from __future__ import annotations

import sys


def main() -> None:
    command, given = sys.argv[1:2], sys.argv[2:]
    if command == ["mcp"]:
        from .mcp_front import main as front

        if (code := front(given)) is not None:
            sys.exit(code)
    elif command == ["hook"] and len(given) == 2:
        from .hook import HOSTS, cli

        if given[0] in HOSTS:
            cli(given)  # exits
    from .cli import main as whole

    whole()
