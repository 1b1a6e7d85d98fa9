"""The cards-quality reviewer: which proposals a careful reviewer keeps as written."""

from __future__ import annotations

from cards_quality import DATA, judge, keeps_particulars
from distill import Conversation, Fact, Review, load
from mnemoweave.model import Card

TURNS = (("user", "Also, never log tokens; use `structlog` with a 5 s flush."), ("assistant", "ok"))
FACTS = (
    Fact("pref", ("log tokens",), (0,), "Never log tokens.", "logging tokens"),
    Fact("pref", ("structlog", "5 s"), (0,), "Use `structlog` with a 5 s flush.", "structlog"),
)
IDS = ("t_1", "t_2")


def _card(summary: str, topic: str) -> Card:
    return Card("c_1", summary, "pref", ("t_1",), 0.9, topic=topic)


def _judged(summary: str, topic: str) -> list[str]:
    review = Review(Conversation("x", "en", "p", TURNS, FACTS), [_card(summary, topic)])
    ((_, failed),) = judge(review, IDS)
    return failed


def test_a_clean_card_passes_and_each_fault_is_named() -> None:
    assert _judged("Never log tokens.", "tokens in logs") == []
    assert _judged("Also, never log tokens.", "tokens in logs") == ["filler"]
    assert _judged("Never log tokens, don't forget this.", "tokens") == ["filler"]
    assert _judged("Never log tokens.", "never also") == ["topic"]
    assert _judged("Use `structlog` with a flush.", "structlog") == ["rejected"]  # no "5 s"
    both = "Never log tokens; use `structlog` with a 5 s flush."
    assert _judged(both, "tokens, structlog") == ["statements"]
    fact = Fact("pref", ("structlog",), (0,), "Use `structlog` with a 5 s flush.", "structlog")
    review = Review(
        Conversation("x", "en", "p", TURNS, (fact,)), [_card("Use structlog.", "structlog")]
    )
    assert judge(review, IDS)[0][1] == ["particulars"]


def test_the_labelled_set_is_balanced_and_split() -> None:
    conversations = load(DATA)
    turns = sum(len(c.turns) for c in conversations)
    langs = {lang: [c for c in conversations if c.lang == lang] for lang in ("en", "zh")}
    assert turns >= 150 and len(langs["en"]) == len(langs["zh"])
    for found in langs.values():
        assert {c.split for c in found} == {"dev", "check"}
    assert all(f.card and f.topic for c in conversations for f in c.facts)


def test_a_card_keeps_a_particular_only_whole():
    reference = "Set `graceful_timeout` to 30 s; run `prisma migrate resolve --rolled-back`."
    assert keeps_particulars(
        "`prisma migrate resolve --rolled-back 2024_x` and `graceful_timeout` 30 秒", reference
    )
    assert not keeps_particulars("`graceful_timeout` 300 s, `prisma migrate resolve`", reference)
