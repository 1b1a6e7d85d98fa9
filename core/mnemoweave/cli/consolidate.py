"""`consolidate propose | apply | rollback`: tidy memory in runs a person can undo."""

from __future__ import annotations

from typing import Any

import click

from mnemoweave.cli.main import _emit, _engine, _one_line, cli, json_option
from mnemoweave.cli.scope import scope_options
from mnemoweave.cli.terminal import echo

SETTLE = {
    "conflict": "decide: `mnemoweave supersede {older} {newer}` keeps the newer, "
    "`mnemoweave supersede {newer} {older}` the older",
}


@cli.group()
def consolidate() -> None:
    """Propose, apply and roll back consolidation runs (duplicates, conflicts, stale)."""


def _item_lines(name: str, item: dict[str, Any]) -> list[str]:
    kind = item["type"]
    if kind == "duplicates":
        head = f"{name}  duplicates: keep {item['keep']}, supersede {', '.join(item['merge'])}"
        refs = [item["keep"], *item["merge"]]
    elif kind in ("update", "conflict"):
        settle = (
            f"apply: {item['newer']} supersedes {item['older']}"
            if item["resolve"]
            else SETTLE["conflict"].format(**item)
        )
        head = f"{name}  {kind} ({item['reason']}): {settle}"
        refs = [item["older"], item["newer"]]
    elif kind == "chain":
        return [f"{name}  superseded chain: {' -> '.join(item['refs'])}"]
    else:
        return [f"{name}  stale: trash {item['id']}  {_one_line(item['text'])}"]
    return [head] + [f"      {ref}  {_one_line(item['texts'][ref])}" for ref in refs]


@consolidate.command()
@scope_options
@click.option("--since", default="90d", show_default=True, help="Memories changed within.")
@json_option
def propose(project: str, since: str, as_json: bool) -> None:
    """Find near-duplicates, conflicts, superseded chains and stale memories; change
    nothing but record the run for `apply` and `rollback`."""
    with _engine() as engine:
        run = engine.consolidate_propose(project=project, since=since)
    if as_json:
        _emit(run)
        return
    items = run["items"]
    echo(f"{run['run']}: {len(items)} item(s) in {run['scope'] or 'the global scope'}")
    for name, item in items.items():
        for line in _item_lines(name, item):
            echo(line)
    if items:
        echo(f"apply with `mnemoweave consolidate apply {run['run']}` (--only ITEM picks)")


@consolidate.command()
@click.argument("run")
@click.option("--only", "only", multiple=True, metavar="ITEM", help="Apply this item only.")
@json_option
def apply(run: str, only: tuple[str, ...], as_json: bool) -> None:
    """Carry out a proposal (all items, or --only those); undo with `rollback RUN`."""
    with _engine() as engine:
        done = engine.consolidate_apply(run, list(only))
    if as_json:
        _emit(done)
        return
    echo(f"{run}: applied {', '.join(done['applied']) or 'nothing'}")
    if done["reported_only"]:
        echo(f"reported only (nothing to apply): {', '.join(done['reported_only'])}")


@consolidate.command()
@click.argument("run")
@json_option
def rollback(run: str, as_json: bool) -> None:
    """Write back everything RUN changed."""
    with _engine() as engine:
        done = engine.consolidate_rollback(run)
    if as_json:
        _emit(done)
        return
    echo(f"{run}: rolled back {', '.join(done['restored']) or 'nothing'}")
