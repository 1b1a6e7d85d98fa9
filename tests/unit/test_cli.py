import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.store.db import DB_NAME


@pytest.fixture
def run(tmp_path, monkeypatch):
    """The CLI, run from a directory outside any repository (its own project)."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


def as_json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_remember_then_search_in_both_languages(run):
    zh = as_json(
        run("remember", "以后代码注释都用英文，提交信息也用英文", "--kind", "pref", "--json")
    )
    en = as_json(
        run(
            "remember",
            "Retry flaky uploads with exponential backoff",
            "-t",
            "net",
            "--importance",
            "4",
            "--project",
            "up",
            "--json",
        )
    )
    assert zh["action"] == en["action"] == "new"
    hits = as_json(run("search", "注释", "--json"))["hits"]
    assert [h["id"] for h in hits] == [zh["id"]]
    assert set(hits[0]) >= {"id", "kind", "text", "score", "project", "created"}
    assert hits[0]["kind"] == "pref" and hits[0]["created"].endswith("Z")
    hits = as_json(run("search", "backoff", "--project", "up", "--json"))["hits"]
    assert [h["id"] for h in hits] == [en["id"]] and hits[0]["project"] == "up"
    assert as_json(run("search", "backoff", "--json"))["hits"] == []  # another project
    human = run("search", "backoff", "--project", "up")
    assert en["id"] in human.output and "exponential backoff" in human.output


def test_duplicate_merges_and_list_get(run):
    first = as_json(run("remember", "Use ruff for linting", "--json"))
    second = as_json(run("remember", "use ruff for linting.", "--json"))
    assert second == {"action": "merged", "id": first["id"]}
    listed = as_json(run("list", "--json"))["memories"]
    assert [m["id"] for m in listed] == [first["id"]]
    got = as_json(run("get", first["id"], "--json"))
    assert got["body"] == "Use ruff for linting" and got["status"] == "active"


def test_forget_restore_purge_through_the_cli(run):
    ref = as_json(run("remember", "temporary note about caching", "--json"))["id"]
    assert run("forget", ref).output.strip() == f"trashed {ref}"
    assert as_json(run("search", "caching", "--json"))["hits"] == []
    assert [m["id"] for m in as_json(run("list", "--trash", "--json"))["memories"]] == [ref]
    assert run("restore", ref).output.strip() == f"restored {ref}"
    assert len(as_json(run("search", "caching", "--json"))["hits"]) == 1
    assert run("purge", ref).output.strip() == f"purged {ref}"
    assert run("get", ref).exit_code == 2


def test_ingest_from_argument_and_stdin(run):
    one = as_json(
        run(
            "ingest",
            "--session",
            "s1",
            "--role",
            "user",
            "--host",
            "claude-code",
            "上传一直卡住",
            "--json",
        )
    )
    two = as_json(
        run(
            "ingest",
            "-s",
            "s1",
            "-r",
            "assistant",
            "-",
            "--json",
            input="Set the httpx timeout to 10 s\n",
        )
    )
    assert one["action"] == two["action"] == "new"
    turn = as_json(run("get", two["id"], "--json"))
    assert turn["text"] == "Set the httpx timeout to 10 s" and turn["seq"] == 2
    hits = as_json(run("search", "卡住", "--in", "turns", "--json", "--explain"))["hits"]
    # the matching turn, then the reply that follows it (it inherits part of its score)
    assert [h["id"] for h in hits] == [one["id"], two["id"]]
    assert hits[1]["explain"]["context"] == pytest.approx(0.5 * hits[0]["score"], rel=1e-4)


def test_import_export_status_doctor(run, tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text('{"session": "s", "role": "user", "text": "hello import"}\n')
    assert as_json(run("import", str(src), "--json"))["turns"] == 1
    run("remember", "exported memory", "--global")
    out = run("export", str(tmp_path / "out"))
    assert out.exit_code == 0 and "global.md" in out.output
    status = as_json(run("status", "--json"))
    assert status["counts"] == {"turns": 1, "memories": 1, "cards": 0, "skills": 0}
    assert status["data_dir"] == os.environ["MNEMOWEAVE_HOME"]
    assert {"mnemoweave", "python", "sqlite"} <= set(status["versions"])
    db_mb = f"{status['sizes']['db_bytes'] / 1e6:.1f} MB"
    assert f"sizes     store {db_mb}, vector index " in run("status").output
    doctor = as_json(run("doctor", "--json"))
    assert doctor["ok"] is True and len(doctor["checks"]) >= 6


BAD_INPUTS = [
    ("remember", ""),
    ("remember", "   "),
    ("remember", "x", "--kind", "bogus"),
    ("remember", "x", "--importance", "9"),
    ("search", ""),
    ("search", "x", "-k", "0"),
    ("search", "x", "-k", "2305843009213693952"),
    ("get", "m_42"),
    ("get", "banana"),
    ("list", "-n", "0"),
    ("forget", "m_42"),
    ("restore", "t_1"),
    ("purge", "m_42"),
    ("purge",),
    ("ingest", "--session", "s", "--role", "robot", "hi"),
    ("ingest", "--session", "s", "--role", "user", ""),
    ("import", "/nonexistent/file.jsonl"),
    ("import", "BADFILE"),
]


@pytest.mark.parametrize("args", BAD_INPUTS, ids=[" ".join(a) or "empty" for a in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line_and_changes_nothing(run, args, tmp_path, mnemoweave_home):
    run("remember", "baseline memory")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session": "s", "role": "user", "text": "first is fine"}\n{oops\n')
    args = [str(bad) if a == "BADFILE" else a for a in args]
    store = mnemoweave_home / "mnemoweave.sqlite"
    before = as_json(run("status", "--json"))["counts"]
    audit_before = _audit_rows(store)
    result = run(*args)
    assert result.exit_code == 2, result.output
    message = result.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("Error: "), result.stderr
    assert result.stdout == ""
    assert as_json(run("status", "--json"))["counts"] == before
    assert _audit_rows(store) == audit_before


def _audit_rows(store):
    import sqlite3

    with sqlite3.connect(store) as db:
        return db.execute("SELECT count(*) FROM audit").fetchone()[0]


def test_demo_runs(run):
    result = run("demo")
    assert result.exit_code == 0
    assert "search '注释'" in result.output and "[REDACTED:api-key]" in result.output
    assert "-> merged" in result.output


def test_redact_prints_what_would_be_stored(run):
    token = "ghp_" + "Zq8vXc4LmN8pQ2" * 3
    result = run("redact", input=f"DB_PASS=hunter2hunter2\n推送用 {token} <private>x</private>")
    assert result.exit_code == 0
    assert result.stdout == "DB_PASS=[REDACTED:secret]\n推送用 [REDACTED:github-token]\n"
    given = {"prompt": f"use {token}", "n": [1, None, {"text": "<private>gone</private>ok"}]}
    result = run("redact", "--json", input=json.dumps(given))
    assert json.loads(result.stdout) == {
        "prompt": "use [REDACTED:github-token]",
        "n": [1, None, {"text": "ok"}],
    }
    assert run("redact", "--json", input="not json").exit_code == 2


def test_doctor_finds_undecodable_rows_and_repair_moves_them_aside(run, tmp_path):
    import sqlite3

    home = Path(os.environ["MNEMOWEAVE_HOME"])
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"session": "s", "role": "user", "text": "the first turn"}\n'
        '{"session": "s", "role": "user", "text": "the upload limit is 50 MB"}\n'
    )
    assert as_json(run("import", str(source), "--json"))["turns"] == 2
    run("remember", "a memory that stays readable")
    with sqlite3.connect(home / DB_NAME) as db:  # damaged bytes
        db.execute("UPDATE turns SET text = CAST(X'7468659fff2066697273' AS TEXT) WHERE id = 1")
    broken = run("get", "t_1")  # what every command met before
    assert broken.exit_code != 0, broken.output
    found = json.loads(run("doctor", "--json").output)
    (check,) = [c for c in found["checks"] if c["name"] == "readable rows"]
    assert not found["ok"] and not check["ok"] and "t_1" in check["detail"]
    repaired = as_json(run("doctor", "--repair", "--json"))
    assert repaired["ok"] is True
    (kept,) = (home / "quarantine").glob("*.json")
    assert kept.name == "turns-1.json" and kept.stat().st_mode & 0o777 == 0o600
    assert "upload limit" in run("get", "t_2").output
    assert run("export", str(tmp_path / "out")).exit_code == 0
    assert run("search", "upload limit", "--in", "turns").exit_code == 0
    assert run("get", "t_1").exit_code == 2  # gone from the store, kept aside
