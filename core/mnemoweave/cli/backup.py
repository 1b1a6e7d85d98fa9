"""`backup`, and `restore`: of a memory from the trash (`restore ID`), or of a backup into
a new data dir (`restore FILE.age --identity KEYFILE --to DIR`). Backups never go through
the daemon: a backup reads the store beside it, a restore makes a data dir no daemon
serves yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mnemoweave.cli.main import UserError, _emit, _engine, _report, cli, json_option
from mnemoweave.config import data_dir, use_data_dir
from mnemoweave.model import counted


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


def _stored(counts: dict[str, int]) -> str:
    return ", ".join(
        [
            counted(counts["memories"], "memory", "memories"),
            counted(counts["turns"], "turn"),
            counted(counts["cards"], "card"),
            counted(counts["skills"], "skill"),
        ]
    )


@cli.command()
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Path(path_type=Path),
    help="The encrypted backup file to write (FILE.age; replaced if it exists).",
)
@click.option(
    "--recipient",
    "-r",
    "recipients",
    multiple=True,
    required=True,
    metavar="KEY|FILE",
    help="An age public key (age1...) or a file of them, one a line (repeatable).",
)
@json_option
def backup(to: Path, recipients: tuple[str, ...], as_json: bool) -> None:
    """Back up the store and config.toml, encrypted with age, into a 0600 file (safe while
    the daemon runs; the vector index and models are left out: `restore` rebuilds them)."""
    from mnemoweave.upkeep.backup import backup as run

    result = run(data_dir(), to, list(recipients))
    if as_json:
        _emit(result)
        return
    files = " and ".join(result["files"])
    click.echo(
        f"backed up {_stored(result['counts'])} ({files}, store "
        f"{_megabytes(result['store_bytes'])}) to {result['to']} "
        f"({_megabytes(result['bytes'])}, 0600, {counted(result['recipients'], 'recipient')}) "
        f"in {result['seconds']:.1f}s"
    )


def _restored(result: dict[str, Any]) -> None:
    click.echo(
        f"restored {_stored(result['counts'])} into {result['to']} "
        f"(backup of {result['backup']['created'] or 'unknown date'}); reindexed "
        f"({result['retrieval']}) in {result['seconds']:.1f}s"
    )
    for check in result["doctor"]["checks"]:
        click.echo(f"{'ok  ' if check['ok'] else 'FAIL'}  {check['name']}: {check['detail']}")
    click.echo("doctor: ok" if result["doctor"]["ok"] else "doctor: some checks failed (above)")


@cli.command("restore")
@click.argument("what", metavar="ID|FILE.age")
@click.option(
    "--identity",
    type=click.Path(path_type=Path),
    help="With a backup: the age identity file (secret key) to decrypt it with.",
)
@click.option(
    "--to",
    "to",
    type=click.Path(path_type=Path),
    help="With a backup: the new data dir to restore into (must be new or empty).",
)
@json_option
@click.pass_context
def restore(
    ctx: click.Context, what: str, identity: Path | None, to: Path | None, as_json: bool
) -> None:
    """Take a memory out of the trash (ID), or restore a backup into a new data dir
    (FILE.age --identity KEYFILE --to DIR: its indexes rebuilt, then `doctor`)."""
    if identity is None and to is None:
        if as_json:
            raise UserError("--json goes with restoring a backup (--identity KEYFILE --to DIR)")
        with _engine() as engine:
            _report(engine.restore(what))
        return
    if identity is None or to is None:
        raise UserError("restoring a backup needs both --identity KEYFILE and --to DIR")
    from mnemoweave.upkeep.backup import restore as run

    use_data_dir(str(to.absolute()))  # what the restored store writes (caches) stays in it
    result = run(Path(what), identity, to)
    if as_json:
        _emit(result)
    else:
        _restored(result)
    if not result["doctor"]["ok"]:
        ctx.exit(1)
