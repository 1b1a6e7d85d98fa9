"""The `threads` command: what the user said that no assistant turn has answered yet."""

from __future__ import annotations

from itertools import groupby

import click

from mnemoweave.cli.main import _age, _emit, _engine, _one_line, cli, json_option
from mnemoweave.cli.terminal import echo
from mnemoweave.model import counted


@cli.command()
@click.option("--within", type=float, help="Only what was said in the last MINUTES.")
@json_option
def threads(within: float | None, as_json: bool) -> None:
    """Open threads: user turns no assistant turn answered yet, per session."""
    with _engine() as engine:
        turns = engine.unanswered(within)
    sessions = [(name, list(said)) for name, said in groupby(turns, key=lambda t: t.session)]
    if as_json:
        _emit(
            {
                "threads": [
                    {"session": s, "turns": [t.to_dict() for t in said]} for s, said in sessions
                ]
            }
        )
        return
    if not sessions:
        click.echo("no open threads")
    for session, said in sessions:
        echo(f"{session}  ({counted(len(said), 'unanswered turn')})")
        for turn in said:
            echo(f"  {turn.id}  {_age(turn.ts or 0)}  {_one_line(turn.text)}")
