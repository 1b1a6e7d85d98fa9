"""The agent's side of the learning loop: review cards, give feedback, read the evidence.

Accepting a card promotes it to a memory that keeps the card's evidence (turn ids); an
edited summary is recorded as the agent's text (origin "agent"), an unedited one as the
card's ("card"). A rejected card stays, with the reason, so it is not proposed again.
Feedback moves a memory's weight within bounds, or marks it outdated (superseded).
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from mnemoweave.capture.writes import Written, announce, draft_memory
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.learn import conflicts
from mnemoweave.model import VERDICTS, Card, Turn, check_kind, parse_id
from mnemoweave.store import audit
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store import team as team_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import transaction
from mnemoweave.text import clean

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

WEIGHT_BOUNDS = (0.25, 2.0)
WEIGHT_STEP = {"useful": 1.25, "wrong": 0.5}


def _pending_card(engine: Engine, ref: str) -> Card:
    table, rowid = parse_id(ref)
    if table != "card":
        raise InvalidInput(f"{ref} is a {table}; only cards (c_N) are reviewed")
    row = cards_table.get(engine.db, rowid)
    if row is None:
        raise NotFound(f"no card with id {ref}")
    card = cards_table.from_row(row)
    if card.status != "pending":
        raise InvalidInput(f"{ref} was already {card.status}")
    return card


def accept(
    engine: Engine,
    ref: str,
    *,
    kind: str | None = None,
    summary: str | None = None,
    title: str | None = None,
    project: str | None = None,
    replaces: str | None = None,
    keep_both: bool = False,
    share: bool = False,
    actor: str = "agent",
) -> Written:
    """Promote a pending card to a memory (with its evidence), in the card's scope unless
    `project` names another ('' for global); returns the memory write.

    A card whose memory would conflict with, or update, an active memory of its scope is
    held instead: it stays pending, naming those memories (`conflicts`), until it is
    accepted again with `replaces` (that memory is superseded by the new one, in the same
    transaction) or `keep_both`. `share`: the memory is shared with the team (team/), in
    that transaction; a global memory never is."""
    card = _pending_card(engine, ref)
    if card.proposal:
        return _accept_proposal(engine, card, actor)
    kind = check_kind(kind if kind else card.suggested_kind)
    edited = summary is not None and summary.strip() != card.summary.strip()
    draft = draft_memory(
        summary if summary is not None and edited else card.summary,
        kind=kind,
        project=card.project if project is None else project,
        tags=(),
        importance=engine.config.default_importance,
        title=title,
        evidence=card.evidence,
        origin="agent" if edited else "card",
    )
    if draft is None:
        raise InvalidInput("the summary holds only private content: nothing to remember")
    if share and (not engine.config.team_url or not draft.project):
        why = "no team_url is set" if not engine.config.team_url else "the memory is global"
        raise InvalidInput(f"--share: {why} (only project memories are shared with a team)")
    if replaces is not None:
        _active_memory(engine, replaces)
    elif not keep_both:
        found = rivals(engine, draft.body, draft.project)
        if found:
            with transaction(engine.db) as db:
                cards_table.set_conflicts(db, int(ref[2:]), [r for r, _ in found])
            return Written("held", ref, reason=held_reason(ref, found))

    def decide(db: sqlite3.Connection, results: list[Written]) -> None:
        """The card is marked in the transaction that writes its memory: both or neither
        (and the memory it replaces, superseded)."""
        memory = results[0].ref
        cards_table.decide(db, int(ref[2:]), "accepted", time.time(), int(memory[2:]))
        after = {"status": "accepted", "memory": memory, "edited": edited}
        if replaces is not None and replaces != memory:
            memories_table.supersede(db, int(replaces[2:]), int(memory[2:]), time.time())
            audit.record(
                db,
                "supersede",
                replaces,
                {"status": "active"},
                {"status": "superseded", "superseded_by": memory},
                actor,
            )
            after["replaces"] = replaces
        if share:
            team_table.mark_shared(db, [int(memory[2:])], time.time())
            after["shared"] = True
        audit.record(db, "accept", ref, {"status": "pending"}, after, actor)

    written = engine.write_memories([draft], actor, then=decide)[0]
    if replaces is not None:
        announce(engine.pm, engine.db, Written("superseded", replaces, reason=f"by {written.id}"))
    return written


def _accept_proposal(engine: Engine, card: Card, actor: str) -> Written:
    """Apply the consolidation item a card proposes (see consolidate.idle_cards), then mark
    the card; a store changed since the proposal is refused and the card stays pending."""
    run, item = card.proposal.split()
    done = engine.consolidate_apply(run, [item], settle=True)
    with transaction(engine.db) as db:
        cards_table.decide(db, int(card.id[2:]), "accepted", time.time())
        after = {"status": "accepted", "applied": card.proposal}
        audit.record(db, "accept", card.id, {"status": "pending"}, after, actor)
    applied = ", ".join(done["applied"]) or "nothing left to apply"
    return Written(
        "consolidated", card.id, reason=f"{run} {applied}; undo: consolidate rollback {run}"
    )


RIVALS = 10  # the nearest memories of a scope a new one is checked against


def rivals(
    engine: Engine, text: str, project: str, exclude: str = ""
) -> list[tuple[str, conflicts.Verdict]]:
    """Active memories of scope `project` that `text` conflicts with or updates
    (conflicts.py), nearest first: judged with the main model's cosine when it found them,
    on their words when only the full-text index did."""
    main = engine.channels[0].name if engine.channels else ""
    found = []
    for hit in engine.search(text, k=RIVALS, project=project, source="memories", touch=False):
        if hit.id == exclude or hit.project != project:
            continue
        cosine = hit.extra["explain"]["dense"].get(main, {}).get("cosine")
        verdict = conflicts.detect(hit.text, text, cosine)
        if verdict:
            found.append((hit.id, verdict))
    return found


def held_reason(ref: str, found: list[tuple[str, conflicts.Verdict]]) -> str:
    """One line: what `ref` (a card or new memory) clashes with, and the commands that settle it."""
    what = "; ".join(f"{kind_of(v)} {rival} ({v.reason})" for rival, v in found)
    first = found[0][0]
    if ref.startswith("c_"):
        return (
            f"{what}: kept pending; `mnemoweave review {ref} accept --replaces {first}` "
            f"retires {first}, `--keep-both` keeps both"
        )
    return f"{what}: `mnemoweave supersede {first} {ref}` retires {first}"


def kind_of(verdict: conflicts.Verdict) -> str:
    return "updates" if verdict.kind == "update" else "conflicts with"


def _active_memory(engine: Engine, ref: str) -> None:
    table, rowid = parse_id(ref)
    row = memories_table.get(engine.db, rowid) if table == "memory" else None
    if row is None:
        raise NotFound(f"no memory with id {ref}")
    if row["status"] != "active":
        raise InvalidInput(f"{ref} is {row['status']}, not active: nothing to replace")


def supersede(engine: Engine, old: str, new: str, *, actor: str = "agent") -> Written:
    """`new` replaces `old`: old keeps its text for audit, gets superseded_by, stops surfacing."""
    if old == new:
        raise InvalidInput("a memory cannot supersede itself")
    ids = []
    for ref in (old, new):
        table, rowid = parse_id(ref)
        if table != "memory":
            raise InvalidInput(f"{ref} is a {table}; only memories supersede each other")
        ids.append(rowid)
    with transaction(engine.db) as db:
        for ref, rowid in zip((old, new), ids, strict=True):
            row = memories_table.get(db, rowid)
            if row is None:
                raise NotFound(f"no memory with id {ref}")
            if row["status"] != "active":
                raise InvalidInput(f"{ref} is {row['status']}, not active")
        memories_table.supersede(db, ids[0], ids[1], time.time())
        audit.record(
            db,
            "supersede",
            old,
            {"status": "active"},
            {"status": "superseded", "superseded_by": new},
            actor,
        )
    return announce(engine.pm, engine.db, Written("superseded", old, reason=f"by {new}"))


def edit(
    engine: Engine,
    ref: str,
    *,
    text: str,
    kind: str | None = None,
    title: str | None = None,
    actor: str = "user",
) -> Written:
    """A person rewrites an active memory in place (same id; the old text stays in the
    audit): its text, its kind when given, its title as given or else from the new text."""
    row = memories_table.by_ref(engine.db, ref, "only memories (m_N) are edited")
    draft = draft_memory(
        text,
        kind=kind or row["kind"],
        project=row["project"],
        importance=row["importance"],
        title=title,
    )
    if draft is None:
        raise InvalidInput("the text holds only private content: nothing to keep")
    return engine.rewrite_memory(ref, draft, actor)


def reject(engine: Engine, ref: str, *, why: str = "", actor: str = "agent") -> Written:
    """Decline a pending card; the decision (and why, cleaned as stored text is) is kept."""
    _pending_card(engine, ref)
    why = clean(why)
    with transaction(engine.db) as db:
        cards_table.decide(db, int(ref[2:]), "rejected", time.time(), why=why or None)
        audit.record(
            db, "reject", ref, {"status": "pending"}, {"status": "rejected", "why": why}, actor
        )
    return Written("rejected", ref)


def feedback(engine: Engine, ref: str, verdict: str, *, actor: str = "agent") -> Written:
    """useful / wrong scale the memory's ranking weight (bounded); outdated retires it."""
    if verdict not in VERDICTS:
        raise InvalidInput(f"unknown feedback {verdict!r}; use one of: {', '.join(VERDICTS)}")
    with transaction(engine.db) as db:
        row = memories_table.by_ref(db, ref, "feedback is for memories (m_N)")
        if verdict != "outdated":
            low, high = WEIGHT_BOUNDS
            weight = min(high, max(low, row["weight"] * WEIGHT_STEP[verdict]))
            memories_table.set_weight(db, row["id"], weight, time.time())
            audit.record(
                db,
                "feedback",
                ref,
                {"weight": row["weight"]},
                {"weight": weight, "verdict": verdict},
                actor,
            )
            return Written("weighted", ref, reason=f"weight {row['weight']:.2f} -> {weight:.2f}")
        memories_table.set_status(db, row["id"], "superseded", None)
        audit.record(
            db,
            "feedback",
            ref,
            {"status": row["status"]},
            {"status": "superseded", "verdict": verdict},
            actor,
        )
    return announce(engine.pm, engine.db, Written("superseded", ref))  # once committed


def evidence(engine: Engine, ref: str) -> list[Turn]:
    """The raw turns behind a memory or a card, in session order."""
    record = engine.get(ref)
    refs = getattr(record, "evidence", None)
    if refs is None:
        raise InvalidInput(f"{ref} is a turn: it is its own evidence")
    turns = [turns_table.get(engine.db, int(r[2:])) for r in refs if r.startswith("t_")]
    return [turns_table.from_row(row) for row in turns if row is not None]


def rehydrate(
    engine: Engine,
    *,
    session: str | None = None,
    start: float | None = None,
    end: float | None = None,
    match: str | None = None,
    limit: int = 50,
) -> list[Turn]:
    """Raw turns by session and time window, or by keyword (full-text), oldest first."""
    if not (session or match):
        raise InvalidInput("give a session (--session) or words to match (--match)")
    if limit < 1:
        raise InvalidInput(f"the limit must be at least 1, got {limit}")
    ids = None
    if match:
        hits = engine.search(match, k=limit, source="turns", mode="lexical", touch=False)
        ids = [int(hit.id[2:]) for hit in hits]
    rows = turns_table.window(
        engine.db, session=session, start=start, end=end, ids=ids, limit=limit
    )
    return [turns_table.from_row(row) for row in rows]
