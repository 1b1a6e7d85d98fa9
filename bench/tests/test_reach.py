"""The end-to-end benchmark on tiny hand-made data, lexical-only (no model)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import run as bench_run
from mnemoweave.model import Line, Memory
from mnemoweave.recall.weave import Weave, render_line
from mnemoweave.text import estimate_tokens
from reach import (
    OFFTOPIC,
    Baseline,
    Case,
    Prompt,
    Run,
    Session,
    accept_all,
    evaluate_case,
    fence_overhead,
    found,
    fresh_engine,
    halve,
    load_coding_case,
    load_longmemeval_cases,
    pack,
    round_robin,
)

PREF = "I always prefer pytest over unittest for my Python projects."


Turns = tuple[tuple[str, str, bool], ...]  # (role, content, has_answer)


def haystack() -> list[tuple[str, str, Turns]]:
    """Three sessions out of date order, the answer in the middle one, one turn empty."""
    return [
        (
            "s2",
            "2023/05/02 (Tue) 09:00",
            (
                ("user", "Which test framework should I pick for a new library?", False),
                ("user", PREF, True),
                ("assistant", "", False),
                ("assistant", "Then pytest it is: fixtures and plain asserts.", False),
            ),
        ),
        (
            "s1",
            "2023/05/01 (Mon) 09:00",
            (
                ("user", "Can you suggest a name for my cat?", False),
                ("assistant", "How about Biscuit or Miso?", False),
            ),
        ),
        (
            "s3",
            "2023/05/03 (Wed) 09:00",
            (
                ("user", "What is the capital of Portugal?", False),
                ("assistant", "Lisbon.", False),
            ),
        ),
    ]


def lme_item(qid: str, qtype: str, answered: bool = True) -> dict[str, Any]:
    """A LongMemEval-shaped question over `haystack()` (no answer turn unless `answered`)."""
    sessions = haystack()
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": "Which test framework do I prefer for Python?",
        "question_date": "2023/05/30 (Tue) 10:00",
        "answer": "pytest",
        "answer_session_ids": [f"{qid}-s2"],
        "haystack_session_ids": [f"{qid}-{sid}" for sid, _, _ in sessions],
        "haystack_dates": [date for _, date, _ in sessions],
        "haystack_sessions": [
            [{"role": r, "content": c, "has_answer": a and answered} for r, c, a in turns]
            for _, _, turns in sessions
        ],
    }


def write_lme(path: Path, items: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(items, handle)
    return path


def bench(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """`bench/run.py e2e ... --embedder none --json`, its report parsed."""
    bench_run.main(["e2e", *argv, "--embedder", "none", "--json"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def test_woven_evidence_scores_one_and_a_budget_too_small_for_any_line_scores_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_lme(tmp_path / "lme.json.gz", [lme_item("q1", "single-session-preference")])
    accepted = bench(capsys, "--data", str(data), "--review", "all", "--verbose")
    assert accepted["weave_evidence_recall"] == 1.0
    assert accepted["misses"] == []
    counts = accepted["counts"]
    assert counts["turns"] == 7  # the empty turn is not sent
    assert counts["memories"] >= 1 and counts["accepted"] == counts["cards"] >= 1
    assert accepted["cards_per_1k_turns"] == round(1000 * counts["cards"] / 7, 1)
    assert accepted["bm25_same_budget_recall"] == 1.0
    assert accepted["by_type"]["single-session-preference"]["n"] == 1
    assert accepted["budget"] == 600 and accepted["mean_start_tokens"] > 0  # in the brief

    budget = str(fence_overhead())  # not even one line fits
    starved = bench(
        capsys,
        *("--data", str(data), "--review", "none", "--budget", budget, "--brief-budget", "0"),
        "--verbose",
    )
    assert starved["weave_evidence_recall"] == starved["bm25_same_budget_recall"] == 0.0
    assert starved["counts"]["memories"] == 0 and starved["mean_tokens"] == 0
    (miss,) = starved["misses"]
    assert miss["id"] == "q1" and miss["answer"] == "pytest" and miss["woven"] == ""


def test_questions_without_an_answer_turn_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blank = lme_item("q2_abs", "multi-session", answered=False)
    data = write_lme(tmp_path / "lme.json.gz", [lme_item("q1", "multi-session"), blank])
    report = bench(capsys, "--data", str(data), "--review", "none", "--budget", "200")
    assert report["n"] == 1 and report["budget"] == 200
    assert report["retrieval"].startswith("lexical-only")
    assert report["weave_latency_ms"]["p50"] is not None


def test_found_reads_turns_and_the_evidence_of_memories(mnemoweave_home: Path) -> None:
    mnemoweave_home.mkdir()
    with fresh_engine([]) as engine:
        turn = engine.ingest("s", "user", "deploy with fly", project="p").ref
        memory = engine.remember("Deploy with fly.", project="p", evidence=[turn]).ref
        other = engine.remember("Use tabs.", project="p").ref

        def woven(*refs: str) -> Weave:
            return Weave("x", {"nudge": tuple(Line("text", ref) for ref in refs)})

        assert found(engine, woven("pending", turn), {turn}, {})
        assert found(engine, woven(memory), {turn}, {})
        assert not found(engine, woven(other, "skill:x", "pending"), {turn}, {})
        assert not found(engine, woven(turn, memory), {"t_999"}, {})


def test_packing_respects_the_budget_and_skips_turns_too_long() -> None:
    short = [Line(f"short turn number {i}", f"t_{i}") for i in range(3)]
    long = Line("word " * 400, "t_9")
    lines = [short[0], long, short[1], short[2]]
    cost = estimate_tokens(render_line(short[0])) + 1
    budget = fence_overhead() + 2 * cost
    assert pack(lines, budget) == [0, 2]  # the long one skipped, the third no longer fits
    assert pack(lines, budget - 1) == [0]
    assert pack(lines, fence_overhead()) == []

    baseline = Baseline(
        [("t_1", "a", "pytest " * 500), ("t_2", "b", "I use pytest"), ("t_3", "c", "no match")]
    )
    assert baseline.packed("pytest", 200) == ["b"]  # the best match does not fit at all
    assert baseline.packed("pytest", 10_000) == ["a", "b"]  # only matching turns count


def test_halves_partition_and_n_is_round_robin_over_types() -> None:
    items = [("A", 0), ("A", 1), ("B", 0), ("A", 2), ("C", 0), ("B", 1)]
    kind = lambda item: item[0]  # noqa: E731
    a, b = halve(items, kind, "a"), halve(items, kind, "b")
    assert sorted(a + b) == sorted(items) and not set(a) & set(b)
    assert a == [("A", 0), ("B", 0), ("A", 2), ("C", 0)]
    assert round_robin(items, kind, 4) == [("A", 0), ("B", 0), ("C", 0), ("A", 1)]
    assert round_robin(items, kind, None) == items

    data = [lme_item(f"q{i}", "temporal" if i % 3 else "update") for i in range(7)]
    ids = lambda cases: [case.name for case in cases]  # noqa: E731
    half_a, half_b = (ids(load_longmemeval_cases(data, h, None)) for h in "ab")
    assert sorted(half_a + half_b) == sorted(ids(load_longmemeval_cases(data, "all", None)))
    assert not set(half_a) & set(half_b)
    assert ids(load_longmemeval_cases(data, "a", 3)) == ["q0", "q1", "q6"]


def test_offtopic_counts_read_the_knowledge_tier_only(mnemoweave_home: Path) -> None:
    mnemoweave_home.mkdir()
    case = Case(
        "c",
        (Session("s", "p", "bench", 1.7e9, (("s:0", "user", "hello"),)),),
        (Prompt("small", "p", "thanks, bye!", "smalltalk"),),
    )
    with fresh_engine([]) as engine:
        engine.remember("To reverse a list in Python use slicing: items[::-1].", project="p")
        engine.remember("I prefer tabs for indentation.", kind="pref", project="p")
        run = Run()
        evaluate_case(engine, case, "none", None, run)
    (row,) = run.rows
    assert row["knowledge"] == 0 and "I prefer tabs" in row["start"]  # the brief's
    knowledge = {text: row["knowledge"] for text, row in zip(OFFTOPIC, run.fixed, strict=True)}
    assert knowledge["How do I reverse a list in Python?"] == 1
    assert sum(knowledge.values()) == 1
    assert len(run.fixed) == len(OFFTOPIC)  # one project


def coding_set() -> dict[str, Any]:
    def turns(sid: str, *texts: str) -> list[dict[str, str]]:
        roles = ("user", "assistant")
        return [{"id": f"{sid}:{i}", "role": roles[i % 2], "text": t} for i, t in enumerate(texts)]

    return {
        "projects": [
            {
                "name": "orchard",
                "description": "Django shop",
                "sessions": [
                    {
                        "id": "o1",
                        "date": "2025-03-01T10:00:00",
                        "host": "claude-code",
                        "turns": turns("o1", PREF, "Noted: pytest everywhere."),
                    }
                ],
            },
            {
                "name": "tern",
                "description": "Rust CLI",
                "sessions": [
                    {
                        "id": "t1",
                        "date": "2025-02-01T10:00:00+00:00",
                        "host": "opencode",
                        "turns": turns("t1", "Release with cargo dist.", "Done."),
                    }
                ],
            },
        ],
        "prompts": [
            {"id": "p1", "project": "orchard", "text": "Which test framework do I prefer?",
             "lang": "en", "type": "on-topic", "evidence": ["o1:0"], "split": "dev"},
            {"id": "p2", "project": "orchard", "text": "谢谢！", "lang": "zh",
             "type": "smalltalk", "evidence": [], "split": "check"},
            {"id": "p3", "project": "tern", "text": "How do I release?", "lang": "en",
             "type": "chore", "evidence": [], "split": "dev"},
        ],
    }  # fmt: skip


def test_coding_set_is_one_store_split_by_half(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = coding_set()
    case = load_coding_case(data, "all", None)
    assert [s.project for s in case.sessions] == ["orchard", "tern"]
    assert [p.id for p in load_coding_case(data, "a", None).prompts] == ["p1", "p3"]
    assert [p.id for p in load_coding_case(data, "b", None).prompts] == ["p2"]

    path = tmp_path / "coding.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = bench(capsys, "--data", str(path), "--review", "all")
    assert report["weave_evidence_recall"] == 1.0
    assert report["by_type"]["on-topic"]["n"] == 1
    assert set(report["by_type"]) == {"on-topic", "smalltalk", "chore"}
    assert set(report["by_lang"]) == {"en", "zh"}
    assert report["counts"]["turns"] == 4
    assert report["fixed_offtopic_knowledge_per_prompt"] == 0.0
    assert report["offtopic_knowledge_per_prompt"] is not None


def test_accept_all_accepts_a_held_card_beside_the_memory_it_clashes_with(
    mnemoweave_home: Path,
) -> None:
    mnemoweave_home.mkdir()
    with fresh_engine([]) as engine:
        old = engine.remember("Use tabs in Makefiles", kind="pref").ref
        engine.ingest("s1", "user", "From now on, indent makefiles with spaces, not tabs.")
        engine.distill()
        (card,) = [c for c in engine.pending() if c.suggested_kind == "pref"]
        assert engine.review(card.id, "accept").action == "held"  # what the loop meets
        assert accept_all(engine) == 1
        assert engine.pending() == []
        kept = engine.get(old)
        assert isinstance(kept, Memory) and kept.status == "active"
        assert engine.status()["counts"]["memories"] == 2
