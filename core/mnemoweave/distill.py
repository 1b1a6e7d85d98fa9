"""Distill: stored turns -> candidate cards with evidence, for the agent to review.

A walk takes the turns not yet distilled (a window over the whole history), one session at
a time, and asks the configured distiller for cards. The built-in one, "extractive", is
local and deterministic: it splits turns into sentences, keeps the ones the classifier
says are not chat (preferences, persona and missions only from the user: an assistant
repeating them adds nothing), groups them by kind and topic (embeddings when a model is
built, shared content words otherwise) and makes each group a card whose summary is its
sentences.

Whatever the distiller (plugins may register others), a card is stored only when every
summary sentence is found in its evidence turns (after normalisation) and its evidence is
not already cited by another card of its kind, pending or decided: nothing is invented,
and a re-run proposes nothing new. The walked turns are marked so the next walk starts after them.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .hookspecs import hookimpl
from .model import Card, SessionEvent, Turn
from .store import audit
from .store import cards as cards_table
from .store import turns as turns_table
from .store.db import transaction
from .text import cjk_count, content_words, normalise

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("mnemoweave.distill")

Distiller = Callable[[Sequence[Turn], Any], list[Card]]

MAX_SENTENCES = 3  # sentences in one summary, the most confident ones, in spoken order
MIN_CONFIDENCE = 0.5  # a sentence the classifier is less sure of is left out
WORD_OVERLAP = 0.34  # lexical grouping (no model): share of content words in common
DECIDED = 0.7  # confidence of a user's choice between options, as a decision
USER_KINDS = ("pref", "pers", "mission")  # only the user states these (not an echo of them)

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# A sentence ends at 。！？!? or at a period before a space, but not at a step number ("1. ").
_BREAK = re.compile(r"(?<=[。！？!?])|(?<=[.])(?<!\b\d\.)(?<!\b\d\d\.)(?=\s)|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)、])\s+")
# What a card is not made of: questions, and requests to the assistant (tasks of the turn).
_QUESTION = re.compile(r"[?？]\s*$|吗[。]?$")
_REQUEST = re.compile(
    r"^(?:can|could|would|will) you\b|^please\b|^pls\b"
    r"|^(?:请|麻烦)?(?:你)?帮(?:我|忙)|^请你|^麻烦你",
    re.IGNORECASE,
)
# A user's choice between options is a decision (a conclusion), unless it is a standing rule.
_DECIDE = re.compile(
    r"\b(?:let'?s (?:go with|use|switch|keep|stick|do|make)|go with|stick with|switch(?:ed)? to"
    r"|we(?:'ll| will) (?:use|go with|switch|keep)|decided?|it is for|stays? the|forget \w+"
    r"|instead of)\b|那就|就用|用.{1,24}吧|换成|换到|改用|决定|定了|就按|按.{1,24}(?:来|吧)|保留"
    r"|^(?:可以|行|好|ok|okay|yes|sure)[，,]\s*\S.{3,}",
    re.IGNORECASE,
)
# An assistant's progress report ("Done, ...", "改好了：...") is not knowledge, unless it
# says why something happened.
_REPORT = re.compile(
    r"^(?:done|ok|okay|sure|will do|starting|written|changed|updated|明白|好的?|收到|改好了|写好了"
    r"|加好了|已)",
    re.IGNORECASE,
)
_CAUSE = re.compile(r"\b(?:because|caused|cause|due to|fixed|so that)\b|原因|因为|导致|所以", re.I)
_STANDING = re.compile(
    r"\b(?:from now on|always|never|every time|i prefer|prefer)\b|以后|一律|永远|每次|都要|不要",
    re.IGNORECASE,
)
_STEPS = re.compile(r"(?<![\d.])(?:\d{1,2}[.)、]|\(\d\))\s|首先|然后|\bfirst\b|\bthen\b", re.I)


def sentences(text: str) -> list[str]:
    """The sentences of a text worth a card: code blocks and bullets' markers dropped,
    fragments too short to say anything left out."""
    out = []
    for piece in _BREAK.split(_FENCE.sub("\n", text)):
        piece = _BULLET.sub("", piece or "").strip()
        if cjk_count(piece) >= 4 or len(re.findall(r"[A-Za-z]{2,}", piece)) >= 2:
            out.append(piece)
    return out


def _substantial(text: str, words: int = 3) -> bool:
    return cjk_count(text) >= 6 or len(content_words(text)) >= words


def kind_of(text: str, role: str, kind: str) -> str | None:
    """The card kind of one classified sentence, or None when it makes no card."""
    text = text.strip()
    if _QUESTION.search(text) or not _substantial(text, 2):
        return None
    if role == "user" and _REQUEST.search(text):
        return None
    if role == "user" and _DECIDE.search(text) and not _STANDING.search(text):
        return "conclusion"
    if (
        not _substantial(text)
        or role == "assistant"
        and _REPORT.match(text)
        and not _CAUSE.search(text)
    ):
        return None
    if role == "assistant" and kind == "skill" and not _STEPS.search(text):
        return "conclusion"  # an explanation, not a procedure
    if kind in USER_KINDS and role != "user":
        return None  # an assistant repeating a preference or a goal adds nothing
    return None if kind == "chat" else kind


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
    words: frozenset[str] = frozenset()
    vector: Any = None


@dataclass
class _Group:
    kind: str
    units: list[_Unit] = field(default_factory=list)
    centroid: Any = None


def _units(engine: Engine, turns: Sequence[Turn]) -> list[_Unit]:
    units = []
    for turn in turns:
        if turn.role not in ("user", "assistant"):
            continue
        for text in sentences(turn.text):
            verdict = engine.classify(Turn(turn.session, turn.role, text, turn.ts))
            kind = kind_of(text, turn.role, verdict.kind)
            decided = kind == "conclusion" and verdict.kind != "conclusion"
            if kind is None or (verdict.confidence < MIN_CONFIDENCE and not decided):
                continue
            words = frozenset(content_words(text))
            confidence = max(verdict.confidence, DECIDED) if decided else verdict.confidence
            units.append(_Unit(turn, text, kind, confidence, len(units), words))
    return units


def _close(unit: _Unit, group: _Group, cutoff: float) -> float:
    """How close a sentence is to a group's topic (0 when too far to join it). A sentence
    of the same turn as the group's last one, or of the turn right after, continues it."""
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
            group = _Group(unit.kind)
            groups.append(group)
        group.units.append(unit)
        if unit.vector is not None:
            total = sum(u.vector for u in group.units)
            group.centroid = total / max(1e-9, float((total @ total) ** 0.5))
    return groups


