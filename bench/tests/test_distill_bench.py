"""The distillation benchmark: its reviewer on hand-made cards, and its dev conversations."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import distill
from distill import Conversation, Fact, canon, load, review, score, sentences, traceable
from mnemoweave import Engine
from mnemoweave.model import Card
from mnemoweave.text import cjk_count

TURNS = (
    ("user", "The upload hangs forever on slow networks."),
    ("assistant", "The cause: httpx has no timeout by default. I set `timeout=10` on the client."),
    ("user", "Good. From now on I prefer explicit timeouts on every HTTP client."),
    ("assistant", "Noted!"),
)
FACTS = (
    Fact("conclusion", ("httpx", "no timeout"), (0, 1)),
    Fact("pref", ("explicit timeouts",), (2,)),
)
IDS = ["t_1", "t_2", "t_3", "t_4"]


def conversation(facts: tuple[Fact, ...] = FACTS, lang: str = "en") -> Conversation:
    return Conversation("c", lang, "uploader", TURNS, facts)


def card(n: int, summary: str, kind: str, *evidence: str) -> Card:
    return Card(f"c_{n}", summary, kind, evidence, 0.8)


CAUSE = "The cause: httpx has no timeout by default."
PREF = "From now on I prefer explicit timeouts on every HTTP client."


def test_a_matching_card_is_accepted() -> None:
    result = review(conversation(), [card(1, CAUSE, "conclusion", "t_2")], IDS)
    assert result.accepted == ["c_1"] and result.matched == {0}
    assert score([result])["precision"] == 1.0
    assert score([result])["recall"] == 0.5


def test_case_width_spacing_and_backticks_do_not_matter() -> None:
    summary = "the cause：HTTPX  has no timeout by default. I set timeout=10 on the client"
    result = review(conversation(), [card(1, summary, "conclusion", "t_2")], IDS)
    assert result.accepted == ["c_1"] and not result.untraceable


def test_conclusion_and_fact_are_one_kind_and_nothing_else_is() -> None:
    cards = [
        card(1, CAUSE, "fact", "t_2"),
        card(2, CAUSE, "mission", "t_2"),
        card(3, PREF, "conclusion", "t_3"),
    ]
    result = review(conversation(), cards, IDS)
    assert result.accepted == ["c_1"]
    assert [why for _, why in result.rejected] == [
        "kind mission, expected conclusion",
        "kind conclusion, expected pref",
    ]


def test_a_missing_phrase_or_foreign_evidence_is_rejected() -> None:
    cards = [
        card(1, "I set `timeout=10` on the client.", "conclusion", "t_2"),
        card(2, CAUSE, "conclusion", "t_3"),
    ]
    result = review(conversation(), cards, IDS)
    assert not result.accepted and not result.matched
    assert [why for _, why in result.rejected] == ["phrases", "evidence"]


def test_recall_counts_each_fact_once() -> None:
    cards = [
        card(1, CAUSE, "conclusion", "t_2"),
        card(2, "The upload hangs forever on slow networks. " + CAUSE, "conclusion", "t_1", "t_2"),
        card(3, PREF, "pref", "t_3"),
    ]
    report = score([review(conversation(), cards, IDS)])
    assert (report["accepted"], report["cards"], report["precision"]) == (3, 3, 1.0)
    assert (report["matched"], report["facts"], report["recall"]) == (2, 2, 1.0)
    assert report["duplicates"] == 1
    assert report["by_kind"]["conclusion"] == {"facts": 1, "recall": 1.0}


def test_one_card_may_carry_two_facts() -> None:
    both = card(1, f"{CAUSE} {PREF}", "conclusion", "t_2", "t_3")
    facts = (FACTS[0], Fact("conclusion", ("explicit timeouts",), (2,)))
    result = review(conversation(facts), [both], IDS)
    assert result.matched == {0, 1} and result.duplicates == 0


def test_summaries_must_be_copied_from_their_evidence() -> None:
    texts = dict(zip(IDS, (text for _, text in TURNS), strict=True))
    assert traceable(card(1, f"{CAUSE}\n{PREF}", "conclusion", "t_2", "t_3"), texts)
    assert traceable(card(2, "httpx has no timeout by default", "fact", "t_2"), texts)
    assert not traceable(card(3, f"{CAUSE} {PREF}", "conclusion", "t_2"), texts)
    assert not traceable(card(4, "httpx needs a timeout.", "conclusion", "t_2"), texts)
    assert not traceable(card(5, CAUSE, "conclusion", "t_99"), texts)
    assert sentences("先查状态再更新。两个请求同时读到就都过去了！ok") == [
        "先查状态再更新",
        "两个请求同时读到就都过去了",
        "ok",
    ]


def test_small_talk_and_languages_are_reported_apart() -> None:
    chat = Conversation("s", "zh", "p", (("user", "在吗"), ("assistant", "在的")), ())
    reviews = [
        review(chat, [card(1, "在吗", "mission", "t_1")], ["t_1", "t_2"]),
        review(conversation(), [card(2, CAUSE, "conclusion", "t_2")], IDS),
    ]
    report = score(reviews)
    assert report["smalltalk_cards"] == 1 and report["smalltalk_conversations"] == 1
    assert report["untraceable"] == 0.0
    assert report["by_lang"]["zh"]["precision"] == 0.0
    assert report["by_lang"]["en"] == {
        "n": 1,
        "precision": 1.0,
        "recall": 0.5,
        "cards": 1,
        "accepted": 1,
        "facts": 2,
        "matched": 1,
    }
    assert report["misses"][0] == {"id": "s", "missed": [], "rejected": 1}


def test_the_dev_conversations_are_well_formed() -> None:
    conversations = load()
    raw = [json.loads(line) for line in distill.DATA.read_text(encoding="utf-8").splitlines()]
    assert [c.id for c in conversations] == [row["id"] for row in raw]
    assert len({c.id for c in conversations}) == len(conversations) >= 20
    langs = Counter(c.lang for c in conversations)
    assert abs(langs["en"] - (langs["zh"] + langs["mixed"])) <= 2 and langs["mixed"] >= 2
    assert sum(c.smalltalk for c in conversations) >= 3
    kinds = Counter(fact.kind for c in conversations for fact in c.facts)
    assert {"pref", "pers", "mission", "conclusion", "skill"} <= set(kinds)
    for c in conversations:
        assert 4 <= len(c.turns) <= 12, c.id
        assert [role for role, _ in c.turns] == ["user", "assistant"] * (len(c.turns) // 2), c.id
        for fact in c.facts:
            for phrase in fact.must:
                assert phrase == phrase.lower(), (c.id, phrase)
                words = re.findall(r"[^\s\u3400-\u9fff]+", phrase)
                assert len(words) <= 3 and cjk_count(phrase) <= 6, (c.id, phrase)


def test_every_key_phrase_is_in_one_of_its_evidence_turns() -> None:
    for c in load():
        for fact in c.facts:
            texts = [canon(c.turns[index][1]) for index in fact.evidence]
            for phrase in fact.must:
                assert any(canon(phrase) in text for text in texts), (c.id, phrase)


def test_the_harness_ingests_distills_twice_and_reviews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def fake_distill(engine: Engine, session: str | None = None, **_: object) -> list[Card]:
        calls.append(session)
        return []

    monkeypatch.setattr(Engine, "distill", fake_distill, raising=False)
    data = tmp_path / "two.jsonl"
    lines = distill.DATA.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    report = distill.evaluate(data)
    assert calls == ["en-01", "en-01", "en-02", "en-02"]
    assert report["n"] == 2 and report["facts"] == 3 and report["rerun_new"] == 0
    assert report["distilled"] == 0 and report["untraceable"] in (0.0, None)
    assert report["baseline"]["cards"] >= 1 and report["baseline"]["untraceable"] == 0.0
