"""The knowledge graph's commands: `entities` and `entity NAME`."""

from __future__ import annotations

import time
from typing import Any

import click

from mnemoweave.cli.main import _age, _emit, _engine, _one_line, cli, json_option
from mnemoweave.cli.scope import rescope_options
from mnemoweave.cli.terminal import echo
from mnemoweave.model import counted


@cli.command()
@click.option(
    "-n", "limit", type=click.IntRange(1), default=50, show_default=True, help="How many."
)
@rescope_options
@json_option
def entities(limit: int, project: str | None, as_json: bool) -> None:
    """The things memories are about (services, libraries, files, people...), the most
    named first (every project's, unless --project or --global)."""
    with _engine() as engine:
        found = engine.entities(project=project, limit=limit)
    if as_json:
        _emit({"entities": found})
        return
    if not found:
        click.echo("no entities yet: they are read from memories as they are stored")
    for row in found:
        named = counted(row["memories"], "memory", "memories")
        turns = f", {counted(row['turns'], 'turn')}" if row["turns"] else ""
        echo(f"{row['name']}  [{row['kind']}]  {named}{turns}")


@cli.command()
@click.argument("name")
@click.option(
    "--same-as", "other", metavar="OTHER", help="OTHER is another name of NAME: join them."
)
@rescope_options
@json_option
def entity(name: str, other: str | None, project: str | None, as_json: bool) -> None:
    """One entity: its names, the memories about it, its relations and timeline, newest
    first."""
    with _engine() as engine:
        if other:
            found = engine.merge_entities(name, other)
        else:
            found = engine.entity(name, project=project)
    if as_json:
        _emit(found)
        return
    _show(found)


def _show(found: dict[str, Any]) -> None:
    names = ", ".join(n["name"] for n in found["names"])
    echo(f"{found['name']}  [{found['kind']}]  written {names}")
    if found["aliases"]:
        echo("aliases: " + ", ".join(a["key"] for a in found["aliases"]))
    if found["neighbours"]:
        echo(
            "named with: " + ", ".join(f"{n['name']} ({n['shared']})" for n in found["neighbours"])
        )
    if not found["timeline"]:
        echo("no memory names it yet")
    for step in found["timeline"]:
        past = "  (past)" if step["past"] else ""
        echo(f"\n{step['memory']}  {_age(step['when'])}{past}  {_one_line(step['title'])}")
        for relation in step["relations"]:
            source = relation["source"] or "rule"
            echo(f"    {source} {relation['type'].replace('_', ' ')} {relation['target']}")
    if found["turns"]:
        echo("\nsaid in sessions:")
        for turn in found["turns"]:
            echo(f"  {turn['id']}  {_age(turn['ts'] or time.time())}  {_one_line(turn['text'])}")
