"""Engine and baseline stores answer with dataset keys; the dev card set is well formed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from datasets import Doc, load_cards
from harness import BaselineStore, Clock, EngineStore, search_options
from mnemoweave.embed.fake import HashEmbedder
from mnemoweave.text import language

DATA = Path(__file__).resolve().parents[1] / "data"


def test_engine_store_maps_merged_memories_to_every_key(mnemoweave_home: Path) -> None:
    mnemoweave_home.mkdir()
    docs = [
        Doc("k1", "Use tabs in the Makefile.", project="p", kind="pref"),
        Doc("k2", "use  tabs in the makefile", project="p", kind="pref"),
        Doc("k3", "Deploy with fly deploy.", project="q", kind="skill"),
    ]
    clock = Clock()
    store = EngineStore(docs, clock, "memories", search_options("default"), [HashEmbedder()])
    try:
        assert store.search("tabs makefile", 5, project="p") == ["k1", "k2"]
        assert store.search("deploy", 5, project="p") == []
        assert len(clock.search_ms) == 2
    finally:
        store.close()


def test_engine_store_keeps_repeated_turns_apart(mnemoweave_home: Path) -> None:
    mnemoweave_home.mkdir()
    docs = [Doc(f"D1:{i}", "Anna: hello there", session="s1", ts=1.0e9) for i in (1, 2)]
    store = EngineStore(docs, Clock(), "turns", search_options("default"), [])
    try:
        assert sorted(store.search("hello", 5)) == ["D1:1", "D1:2"]
    finally:
        store.close()


def test_baseline_store_scopes_to_the_project_plus_global() -> None:
    docs = [
        Doc("a", "release with cargo dist", project="tern"),
        Doc("b", "release through argo cd", project="queqiao"),
        Doc("c", "release notes in english", project=""),
    ]
    store = BaselineStore(docs, Clock())
    assert set(store.search("release", 5, project="tern")) == {"a", "c"}
    assert set(store.search("release", 5)) == {"a", "b", "c"}


def test_modes_pass_through_and_recalls_are_not_counted() -> None:
    assert search_options("lexical") == {"touch": False, "mode": "lexical"}
    assert search_options("default") == {"touch": False}


def test_dev_cards_are_well_formed() -> None:
    cards = load_cards(DATA / "dev_memories.jsonl", DATA / "dev_queries.jsonl")
    languages = Counter("zh" if language(doc.text) != "en" else "en" for doc in cards.docs)
    assert len(cards.docs) >= 60
    assert abs(languages["zh"] - languages["en"]) <= 2
    assert len({doc.project for doc in cards.docs} - {""}) >= 3
    assert len(cards.queries) >= 80
    types = Counter(query.group for query in cards.queries)
    assert set(types) == {"lexical", "paraphrase", "crosslingual", "scope", "none"}
    by_key = {doc.key: doc for doc in cards.docs}
    for query in cards.queries:
        assert (query.group == "none") == (not query.relevant), query.id
        for key in query.relevant:
            assert by_key[key].project in (query.project, ""), query.id
        if query.group == "crosslingual":
            query_zh = language(query.text) != "en"
            assert all((language(by_key[k].text) != "en") != query_zh for k in query.relevant)
