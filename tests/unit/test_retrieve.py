"""Hybrid retrieval with fake embedders: fusion, language gating, decay, dedup, index drift."""

from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest

from mnemoweave import Engine
from mnemoweave.recall.retrieve import decay_factor, strength

# A fake bilingual model: words of both languages map onto shared concept dimensions, so an
# English query lands near a Chinese memory about the same thing, as a real model does.
CONCEPTS = {
    "comment": 0,
    "comments": 0,
    "注释": 0,
    "english": 1,
    "英文": 1,
    "timeout": 2,
    "timeouts": 2,
    "超时": 2,
    "upload": 3,
    "uploads": 3,
    "上传": 3,
    "tabs": 4,
    "makefile": 5,
    "makefiles": 5,
    "deploy": 6,
    "部署": 6,
    "code": 7,
    "代码": 7,
    "indent": 4,
    "spaces": 8,
}


class ConceptEmbedder:
    name = "concepts"
    dim = 16

    def embed(self, texts, *, query=False):
        from mnemoweave.text import tokens

        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for token in tokens(text):
                if token in CONCEPTS:
                    out[i, CONCEPTS[token]] += 1
            out[i, 15] += 0.05  # every text is a little alike, never a zero vector
            out[i] /= np.linalg.norm(out[i])
        return out


@pytest.fixture
def hybrid(mnemoweave_home):
    from dataclasses import replace

    with Engine() as engine:
        engine.use_embedder(ConceptEmbedder())
        # one bilingual model carries both languages (the defaults expect a second model)
        engine.config = replace(engine.config, weight_dense=0.5, cross_dense=1.5)
        yield engine


def ids(hits):
    return [h.id for h in hits]


def test_crosslingual_query_finds_the_chinese_memory(hybrid):
    # stored in bulk: scored as they are, no clash between them ranks one as a correction
    zh, _, _ = (
        written.id
        for written in hybrid.remember_many(
            [
                {"text": "以后代码注释都用英文", "kind": "pref"},
                {"text": "Code review comments go in the pull request, not in chat"},
                {"text": "Upload retries use exponential backoff"},
            ]
        )
    )
    assert ids(hybrid.search("english code comments", mode="dense"))[0] == zh
    hits = hybrid.search("english code comments", k=3)
    assert hits[0].id == zh, [(h.id, h.extra["explain"]) for h in hits]
    explain = hits[0].extra["explain"]
    assert explain["mode"] == "hybrid" and explain["dense"]["concepts"]["rank"] == 1
    assert explain["same_language"] == 0.0  # gated: scored by the cross-language weights


def test_lexical_channel_still_wins_on_rare_words(hybrid):
    rare = hybrid.remember("The flaky job is quarantined under label zorblax-42").id
    hybrid.remember("Timeouts on uploads were fixed by setting httpx timeout")
    hits = hybrid.search("zorblax-42")
    assert hits[0].id == rare and hits[0].extra["explain"]["lexical"]["rank"] == 1


def test_lexical_only_without_a_model(engine):
    assert engine.embedder is None
    assert engine.retrieval_mode().startswith("lexical-only")
    ref = engine.remember("以后代码注释都用英文").id
    assert ids(engine.search("注释")) == [ref]
    assert ids(engine.search("注释", mode="dense")) == [ref]  # falls back, never crashes
    assert engine.search("注释")[0].extra["explain"]["mode"] == "lexical"


