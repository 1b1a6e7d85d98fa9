"""The `forget` command: one memory to the trash, or every memory a tag or a text selects
(shown first; trashed with --yes)."""

from __future__ import annotations

import click

from mnemoweave.cli.main import UserError, _engine, _memory_line, _report, cli
from mnemoweave.cli.terminal import echo
from mnemoweave.model import counted


@cli.command()
@click.argument("ref", metavar="ID", required=False)
@click.option("--tag", default="", help="Every active memory with this tag.")
@click.option("--match", default="", help="Every active memory holding this text.")
@click.option("--yes", is_flag=True, help="Trash what --tag / --match select (else: show it).")
def forget(ref: str | None, tag: str, match: str, yes: bool) -> None:
    """Move a memory to the trash (undo with `restore`). --tag / --match show the memories
    they select; with --yes those go to the trash."""
    from mnemoweave.upkeep.bulk import chosen

    if bool(ref) == bool(tag or match):
        raise UserError("give either an ID or --tag / --match")
    with _engine() as engine:
        if ref:
            _report(engine.forget(ref))
            return
        memories = chosen(engine, tag, match)
        for memory in memories:
            echo(_memory_line(memory))
        many = counted(len(memories), "memory", "memories")
        if not memories:
            click.echo("no active memory matches")
        elif not yes:
            click.echo(f"{many} would go to the trash: run again with --yes")
        else:
            for memory in memories:
                engine.forget(memory.id)
            click.echo(f"trashed {many} (`restore ID` takes one back)")
