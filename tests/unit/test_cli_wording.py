"""The CLI's words: counts in the right number, lists as text, hints that can be run, and
no hit without a score."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.model import counted


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("number", "noun", "plural", "expected"),
    [
        (0, "card", "", "0 cards"),
        (1, "card", "", "1 card"),
        (2, "card", "", "2 cards"),
        (1, "memory", "memories", "1 memory"),
        (3, "memory", "memories", "3 memories"),
    ],
)
def test_counted_uses_the_right_number(number, noun, plural, expected):
    assert counted(number, noun, plural) == expected


def test_status_counts_one_of_each_in_the_singular(engine):
    engine.remember("The deploy script lives in tools/deploy.sh")
    engine.ingest("s1", "user", "以后代码注释都用英文。")
    engine.distill()
    engine.close()
    out = run("status")
    assert "stored    1 turn, 1 memory, 1 card, 0 skills" in out
    assert "pending   1 card to review" in out


def test_evidence_is_listed_as_text(engine):
    engine.ingest("s1", "user", "以后代码注释都用英文。")
    engine.ingest("s1", "user", "The upload hang was fixed by an httpx timeout of 10 seconds.")
    engine.distill()
    engine.close()
    out = run("get", "c_1", "--evidence")
    assert "evidence: t_1\n" in out
    assert "(" not in out.split("evidence: ")[1].splitlines()[0]


def test_search_lists_no_hit_that_scores_next_to_nothing(engine):
    assert engine.retrieval_mode().startswith("lexical-only")
    for n in range(30):
        engine.remember(f"note {n}: the build cache lives under dir{n}")
    engine.remember("The flaky upload test is quarantined under label zorblax")
    engine.close()
    lines = run("search", "upload zorblax build", "-k", "20").splitlines()
    # "build" is in almost every note: only the note naming the rare words is listed
    assert len(lines) == 1 and "zorblax" in lines[0]


def test_accepting_a_rival_is_held_with_the_commands_that_settle_it(engine, real_models):
    from mnemoweave import Engine

    engine.close()
    with Engine() as hybrid:
        old = hybrid.remember("The user prefers tabs for indentation in Python code", kind="pref")
        hybrid.ingest("s1", "user", "I prefer spaces for indentation in Python code from now on.")
        hybrid.distill()
        card = hybrid.pending()[0]
        written = hybrid.review(card.id, "accept", kind="pref")
    assert written.action == "held" and written.reason.startswith(f"updates {old.id} (")
    assert written.reason.endswith(
        f": kept pending; `mnemoweave review {card.id} accept --replaces {old.id}` "
        f"retires {old.id}, `--keep-both` keeps both"
    )
