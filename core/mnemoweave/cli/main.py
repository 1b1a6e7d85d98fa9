"""The command line's group and its own commands; the modules in COMMANDS add the rest."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import threading
import time
from contextlib import AbstractContextManager
from importlib import import_module
from typing import TYPE_CHECKING, Any

import click

from mnemoweave.cli.scope import scope_options
from mnemoweave.cli.terminal import echo, shown
from mnemoweave.config import use_data_dir
from mnemoweave.errors import MnemoweaveError
from mnemoweave.hosts.client import DaemonError
from mnemoweave.model import MEMORY_KINDS, MODES, ROLES, SOURCES, Memory, age, counted, listed
from mnemoweave.projects import display_name
from mnemoweave.store.private import restrict
from mnemoweave.text import clip

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

USER_ERROR = 2


class UserError(click.ClickException):
    """Shown as one line on stderr; exit status 2 (the input was wrong, nothing changed)."""

    exit_code = USER_ERROR


class MnemoweaveGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # bad option or argument: one line, no usage dump
            raise UserError(exc.format_message()) from None
        except MnemoweaveError as exc:
            raise UserError(str(exc)) from None
        except DaemonError as exc:  # the daemon is unreachable or failed, or the store is busy
            raise click.ClickException(str(exc)) from None
        except sqlite3.Error as exc:
            raise click.ClickException(f"store error: {exc}") from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        from mnemoweave.plugins import add_commands  # plugins' commands (register_commands), once

        add_commands(self)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands:  # maybe a plugin's: built-in ones never wait for them
            self.list_commands(ctx)
        return super().get_command(ctx, name)


def _engine(local: bool = False) -> AbstractContextManager[Engine]:
    """The store for this command: the daemon when it answers, else the Engine in-process
    under the one-writer lock; `local` commands refuse while a daemon runs."""
    from mnemoweave.daemon.remote import open_store

    ctx = click.get_current_context(silent=True)
    command = ctx.command_path.partition(" ")[2] if ctx else ""
    return open_store(f"mnemoweave {command}".strip(), local=local)


def _emit(data: Any) -> None:
    echo(json.dumps(data, ensure_ascii=False, indent=2))


def _text_arg(text: str | None) -> str:
    if text is None or text == "-":
        return sys.stdin.read()
    return text


def _age(ts: float) -> str:
    return age(time.time() - ts)


def _one_line(text: str, width: int = 100) -> str:
    return clip(shown(text), width)


def _explain_line(explain: dict[str, Any]) -> str:
    """One line per hit: each channel's rank and raw score, then the fusion's factors (a
    memory found one hop away in the knowledge graph: the entities that led to it)."""
    if "expanded" in explain:
        hop = explain["expanded"]
        return f"one hop: {hop['from']} -> {hop['neighbour']} (named together in memories)"
    lexical, dense = explain["lexical"], explain["dense"].items()
    parts = [f"bm25 #{lexical['rank']} {lexical['bm25']}" if lexical["rank"] else "bm25 -"]
    parts += [f"{name} #{d['rank'] or '-'} cos {d['cosine']}" for name, d in dense]
    skip = {"mode", "lexical", "dense"}
    parts += [f"{name} {value}" for name, value in explain.items() if name not in skip]
    return " · ".join(parts)


def _memory_line(memory: Memory) -> str:
    scope = display_name(memory.project)
    return (
        f"{memory.id}  [{memory.kind}] {_one_line(memory.body)}  ({scope}, {_age(memory.updated)})"
    )


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
kind_option = click.option("--kind", type=click.Choice(MEMORY_KINDS), help="Memory kind.")


@click.group(cls=MnemoweaveGroup)
@click.version_option(package_name="mnemoweave")
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    help="Data dir (default: $MNEMOWEAVE_HOME or ~/.mnemoweave).",
)
def cli(home: str | None) -> None:
    """Local long-term memory for coding agents."""
    restrict()  # before anything is written: the data dir is private
    use_data_dir(home)


@cli.command()
@click.argument("text", required=False)
@kind_option
@scope_options
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--importance", "-i", type=click.IntRange(1, 5), help="1 (trivia) to 5 (rule).")
@click.option("--title", help="Short title (default: the first line).")
@json_option
def remember(
    text: str | None,
    kind: str | None,
    project: str,
    tags: tuple[str, ...],
    importance: int | None,
    title: str | None,
    as_json: bool,
) -> None:
    """Store a memory (TEXT, or - for stdin). Exact duplicates merge."""
    with _engine() as engine:
        result = engine.remember(
            _text_arg(text),
            kind=kind or "fact",
            project=project,
            tags=tags,
            importance=importance,
            title=title,
        )
    if as_json:
        _emit(result.to_dict())
    elif result.action == "skipped":
        click.echo(f"nothing stored ({result.reason})")
    else:
        click.echo(result.line())


@cli.command()
@click.argument("query")
@click.option("-k", "k", type=int, help="How many hits (default from config: search_k).")
@scope_options
@kind_option
@click.option(
    "--in",
    "source",
    type=click.Choice(SOURCES),
    default="memories",
    show_default=True,
    help="What to search.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    help="Channels to use.",
)
@click.option("--explain", is_flag=True, help="Show each channel's contribution.")
@click.option("--compact", is_flag=True, help="The matching sentences only (`get ID`: whole).")
@click.option("--expand", is_flag=True, help="Add memories one hop away in the knowledge graph.")
@json_option
def search(
    query: str,
    k: int | None,
    project: str,
    kind: str | None,
    source: str,
    mode: str,
    explain: bool,
    compact: bool,
    expand: bool,
    as_json: bool,
) -> None:
    """Find memories (or raw turns) matching QUERY, in Chinese or English."""
    from mnemoweave.recall.corrections import label
    from mnemoweave.recall.snippets import compact as brief

    with _engine() as engine:
        hits = listed(
            engine.search(
                query, k=k, project=project, kind=kind, source=source, mode=mode, expand=expand
            )
        )
        retrieval = "lexical (bm25)" if mode == "lexical" else engine.retrieval_mode()
    if as_json:
        rows = []
        for hit in hits:
            row = hit.to_dict()
            details = row.pop("extra")
            explained = details.pop("explain")
            row.update(details)
            if compact:
                row["snippet"] = brief(row.pop("text"), query)
            if explain:
                row["explain"] = explained
            rows.append(row)
        _emit({"retrieval": retrieval, "hits": rows})
        return
    if explain:
        click.echo(f"retrieval: {retrieval}")
    if not hits:
        click.echo("no hits")
    for hit in hits:
        scope = display_name(hit.project)
        text = brief(hit.text, query) if compact else _one_line(hit.text)
        echo(f"{hit.id}  {hit.score:6.3f}  [{label(hit)}] {text}  ({scope}, {_age(hit.created)})")
        if explain:
            click.echo("          " + _explain_line(hit.extra["explain"]))


@cli.command()
@click.argument("ref", metavar="ID")
@click.option("--evidence", is_flag=True, help="Also the raw turns behind a memory or card.")
@json_option
def get(ref: str, evidence: bool, as_json: bool) -> None:
    """Show one memory (m_N), raw turn (t_N) or card (c_N) in full."""
    with _engine() as engine:
        record = engine.get(ref)
        turns = engine.evidence(ref) if evidence else []
    data = record.to_dict()
    if as_json:
        _emit(data | ({"evidence_turns": [t.to_dict() for t in turns]} if evidence else {}))
        return
    for name, value in data.items():
        if name not in ("body", "text", "summary") and value not in (None, "", [], ()):
            shown_value = ", ".join(map(str, value)) if isinstance(value, list | tuple) else value
            echo(f"{name}: {shown_value}")
    click.echo("")
    echo(data.get("body") or data.get("text") or data.get("summary") or "")
    for turn in turns:
        echo(f"\n[{turn.id} {turn.role} in {turn.session}] {turn.text}")


@cli.command("list")
@click.option("-n", "n", type=int, default=20, show_default=True, help="How many.")
@kind_option
@scope_options
@click.option("--trash", "status", flag_value="trashed", default="active", help="List the trash.")
@json_option
def list_(n: int, kind: str | None, project: str, status: str, as_json: bool) -> None:
    """List recent memories (the scope's and global ones), newest first."""
    with _engine() as engine:
        memories = engine.list_memories(n, kind=kind, project=project, status=status)
    if as_json:
        _emit({"memories": [m.to_dict() for m in memories]})
        return
    if not memories:
        click.echo("the trash is empty" if status == "trashed" else "no memories")
    for memory in memories:
        echo(_memory_line(memory))


def _report(result: Any) -> None:
    click.echo(result.line())


@cli.command()
@click.argument("ref", metavar="ID", required=False)
@click.option("--expired", is_flag=True, help="Purge memories trashed longer than trash_days.")
def purge(ref: str | None, expired: bool) -> None:
    """Delete a memory or turn for good (no undo)."""
    if bool(ref) == expired:
        raise UserError("give either an ID or --expired")
    with _engine() as engine:
        if expired:
            refs = engine.purge_expired()
            purged = counted(len(refs), "expired memory", "expired memories")
            click.echo(f"purged {purged}" + (f": {' '.join(refs)}" if refs else ""))
        elif ref is not None:
            _report(engine.purge(ref))


@cli.command()
@click.argument("text", required=False)
@click.option("--session", "-s", required=True, help="Session id.")
@click.option("--role", "-r", required=True, type=click.Choice(ROLES))
@click.option(
    "--host", default="", help="Host name (claude-code, opencode, codex, gemini, dsh, ...)."
)
@scope_options
@json_option
def ingest(
    text: str | None, session: str, role: str, host: str, project: str, as_json: bool
) -> None:
    """Store one raw turn (TEXT, or - for stdin)."""
    with _engine() as engine:
        result = engine.ingest(session, role, _text_arg(text), host=host, project=project)
    if as_json:
        _emit(result.to_dict())
    else:
        _report(result)


_NOUNS = {
    "turns": ("turn",),
    "memories": ("memory", "memories"),
    "cards": ("card",),
    "skills": ("skill",),
}


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


@cli.command()
@click.option("--by", type=click.Choice(["kind", "tag"]), help="Also count active memories by.")
@json_option
def status(by: str | None, as_json: bool) -> None:
    """What is stored, where, and which versions; the daemon's pid, uptime and requests."""
    from mnemoweave.cli.daemon import daemon_line, daemon_status

    with _engine() as engine:
        data = engine.status()
    data["daemon"] = daemon_status()
    if as_json:
        _emit(data)
        return
    counts = data["counts"]
    click.echo(f"data dir  {data['data_dir']}")
    click.echo("stored    " + ", ".join(counted(n, *_NOUNS[name]) for name, n in counts.items()))
    for model, step in data["catching_up"].items():
        click.echo(
            f"embedding {model}: {step['done']:,} of {step['total']:,} rows; search is "
            "lexical until it is done"
        )
    if limit := data["capacity"]["max_memories"]:
        active = data["capacity"]["active"]
        click.echo(f"capacity  {active:,} of {limit:,} active memories ({active / limit:.0%})")
    if hosts := data["turns_by_host"]:
        click.echo(
            "turns by  " + ", ".join(f"{host or 'no host'} {n}" for host, n in hosts.items())
        )
    if by:
        found = data[f"memories_by_{by}"]
        click.echo(f"{by:<9} " + (", ".join(f"{k} {n}" for k, n in found.items()) or "none"))
    click.echo(f"pending   {counted(data['pending_cards'], 'card')} to review")
    spool = data["spool"]
    if spool["waiting"]:
        click.echo(f"spool     {counted(spool['waiting'], 'payload')} waiting to be stored")
    if spool["reserve"] is False:
        click.echo(
            "spool     its reserve for a full disk is used up (the disk filled, or no daemon "
            "has run since): free space; the daemon makes it again"
        )
    sizes = data["sizes"]
    click.echo(
        f"sizes     store {_megabytes(sizes['db_bytes'])}, vector index "
        f"{_megabytes(sizes['vector_index_bytes'])}, data dir {_megabytes(sizes['data_dir_bytes'])}"
    )
    click.echo("versions  " + ", ".join(f"{k} {v}" for k, v in data["versions"].items()))
    click.echo(daemon_line(data["daemon"]))


@cli.command()
@click.argument("query", required=False, default="")
@click.option("--session", "-s", help="Session id (adds its scene: goal, decisions, open threads).")
@scope_options
@click.option("--budget", "-b", type=int, help="Token budget (default from config: weave_budget).")
@json_option
def weave(query: str, session: str | None, project: str, budget: int | None, as_json: bool) -> None:
    """The context woven before a model turn for QUERY: scene, knowledge, nudge (the
    scope's memories and global ones)."""
    with _engine() as engine:
        woven = engine.weave(query, session=session, project=project, budget=budget)
    if as_json:
        _emit(woven.to_dict())
    elif woven.text:
        echo(woven.text)


@cli.command()
@click.argument("text")
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True)
@json_option
def classify(text: str, role: str, as_json: bool) -> None:
    """What kind of turn TEXT is: pref, pers, skill, mission, conclusion or chat."""
    from mnemoweave.model import Turn

    if not text.strip():
        raise UserError("nothing to classify: the text is empty")
    with _engine() as engine:
        result = engine.classify(Turn("cli", role, text))
    if as_json:
        _emit({"kind": result.kind, "confidence": round(result.confidence, 3)})
    else:
        click.echo(f"{result.kind} ({result.confidence:.2f})")


