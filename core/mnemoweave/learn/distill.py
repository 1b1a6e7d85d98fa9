"""Distill: stored turns -> candidate cards with evidence, for the agent to review.

A walk takes the turns not yet distilled (a window over the whole history), one session at
a time, and asks the configured distiller for cards. The built-in one, "extractive", is
local and deterministic: it cuts turns into statements (`statements.py`: sentences, and
two rules said in one sentence apart, without the discourse around them), keeps the ones
worth a card (`worth.py`: rules and preferences, facts about the user, standing goals,
decisions, findings about the user's work; not questions, one-off requests or general
knowledge; what the assistant says is read as the answer to the user's turn before it),
groups them by kind and topic (embeddings when a model is built, shared content words
otherwise; a rule or fact stated is a card of its own, a sentence giving its reason goes
with it; a pitfall's problem, cause and fix are one card; a session's facts about the user
make one card) and makes each group a card whose summary is its statements, joined so that
they split back the same.

Whatever the distiller (plugins may register others), a card is stored only when every
summary sentence is found in its evidence turns (after normalisation) and its evidence is
not already cited by a card of its kind from an earlier walk, pending or decided (one message
may hold two rules, each a card): nothing is invented,
and a re-run proposes nothing new. A card saying what a pending card of its kind and
project says (normalised) adds its evidence to that card instead; one that an active memory
or a rejected card already says is not proposed. The walked turns are marked so the next
walk starts after them.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mnemoweave.learn.statements import (
    capitalised,
    clauses,
    closed,
    own_words,
    sentences,
    stated,
    summary_of,
    traceable,
)
from mnemoweave.learn.worth import Worth, answering, details, explains, kind_of, names_work
from mnemoweave.model import Card, Turn
from mnemoweave.recall.wordinfo import information
from mnemoweave.store import audit
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import transaction
from mnemoweave.text import bare, content_words, normalise, precise_words

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

log = logging.getLogger("mnemoweave.learn.distill")

Distiller = Callable[..., list[Card]]  # distill(turns=..., engine=...): keywords only

# Sentences in one summary, the most confident ones, in spoken order: a finding holds the
# problem, its cause and its fix.
MAX_SENTENCES = {"conclusion": 6, "": 3}
MIN_CONFIDENCE = 0.5  # a sentence the classifier is less sure of is left out, unless vouched
VOUCHED = 0.7  # confidence of a sentence a cue vouches for (a rule, a decision, a pitfall...)
WORD_OVERLAP = 0.34  # lexical grouping (no model): share of content words in common
ROLES = ("user", "assistant")


# --- the built-in extractive distiller ------------------------------------------------------


@dataclass
class _Unit:
    turn: Turn
    text: str
    kind: str
    confidence: float
    order: int
    leads: bool = True  # False: it only joins a group another sentence started
    alone: bool = True  # False: a card only with a sentence that explains or fixes it
    statement: int = -1  # the statement it belongs to (its own order unless it explains one)
    sentence: int = -1  # the sentence it was cut from (its own order unless cut from one)
    words: frozenset[str] = field(init=False)
    details: int = field(init=False)  # particulars it names: breaks ties of confidence
    vector: Any = None

    def __post_init__(self) -> None:
        if self.statement < 0:
            self.statement = self.order
        if self.sentence < 0:
            self.sentence = self.order
        self.words = frozenset(content_words(self.text))
        self.details = details(self.text)


@dataclass
class _Group:
    kind: str
    units: list[_Unit] = field(default_factory=list)
    centroid: Any = None


_STATED = ("pref", "fact")  # kinds a user states one at a time, each its own card


def _units(engine: Engine, turns: Sequence[Turn]) -> list[_Unit]:
    """The sentences of a session worth a card, in order. What the assistant says is read
    as an answer to the user's turn before it (`worth.answering`)."""
    units: list[_Unit] = []
    answered = ""
    for turn in turns:
        if turn.role == "user":
            said = _said_by_user(engine, turn, len(units))
            answered = answering(turn.text, {unit.kind for unit in said})
        elif turn.role == "assistant":
            said = _said_by_assistant(engine, turn, len(units), answered)
            answered = ""
        else:
            continue
        units.extend(said)
    return units