def test_recall_is_counted_and_slows_decay(hybrid):
    ref = hybrid.remember("Deploy with make deploy").id
    hybrid.search("deploy")
    hybrid.search("deploy", touch=False)
    memory = hybrid.get(ref)
    assert memory.access_count == 1 and memory.last_access is not None
    row = dict(hybrid.db.execute("SELECT * FROM memories WHERE id = ?", (int(ref[2:]),)).fetchone())
    config, day = hybrid.config, 86400
    fresh = dict(row, last_access=None, access_count=0)
    aged = dict(fresh, updated=row["updated"] - 84 * day)  # a global memory: 12 weeks
    recalled = dict(aged, access_count=7)
    assert decay_factor(fresh, config, row["updated"]) == pytest.approx(1.0)
    # one half-life without recall: halfway between the floor and full strength
    assert decay_factor(aged, config, row["updated"]) == pytest.approx(0.75)
    # recalled often: stability 84 * (1 + log2(8)) = 336 days, so it decays far less
    assert decay_factor(recalled, config, row["updated"]) > 0.9


def test_decay_has_a_clock_per_scope_and_spares_preferences_and_rules(hybrid):
    now, day = 1.8e9, 86400
    base = {"kind": "fact", "importance": 3, "access_count": 0, "last_access": None}
    year_old = base | {"updated": now - 364 * day}
    project, global_ = year_old | {"project": "/repo"}, year_old | {"project": ""}
    assert strength(project, hybrid.config, now) == pytest.approx(0.5)  # 52 weeks
    assert strength(global_, hybrid.config, now) == pytest.approx(0.5 ** (364 / 84))
    assert strength(global_ | {"kind": "pref"}, hybrid.config, now) == 1.0
    assert strength(project | {"importance": 5}, hybrid.config, now) == 1.0
    quick = replace(hybrid.config, half_life_project_days=7.0)
    assert strength(project | {"updated": now - 7 * day}, quick, now) == pytest.approx(0.5)


def test_importance_and_weight_order_equal_matches(hybrid):
    low, high = (
        written.id
        for written in hybrid.remember_many(  # in bulk: no clash ranks one as a correction
            [
                {"text": "deploy notes alpha", "kind": "fact", "importance": 1},
                {"text": "deploy notes beta", "kind": "conclusion", "importance": 5},
            ]
        )
    )
    assert ids(hybrid.search("deploy notes", k=2)) == [high, low]
    hybrid.db.execute("UPDATE memories SET weight = 0.1 WHERE id = ?", (int(high[2:]),))
    assert ids(hybrid.search("deploy notes", k=2)) == [low, high]


def test_near_duplicates_merge_or_skip(hybrid, monkeypatch):
    first = hybrid.remember("Use tabs in Makefiles", kind="pref").id
    # different words, same concepts for the fake model: cosine 1.0 >= threshold
    merged = hybrid.remember("makefiles need tabs!!", kind="pref", tags=["make"])
    assert (merged.action, merged.id) == ("merged", first)
    assert hybrid.get(first).tags == ("make",)
    # another kind or project is not a duplicate
    assert hybrid.remember("makefiles tabs", kind="fact").action == "new"
    assert hybrid.remember("tabs makefiles", kind="pref", project="other").action == "new"
    from dataclasses import replace

    hybrid.config = replace(hybrid.config, dedup_action="skip")
    skipped = hybrid.remember("tabs are required in the makefiles", kind="pref")
    assert (skipped.action, skipped.id) == ("duplicate", first)
    assert hybrid.db.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
    # the same words in another order usually say the opposite: never merged
    assert hybrid.remember("Makefiles in tabs use", kind="pref").action == "new"


def test_near_duplicates_within_one_import(hybrid, tmp_path):
    (tmp_path / "m.md").write_text("## a\nUse tabs in Makefiles\n\n## b\nMakefiles need tabs\n")
    counts = hybrid.import_path(tmp_path / "m.md", split=True)
    assert counts["memories"] == 1 and counts["merged"] == 1


