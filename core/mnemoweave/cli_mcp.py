"""CLI command of the MCP server: `mnemoweave mcp` (stdio)."""

from __future__ import annotations

import click

from .cli import cli


@cli.command("mcp")
@click.option(
    "--project",
    "-p",
    help="Default project scope of the tools (default: the git root of the working directory).",
)
def mcp_command(project: str | None) -> None:
    """Run the MCP server on stdio: the memory tools for an agent."""
    from .mcp_server import serve

    serve(project)