def _worth(engine: Engine, turn: Turn, text: str, answered: str = "") -> tuple[Worth, float] | None:
    """What a sentence is worth, and how sure: read whole (an opener can be a cue: "Pitfall:
    ..."), or without its discourse when whole it is worth nothing ("btw don't use ...")."""
    verdict = engine.classify(Turn(turn.session, turn.role, text, turn.ts))
    worth = kind_of(text, turn.role, verdict.kind, answered)
    said = stated(text)
    if worth is None and said != text:
        worth = kind_of(said, turn.role, verdict.kind, answered)
    if worth is None:
        return None
    confidence = max(verdict.confidence, VOUCHED) if worth.vouched else verdict.confidence
    return (worth, confidence) if confidence >= MIN_CONFIDENCE else None


def _said_by_user(engine: Engine, turn: Turn, start: int) -> list[_Unit]:
    """A user turn's statements: each rule or fact a card of its own (two said in one
    sentence are cut apart), a sentence that gives the reason for a rule going with it."""
    units: list[_Unit] = []
    for text in sentences(own_words(turn.text)):
        judged = _worth(engine, turn, text)
        lead = units[-1] if units and units[-1].kind == "pref" else None
        own = judged is not None and judged[0].kind in ("pref", "mission")
        said = stated(text)
        if lead and not own and explains(said):
            order = start + len(units)
            kind, confidence, statement = lead.kind, lead.confidence, lead.statement
            units.append(
                _Unit(turn, said, kind, confidence, order, leads=False, statement=statement)
            )
            continue
        if judged is None:
            continue
        worth, confidence = judged
        parts = clauses(text) if worth.kind in _STATED else [text]
        sentence = start + len(units)
        for number, part in enumerate(parts):
            order, said = start + len(units), stated(part)
            if number < len(parts) - 1:
                said = closed(said)  # a statement cut from the sentence ends as one
            quoted = capitalised(said) if number else said
            units.append(
                _Unit(
                    turn,
                    quoted,
                    worth.kind,
                    confidence,
                    order,
                    leads=worth.leads,
                    alone=worth.alone,
                    sentence=sentence,
                )
            )
    return units


def _said_by_assistant(engine: Engine, turn: Turn, start: int, answered: str) -> list[_Unit]:
    if not names_work(turn.text):
        return []
    units: list[_Unit] = []
    for text in sentences(turn.text):
        judged = _worth(engine, turn, text, answered)
        if judged is not None:
            worth, confidence = judged
            order = start + len(units)
            units.append(
                _Unit(
                    turn,
                    stated(text),
                    worth.kind,
                    confidence,
                    order,
                    leads=worth.leads,
                    alone=worth.alone,
                )
            )
    return units


def _close(unit: _Unit, group: _Group, cutoff: float) -> float:
    """How close a sentence is to a group's topic (0 when too far to join it). A sentence
    of the same turn as the group's last one, or of the turn right after, continues it;
    facts about the user share their subject, so a session's make one card."""
    if unit.kind == "pers":
        return 1.0
    if unit.statement == group.units[-1].statement:
        return 3.0  # the reason for the statement before it
    if (
        unit.leads
        and unit.kind in _STATED
        and any(u.sentence == unit.sentence for u in group.units)
    ):
        return 0.0  # another rule or fact said in the same sentence: a card of its own
    last = group.units[-1].turn.seq
    if last is not None and unit.turn.seq in (last, last + 1):
        return 2.0
    if unit.vector is not None:
        cosine = float(unit.vector @ group.centroid)
        return cosine if cosine >= cutoff else 0.0
    words = frozenset().union(*(u.words for u in group.units))
    if not unit.words or not words:
        return 0.0
    overlap = len(unit.words & words) / min(len(unit.words), len(words))
    return overlap if overlap >= WORD_OVERLAP else 0.0