def _topic(units: list[_Unit], size: int = 3) -> str:
    counts = Counter(word for unit in units for word in unit.words)
    return " ".join(word for word, _ in counts.most_common(size))


def _card(group: _Group) -> Card:
    chosen = sorted(group.units, key=lambda u: -u.confidence)[:MAX_SENTENCES]
    chosen.sort(key=lambda u: u.order)
    seen: set[str] = set()
    parts = []
    for unit in chosen:
        if normalise(unit.text) not in seen:
            seen.add(normalise(unit.text))
            parts.append(unit.text)
    joiner = "" if all(cjk_count(p) for p in parts) else " "
    evidence = tuple(dict.fromkeys(u.turn.id for u in chosen if u.turn.id))
    return Card(
        id="",
        summary=joiner.join(parts),
        suggested_kind=group.kind,
        evidence=tuple(sorted(evidence, key=lambda ref: int(ref[2:]))),
        confidence=round(max(u.confidence for u in chosen), 3),
        project=chosen[0].turn.project,
        topic=_topic(group.units),
    )


def extractive(turns: Sequence[Turn], engine: Engine) -> list[Card]:
    """The built-in distiller: classified sentences grouped by kind and topic."""
    return [_card(group) for group in _groups(engine, _units(engine, turns))]


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
        cards = [c for c in distill(walked, engine) if _admissible(engine, c, texts)]
        with transaction(engine.db) as db:
            for card in cards:
                if cards_table.cited(db, card.evidence, card.suggested_kind) == set(card.evidence):
                    continue  # this evidence was already proposed as this kind (maybe decided)
                cid = cards_table.insert(
                    db,
                    summary=card.summary,
                    suggested_kind=card.suggested_kind,
                    evidence=card.evidence,
                    confidence=card.confidence,
                    project=card.project,
                    now=now,
                    topic=card.topic,
                )
                audit.record(db, "propose", f"c_{cid}", after={"evidence": card.evidence})
                proposed.append(cards_table.from_row(cards_table.get(db, cid)))
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
