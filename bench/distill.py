"""Distillation: the candidate cards `Engine.distill` proposes from scripted coding sessions.

Data: `data/distill_dev.jsonl`, one conversation a line: {"id", "lang" (en|zh|mixed),
"project", "turns": [{"role", "text"}], "facts": [{"kind", "must", "evidence"}]}. `must`
holds short key phrases (lowercase, each in one of the fact's evidence turns) and
`evidence` the indexes of the turns the fact comes from; a conversation without facts is
small talk and should yield no card.

Each conversation gets a fresh engine: its turns are ingested as one session, then
`distill(session=...)` runs and the pending cards are reviewed. A card is accepted as-is
when it matches one fact of its conversation: every `must` phrase occurs in its summary
(both sides normalised by `canon`), its kind agrees with the fact's (equal, except that
conclusion and fact count as one kind: both are durable knowledge about the project; a
mission is a goal that expires, so it never stands for a conclusion), and its evidence
cites at least one of the fact's turns.

Report: precision (accepted / proposed), recall (facts matched by an accepted card /
facts; a card may match several facts, and a fact counts once however many cards match
it: `duplicates` counts the accepted cards that add no fact), per language and per fact
kind; `smalltalk_cards`, the small-talk conversations that got any card; `rerun_new`, the
cards a second distill of the unchanged session adds (should be 0); `untraceable`, the
share of cards with a summary sentence not found in the text of its evidence turns;
`rejected`, the rejected cards by nearest miss (a fact's phrases and evidence but another
kind; its phrases but other turns; no fact's phrases; small talk); `misses`, the facts
missed and cards rejected, per conversation. `baseline` scores one card per turn: each
stored turn the classifier does not call chat, whole, with the classifier's kind.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from harness import load_embedders, progress
from metrics import percentiles
from mnemoweave import Engine
from mnemoweave.model import MEMORY_KINDS, Card, Turn
from mnemoweave.text import clip, normalise

DATA = Path(__file__).resolve().parent / "data" / "distill_dev.jsonl"
LANGS = ("en", "zh", "mixed")
ROLES = ("user", "assistant")
SAME_KIND = {"conclusion": "fact"}  # kinds a reviewer takes for one another (both ways)
START_TS = 1_750_000_000.0  # turns of a session are a minute apart from here
MAX_MISSES = 12  # conversations listed in `misses` without --verbose
DEFAULT_EMBEDDER = "use-m3"

REASONS = ("kind", "evidence", "phrases", "smalltalk")  # why cards were rejected

_MARKUP = re.compile(r"`+|\*\*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")


@dataclass(frozen=True)
class Fact:
    kind: str
    must: tuple[str, ...]
    evidence: tuple[int, ...]  # turn indexes
    card: str = ""  # the card a careful reviewer would write (cards_quality.jsonl)
    topic: str = ""  # and its topic


@dataclass(frozen=True)
class Conversation:
    id: str
    lang: str
    project: str
    turns: tuple[tuple[str, str], ...]  # (role, text)
    facts: tuple[Fact, ...]
    split: str = ""  # dev or check, where the data has halves

    @property
    def smalltalk(self) -> bool:
        return not self.facts


@dataclass
class Review:
    """One conversation's proposed cards as the reviewer judged them."""

    conversation: Conversation
    cards: list[Card]
    accepted: list[str] = field(default_factory=list)  # card ids
    matched: set[int] = field(default_factory=set)  # fact indexes
    rejected: list[tuple[Card, str]] = field(default_factory=list)  # card, why
    duplicates: int = 0  # accepted cards that matched only facts matched before
    untraceable: list[str] = field(default_factory=list)  # card ids


def canon(text: str) -> str:
    """The form summaries, turns and key phrases are compared in: `mnemoweave.text.normalise`
    after dropping inline-code backticks and bold markers (formatting, not content)."""
    return normalise(_MARKUP.sub("", text))


def sentences(text: str) -> list[str]:
    """The sentences of a summary (split after . ! ? ; and their CJK forms, and at line
    breaks), in canonical form, empty ones dropped."""
    return [piece for piece in (canon(part) for part in _SENTENCE_END.split(text)) if piece]


def load(path: str | Path = DATA) -> list[Conversation]:
    """The conversations of a JSONL file, checked: roles, kinds, indexes, languages."""
    conversations = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            where = f"{path}:{number} ({row.get('id')})"
            turns = tuple((turn["role"], turn["text"]) for turn in row["turns"])
            facts = tuple(
                Fact(
                    fact["kind"],
                    tuple(fact["must"]),
                    tuple(fact["evidence"]),
                    fact.get("card", ""),
                    fact.get("topic", ""),
                )
                for fact in row["facts"]
            )
            if row["lang"] not in LANGS:
                raise ValueError(f"{where}: unknown lang {row['lang']!r}")
            if any(role not in ROLES for role, _ in turns):
                raise ValueError(f"{where}: roles must be user or assistant")
            for fact in facts:
                if fact.kind not in MEMORY_KINDS:
                    raise ValueError(f"{where}: unknown kind {fact.kind!r}")
                if not fact.must or not fact.evidence:
                    raise ValueError(f"{where}: a fact needs key phrases and evidence")
                if any(not 0 <= index < len(turns) for index in fact.evidence):
                    raise ValueError(f"{where}: evidence index out of range")
            conversations.append(
                Conversation(
                    row["id"], row["lang"], row["project"], turns, facts, row.get("split", "")
                )
            )
    return conversations