@cli.command()
def reindex() -> None:
    """Rebuild the full-text and vector indexes from the SQLite store."""

    def progress(table: str, done: int, total: int) -> None:
        click.echo(f"\r{table}: {done}/{total}", nl=done >= total, err=True)

    with _engine(local=True) as engine:
        counts = engine.reindex(progress)
        click.echo(
            f"reindexed {counted(counts['memories'], 'memory', 'memories')}, "
            f"{counted(counts['turns'], 'turn')} "
            f"({engine.retrieval_mode()})"
        )


@cli.command()
@click.option("--repair", is_flag=True, help="Fix what can be fixed (indexes, file modes).")
@json_option
def doctor(repair: bool, as_json: bool) -> None:
    """Check the store, indexes, versions, paths and file modes. Exits 1 if something is wrong."""
    from mnemoweave.hosts.install import both_installed

    with _engine() as engine:
        checks = engine.doctor(repair=repair)
    ok, warnings = all(check.ok for check in checks), [w for w in [both_installed()] if w]
    if as_json:
        _emit({"ok": ok, "checks": [check.to_dict() for check in checks], "warnings": warnings})
    else:
        for check in checks:
            click.echo(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
        for warning in warnings:
            click.echo(f"warn  {warning}")
    if not ok:
        sys.exit(1)


@cli.command()
def demo() -> None:
    """Show mnemoweave working on a small built-in sample (in a separate demo store)."""
    from mnemoweave.cli.demo import run

    run(click.echo)


def main() -> None:
    """The console script. Once the command is done (its store closed), the process leaves
    without tearing itself down: freeing the loaded models and modules would add a tenth
    of a second to every command. It exits the usual way while another thread runs or a
    tracer or profiler (coverage, cProfile) still has work to do at exit."""
    try:
        cli(prog_name="mnemoweave")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if threading.active_count() > 1 or sys.gettrace() or sys.getprofile():
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    with contextlib.suppress(OSError):  # a reader that left early (`| head`)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code or 0)


COMMANDS = (
    "backup",
    "consolidate",
    "daemon",
    "files",
    "forget",
    "graph",
    "hosts",
    "mcp",
    "model",
    "project",
    "proxy",
    "review",
    "team",
    "threads",
)  # the modules that add commands
for _name in COMMANDS:
    import_module(f"mnemoweave.cli.{_name}")
