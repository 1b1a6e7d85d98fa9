"""Schema, labels and balance of bench/data/coding_e2e.json (past sessions and later prompts)."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "coding_e2e.json"

TYPES = ("on-topic", "chore", "smalltalk", "other-project", "hard-negative")
LANGS = ("en", "zh")
SPLITS = ("dev", "check")
HOSTS = ("claude-code", "opencode")
ROLES = ("user", "assistant")
FIRST_DAY = datetime(2026, 8, 1)
LAST_DAY = datetime(2026, 11, 26)  # exclusive: anything on 2026-11-25 is in range
PROMPT_KEYS = {"id", "project", "text", "lang", "type", "evidence", "split"}
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    with DATA.open(encoding="utf-8") as f:
        loaded: dict[str, Any] = json.load(f)
    return loaded


@pytest.fixture(scope="module")
def turn_project(data: dict[str, Any]) -> dict[str, str]:
    return {
        turn["id"]: project["name"]
        for project in data["projects"]
        for session in project["sessions"]
        for turn in session["turns"]
    }


def _nonempty_str(value: object) -> bool:
    return isinstance(value, str) and value.strip() != ""


def test_top_level_shape(data: dict[str, Any]) -> None:
    assert set(data) == {"projects", "prompts"}
    assert isinstance(data["projects"], list)
    assert isinstance(data["prompts"], list)


def test_projects_sessions_and_turns_follow_the_schema(data: dict[str, Any]) -> None:
    assert len(data["projects"]) == 6
    for project in data["projects"]:
        assert set(project) == {"name", "description", "sessions"}
        assert _nonempty_str(project["name"])
        assert _nonempty_str(project["description"])
        assert "\n" not in project["description"]
        assert 3 <= len(project["sessions"]) <= 5, project["name"]
        for session in project["sessions"]:
            assert set(session) == {"id", "date", "host", "turns"}
            assert _nonempty_str(session["id"])
            assert session["host"] in HOSTS
            assert 6 <= len(session["turns"]) <= 16, session["id"]
            for index, turn in enumerate(session["turns"], 1):
                assert set(turn) == {"id", "role", "text"}
                assert turn["id"] == f"{session['id']}:{index}"
                assert turn["role"] in ROLES
                assert _nonempty_str(turn["text"])


def test_session_dates_are_iso_in_range_and_ascending_per_project(data: dict[str, Any]) -> None:
    for project in data["projects"]:
        dates = [datetime.fromisoformat(s["date"]) for s in project["sessions"]]
        for date in dates:
            assert FIRST_DAY <= date < LAST_DAY, date
        assert dates == sorted(dates), project["name"]
        assert len(set(dates)) == len(dates), project["name"]


def test_ids_are_unique(data: dict[str, Any]) -> None:
    names = [p["name"] for p in data["projects"]]
    sessions = [s["id"] for p in data["projects"] for s in p["sessions"]]
    turns = [t["id"] for p in data["projects"] for s in p["sessions"] for t in s["turns"]]
    prompts = [q["id"] for q in data["prompts"]]
    for ids in (names, sessions, turns, prompts):
        duplicates = [key for key, n in Counter(ids).items() if n > 1]
        assert not duplicates, duplicates


def test_sessions_are_in_both_languages(data: dict[str, Any]) -> None:
    langs: Counter[str] = Counter()
    for project in data["projects"]:
        for session in project["sessions"]:
            text = "".join(t["text"] for t in session["turns"])
            langs["zh" if CJK.search(text) else "en"] += 1
    assert langs["zh"] >= 6 and langs["en"] >= 6, langs


def test_prompts_follow_the_schema(data: dict[str, Any]) -> None:
    projects = {p["name"] for p in data["projects"]}
    for prompt in data["prompts"]:
        assert set(prompt) - {"why"} == PROMPT_KEYS, prompt["id"]
        assert _nonempty_str(prompt["id"])
        assert prompt["project"] in projects, prompt["id"]
        assert _nonempty_str(prompt["text"])
        assert prompt["lang"] in LANGS
        assert prompt["type"] in TYPES
        assert prompt["split"] in SPLITS
        assert isinstance(prompt["evidence"], list)
        assert all(isinstance(e, str) for e in prompt["evidence"])
        if "why" in prompt:
            assert _nonempty_str(prompt["why"]), prompt["id"]


def test_prompt_language_matches_its_text(data: dict[str, Any]) -> None:
    for prompt in data["prompts"]:
        has_cjk = CJK.search(prompt["text"]) is not None
        assert has_cjk == (prompt["lang"] == "zh"), prompt["id"]


def test_evidence_exists_and_belongs_to_the_prompts_project(
    data: dict[str, Any], turn_project: dict[str, str]
) -> None:
    for prompt in data["prompts"]:
        assert len(set(prompt["evidence"])) == len(prompt["evidence"]), prompt["id"]
        for turn_id in prompt["evidence"]:
            assert turn_id in turn_project, (prompt["id"], turn_id)
            assert turn_project[turn_id] == prompt["project"], (prompt["id"], turn_id)


def test_only_on_topic_prompts_have_evidence(data: dict[str, Any]) -> None:
    for prompt in data["prompts"]:
        if prompt["type"] == "on-topic":
            assert prompt["evidence"], prompt["id"]
            assert _nonempty_str(prompt.get("why")), prompt["id"]
        else:
            assert prompt["evidence"] == [], prompt["id"]


def test_counts(data: dict[str, Any]) -> None:
    prompts = data["prompts"]
    types = Counter(p["type"] for p in prompts)
    assert len(prompts) >= 340
    assert types["on-topic"] >= 150
    assert sum(types[t] for t in TYPES if t != "on-topic") >= 170
    for typ in TYPES[1:]:
        assert types[typ] >= 35, typ


def test_every_type_has_both_languages_in_similar_numbers(data: dict[str, Any]) -> None:
    counts = Counter((p["type"], p["lang"]) for p in data["prompts"])
    for typ in TYPES:
        en, zh = counts[(typ, "en")], counts[(typ, "zh")]
        assert en > 0 and zh > 0, typ
        assert abs(en - zh) <= max(4, (en + zh) // 10), (typ, en, zh)


def test_splits_are_balanced_per_type_and_language(data: dict[str, Any]) -> None:
    counts = Counter((p["type"], p["lang"], p["split"]) for p in data["prompts"])
    for typ in TYPES:
        for lang in LANGS:
            dev, check = counts[(typ, lang, "dev")], counts[(typ, lang, "check")]
            assert abs(dev - check) <= 1, (typ, lang, dev, check)


def test_splits_alternate_in_file_order(data: dict[str, Any]) -> None:
    seen: Counter[tuple[str, str]] = Counter()
    for prompt in data["prompts"]:
        group = (prompt["type"], prompt["lang"])
        expected = SPLITS[seen[group] % 2]
        assert prompt["split"] == expected, prompt["id"]
        seen[group] += 1


def test_prompt_texts_are_unique_within_a_project(data: dict[str, Any]) -> None:
    keys = [(p["project"], p["text"].strip().lower()) for p in data["prompts"]]
    duplicates = [key for key, n in Counter(keys).items() if n > 1]
    assert not duplicates, duplicates