def test_index_drift_is_reported_and_repaired(hybrid):
    hybrid.remember("Deploy with make deploy")
    hybrid.ingest("s", "user", "upload timeouts again")
    checks = {c.name: c for c in hybrid.doctor()}
    assert (
        checks["vector index (concepts, memories)"].ok
        and checks["vector index (concepts, turns)"].ok
    )
    hybrid.index.delete("turns", ["t_1"])
    hybrid.index.add("memories", ["m_99"], np.ones((1, 16), np.float32) / 4, [""])
    checks = {c.name: c for c in hybrid.doctor()}
    assert (
        not checks["vector index (concepts, turns)"].ok
        and not checks["vector index (concepts, memories)"].ok
    )
    assert "1 rows not embedded" in checks["vector index (concepts, turns)"].detail
    assert all(c.ok for c in hybrid.doctor(repair=True))
    assert ids(hybrid.search("upload timeouts", source="turns", mode="dense")) == ["t_1"]


def test_a_repair_goes_a_batch_at_a_time_and_mends_any_gap(hybrid):
    from mnemoweave.upkeep.indexing import drift, repair, repair_steps

    for n in range(5):
        hybrid.ingest("s", "user", f"upload timeouts, attempt {n}")
    hybrid.remember("Deploy with make deploy")
    hybrid.index.delete("turns", ["t_1", "t_2", "t_3", "t_4", "t_5"])
    hybrid.index.delete("memories", ["m_1"])
    hybrid.index.add("memories", ["m_99"], np.ones((1, 16), np.float32) / 4, [""])
    steps = repair_steps(hybrid, size=2)
    assert next(steps) == "vector index (concepts, memories): embedded 1, dropped 1"
    assert next(steps) == ""  # turns: the first two
    assert drift(hybrid)[("concepts", "turns")] == (3, 0)
    hybrid.purge("t_4")  # between two steps the store is the callers' own
    assert list(steps) == ["", "vector index (concepts, turns): embedded 4, dropped 0"]
    assert drift(hybrid) == {("concepts", "memories"): (0, 0), ("concepts", "turns"): (0, 0)}
    assert repair(hybrid) == []


def test_purge_removes_the_vector_and_reindex_rebuilds(hybrid):
    a = hybrid.remember("Deploy with make deploy").id
    b = hybrid.remember("Upload timeout is ten seconds").id
    hybrid.purge(a)
    assert set(hybrid.index.ids("memories")) == {b}
    hybrid.index.clear("memories")
    assert hybrid.index.ids("memories") == {}
    assert hybrid.reindex() == {"graphed": 1, "memories": 1, "turns": 0}
    assert set(hybrid.index.ids("memories")) == {b}


def test_trashed_memories_never_surface_in_any_mode(hybrid):
    ref = hybrid.remember("Deploy with make deploy").id
    hybrid.forget(ref)
    for mode in ("hybrid", "lexical", "dense"):
        assert hybrid.search("deploy", mode=mode) == []


def test_project_scope_in_the_dense_channel(hybrid):
    mine = hybrid.remember("upload timeout is 10s", project="up").id
    glob = hybrid.remember("timeouts belong in config").id
    hybrid.remember("upload timeout is 99s", project="other")
    assert set(ids(hybrid.search("upload timeout", project="up", mode="dense"))) == {mine, glob}


def test_a_second_model_carries_the_crosslingual_candidates(mnemoweave_home):
    from dataclasses import replace

    from mnemoweave.embed.fake import HashEmbedder

    with Engine() as engine:
        # main model: word hashes, blind across languages; second: the bilingual fake
        engine.use_embedder(HashEmbedder(dim=64), ConceptEmbedder())
        engine.config = replace(engine.config, weight_second=0.0, cross_dense=0.0, cross_second=1.0)
        zh = engine.remember("以后代码注释都用英文", kind="pref").id
        en = engine.remember("Upload retries use exponential backoff", kind="fact").id
        assert engine.retrieval_mode() == "hybrid (bm25 + hash-fake + concepts)"
        hits = engine.search("english code comments", k=2)
        assert hits[0].id == zh
        explain = hits[0].extra["explain"]
        assert explain["concepts_norm"] > 0 and explain["same_language"] == 0.0
        assert engine.search("upload retries backoff")[0].id == en
        assert {c.name for c in engine.channels} == {"hash-fake", "concepts"}
        assert all(set(c.index.ids("memories")) == {zh, en} for c in engine.channels)
        assert all(c.ok for c in engine.doctor())


