"""Distill: stored turns -> candidate cards with evidence, for the agent to review.

A walk takes the turns not yet distilled (a window over the whole history), one session at
a time, and asks the configured distiller for cards. The built-in one, "extractive", is
local and deterministic: it splits turns into sentences, keeps the ones worth a card
(`worth.py`: rules and preferences, facts about the user, standing goals, decisions,
findings about the user's work; not questions, one-off requests or general knowledge),
groups them by kind and topic (embeddings when a model is built, shared content words
otherwise; a session's facts about the user make one card) and makes each group a card
whose summary is its sentences, joined so that they split back the same.

Whatever the distiller (plugins may register others), a card is stored only when every
summary sentence is found in its evidence turns (after normalisation) and its evidence is
not already cited by another card of its kind, pending or decided: nothing is invented,
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

from .hookspecs import hookimpl
from .model import Card, SessionEvent, Turn
from .store import audit
from .store import cards as cards_table
from .store import memories as memories_table
from .store import turns as turns_table
from .store.db import transaction
from .text import bare, cjk_count, content_words, normalise, precise_words, stopwords
from .wordinfo import information
from .worth import details, kind_of, names_work

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("mnemoweave.distill")

Distiller = Callable[..., list[Card]]  # distill(turns=..., engine=...): keywords only

MAX_SENTENCES = 3  # sentences in one summary, the most confident ones, in spoken order
MIN_CONFIDENCE = 0.5  # a sentence the classifier is less sure of is left out, unless vouched
VOUCHED = 0.7  # confidence of a sentence a cue vouches for (a rule, a decision, a pitfall...)
WORD_OVERLAP = 0.34  # lexical grouping (no model): share of content words in common
ROLES = ("user", "assistant")

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# A sentence ends at a line break, at 。！？!?, or at a period before a space, except after a
# step number ("Release: 1. bump the version, 2. tag it" is one sentence).
_BREAK = re.compile(r"(?<=[。！？!?])|(?<=[.])(?=\s)")
_STEP_NUMBER = re.compile(r"(?:^|[:：;；,，(（]\s*)\d{1,2}\.$")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d{1,2}[.)、])\s+")
_CLOSED_CJK = re.compile(r"[。！？]$")
# Discourse that opens a sentence without saying anything of its own ("Also, ...", "Pitfall
# we hit today: ...", "另外，...", "踩坑：..."), and reminders that close one ("..., don't
# forget this."): the card states the memory, not the conversation. Words that can open
# content ("remember to ...", "so that ...") count only before a comma or colon.
_OPENER = re.compile(
    r"^(?:[^\w\s`]+\s*)?(?:(?:(?:also|oh,? and|btw|by the way|fyi|one more thing|heads[- ]up|please"
    r"|(?:and|oh) (?=also|btw|please|remember|don'?t forget)"
    r"|(?:two|three|a few|a couple of|some) (?:rules|conventions|things|notes)[^:：.]{0,40}[:：]"
    r"|[两几三]条[^：:。]{0,10}[：:]"
    r"|(?:a )?(?:pitfall|gotcha)(?: we hit| i hit)?(?: today| yesterday)?|另外|对了|还有|顺便说一下"
    r"|顺便|另外再说一下|提醒一下|今天踩了个坑|踩了个坑|踩坑记录|踩坑|记住|别忘了)\s*[,，:：]?"
    r"|(?:and|so|ok(?:ay)?|well|anyway|remember|note|好的|那个|嗯)\s*[,，:：])\s*)+",
    re.IGNORECASE,
)
_CLOSER = re.compile(
    r"[,，;；]?\s*(?:and )?(?:(?:please )?don'?t forget (?:this|that|it)|remember (?:this|that)"
    r"|别忘了|记住了?|千万记住)\s*[.!。！]*$",
    re.IGNORECASE,
)
_CLOSED = re.compile(r"[.!?]$")


def _pieces(line: str) -> list[str]:
    """A line cut at its sentence ends, but not inside inline code nor after a step number."""
    code = [match.span() for match in _INLINE_CODE.finditer(line)]
    pieces, start = [], 0
    for match in _BREAK.finditer(line):
        end = match.start()
        inside = any(left < end < right for left, right in code)
        if not inside and not _STEP_NUMBER.search(line[start:end].rstrip()):
            pieces.append(line[start:end])
            start = end
    pieces.append(line[start:])
    return pieces


def sentences(text: str) -> list[str]:
    """The sentences of a text worth a card: code blocks and bullets' markers dropped,
    fragments too short to say anything left out."""
    out = []
    for line in _FENCE.sub("\n", text).splitlines():
        for piece in _pieces(line):
            piece = _BULLET.sub("", piece).strip()
            if cjk_count(piece) >= 4 or len(re.findall(r"[A-Za-z]{2,}", piece)) >= 2:
                out.append(piece)
    return out


# Words a statement may open with once the discourse before it is dropped: capitalised then
# (a name of code keeps its case).
_OPENING_WORDS = {"always", "never", "don't", "use", "avoid", "make", "keep", "prefer"}


def stated(text: str) -> str:
    """A sentence without the discourse that opens or closes it (what is left is still a
    piece of the sentence, so a card stays traceable to its evidence); the sentence as it
    was when nothing would be left."""
    opened = _OPENER.sub("", text)
    bare_text = _CLOSER.sub("", opened).strip()
    if len(bare_text) < 4:
        return text
    if _CLOSER.search(opened):
        bare_text = _closed(bare_text)
    first = re.match(r"[a-z]+(?:'[a-z]+)?(?=[\s,])", bare_text)  # a word, not a name of code
    words = stopwords() | _OPENING_WORDS
    if opened != text and first and not cjk_count(bare_text) and first.group() in words:
        bare_text = bare_text[0].upper() + bare_text[1:]
    return bare_text


def _closed(text: str) -> str:
    """A statement ended as a sentence."""
    if re.search(r"[.!?。！？]$", text):
        return text
    return text + ("。" if cjk_count(text) else ".")


def summary_of(parts: Sequence[str]) -> str:
    """Sentences joined into one summary that splits back into the same sentences: after a
    closed sentence a space (nothing after a Chinese one), after one without closing
    punctuation (a heading, a list item) a line break, so it is not run into the next."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif _CLOSED_CJK.search(out):
            out += part
        elif _CLOSED.search(out) and not _STEP_NUMBER.search(out):
            out += " " + part
        else:
            out += "\n" + part
    return out