def _groups(engine: Engine, units: list[_Unit]) -> list[_Group]:
    """Sentences of one kind and topic together, in the order they were said."""
    cutoff = 1.0
    if engine.channels and units:
        channel = engine.channels[0]
        cutoff = channel.relevant_cosine
        for unit, vector in zip(
            units, channel.embedder.embed([u.text for u in units]), strict=True
        ):
            unit.vector = vector
    groups: list[_Group] = []
    for unit in units:
        scored = [(_close(unit, g, cutoff), g) for g in groups if g.kind == unit.kind]
        best = max(scored, key=lambda pair: pair[0], default=(0.0, None))
        group = best[1] if best[0] > 0 else None
        if group is None:
            if not unit.leads:
                continue
            group = _Group(unit.kind)
            groups.append(group)
        group.units.append(unit)
        if unit.vector is not None:
            total = sum(u.vector for u in group.units)
            group.centroid = total / max(1e-9, float((total @ total) ** 0.5))
    return groups


# Names of code in a sentence: code spans, and words joined by _ . / - or ending in ()
_IDENTIFIER = re.compile(r"`([^`\n]{2,40})`|(?<![\w/.-])([A-Za-z_][\w]*(?:[_./-]\w+)+|\w+\(\))")


def _topic(units: list[_Unit], size: int = 3) -> str:
    """What a card is about, in its own words: the names of code it holds first (code spans,
    identifiers), then its most informative words (surprisal in general text, not how often
    the card repeats them), in the order the card says them."""
    text = " ".join(unit.text for unit in units)
    named = list(dict.fromkeys(a or b for a, b in _IDENTIFIER.findall(text)))[:2]
    taken = {word for name in named for word in precise_words(name)}
    words = [w for w in dict.fromkeys(precise_words(text)) if w not in taken and not w.isdigit()]
    informative = sorted(words, key=lambda w: -information(w))[: size - len(named)]
    chosen = [w for w in words if w in informative]
    return " ".join([*named, *chosen])


def _card(group: _Group) -> Card:
    most = MAX_SENTENCES.get(group.kind, MAX_SENTENCES[""])
    chosen = sorted(group.units, key=lambda u: (-u.confidence, -u.details))[:most]
    chosen.sort(key=lambda u: u.order)
    seen: set[str] = set()
    parts = []
    for unit in chosen:
        if normalise(unit.text) not in seen:
            seen.add(normalise(unit.text))
            parts.append(unit.text)
    evidence = tuple(dict.fromkeys(u.turn.id for u in chosen if u.turn.id))
    return Card(
        id="",
        summary=summary_of(parts),
        suggested_kind=group.kind,
        evidence=tuple(sorted(evidence, key=lambda ref: int(ref[2:]))),
        confidence=round(max(u.confidence for u in chosen), 3),
        project=chosen[0].turn.project,
        topic=_topic(group.units),
    )


def extractive(turns: Sequence[Turn], engine: Engine) -> list[Card]:
    """The built-in distiller: classified sentences grouped by kind and topic."""
    groups = _groups(engine, _units(engine, turns))
    return [_card(group) for group in groups if any(unit.alone for unit in group.units)]


# --- the walk -------------------------------------------------------------------------------


def distiller(engine: Engine) -> Distiller:
    """The configured distiller (an unknown name falls back to the built-in one)."""
    from mnemoweave.plugins import chosen

    found: Distiller = chosen(engine.pm, "register_distillers", engine.config.distiller)
    return found


def _admissible(engine: Engine, card: Card, texts: dict[str, str]) -> bool:
    if not card.evidence or any(ref not in texts for ref in card.evidence):
        log.warning("distilled card refused: evidence %s not in this walk", card.evidence)
        return False
    if not traceable(card.summary, [texts[ref] for ref in card.evidence]):
        log.warning("distilled card refused: summary not found in its evidence %s", card.evidence)
        return False
    return True


