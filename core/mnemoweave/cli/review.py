"""CLI commands of the learning loop: distill, pending, review, supersede, feedback,
rehydrate, skill."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from mnemoweave.capture.file_formats import parse_time
from mnemoweave.cli.main import _emit, _engine, _one_line, _report, cli, json_option, kind_option
from mnemoweave.cli.scope import rescope_options, scope_options
from mnemoweave.cli.terminal import echo
from mnemoweave.errors import InvalidInput
from mnemoweave.model import DECISIONS, VERDICTS, Card, Memory, counted, sane_time


@cli.command()
@scope_options
@click.option("-n", "n", type=int, default=50, show_default=True, help="How many.")
@json_option
def pending(project: str, n: int, as_json: bool) -> None:
    """Candidate cards awaiting review, the scope's and global ones (accept, edit or reject
    them with `review`)."""
    with _engine() as engine:
        cards = engine.pending(project, n)
    if as_json:
        _emit({"cards": [card.to_dict() for card in cards]})
        return
    if not cards:
        click.echo("no cards await review")
    for card in cards:
        echo(_card_line(card))
        if card.conflicts:
            with _engine() as engine:  # side by side: what its memory would clash with
                for ref in card.conflicts:
                    rival = engine.get(ref)
                    text = rival.body if isinstance(rival, Memory) else ""
                    echo(f"      clashes with {ref}: {_one_line(text)}")


def _card_line(card: Card) -> str:
    return (
        f"{card.id}  [{card.suggested_kind} {card.confidence:.2f}] "
        f"{_one_line(card.summary)}  (evidence {', '.join(card.evidence)})"
    )


@cli.command()
@click.option("--session", "-s", help="Only this session's turns.")
@click.option("--since", help="Only turns from this time on (ISO 8601 or epoch seconds).")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many turns.")
@click.option("--limit", type=int, help="Walk at most this many turns.")
@json_option
def distill(
    session: str | None, since: str | None, offset: int, limit: int | None, as_json: bool
) -> None:
    """Propose cards from turns not yet distilled (oldest first); they await `review`."""
    with _engine() as engine:
        cards = engine.distill(
            session=session, since=_when(since, "--since"), offset=offset, limit=limit
        )
    if as_json:
        _emit({"cards": [card.to_dict() for card in cards]})
        return
    click.echo(f"{counted(len(cards), 'new card')} to review")
    for card in cards:
        echo(_card_line(card))


@cli.command()
@click.argument("ref", metavar="ID")
@click.argument("decision", type=click.Choice(DECISIONS))
@kind_option
@click.option("--summary", help="accept: the memory's text, edited by the agent.")
@click.option("--title", help="accept: a short title.")
@click.option("--replaces", metavar="ID", help="accept: the memory it retires (superseded).")
@click.option("--keep-both", is_flag=True, help="accept: keep it beside a memory it clashes with.")
@click.option("--share", is_flag=True, help="accept: share the memory with the team.")
@click.option("--why", default="", help="reject: the reason, kept with the card.")
@rescope_options
@json_option
def review(
    ref: str,
    decision: str,
    kind: str | None,
    summary: str | None,
    title: str | None,
    replaces: str | None,
    keep_both: bool,
    share: bool,
    why: str,
    project: str | None,
    as_json: bool,
) -> None:
    """Accept a pending card (it becomes a memory with its evidence, in the card's scope
    unless --project or --global says otherwise) or reject it. An acceptance that would
    clash with an active memory is held, naming it, until --replaces ID or --keep-both."""
    if decision == "accept":
        if why:
            raise InvalidInput("--why goes with reject")
        options: dict[str, Any] = {"kind": kind, "summary": summary, "title": title}
        options |= {"project": project, "replaces": replaces, "keep_both": keep_both}
        options |= {"share": True} if share else {}
    else:
        if kind or summary or title or replaces or keep_both or share or project is not None:
            raise InvalidInput(
                "--kind, --summary, --title, --replaces, --keep-both, --share, --project and"
                " --global go with accept"
            )
        options = {"why": why}
    with _engine() as engine:
        result = engine.review(ref, decision, **options)
    if as_json:
        _emit(result.to_dict())
    else:
        _report(result)


@cli.command()
@click.argument("ref", metavar="ID")
@click.argument("verdict", type=click.Choice(VERDICTS))
def feedback(ref: str, verdict: str) -> None:
    """Tell how a memory served: useful / wrong move its weight, outdated retires it."""
    with _engine() as engine:
        _report(engine.feedback(ref, verdict))


@cli.command()
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
def supersede(old: str, new: str) -> None:
    """NEW replaces OLD: OLD is kept for audit but no longer surfaces."""
    with _engine() as engine:
        _report(engine.supersede(old, new))


def _when(value: str | None, name: str) -> float | None:
    return None if value is None else parse_time(value, name)


@cli.command()
@click.option("--session", "-s", help="The session whose turns to return.")
@click.option("--from", "start", help="From this time (ISO 8601 or epoch seconds).")
@click.option("--to", "end", help="Up to this time (ISO 8601 or epoch seconds).")
@click.option("--match", help="Only turns with these words.")
@click.option("-n", "n", type=int, default=50, show_default=True, help="How many.")
@json_option
def rehydrate(
    session: str | None,
    start: str | None,
    end: str | None,
    match: str | None,
    n: int,
    as_json: bool,
) -> None:
    """The exact raw turns of a session or time window, or those matching words."""
    with _engine() as engine:
        turns = engine.rehydrate(
            session=session,
            start=_when(start, "--from"),
            end=_when(end, "--to"),
            match=match,
            limit=n,
        )
    if as_json:
        _emit({"turns": [turn.to_dict() for turn in turns]})
        return
    for turn in turns:
        when = (
            datetime.fromtimestamp(turn.ts).isoformat(timespec="seconds")
            if sane_time(turn.ts)
            else "?"
        )
        echo(f"{turn.id}  {when}  {turn.session}  {turn.role}: {_one_line(turn.text)}")


@cli.group()
def skill() -> None:
    """Procedures saved on purpose: teach, check, load, list, and the learning queue."""


@skill.command("teach")
@click.argument("name")
@click.option("--summary", default="", help="One line: what the skill does.")
@click.option("--trigger", "triggers", multiple=True, help="When it applies (repeatable).")
@click.option("--step", "steps", multiple=True, help="One step (repeatable, in order).")
@click.option("--source-url", "urls", multiple=True, help="Where it comes from (at least one).")
@json_option
def skill_teach(
    name: str,
    summary: str,
    triggers: tuple[str, ...],
    steps: tuple[str, ...],
    urls: tuple[str, ...],
    as_json: bool,
) -> None:
    """Save or update the skill NAME (every missing piece is reported at once)."""
    with _engine() as engine:
        taught = engine.teach_skill(
            name, summary=summary, triggers=triggers, steps=steps, source_urls=urls
        )
    if as_json:
        _emit(taught.to_dict())
    else:
        echo(f"taught {taught.name}: {taught.summary}")


@skill.command("check")
@click.argument("query")
@json_option
def skill_check(query: str, as_json: bool) -> None:
    """Is a task known, partly known or unknown? With the best matching skill."""
    with _engine() as engine:
        result = engine.check_skill(query)
    if as_json:
        _emit(result)
    else:
        best = result["best"]
        queued = (
            " (queued to learn: `mnemoweave skill queue`)" if result["verdict"] == "unknown" else ""
        )
        echo(result["verdict"] + (f": {best['name']} — {best['summary']}" if best else queued))


@skill.command("queue")
@click.option("--done", "done", metavar="ENTRY", help="Close an entry (its number or its task).")
@json_option
def skill_queue(done: str | None, as_json: bool) -> None:
    """The learning queue: tasks `skill check` found no skill for, the most asked first."""
    with _engine() as engine:
        closed = engine.close_queued_skill(done) if done is not None else None
        entries = engine.skill_queue()
    if as_json:
        _emit({"closed": closed, "entries": entries} if closed else {"entries": entries})
        return
    if closed:
        echo(f"closed {closed['number']}. {closed['task']}")
    if not entries:
        click.echo("the learning queue is empty")
    for entry in entries:
        echo(f"{entry['number']:>3}. {entry['task']}  (asked {entry['asked']}x)")


@skill.command("load")
@click.argument("name")
@json_option
def skill_load(name: str, as_json: bool) -> None:
    """The full steps of a skill (counts a use)."""
    with _engine() as engine:
        loaded = engine.load_skill(name)
    if as_json:
        _emit(loaded.to_dict())
        return
    echo(f"{loaded.name}: {loaded.summary}")
    for number, step in enumerate(loaded.steps, 1):
        echo(f"{number}. {step}")
    echo("sources: " + " ".join(loaded.source_urls))


@skill.command("list")
@json_option
def skill_list(as_json: bool) -> None:
    """Every skill, most used first."""
    with _engine() as engine:
        known = engine.skills()
    if as_json:
        _emit({"skills": [s.to_dict() for s in known]})
        return
    if not known:
        click.echo("no skills")
    for s in known:
        echo(f"{s.name:<24} used {s.usage_count:<3} {s.summary}")


@cli.command()
@json_option
def hygiene(as_json: bool) -> None:
    """What could be tidied (near-duplicates, stale memories, index drift); changes nothing."""
    with _engine() as engine:
        found = engine.hygiene()
    if as_json:
        _emit(found)
        return
    for pair in found["near_duplicates"]:
        click.echo(f"near-duplicate  {pair['a']} ~ {pair['b']} (cosine {pair['cosine']})")
    for memory in found["stale"]:
        echo(
            f"stale           {memory['id']} (importance {memory['importance']}, "
            f"strength {memory['strength']}) {_one_line(memory['text'], 60)}"
        )
    for name, drift in found["index"].items():
        if drift["not_indexed"] or drift["stale_entries"]:
            click.echo(
                f"index drift     {name}: {drift['not_indexed']} rows not indexed, "
                f"{drift['stale_entries']} stale entries (mnemoweave doctor --repair)"
            )
    if not found["near_duplicates"] and not found["stale"]:
        click.echo("nothing to tidy")