def test_a_card_that_updates_a_memory_is_held_until_it_replaces_it(hybrid):
    old = hybrid.remember("Use tabs in Makefiles", kind="pref").id
    hybrid.ingest("s1", "user", "From now on, indent makefiles with spaces, not tabs.")
    hybrid.distill()
    (card,) = [c for c in hybrid.pending() if c.suggested_kind == "pref"]
    held = hybrid.review(card.id, "accept")
    assert (held.action, held.id) == ("held", card.id) and old in held.reason
    assert f"mnemoweave review {card.id} accept --replaces {old}" in held.reason
    assert hybrid.get(card.id).conflicts == (old,) and hybrid.get(card.id).status == "pending"
    assert hybrid.get(old).status == "active" and hybrid.status()["counts"]["memories"] == 1
    accepted = hybrid.review(card.id, "accept", replaces=old)
    retired, new = hybrid.get(old), hybrid.get(accepted.id)
    assert (retired.status, retired.superseded_by, new.supersedes) == (
        "superseded",
        accepted.id,
        old,
    )
    assert retired.body == "Use tabs in Makefiles"  # kept for audit, never deleted
    assert [h.id for h in hybrid.search("tabs makefile")] == [accepted.id]
    assert f"({old}" not in hybrid.weave("makefile tabs").text


def test_hygiene_reports_and_changes_nothing(hybrid):

    a = hybrid.remember("Use tabs in Makefiles", kind="pref").id
    hybrid.config = replace_config(hybrid.config, dedup_action="skip", dedup_threshold=1.01)
    b = hybrid.remember("makefiles need tabs", kind="pref").id  # stored: threshold above 1
    old = hybrid.remember("trivia about the deploy", kind="fact", importance=1).id
    hybrid.db.execute(
        "UPDATE memories SET updated = updated - 400 * 86400 WHERE id = ?", (int(old[2:]),)
    )
    hybrid.index.delete("memories", [old])
    before = hybrid.db.execute("SELECT count(*), sum(weight) FROM memories").fetchone()
    hybrid.config = replace_config(hybrid.config, dedup_threshold=0.9)
    found = hybrid.hygiene()
    assert [(p["a"], p["b"]) for p in found["near_duplicates"]] == [(a, b)]
    assert [s["id"] for s in found["stale"]] == [old]
    assert found["index"]["concepts.memories"] == {"not_indexed": 1, "stale_entries": 0}
    after = hybrid.db.execute("SELECT count(*), sum(weight) FROM memories").fetchone()
    assert tuple(before) == tuple(after) and set(hybrid.index.ids("memories")) == {a, b}


def replace_config(config, **changes):
    from dataclasses import replace

    return replace(config, **changes)


def test_a_lexical_search_loads_no_model(mnemoweave_home, monkeypatch):
    """`search --mode lexical` answers without loading an embedding model (a cold CLI call
    would otherwise spend most of its time on it)."""
    import mnemoweave.engine

    with Engine() as engine:
        ref = engine.remember("Uploads use httpx with a 10 s timeout").id

    def no_model(*args, **kwargs):
        raise AssertionError("a lexical search loaded the models")

    monkeypatch.setattr(mnemoweave.engine, "configured_channels", no_model)
    with Engine() as engine:
        assert ids(engine.search("upload timeout", mode="lexical")) == [ref]
        with pytest.raises(AssertionError, match="loaded the models"):
            engine.search("upload timeout")


# --- the vector index: one collection per project -------------------------------------------


def _unit(*hot):
    vector = np.full(16, 0.05, np.float32)
    vector[list(hot)] = 1.0
    return vector / np.linalg.norm(vector)