def kinds_agree(card_kind: str, fact_kind: str) -> bool:
    pair = {card_kind, fact_kind}
    return len(pair) == 1 or any(pair == {a, b} for a, b in SAME_KIND.items())


def _checks(card: Card, fact: Fact, turn_ids: Sequence[str]) -> tuple[bool, bool, bool]:
    """(phrases, evidence, kind): which of the three conditions the card meets for the fact."""
    summary = canon(card.summary)
    phrases = all(canon(phrase) in summary for phrase in fact.must)
    evidence = any(turn_ids[index] in card.evidence for index in fact.evidence)
    return phrases, evidence, kinds_agree(card.suggested_kind, fact.kind)


def matches(card: Card, fact: Fact, turn_ids: Sequence[str]) -> bool:
    """Whether a reviewer accepts `card` as-is for `fact`; turn_ids[i] is turn i's id."""
    return all(_checks(card, fact, turn_ids))


def _why(card: Card, conversation: Conversation, turn_ids: Sequence[str]) -> str:
    """The nearest miss: wrong kind beats wrong evidence beats missing phrases."""
    if conversation.smalltalk:
        return "smalltalk"
    checks = [_checks(card, fact, turn_ids) for fact in conversation.facts]
    for (phrases, evidence, _), fact in zip(checks, conversation.facts, strict=True):
        if phrases and evidence:
            return f"kind {card.suggested_kind}, expected {fact.kind}"
    if any(phrases for phrases, _, _ in checks):
        return "evidence"
    return "phrases"


def traceable(card: Card, texts: dict[str, str]) -> bool:
    """Whether every summary sentence is in the text of the card's evidence turns (a turn id
    not in `texts` contributes nothing)."""
    source = "\n".join(canon(texts.get(ref, "")) for ref in card.evidence)
    return all(sentence in source for sentence in sentences(card.summary))


def review(conversation: Conversation, cards: Sequence[Card], turn_ids: Sequence[str]) -> Review:
    """Judge each card against the conversation's facts, in id order."""
    texts = {ref: text for ref, (_, text) in zip(turn_ids, conversation.turns, strict=True)}
    result = Review(conversation, list(cards))
    for card in cards:
        if not traceable(card, texts):
            result.untraceable.append(card.id)
        hits = {
            index for index, fact in enumerate(conversation.facts) if matches(card, fact, turn_ids)
        }
        if not hits:
            result.rejected.append((card, _why(card, conversation, turn_ids)))
            continue
        result.accepted.append(card.id)
        if hits <= result.matched:
            result.duplicates += 1
        result.matched |= hits
    return result


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _totals(reviews: Sequence[Review]) -> dict[str, Any]:
    cards = sum(len(r.cards) for r in reviews)
    accepted = sum(len(r.accepted) for r in reviews)
    facts = sum(len(r.conversation.facts) for r in reviews)
    matched = sum(len(r.matched) for r in reviews)
    return {
        "precision": _ratio(accepted, cards),
        "recall": _ratio(matched, facts),
        "cards": cards,
        "accepted": accepted,
        "facts": facts,
        "matched": matched,
    }


def _misses(reviews: Sequence[Review], verbose: bool) -> list[dict[str, Any]]:
    rows = []
    for r in reviews:
        missed = [
            f"{fact.kind}: {' + '.join(fact.must)}"
            for index, fact in enumerate(r.conversation.facts)
            if index not in r.matched
        ]
        if not missed and not r.rejected:
            continue
        row: dict[str, Any] = {"id": r.conversation.id, "missed": missed}
        if verbose:
            row["rejected"] = [
                {"kind": card.suggested_kind, "why": why, "summary": clip(card.summary, 90)}
                for card, why in r.rejected
            ]
        else:
            row["rejected"] = len(r.rejected)
        rows.append(row)
    return rows if verbose else rows[:MAX_MISSES]


def score(reviews: Sequence[Review], verbose: bool = False) -> dict[str, Any]:
    """Precision, recall, per language and fact kind, small talk, traceability, misses."""
    report = _totals(reviews)
    report["by_lang"] = {
        lang: {"n": len(picked)} | _totals(picked)
        for lang in LANGS
        if (picked := [r for r in reviews if r.conversation.lang == lang])
    }
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in MEMORY_KINDS:
        found = [
            index in r.matched
            for r in reviews
            for index, fact in enumerate(r.conversation.facts)
            if fact.kind == kind
        ]
        if found:
            by_kind[kind] = {"facts": len(found), "recall": _ratio(sum(found), len(found))}
    report["by_kind"] = by_kind
    smalltalk = [r for r in reviews if r.conversation.smalltalk]
    report["smalltalk_cards"] = sum(bool(r.cards) for r in smalltalk)
    report["smalltalk_conversations"] = len(smalltalk)
    report["duplicates"] = sum(r.duplicates for r in reviews)
    reasons = Counter(why.split(" ", 1)[0] for r in reviews for _, why in r.rejected)
    report["rejected"] = {reason: reasons[reason] for reason in REASONS}
    report["untraceable"] = _ratio(sum(len(r.untraceable) for r in reviews), report["cards"])
    report["summary_chars"] = (
        round(sum(len(card.summary) for r in reviews for card in r.cards) / report["cards"], 1)
        if report["cards"]
        else None
    )
    report["misses"] = _misses(reviews, verbose)
    return report


