import json

import pytest

from mnemoweave.capture.file_formats import parse_jsonl, parse_markdown
from mnemoweave.errors import InvalidInput

MD = """---
project: uploader
tags: [net, http]
kind: conclusion
---
# Notes (ignored preamble)

## httpx timeouts
<!-- mnemoweave: importance=5 -->
Set httpx timeouts to 10 s; the uploader hung without them.

## 注释语言
<!-- mnemoweave: kind=pref tags=style -->
以后代码注释都用英文。
"""


def test_markdown_sections_become_memories_with_frontmatter_defaults():
    first, second = parse_markdown(MD, "notes.md")
    assert (first.title, first.kind, first.project, first.tags, first.importance) == (
        "httpx timeouts",
        "conclusion",
        "uploader",
        ("net", "http"),
        5,
    )
    assert first.body == "Set httpx timeouts to 10 s; the uploader hung without them."
    assert (second.kind, second.tags, second.importance) == ("pref", ("style",), None)


def test_markdown_without_headings_is_one_memory():
    (only,) = parse_markdown("just one note\nover two lines\n", "x.md")
    assert only.body == "just one note\nover two lines" and only.kind == "fact"


@pytest.mark.parametrize(
    "text",
    [
        "---\nweight: 7\n---\n## a\nb\n",
        "---\nkind: pref\n## a\nb\n",
        "## empty section\n\n## b\ntext\n",
        "---\nimportance: high\n---\nbody\n",
    ],
)
def test_bad_markdown_is_refused(text):
    with pytest.raises(InvalidInput):
        parse_markdown(text, "bad.md", split=True)


def test_jsonl_turns_and_errors_name_the_line():
    good = parse_jsonl(
        '{"session": "s", "role": "user", "text": "hi", "ts": "2024-05-01T10:00:00Z"}\n\n'
        '{"session": "s", "role": "assistant", "text": "yo", "ts": 1714557601}\n',
        "t.jsonl",
    )
    assert [(r.role, r.ts) for r in good] == [("user", 1714557600.0), ("assistant", 1714557601.0)]
    for bad, fragment in [
        ('{"session": "s", "role": "user"}', "text"),
        ('{"session": "s", "role": "bot", "text": "x"}', "role"),
        ("not json", "not valid JSON"),
        ("[1, 2]", "object"),
        ('{"session": "s", "role": "user", "text": "x", "ts": "yesterday"}', "ts"),
    ]:
        with pytest.raises(InvalidInput, match=fragment) as info:
            parse_jsonl('{"session": "s", "role": "user", "text": "ok"}\n' + bad, "t.jsonl")
        assert "t.jsonl:2" in str(info.value)


def test_import_is_all_or_nothing(engine, tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_text('{"session": "s", "role": "user", "text": "fine"}\n{"session": "s"}\n')
    with pytest.raises(InvalidInput):
        engine.import_path(path)
    assert engine.status()["counts"]["turns"] == 0


def test_import_then_export_round_trips(engine, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.md").write_text(MD, encoding="utf-8")
    (tmp_path / "in" / "turns.jsonl").write_text(
        "\n".join(
            json.dumps({"session": "s1", "role": r, "text": t}, ensure_ascii=False)
            for r, t in [("user", "上传卡住了"), ("assistant", "设置了超时")]
        )
        + "\n",
        encoding="utf-8",
    )
    counts = engine.import_path(tmp_path / "in")
    assert counts["memories"] == 2 and counts["turns"] == 2
    # importing the same files again adds nothing
    again = engine.import_path(tmp_path / "in")
    assert again["memories"] == 0 and again["turns"] == 0
    assert again["merged"] == 2 and again["duplicate"] == 2

    engine.remember("global note with tags", tags=["a", "b"], importance=2)
    paths = engine.export(tmp_path / "out")
    assert sorted(p.name for p in paths)[0] == "global.md"

    from mnemoweave import Engine

    with Engine(home=tmp_path / "second") as other:
        counts = other.import_path(tmp_path / "out")
        assert counts["memories"] == 3 and counts["turns"] == 2
        originals = {
            (m.title, m.body, m.kind, m.project, m.tags, m.importance)
            for m in engine.list_memories(50)
        }
        copies = {
            (m.title, m.body, m.kind, m.project, m.tags, m.importance)
            for m in other.list_memories(50)
        }
        assert copies == originals
        assert [t.text for t in (other.get("t_1"), other.get("t_2"))] == [
            "上传卡住了",
            "设置了超时",
        ]
    # and exporting into the first store's own data is idempotent
    assert engine.import_path(tmp_path / "out")["memories"] == 0
    assert engine.import_path(tmp_path / "out")["turns"] == 0


def test_unreadable_or_unknown_files(engine, tmp_path):
    with pytest.raises(InvalidInput, match="no such file"):
        engine.import_path(tmp_path / "missing.jsonl")
    (tmp_path / "data.csv").write_text("a,b")
    with pytest.raises(InvalidInput, match="unsupported"):
        engine.import_path(tmp_path / "data.csv")
    (tmp_path / "bin.md").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InvalidInput, match="cannot read"):
        engine.import_path(tmp_path / "bin.md")