def test_a_scoped_query_reads_only_its_projects_collections(tmp_path):
    from mnemoweave.store.vectors import VectorIndex

    index = VectorIndex(tmp_path / "chroma", "concepts")
    vectors = np.stack([_unit(1), _unit(1, 2), _unit(1, 3)])
    index.add("memories", ["m_1", "m_2", "m_3"], vectors, ["/src/a", "/src/b", ""])
    assert [ref for ref, _ in index.query("memories", _unit(1), 10, ["/src/a", ""])] == [
        "m_1",
        "m_3",
    ]
    assert {ref for ref, _ in index.query("memories", _unit(1), 10)} == {"m_1", "m_2", "m_3"}
    assert index.query("memories", _unit(1), 10, ["/src/none"]) == []
    assert set(index.vectors("memories", ["m_1", "m_2"], ["/src/b"])) == {"m_2"}
    assert index.ids("memories") == {"m_1": "/src/a", "m_2": "/src/b", "m_3": ""}
    index.delete("memories", ["m_2"])
    again = VectorIndex(tmp_path / "chroma", "concepts")  # the collections are found again
    assert again.ids("memories") == {"m_1": "/src/a", "m_3": ""}


def test_a_small_collection_is_searched_exactly_in_memory_and_sees_each_write(
    tmp_path, monkeypatch
):
    from mnemoweave.store import vectors as vectors_module
    from mnemoweave.store.vectors import VectorIndex

    rng = np.random.default_rng(7)
    rows = rng.normal(size=(300, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    refs = [f"m_{i}" for i in range(300)]
    index = VectorIndex(tmp_path / "chroma", "concepts")
    index.add("memories", refs, rows, ["/src/a"] * 300)
    probes = rng.normal(size=(5, 16)).astype(np.float32)
    exact = [index.query("memories", probe, 10, ["/src/a"]) for probe in probes]
    monkeypatch.setattr(vectors_module, "EXACT_MAX", 0)  # what Chroma's HNSW index finds
    vectors_module._exact.clear()
    approximate = [index.query("memories", probe, 10, ["/src/a"]) for probe in probes]
    for mine, theirs in zip(exact, approximate, strict=True):
        assert [ref for ref, _ in mine] == [ref for ref, _ in theirs]
        assert [c for _, c in mine] == pytest.approx([c for _, c in theirs], abs=1e-5)
    monkeypatch.setattr(vectors_module, "EXACT_MAX", 20_000)
    vectors_module._exact.clear()
    assert index.query("memories", rows[3], 1, ["/src/a"])[0][0] == "m_3"
    assert [len(e.ids) for e in vectors_module._exact.values() if e] == [300]  # in memory
    with monkeypatch.context() as reads:  # a write is applied to the kept vectors
        reads.setattr(index, "_pages", lambda *a: pytest.fail("the collection was read again"))
        index.add("memories", ["m_900"], (-rows[3])[None, :], ["/src/a"])  # seen at once
        assert index.query("memories", -rows[3], 1, ["/src/a"])[0][0] == "m_900"
        index.add("memories", ["m_5", "m_901"], np.stack([-rows[4], rows[6]]), ["/src/a"] * 2)
        kept = [index.query("memories", probe, 10, ["/src/a"]) for probe in [*probes, -rows[4]]]
        assert kept[-1][0][0] == "m_5"  # its new vector, not its old one
    vectors_module._exact.clear()
    read = [index.query("memories", probe, 10, ["/src/a"]) for probe in [*probes, -rows[4]]]
    assert [[ref for ref, _ in hits] for hits in kept] == [
        [ref for ref, _ in hits] for hits in read
    ]
    index.delete("memories", ["m_3"])
    assert "m_3" not in {ref for ref, _ in index.query("memories", rows[3], 5, ["/src/a"])}
    assert set(index.vectors("memories", ["m_900", "m_3"], ["/src/a"])) == {"m_900"}


def test_a_shared_collection_from_before_the_split_is_split_without_embedding(tmp_path):
    from mnemoweave.store.vectors import VectorIndex

    path = tmp_path / "chroma"
    with _chroma_client(path) as client:  # chromadb's own client, as older versions wrote
        shared = client.get_or_create_collection(
            "memories-concepts",
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
        )
        shared.add(
            ids=["m_1", "m_2"],
            embeddings=np.stack([_unit(1), _unit(2)]),
            metadatas=[{"project": "/src/a"}, {"project": ""}],
        )
    index = VectorIndex(path, "concepts")
    assert index.ids("memories") == {"m_1": "/src/a", "m_2": ""}
    assert [ref for ref, _ in index.query("memories", _unit(2), 1, [""])] == ["m_2"]
    index.close()
    with _chroma_client(path) as client:  # and chromadb's client reads what the index wrote
        names = {c.name for c in client.list_collections()}
        assert "memories-concepts" not in names and len(names) == 2
        (mine,) = [c for c in client.list_collections() if c.metadata["project"] == ""]
        assert mine.get(include=[])["ids"] == ["m_2"]
        assert mine.configuration_json["hnsw"]["space"] == "cosine"


def test_an_index_is_built_and_searched_wide_and_an_older_one_searches_wide(tmp_path):
    from mnemoweave.store.vectors import HNSW, VectorIndex

    path = tmp_path / "chroma"
    with _chroma_client(path) as client:  # chromadb's defaults, as older versions made it
        client.get_or_create_collection(
            "memories-concepts-0",
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"table": "memories", "embedder": "concepts", "project": "/src/a"},
        ).add(ids=["m_1"], embeddings=np.stack([_unit(1)]))
    index = VectorIndex(path, "concepts")
    index.add("memories", ["m_2"], np.stack([_unit(2)]), ["/src/b"])
    assert [ref for ref, _ in index.query("memories", _unit(1), 1, ["/src/a"])] == ["m_1"]
    index.close()
    with _chroma_client(path) as client:
        made = {
            c.metadata["project"]: c.configuration_json["hnsw"] for c in client.list_collections()
        }
    assert made["/src/b"] == made["/src/b"] | HNSW  # built wide
    assert made["/src/a"]["ef_search"] == HNSW["ef_search"]  # searched wide from now on
    assert made["/src/a"]["max_neighbors"] == 16  # its graph as it was built


@contextmanager
def _chroma_client(path):
    """chromadb's PersistentClient on `path`, stopped on leaving (its system is cached per
    path and process otherwise)."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False)
    )
    try:
        yield client
    finally:
        for system in list(SharedSystemClient._identifier_to_system.values()):
            system.stop()
        SharedSystemClient.clear_system_cache()


def test_a_renamed_project_takes_its_vectors_along(hybrid):
    ref = hybrid.remember("Deploy with make deploy", project="/src/old").id
    hybrid.remember("Upload timeouts are ten seconds", project="/src/new")
    hybrid.rename_project("/src/old", "/src/new")
    assert ids(hybrid.search("deploy", mode="dense", project="/src/new"))[0] == ref
    assert set(hybrid.index.ids("memories").values()) == {"/src/new"}
    assert all(c.ok for c in hybrid.doctor())


def test_a_vector_in_another_projects_collection_is_moved_by_a_repair(hybrid):
    ref = hybrid.remember("Deploy with make deploy", project="/src/app").id
    hybrid.index.delete("memories", [ref])
    hybrid.index.add("memories", [ref], _unit(6)[None, :], ["/src/elsewhere"])
    assert ids(hybrid.search("deploy", mode="dense", project="/src/app")) == []
    check = {c.name: c for c in hybrid.doctor()}["vector index (concepts, memories)"]
    assert not check.ok
    assert all(c.ok for c in hybrid.doctor(repair=True))
    assert hybrid.index.ids("memories") == {ref: "/src/app"}
    assert ids(hybrid.search("deploy", mode="dense", project="/src/app")) == [ref]
