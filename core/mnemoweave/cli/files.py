"""CLI commands that read and write files: import and export. The files are opened here,
never by the daemon, which is given records and gives back file contents."""

from __future__ import annotations

from pathlib import Path

import click

from mnemoweave.cli.main import UserError, _emit, _engine, cli, json_option
from mnemoweave.hosts.client import Unanswered


@cli.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--all", "every", is_flag=True, help="claude-code: every project, not just this.")
@click.option("--split", is_flag=True, help="One memory per `## ` section of a note.")
@json_option
def import_(path: Path, every: bool, split: bool, as_json: bool) -> None:
    """Import turns (.jsonl) and memories (.md notes: YAML frontmatter with title, tags,
    importance or weight, created, updated, kind, project; a `# H1` as title) from a file or
    directory, or `claude-code`: the Claude Code transcripts of this project (--all: of every
    project). A note is one memory; --split makes each `## ` section one. In a directory, a
    file that cannot be read is named and left out, and the rest is imported."""
    if str(path) == "claude-code" and not path.exists():
        from mnemoweave.cli.hosts import import_claude_code

        import_claude_code(every, as_json)
        return
    if every:
        raise UserError("--all goes with `import claude-code`")
    from mnemoweave.capture.file_formats import collect

    found = collect(path, split)  # read here: the daemon never opens a path it is given
    try:
        with _engine() as engine:
            counts = engine.import_records(found.records)
    except Unanswered as exc:  # records carry keys: what was stored is recognised
        click.echo(f"{exc}; sending it again (what was stored counts as duplicate)", err=True)
        with _engine() as engine:
            counts = engine.import_records(found.records)
    if as_json:
        _emit({**counts, "problems": found.problems})
        return
    for problem in found.problems:
        click.echo(problem, err=True)
    click.echo(", ".join(f"{n} {name}" for name, n in counts.items()))


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--per-memory",
    is_flag=True,
    help="One note per memory (memories/m_N-title.md, with frontmatter), not one per project.",
)
def export(directory: Path, per_memory: bool) -> None:
    """Write memories as Markdown (and turns as JSONL, the graph as JSON and notes) into
    DIRECTORY; `import DIRECTORY` reads it back."""
    from mnemoweave.capture.import_export import write_files

    with _engine() as engine:
        files = engine.export_files(per_memory)
    for path in write_files(directory, files):  # written here, not by the daemon
        click.echo(str(path))