def traceable(summary: str, evidence: Sequence[str]) -> bool:
    """Whether every sentence of `summary` occurs in the evidence texts (normalised)."""
    source = "\n".join(normalise(text) for text in evidence)
    parts = [normalise(s) for s in sentences(summary)] or [normalise(summary)]
    return all(part and part in source for part in parts)


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
    words: frozenset[str] = field(init=False)
    details: int = field(init=False)  # particulars it names: breaks ties of confidence
    vector: Any = None

    def __post_init__(self) -> None:
        self.words = frozenset(content_words(self.text))
        self.details = details(self.text)


@dataclass
class _Group:
    kind: str
    units: list[_Unit] = field(default_factory=list)
    centroid: Any = None


def _units(engine: Engine, turns: Sequence[Turn]) -> list[_Unit]:
    units: list[_Unit] = []
    for turn in turns:
        if turn.role not in ROLES or turn.role == "assistant" and not names_work(turn.text):
            continue
        for text in sentences(turn.text):
            verdict = engine.classify(Turn(turn.session, turn.role, text, turn.ts))
            worth = kind_of(text, turn.role, verdict.kind)
            if worth is None:
                continue
            confidence = max(verdict.confidence, VOUCHED) if worth.vouched else verdict.confidence
            if confidence >= MIN_CONFIDENCE:  # its kind was read from the whole sentence
                said = stated(text)  # its kind was read from the whole sentence
                unit = _Unit(turn, said, worth.kind, confidence, len(units), worth.leads)
                unit.alone = worth.alone
                units.append(unit)
    return units


def _close(unit: _Unit, group: _Group, cutoff: float) -> float:
    """How close a sentence is to a group's topic (0 when too far to join it). A sentence
    of the same turn as the group's last one, or of the turn right after, continues it;
    facts about the user share their subject, so a session's make one card."""
    if unit.kind == "pers":
        return 1.0
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
    chosen = sorted(group.units, key=lambda u: (-u.confidence, -u.details))[:MAX_SENTENCES]
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
    """The configured distiller (an unknown name falls back to "extractive", with a warning)."""
    registry: dict[str, Distiller] = {}
    engine.pm.hook.register_distillers(register=registry.__setitem__)
    name = engine.config.distiller
    if name not in registry:
        log.warning("unknown distiller %r (registered: %s)", name, ", ".join(sorted(registry)))
        name = "extractive"
    return registry[name]


def _admissible(engine: Engine, card: Card, texts: dict[str, str]) -> bool:
    if not card.evidence or any(ref not in texts for ref in card.evidence):
        log.warning("distilled card refused: evidence %s not in this walk", card.evidence)
        return False
    if not traceable(card.summary, [texts[ref] for ref in card.evidence]):
        log.warning("distilled card refused: summary not found in its evidence %s", card.evidence)
        return False
    return True


def _store(db: sqlite3.Connection, card: Card, now: float) -> Card | None:
    """Store one admissible card and return it, or None when nothing new is proposed: its
    evidence was already proposed as its kind, an active memory or a rejected card of its
    kind and project says the same, or a pending one does (then the evidence joins it)."""
    if cards_table.cited(db, card.evidence, card.suggested_kind) == set(card.evidence):
        return None
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


def run(
    engine: Engine,
    *,
    session: str | None = None,
    since: float | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[Card]:
    """Walk the undistilled turns in the window; store and return the new pending cards."""
    turns = turns_table.undistilled(
        engine.db, session=session, since=since, offset=offset, limit=limit
    )
    by_session: dict[str, list[Turn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session, []).append(turn)
    distill = distiller(engine)
    proposed: list[Card] = []
    now = time.time()
    for walked in by_session.values():
        texts = {turn.id: turn.text for turn in walked if turn.id}
        found = distill(turns=walked, engine=engine)  # keywords, as the hookspec says
        partners = _exchanges(walked)
        cards = [_citing_exchanges(c, partners) for c in found if _admissible(engine, c, texts)]
        with transaction(engine.db) as db:
            for card in cards:
                stored = _store(db, card, now)
                if stored is not None:
                    proposed.append(stored)
            turns_table.mark_distilled(db, list(texts), now)
    for card in proposed:
        engine.pm.hook.on_card(card=card)
    return proposed


# --- plugin: the built-in distiller, and distilling when a session pauses or ends ----------


@hookimpl
def register_distillers(register: Any) -> None:
    register("extractive", extractive)


def _session_paused(event: SessionEvent, engine: Engine) -> None:
    engine.distill(session=event.session)


on_session_idle = hookimpl(_session_paused)
on_pre_compact = hookimpl(_session_paused)
on_session_end = hookimpl(_session_paused)