def per_turn_cards(engine: Engine, turn_ids: Sequence[str]) -> list[Card]:
    """The baseline: every stored turn whose kind is not chat, whole, as its own card."""
    cards = []
    for ref in turn_ids:
        turn = engine.get(ref)
        assert isinstance(turn, Turn), ref
        if turn.kind not in (None, "chat"):
            cards.append(Card(f"b_{ref}", turn.text, turn.kind, (ref,), turn.kind_conf or 0.0))
    return cards


@dataclass
class Run:
    reviews: list[Review] = field(default_factory=list)
    baseline: list[Review] = field(default_factory=list)
    distilled: int = 0  # cards the first distill call returned
    rerun_new: int = 0
    distill_ms: list[float] = field(default_factory=list)
    ingest_seconds: float = 0.0
    turn_ids: list[str] = field(default_factory=list)  # the last conversation's


def _ids(cards: Iterable[Any]) -> set[str]:
    return {card.id for card in cards}


def distill_one(conversation: Conversation, embedders: Sequence[Any], run: Run) -> None:
    """Ingest one conversation into a fresh engine, distill it twice, review the cards."""
    with tempfile.TemporaryDirectory(prefix="mnemoweave-distill-") as home:
        engine = Engine(home=Path(home))
        try:
            engine.use_embedder(*embedders)
            started = perf_counter()
            turn_ids = [
                engine.ingest(
                    conversation.id,
                    role,
                    text,
                    host="bench",
                    project=conversation.project,
                    ts=START_TS + 60 * position,
                ).ref
                for position, (role, text) in enumerate(conversation.turns)
            ]
            run.ingest_seconds += perf_counter() - started
            run.turn_ids = turn_ids
            started = perf_counter()
            first = engine.distill(session=conversation.id)
            run.distill_ms.append((perf_counter() - started) * 1000)
            proposed = engine.pending(limit=10_000)
            second = engine.distill(session=conversation.id)
            again = engine.pending(limit=10_000)
            run.distilled += len(first)
            run.rerun_new += len(_ids([*second, *again]) - _ids([*first, *proposed]))
            run.reviews.append(review(conversation, proposed, turn_ids))
            run.baseline.append(review(conversation, per_turn_cards(engine, turn_ids), turn_ids))
        finally:
            engine.close()


def evaluate(
    path: str | Path = DATA,
    embedders: Sequence[Any] = (),
    limit: int | None = None,
    verbose: bool = False,
) -> dict[str, Any]:
    """Distill every conversation of `path` (the first `limit`) and score the cards."""
    if not callable(getattr(Engine, "distill", None)):
        raise SystemExit("this Engine has no distill(): nothing to measure")
    conversations = load(path)[:limit]
    run = Run()
    for number, conversation in enumerate(conversations, 1):
        progress(f"distill {number}/{len(conversations)} {conversation.id}")
        distill_one(conversation, embedders, run)
    report = score(run.reviews, verbose)
    report["rerun_new"] = run.rerun_new
    report["distilled"] = run.distilled
    report["latency_ms"] = percentiles(run.distill_ms)
    report["seconds"] = {
        "ingest": round(run.ingest_seconds, 2),
        "distill": round(sum(run.distill_ms) / 1000, 2),
    }
    report["n"] = len(conversations)
    baseline = score(run.baseline)
    baseline.pop("misses")
    report["baseline"] = baseline
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="conversations (.jsonl)")
    parser.add_argument(
        "--verbose", action="store_true", help="every miss, with the rejected cards and why"
    )


def run(
    args: argparse.Namespace | None = None,
    *,
    models_dir: Path | None = None,
    embedder: str | None = None,
) -> dict[str, Any]:
    """`bench/run.py distill [--data FILE] [--verbose]`, or a direct call on the dev set.

    A direct call names the model(s) (`embedder`, "main[,second]" or "none"; default
    use-m3) and where they are built (`models_dir`; default the shared models cache),
    and runs in a temporary MNEMOWEAVE_HOME as bench/run.py does.
    """
    if args is not None:
        embedders = load_embedders(args.embedder, args.models)
        report = evaluate(args.data, embedders, args.limit, args.verbose)
        if not (args.json or args.verbose):
            del report["misses"]  # a list: unreadable as a table row
        return report
    from run import MODELS, temporary_home

    embedders = load_embedders(embedder or DEFAULT_EMBEDDER, models_dir or MODELS)
    with temporary_home():
        return evaluate(DATA, embedders)
