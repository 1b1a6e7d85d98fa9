"""Input that is refused with a clear error (times, project names), and rows stored before
it was refused that every reader still shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemoweave.capture import file_formats
from mnemoweave.capture.file_formats import parse_jsonl
from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import claude_code
from mnemoweave.model import SessionEvent

BAD_TIMES = [-1.0, -1e15, 1e308, float("inf"), float("-inf"), float("nan"), 7_258_118_400, 10**400]


@pytest.mark.parametrize("ts", BAD_TIMES)
def test_a_turn_time_outside_1970_to_2200_is_refused(engine, ts):
    with pytest.raises(InvalidInput, match="ts must be a time between 1970 and 2200"):
        engine.ingest("s", "user", "the deploy ran", ts=ts)
    with pytest.raises(InvalidInput, match="ts must be a time between 1970 and 2200"):
        engine.handle(SessionEvent("start", "s", ts=ts))
    assert engine.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert engine.db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_times_inside_the_range_are_kept_as_given(engine):
    first = engine.ingest("s", "user", "at the epoch", ts=0)
    last = engine.ingest("s", "user", "near the end of 2199", ts=7_258_118_399.5)
    assert engine.get(first.id).ts == 0 and engine.get(last.id).ts == 7_258_118_399.5


@pytest.mark.parametrize(
    "ts", ["-1e15", "1e308", "-Infinity", "NaN", '"9999-01-01T00:00:00Z"', '"0001-01-01"']
)
def test_import_names_the_line_with_a_bad_time(ts):
    line = f'{{"session": "s", "role": "user", "text": "hi", "ts": {ts}}}'
    with pytest.raises(InvalidInput) as refused:
        parse_jsonl(line, "turns.jsonl")
    assert str(refused.value).startswith("turns.jsonl:1: ts must be a time between 1970 and 2200")


def test_a_transcript_line_with_an_impossible_time_is_stored_as_read_now():
    line = {"type": "user", "sessionId": "s", "timestamp": "9999-12-31T00:00:00Z",
            "message": {"content": "use httpx for uploads"}}  # fmt: skip
    (turn,) = claude_code.transcript_turns([json.dumps(line)])
    assert turn.ts is None and turn.text == "use httpx for uploads"


def _store_bad_times(engine) -> None:
    """Rows as an older version stored them, before times were checked."""
    for number, ts in enumerate((-1e15, 1e308, float("-inf")), 1):
        engine.ingest("old", "user", f"the old deploy note {number}", ts=1000.0 + number)
        engine.db.execute("UPDATE turns SET ts = ? WHERE id = ?", (ts, number))


@pytest.mark.parametrize(
    "command",
    [
        ["get", "t_1"], ["get", "t_3", "--json"], ["rehydrate", "--session", "old"],
        ["rehydrate", "--session", "old", "--json"], ["search", "deploy", "--in", "turns"],
        ["search", "deploy", "--in", "turns", "--json"], ["weave", "old deploy note"],
    ],
)  # fmt: skip
def test_readers_show_rows_with_bad_times_without_failing(engine, command):
    _store_bad_times(engine)
    if command[0] == "weave":  # a past question is woven with its answer
        engine.ingest("old", "assistant", "the old deploy note moved to the wiki")
    engine.close()
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0, result.output
    assert "old deploy note" in result.stdout


def test_export_writes_json_only_and_reimports(engine, tmp_path):
    _store_bad_times(engine)
    engine.export(tmp_path / "out")
    lines = (tmp_path / "out" / "turns.jsonl").read_text().splitlines()

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    rows = [json.loads(line, parse_constant=refuse) for line in lines]
    assert [row["ts"] for row in rows] == [None, None, None]
    counts = engine.import_path(tmp_path / "out")
    assert (counts["turns"], counts["duplicate"]) == (0, 3)


def test_a_project_name_has_a_length_limit(engine):
    long = "p" * 100_000
    for write in (
        lambda: engine.remember("a note", project=long),
        lambda: engine.ingest("s", "user", "a turn", project=long),
        lambda: engine.search("note", project=long),
    ):
        with pytest.raises(InvalidInput) as refused:
            write()
        assert str(refused.value) == "a project name is at most 512 characters, got 100000"
    assert engine.remember("a note", project="p" * 512).action == "new"
    result = CliRunner().invoke(cli, ["remember", "another note", "-p", long])
    assert result.exit_code == 2
    assert result.stderr == "Error: a project name is at most 512 characters, got 100000\n"


# --- import files ---------------------------------------------------------------------------

TURN = '{"session": "s", "role": "user", "text": "use httpx for uploads"}\n'


def _import(path) -> tuple[int, str]:
    """`mnemoweave import PATH` in its own process (a FIFO must not hang the test)."""
    done = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "import", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stderr


def test_a_fifo_is_refused_not_waited_on(tmp_path, engine):
    fifo = tmp_path / "turns.jsonl"
    os.mkfifo(fifo)
    code, message = _import(fifo)
    assert code == 2 and "not a regular file" in message
    (tmp_path / "more.jsonl").write_text(TURN)
    code, message = _import(tmp_path)  # in a directory: named and left out, the rest read
    assert (
        code == 0 and "not imported: " in message and "turns.jsonl: not a regular file" in message
    )
    assert engine.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 1


def test_a_device_is_refused_without_reading_it(tmp_path, engine):
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    with pytest.raises(InvalidInput, match="zero.jsonl: not a regular file"):
        engine.import_path(tmp_path / "zero.jsonl")
    with pytest.raises(InvalidInput, match="unsupported file type"):
        engine.import_path(Path("/dev/zero"))


def test_an_import_over_the_size_limit_is_refused(tmp_path, engine, monkeypatch):
    monkeypatch.setattr(file_formats, "MAX_IMPORT_BYTES", 3 * len(TURN))
    (tmp_path / "a.jsonl").write_text(TURN * 2)
    engine.import_path(tmp_path / "a.jsonl")  # under the limit
    (tmp_path / "b.jsonl").write_text(TURN.replace("httpx", "aiohttp") * 2)
    with pytest.raises(InvalidInput, match="b.jsonl: the import is over 0 MB; import it in parts"):
        engine.import_path(tmp_path)  # the two files together are over it
    (tmp_path / "a.jsonl").write_text(TURN * 4)
    with pytest.raises(InvalidInput, match="a.jsonl: the import is over"):
        engine.import_path(tmp_path / "a.jsonl")


def test_a_symlink_leading_out_of_the_imported_directory_is_refused(tmp_path, engine):
    outside = tmp_path / "secret.jsonl"
    outside.write_text(TURN)
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "inside.jsonl").write_text(TURN.replace("httpx", "aiohttp"))
    (folder / "alias.jsonl").symlink_to(folder / "inside.jsonl")  # inside: fine
    assert engine.import_path(folder)["turns"] == 2  # a link inside is read like a file
    (folder / "leak.jsonl").symlink_to(outside)
    with pytest.raises(InvalidInput) as refused:
        engine.import_path(folder)
    assert str(refused.value) == (
        f"{folder / 'leak.jsonl'}: a link to {outside}, outside {folder}; not imported"
    )


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("t.jsonl", '{"session": "s", "role": "user", "text": "x", "colour": "red"}',
         "t.jsonl:1: unknown field(s) 'colour'; accepted: session, role, text, ts, host, "
         "project, key"),
        ("m.md", "## tabs\n<!-- mnemoweave: kind=pref colour=red -->\nuse tabs\n",
         "m.md: section 'tabs': unknown field(s) 'colour'; accepted: kind, project, tags, "
         "importance, evidence, id"),
    ],
)  # fmt: skip
def test_unknown_fields_in_an_import_are_refused_by_name(tmp_path, engine, name, text, words):
    (tmp_path / name).write_text(text)
    with pytest.raises(InvalidInput) as refused:
        engine.import_path(tmp_path / name)
    assert str(refused.value) == f"{tmp_path}/{words}"


def test_an_unknown_field_of_a_note_is_ignored_with_a_warning(tmp_path, engine):
    (tmp_path / "m.md").write_text(
        "---\nkind: pref\ndate: 2024-01-01\naliases: [x]\n---\nuse tabs\n"
    )
    counts = engine.import_path(tmp_path / "m.md")
    assert counts["memories"] == 1
    assert counts["problems"] == [f"{tmp_path}/m.md: ignored field(s) 'aliases', 'date'"]
