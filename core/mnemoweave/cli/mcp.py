"""CLI command of the MCP server: `mnemoweave mcp` (stdio)."""

from __future__ import annotations

from mnemoweave.cli.main import cli
from mnemoweave.cli.scope import scope_options


@cli.command("mcp")
@scope_options
def mcp_command(project: str) -> None:
    """Run the MCP server on stdio: the memory tools for an agent, scoped by default to
    --project or --global."""
    from mnemoweave.mcp.server import serve

    serve(project)
