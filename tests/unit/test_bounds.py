"""A huge text costs what a long one does: what is kept and stored of it, what its key is
made from, and what a query looks at."""

from __future__ import annotations

import io
import json

from mnemoweave import hook
from mnemoweave.hosts import claude_code
from mnemoweave.text import MAX_TEXT, QUERY_EDGE, SLACK, bounded, clean_all, kept, query_part

TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # a GitHub token


def test_a_short_text_is_kept_whole_and_cleaned():
    said = f"use httpx with token {TOKEN} for the uploads"
    assert (
        kept(said)
        == bounded(said)
        == "use httpx with token [REDACTED:github-token] for the uploads"
    )
    assert bounded("<private>only this</private>") == ""


def test_a_huge_text_keeps_its_head_with_a_marker_and_is_bounded_once():
    huge = "首先说明：" + "log line\n" * 2_000_000
    stored = bounded(huge)
    assert stored.startswith("首先说明：log line")
    assert stored.endswith(f"\n[truncated: kept {MAX_TEXT} of {len(huge)} characters]")
    assert bounded(stored) == stored  # stored, spooled or exported: never marked twice
    assert kept(stored) == kept(huge)


def test_a_secret_at_the_cut_is_redacted_whole_or_not_kept():
    cuts = (MAX_TEXT, MAX_TEXT + SLACK)  # where it is kept up to, and cleaned up to
    for at in (cut + offset for cut in cuts for offset in range(-60, 60, 7)):
        huge = "x " * (at // 2) + TOKEN + " tail" * 100_000
        stored = bounded(huge)
        assert "ghp_" not in stored and "a1B2c3" not in stored


def test_a_huge_prompt_has_one_key_whether_sent_spooled_or_read_from_the_transcript():
    huge = f"deploy notes {TOKEN}\n" + "x" * 10_000_000
    sent = claude_code.turn_key("s", "user", huge)
    spooled = clean_all({"prompt": huge})["prompt"]
    assert len(spooled) < MAX_TEXT + 100
    assert claude_code.turn_key("s", "user", spooled) == sent
    line = {"type": "user", "sessionId": "s", "message": {"content": huge}}
    (read,) = claude_code.transcript_turns([json.dumps(line)])
    assert read.key == sent
    assert claude_code.turn_key("s", "user", huge + "!") == sent  # beyond what is kept
    assert claude_code.turn_key("s", "user", "deploy notes") != sent


def test_the_spool_keeps_a_huge_prompt_bounded(mnemoweave_home, monkeypatch):
    monkeypatch.setenv("MNEMOWEAVE_HOOK_BUDGET_MS", "0")  # no daemon, no time: spooled
    prompt = {"session_id": "s", "cwd": "/tmp", "prompt": "why?\n" + "y" * 10_000_000}
    raw = io.BytesIO(json.dumps(prompt).encode())
    assert hook.run("claude-code", "UserPromptSubmit", raw, io.StringIO()) == 0
    (spooled,) = (mnemoweave_home / "spool").glob("*.json")
    assert spooled.stat().st_size < 2 * MAX_TEXT
    text = json.loads(spooled.read_text())["payload"]["prompt"]
    assert text.endswith(f"[truncated: kept {MAX_TEXT} of {len(prompt['prompt'])} characters]")


def test_a_long_query_is_matched_by_its_first_and_last_part(engine):
    assert query_part("short query") == "short query"
    middle = "x " * (4 * QUERY_EDGE)
    long = "kubernetes " + middle + " zebrafish " + middle + " terraform"
    assert query_part(long) == f"{long[:QUERY_EDGE]}\n{long[-QUERY_EDGE:]}"
    for word in ("kubernetes", "zebrafish", "terraform"):
        engine.remember(f"{word} notes for the team")
    found = {hit.text for hit in engine.search(long, k=10)}
    assert found == {"kubernetes notes for the team", "terraform notes for the team"}
