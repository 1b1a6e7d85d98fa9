"""The `mnemoweave` program. Two commands that hosts start on their own path skip the CLI,
which alone takes a fifth of a second to load: `mnemoweave mcp` (the MCP server's front,
mcp_front.py) and `mnemoweave hook HOST EVENT` (hook.py). Every other command, and those
two asked for help or given what they do not take, is the CLI's."""

from __future__ import annotations

import os
import sys


def main() -> None:
    command, given = sys.argv[1:2], sys.argv[2:]
    if command == ["mcp"]:
        from mnemoweave.mcp.front import main as front

        if (code := front(given)) is not None:
            sys.exit(code)
    elif command == ["hook"] and len(given) == 2:
        from mnemoweave.hook import HOSTS, cli, home, log, record_program
        from mnemoweave.store.private import restrict

        if given[0] in HOSTS:
            restrict()  # what it writes is the user's alone
            if os.path.basename(sys.argv[0]) == "mnemoweave":  # the console script
                try:  # for the plugin's launcher: its next hook starts faster
                    record_program(home())
                except OSError as exc:
                    log(home(), f"could not record the program: {exc}")
            cli(given)  # exits
    from mnemoweave.cli.main import main as whole

    whole()
