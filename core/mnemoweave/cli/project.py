"""CLI commands about projects: `project list` and `project rename`."""

from __future__ import annotations

import click

from mnemoweave.cli.main import _emit, _engine, cli, json_option
from mnemoweave.cli.terminal import echo
from mnemoweave.model import counted


@cli.group()
def project() -> None:
    """The projects memory is scoped by: keys from each repository's origin remote."""


@project.command("list")
@json_option
def project_list(as_json: bool) -> None:
    """Every project the store holds, with its key and what it holds."""
    with _engine() as engine:
        found = engine.projects()
    if as_json:
        _emit({"projects": found})
        return
    for row in found:
        held = ", ".join(
            counted(row[table], *noun)
            for table, noun in (("memories", ("memory", "memories")), ("turns", ("turn",)))
        )
        echo(f"{row['name']}" + (f"  ({row['key']})" if row["key"] else "") + f": {held}")


@project.command("rename")
@click.argument("old")
@click.argument("new")
def project_rename(old: str, new: str) -> None:
    """Move everything of project OLD (a key as `project list` shows it) to NEW (a key, or
    a path in a checkout such as .): for a checkout that moved or a repository renamed."""
    from mnemoweave.scope import resolve_scope

    with _engine() as engine:
        done = engine.rename_project(old, resolve_scope(new))
    click.echo(f"renamed {done['old']} to {done['new']} ({counted(done['rows'], 'row')})")