def _store(db: sqlite3.Connection, card: Card, now: float) -> Card | None:
    """Store one admissible card and return it, or None when nothing new is proposed: an
    active memory or a rejected card of its kind and project says the same, or a pending
    one does (then the evidence joins it)."""
    norm = normalise(card.summary)
    kind, project = card.suggested_kind, card.project
    if memories_table.find_duplicate(db, norm, project, kind) is not None:
        return None
    same = cards_table.same_summary(db, norm, kind, project, ("pending", "rejected"))
    if any(row["status"] == "rejected" for row in same):
        return None
    if same:
        before = tuple(json.loads(same[0]["evidence"]))
        after = cards_table.add_evidence(db, same[0], card.evidence, card.confidence)
        audit.record(db, "merge", f"c_{same[0]['id']}", {"evidence": before}, {"evidence": after})
        return None
    cid = cards_table.insert(
        db,
        summary=card.summary,
        suggested_kind=kind,
        evidence=card.evidence,
        confidence=card.confidence,
        project=project,
        now=now,
        topic=card.topic,
    )
    audit.record(db, "propose", f"c_{cid}", after={"evidence": card.evidence})
    row = cards_table.get(db, cid)
    if row is None:  # written a moment ago, in this transaction
        raise RuntimeError(f"card c_{cid} vanished as it was proposed")
    return cards_table.from_row(row)


def _exchanges(turns: Sequence[Turn]) -> dict[str, str]:
    """Each turn's partner in its exchange: a user turn's the assistant turn that answers
    it, an assistant turn's the user turn it answers (tool turns in between are skipped);
    a bare turn ("ok", "Done.") is no partner."""
    said = [t for t in sorted(turns, key=lambda t: t.seq or 0) if t.role in ROLES and t.id]
    partners: dict[str, str] = {}
    for ask, answer in zip(said, said[1:], strict=False):
        if ask.role != "user" or answer.role != "assistant" or not ask.id or not answer.id:
            continue
        if not bare(ask.text) and not bare(answer.text):  # "ok", "Done." say nothing
            partners[ask.id] = answer.id
            partners.setdefault(answer.id, ask.id)
    return partners


def _citing_exchanges(card: Card, partners: dict[str, str]) -> Card:
    """The card citing the exchanges its sentences were said in: the rule a user stated
    with the reply that took it up, the finding with the question it answered (a reviewer
    sees both, and the memory stands in for both)."""
    cited = {*card.evidence, *(partners[ref] for ref in card.evidence if ref in partners)}
    return replace(card, evidence=tuple(sorted(cited, key=lambda ref: int(ref[2:]))))


def walks(
    engine: Engine,
    *,
    session: str | None = None,
    since: float | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[list[Turn]]:
    """The undistilled turns in the window, one list per session, oldest first."""
    turns = turns_table.undistilled(
        engine.db, session=session, since=since, offset=offset, limit=limit
    )
    by_session: dict[str, list[Turn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session, []).append(turn)
    return list(by_session.values())


def run(
    engine: Engine,
    *,
    session: str | None = None,
    since: float | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Card]:
    """Walk the undistilled turns in the window; store and return the new pending cards.

    A remote distiller is not asked while the daemon settles what a host's hook left for
    after its answer (the next hook would wait on it): those sessions are postponed
    (`engine.postponed`), and the daemon's remote work distills them without the lock."""
    distill = distiller(engine)
    found = walks(engine, session=session, since=since, offset=offset, limit=limit)
    if getattr(distill, "remote", False) and engine.settling:
        engine.postponed.update(walked[0].session for walked in found)
        return []
    proposed: list[Card] = []
    for walked in found:
        proposed += settle(engine, walked, distill(turns=walked, engine=engine))
    return proposed


def settle(engine: Engine, walked: list[Turn], found: Sequence[Card]) -> list[Card]:
    """Store the admissible cards a distiller found in one session's walked turns, and mark
    the turns distilled; the new pending cards."""
    now = time.time()
    proposed: list[Card] = []
    texts = {turn.id: turn.text for turn in walked if turn.id}
    partners = _exchanges(walked)
    cards = [_citing_exchanges(c, partners) for c in found if _admissible(engine, c, texts)]
    with transaction(engine.db) as db:
        # evidence proposed before as the card's kind was distilled then: nothing new
        # (cards of this walk may share a turn: two rules said in one message)
        cards = [
            card
            for card in cards
            if cards_table.cited(db, card.evidence, card.suggested_kind) != set(card.evidence)
        ]
        for card in cards:
            stored = _store(db, card, now)
            if stored is not None:
                proposed.append(stored)
        turns_table.mark_distilled(db, list(texts), now)
    for card in proposed:
        engine.pm.hook.on_card(card=card)
    return proposed
