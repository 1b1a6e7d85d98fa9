"""Markdown in the common note format: YAML frontmatter, a `# H1` title, CRLF, `--split`
by `## ` sections, a bad note reported by name, and `export --per-memory` round trips."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from mnemoweave import Engine

NOTES = {
    "upload-timeout.md": (
        "---\n"
        "title: Upload timeout\n"
        "tags: [uploads, http]\n"
        "weight: 0.8\n"
        "created: 2025-03-01\n"
        "updated: 2025-03-04 09:30:00\n"
        "kind: conclusion\n"
        "---\n"
        "The upload client times out after 150 seconds; big files need it.\n"
    ),
    "style.md": (
        "---\r\ntags: style, 注释\r\nimportance: 5\r\nkind: pref\r\n---\r\n"
        "# 注释语言\r\n\r\n以后代码注释都用英文。\r\n"
    ),
    "runbook.md": (
        "# Deploy runbook\n\nHow we ship.\n\n"
        "## Staging\nDeploy to staging with `make stage` first.\n\n"
        "## Production\nProduction deploys only on weekdays.\n"
    ),
    "extra.md": "---\naliases: [x]\ncssclass: wide\n---\nThe CI runners are on Debian 12.\n",
    "broken.md": "---\ntitle: [unclosed\n---\nlost\n",
}


def _write(folder: Path) -> Path:
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    return folder


def _utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _by_title(engine: Engine) -> dict[str, object]:
    return {m.title: m for m in engine.list_memories(50)}


def test_a_folder_of_notes_imports_exactly_and_a_bad_note_is_named(engine, tmp_path):
    counts = engine.import_path(_write(tmp_path / "notes"))
    assert counts["memories"] == 4
    broken, extra = counts["problems"]
    assert broken.startswith(f"not imported: {tmp_path}/notes/broken.md: the frontmatter is not")
    assert extra == f"{tmp_path}/notes/extra.md: ignored field(s) 'aliases', 'cssclass'"
    memories = _by_title(engine)
    upload = memories["Upload timeout"]
    assert upload.body == "The upload client times out after 150 seconds; big files need it."
    assert (upload.kind, upload.tags, upload.importance) == ("conclusion", ("uploads", "http"), 4)
    assert upload.created == _utc("2025-03-01") and upload.updated == _utc("2025-03-04 09:30")
    style = memories["注释语言"]  # CRLF, the H1 as title, tags as a comma string
    assert (style.body, style.kind, style.tags, style.importance) == (
        "以后代码注释都用英文。",
        "pref",
        ("style", "注释"),
        5,
    )
    runbook = memories["Deploy runbook"]  # not split: the note is one memory
    assert runbook.body.startswith("How we ship.") and "## Production" in runbook.body
    assert memories["The CI runners are on Debian 12."].kind == "fact"


def test_split_makes_one_memory_per_section(engine, tmp_path):
    (tmp_path / "runbook.md").write_text(NOTES["runbook.md"].replace("\n", "\r\n"))
    counts = engine.import_path(tmp_path / "runbook.md", split=True)
    assert counts["memories"] == 3 and counts["problems"] == []
    memories = _by_title(engine)
    assert memories["Staging"].body == "Deploy to staging with `make stage` first."
    assert memories["Production"].body == "Production deploys only on weekdays."
    assert memories["Deploy runbook"].body == "How we ship."


def test_a_lone_bad_note_is_refused(engine, tmp_path):
    from mnemoweave.errors import InvalidInput

    (tmp_path / "broken.md").write_text(NOTES["broken.md"])
    with pytest.raises(InvalidInput, match="broken.md: the frontmatter is not YAML"):
        engine.import_path(tmp_path / "broken.md")
    (tmp_path / "heavy.md").write_text("---\nweight: 9\n---\ntext\n")
    with pytest.raises(InvalidInput, match="heavy.md: importance .or weight. must be 1-5, got 9"):
        engine.import_path(tmp_path / "heavy.md")


FIELDS = ("kind", "title", "body", "tags", "importance", "project")


def _kept(memories: list[object]) -> dict[tuple[object, ...], tuple[float, float]]:
    """What notes keep of memories: their fields, and their times (to the microsecond, as
    ISO 8601 says them)."""
    return {
        tuple(getattr(m, f) for f in FIELDS): (m.created, m.updated)  # type: ignore[attr-defined]
        for m in memories
    }


def test_an_export_per_memory_round_trips(engine, tmp_path):
    engine.import_path(_write(tmp_path / "notes"), split=True)
    engine.remember("Use pnpm, not npm.", kind="pref", project="/repo", tags=["js"])
    paths = engine.export(tmp_path / "out", per_memory=True)
    notes = sorted(p for p in paths if p.parent.name == "memories")
    assert len(notes) == 7 and all(p.name.startswith("m_") for p in notes)
    front = yaml.safe_load(notes[0].read_text().split("---")[1])
    assert list(front) == ["id", "kind", "title", "tags", "importance", "created", "updated",
                           "project"]  # fmt: skip
    originals = _kept(engine.list_memories(50))
    with Engine(home=tmp_path / "fresh") as fresh:
        counts = fresh.import_path(tmp_path / "out")
        assert counts["memories"] == 7 and counts["problems"] == []
        copies = _kept(fresh.list_memories(50))
        assert copies.keys() == originals.keys()
        for fields, times in copies.items():
            assert times == pytest.approx(originals[fields], abs=2e-6), fields
        again = fresh.import_path(tmp_path / "out")
        assert again["memories"] == 0 and len(fresh.list_memories(50)) == 7


def test_the_cli_imports_the_rest_and_names_the_bad_note(tmp_path, monkeypatch):
    folder = _write(tmp_path / "notes")
    done = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "import", str(folder), "--split"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "broken.md: the frontmatter is not YAML" in done.stderr
    assert done.stdout.startswith("0 turns, 6 memories")


def test_other_tools_notes_read_leniently(engine, tmp_path):
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "bom.md").write_text("\ufeff---\ntitle: With a BOM\nimportance: '4'\n---\nText A.\n")
    (notes / "decision.md").write_text("---\nkind: Decision\n---\nWe chose Postgres 16.\n")
    (notes / "odd.md").write_text("---\nkind: musing\n---\nMaybe try Zig one day.\n")
    (notes / "code.md").write_text(
        "# Snippets\n\n## Shell\n```sh\n## not a heading\necho hi\n```\n\n## Python\nprint(1)\n"
    )
    counts = engine.import_path(notes, split=True)
    assert counts["problems"] == [
        f"{notes}/odd.md: kind 'musing' is none of pref, pers, skill, mission, conclusion, "
        "fact; imported as fact"
    ]
    memories = {m.body: m for m in engine.list_memories(50)}
    assert (memories["Text A."].title, memories["Text A."].importance) == ("With a BOM", 4)
    assert memories["We chose Postgres 16."].kind == "conclusion"
    assert memories["Maybe try Zig one day."].kind == "fact"
    shell = memories["```sh\n## not a heading\necho hi\n```"]
    assert shell.title == "Shell" and memories["print(1)"].title == "Python"
