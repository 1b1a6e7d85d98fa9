"""Cards quality: would a careful reviewer accept the proposed cards as written?

Data: `data/cards_quality.jsonl`, distill.py's format (one scripted coding conversation a
line, half of them Chinese, each in a `split`: dev or check), each fact with the card a
careful reviewer would write (`card`) and its `topic`. Each conversation is distilled in a
fresh engine as distill.py does, and its proposals are judged:
- precision and recall against the facts (distill.py's reviewer: the fact's key phrases,
  its kind and its evidence), per language;
- `as_written`: the share of proposals a reviewer keeps without an edit: accepted for a
  fact, and carrying no filler phrase (FILLERS below: discourse, reminders, greetings,
  thanks, in both languages), holding one statement (it is accepted for exactly one fact),
  naming its subject in its topic (the topic holds one of the fact's key phrases or a word
  of the reference topic), and keeping every number and identifier of the reference card
  (each found in the summary, a longer code span holding it counts);
- `starts_with_filler`: proposals whose text opens with a filler phrase;
- `failed`: how many accepted proposals failed each of the four checks.
`--half dev|check` keeps one half (default: both).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill import Review, Run, canon, distill_one, load, matches, score
from harness import load_embedders, progress
from mnemoweave.model import Card
from mnemoweave.text import content_words

DATA = Path(__file__).resolve().parent / "data" / "cards_quality.jsonl"
CHECKS = ("filler", "statements", "topic", "particulars")

# Filler a card must not carry: anywhere (reminders, greetings, thanks), or opening it.
FILLERS = re.compile(
    r"\b(?:by the way|btw|fyi|don'?t forget(?: this| that)?|remember (?:this|that)|pitfall we hit"
    r"|we hit today|thanks|thank you|please|hi there|hello)\b"
    r"|记住|别忘了|顺便说一下|今天踩了个坑|谢谢|麻烦你",
    re.IGNORECASE,
)
OPENERS = re.compile(
    r"^\s*(?:(?:also|oh and|and|so|ok(?:ay)?|well|anyway|by the way|btw|fyi|remember"
    r"|don'?t forget|note|pitfall)\b[,:]?"
    r"|(?:另外|对了|还有|顺便|记住|别忘了|踩坑|好的|那个)[，,：:]?)",
    re.IGNORECASE,
)
# Numbers and identifiers a card must keep verbatim: code spans, names with _ . / - or
# digits, versions, numbers.
PARTICULARS = re.compile(
    r"`[^`]+`|[A-Za-z_][\w.-]*[_./-][\w./-]*\w|\b[A-Za-z]+\d[\w.]*\b|v?\d+(?:[.:]\d+)*"
)


def _particulars(text: str) -> set[str]:
    return {canon(found.strip("`")) for found in PARTICULARS.findall(text)}


def keeps_particulars(summary: str, reference: str) -> bool:
    """Whether every number and identifier of the reference card is in the summary, not as
    a piece of a longer name or number ("5" is not kept by "500"; a longer code span that
    holds it keeps it)."""
    said = canon(summary)
    return all(re.search(_bounded(found), said) for found in _particulars(reference))


def _bounded(particular: str) -> str:
    """A pattern finding `particular` with no Latin letter or digit run on at an end that is
    one itself (the summary's canonical form drops spaces beside punctuation and CJK)."""
    before = "(?<![A-Za-z0-9_])(?<!\\d\\.)" if re.match(r"[A-Za-z0-9_]", particular) else ""
    after = "(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", particular) else ""
    return before + re.escape(particular) + after


def names_subject(card: Card, phrases: Sequence[str], topic: str) -> bool:
    """Whether a card's topic holds one of the fact's key phrases or a word of its topic."""
    given = canon(card.topic)
    if not given:
        return False
    wanted = {canon(word) for word in content_words(topic)} | {canon(p) for p in phrases}
    return any(word and word in given for word in wanted)


def judge(review: Review, turn_ids: Sequence[str]) -> list[tuple[Card, list[str]]]:
    """Each proposal with the checks it fails ("rejected" when no fact accepts it)."""
    judged = []
    facts = review.conversation.facts
    for card in review.cards:
        hits = [fact for fact in facts if matches(card, fact, turn_ids)]
        if not hits:
            judged.append((card, ["rejected"]))
            continue
        fact = hits[0]
        failed = []
        if FILLERS.search(card.summary) or OPENERS.search(card.summary):
            failed.append("filler")
        if len(hits) > 1:
            failed.append("statements")
        if not names_subject(card, fact.must, fact.topic):
            failed.append("topic")
        if not keeps_particulars(card.summary, fact.card):
            failed.append("particulars")
        judged.append((card, failed))
    return judged


def report(reviews: Sequence[Review], ids: Sequence[Sequence[str]]) -> dict[str, Any]:
    result = score(reviews)
    judged = [
        pair
        for review, turn_ids in zip(reviews, ids, strict=True)
        for pair in judge(review, turn_ids)
    ]
    proposals = len(judged)
    kept = sum(not failed for _, failed in judged)
    counts = Counter(check for _, failed in judged for check in failed)
    result["as_written"] = round(kept / proposals, 3) if proposals else None
    result["starts_with_filler"] = sum(bool(OPENERS.search(card.summary)) for card, _ in judged)
    result["failed"] = {check: counts[check] for check in (*CHECKS, "rejected")}
    result["examples"] = [
        {"summary": card.summary, "topic": card.topic, "failed": failed}
        for card, failed in judged
        if failed and failed != ["rejected"]
    ][:12]
    return result


def evaluate(path: Path, embedders: Sequence[Any], half: str, limit: int | None) -> dict[str, Any]:
    conversations = [c for c in load(path) if half == "all" or c.split == half][:limit]
    run, ids = Run(), []
    for number, conversation in enumerate(conversations, 1):
        progress(f"cards-quality {number}/{len(conversations)} {conversation.id}")
        distill_one(conversation, embedders, run)
        ids.append(run.turn_ids)
    result = report(run.reviews, ids)
    result["by_lang"] = {
        lang: {
            key: value
            for key, value in report(
                [r for r in run.reviews if r.conversation.lang == lang],
                [i for r, i in zip(run.reviews, ids, strict=True) if r.conversation.lang == lang],
            ).items()
            if key in ("precision", "recall", "as_written", "starts_with_filler")
        }
        for lang in ("en", "zh")
    }
    result.pop("misses", None)
    result["n"] = len(conversations)
    result["half"] = half
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=DATA, help="labelled conversations")
    parser.add_argument("--half", choices=("dev", "check", "all"), default="all")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """`bench/run.py cards-quality [--data FILE] [--half dev|check]`."""
    embedders = load_embedders(args.embedder, args.models)
    return evaluate(args.data, embedders, args.half, args.limit)
